"""np.linalg.svd and np.linalg.lstsq under xla.jit
(xla/frontend/numpy/linalg_svd.py), against NumPy (LAPACK). Singular vectors
are determined up to sign, so they are checked by reconstruction and
orthogonality, not against NumPy's."""
import numpy as np
import pytest

import xla


def _check_svd(a, full_matrices):
    u, s, vh = xla.jit(lambda m: np.linalg.svd(m, full_matrices=full_matrices))(a)
    want_u, want_s, want_vh = np.linalg.svd(a, full_matrices=full_matrices)
    assert (u.shape, s.shape, vh.shape) == (want_u.shape, want_s.shape, want_vh.shape)
    assert u.dtype == s.dtype == vh.dtype == want_s.dtype
    scale = max(want_s[0] if want_s.size else 1.0, 1.0)
    np.testing.assert_allclose(s, want_s, rtol=0, atol=1e-14 * scale * max(a.shape))
    k = min(a.shape)
    np.testing.assert_allclose((u[:, :k] * s) @ vh[:k], a, atol=1e-13 * scale)
    np.testing.assert_allclose(u.T @ u, np.eye(u.shape[1]), atol=1e-13)
    np.testing.assert_allclose(vh @ vh.T, np.eye(vh.shape[0]), atol=1e-13)
    return u, s, vh


@pytest.mark.parametrize("shape", [(6, 4), (4, 7), (5, 5), (5, 1), (1, 3)])
@pytest.mark.parametrize("full_matrices", [True, False])
def test_svd_reconstructs_and_matches_numpys_singular_values(shape, full_matrices):
    a = np.random.default_rng(sum(shape)).standard_normal(shape)
    _check_svd(a, full_matrices)


def test_svd_of_rank_deficient_and_zero_matrices_completes_orthonormal_vectors():
    rng = np.random.default_rng(7)
    low_rank = rng.standard_normal((6, 2)) @ rng.standard_normal((2, 5))
    for full in (True, False):
        _check_svd(low_rank, full)
        u, s, vh = _check_svd(np.zeros((4, 3)), full)
        np.testing.assert_array_equal(s, np.zeros(3))


def test_svd_keeps_the_small_singular_values_of_an_ill_conditioned_matrix():
    rng = np.random.default_rng(8)
    q1, _ = np.linalg.qr(rng.standard_normal((8, 8)))
    q2, _ = np.linalg.qr(rng.standard_normal((6, 6)))
    a = (q1[:, :6] * np.logspace(0, -12, 6)) @ q2.T
    s = xla.jit(lambda m: np.linalg.svd(m, compute_uv=False))(a)
    want = np.linalg.svd(a, compute_uv=False)
    # To rounding of s[0] (1e-16) everywhere, where the square roots of
    # eig(a.T @ a) are off by about sqrt(eps) for the smallest ones.
    np.testing.assert_allclose(s, want, rtol=0, atol=1e-15)
    assert abs(s[-1] - 1e-12) < 1e-14


def test_svd_of_float32_and_integers_follows_numpys_dtypes():
    a = np.random.default_rng(9).standard_normal((5, 3)).astype(np.float32)
    s = xla.jit(lambda m: np.linalg.svd(m, compute_uv=False))(a)
    assert s.dtype == np.float32
    np.testing.assert_allclose(s, np.linalg.svd(a, compute_uv=False), rtol=1e-5)
    ints = np.arange(6).reshape(3, 2)
    s = xla.jit(lambda m: np.linalg.svd(m, compute_uv=False))(ints)
    assert s.dtype == np.float64
    np.testing.assert_allclose(s, np.linalg.svd(ints, compute_uv=False), rtol=1e-13)


def test_svd_refuses_what_it_does_not_cover():
    with pytest.raises(xla.errors.TracingError, match="takes a 2-D matrix"):
        xla.jit(np.linalg.svd)(np.ones((2, 3, 3)))
    with pytest.raises(xla.errors.TracingError, match="complex is not supported"):
        xla.jit(np.linalg.svd)(np.ones((3, 3), np.complex128))


def _check_lstsq(a, b, rcond=None):
    x, resid, rank, s = xla.jit(lambda a, b: np.linalg.lstsq(a, b, rcond=rcond))(a, b)
    want_x, want_resid, want_rank, want_s = np.linalg.lstsq(a, b, rcond=rcond)
    assert x.shape == want_x.shape and s.shape == want_s.shape
    # To rounding times the condition number of the part of a that is kept.
    cond = want_s[0] / want_s[want_rank - 1] if want_rank else 1.0
    np.testing.assert_allclose(x, want_x, rtol=0, atol=1e-14 * cond * max(np.abs(want_x).max(), 1))
    np.testing.assert_allclose(s, want_s, rtol=0, atol=1e-14 * max(want_s[0], 1.0))
    assert int(rank) == want_rank
    return resid, want_resid


@pytest.mark.parametrize("shape, b_shape", [((6, 3), (6,)), ((6, 3), (6, 2)), ((3, 6), (3, 2)),
                                            ((4, 4), (4,))])
def test_lstsq_matches_numpy(shape, b_shape):
    rng = np.random.default_rng(sum(shape) + len(b_shape))
    resid, want_resid = _check_lstsq(rng.standard_normal(shape), rng.standard_normal(b_shape))
    assert resid.shape == want_resid.shape
    np.testing.assert_allclose(resid, want_resid, rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("rcond", [None, -1, 1e-6, 1e-3])
def test_lstsq_follows_numpys_rcond_and_marks_rank_deficient_residuals(rcond):
    rng = np.random.default_rng(11)
    q1, _ = np.linalg.qr(rng.standard_normal((5, 5)))
    q2, _ = np.linalg.qr(rng.standard_normal((3, 3)))
    a = (q1[:, :3] * np.array([1.0, 1e-4, 1e-8])) @ q2.T       # rank 3, 2 or 1 by rcond
    b = rng.standard_normal(5)
    resid, want_resid = _check_lstsq(a, b, rcond)
    if want_resid.shape == (0,):
        # NumPy's empty array (rank < n) has a shape that depends on the
        # values: NaN in its place.
        assert resid.shape == (1,) and np.isnan(resid).all()
    else:
        np.testing.assert_allclose(resid, want_resid, rtol=1e-8)


def test_lstsq_takes_integer_input_as_numpy_does():
    a, b = np.arange(12).reshape(6, 2), np.arange(6)
    resid, want_resid = _check_lstsq(a, b)
    np.testing.assert_allclose(resid, want_resid, atol=1e-20)


def _like_numpy(f, *args, rtol=1e-10, atol=1e-12):
    want, got = f(*args), xla.jit(f)(*args)
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype, got.shape, want.shape)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


def _rank_deficient(rng, m, n, r):
    return rng.standard_normal((m, r)) @ rng.standard_normal((r, n))


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4)])
@pytest.mark.parametrize("kwargs", [{}, dict(rcond=1e-8), dict(rtol=None), dict(rtol=1e-3)])
def test_pinv_matches_numpy(shape, kwargs):
    rng = np.random.default_rng(sum(shape))
    for a in (rng.standard_normal(shape), _rank_deficient(rng, *shape, 2),
              rng.integers(-3, 4, shape), rng.standard_normal(shape).astype(np.float32)):
        f32 = a.dtype == np.float32
        if a.dtype.kind == "i" and kwargs == dict(rtol=None):
            with pytest.raises(ValueError, match="not inexact"):     # np.finfo of an int dtype
                np.linalg.pinv(a, **kwargs)
            with pytest.raises(ValueError, match="not inexact"):
                xla.jit(lambda m: np.linalg.pinv(m, **kwargs))(a)
            continue
        _like_numpy(lambda m: np.linalg.pinv(m, **kwargs), a, rtol=1e-4 if f32 else 1e-9,
                    atol=1e-4 if f32 else 1e-10)


def test_pinv_of_empty_matrices_and_conflicting_tolerances():
    _like_numpy(np.linalg.pinv, np.zeros((0, 3)))
    with pytest.raises(ValueError, match="can't be both set"):
        xla.jit(lambda m: np.linalg.pinv(m, rcond=1e-3, rtol=1e-3))(np.eye(2))


@pytest.mark.parametrize("kwargs", [{}, dict(tol=1e-6), dict(rtol=1e-2), dict(tol=10.0)])
def test_matrix_rank_matches_numpy(kwargs):
    rng = np.random.default_rng(3)
    for a in (rng.standard_normal((5, 4)), _rank_deficient(rng, 6, 5, 3), _rank_deficient(rng, 3, 7, 1),
              np.zeros((3, 3)), np.eye(4, dtype=np.int32), np.ones((2, 2), np.float32)):
        _like_numpy(lambda m: np.linalg.matrix_rank(m, **kwargs), a)


def test_matrix_rank_of_vectors_is_whether_any_is_nonzero():
    for v in (np.zeros(4), np.array([0.0, 2.0]), np.array(0.0)):
        assert int(xla.jit(np.linalg.matrix_rank)(v)) == np.linalg.matrix_rank(v)


@pytest.mark.parametrize("p", [None, 2, -2, 1, -1, np.inf, -np.inf, "fro"])
def test_cond_matches_numpy(p):
    rng = np.random.default_rng(4)
    for a in (rng.standard_normal((4, 4)), rng.standard_normal((3, 3)) + 3 * np.eye(3),
              np.array([[1.0, 2.0], [2.0, 4.0]]), np.arange(9).reshape(3, 3)):
        if np.linalg.matrix_rank(a) < a.shape[0]:
            got = xla.jit(lambda m: np.linalg.cond(m, p))(a)
            if p in (None, 2):    # s[0] / s[-1], s[-1] zero or rounding noise (NumPy's: ~1e-17)
                assert got > 1e15 and np.linalg.cond(a, p) > 1e15
            elif p == -2:
                assert got < 1e-15 and np.linalg.cond(a, p) < 1e-15
            else:   # singular: NumPy's inf (from inv's NaNs), ours from the solver's info
                assert got == np.inf == np.linalg.cond(a, p)
            continue
        _like_numpy(lambda m: np.linalg.cond(m, p), a, rtol=1e-8)
    if p is None:
        _like_numpy(np.linalg.cond, rng.standard_normal((3, 5)), rtol=1e-8)


@pytest.mark.parametrize("ord", ["fro", 1, -1, np.inf, 2, -2, "nuc"])
@pytest.mark.parametrize("keepdims", [False, True])
def test_matrix_norm_and_svdvals_match_numpy(ord, keepdims):
    rng = np.random.default_rng(6)
    for a in (rng.standard_normal((4, 3)), rng.integers(-4, 4, (3, 5)), rng.standard_normal((2, 2)).astype(np.float32)):
        rtol = 1e-5 if a.dtype == np.float32 else 1e-10
        _like_numpy(lambda m: np.linalg.matrix_norm(m, ord=ord, keepdims=keepdims), a, rtol=rtol)
        _like_numpy(np.linalg.svdvals, a, rtol=rtol)
