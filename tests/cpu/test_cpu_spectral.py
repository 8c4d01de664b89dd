"""jaxlib's LAPACK eigendecomposition, SVD and LU custom calls
(``lapack_{s,d}syevd_ffi``, ``lapack_{s,d}gesdd_ffi``,
``lapack_{s,d}getrf_ffi``) on the cpu backend (runtime calls:
emit_spectral.py) and the interpreter: the HLO text jax 0.10.2 lowers for
jnp.linalg.eigh / svd / lstsq, lu_factor, lax.linalg.lu, solve, det and qr (column-major operands,
batches, uplo U, modes A/S/N) against jax's results
(fixtures/lapack_spectral_jax.npz, from gen_lapack_spectral_jax.py), and
hand-written modules (row-major) against NumPy. Vectors are compared up to
sign (each column against the reference's) and by reconstruction."""

import numpy as np
import pytest

import xla
from xla.errors import UnimplementedError

from lapack_fixtures import load, program, run

DATA, NAMES = load("lapack_spectral_jax.npz")


def _tol(dt):
    return 2e-4 if dt == np.float32 else 1e-10


def _same_columns_up_to_sign(got, want, tol):
    """Each column of ``got`` is its column of ``want`` or its negation."""
    dots = np.sum(got * want, axis=-2)
    np.testing.assert_allclose(np.abs(dots), 1.0, atol=tol * 10)
    np.testing.assert_allclose(got * np.sign(dots)[..., None, :], want, atol=tol * 10)


def test_fixture_has_every_program():
    assert NAMES == sorted(["eigh_f32", "eigh_upper_f64_batched", "svd_reduced_f32",
                            "svd_full_f64_wide", "svd_values_f64", "lstsq_f64", "lu_factor_f64",
                            "lu_wide_f32_batched", "solve_f32", "det_f64", "qr_reduced_f64",
                            "qr_complete_f32_batched", "qr_wide_f64"])
    text = str(DATA["eigh_f32.hlo"])
    assert 'custom_call_target="lapack_ssyevd_ffi"' in text and "{0,1}" in text


@pytest.mark.parametrize("backend", ["cpu", "interpreter"])
@pytest.mark.parametrize("name", NAMES)
def test_matches_jax(name, backend):
    text, args, want = program(DATA, name)
    got = run(text, args, backend)
    assert [(g.dtype, g.shape) for g in got] == [(w.dtype, w.shape) for w in want]
    tol = _tol(want[0].dtype)
    a = args[0]
    if name.startswith("eigh"):
        (w, v), (w_ref, v_ref) = got, want
        np.testing.assert_allclose(w, w_ref, rtol=tol, atol=tol * np.abs(w_ref).max())
        _same_columns_up_to_sign(v, v_ref, tol)
        # The triangle read: jax symmetrizes from the one it was told.
        sym = np.triu(a) + np.swapaxes(np.triu(a, 1), -1, -2) if "upper" in name else \
            np.tril(a) + np.swapaxes(np.tril(a, -1), -1, -2)
        np.testing.assert_allclose(sym @ v, v * w[..., None, :], atol=tol * 50)
    elif name == "svd_values_f64":
        np.testing.assert_allclose(got[0], want[0], rtol=tol)
    elif name.startswith("svd"):
        (u, s, vt), (u_ref, s_ref, vt_ref) = got, want
        np.testing.assert_allclose(s, s_ref, rtol=tol, atol=tol * s_ref.max())
        k = s.shape[-1]
        _same_columns_up_to_sign(u[..., :k], u_ref[..., :k], tol)
        _same_columns_up_to_sign(np.swapaxes(vt[..., :k, :], -1, -2),
                                 np.swapaxes(vt_ref[..., :k, :], -1, -2), tol)
        np.testing.assert_allclose((u[..., :k] * s) @ vt[..., :k, :], a, atol=tol * 50)
        for q in (u, vt):   # full bases orthonormal, the completed part included
            np.testing.assert_allclose(np.swapaxes(q, -1, -2) @ q, np.eye(q.shape[-1]), atol=tol * 50)
    elif name.startswith("qr"):   # Householder QR is unique: LAPACK's signs
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=tol * 10, atol=tol * 10)
        q, r = got
        np.testing.assert_allclose(q[..., :, :r.shape[-2]] @ r, a, atol=tol * 10)
    else:   # lstsq, LU, solve, det: pivots exact, values to rounding
        for g, w in zip(got, want):
            if w.dtype.kind == "i":
                np.testing.assert_array_equal(g, w)
            else:
                np.testing.assert_allclose(g, w, rtol=tol * 10, atol=tol * 10)


PREFIX = {"f32": "s", "f64": "d"}


def _module(et, operand, result, target, config):
    return f"""HloModule m
ENTRY e {{
  a = {et}{operand} parameter(0)
  ROOT r = {result} custom-call(a), custom_call_target="{target}", backend_config={config}
}}"""


@pytest.mark.parametrize("et,dt", [("f32", np.float32), ("f64", np.float64)])
@pytest.mark.parametrize("uplo", ["L", "U"])
def test_row_major_syevd_matches_numpy(et, dt, uplo):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((2, 8, 8)).astype(dt)
    text = _module(et, "[2,8,8]", f"({et}[2,8,8], {et}[2,8], s32[2])", f"lapack_{PREFIX[et]}syevd_ffi",
                   f"{{mode = 86 : ui8, uplo = {ord(uplo)} : ui8}}")
    for backend in ("cpu", "interpreter"):
        v, w, info = run(text, [a], backend)
        w_ref, v_ref = np.linalg.eigh(a.astype(np.float64), UPLO=uplo)
        np.testing.assert_array_equal(info, 0)
        np.testing.assert_allclose(w, w_ref, atol=_tol(dt) * 10)
        _same_columns_up_to_sign(v.astype(np.float64), v_ref, _tol(dt))


@pytest.mark.parametrize("mode,shape", [("A", (5, 8)), ("S", (9, 4)), ("N", (6, 6)),
                                        ("A", (20, 4)), ("S", (3, 8)), ("A", (3, 8)), ("N", (9, 3))])
def test_row_major_gesdd_matches_numpy(mode, shape):
    m, n = shape
    k = min(m, n)
    ku, kv = (m, n) if mode == "A" else (k, k)
    a = np.random.default_rng(2).standard_normal(shape)
    text = _module("f64", f"[{m},{n}]", f"(f64[{m},{n}], f64[{k}], f64[{m},{ku}], f64[{kv},{n}], s32[])",
                   "lapack_dgesdd_ffi", f"{{mode = {ord(mode)} : ui8}}")
    for backend in ("cpu", "interpreter"):
        a_out, s, u, vt, info = run(text, [a], backend)
        np.testing.assert_array_equal(a_out, a)
        assert info == 0
        u_ref, s_ref, vt_ref = np.linalg.svd(a, full_matrices=mode == "A")
        np.testing.assert_allclose(s, s_ref, rtol=1e-12)
        if mode == "N":
            np.testing.assert_array_equal(u, 0)
            continue
        _same_columns_up_to_sign(u[:, :k], u_ref[:, :k], 1e-10)
        np.testing.assert_allclose((u[:, :k] * s) @ vt[:k], a, atol=1e-12)
        np.testing.assert_allclose(u.T @ u, np.eye(ku), atol=1e-12)
        np.testing.assert_allclose(vt @ vt.T, np.eye(kv), atol=1e-12)


def test_a_matrix_with_nan_gives_info_and_nan():
    a = np.ones((3, 3))
    a[1, 2] = np.nan
    text = _module("f64", "[3,3]", "(f64[3,3], f64[3], f64[3,3], f64[3,3], s32[])",
                   "lapack_dgesdd_ffi", "{mode = 65 : ui8}")
    for backend in ("cpu", "interpreter"):
        _, s, u, vt, info = run(text, [a], backend)
        assert info == 1
        assert np.isnan(s).all() and np.isnan(u).all() and np.isnan(vt).all()


@pytest.mark.parametrize("text,why", [
    (_module("c64", "[3,3]", "(c64[3,3], f32[3], s32[])", "lapack_cheevd_ffi", "{mode = 86 : ui8}"),
     "lapack_cheevd_ffi of c64 matrices"),
    (_module("f32", "[3,3]", "(f32[3,3], f32[3], f32[3,3], f32[3,3], s32[])", "lapack_sgesdd_ffi",
             "{mode = 79 : ui8}"), None),
])
def test_what_the_cpu_backend_does_not_take_is_refused_by_name(text, why):
    if why is None:   # mode 'O' is refused by the verifier
        with pytest.raises(Exception, match="mode = 79"):
            xla.compile(text, "cpu")
        return
    with pytest.raises(UnimplementedError, match=why):
        xla.compile(text, "cpu")


def test_mixed_layouts_are_refused_by_name():
    text = """HloModule m
ENTRY e {
  a = f32[3,3]{0,1} parameter(0)
  ROOT r = (f32[3,3]{1,0}, f32[3]{0}, s32[]) custom-call(a), custom_call_target="lapack_ssyevd_ffi", backend_config={mode = 86 : ui8}
}"""
    with pytest.raises(UnimplementedError, match="mixed or non-dense layouts"):
        xla.compile(text, "cpu")


def test_syevd_without_vectors_leaves_the_operand():
    a = np.random.default_rng(4).standard_normal((5, 5))
    text = _module("f64", "[5,5]", "(f64[5,5], f64[5], s32[])", "lapack_dsyevd_ffi",
                   "{mode = 78 : ui8, uplo = 76 : ui8}")
    for backend in ("cpu", "interpreter"):
        v, w, info = run(text, [a], backend)
        np.testing.assert_array_equal(v, a)
        np.testing.assert_allclose(w, np.linalg.eigvalsh(a), atol=1e-12)
        assert info == 0


@pytest.mark.parametrize("shape", [(6, 6), (7, 4), (3, 8)])
def test_row_major_getrf_matches_the_interpreter(shape):
    m, n = shape
    k = min(m, n)
    a = np.random.default_rng(5).standard_normal(shape)
    a[:, 0] = 0   # a zero first column: pivot 1, info 1, factorization completed
    text = _module("f64", f"[{m},{n}]", f"(f64[{m},{n}], s32[{k}], s32[])", "lapack_dgetrf_ffi", "{}")
    lu, ipiv, info = run(text, [a], "cpu")
    lu_i, ipiv_i, info_i = run(text, [a], "interpreter")
    assert info == info_i == 1
    np.testing.assert_array_equal(ipiv, ipiv_i)
    np.testing.assert_allclose(lu, lu_i, atol=1e-12)
    # P L U == a
    low = np.tril(lu, -1)[:, :k] + np.eye(m, k)
    up = np.triu(lu)[:k]
    perm = np.arange(m)
    for i, p in enumerate(ipiv - 1):
        perm[[i, p]] = perm[[p, i]]
    np.testing.assert_allclose((low @ up), a[perm], atol=1e-12)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(100, 60), (40, 70), (2, 50, 50), (33, 17)])
def test_row_major_geqrf_and_orgqr_match_numpy_at_blocked_sizes(dt, shape):
    """Past the runtime's 16-reflector blocks: the packed factorization is
    LAPACK's (NumPy's mode 'raw', its transpose), Q is NumPy's."""
    *batch, m, n = shape
    k = min(m, n)
    et = {np.float32: "f32", np.float64: "f64"}[dt]
    p = {np.float32: "s", np.float64: "d"}[dt]
    dims = ",".join(map(str, shape))
    tdims = ",".join(map(str, (*batch, k)))
    qdims = ",".join(map(str, (*batch, m, k)))
    a = np.random.default_rng(m * n).standard_normal(shape).astype(dt)
    geqrf = _module(et, f"[{dims}]", f"({et}[{dims}], {et}[{tdims}])", f"lapack_{p}geqrf_ffi", "{}")
    packed, tau = run(geqrf, [a], "cpu")
    tol = 50 * max(m, n) * np.finfo(dt).eps
    for i in np.ndindex(*batch):
        h_ref, tau_ref = np.linalg.qr(a[i].astype(np.float64), mode="raw")
        np.testing.assert_allclose(packed[i], h_ref.T, atol=tol * np.abs(a[i]).max())
        np.testing.assert_allclose(tau[i], tau_ref, atol=tol)
    orgqr = f"""HloModule m
ENTRY e {{
  a = {et}[{qdims}] parameter(0)
  t = {et}[{tdims}] parameter(1)
  ROOT q = {et}[{qdims}] custom-call(a, t), custom_call_target="lapack_{p}orgqr_ffi"
}}"""
    (q,) = run(orgqr, [np.ascontiguousarray(packed[..., :k]), tau], "cpu")
    for i in np.ndindex(*batch):
        q_ref = np.linalg.qr(a[i].astype(np.float64))[0]
        np.testing.assert_allclose(q[i], q_ref, atol=tol)
