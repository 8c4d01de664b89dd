"""NumPy 2 dtype promotion under xla.jit, compared with NumPy's own result
dtypes: weak Python scalars (NEP 50), mixed kinds, bool arithmetic, and
float64 programs that must stay float64 end to end."""
import numpy as np
import pytest

import xla

CASES = {
    "f32_times_python_float": (lambda a: a * 2.5, (np.float32,)),
    "f32_plus_python_int": (lambda a: a + 3, (np.float32,)),
    "i8_plus_python_int": (lambda a: a + 3, (np.int8,)),
    "u8_times_python_int": (lambda a: a * 2, (np.uint8,)),
    "i32_plus_python_float": (lambda a: a + 1.5, (np.int32,)),
    "f32_plus_python_complex": (lambda a: a + 1j, (np.float32,)),
    "bool_plus_python_int": (lambda a: a + 1, (np.bool_,)),
    "i32_plus_f32": (lambda a, b: a + b, (np.int32, np.float32)),
    "i64_plus_f32": (lambda a, b: a + b, (np.int64, np.float32)),
    "u8_plus_i8": (lambda a, b: a + b, (np.uint8, np.int8)),
    "u32_plus_i32": (lambda a, b: a + b, (np.uint32, np.int32)),
    "f16_plus_i8": (lambda a, b: a * b, (np.float16, np.int8)),
    "bool_plus_bool": (lambda a, b: a + b, (np.bool_, np.bool_)),
    "bool_times_f32": (lambda a, b: a * b, (np.bool_, np.float32)),
    "bool_sum": (lambda a: np.sum(a), (np.bool_,)),
    "i8_sum": (lambda a: np.sum(a), (np.int8,)),
    "u8_cumsum": (lambda a: np.cumsum(a), (np.uint8,)),
    "i32_true_divide": (lambda a, b: a / b, (np.int32, np.int32)),
    "i32_mean": (lambda a: np.mean(a), (np.int32,)),
    "f32_np_float64_scalar": (lambda a: a * np.float64(2.0), (np.float32,)),
    "c64_times_f64": (lambda a, b: a * b, (np.complex64, np.float64)),
    "where_i32_f32": (lambda c, a, b: np.where(c, a, b), (np.bool_, np.int32, np.float32)),
    "concatenate_i8_u8": (lambda a, b: np.concatenate([a, b]), (np.int8, np.uint8)),
    "sqrt_i16": (lambda a: np.sqrt(a), (np.int16,)),
    "comparison_f32_python_float": (lambda a: a < 0.5, (np.float32,)),
}


def _sample(dtype, rng):
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.random(6) > 0.5
    if dtype.kind in "iu":
        return rng.integers(1, 9, 6).astype(dtype)
    if dtype.kind == "c":
        return (rng.standard_normal(6) + 1j * rng.standard_normal(6)).astype(dtype)
    return rng.standard_normal(6).astype(dtype)


@pytest.mark.parametrize("name", sorted(CASES))
def test_result_dtype_and_value_match_numpy(name):
    fn, dtypes = CASES[name]
    rng = np.random.default_rng(len(name))
    args = [_sample(d, rng) for d in dtypes]
    want = np.asarray(fn(*args))
    got = np.asarray(xla.jit(fn, backend="interpreter")(*args))
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-3 if want.dtype == np.float16 else 1e-6)


def test_weak_scalar_argument_takes_the_array_dtype():
    f = xla.jit(lambda a, s: a * s)
    out = f(np.ones(3, np.float32), 2.0)
    assert out.dtype == np.float32
    assert f(np.ones(3, np.int8), 3).dtype == np.int8


def test_float64_program_stays_float64_in_the_module():
    def f(x, w):
        h = np.tanh(x @ w) * 0.5 + 1
        return np.mean(h, axis=0), np.linalg.norm(h), np.einsum("ij,jk->ik", x, w)
    x, w = np.ones((3, 4)), np.ones((4, 2))
    text = xla.jit(f).lower(x, w).as_hlo_text()
    assert "f64[" in text and "f32" not in text and "f16" not in text
    for out in xla.jit(f)(x, w):
        assert out.dtype == np.float64
