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


@pytest.mark.parametrize("et,dt", [("f32", np.float32), ("f64", np.float64)])
@pytest.mark.parametrize("c", [16, 40, 1000])
def test_max_min_row_reduce_signed_zeros_infinities_and_init(et, dt, c):
    # Rows of at least two vectors (16 f32, 8 f64) take the vector path:
    # nnan nsz intrinsics plus an any-NaN flag, and the row walked again
    # exactly where its result is a zero, so max(-0, +0) is +0 and
    # min(-0, +0) is -0 in any order, as llvm.maximum/minimum fold them;
    # a NaN init value propagates. (Shorter rows fold with the reducer's
    # own code, whose zero sign depends on the order, as XLA's does.)
    text = f"""HloModule m

%max (a: {et}[], b: {et}[]) -> {et}[] {{
  %a = {et}[] parameter(0)
  %b = {et}[] parameter(1)
  ROOT %r = {et}[] maximum(%a, %b)
}}

%min (a: {et}[], b: {et}[]) -> {et}[] {{
  %a = {et}[] parameter(0)
  %b = {et}[] parameter(1)
  ROOT %r = {et}[] minimum(%a, %b)
}}

ENTRY %main (x: {et}[8,{c}], i: {et}[]) -> ({et}[8], {et}[8]) {{
  %x = {et}[8,{c}] parameter(0)
  %i = {et}[] parameter(1)
  %ra = {et}[8] reduce(%x, %i), dimensions={{1}}, to_apply=%max
  %rb = {et}[8] reduce(%x, %i), dimensions={{1}}, to_apply=%min
  ROOT %t = ({et}[8], {et}[8]) tuple(%ra, %rb)
}}"""
    exe = _compile(text)
    rng = np.random.RandomState(c)
    x = -rng.random_sample((8, c)).astype(dt) - 1       # rows 0-3: negative
    x[0, :] = -0.0
    x[0, c // 2] = 0.0                                  # -0 ... +0 ... -0
    x[1, :] = 0.0
    x[1, c - 1] = -0.0                                  # +0 ... -0 last
    x[2, c // 3] = -0.0                                 # negatives and one -0
    x[3, 0] = np.inf
    x[4:, :] = rng.random_sample((4, c)).astype(dt) + 1  # rows 4-7: positive
    x[4, c - 1] = 0.0
    x[5, c // 2] = -np.inf
    x[6, 0] = np.nan
    x[7, c - 1] = -0.0
    for init in (0.0, -0.0, -np.inf, np.inf, np.nan):
        a, b = exe.execute(x, dt(init))
        with np.errstate(invalid="ignore"):
            want_a = np.array([np.nan if (np.isnan(r).any() or np.isnan(init)) else
                               _signed_max(list(r) + [init]) for r in x], dtype=dt)
            want_b = np.array([np.nan if (np.isnan(r).any() or np.isnan(init)) else
                               -_signed_max([-v for v in list(r) + [init]]) for r in x], dtype=dt)
        np.testing.assert_array_equal(a, want_a, err_msg=f"max, init {init}")
        np.testing.assert_array_equal(b, want_b, err_msg=f"min, init {init}")
        assert (np.signbit(a) == np.signbit(want_a)).all(), f"max sign of zero, init {init}"
        assert (np.signbit(b) == np.signbit(want_b)).all(), f"min sign of zero, init {init}"


def _signed_max(values):
    """max with -0 ordered below +0 (IEEE 754-2019 maximum, no NaNs here)."""
    return max(values, key=lambda v: (float(v), not math.copysign(1.0, float(v)) < 0))


@pytest.mark.parametrize("c", [13, 1000, 1024])
def test_softmax_multi_output_fusion(c):
    r = 512
    exe = _compile(softmax(r, c))
    x = np.random.RandomState(0).standard_normal((r, c)).astype(np.float32)
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(exe.execute(x), e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-7)


@pytest.fixture
def vectors_of_256_bits(monkeypatch):
    """Compiles as for a 256-bit target (AVX2) whatever this CPU has, so
    the IR's vector widths are known (test_row_sum_runs_as_wide_as_the_
    targets_vectors covers 512)."""
    from xla.backends.cpu.compiler import CpuCompiler
    monkeypatch.setattr(CpuCompiler, "vector_bits", lambda self: 256)


def test_row_reduce_is_vectorized_from_one_copy_of_the_element(vectors_of_256_bits):
    # The row reduction's loop computes one element per iteration (one exp
    # in the unoptimized IR, not one per lane) and LLVM's loop vectorizer
    # runs it in 8-wide vector accumulators (on a 256-bit target): vector
    # exp arithmetic and a vector max and sum reduced at the end.
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
def test_row_reduce_of_a_libm_call_is_quiet_and_correct(op, fn, capfd, vectors_of_256_bits):
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


@pytest.mark.parametrize("bits,c,width", [(256, 40, 8), (512, 40, 16), (512, 20, 8),
                                          (512, 1000, 16)])
def test_row_sum_runs_as_wide_as_the_targets_vectors(monkeypatch, bits, c, width):
    # A row sum runs one vector register wide (16 f32 lanes with AVX-512),
    # in two accumulators, where the row holds two registers; shorter rows
    # and 256-bit targets keep 8 lanes. The sum is reassociated either way
    # (np.sum's pairwise sum is the reference, to a few ulps).
    from xla.backends.cpu.compiler import CpuCompiler
    monkeypatch.setattr(CpuCompiler, "vector_bits", lambda self: bits)
    exe = _compile(f"""HloModule m
%add (a: f32[], b: f32[]) -> f32[] {{
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %r = f32[] add(%a, %b)
}}
ENTRY %main (x: f32[64,{c}]) -> f32[64] {{
  %x = f32[64,{c}] parameter(0)
  %z = f32[] constant(0)
  %e = f32[64,{c}] exponential(%x)
  ROOT %s = f32[64] reduce(%e, %z), dimensions={{1}}, to_apply=%add
}}""")
    assert f'!"llvm.loop.vectorize.width", i32 {width}' in exe.ir_text
    x = np.random.RandomState(c).standard_normal((64, c)).astype(np.float32)
    np.testing.assert_allclose(exe.execute(x), np.exp(x.astype(np.float64)).sum(1), rtol=2e-6)
