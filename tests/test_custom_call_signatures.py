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
     "the factor must have the operand's shape"),
    ("""  a = f32[4,4] parameter(0)
  ROOT f = (f64[4,4], s32[]) custom-call(a), custom_call_target="lapack_spotrf_ffi\"""",
     "the factor must have the operand's shape"),
    ("""  a = f32[4,4] parameter(0)
  b = f32[4,3] parameter(1)
  ROOT x = f32[4,2] custom-call(a, b), custom_call_target="lapack_strsm_ffi\"""",
     "the result must have b's shape"),
    ("""  a = f32[4,3] parameter(0)
  b = f32[4,3] parameter(1)
  ROOT x = f32[4,3] custom-call(a, b), custom_call_target="lapack_strsm_ffi\"""",
     "a must be a batch of square matrices"),
])
def test_bad_lapack_signatures_are_rejected(text, why):
    with pytest.raises(VerifierError, match=why):
        xla.compile("HloModule m\nENTRY e {\n" + text + "\n}", "cpu")
