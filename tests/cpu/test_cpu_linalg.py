"""cholesky, triangular-solve and the LAPACK potrf/trsm custom calls on the
CPU backend, against the interpreter."""
import itertools

import numpy as np
import pytest

from xla import runtime
from xla.hlo.evaluator.evaluator import Evaluator
from xla.hlo.parser import parse_hlo_module
from xla.tools.arrays import flatten_result


def _check(text, *args, rtol=1e-4, atol=1e-5):
    cpu = flatten_result(runtime.compile(parse_hlo_module(text), "cpu").execute(*args))
    ref = flatten_result(Evaluator().evaluate(parse_hlo_module(text), list(args)))
    assert len(cpu) == len(ref)
    for c, r in zip(cpu, ref):
        c, r = np.asarray(c), np.asarray(r)
        assert c.dtype == r.dtype and c.shape == r.shape
        np.testing.assert_allclose(c, r, rtol=rtol, atol=atol, equal_nan=True)


def _spd(batch, n, dtype, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((batch, n, n))
    return (x @ np.swapaxes(x, -1, -2) + n * np.eye(n)).astype(dtype)


@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("t,dtype", [("f32", np.float32), ("f64", np.float64)])
def test_cholesky(lower, t, dtype):
    a = _spd(3, 5, dtype)
    a[1, 2, 2] = -100.0  # not positive definite: an all-NaN matrix
    a[2] += np.triu(np.full((5, 5), 7.0), 1).astype(dtype)  # other triangle ignored
    text = f"""HloModule m
ENTRY %main (a: {t}[3,5,5]) -> {t}[3,5,5] {{
  %a = {t}[3,5,5]{{1,2,0}} parameter(0)
  ROOT %c = {t}[3,5,5] cholesky(%a), lower={str(lower).lower()}
}}
"""
    _check(text, a)


@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("t,dtype", [("f32", np.float32), ("f64", np.float64)])
def test_cholesky_row_major_calls_the_runtime(lower, t, dtype):
    # Row-major f32/f64: Eigen's blocked LLT (n = 150: several panels).
    # Failures at a pivot, at a NaN on the diagonal and at a NaN off it
    # (which makes a later pivot NaN) give all-NaN matrices, as the
    # interpreter's; the other triangle is ignored.
    n = 150
    a = _spd(5, n, dtype)
    a[1, 140, 140] = -1e6
    a[2, 3, 3] = np.nan
    a[3, 90, 20] = a[3, 20, 90] = np.nan
    a[4] += np.triu(np.full((n, n), 7.0), 1).astype(dtype) if lower else \
        np.tril(np.full((n, n), 7.0), -1).astype(dtype)
    text = f"""HloModule m
ENTRY %main (a: {t}[5,{n},{n}]) -> {t}[5,{n},{n}] {{
  %a = {t}[5,{n},{n}] parameter(0)
  ROOT %c = {t}[5,{n},{n}] cholesky(%a), lower={str(lower).lower()}
}}
"""
    exe = runtime.compile(parse_hlo_module(text), "cpu")
    assert f"__xla_cpu_cholesky_{t}" in exe.ir_text
    out = np.asarray(exe.execute(a))
    assert np.isnan(out[1:4]).all() and not np.isnan(out[[0, 4]]).any()
    for i in (0, 4):
        tri = np.tril if lower else np.triu
        full = tri(a[i]) + tri(a[i], -1 if lower else 1).swapaxes(-1, -2)
        expected = np.linalg.cholesky(full.astype(np.float64))
        np.testing.assert_allclose(out[i], expected if lower else expected.T,
                                   rtol=1e-4 if t == "f32" else 1e-10, atol=1e-5)
    _check(text, a, rtol=1e-3 if t == "f32" else 1e-9, atol=1e-4)


@pytest.mark.parametrize("uplo", ["L", "U"])
@pytest.mark.parametrize("t,dtype", [("s", np.float32), ("d", np.float64)])
def test_lapack_potrf_row_major_calls_the_runtime(uplo, t, dtype):
    # info: 0, the order of the failed minor at a pivot, at a NaN.
    n = 140
    a = _spd(3, n, dtype, seed=3)
    a[1, 99, 99] = -1e6
    a[2, 7, 7] = np.nan
    et = {"s": "f32", "d": "f64"}[t]
    text = f"""HloModule m
ENTRY %main (a: {et}[3,{n},{n}]) -> ({et}[3,{n},{n}], s32[3]) {{
  %a = {et}[3,{n},{n}] parameter(0)
  ROOT %c = ({et}[3,{n},{n}], s32[3]) custom-call(%a), custom_call_target="lapack_{t}potrf_ffi", output_to_operand_aliasing={{{{0}}: (0, {{}})}}, api_version=API_VERSION_TYPED_FFI, backend_config={{uplo = {ord(uplo)} : ui8}}
}}
"""
    exe = runtime.compile(parse_hlo_module(text), "cpu")
    assert f"__xla_cpu_cholesky_{et}" in exe.ir_text
    factor, info = (np.asarray(x) for x in exe.execute(a))
    np.testing.assert_array_equal(info, [0, 100, 8])
    np.testing.assert_array_equal(factor[1:], a[1:])  # failed: left as they were
    tri, other = (np.tril, np.triu) if uplo == "L" else (np.triu, np.tril)
    expected = np.linalg.cholesky(a[0].astype(np.float64))
    np.testing.assert_allclose(tri(factor[0]), expected if uplo == "L" else expected.T,
                               rtol=1e-4 if t == "s" else 1e-10, atol=1e-5)
    k = 1 if uplo == "L" else -1
    np.testing.assert_array_equal(other(factor[0], k), other(a[0], k))
    _check(text, a, rtol=1e-3 if t == "s" else 1e-9, atol=1e-4)


@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("t,dtype,dims", [("f64", np.float64, (0, 0)), ("f32", np.float32, (0, 0)),
                                          ("f64", np.float64, (2, 0, 0)),
                                          ("c64", np.complex64, (0, 0))])
def test_cholesky_of_empty_matrices(lower, t, dtype, dims):
    # NumPy: np.linalg.cholesky(np.zeros((0, 0))) is a 0 x 0 array (and a
    # stack of them a stack). The interpreter failed to reshape them.
    s = ",".join(map(str, dims))
    text = f"""HloModule m
ENTRY %main (a: {t}[{s}]) -> {t}[{s}] {{
  %a = {t}[{s}] parameter(0)
  ROOT %c = {t}[{s}] cholesky(%a), lower={str(lower).lower()}
}}
"""
    a = np.zeros(dims, dtype)
    want = np.linalg.cholesky(a)
    for got in (runtime.compile(parse_hlo_module(text), "cpu").execute(a),
                Evaluator().evaluate(parse_hlo_module(text), [a])):
        got = np.asarray(got)
        assert got.shape == want.shape == dims and got.dtype == dtype


@pytest.mark.parametrize("routine,result", [("potrf", "(f64[0,0], s32[])"),
                                            ("getrf", "(f64[0,0], s32[0], s32[])")])
def test_lapack_custom_calls_of_an_empty_matrix_on_the_interpreter(routine, result):
    # LAPACK factors a 0 x 0 matrix with info 0 (NumPy's cholesky and
    # solve of one succeed); the interpreter failed to reshape it.
    text = f"""HloModule m
ENTRY %main (a: f64[0,0]) -> {result} {{
  %a = f64[0,0] parameter(0)
  ROOT %c = {result} custom-call(%a), custom_call_target="lapack_d{routine}_ffi", api_version=API_VERSION_TYPED_FFI, backend_config={{uplo = 76 : ui8}}
}}
"""
    out = Evaluator().evaluate(parse_hlo_module(text), [np.zeros((0, 0))])
    assert np.asarray(out[0]).shape == (0, 0)
    assert int(np.asarray(out[-1])) == 0


@pytest.mark.parametrize("left,lower,unit,trans", list(itertools.product(
    [True, False], [True, False], [True, False], ["NO_TRANSPOSE", "TRANSPOSE", "ADJOINT"])))
def test_triangular_solve(left, lower, unit, trans):
    rng = np.random.default_rng(1)
    a = (rng.standard_normal((2, 4, 4)) + 4 * np.eye(4)).astype(np.float32)
    bshape = (2, 4, 3) if left else (2, 3, 4)
    b = rng.standard_normal(bshape).astype(np.float32)
    s = lambda d: ",".join(map(str, d))  # noqa: E731
    text = f"""HloModule m
ENTRY %main (a: f32[2,4,4], b: f32[{s(bshape)}]) -> f32[{s(bshape)}] {{
  %a = f32[2,4,4] parameter(0)
  %b = f32[{s(bshape)}]{{1,2,0}} parameter(1)
  ROOT %x = f32[{s(bshape)}] triangular-solve(%a, %b), left_side={str(left).lower()}, lower={str(lower).lower()}, unit_diagonal={str(unit).lower()}, transpose_a={trans}
}}
"""
    _check(text, a, b)


@pytest.mark.parametrize("uplo", ["L", "U"])
def test_lapack_potrf(uplo):
    a = _spd(2, 4, np.float32)
    a[1, 3, 3] = -50.0  # fails at the 4th leading minor: left as is, info 4
    code = ord(uplo)
    text = f"""HloModule m
ENTRY %main (a: f32[2,4,4]) -> (f32[2,4,4], s32[2]) {{
  %a = f32[2,4,4]{{1,2,0}} parameter(0)
  ROOT %c = (f32[2,4,4]{{1,2,0}}, s32[2]) custom-call(%a), custom_call_target="lapack_spotrf_ffi", output_to_operand_aliasing={{{{0}}: (0, {{}})}}, api_version=API_VERSION_TYPED_FFI, backend_config={{uplo = {code} : ui8}}
}}
"""
    _check(text, a)


@pytest.mark.parametrize("side,uplo,trans,diag", list(itertools.product("LR", "LU", "NT", "NU")))
def test_lapack_trsm(side, uplo, trans, diag):
    rng = np.random.default_rng(2)
    a = (rng.standard_normal((4, 4)) + 4 * np.eye(4)).astype(np.float64)
    bshape = (4, 3) if side == "L" else (3, 4)
    b = rng.standard_normal(bshape)
    s = lambda d: ",".join(map(str, d))  # noqa: E731
    cfg = f"diag = {ord(diag)} : ui8, side = {ord(side)} : ui8, trans_x = {ord(trans)} : ui8, uplo = {ord(uplo)} : ui8"
    text = f"""HloModule m
ENTRY %main (a: f64[4,4], b: f64[{s(bshape)}]) -> f64[{s(bshape)}] {{
  %a = f64[4,4]{{0,1}} parameter(0)
  %b = f64[{s(bshape)}]{{0,1}} parameter(1)
  ROOT %x = f64[{s(bshape)}]{{0,1}} custom-call(%a, %b), custom_call_target="lapack_dtrsm_ffi", output_to_operand_aliasing={{{{}}: (1, {{}})}}, api_version=API_VERSION_TYPED_FFI, backend_config={{{cfg}}}
}}
"""
    _check(text, a, b, rtol=1e-10, atol=1e-12)


def _triangular_system(rng, batch, k, lower, dtype):
    """Well-conditioned triangular matrices, with junk in the other triangle."""
    a = rng.standard_normal((batch, k, k)) / np.sqrt(k) + 3 * np.eye(k)
    junk = np.triu(np.full((k, k), 1e3), 1) if lower else np.tril(np.full((k, k), 1e3), -1)
    return (a + junk).astype(dtype)


def _solve_reference(a, b, left, lower, unit, trans, alpha=1.0):
    """NumPy's solve of the explicit triangular system, in float64."""
    t = np.tril(a) if lower else np.triu(a)
    if unit:
        t = t - np.diagonal(t, axis1=-2, axis2=-1)[..., None] * np.eye(a.shape[-1]) + np.eye(a.shape[-1])
    t = t.astype(np.float64)
    if trans:
        t = np.swapaxes(t, -1, -2)
    b = alpha * b.astype(np.float64)
    if left:
        return np.linalg.solve(t, b)
    return np.swapaxes(np.linalg.solve(np.swapaxes(t, -1, -2), np.swapaxes(b, -1, -2)), -1, -2)


@pytest.mark.parametrize("left,lower,unit,trans", list(itertools.product(
    [True, False], [True, False], [True, False], ["NO_TRANSPOSE", "TRANSPOSE"])))
def test_triangular_solve_row_major_calls_the_runtime(left, lower, unit, trans):
    # Row-major f32: Eigen's blocked TRSM, batched, 130 unknowns (several blocks).
    rng = np.random.default_rng(4)
    k, nrhs = 130, 70
    a = _triangular_system(rng, 2, k, lower, np.float32)
    bshape = (2, k, nrhs) if left else (2, nrhs, k)
    b = rng.standard_normal(bshape).astype(np.float32)
    s = lambda d: ",".join(map(str, d))  # noqa: E731
    text = f"""HloModule m
ENTRY %main (a: f32[2,{k},{k}], b: f32[{s(bshape)}]) -> f32[{s(bshape)}] {{
  %a = f32[2,{k},{k}] parameter(0)
  %b = f32[{s(bshape)}] parameter(1)
  ROOT %x = f32[{s(bshape)}] triangular-solve(%a, %b), left_side={str(left).lower()}, lower={str(lower).lower()}, unit_diagonal={str(unit).lower()}, transpose_a={trans}
}}
"""
    exe = runtime.compile(parse_hlo_module(text), "cpu")
    assert "__xla_cpu_trsm_f32" in exe.ir_text
    out = np.asarray(exe.execute(a, b))
    np.testing.assert_allclose(out, _solve_reference(a, b, left, lower, unit, trans != "NO_TRANSPOSE"),
                               rtol=2e-4, atol=2e-5)
    _check(text, a, b, rtol=2e-4, atol=2e-5)


@pytest.mark.parametrize("side,uplo,trans", list(itertools.product("LR", "LU", "NT")))
def test_lapack_trsm_row_major_with_alpha_calls_the_runtime(side, uplo, trans):
    # The result aliases b (output_to_operand_aliasing): solved in place.
    rng = np.random.default_rng(5)
    k, nrhs = 90, 40
    a = _triangular_system(rng, 1, k, uplo == "L", np.float64)[0]
    bshape = (k, nrhs) if side == "L" else (nrhs, k)
    b = rng.standard_normal(bshape)
    s = lambda d: ",".join(map(str, d))  # noqa: E731
    cfg = f"diag = {ord('N')} : ui8, side = {ord(side)} : ui8, trans_x = {ord(trans)} : ui8, uplo = {ord(uplo)} : ui8"
    text = f"""HloModule m
ENTRY %main (a: f64[{k},{k}], b: f64[{s(bshape)}], alpha: f64[]) -> f64[{s(bshape)}] {{
  %a = f64[{k},{k}] parameter(0)
  %b = f64[{s(bshape)}] parameter(1)
  %alpha = f64[] parameter(2)
  ROOT %x = f64[{s(bshape)}] custom-call(%a, %b, %alpha), custom_call_target="lapack_dtrsm_ffi", output_to_operand_aliasing={{{{}}: (1, {{}})}}, api_version=API_VERSION_TYPED_FFI, backend_config={{{cfg}}}
}}
"""
    exe = runtime.compile(parse_hlo_module(text), "cpu")
    assert "__xla_cpu_trsm_f64" in exe.ir_text
    out = np.asarray(exe.execute(a, b, np.float64(-2.5)))
    np.testing.assert_allclose(
        out, _solve_reference(a, b, side == "L", uplo == "L", False, trans == "T", -2.5),
        rtol=1e-10, atol=1e-12)
    _check(text, a, b, np.float64(-2.5), rtol=1e-10, atol=1e-12)


def _hpd(batch, n, dtype, seed=0):
    """Hermitian positive definite complex matrices."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((batch, n, n)) + 1j * rng.standard_normal((batch, n, n))
    return (x @ np.conj(np.swapaxes(x, -1, -2)) + n * np.eye(n)).astype(dtype)


@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("t,dtype", [("c64", np.complex64), ("c128", np.complex128)])
def test_complex_cholesky(lower, t, dtype):
    # Hermitian: a = L L^H (lower) or U^H U (upper); a failed matrix is NaN.
    n = 70
    a = _hpd(3, n, dtype)
    a[1, 50, 50] = -1e5
    text = f"""HloModule m
ENTRY %main (a: {t}[3,{n},{n}]) -> {t}[3,{n},{n}] {{
  %a = {t}[3,{n},{n}] parameter(0)
  ROOT %c = {t}[3,{n},{n}] cholesky(%a), lower={str(lower).lower()}
}}
"""
    out = np.asarray(runtime.compile(parse_hlo_module(text), "cpu").execute(a))
    assert np.isnan(out[1]).all() and not np.isnan(out[[0, 2]]).any()
    for i in (0, 2):
        expected = np.linalg.cholesky(a[i].astype(np.complex128))
        got = out[i] if lower else np.conj(out[i].T)
        np.testing.assert_allclose(got, expected, rtol=1e-4 if t == "c64" else 1e-10, atol=1e-4)
    _check(text, a, rtol=1e-3 if t == "c64" else 1e-9, atol=1e-4)


@pytest.mark.parametrize("trans", ["NO_TRANSPOSE", "TRANSPOSE", "ADJOINT"])
@pytest.mark.parametrize("left,lower", [(True, True), (False, False)])
def test_complex_triangular_solve(trans, left, lower):
    # TRANSPOSE and ADJOINT differ for complex matrices.
    rng = np.random.default_rng(6)
    k, nrhs = 60, 20
    a = (_triangular_system(rng, 1, k, lower, np.float64)[0]
         + 1j * rng.standard_normal((k, k)) / np.sqrt(k)).astype(np.complex128)
    bshape = (k, nrhs) if left else (nrhs, k)
    b = (rng.standard_normal(bshape) + 1j * rng.standard_normal(bshape)).astype(np.complex128)
    s = lambda d: ",".join(map(str, d))  # noqa: E731
    text = f"""HloModule m
ENTRY %main (a: c128[{k},{k}], b: c128[{s(bshape)}]) -> c128[{s(bshape)}] {{
  %a = c128[{k},{k}] parameter(0)
  %b = c128[{s(bshape)}] parameter(1)
  ROOT %x = c128[{s(bshape)}] triangular-solve(%a, %b), left_side={str(left).lower()}, lower={str(lower).lower()}, unit_diagonal=false, transpose_a={trans}
}}
"""
    out = np.asarray(runtime.compile(parse_hlo_module(text), "cpu").execute(a, b))
    t = np.tril(a) if lower else np.triu(a)
    op = {"NO_TRANSPOSE": t, "TRANSPOSE": t.T, "ADJOINT": np.conj(t.T)}[trans]
    expected = np.linalg.solve(op, b) if left else np.linalg.solve(op.T, b.T).T
    np.testing.assert_allclose(out, expected, rtol=1e-10, atol=1e-12)
    _check(text, a, b, rtol=1e-10, atol=1e-12)


def test_complex_lapack_potrf_and_trsm():
    # jaxlib's complex targets: cpotrf (info included) and ztrsm with trans 'C'.
    n = 40
    a = _hpd(2, n, np.complex64, seed=7)
    a[1, 30, 30] = -1e4
    text = f"""HloModule m
ENTRY %main (a: c64[2,{n},{n}]) -> (c64[2,{n},{n}], s32[2]) {{
  %a = c64[2,{n},{n}] parameter(0)
  ROOT %c = (c64[2,{n},{n}], s32[2]) custom-call(%a), custom_call_target="lapack_cpotrf_ffi", output_to_operand_aliasing={{{{0}}: (0, {{}})}}, api_version=API_VERSION_TYPED_FFI, backend_config={{uplo = {ord('L')} : ui8}}
}}
"""
    factor, info = (np.asarray(x) for x in runtime.compile(parse_hlo_module(text), "cpu").execute(a))
    np.testing.assert_array_equal(info, [0, 31])
    np.testing.assert_allclose(np.tril(factor[0]), np.linalg.cholesky(a[0].astype(np.complex128)),
                               rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(factor[1], a[1])
    _check(text, a, rtol=1e-3, atol=1e-4)

    rng = np.random.default_rng(8)
    u = np.triu(_hpd(1, n, np.complex128, seed=9)[0])
    b = rng.standard_normal((n, 5)) + 1j * rng.standard_normal((n, 5))
    cfg = f"diag = {ord('N')} : ui8, side = {ord('L')} : ui8, trans_x = {ord('C')} : ui8, uplo = {ord('U')} : ui8"
    text = f"""HloModule m
ENTRY %main (a: c128[{n},{n}], b: c128[{n},5]) -> c128[{n},5] {{
  %a = c128[{n},{n}] parameter(0)
  %b = c128[{n},5] parameter(1)
  ROOT %x = c128[{n},5] custom-call(%a, %b), custom_call_target="lapack_ztrsm_ffi", output_to_operand_aliasing={{{{}}: (1, {{}})}}, api_version=API_VERSION_TYPED_FFI, backend_config={{{cfg}}}
}}
"""
    out = np.asarray(runtime.compile(parse_hlo_module(text), "cpu").execute(u, b))
    np.testing.assert_allclose(out, np.linalg.solve(np.conj(u.T), b), rtol=1e-10, atol=1e-12)
    _check(text, u, b, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("m,n", [(0, 3), (3, 0), (0, 0)])
def test_qr_and_svd_custom_calls_of_empty_matrices_on_the_interpreter(m, n):
    # NumPy factors matrices with no elements (np.linalg.qr(x, mode="raw"),
    # np.linalg.svd); the interpreter failed to reshape them into a batch.
    k = min(m, n)
    text = f"""HloModule m
ENTRY %main (a: f64[{m},{n}]) -> ((f64[{m},{n}], f64[{k}]), f64[{m},{n}], (f64[{m},{n}], f64[{k}], f64[{m},{m}], f64[{n},{n}], s32[])) {{
  %a = f64[{m},{n}] parameter(0)
  %qr = (f64[{m},{n}], f64[{k}]) custom-call(%a), custom_call_target="lapack_dgeqrf_ffi", api_version=API_VERSION_TYPED_FFI
  %h = f64[{m},{n}] get-tuple-element(%qr), index=0
  %tau = f64[{k}] get-tuple-element(%qr), index=1
  %q = f64[{m},{n}] custom-call(%h, %tau), custom_call_target="lapack_dorgqr_ffi", api_version=API_VERSION_TYPED_FFI
  %svd = (f64[{m},{n}], f64[{k}], f64[{m},{m}], f64[{n},{n}], s32[]) custom-call(%a), custom_call_target="lapack_dgesdd_ffi", api_version=API_VERSION_TYPED_FFI, backend_config={{mode = 65 : ui8}}
  ROOT %t = ((f64[{m},{n}], f64[{k}]), f64[{m},{n}], (f64[{m},{n}], f64[{k}], f64[{m},{m}], f64[{n},{n}], s32[])) tuple(%qr, %q, %svd)
}}
"""
    a = np.zeros((m, n))
    (h, tau), q, (_, s, u, vt, info) = Evaluator().evaluate(parse_hlo_module(text), [a])
    want_u, want_s, want_vt = np.linalg.svd(a)
    assert np.asarray(h).shape == (m, n) and np.asarray(tau).shape == (k,)
    assert np.asarray(q).shape == (m, n)
    assert np.asarray(s).shape == want_s.shape == (k,)
    np.testing.assert_array_equal(np.abs(np.asarray(u)), np.abs(want_u))
    np.testing.assert_array_equal(np.abs(np.asarray(vt)), np.abs(want_vt))
    assert int(np.asarray(info)) == 0
