"""The CPU runtime's QR iterations (xla/backends/cpu/runtime/givens_qr.h)
through ``lapack_{s,d}syevd_ffi`` and ``lapack_{s,d}gesdd_ffi`` on matrices
that stress them: sizes past Eigen's Jacobi cutoff and past a SIMD width,
tall, wide, batched, rank-deficient, graded, with repeated values, zero,
f32 and f64. Singular values and eigenvalues against NumPy's (LAPACK), to
a few eps times the norm; vectors by reconstruction and orthogonality (a
repeated value's vectors are any basis of its space)."""
import numpy as np
import pytest

import xla
from xla.tools.arrays import flatten_result

PREFIX = {np.float32: "s", np.float64: "d"}
ET = {np.float32: "f32", np.float64: "f64"}


def _dims(shape):
    return "[" + ",".join(map(str, shape)) + "]"


def _run(text, a):
    return [np.asarray(r) for r in flatten_result(xla.compile(text, "cpu").execute(a))]


def _check(got, want, scale, dt, n, what):
    """|got - want| <= 8 n eps scale (LAPACK's bounds are O(n) eps)."""
    err = np.max(np.abs(np.asarray(got, np.float64) - want)) / scale
    assert err <= 8 * n * np.finfo(dt).eps, f"{what}: {err / np.finfo(dt).eps:.1f} eps"


def _matrix(rng, kind, shape, dt):
    *batch, m, n = shape
    if kind == "random":
        a = rng.standard_normal(shape)
    elif kind == "rank3":
        a = rng.standard_normal((*batch, m, 3)) @ rng.standard_normal((*batch, 3, n))
    elif kind == "graded":   # columns from 1 down to 1e-12
        a = rng.standard_normal(shape) * np.logspace(0, -12, n)
    elif kind == "repeated":  # singular values 2 (k - 1 times) and 1
        k = min(m, n)
        q1 = np.linalg.qr(rng.standard_normal((*batch, m, k)))[0]
        q2 = np.linalg.qr(rng.standard_normal((*batch, n, k)))[0]
        s = np.r_[np.full(k - 1, 2.0), 1.0]
        a = (q1 * s) @ np.swapaxes(q2, -1, -2)
    elif kind == "zero_column":
        a = rng.standard_normal(shape)
        a[..., 1] = 0
    else:
        a = np.zeros(shape)
    return a.astype(dt)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("kind,shape", [("random", (60, 40)), ("random", (40, 60)), ("random", (100, 100)),
                                        ("random", (2, 33, 17)), ("rank3", (50, 50)), ("rank3", (30, 45)),
                                        ("graded", (60, 40)), ("repeated", (45, 30)),
                                        ("zero_column", (24, 20)), ("zero", (20, 20)), ("random", (90, 40))])
@pytest.mark.parametrize("mode", ["A", "S", "N"])
def test_gesdd_matches_numpy(dt, kind, shape, mode):
    *batch, m, n = shape
    k = min(m, n)
    ku, kv = (m, n) if mode == "A" else (k, k)
    a = _matrix(np.random.default_rng(len(shape) * m + n), kind, shape, dt)
    et = ET[dt]
    text = f"""HloModule m
ENTRY e {{
  a = {et}{_dims(shape)} parameter(0)
  ROOT r = ({et}{_dims(shape)}, {et}{_dims((*batch, k))}, {et}{_dims((*batch, m, ku))}, {et}{_dims((*batch, kv, n))}, s32{_dims(batch)}) custom-call(a), custom_call_target="lapack_{PREFIX[dt]}gesdd_ffi", backend_config={{mode = {ord(mode)} : ui8}}
}}"""
    _, s, u, vt, info = _run(text, a)
    np.testing.assert_array_equal(info, 0)
    a64 = a.astype(np.float64)
    s_ref = np.linalg.svd(a64, compute_uv=False)
    scale = max(s_ref.max(), np.finfo(dt).tiny)
    _check(s, s_ref, scale, dt, max(m, n), "singular values")
    assert np.all(np.diff(s, axis=-1) <= 0) and np.all(s >= 0)
    if mode == "N":
        return
    u, vt = u.astype(np.float64), vt.astype(np.float64)
    _check((u[..., :k] * s[..., None, :]) @ vt[..., :k, :], a64, scale, dt, max(m, n), "reconstruction")
    _check(np.swapaxes(u, -1, -2) @ u, np.eye(ku), 1, dt, max(m, n), "U orthogonal")
    _check(vt @ np.swapaxes(vt, -1, -2), np.eye(kv), 1, dt, max(m, n), "V orthogonal")


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("kind,shape", [("random", (100, 100)), ("random", (3, 17, 17)), ("rank3", (40, 40)),
                                        ("graded", (50, 50)), ("repeated", (30, 30)), ("zero", (9, 9)),
                                        ("random", (1, 1)), ("random", (2, 2))])
@pytest.mark.parametrize("uplo", ["L", "U"])
def test_syevd_matches_numpy(dt, kind, shape, uplo):
    *batch, n, _ = shape
    rng = np.random.default_rng(n)
    b = _matrix(rng, kind, shape, np.float64)
    # Symmetric with b's spectrum shape; the other triangle is garbage the
    # runtime must not read.
    a = b @ np.swapaxes(b, -1, -2) if kind in ("rank3", "repeated") else b + np.swapaxes(b, -1, -2)
    garbage = np.triu(np.full(shape, 7.0), 1) if uplo == "L" else np.tril(np.full(shape, 7.0), -1)
    a_in = (np.tril(a) if uplo == "L" else np.triu(a)) + garbage
    et = ET[dt]
    text = f"""HloModule m
ENTRY e {{
  a = {et}{_dims(shape)} parameter(0)
  ROOT r = ({et}{_dims(shape)}, {et}{_dims((*batch, n))}, s32{_dims(batch)}) custom-call(a), custom_call_target="lapack_{PREFIX[dt]}syevd_ffi", backend_config={{mode = 86 : ui8, uplo = {ord(uplo)} : ui8}}
}}"""
    v, w, info = _run(text, a_in.astype(dt))
    np.testing.assert_array_equal(info, 0)
    a = a.astype(dt).astype(np.float64)
    w_ref = np.linalg.eigvalsh(a)
    scale = max(np.abs(w_ref).max(), np.finfo(dt).tiny)
    _check(w, w_ref, scale, dt, n, "eigenvalues")
    v = v.astype(np.float64)
    _check((v * w[..., None, :]) @ np.swapaxes(v, -1, -2), a, scale, dt, n, "reconstruction")
    _check(np.swapaxes(v, -1, -2) @ v, np.eye(n), 1, dt, n, "orthogonal")


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_syevd_of_a_matrix_that_is_not_finite_gives_info_and_nan(bad):
    a = np.eye(20)
    a[5, 3] = bad
    text = """HloModule m
ENTRY e {
  a = f64[20,20] parameter(0)
  ROOT r = (f64[20,20], f64[20], s32[]) custom-call(a), custom_call_target="lapack_dsyevd_ffi", backend_config={mode = 86 : ui8, uplo = 76 : ui8}
}"""
    v, w, info = _run(text, a)
    assert info == 1 and np.isnan(w).all() and np.isnan(v).all()


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("kind,shape", [("random", (300, 300)), ("graded", (400, 290)),
                                        ("rank3", (280, 350)), ("repeated", (300, 270))])
def test_gesdd_values_past_the_vector_cutoff(dt, kind, shape):
    # Values only (mode N) take the QR iterations at every size (runtime
    # spectral.cc Svd: BDCSVD only where vectors are asked for past 256
    # columns): jnp.linalg.svd(compute_uv=False) of f32[512, 512] 23 ->
    # 13.5 ms. Against NumPy's values to O(n) eps.
    m, n = shape
    k = min(m, n)
    a = _matrix(np.random.default_rng(m + n), kind, shape, dt)
    et = ET[dt]
    text = f"""HloModule m
ENTRY e {{
  a = {et}{_dims(shape)} parameter(0)
  ROOT r = ({et}{_dims(shape)}, {et}{_dims((k,))}, {et}{_dims((m, k))}, {et}{_dims((k, n))}, s32[]) custom-call(a), custom_call_target="lapack_{PREFIX[dt]}gesdd_ffi", backend_config={{mode = {ord('N')} : ui8}}
}}"""
    _, s, _, _, info = _run(text, a)
    assert int(info) == 0
    s_ref = np.linalg.svd(a.astype(np.float64), compute_uv=False)
    _check(s, s_ref, s_ref.max(), dt, max(m, n), "singular values")
    assert np.all(np.diff(s) <= 0) and np.all(s >= 0)
