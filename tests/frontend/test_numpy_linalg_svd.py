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
