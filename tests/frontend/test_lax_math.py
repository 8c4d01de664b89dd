"""xla.lax's elementwise math (lax/math.py) against NumPy and values
computed with jax.lax (jax 0.10, 64-bit types enabled, written out below),
on cpu and the interpreter; JAX's dtype rules (errors that name the
function), and ``full``/``full_like``."""
import numpy as np
import pytest

import xla
from xla import lax
from xla.errors import InvalidArgumentError, ShapeError

BACKENDS = ["cpu", "interpreter"]

rng = np.random.default_rng(5)
X = rng.uniform(-0.9, 0.9, (3, 4))
P = rng.uniform(1.1, 3.0, (3, 4))
Z = (rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))).astype(np.complex128)


@pytest.mark.parametrize("backend", BACKENDS)
def test_unary_math_matches_numpy(backend):
    def f(x, p, z):
        return dict(exp=lax.exp(x), exp2=lax.exp2(x), expm1=lax.expm1(x), log=lax.log(p),
                    log1p=lax.log1p(x), sqrt=lax.sqrt(p), cbrt=lax.cbrt(x), sin=lax.sin(x),
                    cos=lax.cos(x), tan=lax.tan(x), tanh=lax.tanh(x), asin=lax.asin(x),
                    acos=lax.acos(x), atan=lax.atan(x), sinh=lax.sinh(x), cosh=lax.cosh(x),
                    asinh=lax.asinh(x), acosh=lax.acosh(p), atanh=lax.atanh(x), abs=lax.abs(x),
                    zexp=lax.exp(z), zlog=lax.log(z), zsqrt=lax.sqrt(z), zabs=lax.abs(z),
                    floor=lax.floor(p), ceil=lax.ceil(p))

    out = xla.jit(f, backend=backend)(X, P, Z)
    want = dict(exp=np.exp(X), exp2=np.exp2(X), expm1=np.expm1(X), log=np.log(P),
                log1p=np.log1p(X), sqrt=np.sqrt(P), cbrt=np.cbrt(X), sin=np.sin(X), cos=np.cos(X),
                tan=np.tan(X), tanh=np.tanh(X), asin=np.arcsin(X), acos=np.arccos(X),
                atan=np.arctan(X), sinh=np.sinh(X), cosh=np.cosh(X), asinh=np.arcsinh(X),
                acosh=np.arccosh(P), atanh=np.arctanh(X), abs=np.abs(X), zexp=np.exp(Z),
                zlog=np.log(Z), zsqrt=np.sqrt(Z), zabs=np.abs(Z), floor=np.floor(P),
                ceil=np.ceil(P))
    for name, w in want.items():
        assert out[name].dtype == w.dtype, name
        np.testing.assert_allclose(out[name], w, rtol=1e-12, atol=1e-15, err_msg=name)


# jax.lax values (see the module docstring).
I = np.array([-8, -7, -1, 0, 1, 7, 100, 2**31 - 1], np.int32)
S = np.array([0, 1, 3, 31, 32, 33, 1, 2], np.int32)
U = np.array([0, 1, 3, 255, 128, 7, 64, 2], np.uint8)
D = np.array([3, -3, 2, -2, 5, 5, 7, -9], np.int32)
F = np.array([2.5, -2.5, 0.5, 1.5, -0.5, 3.7, -3.2, 0.0])
JAX = dict(
    shift_left=[-8, -14, -8, 0, 0, 0, 200, -4],
    shift_right_arithmetic=[-8, -4, -1, 0, 0, 0, 50, 536870911],
    shift_right_logical=[-8, 2147483644, 536870911, 0, 0, 0, 50, 536870911],
    clz=[0, 0, 0, 32, 31, 29, 25, 1], clz_u8=[8, 7, 6, 0, 0, 5, 1, 6],
    population_count=[29, 30, 32, 0, 1, 3, 3, 31], population_count_u8=[0, 1, 2, 8, 1, 3, 1, 1],
    div=[-2, 2, 0, 0, 0, 1, 14, -238609294], rem=[-2, -1, -1, 0, 1, 2, 2, 1],
    round=[3.0, -3.0, 1.0, 2.0, -1.0, 4.0, -3.0, 0.0],
    round_even=[2.0, -2.0, 0.0, 2.0, -0.0, 4.0, -3.0, 0.0],
    rem_f=[1.0, -1.0, 0.5, 0.0, -0.5, 0.7000000000000002, -0.20000000000000018, 0.0],
    sign_u8=[0, 1, 1, 1, 1, 1, 1, 1], sign=[-1, -1, -1, 0, 1, 1, 1, 1],
)


@pytest.mark.parametrize("backend", BACKENDS)
def test_integer_and_rounding_primitives_match_jax(backend):
    def f(i, s, u, d, x):
        return dict(
            shift_left=lax.shift_left(i, s), shift_right_arithmetic=lax.shift_right_arithmetic(i, s),
            shift_right_logical=lax.shift_right_logical(i, s), clz=lax.clz(i), clz_u8=lax.clz(u),
            population_count=lax.population_count(i), population_count_u8=lax.population_count(u),
            div=lax.div(i, d), rem=lax.rem(i, d), round=lax.round(x),
            round_even=lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN),
            rem_f=lax.rem(x, np.full(8, -1.5)), sign_u8=lax.sign(u), sign=lax.sign(i))

    out = xla.jit(f, backend=backend)(I, S, U, D, F)
    for name, w in JAX.items():
        np.testing.assert_array_equal(out[name], w, err_msg=name)
        assert out[name].dtype == {"_u8": np.uint8}.get(name[-3:], out[name].dtype)
    assert out["round_even"].dtype == np.float64 and out["div"].dtype == np.int32
    assert np.signbit(out["round_even"][4])   # -0.5 rounds to -0.0


@pytest.mark.parametrize("backend", BACKENDS)
def test_is_finite_atan2_pow_and_nextafter(backend):
    x = np.array([1.0, -np.inf, np.nan, 0.0, -0.0, 2.0, 1.0])
    y = np.array([2.0, 1.0, 1.0, -1.0, 1.0, np.nan, 1.0])

    def f(x, y):
        return (lax.is_finite(x), lax.atan2(x, y), lax.pow(np.abs(x), y),
                lax.pow(np.float64(2.0), np.int32(-2)), lax.nextafter(x, y),
                lax.nextafter(x.astype(np.float32), y.astype(np.float32)))

    fin, at, pw, pw_int, nxt, nxt32 = xla.jit(f, backend=backend)(x, y)
    np.testing.assert_array_equal(fin, np.isfinite(x))
    np.testing.assert_allclose(at, np.arctan2(x, y), rtol=1e-14)
    np.testing.assert_allclose(pw, np.abs(x) ** y, rtol=1e-14)
    assert pw_int == 0.25 and pw_int.dtype == np.float64   # an integer exponent, as in JAX
    np.testing.assert_array_equal(nxt, np.nextafter(x, y))
    np.testing.assert_array_equal(nxt32, np.nextafter(x.astype(np.float32), y.astype(np.float32)))
    assert np.signbit(nxt[3]) and nxt[3] != 0      # from +0 toward -1: the negative subnormal


def test_bitcast_convert_type_keeps_the_bits_and_changes_the_minor_dimension():
    # jax.lax.bitcast_convert_type values.
    np.testing.assert_array_equal(lax.bitcast_convert_type(np.float32([1.0, -2.0]), np.int32),
                                  [1065353216, -1073741824])
    np.testing.assert_array_equal(lax.bitcast_convert_type(np.float32([1.0]), np.uint8),
                                  [[0, 0, 128, 63]])
    np.testing.assert_array_equal(lax.bitcast_convert_type(np.uint8([[0, 0, 128, 63]]), np.float32),
                                  [1.0])
    v = rng.standard_normal(5)
    np.testing.assert_array_equal(lax.bitcast_convert_type(v, np.int64), v.view(np.int64))


def test_full_and_full_like():
    def f(x):
        return lax.full((2, 3), 1.5, np.float32), lax.full_like(x, 7), lax.full((), 2, np.int8)

    a, b, c = xla.jit(f)(np.zeros((4,), np.int16))
    assert a.dtype == np.float32 and a.shape == (2, 3) and (a == 1.5).all()
    assert b.dtype == np.int16 and b.shape == (4,) and (b == 7).all()
    assert c.dtype == np.int8 and c.shape == () and c == 2


@pytest.mark.parametrize("call, error, message", [
    (lambda: lax.exp(np.int32(1)), InvalidArgumentError, "lax.exp does not accept dtype int32"),
    (lambda: lax.floor(np.int32(1)), InvalidArgumentError, "lax.floor does not accept dtype int32"),
    (lambda: lax.asin(np.complex64(1)), InvalidArgumentError, "lax.asin does not accept dtype complex64"),
    (lambda: lax.abs(np.uint8(1)), InvalidArgumentError, "lax.abs does not accept dtype uint8"),
    (lambda: lax.shift_left(np.float32(1), np.float32(1)), InvalidArgumentError,
     "lax.shift_left does not accept dtype float32"),
    (lambda: lax.rem(np.float32(1), np.float64(1)), ShapeError, "lax.rem requires its operands to have one dtype"),
    (lambda: lax.pow(np.float32(1), np.float64(1)), ShapeError, "lax.pow requires its operands to have one dtype"),
    (lambda: lax.clz(np.float32(1)), InvalidArgumentError, "lax.clz does not accept dtype float32"),
    (lambda: lax.round(np.float32(1), 7), InvalidArgumentError, "unknown rounding_method 7"),
    (lambda: lax.bitcast_convert_type(np.uint8([1, 2, 3]), np.int32), ShapeError,
     "needs a minor dimension of 4"),
    (lambda: lax.bitcast_convert_type(np.uint8([1]), np.bool_), InvalidArgumentError, "bool"),
])
def test_errors_name_the_function_and_the_rule(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_ml_dtypes_narrow_floats_count_as_floats():
    import ml_dtypes
    bf = np.array([0.5, 1.0, 2.0], ml_dtypes.bfloat16)
    e = lax.exp(bf)
    assert e.dtype == ml_dtypes.bfloat16
    np.testing.assert_allclose(e.astype(np.float32), np.exp([0.5, 1.0, 2.0]), rtol=1e-2)
    assert lax.sub(bf, bf).dtype == ml_dtypes.bfloat16 and not lax.sub(bf, bf).astype(np.float32).any()
    with pytest.raises(InvalidArgumentError, match="lax.shift_left does not accept dtype bfloat16"):
        lax.shift_left(bf, bf)
