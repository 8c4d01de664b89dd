"""Indexing traced arrays (xla/frontend/indexing.py) against NumPy itself:
basic and advanced indices, traced indices, bounds, and ``x.at[...]``
functional updates compared with NumPy's in-place forms (``np.add.at``...)."""
import numpy as np
import pytest

import xla

from result_checks import assert_results_match

BACKENDS = ("cpu", "interpreter")
rng = np.random.default_rng(7)
A = rng.standard_normal((4, 5, 6)).astype(np.float32)

GET = {
    "adv_first": lambda a: a[[0, 2]],
    "adv_middle": lambda a: a[:, [1, -1]],
    "adv_last": lambda a: a[..., [5, 0, 2]],
    "adv_adjacent_pair": lambda a: a[:, [0, 1], [2, 3]],
    "adv_separated": lambda a: a[[0, 1], :, [2, 3]],          # broadcast dims go first
    "int_and_array_separated": lambda a: a[1, :, [0, 2]],     # the int counts as advanced
    "int_and_array_adjacent": lambda a: a[:, 1, [0, 2]],
    "broadcast_index_arrays": lambda a: a[np.array([[0], [3]]), np.array([[1, 4, 2]])],
    "with_none_and_slice": lambda a: a[None, [0, 1], None, 2:4],
    "with_negative_steps": lambda a: a[::-2, [4, 0], 1::2],
    "index_array_2d": lambda a: a[np.array([[0, 2], [3, -1]])],
    "bool_static": lambda a: a[np.array([True, False, True, False])],
    "bool_static_2d": lambda a: a[A[:, :, 0] > 0],
    "zero_d_array": lambda a: a[np.array(2)],
    "ellipsis_middle": lambda a: a[1, ..., 2],
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", sorted(GET))
def test_getitem_matches_numpy(name, backend):
    fn = GET[name]
    want = fn(A)
    got = xla.jit(fn, backend=backend)(A)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("backend", BACKENDS)
def test_traced_index_arrays_wrap_negatives(backend):
    i, j = np.array([[0, 3], [-1, -4]]), np.array([5, -6])
    f = xla.jit(lambda a, i, j: (a[i], a[:, 2, i], a[i, :, j], a[i[1, 0]]), backend=backend)
    for g, w in zip(f(A, i, j), (A[i], A[:, 2, i], A[i, :, j], A[i[1, 0]])):
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("backend", BACKENDS)
def test_traced_out_of_range_indices_clamp(backend):
    # NumPy would raise; a traced index can't be checked, so it clamps
    # (after NumPy's wrap of negatives), as XLA's gather does.
    i = np.array([7, -9, 2])
    got = xla.jit(lambda a, i: a[i], backend=backend)(A, i)
    np.testing.assert_array_equal(got, A[np.clip(np.where(i < 0, i + 4, i), 0, 3)])


def test_concrete_out_of_range_indices_raise_index_error():
    with pytest.raises(IndexError, match="out of bounds"):
        xla.jit(lambda a: a[[0, 4]])(A)
    with pytest.raises(IndexError, match="out of bounds"):
        xla.jit(lambda a: a[:, 5])(A)
    with pytest.raises(IndexError, match="out of bounds"):
        xla.jit(lambda a: np.take(a, [6], axis=2))(A)
    with pytest.raises(IndexError, match="too many indices"):
        xla.jit(lambda a: a[0, 0, 0, 0])(A)


def _ref(how, a, idx, v):
    a = a.copy()
    if how == "set":
        a[idx] = v
    else:
        {"add": np.add, "multiply": np.multiply, "min": np.minimum, "max": np.maximum}[how].at(a, idx, v)
    return a


UPDATES = {
    "int": ((1,), 0.5), "slice": ((slice(None), slice(1, 3)), 1.5), "array": (([0, 2],), 2.0),
    "duplicates": (([0, 0, 1, 0],), 1.0), "array_middle": ((slice(None), [1, 3]), 2.0),
    "array_last": ((Ellipsis, [0, 1]), -0.5), "separated_arrays": (([0, 1], slice(None), [2, 3]), 0.25),
    "strided": ((slice(None, None, 2), 1), 3.0), "negative_step": ((slice(None, None, -1),), np.arange(4.0, dtype=np.float32)[:, None, None]),
    "array_and_partial_slice": ((slice(1, 3), [0, 4, 0]), 7.0), "none": ((None, 0), 1.0),
    "bool_static": ((A[:, 0, 0] > 0,), 0.0), "values_array": ((slice(None), [0, 2], 1), np.arange(8, dtype=np.float32).reshape(4, 2)),
}


# Which duplicate wins a set is unspecified (in NumPy as in XLA): that pair is left out.
_AT_CASES = [(name, how) for name in sorted(UPDATES) for how in ("set", "add", "multiply", "min", "max")
             if not (how == "set" and name == "duplicates")]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name,how", _AT_CASES)
def test_at_updates_match_numpy(name, how, backend):
    idx, v = UPDATES[name]
    got = xla.jit(lambda a: getattr(a.at[idx], how)(v), backend=backend)(A)
    np.testing.assert_allclose(got, _ref(how, A, idx, v), rtol=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
def test_at_with_traced_indices_and_get(backend):
    i = np.array([1, -1, 1])
    f = xla.jit(lambda a, i, k: (a.at[i].add(1.0), a.at[k, 2].set(3.0), a.at[[1, 2], 0].get()),
                backend=backend)
    add, put, get = f(A, i, np.int64(-1))
    np.testing.assert_allclose(add, _ref("add", A, (i,), 1.0))
    np.testing.assert_allclose(put, _ref("set", A, (-1, 2), 3.0))
    np.testing.assert_array_equal(get, A[[1, 2], 0])


def test_traced_boolean_mask_is_a_must_compile_error_at_the_users_line():
    import inspect

    def f(a):
        return a[a > 0]
    line = inspect.getsourcelines(f)[1] + 1
    with pytest.raises(xla.errors.TracingError, match="boolean mask") as e:
        xla.jit(f)(A)
    assert f"test_indexing.py:{line}" in str(e.value)
    assert "np.where" in str(e.value)


# ----- flat indices, multi-indices and choices (xla/frontend/numpy/indexing_routines.py) -----

def _same(got, want):
    assert_results_match(got, want)   # exact, dtypes and shapes too


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("order", ["C", "F"])
def test_unravel_and_ravel_multi_index_match_numpy(order, backend):
    shape = (3, 4, 5)
    flat = rng.integers(0, 60, (2, 7)).astype(np.int32)
    _same(xla.jit(lambda i: np.unravel_index(i, shape, order=order), backend=backend)(flat),
          np.unravel_index(flat, shape, order=order))
    _same(xla.jit(lambda i: np.unravel_index(i, 7), backend=backend)(flat % 7), np.unravel_index(flat % 7, 7))
    coords = tuple(rng.integers(0, d, 9) for d in shape)
    _same(xla.jit(lambda *c: np.ravel_multi_index(c, shape, order=order), backend=backend)(*coords),
          np.ravel_multi_index(coords, shape, order=order))
    wild = tuple(rng.integers(-8, 9, 9) for _ in shape)
    for mode in ("wrap", "clip", ("clip", "wrap", "clip")):
        _same(xla.jit(lambda *c: np.ravel_multi_index(c, shape, mode=mode, order=order), backend=backend)(*wild),
              np.ravel_multi_index(wild, shape, mode=mode, order=order))


def test_index_values_numpy_raises_on_raise_after_the_call():
    with pytest.raises(ValueError):
        np.unravel_index(np.array([3, 12]), (3, 4))
    with pytest.raises(ValueError, match="index out of bounds"):
        xla.jit(lambda i: np.unravel_index(i, (3, 4)))(np.array([3, 12]))
    with pytest.raises(ValueError, match="index out of bounds"):
        xla.jit(lambda i: np.unravel_index(i, (3, 4)))(np.array([-1]))
    with pytest.raises(ValueError, match="invalid entry in coordinates array"):
        xla.jit(lambda i, j: np.ravel_multi_index((i, j), (3, 4)))(np.array([0, 3]), np.array([1, 1]))
    with pytest.raises(ValueError, match="invalid entry in choice array"):
        xla.jit(lambda i: np.choose(i, [np.zeros(2), np.ones(2)]))(np.array([0, 2]))
    with pytest.raises(TypeError, match="only int indices"):
        xla.jit(lambda i: np.unravel_index(i, (3, 4)))(np.array([1.0]))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("mode", ["raise", "wrap", "clip"])
def test_choose_matches_numpy(mode, backend):
    idx = rng.integers(-2, 6, (3, 4)) if mode != "raise" else rng.integers(0, 4, (3, 4))
    choices = [np.arange(4, dtype=np.int32), np.full((3, 4), 7.5, np.float32), np.float32(-1.0) + np.zeros((3, 1), np.float32),
               np.arange(12).reshape(3, 4).astype(np.int8)]
    _same(xla.jit(lambda i, *c: np.choose(i, c, mode=mode), backend=backend)(idx, *choices),
          np.choose(idx, choices, mode=mode))
