"""Custom-call targets the backends implement have their operand and result
shapes checked by the verifier, before any backend sees the module (issue
13: TopK with k past the row crashed the CPU backend, a too-small LAPACK
result was written out of bounds)."""
import numpy as np
import pytest

import xla
from xla.errors import VerifierError


def topk(result):
    return f"""HloModule m
ENTRY e {{
  x = f32[8,4] parameter(0)
  ROOT t = {result} custom-call(x), custom_call_target="TopK"
}}"""


@pytest.mark.parametrize("platform", ["interpreter", "cpu"])
@pytest.mark.parametrize("result,why", [
    ("(f32[8,5], s32[8,5])", "k = 5 is larger than the operand's last dimension 4"),
    ("(f32[7,2], s32[7,2])", "the operand's leading dimensions"),
    ("(f64[8,2], s64[8,2])", "values must have the operand's element type f32"),
    ("(f32[8,2], s64[8,2])", "indices must be s32"),
    ("f32[8,2]", "the result must be \\(values, indices\\)"),
])
def test_bad_topk_signatures_are_rejected_before_codegen(platform, result, why):
    with pytest.raises(VerifierError, match=why):
        xla.compile(topk(result), platform)


def test_a_good_topk_still_runs():
    x = np.random.default_rng(0).standard_normal((8, 4)).astype(np.float32)
    values, indices = xla.compile(topk("(f32[8,2], s32[8,2])"), "cpu").execute(x)
    np.testing.assert_array_equal(values, -np.sort(-x, axis=1)[:, :2])


@pytest.mark.parametrize("text,why", [
    ("""  a = f32[4,4] parameter(0)
  ROOT f = (f32[3,3], s32[]) custom-call(a), custom_call_target="lapack_spotrf_ffi\"""",
     "the factor must be f32\\[4,4\\], is f32\\[3,3\\]"),
    ("""  a = f32[4,4] parameter(0)
  ROOT f = (f64[4,4], s32[]) custom-call(a), custom_call_target="lapack_spotrf_ffi\"""",
     "the factor must be f32"),
    ("""  a = f32[4,4] parameter(0)
  b = f32[4,3] parameter(1)
  ROOT x = f32[4,2] custom-call(a, b), custom_call_target="lapack_strsm_ffi\"""",
     "the result must be f32\\[4,3\\]"),
    ("""  a = f32[4,3] parameter(0)
  b = f32[4,3] parameter(1)
  ROOT x = f32[4,3] custom-call(a, b), custom_call_target="lapack_strsm_ffi\"""",
     "a must be a batch of square matrices"),
    # The names without _ffi, which the CPU backend implements too (this one
    # corrupted the heap: 'malloc_consolidate(): invalid chunk size').
    ("""  a = f32[4,4] parameter(0)
  ROOT f = (f32[3,3], s32[]) custom-call(a), custom_call_target="lapack_spotrf\"""",
     "the factor must be f32"),
    ("""  a = f32[4,4] parameter(0)
  b = f32[4,4] parameter(1)
  ROOT x = f32[2,2] custom-call(a, b), custom_call_target="lapack_strsm\"""",
     "the result must be f32"),
    # b fits a on its other side only: the kernel would read past b.
    ("""  a = f32[3,3] parameter(0)
  b = f32[4,3] parameter(1)
  ROOT x = f32[4,3] custom-call(a, b), custom_call_target="lapack_strsm_ffi", backend_config={side = 76 : ui8}""",
     "must have a's 3 rows \\(side L\\)"),
    ("""  a = f32[4,4] parameter(0)
  b = f32[4,3] parameter(1)
  ROOT x = f32[4,3] custom-call(a, b), custom_call_target="lapack_strsm_ffi", backend_config={trans_x = 81 : ui8}""",
     "backend_config trans_x = 81 is not one of"),
    ("""  a = f32[4,4] parameter(0)
  b = f32[4,3] parameter(1)
  c = f32[2] parameter(2)
  ROOT x = f32[4,3] custom-call(a, b, c), custom_call_target="lapack_strsm_ffi\"""",
     "alpha must be f32\\[\\]"),
])
def test_bad_lapack_signatures_are_rejected(text, why):
    for platform in ("interpreter", "cpu"):
        with pytest.raises(VerifierError, match=why):
            xla.compile("HloModule m\nENTRY e {\n" + text + "\n}", platform)


def one_operand(target, result, operand="f32[4,4]"):
    return f"""HloModule m
ENTRY e {{
  a = {operand} parameter(0)
  ROOT f = {result} custom-call(a), custom_call_target="{target}"
}}"""


# Targets the interpreter implemented alone at first: a wrong declared shape was a
# raw NumPy ValueError ('cannot reshape array of size 4 into shape (1,)').
@pytest.mark.parametrize("target,result,why", [
    ("lapack_sgetrf_ffi", "(f32[4,4], s32[1], s32[])", "ipiv must be s32\\[4\\]"),
    ("lapack_sgetrf_ffi", "(f32[4,4])", "the result must be \\(lu, ipiv\\)"),
    ("lapack_sgeqrf_ffi", "(f32[4,4], f32[7])", "tau must be f32\\[4\\]"),
    ("lapack_ssyevd_ffi", "(f32[4,4], f32[2])", "w must be f32\\[4\\]"),
    ("lapack_cheevd_ffi", "(c64[4,4], c64[4])", "w must be f32\\[4\\]"),
    ("lapack_sgeev_ffi", "(f32[4], f32[4], c64[4,4], c64[4,4], s32[])", None),
    ("lapack_sgeev_ffi", "(f32[4], f32[4], c64[4,4], c64[4,3], s32[])", "vr must be c64\\[4,4\\]"),
    ("lapack_sgeev_ffi", "(f32[4], f32[4], c64[4,4], c128[4,4], s32[])", "vr must be c64"),
    ("lapack_sgeev_ffi", "(f32[4], f32[3], c64[4,4], c64[4,4], s32[])", "wi must be f32\\[4\\]"),
    ("lapack_sgeev_ffi", "(c64[4], c64[4,4], c64[4,4], s32[])", "the result must be \\(wr, wi"),
    ("lapack_cgeev_ffi", "(c64[4], c64[4,4], c64[4,4], s32[2])", "info must be s32\\[\\]"),
    ("lapack_cgeev_ffi", "(f32[4], f32[4], c64[4,4], c64[4,4], s32[])", "the result must be \\(w, vl"),
    ("Sharding", "f32[2,2]", "the result must have the operand's shape"),
    ("SPMDFullToShardShape", "f64[4,4]", "the result must have the operand's shape"),
])
@pytest.mark.parametrize("platform", ["interpreter", "cpu"])
def test_bad_signatures_of_other_targets_are_rejected(platform, target, result, why):
    operand = "c64[4,4]" if target.startswith("lapack_c") else "f32[4,4]"
    if why is None:   # the good signature these vary
        xla.compile(one_operand(target, result, operand), platform)
        return
    with pytest.raises(VerifierError, match=why):
        xla.compile(one_operand(target, result, operand), platform)


def test_good_signatures_still_run_on_the_interpreter():
    a = np.float32([[4, 1, 0, 0], [1, 3, 0, 0], [0, 0, 2, 0], [0, 0, 0, 1]])
    lu, ipiv, info = xla.compile(one_operand("lapack_sgetrf_ffi", "(f32[4,4], s32[4], s32[])"),
                                 "interpreter").execute(a)
    assert ipiv.shape == (4,) and int(info) == 0
    h, tau = xla.compile(one_operand("lapack_sgeqrf_ffi", "(f32[4,4], f32[4])"),
                         "interpreter").execute(a)
    assert h.shape == (4, 4) and tau.shape == (4,)
    v, w, info = xla.compile(one_operand("lapack_ssyevd_ffi", "(f32[4,4], f32[4], s32[])"),
                             "interpreter").execute(a)
    np.testing.assert_allclose(w, np.linalg.eigvalsh(a.astype(np.float64)), rtol=1e-5)
    np.testing.assert_array_equal(
        xla.compile(one_operand("Sharding", "f32[4,4]"), "interpreter").execute(a), a)


def test_every_implemented_target_has_a_signature():
    """A target a backend implements without a declared signature would run
    on whatever shapes the text declares."""
    from xla.backends.cpu import emit_linalg  # noqa: F401 (registers the LAPACK targets)
    from xla.backends.cpu.emit_sort import CUSTOM_CALL_TARGETS as CPU
    from xla.hlo.custom_call_signatures import SIGNATURES
    from xla.hlo.evaluator.ops_custom_call import CUSTOM_CALL_TARGETS as INTERPRETER
    assert "lapack_spotrf" in CPU and "lapack_sgetrf_ffi" in INTERPRETER
    assert sorted(set(CPU) - set(SIGNATURES)) == []
    assert sorted(set(INTERPRETER) - set(SIGNATURES)) == []
