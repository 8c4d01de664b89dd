"""The LLVM pipeline a kernel compiles with: small kernels (buffers of
``kernels.SMALL_KERNEL_BYTES`` or less) with a shorter one (O1's
simplification, the vectorizers, no loop strength reduction), others with
the whole O<n> pipeline; ``--xla_llvm_disable_expensive_passes`` leaves the
vectorizers out for every kernel. Results are checked against NumPy."""
import re

import numpy as np
import pytest

import xla
from xla import debug_options as d
from xla.backends.cpu import jit, kernel_compiler
from xla.backends.cpu.kernels import SMALL_KERNEL_BYTES, SMALL_KERNEL_LINE, is_small_kernel

# A vector of floats in LLVM IR (what the vectorizers make).
VECTOR = re.compile(r"<\d+ x float>")


def _module(rows, cols):
    """y = tanh(x * w + b) over f32[rows, cols], its row sums and its column
    sums (two kernels or more)."""
    return f"""HloModule m
add {{
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}}
ENTRY main {{
  x = f32[{rows},{cols}] parameter(0)
  w = f32[{rows},{cols}] parameter(1)
  b = f32[{rows},{cols}] parameter(2)
  m = f32[{rows},{cols}] multiply(x, w)
  a = f32[{rows},{cols}] add(m, b)
  y = f32[{rows},{cols}] tanh(a)
  z = f32[] constant(0)
  s = f32[{rows}] reduce(y, z), dimensions={{1}}, to_apply=add
  c = f32[{cols}] reduce(y, z), dimensions={{0}}, to_apply=add
  ROOT t = (f32[{rows},{cols}], f32[{rows}], f32[{cols}]) tuple(y, s, c)
}}
"""


def _run(rows, cols, **flags):
    kernel_compiler.memory_cache.clear()
    rng = np.random.default_rng(0)
    args = [rng.standard_normal((rows, cols)).astype(np.float32) for _ in range(3)]
    with d.override(xla_cpu_compile_workers=0, **flags):
        exe = xla.compile(xla.parse_hlo_module(_module(rows, cols)), "cpu")
    y, s, c = exe.execute(*args)
    want = np.tanh(args[0] * args[1] + args[2])
    np.testing.assert_allclose(y, want, rtol=2e-6, atol=2e-6)
    np.testing.assert_allclose(s, want.sum(axis=1), rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(c, want.sum(axis=0), rtol=1e-5, atol=1e-4)
    return exe


SMALL = (8, 40)      # 4 arrays of 1,280 bytes
LARGE = (256, 512)   # 512 KiB each


def test_sizes_are_on_either_side_of_the_threshold():
    assert 4 * 4 * SMALL[0] * SMALL[1] <= SMALL_KERNEL_BYTES < 4 * LARGE[0] * LARGE[1]


@pytest.mark.parametrize("shape, small", [(SMALL, True), (LARGE, False)])
def test_kernel_text_says_whether_it_is_small(shape, small):
    exe = _run(*shape)
    texts = list(exe.emitted.kernels.values())
    assert len(texts) >= 2
    assert all(is_small_kernel(t) == small for t in texts)
    assert all(t.startswith(SMALL_KERNEL_LINE) == small for t in texts)


def _logged_compiles(monkeypatch):
    calls = []
    compile_objects = jit.compile_objects

    def logged(texts, *args):
        calls.append((texts, args))
        return compile_objects(texts, *args)
    monkeypatch.setattr(jit, "compile_objects", logged)
    return calls


@pytest.mark.parametrize("shape, skip", [(SMALL, kernel_compiler.SMALL_KERNEL_SKIP), (LARGE, 0)])
def test_kernels_compile_with_their_pipeline(monkeypatch, shape, skip):
    calls = _logged_compiles(monkeypatch)
    _run(*shape)
    assert calls
    for batches, (opt_level, _threads, batch_skip) in calls:
        assert opt_level == 3
        assert batch_skip == skip, batch_skip


def test_disable_expensive_passes_applies_to_every_kernel(monkeypatch):
    calls = _logged_compiles(monkeypatch)
    _run(*LARGE, xla_llvm_disable_expensive_passes=True)
    expensive = jit.SKIP_VECTORIZERS | jit.SKIP_LSR | jit.SKIP_FULL_SIMPLIFICATION
    assert calls and all(args[2] == expensive for _, args in calls)


@pytest.mark.parametrize("shape", [SMALL, LARGE])
def test_kernels_are_vectorized_unless_expensive_passes_are_off(shape):
    default = _run(*shape).optimized_ir_text
    cheap = _run(*shape, xla_llvm_disable_expensive_passes=True).optimized_ir_text
    assert VECTOR.search(default), "the kernels' loops are not vectorized"
    assert not VECTOR.search(cheap)


def test_small_kernel_pipeline_vectorizes_like_o3():
    # The short pipeline keeps the vectorizers: the same vector width in
    # the small kernels' optimized IR as O3 gives them.
    exe = _run(*SMALL)
    for text in exe.emitted.kernels.values():
        o3 = set(VECTOR.findall(jit.optimized_ir(text, 3)))
        short = set(VECTOR.findall(jit.optimized_ir(text, 3, kernel_compiler.SMALL_KERNEL_SKIP)))
        assert o3 and short == o3, (o3, short)


def _strided_kernel():
    # Three arrays walked with a stride in an outer loop and a unit stride
    # in the inner one: loop strength reduction rewrites the addressing.
    return """
define void @k(ptr noalias %out, ptr noalias %a, ptr noalias %b, i64 %n) {
entry:
  br label %outer
outer:
  %i = phi i64 [0, %entry], [%i.next, %outer.latch]
  br label %inner
inner:
  %j = phi i64 [0, %outer], [%j.next, %inner]
  %row = mul nsw nuw i64 %i, 43
  %k = add nsw nuw i64 %row, %j
  %pa = getelementptr inbounds float, ptr %a, i64 %k
  %pb = getelementptr inbounds float, ptr %b, i64 %k
  %x = load float, ptr %pa
  %y = load float, ptr %pb
  %z = fadd float %x, %y
  %po = getelementptr inbounds float, ptr %out, i64 %k
  store float %z, ptr %po
  %j.next = add nsw nuw i64 %j, 1
  %j.done = icmp eq i64 %j.next, %n
  br i1 %j.done, label %outer.latch, label %inner
outer.latch:
  %i.next = add nsw nuw i64 %i, 1
  %i.done = icmp eq i64 %i.next, 8
  br i1 %i.done, label %exit, label %outer
exit:
  ret void
}
"""


def test_lsr_is_skipped_for_one_compilation_only():
    # LLVM's -disable-lsr is process-wide: set for a compilation that skips
    # it, and back off after, so the next compilation has it again.
    text = _strided_kernel()
    with_lsr = jit.compile_to_object(text)
    without = jit.compile_to_object(text, 3, jit.SKIP_LSR)
    assert without != with_lsr
    assert jit.compile_to_object(text) == with_lsr
    threads = jit.compile_objects([text, text], 3, 2, jit.SKIP_LSR)
    assert threads == [without, without]
    assert jit.compile_to_object(text) == with_lsr


def test_worker_processes_compile_with_the_skipped_passes():
    text = _strided_kernel()
    pool = kernel_compiler._Pool(1)   # noqa: SLF001 - one worker of the kernel compiler's pool
    try:
        for skip in (0, kernel_compiler.SMALL_KERNEL_SKIP):
            got = pool.submit([text], 3, skip).result(timeout=60)
            assert got == jit.compile_to_object([text], 3, skip)
    finally:
        pool.close()


@pytest.mark.parametrize("flag", [False, True])
def test_results_unchanged(flag):
    for shape in (SMALL, LARGE):
        _run(*shape, xla_llvm_disable_expensive_passes=flag)


def test_optimized_ir_dump_shows_each_kernels_pipeline():
    # The executable's optimized IR (--xla_dump_to's ir-with-opt.ll) is each
    # kernel optimized as it was compiled; for one of the small kernels
    # here the short pipeline's IR differs from O3's.
    exe = _run(*SMALL)
    dump = exe.optimized_ir_text
    differs = 0
    for text in exe.emitted.kernels.values():
        short = jit.optimized_ir(text, 3, kernel_compiler.SMALL_KERNEL_SKIP)
        assert short in dump
        differs += short != jit.optimized_ir(text, 3)
    assert differs
