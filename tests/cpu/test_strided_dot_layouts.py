"""strided-dot-layouts (xla/backends/cpu/strided_dot_layouts.py) and the
tiled GEMM kernel's strided batched products (strided_gemm.py,
emit_small_gemm.py): the transposes around attention's per-head dots
become bitcasts the kernel reads and writes in place; the HLO before and
after, and results against NumPy for both of the kernel's orientations,
one and two batch dimensions, f32 and f64, and sizes whose last row and
column blocks overlap the ones before."""
import sys
from pathlib import Path

import numpy as np
import pytest

import xla
from xla import _core
from xla.backends.cpu import runtime_context, strided_gemm
from xla.backends.cpu.strided_dot_layouts import StridedDotLayouts
from xla.hlo.parser import parse_hlo_module

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "service"))
from pass_test_util import run_pass  # noqa: E402
from gemm_paths import calls_runtime_tiled_gemm, splits_over_the_pool  # noqa: E402

NP = {"f32": np.float32, "f64": np.float64}

# q[b, s, h, d] to heads [b, h, s, d], times k^T [b, h, d, s].
HEADS = """HloModule m

ENTRY %e (q: f32[2,16,4,8], k: f32[2,4,8,16]) -> f32[2,4,16,16] {
  %q = f32[2,16,4,8]{3,2,1,0} parameter(0)
  %k = f32[2,4,8,16]{3,2,1,0} parameter(1)
  %t = f32[2,4,16,8]{3,2,1,0} transpose(%q), dimensions={0,2,1,3}
  ROOT %d = f32[2,4,16,16]{3,2,1,0} dot(%t, %k), lhs_batch_dims={0,1}, lhs_contracting_dims={3}, rhs_batch_dims={0,1}, rhs_contracting_dims={2}
}
"""


def test_a_transposed_lhs_becomes_a_bitcast():
    module, changed = run_pass(StridedDotLayouts(), HEADS)
    assert changed
    assert module.to_text() == """HloModule m

ENTRY %e (q: f32[2,16,4,8], k: f32[2,4,8,16]) -> f32[2,4,16,16] {
  %q = f32[2,16,4,8]{3,2,1,0} parameter(0)
  %k = f32[2,4,8,16]{3,2,1,0} parameter(1)
  %bitcast.1 = f32[2,4,16,8]{3,1,2,0} bitcast(%q)
  ROOT %d = f32[2,4,16,16]{3,2,1,0} dot(%bitcast.1, %k), lhs_batch_dims={0,1}, lhs_contracting_dims={3}, rhs_batch_dims={0,1}, rhs_contracting_dims={2}
}
"""
    assert not StridedDotLayouts().run(module)


# JAX's probabilities-times-values: v^T p^T per head, the result going back
# to [b, s, h * d].
BACK = """HloModule m

ENTRY %e (v: f32[2,16,4,8], p: f32[2,4,16,16]) -> f32[2,16,32] {
  %v = f32[2,16,4,8]{3,2,1,0} parameter(0)
  %p = f32[2,4,16,16]{3,2,1,0} parameter(1)
  %vt = f32[2,4,8,16]{3,2,1,0} transpose(%v), dimensions={0,2,3,1}
  %pt = f32[2,4,16,16]{3,2,1,0} transpose(%p), dimensions={0,1,3,2}
  %o = f32[2,4,8,16]{3,2,1,0} dot(%vt, %pt), lhs_batch_dims={0,1}, lhs_contracting_dims={3}, rhs_batch_dims={0,1}, rhs_contracting_dims={2}
  %ot = f32[2,16,4,8]{3,2,1,0} transpose(%o), dimensions={0,3,1,2}
  ROOT %r = f32[2,16,32]{2,1,0} reshape(%ot)
}
"""


def test_operands_and_the_result_become_bitcasts_the_kernel_walks_swapped():
    module, changed = run_pass(StridedDotLayouts(), BACK)
    assert changed
    # o is stored [b, s, h, d]: r's bytes, so r is a bitcast of o. Its M
    # (d) is the minor dimension of vt's bytes and of o's: the kernel
    # computes o^T = pt^T vt^T.
    assert module.to_text() == """HloModule m

ENTRY %e (v: f32[2,16,4,8], p: f32[2,4,16,16]) -> f32[2,16,32] {
  %v = f32[2,16,4,8]{3,2,1,0} parameter(0)
  %p = f32[2,4,16,16]{3,2,1,0} parameter(1)
  %bitcast.1 = f32[2,4,8,16]{2,1,3,0} bitcast(%v)
  %bitcast.2 = f32[2,4,16,16]{2,3,1,0} bitcast(%p)
  %o = f32[2,4,8,16]{2,1,3,0} dot(%bitcast.1, %bitcast.2), lhs_batch_dims={0,1}, lhs_contracting_dims={3}, rhs_batch_dims={0,1}, rhs_contracting_dims={2}
  ROOT %bitcast.3 = f32[2,16,32]{2,1,0} bitcast(%o)
}
"""
    walk = strided_gemm.plan(module.entry.instruction("o"))
    assert walk.swapped and (walk.m, walk.k, walk.n) == (16, 16, 8)
    assert walk.vector == ([512, 8], 32, 1) and walk.out == ([512, 8], 32, 1)
    assert walk.scalar == ([1024, 256], 16, 1)


def test_an_rhs_the_kernel_cannot_read_as_vectors_stays_a_transpose():
    # k^T from k[b, s, h, d]: its N (s) is not the minor dimension of k's
    # bytes, and the result is not stored with M minor either.
    text = """HloModule m

ENTRY %e (q: f32[2,4,16,8], k: f32[2,16,4,8]) -> f32[2,4,16,16] {
  %q = f32[2,4,16,8]{3,2,1,0} parameter(0)
  %k = f32[2,16,4,8]{3,2,1,0} parameter(1)
  %t = f32[2,4,8,16]{3,2,1,0} transpose(%k), dimensions={0,2,3,1}
  ROOT %d = f32[2,4,16,16]{3,2,1,0} dot(%q, %t), lhs_batch_dims={0,1}, lhs_contracting_dims={3}, rhs_batch_dims={0,1}, rhs_contracting_dims={2}
}
"""
    module, changed = run_pass(StridedDotLayouts(), text)
    assert not changed
    assert "transpose(%k)" in module.to_text()


def test_unbatched_and_integer_dots_are_left_to_dot_operand_layouts():
    text = """HloModule m

ENTRY %e (a: f32[64,48], b: s32[2,8,6], c: s32[2,8,5]) -> (f32[48,48], s32[2,6,5]) {
  %a = f32[64,48]{1,0} parameter(0)
  %t = f32[48,64]{1,0} transpose(%a), dimensions={1,0}
  %d = f32[48,48]{1,0} dot(%t, %a), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %b = s32[2,8,6]{2,1,0} parameter(1)
  %c = s32[2,8,5]{2,1,0} parameter(2)
  %bt = s32[2,6,8]{2,1,0} transpose(%b), dimensions={0,2,1}
  %e = s32[2,6,5]{2,1,0} dot(%bt, %c), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}
  ROOT %r = (f32[48,48]{1,0}, s32[2,6,5]{2,1,0}) tuple(%d, %e)
}
"""
    _, changed = run_pass(StridedDotLayouts(), text)
    assert not changed


def _attention_like(b, s, h, d, et):
    """Scores of heads sliced out of [b, s, h * d] projections, then
    probabilities times values back to [b, s, h * d], as JAX writes them."""
    return f"""HloModule m
ENTRY e {{
  q = {et}[{b},{s},{h * d}] parameter(0)
  k = {et}[{b},{s},{h * d}] parameter(1)
  v = {et}[{b},{s},{h * d}] parameter(2)
  q4 = {et}[{b},{s},{h},{d}] reshape(q)
  k4 = {et}[{b},{s},{h},{d}] reshape(k)
  v4 = {et}[{b},{s},{h},{d}] reshape(v)
  scores = {et}[{b},{h},{s},{s}] dot(q4, k4), lhs_batch_dims={{0,2}}, lhs_contracting_dims={{3}}, rhs_batch_dims={{0,2}}, rhs_contracting_dims={{3}}
  e = {et}[{b},{h},{s},{s}] exponential(scores)
  o = {et}[{b},{h},{d},{s}] dot(v4, e), lhs_batch_dims={{0,2}}, lhs_contracting_dims={{1}}, rhs_batch_dims={{0,1}}, rhs_contracting_dims={{3}}
  ot = {et}[{b},{s},{h},{d}] transpose(o), dimensions={{0,3,1,2}}
  ROOT r = {et}[{b},{s},{h * d}] reshape(ot)
}}
"""


@pytest.mark.parametrize("et", ["f32", "f64"])
@pytest.mark.parametrize("b, s, h, d", [(2, 16, 4, 8), (4, 128, 8, 32), (1, 37, 3, 20),
                                        (3, 9, 2, 5), (2, 53, 2, 48)])
def test_attention_heads_run_in_place_with_numpys_values(b, s, h, d, et, tiled_gemm_path):
    exe = xla.compile(parse_hlo_module(_attention_like(b, s, h, d, et)), "cpu")
    ops = [i.opcode for i in exe.module.entry.instructions]
    # The two dots, the exponentials' kernel and bitcasts: the head
    # transposes of q and v and the result's way back are bitcasts (k's
    # is the one copy left: its s is not minor in k's bytes).
    assert ops.count("dot") == 2 and "transpose" not in ops
    assert ops.count("fusion") + ops.count("exponential") == 2, ops
    assert f"__xla_cpu_matmul_{et}" not in exe.ir_text
    rng = np.random.default_rng(b * s * h * d)
    q, k, v = (rng.standard_normal((b, s, h * d)).astype(NP[et]) * 0.3 for _ in range(3))
    got = np.asarray(exe.execute(q, k, v))
    q4, k4, v4 = (x.astype(np.float64).reshape(b, s, h, d) for x in (q, k, v))
    e = np.exp(np.einsum("bqhd,bkhd->bhqk", q4, k4))
    want = np.einsum("bhqk,bkhd->bqhd", e, v4).reshape(b, s, h * d)
    tol = 1e-4 if et == "f32" else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.abs(want).max())


@pytest.mark.parametrize("batch, m, k, n", [((6,), 37, 19, 53), ((2, 3), 4, 1, 4),
                                            ((32,), 128, 32, 128), ((5,), 130, 7, 17)])
def test_row_major_batched_products_are_tiled_kernels(batch, m, k, n, tiled_gemm_path):
    # (32,) x 128 x 32 x 128 (2^24 multiply-adds) spreads its row blocks
    # over the pool; each element is computed by the same instructions on
    # whichever thread, so the bits are the same at 1, 2 and 3 threads.
    nb = len(batch)
    bd = ",".join(map(str, range(nb)))
    s = lambda d: ",".join(map(str, d))  # noqa: E731
    text = (f"HloModule m\nENTRY e {{\n  a = f32[{s(batch + (m, k))}] parameter(0)\n"
            f"  b = f32[{s(batch + (k, n))}] parameter(1)\n"
            f"  ROOT d = f32[{s(batch + (m, n))}] dot(a, b), lhs_batch_dims={{{bd}}}, "
            f"rhs_batch_dims={{{bd}}}, lhs_contracting_dims={{{nb + 1}}}, "
            f"rhs_contracting_dims={{{nb}}}\n}}\n")
    exe = xla.compile(parse_hlo_module(text), "cpu")
    assert "__xla_cpu_matmul_f32" not in exe.ir_text
    assert calls_runtime_tiled_gemm(exe) == (tiled_gemm_path == "runtime" and k > 1)
    assert splits_over_the_pool(exe) == (np.prod(batch) * m * k * n >= 1 << 22)
    rng = np.random.default_rng(m * k * n)
    a = rng.standard_normal(batch + (m, k)).astype(np.float32)
    b = rng.standard_normal(batch + (k, n)).astype(np.float32)
    want = a.astype(np.float64) @ b.astype(np.float64)
    results = []
    try:
        for threads in (1, 2, 3):
            _core.set_cpu_runtime_num_threads(threads)
            got = exe.execute(a, b)
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * np.sqrt(k))
            results.append(np.asarray(got).tobytes())
    finally:
        _core.set_cpu_runtime_num_threads(0)
    assert len(set(results)) == 1


@pytest.mark.parametrize("et", ["f32", "f64"])
def test_long_attention_heads_run_in_place_through_the_runtimes_blocked_gemm(et):
    # 256 tokens per head of 64: products of 256 x 64 x 256 and 64 x 256 x
    # 256 multiply-adds, beyond the tiled kernel's limits. The JIT's runtime
    # computes them with its blocked GEMM on the operands in place (the walk
    # marked blocked, its second-to-last element; the last is the vector
    # operand's column stride): the bitcasts of short heads and k's too (its
    # head read transposed, column stride h * d), only the exponentials'
    # kernel left, no matmul call, the same bits at 1, 2 and 3 threads.
    b, s, h, d = 1, 256, 4, 64
    exe = xla.compile(parse_hlo_module(_attention_like(b, s, h, d, et)), "cpu")
    ops = [i.opcode for i in exe.module.entry.instructions]
    assert ops.count("dot") == 2 and "transpose" not in ops
    assert ops.count("fusion") + ops.count("exponential") == 1, ops
    assert f"__xla_cpu_matmul_{et}" not in exe.ir_text
    walks = sorted(line.rstrip() for line in exe.ir_text.splitlines()
                   if line.lstrip().startswith("@") and "x i64] [" in line)
    assert len(walks) == 2, walks
    assert [w.endswith(f"i64 1, i64 {tail}], align 8") for w in walks
            for tail in (1, h * d)].count(True) == 2, walks
    rng = np.random.default_rng(7)
    q, k, v = (rng.standard_normal((b, s, h * d)).astype(NP[et]) * 0.3 for _ in range(3))
    q4, k4, v4 = (x.astype(np.float64).reshape(b, s, h, d) for x in (q, k, v))
    e = np.exp(np.einsum("bqhd,bkhd->bhqk", q4, k4))
    want = np.einsum("bhqk,bkhd->bqhd", e, v4).reshape(b, s, h * d)
    tol = 1e-4 if et == "f32" else 1e-12
    results = []
    try:
        for threads in (1, 2, 3):
            _core.set_cpu_runtime_num_threads(threads)
            got = np.asarray(exe.execute(q, k, v))
            np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.abs(want).max())
            results.append(got.tobytes())
    finally:
        _core.set_cpu_runtime_num_threads(0)
    assert len(set(results)) == 1


LONG_HEADS = HEADS.replace("f32[2,16,4,8]", "f32[1,256,4,64]").replace(
    "f32[2,4,8,16]", "f32[1,4,64,256]").replace("f32[2,4,16,8]", "f32[1,4,256,64]").replace(
    "f32[2,4,16,16]", "f32[1,4,256,256]")


def test_outside_a_compilation_plans_are_the_jits():
    # hlo_opt --platform=cpu runs the passes alone: they plan as the JIT
    # compiles (the long heads' transpose a bitcast for the blocked walk);
    # where the runtime has no such walk (objects), the transpose stays.
    module, changed = run_pass(StridedDotLayouts(), LONG_HEADS)
    assert changed
    d = module.entry.root_instruction
    assert d.operands[0].opcode == "bitcast" and strided_gemm.plan(d).blocked
    with runtime_context.compiling_with(()):
        _, changed = run_pass(StridedDotLayouts(), LONG_HEADS)
    assert not changed


def test_long_attention_heads_without_the_runtime_keep_their_copies(llvm_tiled_gemm):
    # Objects compiled ahead of time have no blocked walk: such products go
    # to the matmul, from copies of the transposed heads.
    exe = xla.compile(parse_hlo_module(_attention_like(1, 256, 4, 64, "f32")), "cpu")
    assert exe.ir_text.count("call void @\"__xla_cpu_matmul_f32\"") == 2
    ops = [i.opcode for i in exe.module.entry.instructions]
    # q's and k's heads, v's and the result's way back: four copy kernels.
    assert ops.count("dot") == 2 and ops.count("fusion") == 4, ops


def test_products_over_the_kernels_limit_still_call_the_runtime():
    # 256 x 256 x 256 per product: more than MAX_TILED_MACS.
    text = """HloModule m
ENTRY e {
  a = f32[2,256,256] parameter(0)
  b = f32[2,256,256] parameter(1)
  ROOT d = f32[2,256,256] dot(a, b), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}
}
"""
    exe = xla.compile(parse_hlo_module(text), "cpu")
    assert "__xla_cpu_matmul_f32" in exe.ir_text


@pytest.mark.parametrize("et", ["f32", "f64"])
def test_an_lhs_stored_transposed_is_read_with_its_strides(et, tiled_gemm_path):
    # a[b, k, m] contracted over k: the kernel reads lhs[i, p] 37 elements
    # apart along p, in place (no copy kernel, no runtime matmul).
    text = f"""HloModule m
ENTRY e {{
  a = {et}[4,19,37] parameter(0)
  b = {et}[4,19,53] parameter(1)
  ROOT d = {et}[4,37,53] dot(a, b), lhs_batch_dims={{0}}, rhs_batch_dims={{0}}, lhs_contracting_dims={{1}}, rhs_contracting_dims={{1}}
}}
"""
    exe = xla.compile(parse_hlo_module(text), "cpu")
    ops = [i.opcode for i in exe.module.entry.instructions]
    assert "fusion" not in ops and "transpose" not in ops, ops
    assert f"__xla_cpu_matmul_{et}" not in exe.ir_text
    rng = np.random.default_rng(7)
    a = rng.standard_normal((4, 19, 37)).astype(NP[et])
    b = rng.standard_normal((4, 19, 53)).astype(NP[et])
    want = np.swapaxes(a.astype(np.float64), 1, 2) @ b.astype(np.float64)
    tol = 1e-5 if et == "f32" else 1e-12
    np.testing.assert_allclose(exe.execute(a, b), want, rtol=tol, atol=tol * np.sqrt(19))


def test_dot_operand_layouts_leaves_the_kernels_dots_alone():
    # q's head transpose is a bitcast only the kernel reads (its batch
    # dimensions are not major); k^T stays a copy for it. Turning k^T into
    # the runtime's transposed bitcast too would leave a dot neither the
    # kernel nor the runtime takes (the generator's loops).
    text = """HloModule m
ENTRY e {
  q = f32[2,16,4,8] parameter(0)
  k = f32[2,4,16,8] parameter(1)
  qt = f32[2,4,16,8] transpose(q), dimensions={0,2,1,3}
  ROOT d = f32[2,4,16,16] dot(qt, k), lhs_batch_dims={0,1}, lhs_contracting_dims={3}, rhs_batch_dims={0,1}, rhs_contracting_dims={3}
}
"""
    exe = xla.compile(parse_hlo_module(text), "cpu")
    dot = exe.module.entry.root_instruction
    assert dot.opcode == "dot" and dot.operands[0].opcode == "bitcast"
    assert strided_gemm.plan(dot) is not None
    rng = np.random.default_rng(3)
    q = rng.standard_normal((2, 16, 4, 8)).astype(np.float32)
    k = rng.standard_normal((2, 4, 16, 8)).astype(np.float32)
    want = np.einsum("bshd,bhtd->bhst", q.astype(np.float64), k.astype(np.float64))
    np.testing.assert_allclose(exe.execute(q, k), want, rtol=1e-5, atol=1e-5)


def test_transposes_the_runtime_reads_in_place_are_left_to_it():
    # Both operands are transposes of the two matrix dimensions: the
    # runtime's matmul reads both in place (dot-operand-layouts), no copy;
    # the kernel could take only the lhs's (the rhs's N is not minor).
    text = """HloModule m

ENTRY %e (a: f32[3,64,48], b: f32[3,40,64]) -> f32[3,48,40] {
  %a = f32[3,64,48]{2,1,0} parameter(0)
  %b = f32[3,40,64]{2,1,0} parameter(1)
  %at = f32[3,48,64]{2,1,0} transpose(%a), dimensions={0,2,1}
  %bt = f32[3,64,40]{2,1,0} transpose(%b), dimensions={0,2,1}
  ROOT %d = f32[3,48,40]{2,1,0} dot(%at, %bt), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}
}
"""
    _, changed = run_pass(StridedDotLayouts(), text)
    assert not changed
    exe = xla.compile(parse_hlo_module(text), "cpu")
    assert "__xla_cpu_matmul_f32" in exe.ir_text
    assert "fusion" not in [i.opcode for i in exe.module.entry.instructions]
