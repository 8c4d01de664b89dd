"""Tests of the C++ core's Python bindings, xla._core.

Graphs are CSR arrays: node i's operands are indices[offsets[i]:offsets[i+1]].
"""
import os

import numpy as np
import pytest

import xla
from xla import _core


def csr(operands):
    """CSR int64 arrays from one operand list per node."""
    offsets = np.zeros(len(operands) + 1, np.int64)
    offsets[1:] = np.cumsum([len(ops) for ops in operands])
    indices = np.array([op for ops in operands for op in ops], np.int64)
    return offsets, indices


# 0 = x, 1 = y, 2 = multiply(y, x), 3 = negate(x) (dead), 4 = add(2, x) (root)
GRAPH = csr([[], [], [1, 0], [0], [2, 0]])


def test_extension_is_inside_the_package():
    assert os.path.dirname(os.path.abspath(_core.__file__)) == os.path.dirname(os.path.abspath(xla.__file__))
    if "TEST_SRCDIR" in os.environ:  # under `bazel test`: Bazel's build, not a copy in the source tree
        assert os.path.abspath(_core.__file__).startswith(os.path.abspath(os.environ["TEST_SRCDIR"]) + os.sep)


def test_version():
    assert isinstance(_core.__version__, str) and _core.__version__


def test_post_order_operands_first_and_deterministic():
    order = _core.post_order(*GRAPH)
    assert order.dtype == np.int64
    # Sinks in node order (3, then 4), operands in operand order.
    assert order.tolist() == [0, 3, 1, 2, 4]
    assert _core.post_order(*GRAPH).tolist() == order.tolist()


def test_post_order_from_roots_skips_dead_nodes():
    offsets, indices = GRAPH
    assert _core.post_order(offsets, indices, roots=np.array([4])).tolist() == [1, 0, 2, 4]
    assert _core.post_order(offsets, indices, [3]).tolist() == [0, 3]


def test_post_order_large_chain():
    n = 200_000
    offsets = np.concatenate([[0], np.arange(n, dtype=np.int64)])
    indices = np.arange(n - 1, dtype=np.int64)  # node i + 1 uses node i
    order = _core.post_order(offsets, indices)
    np.testing.assert_array_equal(order, np.arange(n))
    assert _core.find_cycle(offsets, indices) == -1


def test_post_order_accepts_lists_and_other_integer_dtypes():
    offsets, indices = GRAPH
    expected = _core.post_order(offsets, indices).tolist()
    assert _core.post_order(offsets.tolist(), indices.tolist()).tolist() == expected
    assert _core.post_order(offsets.astype(np.int32), indices.astype(np.uint16)).tolist() == expected
    assert _core.post_order([0], []).tolist() == []


def test_find_cycle():
    assert _core.find_cycle(*GRAPH) == -1
    assert _core.find_cycle(*csr([[], [1]])) == 1  # self loop
    # 1 -> 3 -> 2 -> 1
    assert _core.find_cycle(*csr([[], [0, 3], [1], [2], [3]])) in (1, 2, 3)


def test_post_order_with_cycle_is_a_permutation():
    order = _core.post_order(*csr([[1], [2], [0], []]))
    assert sorted(order.tolist()) == [0, 1, 2, 3]


def test_reachable():
    live = _core.reachable(*GRAPH, roots=np.array([4], np.int64))
    assert live.dtype == np.bool_
    assert live.tolist() == [True, True, True, False, True]
    assert _core.reachable(*GRAPH, [3, 3]).tolist() == [True, False, False, True, False]
    assert not _core.reachable(*GRAPH, np.array([], np.int64)).any()


def test_out_of_range_operand_raises_value_error():
    offsets, _ = csr([[], [0, 2]])
    with pytest.raises(ValueError, match=r"operand_indices\[1\] = 2 is out of range for a graph of 2 nodes"):
        _core.post_order(offsets, np.array([0, 2]))
    with pytest.raises(ValueError, match="out of range"):
        _core.find_cycle(offsets, np.array([0, -1]))
    with pytest.raises(ValueError, match="out of range"):
        _core.reachable(offsets, np.array([0, 5]), [1])


def test_malformed_offsets_and_roots_raise_value_error():
    with pytest.raises(ValueError, match="at least one"):
        _core.post_order(np.array([], np.int64), np.array([], np.int64))
    with pytest.raises(ValueError, match="start at 0"):
        _core.post_order([1, 1], [0])
    with pytest.raises(ValueError, match="must not decrease"):
        _core.post_order([0, 2, 1], [0, 0])
    with pytest.raises(ValueError, match="must end at"):
        _core.post_order([0, 1], [0, 0])
    with pytest.raises(ValueError, match=r"roots\[0\] = 9 is out of range"):
        _core.reachable(*GRAPH, [9])
    with pytest.raises(ValueError, match="1-D"):
        _core.post_order(np.zeros((2, 2), np.int64), [])


def test_non_integer_arrays_raise_type_error():
    with pytest.raises(TypeError, match="integer"):
        _core.post_order(np.array([0.0, 1.0]), np.array([0.0]))
    with pytest.raises(TypeError, match="integer"):
        _core.reachable(*GRAPH, np.array([True]))
