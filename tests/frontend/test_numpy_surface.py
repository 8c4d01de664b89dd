"""NumPy surface under xla.jit, against NumPy: np.linalg.solve, inv, det and
slogdet (xla/frontend/numpy/linalg.py), ufunc accumulate and reduce
identities, np.linspace with traced endpoints, np.where's promotion."""
import numpy as np
import pytest

import xla

from result_checks import assert_results_match


def well_conditioned(rng, shape):
    a = rng.standard_normal(shape)
    return a + shape[-1] * np.eye(shape[-1])


@pytest.mark.parametrize("a_shape,b_shape", [((5, 5), (5,)), ((5, 5), (5, 3)), ((3, 4, 4), (3, 4, 2)),
                                             ((2, 3, 3), (3, 1)), ((1, 1), (1,))])
def test_solve_matches_numpy(a_shape, b_shape):
    rng = np.random.default_rng(sum(a_shape))
    a, b = well_conditioned(rng, a_shape), rng.standard_normal(b_shape)
    got = xla.jit(lambda a, b: np.linalg.solve(a, b))(a, b)
    want = np.linalg.solve(a, b)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def test_solve_pivots_as_lapack():
    # A zero on the diagonal (no pivoting would divide by it) and a tiny one
    # (no pivoting would lose every digit).
    a = np.array([[0.0, 2.0, 1.0], [1e-18, 1.0, 3.0], [4.0, 1.0, 1.0]])
    b = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(xla.jit(np.linalg.solve)(a, b), np.linalg.solve(a, b), rtol=1e-12)


@pytest.mark.parametrize("dtype,rtol", [(np.float64, 1e-10), (np.float32, 1e-4), (np.complex128, 1e-10)])
def test_inv_matches_numpy(dtype, rtol):
    rng = np.random.default_rng(1)
    a = well_conditioned(rng, (4, 6, 6)).astype(dtype)
    if dtype == np.complex128:
        a = a + 1j * rng.standard_normal(a.shape)
    got = xla.jit(np.linalg.inv)(a)
    assert got.dtype == np.linalg.inv(a).dtype
    np.testing.assert_allclose(got, np.linalg.inv(a), rtol=rtol, atol=rtol)


def test_bad_shapes_raise_as_numpy():
    with pytest.raises(np.linalg.LinAlgError, match="square"):
        xla.jit(np.linalg.inv)(np.ones((2, 3)))
    with pytest.raises(ValueError, match="mismatch"):
        xla.jit(np.linalg.solve)(np.eye(3), np.ones(4))


@pytest.mark.parametrize("args", [(0.0, 2.0, 5), (1.0, -3.0, 7, False), (2.0, 2.0, 4), (0.0, 1.0, 1),
                                  (np.array([0.0, 1.0]), np.array([2.0, 5.0]), 4)])
def test_linspace_with_traced_endpoints(args):
    start, stop = np.asarray(args[0]), np.asarray(args[1])
    got = xla.jit(lambda a, b: np.linspace(a, b, *args[2:]))(start, stop)
    want = np.linspace(*args)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-15, atol=1e-15)
    y, step = xla.jit(lambda a, b: np.linspace(a, b, 6, retstep=True))(start, stop)
    want_y, want_step = np.linspace(args[0], args[1], 6, retstep=True)
    np.testing.assert_allclose(y, want_y, rtol=1e-15, atol=1e-15)
    np.testing.assert_allclose(step, want_step)


def test_where_of_python_scalars_is_a_float64_array_as_in_numpy_2():
    x, y = np.ones(3, np.float32), np.zeros(3, np.float32)

    def f(x, y):
        return np.minimum(x, y) + np.where(x < y, 1.0, 2.0)

    assert f(x, y).dtype == np.float64
    assert xla.jit(f)(x, y).dtype == np.float64
    assert xla.jit(lambda x, y: np.where(x < y, x, 2.0))(x, y).dtype == np.float32


def test_autojit_is_exported():
    assert callable(xla.autojit)
    np.testing.assert_allclose(xla.autojit(lambda v: np.sin(v) * 2)(np.arange(3.0)), np.sin(np.arange(3.0)) * 2)


@pytest.mark.parametrize("a", [
    np.random.default_rng(3).standard_normal((5, 5)),
    np.random.default_rng(4).standard_normal((3, 4, 4)),
    np.array([[0.0, 1.0], [1.0, 0.0]]),                      # one row swap: det -1
    np.array([[1.0, 2.0], [2.0, 4.0]]),                      # singular: det 0, slogdet (0, -inf)
    np.random.default_rng(5).standard_normal((4, 4)).astype(np.float32),
], ids=["5x5", "batched", "swap", "singular", "f32"])
def test_det_and_slogdet_match_numpy(a):
    rtol = 1e-4 if a.dtype == np.float32 else 1e-10
    got = xla.jit(np.linalg.det)(a)
    assert got.dtype == np.linalg.det(a).dtype
    np.testing.assert_allclose(got, np.linalg.det(a), rtol=rtol, atol=1e-12)
    sign, logabs = xla.jit(np.linalg.slogdet)(a)
    want_sign, want_logabs = np.linalg.slogdet(a)
    np.testing.assert_array_equal(sign, want_sign)
    np.testing.assert_allclose(logabs, want_logabs, rtol=rtol)


@pytest.mark.parametrize("ufunc,dtype", [(u, d) for u in (np.maximum, np.minimum, np.add, np.multiply,
                                                            np.logical_or)
                                          for d in (np.float64, np.int32)] + [(np.bitwise_and, np.int32)])
def test_ufunc_accumulate_matches_numpy(ufunc, dtype):
    x = np.array([[3, 1, 4, 1], [5, 9, 2, 6], [5, 3, 5, 8]], dtype=dtype)
    for axis in (0, 1, -1):
        want = ufunc.accumulate(x, axis=axis)
        got = xla.jit(lambda v: ufunc.accumulate(v, axis=axis))(x)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    y = np.array([1.0, np.nan, 0.5, 2.0])
    if ufunc in (np.maximum, np.minimum):      # NaN propagates from where it appears
        np.testing.assert_array_equal(xla.jit(ufunc.accumulate)(y), ufunc.accumulate(y))


def test_accumulate_without_an_hlo_reducer_is_named():
    with pytest.raises(xla.errors.TracingError, match="np.bitwise_xor.accumulate is not supported"):
        xla.jit(np.bitwise_xor.accumulate)(np.arange(4))


@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.int64, np.bool_])
def test_bitwise_and_reduce_starts_from_every_bit_set(dtype):
    # (its identity was 1: the reduction of [7, 6, 14] gave 0 instead of 6)
    x = np.array([7, 6, 14], dtype=dtype) if dtype != np.bool_ else np.array([True, True, False])
    np.testing.assert_array_equal(xla.jit(np.bitwise_and.reduce)(x), np.bitwise_and.reduce(x))
    m = np.array([[7, 6], [14, 15]], dtype=dtype) if dtype != np.bool_ else np.ones((2, 2), bool)
    np.testing.assert_array_equal(xla.jit(lambda v: np.bitwise_and.reduce(v, axis=1))(m),
                                  np.bitwise_and.reduce(m, axis=1))


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4), (6, 1), (1, 4)])
@pytest.mark.parametrize("mode", ["reduced", "complete", "r"])
def test_qr_matches_numpy_signs_included(shape, mode):
    a = np.random.default_rng(sum(shape)).standard_normal(shape)
    a[2:, 0] = 0.0 if shape[0] > 2 else a[2:, 0]       # a column already zero below row 1
    got = xla.jit(lambda m: np.linalg.qr(m, mode=mode))(a)
    want = np.linalg.qr(a, mode=mode)
    for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("shape", [(3, 5, 3), (2, 2, 3, 4)])
@pytest.mark.parametrize("mode", ["reduced", "complete"])
def test_qr_of_a_stack_matches_numpy_matrix_by_matrix(shape, mode):
    a = np.random.default_rng(len(shape)).standard_normal(shape)
    a[0, ..., 1:, 0] = 0.0                              # one matrix with a column already reduced
    q, r = xla.jit(lambda m: np.linalg.qr(m, mode=mode))(a)
    want_q, want_r = np.linalg.qr(a, mode=mode)
    assert q.shape == want_q.shape and r.shape == want_r.shape
    np.testing.assert_allclose(q, want_q, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(r, want_r, rtol=1e-10, atol=1e-12)
    r_only = xla.jit(lambda m: np.linalg.qr(m, mode="r"))(a)
    np.testing.assert_allclose(r_only, np.linalg.qr(a, mode="r"), rtol=1e-10, atol=1e-12)


def test_qr_refuses_what_it_does_not_cover():
    with pytest.raises(xla.errors.TracingError, match="takes a matrix or a stack"):
        xla.jit(np.linalg.qr)(np.ones(3))
    with pytest.raises(xla.errors.TracingError, match="complex is not supported"):
        xla.jit(np.linalg.qr)(np.ones((3, 3), np.complex128))


@pytest.mark.parametrize("n", [1, 2, 5, 9])
@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh_matches_numpy(n, uplo):
    rng = np.random.default_rng(n)
    a = rng.standard_normal((n, n))      # not symmetric: eigh reads one triangle, as NumPy
    w, v = xla.jit(lambda m: np.linalg.eigh(m, UPLO=uplo))(a)
    want_w, want_v = np.linalg.eigh(a, UPLO=uplo)
    assert w.dtype == want_w.dtype and v.shape == want_v.shape
    np.testing.assert_allclose(w, want_w, rtol=1e-11, atol=1e-11)
    # Eigenvectors up to their sign (LAPACK's is arbitrary too).
    np.testing.assert_allclose(np.abs(np.sum(v * want_v, axis=0)), 1.0, atol=1e-9)
    sym = np.tril(a) + np.tril(a, -1).T if uplo == "L" else np.triu(a) + np.triu(a, 1).T
    np.testing.assert_allclose(sym @ v, v * w, atol=1e-10)


@pytest.mark.parametrize("shape", [(3, 4, 4), (2, 2, 3, 3), (2, 1, 1)])
def test_eigh_of_a_stack_matches_numpy_matrix_by_matrix(shape):
    a = np.random.default_rng(sum(shape)).standard_normal(shape)
    a[0] = np.diag(np.arange(shape[-1], 0.0, -1.0))[(None,) * (len(shape) - 3)]   # diagonal already
    w, v = xla.jit(np.linalg.eigh)(a)
    want_w, want_v = np.linalg.eigh(a)
    assert w.shape == want_w.shape and v.shape == want_v.shape
    np.testing.assert_allclose(w, want_w, rtol=1e-11, atol=1e-11)
    np.testing.assert_allclose(np.abs(np.sum(v * want_v, axis=-2)), 1.0, atol=1e-9)
    sym = np.tril(a) + np.swapaxes(np.tril(a, -1), -1, -2)
    np.testing.assert_allclose(sym @ v, v * w[..., None, :], atol=1e-10)


def test_eigh_refuses_what_it_does_not_cover():
    with pytest.raises(xla.errors.TracingError, match="takes square matrices"):
        xla.jit(np.linalg.eigh)(np.ones((2, 3, 4)))
    with pytest.raises(xla.errors.TracingError, match="real float"):
        xla.jit(np.linalg.eigh)(np.eye(3, dtype=np.complex128))


def check_like_numpy(f, *args, rtol=1e-12, atol=0.0):
    """``xla.jit(f)`` against NumPy: the same dtypes, shapes and values."""
    want, got = f(*args), xla.jit(f)(*args)
    assert_results_match(got, want, rtol=rtol, atol=atol)


VANDER_INPUTS = {"f64": np.array([0.5, -1.5, 2.0, 3.0]), "f32": np.array([0.5, -1.5, 2.0], np.float32),
                 "i32": np.array([1, -2, 3, 4, 0], np.int32), "u8": np.array([1, 2, 3], np.uint8),
                 "u64": np.array([1, 2, 3], np.uint64), "bool": np.array([True, False, True]),
                 "empty": np.zeros(0)}


@pytest.mark.parametrize("name", sorted(VANDER_INPUTS))
@pytest.mark.parametrize("kwargs", [{}, dict(N=3), dict(N=0), dict(N=1), dict(N=5, increasing=True)])
def test_vander_matches_numpy(name, kwargs):
    check_like_numpy(lambda x: np.vander(x, **kwargs), VANDER_INPUTS[name], rtol=1e-6)


def test_vander_rejects_what_numpy_rejects():
    with pytest.raises(ValueError, match="one-dimensional"):
        xla.jit(np.vander)(np.ones((2, 2)))


PIECEWISE = {
    "callables": lambda x: np.piecewise(x, [x < 0, x >= 0], [lambda t: -t, lambda t: t ** 2]),
    "scalars": lambda x: np.piecewise(x, [x < -1, x > 1], [-1, 1]),
    "otherwise": lambda x: np.piecewise(x, [x < 0, x > 2], [lambda t: t * 3, 7.5, lambda t: t + 1]),
    "one_condition": lambda x: np.piecewise(x, x > 0, [lambda t: t * 2, 0]),
    "overlapping": lambda x: np.piecewise(x, [x > -1, x > 1], [1, 2]),   # the later one wins
    "args": lambda x: np.piecewise(x, [x < 0], [lambda t, a, b=0: a * t + b, 4], 3, b=1),
    "nothing_selected": lambda x: np.piecewise(x, [x > 100], [lambda t: t]),
}


@pytest.mark.parametrize("case", sorted(PIECEWISE))
@pytest.mark.parametrize("x", [np.linspace(-3, 3, 13), np.linspace(-3, 3, 12).reshape(3, 4).astype(np.float32),
                               np.arange(-4, 5, dtype=np.int32), np.array(-1.5), np.zeros(0)],
                         ids=["f64", "f32_2d", "i32", "0d", "empty"])
def test_piecewise_matches_numpy(case, x):
    try:
        PIECEWISE[case](x)
    except (ValueError, IndexError) as e:
        # A single condition array of two dimensions is a list of conditions
        # to NumPy (its rows); of an empty array, one it cannot index.
        assert case == "one_condition" and x.ndim != 1 or x.size == 0
        with pytest.raises(type(e)):
            xla.jit(PIECEWISE[case])(x)
        return
    check_like_numpy(PIECEWISE[case], x, rtol=1e-6)


def test_piecewise_takes_conditions_as_boolean_arrays_and_leading_dimensions():
    x = np.arange(12.0).reshape(3, 4)
    rows = np.array([True, False, True])
    check_like_numpy(lambda x, c: np.piecewise(x, [c], [lambda t: -t]), x, rows)
    check_like_numpy(lambda x, c: np.piecewise(x, [c, ~c], [1.0, lambda t: t / 2]), x, x > 5)


def test_piecewise_errors_name_the_problem():
    x = np.linspace(-1, 1, 5)
    with pytest.raises(ValueError, match="either 2 or 3 functions"):
        xla.jit(lambda x: np.piecewise(x, [x < 0, x > 0], [1]))(x)
    with pytest.raises(xla.errors.TracingError, match="must be elementwise"):
        xla.jit(lambda x: np.piecewise(x, [x < 0], [lambda t: np.ones(3)]))(x)


@pytest.mark.parametrize("func, op", [(lambda t: t - t.mean(), "reduce"),
                                      (lambda t: t[::-1] * 2, "reverse"),
                                      (lambda t: np.cumsum(t), "reduce-window"),
                                      (lambda t: t @ np.ones((5, 5)), "(reshape|dot)")])
def test_piecewise_refuses_functions_that_are_not_elementwise(func, op):
    # NumPy calls the function on the selected elements only; called on
    # all of x, these would compute other values (no silent difference).
    x = np.linspace(-1, 1, 5)
    f = lambda x: np.piecewise(x, [x < 0], [func, 0.0])
    with pytest.raises(xla.errors.TracingError, match=f"computes a {op} of x"):
        xla.jit(f)(x)


def test_piecewise_takes_elementwise_functions_of_other_arrays_and_reductions_of_them():
    # What does not depend on x may be anything (here a reduction of w).
    x, w = np.linspace(-1, 1, 6), np.arange(6.0)
    check_like_numpy(lambda x, w: np.piecewise(x, [x < 0], [lambda t: np.exp(t) * w.sum() - w.max(), 1.0]),
                     x, w)


POLY = {"f64": np.array([3.0, -2.0, 0.5, 1.0]), "f32": np.array([1.5, 2.0, -1.0], np.float32),
        "i32": np.array([4, 3, -2, 1], np.int32), "one": np.array([2.0])}


@pytest.mark.parametrize("name", sorted(POLY))
@pytest.mark.parametrize("f", [lambda p: np.polyder(p), lambda p: np.polyder(p, 2), lambda p: np.polyder(p, 0),
                               lambda p: np.polyint(p), lambda p: np.polyint(p, 2, k=[1.0, -2.0]),
                               lambda p: np.polyint(p, 3, k=0.5), lambda p: np.polyadd(p, p[:2]),
                               lambda p: np.polysub(p[:1], p), lambda p: np.polymul(p, p[::-1])],
                         ids=["der", "der2", "der0", "int", "int2k", "int3k", "add", "sub", "mul"])
def test_polynomial_arithmetic_matches_numpy(name, f):
    check_like_numpy(f, POLY[name], rtol=1e-6)


@pytest.mark.parametrize("deg", [0, 1, 2, 3])
@pytest.mark.parametrize("kind", ["f64", "f32", "int", "weights", "2d_y", "full"])
def test_polyfit_matches_numpy(deg, kind):
    rng = np.random.default_rng(deg)
    x = np.linspace(-2, 3, 20)
    y = 0.5 * x ** 3 - x + 2 + 0.1 * rng.standard_normal(20)
    rtol = 1e-8
    if kind == "f32":
        x, y, rtol = x.astype(np.float32), y.astype(np.float32), 2e-3
    if kind == "int":
        x, y = np.arange(-5, 7), np.arange(-5, 7) ** 2 - 3
    if kind == "2d_y":
        y = np.stack([y, -2 * y + x], axis=1)
    w = rng.random(20) + 0.5 if kind == "weights" else None
    full = kind == "full"
    fit = lambda x, y: np.polyfit(x, y, deg, w=w, full=full)          # noqa: E731
    if full:
        want, got = fit(x, y), xla.jit(fit)(x, y)
        for g, v in zip(got[:2] + got[3:4], want[:2] + want[3:4]):
            np.testing.assert_allclose(g, v, rtol=rtol, atol=1e-9)
            assert np.asarray(g).dtype == np.asarray(v).dtype
        assert int(got[2]) == want[2] and got[4] == want[4]
    else:
        check_like_numpy(fit, x, y, rtol=rtol, atol=1e-9 if rtol < 1e-6 else 1e-3)


def test_reductions_with_where_match_numpy():
    # (where= used to be ignored by np.mean/var/std/any/all under xla.jit)
    rng = np.random.default_rng(5)
    for a in (rng.standard_normal((4, 5)), rng.integers(-9, 9, (4, 5)).astype(np.int32),
              rng.standard_normal((4, 5)).astype(np.float32)):
        for m in (a > 0, np.array([True, False, True, True, False])):
            for f in (lambda x, m: np.sum(x, axis=0, where=m), lambda x, m: np.prod(x, where=m),
                      lambda x, m: np.max(x, axis=1, where=m, initial=-5), lambda x, m: np.mean(x, axis=0, where=m),
                      lambda x, m: np.mean(x, where=m), lambda x, m: np.var(x, axis=1, where=m, ddof=1),
                      lambda x, m: np.std(x, where=m, keepdims=True), lambda x, m: np.any(x > 1, axis=0, where=m),
                      lambda x, m: np.all(x > -1, axis=1, where=m), lambda x, m: x.mean(axis=1, where=m)):
                check_like_numpy(f, a, m, rtol=1e-5)
            if a.dtype.kind == "f":
                for f in (lambda x, m: np.nansum(x, where=m), lambda x, m: np.nanmean(x, axis=0, where=m),
                          lambda x, m: np.nanmax(x, where=m, initial=0)):
                    check_like_numpy(f, a, m, rtol=1e-5)
    with pytest.raises(ValueError, match="initial"):
        xla.jit(lambda x: np.max(x, where=x > 0))(np.ones(3))


@pytest.mark.parametrize("name", ["f64", "i32", "f32", "bool", "stack"])
@pytest.mark.parametrize("n", [0, 1, 2, 3, 4, 5, 6, 13, -1, -3])
def test_matrix_power_matches_numpy(name, n):
    rng = np.random.default_rng(abs(n))
    a = {"f64": rng.standard_normal((4, 4)) / 2 + np.eye(4), "i32": rng.integers(-2, 3, (3, 3)).astype(np.int32),
         "f32": (rng.standard_normal((3, 3)) / 2 + np.eye(3)).astype(np.float32),
         "bool": rng.random((3, 3)) > 0.6, "stack": rng.standard_normal((2, 3, 3)) / 2 + np.eye(3)}[name]
    if n < 0 and a.dtype.kind not in "f":
        return      # (inv of integer matrices raises here, naming the conversion)
    check_like_numpy(lambda m: np.linalg.matrix_power(m, n), a, rtol=1e-4 if a.dtype == np.float32 else 1e-10)


def test_matrix_power_errors_as_numpy():
    with pytest.raises(np.linalg.LinAlgError, match="square"):
        xla.jit(lambda m: np.linalg.matrix_power(m, 2))(np.ones((2, 3)))
    with pytest.raises(TypeError, match="exponent must be an integer"):
        xla.jit(lambda m: np.linalg.matrix_power(m, 1.5))(np.eye(2))


@pytest.mark.parametrize("shapes", [[(2, 3), (3, 4)], [(10, 2), (2, 9), (9, 3)], [(2, 10), (10, 3), (3, 8)],
                                    [(4,), (4, 6), (6, 2), (2, 5)], [(3, 5), (5, 20), (20, 2), (2,)],
                                    [(3,), (3, 4), (4, 7), (7, 2), (2,)], [(30, 2), (2, 25), (25, 3), (3, 40), (40, 4)]])
def test_multi_dot_matches_numpy(shapes):
    rng = np.random.default_rng(len(shapes))
    arrays = [rng.standard_normal(s) for s in shapes]
    check_like_numpy(lambda *a: np.linalg.multi_dot(list(a)), *arrays, rtol=1e-10, atol=1e-12)
    ints = [rng.integers(-3, 3, s).astype(np.int32) for s in shapes]
    check_like_numpy(lambda *a: np.linalg.multi_dot(a), *ints)


def test_eigvalsh_and_vector_norm_match_numpy():
    rng = np.random.default_rng(7)
    s = rng.standard_normal((5, 5))
    for a in (s + s.T, (s + s.T).astype(np.float32), np.array([[2, 1], [1, 3]], np.int32), np.tril(s)):
        check_like_numpy(np.linalg.eigvalsh, a, rtol=1e-4 if a.dtype == np.float32 else 1e-10, atol=1e-10)
        check_like_numpy(lambda m: np.linalg.eigvalsh(m, UPLO="U"), a, rtol=1e-4 if a.dtype == np.float32 else 1e-10,
                         atol=1e-10)
    x = rng.standard_normal((3, 4, 2))
    for kw in ({}, dict(ord=1), dict(ord=np.inf), dict(ord=3, axis=1), dict(axis=(0, 2)), dict(axis=(2, 0), keepdims=True),
               dict(ord=0, axis=-1), dict(keepdims=True), dict(axis=1, keepdims=True, ord=-np.inf)):
        for a in (x, x.astype(np.float32), (x * 3).astype(np.int32)):
            check_like_numpy(lambda v: np.linalg.vector_norm(v, **kw), a, rtol=1e-5)


GRADIENT = {
    "1d": (lambda f: np.gradient(f), "v"),
    "spacing": (lambda f: np.gradient(f, 0.5, edge_order=2), "v"),
    "2d": (lambda f: np.gradient(f), "A"),
    "axis": (lambda f: np.gradient(f, axis=1), "A"),
    "axes": (lambda f: np.gradient(f, 2.0, axis=(1, 0)), "A"),
    "per_axis": (lambda f: np.gradient(f, 2.0, 3.0), "A"),
    "coords": (lambda f: np.gradient(f, np.array([0.0, 0.5, 1.5, 1.75, 3.0, 4.0, 4.5, 6.0])), "v"),
    "coords2": (lambda f: np.gradient(f, np.array([0.0, 0.5, 1.5, 1.75, 3.0, 4.0, 4.5, 6.0]), edge_order=2), "v"),
    "uniform_coords": (lambda f: np.gradient(f, np.arange(8) * 0.25), "v"),
    "int_coords": (lambda f: np.gradient(f, np.arange(4), np.array([0, 1, 3, 4, 7]), edge_order=2), "A"),
}


@pytest.mark.parametrize("case", sorted(GRADIENT))
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32])
def test_gradient_matches_numpy(case, dtype):
    f, which = GRADIENT[case]
    rng = np.random.default_rng(8)
    x = {"v": rng.standard_normal(8) * 4, "A": rng.standard_normal((4, 5)) * 4}[which].astype(dtype)
    check_like_numpy(f, x, rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-6)


def test_gradient_with_traced_coordinates_and_errors():
    rng = np.random.default_rng(9)
    v, x = rng.standard_normal(7), np.cumsum(rng.random(7) + 0.1)
    for order in (1, 2):
        got = xla.jit(lambda f, x: np.gradient(f, x, edge_order=order))(v, x)
        np.testing.assert_allclose(got, np.gradient(v, x, edge_order=order), rtol=1e-12)
    with pytest.raises(ValueError, match="too small"):
        xla.jit(lambda f: np.gradient(f, edge_order=2))(np.ones(2))
    with pytest.raises(ValueError, match="must match the length"):
        xla.jit(lambda f: np.gradient(f, np.arange(3.0)))(np.ones(4))


UNWRAP = {
    "default": (lambda p: np.unwrap(p), "phase"),
    "discont": (lambda p: np.unwrap(p, discont=4.0), "phase"),
    "axis0": (lambda p: np.unwrap(p, axis=0), "phase2d"),
    "period_int": (lambda p: np.unwrap(p, period=6), "ints"),
    "period_odd": (lambda p: np.unwrap(p, period=5), "ints"),
    "period_float": (lambda p: np.unwrap(p, period=360.0), "degrees"),
    "boundary": (lambda p: np.unwrap(p, period=4), "boundary"),
}


@pytest.mark.parametrize("case", sorted(UNWRAP))
@pytest.mark.parametrize("dtype", [None, np.float32])
def test_unwrap_matches_numpy(case, dtype):
    f, which = UNWRAP[case]
    rng = np.random.default_rng(10)
    p = {"phase": np.cumsum(rng.uniform(-4, 4, 12)), "phase2d": np.cumsum(rng.uniform(-4, 4, (6, 3)), axis=0),
         "ints": np.cumsum(rng.integers(-5, 6, 10)), "degrees": np.cumsum(rng.uniform(-300, 300, 9)),
         "boundary": np.array([0, 2, 4, 6, 2, -2, 0])}[which]
    if dtype is not None:
        p = p.astype(dtype)
    check_like_numpy(f, p, rtol=1e-5 if p.dtype == np.float32 else 1e-12, atol=1e-5)


def test_block_of_python_scalars_promotes_as_numpy_2():
    x = np.ones(3, np.float32)
    check_like_numpy(lambda x: np.block([x, 1.0, x]), x)
    check_like_numpy(lambda x: np.block([[x], [np.ones(3, np.int32)]]), x)
    check_like_numpy(lambda x: np.block([x, 2, x]), np.arange(3, dtype=np.int8))


@pytest.mark.parametrize("x", [np.linspace(-30, 30, 41), np.linspace(-12, 12, 13).astype(np.float32),
                               np.arange(-10, 11, dtype=np.int32), np.array([0.0, 8.0, 8.000001, 1e-9]),
                               np.zeros(0), np.array(3.5)], ids=["f64", "f32", "i32", "edges", "empty", "0d"])
def test_i0_matches_numpy(x):
    check_like_numpy(np.i0, x, rtol=1e-6 if x.dtype == np.float32 else 1e-13)


def test_i0_of_complex_raises_as_numpy():
    with pytest.raises(TypeError, match="complex"):
        xla.jit(np.i0)(np.ones(2, complex))


APPLY = {
    "vector": (lambda x: np.apply_along_axis(lambda t: t * 2 + t.sum(), 1, x), (4, 5)),
    "scalar": (lambda x: np.apply_along_axis(np.sum, 0, x), (4, 5)),
    "matrix": (lambda x: np.apply_along_axis(lambda t: np.outer(t, t[:2]), 1, x), (2, 3, 4)),
    "args": (lambda x: np.apply_along_axis(np.linalg.norm, -1, x, ord=1), (3, 2, 4)),
    "sort": (lambda x: np.apply_along_axis(np.sort, 0, x), (5, 3)),
    "1d": (lambda x: np.apply_along_axis(np.cumsum, 0, x), (6,)),
}


@pytest.mark.parametrize("case", sorted(APPLY))
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32])
def test_apply_along_axis_matches_numpy(case, dtype):
    f, shape = APPLY[case]
    x = (np.random.default_rng(11).standard_normal(shape) * 5).astype(dtype)
    check_like_numpy(f, x, rtol=1e-5 if dtype == np.float32 else 1e-12)


def test_apply_along_axis_takes_the_first_results_dtype_and_refuses_empty_loops():
    x = np.arange(6.0).reshape(2, 3)
    check_like_numpy(lambda x: np.apply_along_axis(lambda t: t.astype(np.int32) * 2, 1, x), x)
    with pytest.raises(ValueError, match="iteration dimensions are 0"):
        xla.jit(lambda x: np.apply_along_axis(np.sum, 1, x))(np.zeros((0, 3)))


def test_triangle_indices_from_a_traced_array():
    a = np.arange(20.0).reshape(4, 5)
    for k in (-1, 0, 2):
        check_like_numpy(lambda a: a[np.triu_indices_from(a, k)], a)
        check_like_numpy(lambda a: a[np.tril_indices_from(a, k)] * 2, a)


FILL = {
    "scalar": (lambda a: np.fill_diagonal(a, 7.5), (4, 4), np.float64),
    "tall": (lambda a: np.fill_diagonal(a, -1), (7, 3), np.int32),
    "wrap": (lambda a: np.fill_diagonal(a, 5, wrap=True), (7, 3), np.float32),
    "wide": (lambda a: np.fill_diagonal(a, np.array([1.0, 2.0])), (3, 5), np.float64),
    "cube": (lambda a: np.fill_diagonal(a, 9), (3, 3, 3), np.int64),
    "values_cycle": (lambda a: np.fill_diagonal(a, np.array([1, 2, 3])), (5, 5), np.float32),
    "cast": (lambda a: np.fill_diagonal(a, 2.7), (3, 3), np.int32),
}


@pytest.mark.parametrize("case", sorted(FILL))
def test_fill_diagonal_updates_in_place_as_numpy(case):
    f, shape, dtype = FILL[case]
    want = np.arange(np.prod(shape)).reshape(shape).astype(dtype)
    got = want.copy()

    def g(a):
        assert f(a) is None
        return a * 1

    result = xla.jit(g)(got)
    f(want)
    assert result.dtype == want.dtype
    np.testing.assert_array_equal(result, want)
    np.testing.assert_array_equal(got, want)     # the argument itself, as NumPy's


INSERT_DELETE = {
    "insert_scalar": lambda a: np.insert(a, 2, 9.5),
    "insert_flat": lambda a: np.insert(a, [1, 1, 4], [7, 8, 9]),
    "insert_axis": lambda a: np.insert(a, 1, [[1], [2], [3]], axis=1),
    "insert_row": lambda a: np.insert(a, [0, 3], 5, axis=0),
    "insert_slice": lambda a: np.insert(a, slice(0, 3), -1, axis=1),
    "insert_end": lambda a: np.insert(a, a.shape[0], 0, axis=0),
    "delete_flat": lambda a: np.delete(a, [1, 3]),
    "delete_axis": lambda a: np.delete(a, 1, axis=1),
    "delete_slice": lambda a: np.delete(a, slice(None, None, 2), axis=0),
    "delete_mask": lambda a: np.delete(a, np.array([True, False, True, False]), axis=1),
    "delete_negative": lambda a: np.delete(a, -1, axis=0),
}


@pytest.mark.parametrize("case", sorted(INSERT_DELETE))
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32, np.bool_])
def test_insert_and_delete_match_numpy(case, dtype):
    a = np.arange(12).reshape(3, 4).astype(dtype)
    check_like_numpy(INSERT_DELETE[case], a)


def test_insert_and_delete_with_traced_values_and_errors():
    a = np.arange(6.0)
    check_like_numpy(lambda a, v: np.insert(a, [2, 4], v), a, np.array([-1.0, -2.0]))
    check_like_numpy(lambda a, v: np.insert(a, 0, v), a, np.array([7, 8], np.int32))
    with pytest.raises(xla.errors.TracingError, match="depends on the data"):
        xla.jit(lambda a, i: np.delete(a, i))(a, np.array([1]))
    with pytest.raises(IndexError):
        xla.jit(lambda a: np.delete(a, 10))(a)


@pytest.mark.parametrize("f", [np.linalg.inv, np.linalg.det, np.linalg.slogdet, lambda a: np.linalg.qr(a),
                               lambda a: np.linalg.eigh(a)[0], lambda a: np.linalg.solve(a, np.arange(3)),
                               lambda a: np.linalg.solve(a, np.ones(3, np.float32))],
                         ids=["inv", "det", "slogdet", "qr", "eigh", "solve_int_b", "solve_f32_b"])
@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.bool_])
def test_linalg_of_integer_matrices_computes_in_float64_as_numpy(f, dtype):
    a = np.array([[4, 1, 0], [1, 3, 1], [0, 1, 2]]).astype(dtype)
    if dtype == np.bool_:
        a = np.eye(3, dtype=bool) | np.eye(3, k=1, dtype=bool)
    check_like_numpy(f, a, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("period", [360, 2 * np.pi, -5.0, 1])
@pytest.mark.parametrize("fp_kind", ["f64", "f32", "int", "complex"])
def test_interp_with_a_period_matches_numpy(period, fp_kind):
    rng = np.random.default_rng(12)
    xp = rng.uniform(-3 * abs(period), 3 * abs(period), 7)      # unsorted, beyond one period
    fp = {"f64": rng.standard_normal(7), "f32": rng.standard_normal(7).astype(np.float32),
          "int": rng.integers(-5, 5, 7), "complex": rng.standard_normal(7) + 1j * rng.standard_normal(7)}[fp_kind]
    x = np.concatenate([rng.uniform(-4 * abs(period), 4 * abs(period), 20), xp[:3]])
    check_like_numpy(lambda x, xp, fp: np.interp(x, xp, fp, period=period), x, xp, fp, rtol=1e-10, atol=1e-12)
    check_like_numpy(lambda x: np.interp(x, [0, 90, 180, 270], [0, 1, 0, -1], left=5, period=360), x)


def test_interp_period_errors_as_numpy():
    with pytest.raises(ValueError, match="non-zero"):
        xla.jit(lambda x: np.interp(x, [0.0, 1.0], [0.0, 1.0], period=0))(np.ones(2))
    with pytest.raises(ValueError, match="same length"):
        xla.jit(lambda x: np.interp(x, [0.0, 1.0], [0.0, 1.0, 2.0], period=3))(np.ones(2))


def test_geomspace_with_a_zero_end_raises_after_the_call():
    with pytest.raises(ValueError, match="cannot include zero"):
        xla.jit(lambda a, b: np.geomspace(a, b, 3))(np.float64(0.0), np.float64(2.0))
    with pytest.raises(ValueError, match="cannot include zero"):
        np.geomspace(0.0, 2.0, 3)


QUANTILE_METHODS = ["linear", "lower", "higher", "nearest", "midpoint", "inverted_cdf", "closest_observation",
                    "averaged_inverted_cdf", "interpolated_inverted_cdf", "hazen", "weibull", "median_unbiased",
                    "normal_unbiased"]


@pytest.mark.parametrize("method", QUANTILE_METHODS)
@pytest.mark.parametrize("data", ["f64", "f32", "i32", "ties", "inf", "nan", "one"])
def test_quantile_methods_match_numpy(method, data):
    rng = np.random.default_rng(13)
    x = {"f64": rng.standard_normal((7, 3)), "f32": rng.standard_normal((8, 3)).astype(np.float32),
         "i32": rng.integers(-20, 20, (9, 3)).astype(np.int32), "ties": np.repeat(np.arange(4.0), 3).reshape(6, 2),
         "inf": np.array([[1.0, -np.inf], [2.0, 3.0], [np.inf, 4.0], [5.0, 6.0]]),
         "nan": np.array([[1.0, 2.0], [np.nan, 3.0], [4.0, 5.0]]), "one": np.array([[2.5, -1.0]])}[data]
    q = np.array([0.0, 0.1, 0.25, 0.5, 0.6, 0.75, 0.9, 1.0, 1 / 3])
    with np.errstate(all="ignore"):
        check_like_numpy(lambda a: np.quantile(a, q, axis=0, method=method), x, rtol=1e-6 if data == "f32" else 1e-12)
        check_like_numpy(lambda a: np.percentile(a, 40, method=method, keepdims=True), x,
                         rtol=1e-6 if data == "f32" else 1e-12)
        check_like_numpy(lambda a: np.quantile(a, 0.3, axis=1, method=method), x,
                         rtol=1e-6 if data == "f32" else 1e-12)


def test_quantile_arguments_that_cannot_compile_are_named():
    with pytest.raises(xla.errors.TracingError, match="weights"):
        xla.jit(lambda a: np.quantile(a, 0.5, method="inverted_cdf", weights=np.ones(3)))(np.ones(3))
    with pytest.raises(xla.errors.TracingError, match="linear is"):
        xla.jit(lambda a: np.nanquantile(a, 0.5, method="lower"))(np.ones(3))
    with pytest.raises(ValueError, match="not a valid method"):
        xla.jit(lambda a: np.quantile(a, 0.5, method="bogus"))(np.ones(3))
