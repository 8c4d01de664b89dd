"""jaxlib's general eigendecomposition custom calls
(``lapack_{s,d,c,z}geev_ffi``) on the cpu backend (a runtime call to
Eigen's solvers: emit_spectral.py, runtime/eig.cc) and the interpreter
(NumPy's eig): the HLO text jax 0.10.2 lowers for jnp.linalg.eig and
eigvals (column-major operand and eigenvectors, batches, the info check and
NaN select around the call) against jax's results
(fixtures/lapack_geev_jax.npz, from gen_lapack_geev_jax.py), and
hand-written row-major modules against NumPy. The eigenvalue order is the
solver's: eigenvalues are compared as sorted multisets, eigenvectors by ``a
v == v w``, unit norm, and against jax's up to a phase where the
eigenvalues are distinct."""

import numpy as np
import pytest

from xla.errors import UnimplementedError

from lapack_fixtures import load, program, run

DATA, NAMES = load("lapack_geev_jax.npz")


def _tol(dt):
    return 1e-4 if dt in (np.float32, np.complex64) else 1e-10


def _matched(w, w_ref, tol):
    """A permutation of ``w_ref`` (per matrix) matching ``w`` nearest first
    (a repeated eigenvalue's copies to distinct positions, in whichever
    order rounding gives them), after checking that ``w`` and ``w_ref`` are
    the same multiset within ``tol``."""
    w2, r2 = w.reshape(-1, w.shape[-1]), w_ref.reshape(-1, w.shape[-1])
    order = np.empty(w2.shape, int)
    for i in range(w2.shape[0]):
        np.testing.assert_allclose(np.sort_complex(w2[i]), np.sort_complex(r2[i]), atol=tol)
        free = list(range(w.shape[-1]))   # each of w_ref's eigenvalues matched once
        for j, x in enumerate(w2[i]):
            order[i, j] = free.pop(int(np.argmin(np.abs(r2[i][free] - x))))
    return order.reshape(w.shape)


def _check_vectors(a, w, v, tol):
    scale = max(1.0, float(np.abs(a).max()))
    np.testing.assert_allclose(a.astype(v.dtype) @ v, v * w[..., None, :], atol=tol * 10 * scale)
    np.testing.assert_allclose(np.linalg.norm(v, axis=-2), 1.0, atol=tol)
    # The largest component of each vector real and positive.
    big = np.take_along_axis(v, np.argmax(np.abs(v), axis=-2)[..., None, :], axis=-2)
    np.testing.assert_allclose(big.imag, 0, atol=tol)
    assert (big.real > 0).all()


def test_fixture_has_every_program():
    assert NAMES == sorted(["eig_f32", "eig_f64_batched", "eig_c64", "eig_c128_batched",
                            "eigvals_f64", "eigvals_c64_batched", "eig_f64_defective",
                            "eig_f64_repeated", "eig_f64_1x1", "eig_f64_nan"])
    text = str(DATA["eig_f32.hlo"])
    assert 'custom_call_target="lapack_sgeev_ffi"' in text and "{1,2,0}" not in text
    assert "c64[5,5]{0,1}" in text and "compute_right = 86" in text
    assert 'custom_call_target="lapack_zgeev_ffi"' in str(DATA["eig_c128_batched.hlo"])


@pytest.mark.parametrize("backend", ["cpu", "interpreter"])
@pytest.mark.parametrize("name", NAMES)
def test_matches_jax(name, backend):
    text, args, want = program(DATA, name)
    got = run(text, args, backend)
    assert [(g.dtype, g.shape) for g in got] == [(w.dtype, w.shape) for w in want]
    a, tol = args[0], _tol(args[0].dtype)
    if name.endswith("nan"):
        # jax's select: NaN for the matrix with a NaN, the other one computed.
        assert np.isnan(got[0][1]).all() and np.isnan(got[1][1]).all()
        a, got, want = a[:1], [g[:1] for g in got], [w[:1] for w in want]
    if name.endswith("defective"):
        tol = 1e-7   # a Jordan block of 2 perturbs its eigenvalue by sqrt(eps)
    order = _matched(got[0], want[0], tol * max(1.0, float(np.abs(want[0]).max())))
    if len(got) == 1:
        return
    w, v = got
    _check_vectors(a, w, v, tol)
    if name.endswith(("defective", "repeated")):
        return   # a repeated eigenvalue's basis is the solver's
    v_ref = np.take_along_axis(want[1], order[..., None, :], axis=-1)
    # The same vectors up to a phase: |v^H v_ref| == 1 for unit vectors.
    overlap = np.abs(np.sum(np.conj(v) * v_ref, axis=-2))
    np.testing.assert_allclose(overlap, 1.0, atol=tol * 100)


def _geev_module(t, operand, results, right="V", left="N"):
    return f"""HloModule m
ENTRY e {{
  a = {operand} parameter(0)
  ROOT g = {results} custom-call(a), custom_call_target="lapack_{t}geev_ffi", backend_config={{compute_left = {ord(left)} : ui8, compute_right = {ord(right)} : ui8}}
}}"""


@pytest.mark.parametrize("backend", ["cpu", "interpreter"])
def test_row_major_module_real(backend):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((2, 6, 6))
    a[1, 0, 0] = np.inf
    text = _geev_module("d", "f64[2,6,6]", "(f64[2,6], f64[2,6], c128[2,6,6], c128[2,6,6], s32[2])")
    wr, wi, vl, vr, info = run(text, [a], backend)
    assert info.tolist() == [0, -4]
    w = wr + 1j * wi
    _matched(w[:1], np.linalg.eigvals(a[:1]), 1e-10)
    _check_vectors(a[0], w[0], vr[0], 1e-10)
    assert np.isnan(w[1]).all() and np.isnan(vr[1]).all()
    np.testing.assert_array_equal(vl, 0)


@pytest.mark.parametrize("backend", ["cpu", "interpreter"])
def test_row_major_module_complex_values_only(backend):
    rng = np.random.default_rng(2)
    a = (rng.standard_normal((3, 4, 4)) + 1j * rng.standard_normal((3, 4, 4))).astype(np.complex64)
    text = _geev_module("c", "c64[3,4,4]", "(c64[3,4], c64[3,4,4], c64[3,4,4], s32[3])", right="N")
    w, vl, vr, info = run(text, [a], backend)
    assert w.dtype == np.complex64 and info.tolist() == [0, 0, 0]
    _matched(w, np.linalg.eigvals(a.astype(np.complex128)), 1e-4)
    np.testing.assert_array_equal(vr, 0)


@pytest.mark.parametrize("backend", ["cpu", "interpreter"])
def test_empty_matrices(backend):
    text = _geev_module("s", "f32[2,0,0]", "(f32[2,0], f32[2,0], c64[2,0,0], c64[2,0,0], s32[2])")
    wr, wi, vl, vr, info = run(text, [np.zeros((2, 0, 0), np.float32)], backend)
    assert wr.shape == (2, 0) and vr.shape == (2, 0, 0) and info.tolist() == [0, 0]


@pytest.mark.parametrize("backend", ["cpu", "interpreter"])
def test_left_eigenvectors_are_refused(backend):
    text = _geev_module("d", "f64[3,3]", "(f64[3], f64[3], c128[3,3], c128[3,3], s32[])", left="V")
    with pytest.raises(UnimplementedError, match="left eigenvectors"):
        run(text, [np.eye(3)], backend)
