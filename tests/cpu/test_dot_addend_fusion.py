"""dot-addend-fusion (xla/backends/cpu/dot_addend_fusion.py): a large f32
matmul read only by ``w + alpha * product`` runs as one call of the
runtime's __xla_cpu_matmul_addend_f32. Fixtures (fixtures/gen_dot_addend_jax.py):
the update's spellings as JAX lowers them with XLA:CPU's results, and a
JAX-lowered MLP training step against the interpreter."""
import gzip
import os

import numpy as np
import pytest

import xla
from xla import _core
from xla.backends.cpu import dot_addend_fusion, runtime_context
from xla.hlo.parser import parse_hlo_module
from xla.hlo.printer import module_to_text
from xla.tools.arrays import flatten_result, random_args
from lapack_fixtures import load, program, run

SYMBOL = dot_addend_fusion.SYMBOL
CALL = f'call void @"{SYMBOL}"'
MLP = os.path.join(os.path.dirname(__file__), "fixtures", "mlp_sgd_step_jax.hlo.gz")


def _kinds(exe):
    return [i.attr("kind") for i in exe.module.entry.instructions if i.opcode == "fusion"]


def test_every_spelling_of_the_update_is_one_call_with_jaxs_results():
    # w + 0.5 (a0 b), a1 b + w, w - a2 b, w + -(a3^T b) 0.25: small integers,
    # so every product and update is exact and the results are XLA's bits.
    data, _ = load("dot_addend_jax.npz")
    text, args, want = program(data, "forms")
    exe = xla.compile(text, "cpu")
    assert exe.ir_text.count(CALL) == 4
    assert _kinds(exe).count("kOutput") == 4 and "dot" not in {
        i.opcode for i in exe.module.entry.instructions}
    got = [np.asarray(r) for r in flatten_result(exe.execute(*args))]
    assert len(got) == len(want) == 4
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("threads", [1, 2])
def test_on_one_thread_and_split_over_two_against_the_interpreter(threads):
    # One thread: the packed GEMM (B read in place); two: a slab of columns
    # per thread (Eigen's GEMM, then the update).
    data, _ = load("dot_addend_jax.npz")
    text, args, _ = program(data, "forms")
    rng = np.random.default_rng(3)
    args = [rng.standard_normal(a.shape).astype(np.float32) for a in args]
    _core.set_cpu_runtime_num_threads(threads)
    try:
        got = run(text, args, "cpu")
    finally:
        _core.set_cpu_runtime_num_threads(0)
    for g, w in zip(got, run(text, args, "interpreter")):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-4)


def test_jax_mlp_step_fuses_both_weight_updates():
    # Each weight's gradient (x^T dh and h^T dy, 2^24 multiply-adds, stored
    # transposed: the matmul's, not the tiled kernel's) is read only by
    # w - 0.01 g.
    text = gzip.open(MLP, "rt").read()
    module = parse_hlo_module(text)
    args = [a * np.float32(0.1) for a in random_args([p.shape for p in module.entry.parameters],
                                                       seed=0)]
    exe = xla.compile(text, "cpu")
    assert exe.ir_text.count(CALL) == 2 and _kinds(exe).count("kOutput") == 2
    fused = [i for i in exe.module.entry.instructions if i.attr("kind") == "kOutput"]
    assert sorted(f.shape.dimensions for f in fused) == [(128, 1024), (1024, 128)]
    assert [dot_addend_fusion.match(f).alpha for f in fused] == [np.float32(-0.01)] * 2
    got = [np.asarray(r) for r in flatten_result(exe.execute(*args))]
    want = run(text, args, "interpreter")
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


_TWICE = """HloModule twice
ENTRY e {
  w = f32[64,512] parameter(0)
  a = f32[64,256] parameter(1)
  b = f32[256,512] parameter(2)
  d = f32[64,512] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  s = f32[64,512] subtract(w, d)
  n = f32[64,512] negate(d)
  ROOT t = (f32[64,512], f32[64,512]) tuple(s, n)
}
"""

_SCALED_BY_A_VALUE = """HloModule scaled
ENTRY e {
  w = f32[64,512] parameter(0)
  a = f32[64,256] parameter(1)
  b = f32[256,512] parameter(2)
  lr = f32[] parameter(3)
  d = f32[64,512] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  l = f32[64,512] broadcast(lr), dimensions={}
  m = f32[64,512] multiply(d, l)
  ROOT s = f32[64,512] subtract(w, m)
}
"""

_DOT_MINUS_ADDEND = _TWICE.replace("  n = f32[64,512] negate(d)\n", "").replace(
    "subtract(w, d)", "subtract(d, w)").replace(
    "ROOT t = (f32[64,512], f32[64,512]) tuple(s, n)", "ROOT t = f32[64,512] copy(s)")


# 2^25 multiply-adds, row-major with a 16 KB rhs: emit_small_gemm's tiled
# kernel, split over the pool, computes it (strided_gemm.small_gemm_shape),
# not the runtime's matmul.
_TILED_KERNELS_PRODUCT = """HloModule tiled
ENTRY e {
  w = f32[8192,64] parameter(0)
  a = f32[8192,64] parameter(1)
  b = f32[64,64] parameter(2)
  d = f32[8192,64] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT s = f32[8192,64] subtract(w, d)
}
"""


@pytest.mark.parametrize("text", [_TWICE, _SCALED_BY_A_VALUE, _DOT_MINUS_ADDEND,
                                  _TILED_KERNELS_PRODUCT],
                         ids=["product-read-twice", "scale-not-a-constant", "product-minus-w",
                              "tiled-kernels-product"])
def test_other_updates_stay_a_dot_and_a_kernel(text):
    exe = xla.compile(text, "cpu")
    assert CALL not in exe.ir_text and "kOutput" not in _kinds(exe)
    args = random_args([p.shape for p in parse_hlo_module(text).entry.parameters], seed=1)
    for g, w in zip(run(text, args, "cpu"), run(text, args, "interpreter")):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-4)


def test_without_the_runtime_function_nothing_fuses():
    # Objects compiled ahead of time: their runtime has no such function.
    data, _ = load("dot_addend_jax.npz")
    text, _, _ = program(data, "forms")
    module = parse_hlo_module(text)
    from xla.backends.cpu.dot_addend_fusion import DotAddendFusion
    from xla.backends.cpu.pipeline import cpu_pipeline
    pipeline = cpu_pipeline()
    pipeline.disabled_passes = frozenset({"dot-addend-fusion"})
    pipeline.run(module)
    with runtime_context.compiling_with(()):
        assert not DotAddendFusion().run(module)
    assert DotAddendFusion().run(module)


def test_a_foreign_output_fusion_is_refused_by_name():
    text = """HloModule foreign
fused {
  p0 = f32[8,8] parameter(0)
  p1 = f32[8,8] parameter(1)
  d = f32[8,8] dot(p0, p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT m = f32[8,8] multiply(d, d)
}
ENTRY e {
  a = f32[8,8] parameter(0)
  b = f32[8,8] parameter(1)
  ROOT f = f32[8,8] fusion(a, b), kind=kOutput, calls=fused
}
"""
    with pytest.raises(xla.XlaError, match="kOutput"):
        xla.compile(text, "cpu")


def test_an_optimized_dump_compiles_where_the_runtime_lacks_the_function(monkeypatch):
    # A module dumped after the JIT's passes holds the kOutput fusions; an
    # object compiled ahead of time from it (or a runtime without the
    # function) computes them as the fused computation's loops.
    text = gzip.open(MLP, "rt").read()
    dumped = module_to_text(xla.compile(text, "cpu").module)
    assert "kind=kOutput" in dumped
    from xla.backends.cpu import compiler
    symbols = {k: v for k, v in compiler.runtime_symbols().items() if k != SYMBOL}
    monkeypatch.setattr(compiler, "runtime_symbols", lambda: symbols)
    exe = xla.compile(dumped, "cpu")
    assert SYMBOL not in exe.ir_text and _kinds(exe).count("kOutput") == 2
    args = [a * np.float32(0.1) for a in random_args(
        [p.shape for p in parse_hlo_module(text).entry.parameters], seed=2)]
    got = [np.asarray(r) for r in flatten_result(exe.execute(*args))]
    for g, w in zip(got, run(text, args, "interpreter")):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
