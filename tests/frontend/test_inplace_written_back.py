"""An argument a jitted function updates in place gets its new value in its
own memory: the module aliases the written output to the parameter
(``input_output_alias``, may-alias) and, on the CPU, the caller's array is
donated for it when it may be written (it is the array itself, writeable,
and shares no memory with another argument), so no copy back is made
(xla/frontend/call_plan.py ``writable``; xla/backends/cpu/executable.py
``_FastPath``). Otherwise the value is copied back as before. Expected
values: NumPy's, on copies of the same arguments."""
import numpy as np
import pytest

import xla
from xla.errors import InvalidArgumentError
from xla.hlo.parser import parse_hlo_module


def gemm(alpha, beta, C, A, B):
    C[:] = alpha * A @ B + beta * C


def add_into(x, y):
    x += y


def test_the_written_output_is_aliased_to_its_parameter():
    rng = np.random.default_rng(0)
    C, A, B = rng.random((6, 7)), rng.random((6, 5)), rng.random((5, 7))
    text = xla.jit(gemm).lower(1.5, 1.2, C, A, B).as_hlo_text()
    assert "input_output_alias={ {0}: (2, {}, may-alias) }" in text.splitlines()[0]


def test_the_callers_array_is_written_in_place():
    rng = np.random.default_rng(1)
    C, A, B = rng.random((60, 70)), rng.random((60, 50)), rng.random((50, 70))
    ref = C.copy()
    gemm(1.5, 1.2, ref, A, B)
    f = xla.jit(gemm)
    for _ in range(2):               # the first call compiles; the second takes the fast path
        ours = C.copy()
        f(1.5, 1.2, ours, A, B)
        np.testing.assert_allclose(ours, ref, rtol=1e-12)


@pytest.mark.parametrize("case", ["same array", "overlapping views", "view of the other",
                                  "not contiguous"])
def test_arguments_sharing_memory_keep_numpys_values(case):
    def args(a):
        if case == "same array":
            return a, a
        if case == "overlapping views":
            return a[:-1], a[1:]
        if case == "view of the other":
            return a[::2], a[1::2]
        return a[::2], np.ones(5)
    ref, ours = np.arange(10.0), np.arange(10.0)
    add_into(*args(ref))
    f = xla.jit(add_into)
    f(*args(ours))
    np.testing.assert_array_equal(ours, ref)


def test_a_read_only_argument_is_refused_as_numpy_refuses_it():
    x = np.zeros(4)
    x.flags.writeable = False
    with pytest.raises(InvalidArgumentError, match="read-only"):
        xla.jit(add_into)(x, np.ones(4))
    np.testing.assert_array_equal(x, 0)


def test_the_executable_writes_a_donated_aliased_parameter_in_place():
    text = ("HloModule m, input_output_alias={ {}: (0, {}, may-alias) }\n"
            "ENTRY e {\n  a = f64[64] parameter(0)\n  b = f64[64] parameter(1)\n"
            "  ROOT s = f64[64] add(a, b)\n}\n")
    exe = xla.compile(parse_hlo_module(text), "cpu")
    a, b = np.arange(64.0), np.ones(64)
    kept = exe.execute(a, b)             # not donated: a is copied, left alone
    assert kept is not a and a[0] == 0 and kept[0] == 1
    for _ in range(2):
        out = exe.execute(a, b, donated=(0,))
        assert out is a
    np.testing.assert_array_equal(a, np.arange(64.0) + 2)
