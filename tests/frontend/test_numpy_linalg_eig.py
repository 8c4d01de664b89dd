"""np.linalg.eig, np.linalg.eigvals and np.roots under xla.jit
(xla/frontend/numpy/linalg_eig.py, polynomials.py), on the interpreter
(NumPy's eig) and the CPU backend (Eigen's solvers), against NumPy
(LAPACK). The eigenvalue order is the solver's, so eigenvalues are compared
as sorted multisets; eigenvectors by ``a @ v == v * w``, unit norm, the
largest component real and positive, and against NumPy's up to a phase
where the eigenvalues are distinct."""
import numpy as np
import pytest

import xla
import xla.numpy as xnp

BACKENDS = ["interpreter", "cpu"]


def _tol(dt):
    return 2e-4 if dt in (np.float32, np.complex64) else 1e-10


def _same_multiset(got, want, tol):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape
    if got.size == 0:
        return
    g, w = got.reshape(-1, got.shape[-1]), want.reshape(-1, got.shape[-1])
    for x, y in zip(g, w):
        # Sorting by real part first can pair differently under rounding:
        # match each value to the nearest remaining one instead.
        left = list(y)
        for value in x:
            i = int(np.argmin(np.abs(np.array(left) - value)))
            assert abs(left[i] - value) <= tol * max(1.0, abs(value)), (x, y)
            left.pop(i)


def _check_eig(a, backend, tol=None, compare_vectors=True):
    w, v = xla.jit(np.linalg.eig, backend=backend)(a)
    want_w, want_v = np.linalg.eig(a)
    cdt = np.result_type(want_w.dtype, np.complex64)
    assert w.dtype == v.dtype == cdt and w.shape == want_w.shape and v.shape == want_v.shape
    tol = _tol(np.asarray(a).dtype) if tol is None else tol
    _same_multiset(w, want_w, tol)
    scale = max(1.0, float(np.abs(a).max())) if np.size(a) else 1.0
    np.testing.assert_allclose(a @ v, v * w[..., None, :], atol=tol * 10 * scale)
    if v.size:
        np.testing.assert_allclose(np.linalg.norm(v, axis=-2), 1.0, atol=tol)
        big = np.take_along_axis(v, np.argmax(np.abs(v), axis=-2)[..., None, :], axis=-2)
        np.testing.assert_allclose(big.imag, 0, atol=tol)
        assert (big.real > 0).all()
    if compare_vectors and v.size:
        # Each vector is NumPy's vector of the same eigenvalue times a phase.
        for idx in np.ndindex(*np.shape(a)[:-2]):
            for j in range(w.shape[-1]):
                k = int(np.argmin(np.abs(want_w[idx] - w[idx][j])))
                overlap = abs(np.vdot(want_v[idx][:, k], v[idx][:, j]))
                assert abs(overlap - 1) < tol * 100
    return w, v


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
def test_eig_matches_numpy(backend, dtype):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((6, 6))
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rng.standard_normal((6, 6))
    _check_eig(a.astype(dtype), backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_eig_batched_over_leading_dimensions(backend):
    a = np.random.default_rng(1).standard_normal((2, 3, 5, 5))
    _check_eig(a, backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_eig_of_a_rotation_is_complex(backend):
    a = np.array([[0., -1], [1, 0]])
    w, v = _check_eig(a, backend)
    _same_multiset(w, [1j, -1j], 1e-15)


@pytest.mark.parametrize("backend", BACKENDS)
def test_eig_defective_and_repeated(backend):
    s = np.array([[2., 1, 0], [0, 1, 1], [1, 0, 1]])
    jordan = s @ np.array([[2., 1, 0], [0, 2, 0], [0, 0, -1]]) @ np.linalg.inv(s)
    # A Jordan block of 2 moves its eigenvalue by about sqrt(eps); the
    # vectors are the solver's (nearly parallel ones), checked by a v == v w.
    _check_eig(jordan, backend, tol=1e-7, compare_vectors=False)
    repeated = s @ np.diag([3., 3, -1]) @ np.linalg.inv(s)
    _check_eig(repeated, backend, compare_vectors=False)
    w, v = _check_eig(np.eye(4), backend, compare_vectors=False)
    np.testing.assert_array_equal(w, np.ones(4))


@pytest.mark.parametrize("backend", BACKENDS)
def test_eig_1x1_and_0x0(backend):
    _check_eig(np.array([[-2.5]]), backend)
    w, v = xla.jit(np.linalg.eig, backend=backend)(np.zeros((3, 0, 0)))
    assert w.shape == (3, 0) and v.shape == (3, 0, 0) and w.dtype == np.complex128


@pytest.mark.parametrize("backend", BACKENDS)
def test_eig_of_integers_is_float64s(backend):
    a = np.array([[2, 1], [-3, 4]])
    w, v = _check_eig(a, backend)
    assert w.dtype == np.complex128


@pytest.mark.parametrize("backend", BACKENDS)
def test_eigvals_matches_numpy_and_is_complex(backend):
    a = np.random.default_rng(2).standard_normal((4, 7, 7)).astype(np.float32)
    w = xla.jit(np.linalg.eigvals, backend=backend)(a)
    assert w.dtype == np.complex64
    _same_multiset(w, np.linalg.eigvals(a), 2e-4)
    # Real eigenvalues come back complex too (NumPy's dtype would depend on the values).
    sym = a + np.swapaxes(a, -1, -2)
    w = xla.jit(np.linalg.eigvals, backend=backend)(sym)
    assert w.dtype == np.complex64
    np.testing.assert_allclose(w.imag, 0, atol=1e-5)
    _same_multiset(w, np.linalg.eigvalsh(sym), 2e-4)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn", [np.linalg.eig, np.linalg.eigvals])
def test_non_finite_raises_numpys_error(backend, fn):
    a = np.random.default_rng(3).standard_normal((2, 3, 3))
    a[1, 2, 0] = np.inf
    with pytest.raises(np.linalg.LinAlgError, match="Array must not contain infs or NaNs"):
        fn(a)
    with pytest.raises(np.linalg.LinAlgError, match="Array must not contain infs or NaNs"):
        xla.jit(fn, backend=backend)(a)


def test_shape_errors_are_numpys():
    for bad, match in ((np.ones(3), "1-dimensional array given"),
                       (np.ones((2, 3)), "must be square")):
        with pytest.raises(np.linalg.LinAlgError, match=match):
            np.linalg.eig(bad)
        with pytest.raises(np.linalg.LinAlgError, match=match):
            xla.jit(np.linalg.eig)(bad)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("p", [[1., -6, 11, -6], [2., 0, 1], [1., 2, 3, 4, 5, 6],
                               [3., -1, 0, 0], [1., 0, 0], [4., 5]])
def test_roots_of_traced_coefficients(backend, p):
    p = np.array(p)
    r = xla.jit(np.roots, backend=backend)(p)
    assert r.dtype == np.complex128
    _same_multiset(r, np.roots(p).astype(complex), 1e-8)


@pytest.mark.parametrize("backend", BACKENDS)
def test_roots_trailing_zeros_are_exact(backend):
    p = np.array([1., -3, 2, 0, 0])
    r = xla.jit(np.roots, backend=backend)(p)
    # x**2 (x - 1)(x - 2): two exact zeros, not a Jordan block's sqrt(eps) pair.
    assert np.sum(r == 0) == 2
    _same_multiset(r, np.roots(p).astype(complex), 1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
def test_roots_float32_and_integers(backend):
    r = xla.jit(np.roots, backend=backend)(np.array([1, 0, -4], np.float32))
    assert r.dtype == np.complex64
    _same_multiset(r, [2, -2], 1e-6)
    r = xla.jit(np.roots, backend=backend)(np.array([1, 0, -4]))
    assert r.dtype == np.complex128
    r = xla.jit(np.roots, backend=backend)(np.array([7.0]))
    assert r.shape == (0,) and r.dtype == np.complex128


@pytest.mark.parametrize("backend", BACKENDS)
def test_roots_traced_leading_zero_raises(backend):
    with pytest.raises(ValueError, match="leading coefficient is 0"):
        xla.jit(np.roots, backend=backend)(np.array([0., 1, -1]))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("p", [[0, 0, 1., -3, 2, 0], [0., 0], [0, 3., 0, 0], [2j, 1, 1], [5.]])
def test_roots_of_constant_coefficients_strip_as_numpy(backend, p):
    r = xla.jit(lambda: xnp.roots(p), backend=backend)()
    want = np.roots(p)
    assert r.shape == want.shape
    _same_multiset(r, want.astype(complex), 1e-10)


def test_roots_rejects_higher_rank():
    with pytest.raises(ValueError, match="rank-1"):
        xla.jit(np.roots)(np.ones((2, 2)))


@pytest.mark.parametrize("backend", BACKENDS)
def test_eig_of_a_badly_scaled_matrix_is_balanced(backend):
    """D a D^-1 has a's eigenvalues; its norm is 1e12 times a's. LAPACK
    balances it first (so does the CPU runtime): the eigenvalues stay
    accurate to rounding of a's norm, not of the scaled one's."""
    a = np.random.default_rng(4).standard_normal((6, 6))
    d = np.logspace(-6, 6, 6)
    scaled = d[:, None] * a / d[None, :]
    w = xla.jit(np.linalg.eigvals, backend=backend)(scaled)
    _same_multiset(w, np.linalg.eigvals(a), 1e-9)
    w, v = xla.jit(np.linalg.eig, backend=backend)(scaled)
    # Eigenvectors of the scaled matrix are D times a's.
    np.testing.assert_allclose(scaled @ v, v * w, atol=1e-9 * np.abs(scaled).max())


@pytest.mark.parametrize("backend", BACKENDS)
def test_lax_linalg_eig_selects_nan_where_the_solver_failed(backend):
    """JAX's lax.linalg.eig: [w, vr], NaN for a matrix the call failed on,
    no error (the NumPy functions raise instead)."""
    from xla import lax
    a = np.random.default_rng(5).standard_normal((2, 4, 4))
    a[0, 1, 1] = np.nan
    w, v = xla.jit(lambda m: lax.linalg.eig(m), backend=backend)(a)
    assert np.isnan(w[0]).all() and np.isnan(v[0]).all()
    _same_multiset(w[1:], np.linalg.eigvals(a[1:]), 1e-10)
    (w,) = xla.jit(lambda m: lax.linalg.eig(m, compute_right_eigenvectors=False),
                   backend=backend)(a[1])
    _same_multiset(w, np.linalg.eigvals(a[1]), 1e-10)
    with pytest.raises(xla.errors.InvalidArgumentError, match="left eigenvectors"):
        xla.jit(lambda m: lax.linalg.eig(m, compute_left_eigenvectors=True), backend=backend)(a)
