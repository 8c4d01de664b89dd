"""``x ** n`` for a float32/float64 array and a Python int n of -1 to 4 is
multiplications (JAX's integer_pow), not HLO's power, which the CPU
computes with one libm pow call per element (xla/frontend/ufuncs.py,
``_small_integer_power``). Expected values: NumPy's, within the two
roundings of x * x * x; the squares and reciprocals exactly."""
import re

import numpy as np
import pytest

import xla


def hlo(fn, *args):
    return xla.jit(fn).lower(*args).as_hlo_text()


def count(text, opcode):
    return len(re.findall(rf"= [^=]* {opcode}\(", text))


def cube(x):
    return x ** 3


@pytest.mark.parametrize("fn, muls, divides", [
    (lambda x: x ** 2, 1, 0), (cube, 2, 0), (lambda x: np.power(x, 4), 2, 0),
    (lambda x: x ** -1, 0, 1)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_small_integer_powers_are_multiplications(fn, muls, divides, dtype):
    x = np.linspace(-3, 3, 7).astype(dtype)
    text = hlo(fn, x)
    assert count(text, "power") == 0
    assert count(text, "multiply") == muls and count(text, "divide") == divides


@pytest.mark.parametrize("n", [2, 3, 4, -1])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_values_match_numpy(n, dtype):
    rng = np.random.default_rng(n + 1)
    x = (rng.standard_normal(1000) * 10).astype(dtype)
    x[:6] = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e200 if dtype == np.float64 else 1e30]
    got = xla.jit(lambda x: x ** n)(x)
    want = x ** n
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(np.signbit(got[:6]), np.signbit(want[:6]))
    if n in (2, -1):    # one correctly rounded operation, as pow's correctly rounded result
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_array_max_ulp(got, want, maxulp=2)


@pytest.mark.parametrize("x, n", [
    (np.arange(5.0), 5),                          # beyond 4: HLO's power
    (np.arange(5.0), 3.0),                        # a float exponent
    (np.arange(5, dtype=np.int64), 3),            # integer bases
    (np.arange(5.0).astype(np.float16), 3),       # NumPy computes half in f32, rounds once
])
def test_other_powers_stay_hlo_power(x, n):
    text = hlo(lambda x: x ** n, x)
    assert count(text, "power") == 1
    np.testing.assert_array_equal(xla.jit(lambda x: x ** n)(x), x ** n)


def test_a_zero_dimensional_base_keeps_numpys_dtype():
    x = np.arange(4, dtype=np.float32)
    got = xla.jit(lambda x: x * (x.sum() ** 3))(x)
    assert got.dtype == (x * x.sum() ** 3).dtype == np.float32
    np.testing.assert_allclose(got, x * x.sum() ** 3, rtol=1e-6)
