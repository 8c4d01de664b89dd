"""A range loop whose body takes its index modulo a small int (``s = i % 2``
then ``x[s::2]``, a slice whose size depends on ``s``) cannot be one HLO
while loop with one copy of its body; it becomes one while loop whose
iterations run ``c`` copies of the body (c the least common multiple of the
moduli), in each of which ``i % c`` is a Python int, and the last
``len(range) % c`` iterations run in Python (xla/frontend/control_flow.py,
``_static_while``). Expected values: the same functions run by NumPy."""
import re
import warnings

import numpy as np
import pytest

import xla

from numpy_programs import odd_even_sort   # the kernel suite's, written as NumPy code is


def hlo(fn, *args, **jit_kwargs):
    return xla.jit(fn, **jit_kwargs).lower(*args).as_hlo_text()


def count(text, opcode):
    return len(re.findall(rf"= [^=]* {opcode}\(", text))


def same_as_numpy(fn, *args, **jit_kwargs):
    ref = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    ours = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    want = fn(*ref)
    with warnings.catch_warnings():
        warnings.simplefilter("error")       # no "unrolled" warning
        got = xla.jit(fn, **jit_kwargs)(*ours)
    if want is not None:
        np.testing.assert_array_equal(got, want)
    for r, o in zip(ref, ours):
        if isinstance(r, np.ndarray):
            np.testing.assert_array_equal(o, r)


@pytest.mark.parametrize("n", [20, 21])
def test_odd_even_sort_is_one_while_loop(n):
    x = np.random.default_rng(n).random(n)
    text = hlo(odd_even_sort, x, unroll=False)
    # One while loop of n // 2 iterations, each with both phases: 2 * 4
    # strided slices of x, not n copies of one phase.
    assert count(text, "while") == 1
    assert count(text, "slice") <= 16
    same_as_numpy(odd_even_sort, x, unroll=False)
    y = x.copy()
    xla.jit(odd_even_sort, unroll=False)(y)
    np.testing.assert_array_equal(y, np.sort(x))     # n phases sort n values


def every_third(x, start, stop, step):
    for i in range(start, stop, step):
        s = (i + 1) % 3
        x[s::3] += i
    return x.sum()


@pytest.mark.parametrize("bounds", [(0, 30, 1), (2, 31, 1), (29, -1, -1), (5, 40, 2), (-7, 20, 1)])
def test_an_offset_index_modulo_three(bounds):
    x = np.arange(10.0)
    assert count(hlo(every_third, x, *bounds, static_argnums=(1, 2, 3), unroll=False),
                 "while") == 1
    same_as_numpy(every_third, x, *bounds, static_argnums=(1, 2, 3), unroll=False)


def parity_mask(x, n):
    for i in range(n):
        x[i & 1::2] *= -1.0 if i & 3 == 1 else 0.5
    return x


def test_a_mask_of_low_bits_is_a_modulus():
    x = np.arange(1.0, 9.0)
    assert count(hlo(parity_mask, x, 17, static_argnums=1, unroll=False), "while") == 1
    same_as_numpy(parity_mask, x, 17, static_argnums=1, unroll=False)


def two_moduli(x, n):
    for i in range(n):
        x[i % 2::2] += 1.0
        x[i % 3::3] *= 2.0


def test_two_moduli_unroll_by_their_lcm():
    x = np.zeros(12)
    text = hlo(two_moduli, x, 20, static_argnums=1, unroll=False)
    assert count(text, "while") == 1
    same_as_numpy(two_moduli, x, 20, static_argnums=1, unroll=False)


def mod_sixteen(x, n):
    for i in range(n):
        x[i % 16:] += 1.0


def test_a_large_modulus_still_unrolls():
    # c = 16 copies of the body per iteration would be more code than the
    # loop is worth: unrolled as before, with NumPy's values.
    x = np.zeros(20)
    assert count(hlo(mod_sixteen, x, 40, static_argnums=1, unroll=False), "while") == 0
    ref, ours = x.copy(), x.copy()
    mod_sixteen(ref, 40)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        xla.jit(mod_sixteen, static_argnums=1, unroll=False)(ours, 40)
    np.testing.assert_array_equal(ours, ref)


def modulo_of_data(x, n):
    for i in range(n):
        k = i % 2
        x[k] += x[1 - k] * 0.5
    return x


def test_a_residue_feeding_arithmetic_keeps_python_values():
    x = np.array([1.0, 2.0, 3.0])
    same_as_numpy(modulo_of_data, x, 11, static_argnums=1, unroll=False)


def numpy_int_modulus(x, n):
    for i in range(n):
        x[i % np.int64(2)::2] += np.float32(0.5) * (i % np.int64(3))


def test_a_numpy_integer_modulus():
    x = np.zeros(6)
    assert count(hlo(numpy_int_modulus, x, 12, static_argnums=1, unroll=False), "while") == 1
    same_as_numpy(numpy_int_modulus, x, 12, static_argnums=1, unroll=False)
