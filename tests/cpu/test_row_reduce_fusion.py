"""Row reductions with max/min reducers in vector accumulators, and
multi-output fusions whose array output is stored by the reduce's loop."""
import math

import numpy as np
import pytest

import xla
from hlo_texts import REDUCERS, softmax



def _compile(text):
    return xla.compile(xla.parse_hlo_module(text), "cpu")


@pytest.mark.parametrize("c", [5, 16, 17, 100, 1024])
def test_max_min_row_reduce_with_nan(c):
    exe = _compile(f"""HloModule m
{REDUCERS}
ENTRY %main (x: f32[64,{c}]) -> (f32[64], f32[64]) {{
  %x = f32[64,{c}] parameter(0)
  %ninf = f32[] constant(-inf)
  %inf = f32[] constant(inf)
  %ra = f32[64] reduce(%x, %ninf), dimensions={{1}}, to_apply=%max
  %rb = f32[64] reduce(%x, %inf), dimensions={{1}}, to_apply=%min
  ROOT %t = (f32[64], f32[64]) tuple(%ra, %rb)
}}""")
    x = np.random.RandomState(c).standard_normal((64, c)).astype(np.float32)
    x[3, c // 2] = np.nan
    x[7, c - 1] = np.nan
    a, b = exe.execute(x)
    np.testing.assert_array_equal(a, x.max(1))
    np.testing.assert_array_equal(b, x.min(1))


@pytest.mark.parametrize("c", [13, 1000, 1024])
def test_softmax_multi_output_fusion(c):
    r = 512
    exe = _compile(softmax(r, c))
    x = np.random.RandomState(0).standard_normal((r, c)).astype(np.float32)
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(exe.execute(x), e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-7)


def test_row_reduce_is_vectorized_from_one_copy_of_the_element():
    # The row reduction's loop computes one element per iteration (one exp
    # in the unoptimized IR, not one per lane) and LLVM's loop vectorizer
    # runs it in 8-wide vector accumulators: vector exp arithmetic and a
    # vector max and sum reduced at the end.
    r, c = 64, 1000
    exe = _compile(softmax(r, c))
    x = np.random.RandomState(1).standard_normal((r, c)).astype(np.float32)
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(exe.execute(x), e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-7)
    # 0x3FF7154760000000 is log2(e) in f32, the exp polynomial's first step.
    assert exe.ir_text.count("0x3ff7154760000000") == 1
    opt = exe.optimized_ir_text
    assert "llvm.vector.reduce.fmaximum.v8f32" in opt or "llvm.maximum.v8f32" in opt
    assert "llvm.vector.reduce.fadd.v8f32" in opt or "fadd <8 x float>" in opt


@pytest.mark.parametrize("op,fn", [("erf", np.vectorize(math.erf)), ("tan", np.tan), ("sine", np.sin)])
def test_row_reduce_of_a_libm_call_is_quiet_and_correct(op, fn, capfd):
    # erf and tan call libm, which the loop vectorizer cannot vectorize: the
    # reduction keeps its hand-unrolled vector accumulators, and LLVM prints
    # no "loop not vectorized" remark. sine is an LLVM intrinsic.
    exe = _compile(f"""HloModule m
{REDUCERS}
ENTRY %main (x: f32[16,1000]) -> f32[16] {{
  %x = f32[16,1000] parameter(0)
  %e = f32[16,1000] {op}(%x)
  %z = f32[] constant(0)
  ROOT %r = f32[16] reduce(%e, %z), dimensions={{1}}, to_apply=%add
}}""")
    x = np.random.RandomState(2).uniform(-1, 1, (16, 1000)).astype(np.float32)
    np.testing.assert_allclose(exe.execute(x), fn(x.astype(np.float64)).sum(1), rtol=1e-5, atol=1e-4)
    assert "<8 x float>" in exe.optimized_ir_text
    assert "not vectorized" not in capfd.readouterr().err
