"""np.linalg.eigh, svd and lstsq under xla.jit are composite calls
(``xla.eigh``, ``xla.svd``; ``xla.lax.composite``): the cpu backend runs
them in its runtime (Eigen, LAPACK's semantics), the interpreter inlines the
Jacobi decompositions. Both against NumPy, and against each other where the
frontend fixes what LAPACK leaves open (eigenvector signs)."""
import numpy as np
import pytest

import xla

BACKENDS = ["cpu", "interpreter"]


def _lowered(fn, *args):
    return xla.jit(fn).lower(*args).as_hlo_text()


def test_eigh_and_svd_lower_to_composite_calls():
    a = np.eye(3)
    text = _lowered(lambda a: np.linalg.eigh(a, UPLO="U"), a)
    assert 'composite.attributes={lower = false},composite.name="xla.eigh"' in text
    assert "is_composite=true" in text
    text = _lowered(lambda a: np.linalg.svd(a, full_matrices=False), a)
    assert ('composite.attributes={compute_uv = true, full_matrices = false},'
            'composite.name="xla.svd"') in text
    assert 'composite.name="xla.svd"' in _lowered(lambda a: np.linalg.lstsq(a, a[0]), a)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype,tol", [(np.float32, 1e-4), (np.float64, 1e-11)])
def test_eigh_matches_numpy_with_the_same_signs_on_every_backend(backend, dtype, tol):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 9, 9)).astype(dtype)   # a stack, not symmetric: one triangle read
    for uplo in ("L", "U"):
        w, v = xla.jit(lambda a: np.linalg.eigh(a, UPLO=uplo), backend=backend)(a)
        w_ref, v_ref = np.linalg.eigh(a.astype(np.float64), UPLO=uplo)
        assert w.dtype == v.dtype == dtype
        np.testing.assert_allclose(w, w_ref, atol=tol * 10)
        # The frontend's sign: each vector's largest component positive.
        big = np.take_along_axis(v_ref, np.argmax(np.abs(v_ref), axis=-2)[..., None, :], axis=-2)
        np.testing.assert_allclose(v, v_ref * np.sign(big), atol=tol * 10)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("shape", [(7, 4), (4, 7), (30, 3)])
@pytest.mark.parametrize("full_matrices", [True, False])
def test_svd_matches_numpy_on_every_backend(backend, shape, full_matrices):
    a = np.random.default_rng(1).standard_normal(shape)
    u, s, vh = xla.jit(lambda a: np.linalg.svd(a, full_matrices=full_matrices), backend=backend)(a)
    u_ref, s_ref, vh_ref = np.linalg.svd(a, full_matrices=full_matrices)
    assert (u.shape, s.shape, vh.shape) == (u_ref.shape, s_ref.shape, vh_ref.shape)
    np.testing.assert_allclose(s, s_ref, atol=1e-13 * s_ref[0])
    k = min(shape)
    np.testing.assert_allclose((u[:, :k] * s) @ vh[:k], a, atol=1e-13 * s_ref[0])
    np.testing.assert_allclose(u.T @ u, np.eye(u.shape[1]), atol=1e-13)
    np.testing.assert_allclose(vh @ vh.T, np.eye(vh.shape[0]), atol=1e-13)
    s_only = xla.jit(lambda a: np.linalg.svd(a, compute_uv=False), backend=backend)(a)
    np.testing.assert_allclose(s_only, s_ref, atol=1e-13 * s_ref[0])


@pytest.mark.parametrize("backend", BACKENDS)
def test_lstsq_matches_numpy_on_every_backend(backend):
    rng = np.random.default_rng(2)
    a = rng.standard_normal((20, 3))
    b = rng.standard_normal(20)
    got = xla.jit(np.linalg.lstsq, backend=backend)(a, b)
    want = np.linalg.lstsq(a, b)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)
    # Rank deficient: the minimum-norm solution.
    a[:, 2] = a[:, 0] + a[:, 1]
    x = xla.jit(lambda a, b: np.linalg.lstsq(a, b)[0], backend=backend)(a, b)
    np.testing.assert_allclose(x, np.linalg.lstsq(a, b)[0], atol=1e-10)


def test_the_gpu_emulator_runs_the_decompositions():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((5, 5))
    w, v = xla.jit(np.linalg.eigh, backend="gpu_emulator")(a)
    w_ref, v_ref = np.linalg.eigh(a)
    big = np.take_along_axis(v_ref, np.argmax(np.abs(v_ref), axis=0)[None, :], axis=0)
    np.testing.assert_allclose(w, w_ref, atol=1e-12)
    np.testing.assert_allclose(v, v_ref * np.sign(big), atol=1e-10)
    b = rng.standard_normal((6, 3))
    u, s, vh = xla.jit(lambda b: np.linalg.svd(b, full_matrices=False), backend="gpu_emulator")(b)
    np.testing.assert_allclose(s, np.linalg.svd(b)[1], atol=1e-12)
    np.testing.assert_allclose((u * s) @ vh, b, atol=1e-12)


def test_solve_and_inv_lower_to_composite_calls():
    a = np.eye(3)
    assert 'composite.name="xla.solve"' in _lowered(np.linalg.solve, a, a[0])
    assert 'composite.name="xla.solve"' in _lowered(np.linalg.inv, a)


@pytest.mark.parametrize("backend", BACKENDS + ["gpu_emulator"])
@pytest.mark.parametrize("dtype,tol", [(np.float32, 1e-4), (np.float64, 1e-11)])
def test_solve_and_inv_match_numpy_on_every_backend(backend, dtype, tol):
    rng = np.random.default_rng(5)
    a = rng.standard_normal((2, 1, 7, 7)).astype(dtype)     # batched, broadcast against b
    b = rng.standard_normal((3, 7, 2)).astype(dtype)
    x = xla.jit(np.linalg.solve, backend=backend)(a, b)
    assert x.dtype == dtype and x.shape == (2, 3, 7, 2)
    np.testing.assert_allclose(x, np.linalg.solve(a.astype(np.float64), b), rtol=tol, atol=tol)
    v = xla.jit(np.linalg.solve, backend=backend)(a[0, 0], b[0, :, 0])
    np.testing.assert_allclose(v, np.linalg.solve(a[0, 0].astype(np.float64), b[0, :, 0]),
                               rtol=tol, atol=tol)
    inv = xla.jit(np.linalg.inv, backend=backend)(a)
    np.testing.assert_allclose(inv, np.linalg.inv(a.astype(np.float64)), rtol=tol, atol=tol)
    # Ill-conditioned (Hilbert, cond ~ 1e7 at n = 6; float64 only): NumPy's residual.
    if dtype == np.float64:
        h = 1 / (np.arange(6)[:, None] + np.arange(6) + 1)
        x = xla.jit(np.linalg.solve, backend=backend)(h, np.ones(6))
        np.testing.assert_allclose(x, np.linalg.solve(h, np.ones(6)), rtol=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_solve_composite_reports_getrfs_info(backend):
    # (x, info): info per matrix is 0, or the 1-based column of the first
    # zero pivot (LAPACK's getrf); np.linalg.solve raises on it
    # (test_linalg_errors.py), the values are not finite.
    from xla.frontend.numpy.linalg import _solve
    a = np.stack([np.eye(3) * 2, [[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [0.0, 0.0, 1.0]], np.zeros((3, 3))])
    b = np.ones((3, 3, 2))
    x, info = xla.jit(lambda a, b: xla.lax.composite(_solve, "xla.solve")(a, b), backend=backend)(a, b)
    np.testing.assert_array_equal(info, [0, 2, 1])
    assert info.dtype == np.int32
    np.testing.assert_allclose(x[0], b[0] / 2)
    assert not np.isfinite(x[1]).all() and not np.isfinite(x[2]).any()



@pytest.mark.parametrize("backend", BACKENDS + ["gpu_emulator"])
@pytest.mark.parametrize("dtype,tol", [(np.float32, 1e-4), (np.float64, 1e-11)])
def test_det_and_slogdet_match_numpy_on_every_backend(backend, dtype, tol):
    assert 'composite.name="xla.lu"' in _lowered(np.linalg.det, np.eye(3))
    a = np.random.default_rng(6).standard_normal((2, 3, 8, 8)).astype(dtype)
    a[0, 0] = np.eye(8)[::-1]                                # a permutation: det = +1 (4 swaps)
    a[0, 1] = np.eye(8)[[1, 0, 2, 3, 4, 5, 6, 7]]            # one swap: det = -1
    want = np.linalg.det(a.astype(np.float64))
    got = xla.jit(np.linalg.det, backend=backend)(a)
    assert got.dtype == dtype
    np.testing.assert_allclose(got, want, rtol=tol * 10, atol=tol)
    sign, logabs = xla.jit(np.linalg.slogdet, backend=backend)(a)
    want_sign, want_log = np.linalg.slogdet(a.astype(np.float64))
    np.testing.assert_array_equal(sign, want_sign)
    np.testing.assert_allclose(logabs, want_log, rtol=tol, atol=tol)
    # Singular: det 0 and slogdet (0, -inf), as NumPy's.
    s = np.ones((4, 4), dtype)
    s[3, 3] = 2
    assert xla.jit(np.linalg.det, backend=backend)(s) == 0
    sign, logabs = xla.jit(np.linalg.slogdet, backend=backend)(s)
    assert sign == 0 and logabs == -np.inf


@pytest.mark.parametrize("backend", BACKENDS + ["gpu_emulator"])
@pytest.mark.parametrize("shape", [(7, 4), (4, 7), (2, 5, 5)])
def test_qr_matches_numpy_on_every_backend(backend, shape):
    text = _lowered(np.linalg.qr, np.eye(3))
    assert 'composite.name="xla.geqrf"' in text and 'composite.name="xla.householder_product"' in text
    a = np.random.default_rng(8).standard_normal(shape)
    a[..., 1] = 0                                           # a zero column: tau 0 (LAPACK's choice)
    for mode in ("reduced", "complete"):
        q, r = xla.jit(lambda a: np.linalg.qr(a, mode=mode), backend=backend)(a)
        q_ref, r_ref = np.linalg.qr(a, mode=mode)
        assert q.shape == q_ref.shape and r.shape == r_ref.shape
        np.testing.assert_allclose(q, q_ref, atol=1e-12)
        np.testing.assert_allclose(r, r_ref, atol=1e-12)
    r32 = xla.jit(lambda a: np.linalg.qr(a, mode="r"), backend=backend)(a.astype(np.float32))
    assert r32.dtype == np.float32
    np.testing.assert_allclose(r32, np.linalg.qr(a, mode="r"), atol=1e-5)
