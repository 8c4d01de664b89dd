"""Linear solves as jax lowers them (jaxlib's LAPACK getrf/trsm/potrf custom
calls on column-major matrices) on the cpu backend: the runtime's Eigen
TRSM and Cholesky take column-major matrices as their transposes
(emit_linalg._runtime_trsm / _runtime_cholesky) and layout assignment gives
trsm and potrf the operand layouts jaxlib declares, so no solve falls back
to the substitution loops (jnp.linalg.inv of f64[512, 512]: 70 -> 14 ms).
The JAX programs (fixtures/lapack_solve_jax.npz, from
gen_lapack_solve_jax.py) against jax's results; hand-written solves in
every combination of row- and column-major operands against NumPy."""
import itertools
import re

import numpy as np
import pytest

from xla import runtime
from xla.hlo.parser import parse_hlo_module

from lapack_fixtures import load, program, run

DATA, NAMES = load("lapack_solve_jax.npz")

# The substitution loops' functions (emit_linalg._Fn), which the runtime
# calls replace.
_LOOP = re.compile(r'define [^\n]*@"?(trsm|potrf|cholesky|triangular)\.')


def test_fixture_has_every_program():
    assert len(NAMES) == 13 and "inv_f64" in NAMES and "cho_solve_upper_c128" in NAMES
    text = str(DATA["inv_f64.hlo"])
    assert 'custom_call_target="lapack_dtrsm_ffi"' in text
    assert "operand_layout_constraints={f64[70,70]{0,1}, f64[70,70]{0,1}}" in text


@pytest.mark.parametrize("name", NAMES)
def test_matches_jax_through_the_runtime(name):
    text, args, want = program(DATA, name)
    exe = runtime.compile(parse_hlo_module(text), "cpu")
    ir = exe.ir_text
    assert "__xla_cpu_trsm_" in ir or "__xla_cpu_cholesky_" in ir
    assert not _LOOP.search(ir), "a solve fell back to the substitution loops"
    got = [np.asarray(g) for g in run(text, args, "cpu")]
    assert [(g.dtype, g.shape) for g in got] == [(w.dtype, w.shape) for w in want]
    single = want[0].dtype in (np.float32, np.complex64)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=2e-4 if single else 1e-10,
                                   atol=(2e-5 if single else 1e-12) * max(1.0, np.abs(w).max()))


@pytest.mark.parametrize("name", ["solve_f32", "cho_solve_upper_c128",
                                  "solve_triangular_lower_adjoint_unit_c128",
                                  "triangular_solve_right_conjugate_c64"])
def test_interpreter_matches_jax(name):
    text, args, want = program(DATA, name)
    for g, w in zip(run(text, args, "interpreter"), want):
        np.testing.assert_allclose(g, w, rtol=2e-4, atol=2e-4 * max(1.0, np.abs(w).max()))


def _reference(a, b, left, lower, unit, trans, alpha):
    """alpha * op(T)^-1 b (left) or alpha * b op(T)^-1 (right) in complex128,
    T the triangle of ``a`` read."""
    t = (np.tril(a) if lower else np.triu(a)).astype(np.complex128)
    if unit:
        np.fill_diagonal(t, 1.0)
    if trans != "NO_TRANSPOSE":
        t = t.T
    if trans == "ADJOINT":
        t = np.conj(t)
    b = alpha * b.astype(np.complex128)
    return np.linalg.solve(t, b) if left else np.linalg.solve(t.T, b.T).T


_LAYOUT = {"row": "{1,0}", "col": "{0,1}"}
_MINOR_TO_MAJOR = {"row": (1, 0), "col": (0, 1)}


@pytest.mark.parametrize("t,dtype", [("f64", np.float64), ("c128", np.complex128)])
@pytest.mark.parametrize("a_order,x_order,left,lower,trans", list(itertools.product(
    ["row", "col"], ["row", "col"], [True, False], [True, False],
    ["NO_TRANSPOSE", "TRANSPOSE", "ADJOINT"])))
def test_trsm_orders(a_order, x_order, left, lower, trans, t, dtype):
    # Each matrix read through its own layout; ADJOINT with a and b in
    # different orders asks the runtime for the conjugate of a without its
    # transpose.
    rng = np.random.default_rng(7)
    k, nrhs = 37, 5
    a = rng.standard_normal((k, k)) / np.sqrt(k) + 3 * np.eye(k)
    a = a + np.triu(np.full((k, k), 1e3), 1) if lower else a + np.tril(np.full((k, k), 1e3), -1)
    bshape = (k, nrhs) if left else (nrhs, k)
    b = rng.standard_normal(bshape)
    if dtype == np.complex128:
        a = a + 1j * rng.standard_normal((k, k)) / np.sqrt(k)
        b = b + 1j * rng.standard_normal(bshape)
    a, b = a.astype(dtype), b.astype(dtype)
    unit = lower and trans == "TRANSPOSE"
    s = ",".join(map(str, bshape))
    la, lx = _LAYOUT[a_order], _LAYOUT[x_order]
    code = {"NO_TRANSPOSE": "N", "TRANSPOSE": "T", "ADJOINT": "C"}[trans]
    cfg = (f"diag = {ord('U' if unit else 'N')} : ui8, side = {ord('L' if left else 'R')} : ui8, "
           f"trans_x = {ord(code)} : ui8, uplo = {ord('L' if lower else 'U')} : ui8")
    letter = "d" if t == "f64" else "z"
    text = f"""HloModule m
ENTRY %main (a: {t}[{k},{k}], b: {t}[{s}], alpha: {t}[]) -> {t}[{s}] {{
  %a = {t}[{k},{k}]{la} parameter(0)
  %b = {t}[{s}]{lx} parameter(1)
  %alpha = {t}[] parameter(2)
  ROOT %x = {t}[{s}]{lx} custom-call(%a, %b, %alpha), custom_call_target="lapack_{letter}trsm_ffi", output_to_operand_aliasing={{{{}}: (1, {{}})}}, api_version=API_VERSION_TYPED_FFI, backend_config={{{cfg}}}
}}
"""
    exe = runtime.compile(parse_hlo_module(text), "cpu")
    call = [i for c in exe.module.computations for i in c.instructions if i.opcode == "custom-call"]
    assert [o.shape.physical_minor_to_major() for o in call[0].operands[:2]] == \
        [_MINOR_TO_MAJOR[a_order], _MINOR_TO_MAJOR[x_order]]  # no copies
    assert "__xla_cpu_trsm_" in exe.ir_text and not _LOOP.search(exe.ir_text)
    alpha = np.asarray(1.5 - 0.5j if t == "c128" else -1.5, dtype)
    got = np.asarray(exe.execute(a, b, alpha))
    want = _reference(a, b, left, lower, unit, trans, alpha)
    np.testing.assert_allclose(got, want.real if t == "f64" else want, rtol=1e-10, atol=1e-11)


@pytest.mark.parametrize("t,dtype", [("f64", np.float64), ("c128", np.complex128)])
@pytest.mark.parametrize("order,uplo", list(itertools.product(["row", "col"], "LU")))
def test_potrf_orders(order, uplo, t, dtype):
    # The factor in the triangle asked for, the other triangle as given,
    # info the order of the first leading minor that is not positive.
    rng = np.random.default_rng(8)
    n = 33
    x = rng.standard_normal((2, n, n))
    if dtype == np.complex128:
        x = x + 1j * rng.standard_normal((2, n, n))
    a = (x @ np.conj(np.swapaxes(x, -1, -2)) + n * np.eye(n)).astype(dtype)
    a[1, 20, 20] = -1e4
    lay = {"row": "{2,1,0}", "col": "{1,2,0}"}[order]
    letter = "d" if t == "f64" else "z"
    text = f"""HloModule m
ENTRY %main (a: {t}[2,{n},{n}]) -> ({t}[2,{n},{n}], s32[2]) {{
  %a = {t}[2,{n},{n}]{lay} parameter(0)
  ROOT %c = ({t}[2,{n},{n}]{lay}, s32[2]) custom-call(%a), custom_call_target="lapack_{letter}potrf_ffi", output_to_operand_aliasing={{{{0}}: (0, {{}})}}, api_version=API_VERSION_TYPED_FFI, backend_config={{uplo = {ord(uplo)} : ui8}}
}}
"""
    exe = runtime.compile(parse_hlo_module(text), "cpu")
    assert "__xla_cpu_cholesky_" in exe.ir_text and not _LOOP.search(exe.ir_text)
    factor, info = (np.asarray(r) for r in exe.execute(a))
    assert info.tolist() == [0, 21]
    lower = uplo == "L"
    want = np.linalg.cholesky(a[0])
    tri, other = (np.tril, np.triu) if lower else (np.triu, np.tril)
    np.testing.assert_allclose(tri(factor[0]), want if lower else np.conj(want.T), rtol=1e-12,
                               atol=1e-12)
    np.testing.assert_array_equal(other(factor[0], 1 if lower else -1), other(a[0], 1 if lower else -1))
    np.testing.assert_array_equal(factor[1], a[1])


@pytest.mark.parametrize("t,dims,zero_column", [
    ("f64", (300, 300), None), ("f64", (300, 300), 150), ("f64", (600, 270), None),
    ("f32", (290, 600), None), ("f64", (2, 300, 300), 40)])
def test_large_getrf_matches_the_interpreter(t, dims, zero_column):
    # One matrix of at least 256 columns and rows factors in panels of 64
    # whose row swaps, solves and trailing updates run over the pool
    # (spectral.cc ParallelLu); a batch of two runs Eigen's LU per matrix.
    # Same pivots and info as the interpreter's LU, the factors to rounding,
    # and P L U = a.
    rng = np.random.default_rng(9)
    dtype = np.float64 if t == "f64" else np.float32
    a = rng.standard_normal(dims).astype(dtype)
    if zero_column is not None:
        a[..., zero_column] = 0  # a zero pivot there: info = zero_column + 1
    m, n = dims[-2:]
    k = min(m, n)
    batch = dims[:-2]
    s = ",".join(map(str, dims))
    lay = "{" + ",".join(map(str, [len(dims) - 2, len(dims) - 1] + list(range(len(dims) - 3, -1, -1)))) + "}"
    bk = ",".join(map(str, batch + (k,)))
    bi = ",".join(map(str, batch))
    letter = "d" if t == "f64" else "s"
    text = f"""HloModule m
ENTRY %main (a: {t}[{s}]) -> ({t}[{s}], s32[{bk}], s32[{bi}]) {{
  %a = {t}[{s}]{lay} parameter(0)
  ROOT %lu = ({t}[{s}]{lay}, s32[{bk}], s32[{bi}]) custom-call(%a), custom_call_target="lapack_{letter}getrf_ffi", output_to_operand_aliasing={{{{0}}: (0, {{}})}}, api_version=API_VERSION_TYPED_FFI
}}
"""
    lu, ipiv, info = run(text, [a], "cpu")
    ref_lu, ref_ipiv, ref_info = run(text, [a], "interpreter")
    np.testing.assert_array_equal(ipiv, ref_ipiv)
    np.testing.assert_array_equal(info, ref_info)
    assert np.all(info == (0 if zero_column is None else zero_column + 1))
    tol = 1e-9 if t == "f64" else 2e-3
    np.testing.assert_allclose(lu, ref_lu, rtol=tol, atol=tol)
    for idx in np.ndindex(*batch):
        f, p = lu[idx].astype(np.float64), ipiv[idx]
        lower = np.tril(f[:, :k], -1) + np.eye(m, k)
        upper = np.triu(f[:k, :])
        rows = np.arange(m)
        for j, pj in enumerate(p - 1):  # LAPACK's swaps, in order
            rows[[j, pj]] = rows[[pj, j]]
        np.testing.assert_allclose((lower @ upper), a[idx][rows].astype(np.float64),
                                   atol=50 * tol * np.sqrt(n))


@pytest.mark.parametrize("left,order,t", [(True, "col", "f64"), (False, "col", "f64"),
                                          (True, "row", "c128"), (False, "row", "f64")])
def test_large_trsm_in_slabs(left, order, t):
    # One system of 2^23 or more multiply-adds: its right-hand sides are
    # solved in slabs over the pool (linalg.cc Trsm), alpha applied to each.
    rng = np.random.default_rng(10)
    k, nrhs = 300, 101
    dtype = np.float64 if t == "f64" else np.complex128
    a = rng.standard_normal((k, k)) / np.sqrt(k) + 3 * np.eye(k)
    bshape = (k, nrhs) if left else (nrhs, k)
    b = rng.standard_normal(bshape)
    if t == "c128":
        a, b = a + 0.3j * np.tril(a), b - 1j * b[::-1]
    a, b = a.astype(dtype), b.astype(dtype)
    s = ",".join(map(str, bshape))
    lay = _LAYOUT[order]
    letter = "d" if t == "f64" else "z"
    cfg = (f"diag = {ord('N')} : ui8, side = {ord('L' if left else 'R')} : ui8, "
           f"trans_x = {ord('T')} : ui8, uplo = {ord('L')} : ui8")
    text = f"""HloModule m
ENTRY %main (a: {t}[{k},{k}], b: {t}[{s}], alpha: {t}[]) -> {t}[{s}] {{
  %a = {t}[{k},{k}]{lay} parameter(0)
  %b = {t}[{s}]{lay} parameter(1)
  %alpha = {t}[] parameter(2)
  ROOT %x = {t}[{s}]{lay} custom-call(%a, %b, %alpha), custom_call_target="lapack_{letter}trsm_ffi", output_to_operand_aliasing={{{{}}: (1, {{}})}}, api_version=API_VERSION_TYPED_FFI, backend_config={{{cfg}}}
}}
"""
    alpha = np.asarray(0.75, dtype)
    got = run(text, [a, b, alpha], "cpu")[0]
    want = _reference(a, b, left, True, False, "TRANSPOSE", alpha)
    np.testing.assert_allclose(got, want if t == "c128" else want.real, rtol=1e-10, atol=1e-11)


def test_jit_numpy_solve_of_a_nonsymmetric_matrix():
    # xla.jit(np.linalg.solve) goes through linalg_composite_rewriter, whose
    # triangular-solve carries its transpose_a as the builder gives it (a
    # transposed solve here once read an attribute object as "not
    # NO_TRANSPOSE").
    import xla
    rng = np.random.default_rng(11)
    a = rng.standard_normal((5, 5)) + 5 * np.eye(5)
    for b in (rng.standard_normal(5), rng.standard_normal((5, 2))):
        np.testing.assert_allclose(np.asarray(xla.jit(np.linalg.solve)(a, b)),
                                   np.linalg.solve(a, b), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("trans", ["NO_TRANSPOSE", "TRANSPOSE"])
def test_transpose_a_as_a_builders_raw_attribute(trans):
    # An instruction built in Python may carry transpose_a as a RawAttr
    # (the text after "transpose_a="); the interpreter and the cpu backend
    # read it as the parser's string.
    from xla.hlo.attributes import RawAttr
    from xla.hlo.evaluator.evaluator import Evaluator
    text = f"""HloModule m
ENTRY %main (a: f64[4,4], b: f64[4,2]) -> f64[4,2] {{
  %a = f64[4,4] parameter(0)
  %b = f64[4,2] parameter(1)
  ROOT %x = f64[4,2] triangular-solve(%a, %b), left_side=true, lower=true, transpose_a={trans}
}}"""
    rng = np.random.default_rng(12)
    a = rng.standard_normal((4, 4)) + 4 * np.eye(4)
    b = rng.standard_normal((4, 2))
    want = _reference(a, b, True, True, False, trans, 1.0).real

    def raw():
        m = parse_hlo_module(text)
        m.entry.root_instruction.attrs["transpose_a"] = RawAttr(trans)
        return m
    np.testing.assert_allclose(np.asarray(Evaluator().evaluate(raw(), [a, b])), want, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(runtime.compile(raw(), "cpu").execute(a, b)), want,
                               rtol=1e-12)
