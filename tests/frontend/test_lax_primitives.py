"""xla.lax's elementwise, shape, FFT and Cholesky primitives against NumPy
and values computed with jax.lax (jax 0.10, 64-bit types enabled), on cpu
and the interpreter, and JAX's dtype and shape rules: one dtype, one shape
or a scalar, errors that name the function."""
import numpy as np
import pytest

import xla
from xla import lax
from xla.errors import InvalidArgumentError, ShapeError

BACKENDS = ["cpu", "interpreter"]

rng = np.random.default_rng(3)
X = rng.standard_normal((3, 4))
Y = rng.standard_normal((3, 4))
I = rng.integers(-8, 8, (3, 4)).astype(np.int32)
J = rng.integers(-8, 8, (3, 4)).astype(np.int32)


@pytest.mark.parametrize("backend", BACKENDS)
def test_binary_and_unary_primitives_match_numpy(backend):
    def f(x, y, i, j):
        return dict(add=lax.add(x, y), sub=lax.sub(x, y), mul=lax.mul(x, y), max=lax.max(x, y),
                    min=lax.min(x, y), neg=lax.neg(x), scalar=lax.mul(x, np.float64(2.0)),
                    eq=lax.eq(i, j), ne=lax.ne(i, j), lt=lax.lt(x, y), le=lax.le(i, j),
                    gt=lax.gt(x, y), ge=lax.ge(i, j), band=lax.bitwise_and(i, j),
                    bor=lax.bitwise_or(i, j), bxor=lax.bitwise_xor(i, j), bnot=lax.bitwise_not(i),
                    lnot=lax.bitwise_not(i > 0), land=lax.bitwise_and(i > 0, j > 0))

    out = xla.jit(f, backend=backend)(X, Y, I, J)
    want = dict(add=X + Y, sub=X - Y, mul=X * Y, max=np.maximum(X, Y), min=np.minimum(X, Y),
                neg=-X, scalar=X * 2.0, eq=I == J, ne=I != J, lt=X < Y, le=I <= J, gt=X > Y,
                ge=I >= J, band=I & J, bor=I | J, bxor=I ^ J, bnot=~I, lnot=~(I > 0),
                land=(I > 0) & (J > 0))
    for name, w in want.items():
        assert out[name].dtype == w.dtype, name
        np.testing.assert_array_equal(out[name], w, err_msg=name)


def test_max_and_min_propagate_nan():
    a, b = np.array([1.0, np.nan, 2.0]), np.array([np.nan, 0.0, 3.0])
    np.testing.assert_array_equal(lax.max(a, b), [np.nan, np.nan, 3.0])
    np.testing.assert_array_equal(lax.min(a, b), [np.nan, np.nan, 2.0])


@pytest.mark.parametrize("backend", BACKENDS)
def test_complex_parts(backend):
    z = (X + 1j * Y).astype(np.complex64)

    def f(z, x, y):
        return lax.real(z), lax.imag(z), lax.complex(x, y)

    re, im, c = xla.jit(f, backend=backend)(z, X, Y)
    assert re.dtype == np.float32 and c.dtype == np.complex128
    np.testing.assert_array_equal(re, z.real)
    np.testing.assert_array_equal(im, z.imag)
    np.testing.assert_array_equal(c, X + 1j * Y)


@pytest.mark.parametrize("backend", BACKENDS)
def test_pad_concatenate_rev_transpose(backend):
    x = np.arange(1.0, 7.0).reshape(2, 3)

    def f(x):
        return dict(pad_mixed=lax.pad(x, np.float64(0.5), ((1, -1, 1), (-2, 3, 2))),
                    pad_crop=lax.pad(x, np.float64(0.0), ((-1, 0, 0), (1, -2, 1))),
                    pad_interior=lax.pad(x, np.float64(-1.0), ((0, 0, 0), (0, 0, 1))),
                    cat=lax.concatenate([x, 2 * x, x[:, :1]], 1),
                    rev=lax.rev(x, (1,)), rev_all=lax.rev(x, (0, 1)),
                    transpose=lax.transpose(x, (1, 0)), transpose_neg=lax.transpose(x, (-1, 0)))

    out = xla.jit(f, backend=backend)(x)
    # Values from jax.lax.pad with the same arguments.
    np.testing.assert_array_equal(out["pad_mixed"], [[0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5],
                                                     [0.5, 2.0, 0.5, 0.5, 3.0, 0.5, 0.5, 0.5],
                                                     [0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5]])
    np.testing.assert_array_equal(out["pad_crop"], [[0.0, 4.0, 0.0, 5.0]])
    np.testing.assert_array_equal(out["pad_interior"], [[1.0, -1.0, 2.0, -1.0, 3.0],
                                                        [4.0, -1.0, 5.0, -1.0, 6.0]])
    np.testing.assert_array_equal(out["cat"], np.concatenate([x, 2 * x, x[:, :1]], 1))
    np.testing.assert_array_equal(out["rev"], x[:, ::-1])
    np.testing.assert_array_equal(out["rev_all"], x[::-1, ::-1])
    np.testing.assert_array_equal(out["transpose"], x.T)
    np.testing.assert_array_equal(out["transpose_neg"], x.T)


def test_pad_with_interior_padding_of_integers_runs_outside_jit():
    out = lax.pad(np.arange(4, dtype=np.int32), np.int32(-1), ((0, 0, 2),))
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, [0, -1, -1, 1, -1, -1, 2, -1, -1, 3])


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fft_type, lengths", [("fft", (4,)), ("ifft", (3, 4)), ("rfft", (4,)),
                                               ("irfft", (3, 6)), ("FFT", (2, 3, 4))])
def test_fft_matches_numpy(backend, fft_type, lengths):
    z = rng.standard_normal((2, 3, 4)) + 1j * rng.standard_normal((2, 3, 4))
    k = len(lengths)
    axes = tuple(range(-k, 0))
    if fft_type == "rfft":
        arg, want = z.real, np.fft.rfftn(z.real, axes=axes)
    elif fft_type == "irfft":
        arg = z[..., :lengths[-1] // 2 + 1]
        want = np.fft.irfftn(arg, s=lengths, axes=axes)
    else:
        arg = z
        want = (np.fft.ifftn if fft_type == "ifft" else np.fft.fftn)(z, axes=axes)
    got = xla.jit(lambda a: lax.fft(a, fft_type, lengths), backend=backend)(arg)
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)


def test_fft_takes_jax_fft_type_enum_and_converts_reals():
    x = np.arange(8.0)
    np.testing.assert_allclose(lax.fft(x, lax.FftType.FFT, (8,)), np.fft.fft(x), atol=1e-12)
    got = lax.fft(np.arange(8, dtype=np.int32), "rfft", (8,))
    assert got.dtype == np.complex128
    np.testing.assert_allclose(got, np.fft.rfft(np.arange(8.0)), atol=1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
def test_cholesky_symmetrizes_or_reads_the_lower_triangle(backend):
    a = np.array([[4.0, 3.0], [1.0, 3.0]])
    sym = np.array([[4.0, 2.0], [2.0, 3.0]])            # (a + a.T) / 2
    low = np.array([[4.0, 1.0], [1.0, 3.0]])            # the lower triangle, mirrored
    got_sym, got_low = xla.jit(lambda a: (lax.linalg.cholesky(a),
                                          lax.linalg.cholesky(a, symmetrize_input=False)),
                               backend=backend)(a)
    np.testing.assert_allclose(got_sym, np.linalg.cholesky(sym), rtol=1e-12)
    np.testing.assert_allclose(got_low, np.linalg.cholesky(low), rtol=1e-12)
    assert got_sym[0, 1] == 0.0 and got_low[0, 1] == 0.0


def test_cholesky_symmetrizes_float32_and_complex_input():
    a = np.array([[4.0, 3.0], [1.0, 3.0]], np.float32)
    z = np.array([[5, 1 - 2j], [3 + 4j, 4]], np.complex64)
    hermitian = np.array([[5, 2 - 3j], [2 + 3j, 4]])    # (z + z^H) / 2
    got_a, got_z = xla.jit(lambda a, z: (lax.linalg.cholesky(a), lax.linalg.cholesky(z)))(a, z)
    assert got_a.dtype == np.float32 and got_z.dtype == np.complex64
    np.testing.assert_allclose(got_a, np.linalg.cholesky([[4.0, 2.0], [2.0, 3.0]]), rtol=1e-6)
    np.testing.assert_allclose(got_z, np.linalg.cholesky(hermitian), rtol=1e-6)


def test_cholesky_of_a_stack_of_hermitian_matrices():
    m = rng.standard_normal((3, 4, 4)) + 1j * rng.standard_normal((3, 4, 4))
    spd = m @ np.conj(np.swapaxes(m, -1, -2)) + 4 * np.eye(4)
    got = xla.jit(lambda a: lax.linalg.cholesky(a))(spd)
    np.testing.assert_allclose(got, np.linalg.cholesky(spd), rtol=1e-10, atol=1e-12)


def test_reduce_takes_lax_binary_functions_as_reducers():
    def f(x, i):
        return (lax.reduce(x, np.float64(0.0), lax.add, (1,)),
                lax.reduce(x, np.float64(-np.inf), lax.max, (0,)),
                lax.reduce(i, np.int32(0), lax.bitwise_xor, (0, 1)))

    s, m, x = xla.jit(f)(X, I)
    np.testing.assert_allclose(s, X.sum(axis=1))
    np.testing.assert_array_equal(m, X.max(axis=0))
    assert x == np.bitwise_xor.reduce(I.ravel())


@pytest.mark.parametrize("backend", BACKENDS)
def test_select_broadcasts_a_scalar_pred(backend):
    out = xla.jit(lambda p, x, y: lax.select(p, x, y), backend=backend)(np.bool_(False), X, Y)
    np.testing.assert_array_equal(out, Y)


def test_a_scalar_operand_is_broadcast_and_weak_results_stay_weak():
    def f(x):
        both_weak = lax.add(1.0, 2.0)         # weak float64, as in JAX
        return lax.add(x, np.float32(1.5)), x * both_weak

    shifted, scaled = xla.jit(f)(X.astype(np.float32))
    assert shifted.dtype == np.float32 and scaled.dtype == np.float32
    np.testing.assert_array_equal(shifted, X.astype(np.float32) + np.float32(1.5))


# ----- JAX's rules, and clear errors ------------------------------------------------------

@pytest.mark.parametrize("call, error, message", [
    (lambda x: lax.add(x, 2.0), ShapeError, r"lax.add requires its operands to have one dtype"),
    (lambda x: lax.add(x, np.ones((2, 4), np.float32)), ShapeError,
     r"lax.add requires its operands to have one shape"),
    (lambda x: lax.add(x > 0, x > 1), InvalidArgumentError, r"lax.add does not accept dtype bool"),
    (lambda x: lax.lt(lax.complex(x, x), lax.complex(x, x)), InvalidArgumentError,
     r"lax.lt does not accept dtype complex"),
    (lambda x: lax.bitwise_and(x, x), InvalidArgumentError, r"lax.bitwise_and does not accept dtype float32"),
    (lambda x: lax.real(x), InvalidArgumentError, r"lax.real does not accept dtype float32"),
    (lambda x: lax.concatenate([x, x.astype(np.float64)], 0), ShapeError,
     r"lax.concatenate requires its operands to have one dtype"),
    (lambda x: lax.concatenate([x, x], -1), ShapeError, r"concatenate: dimension -1 is out of range"),
    (lambda x: lax.concatenate([x, x[:, :2]], 0), ShapeError, r"differ outside dimension 0"),
    (lambda x: lax.pad(x, 0.0, ((0, 0, 0), (0, 0, 0))), ShapeError,
     r"pad: padding_value float64\[\] \(weak\) must have the operand's dtype float32"),
    (lambda x: lax.pad(x, np.float32(0), ((0, 0, 0),)), ShapeError, r"one \(low, high, interior\)"),
    (lambda x: lax.pad(x, np.float32(0), ((0, 0, -1), (0, 0, 0))), ShapeError, r"negative size"),
    (lambda x: lax.rev(x, (2,)), ShapeError, r"rev: dimensions \(2,\)"),
    (lambda x: lax.transpose(x, (0, 0)), ShapeError, r"not a permutation"),
    (lambda x: lax.fft(x, "rfft", (5,)), ShapeError, r"RFFT with fft_lengths \(5,\) needs trailing "
                                                      r"dimensions \(5,\), got float32\[3, 4\]"),
    (lambda x: lax.fft(lax.complex(x, x), "rfft", (4,)), InvalidArgumentError, r"RFFT takes real input"),
    (lambda x: lax.fft(x, "dct", (4,)), InvalidArgumentError, r"unknown fft_type 'dct'"),
    (lambda x: lax.linalg.cholesky(x), ShapeError, r"square matrices, got float32\[3, 4\]"),
    (lambda x: lax.linalg.cholesky(x[:3, :3].astype(np.int32)), InvalidArgumentError,
     r"takes floats or complex numbers"),
])
def test_errors_name_the_function_and_the_rule(call, error, message):
    with pytest.raises(error, match=message):
        xla.jit(call)(X.astype(np.float32))
