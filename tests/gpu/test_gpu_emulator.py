"""The GPU emulator (``emulator.py`` and the block scheduler,
``xla/backends/gpu/runtime/block_scheduler.h``): what it refuses to run,
barriers that order a block's phases (a missing one is a wrong answer in
one of the two thread orders, every time; one some threads skip raises),
and warp shuffles (a butterfly sum in both orders; one some lanes skip
raises), and atomics (LLVM's atomicrmw, which the host runs as it is: one
thread at a time). Each hand-written kernel also assembles with ptxas."""
import numpy as np
import pytest

import xla
from xla.backends.gpu.emulator import host_ir
from xla.backends.gpu.nvptx import assemble, compile_ptx
from xla.errors import UnimplementedError


@pytest.mark.parametrize("quote", ["", '"'], ids=["plain", "quoted"])
def test_the_emulator_refuses_what_it_cannot_run_faithfully(quote):
    """(llvmlite writes names with dots quoted: both spellings are refused,
    never handed to the host's compiler, which would abort the process.)"""
    name = f"@{quote}llvm.nvvm.match.any.sync.i32{quote}"
    ir_text = f"""target triple = "nvptx64-nvidia-cuda"
define ptx_kernel void @k(ptr %p) {{
  %v = call i32 {name}(i32 -1, i32 1)
  ret void
}}
declare i32 {name}(i32, i32)
"""
    with pytest.raises(UnimplementedError, match="cannot run @llvm.nvvm.match.any.sync.i32"):
        host_ir(ir_text, "k", 1)


# A block reverses its elements through shared memory: each thread stores
# its element, then (after the barrier, if there is one) reads its mirror's.
REVERSE_IN_SHARED_MEMORY = """target triple = "nvptx64-nvidia-cuda"
@smem = internal addrspace(3) global [64 x float] undef
define ptx_kernel void @reverse(ptr %in, ptr %out) {
  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %n = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %c = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %base = mul i32 %c, %n
  %i = add i32 %base, %t
  %i64 = zext i32 %i to i64
  %pin = getelementptr float, ptr %in, i64 %i64
  %v = load float, ptr %pin
  %t64 = zext i32 %t to i64
  %ps = getelementptr [64 x float], ptr addrspace(3) @smem, i64 0, i64 %t64
  store float %v, ptr addrspace(3) %ps
  BARRIER
  %last = sub i32 %n, 1
  %r = sub i32 %last, %t
  %r64 = zext i32 %r to i64
  %pr = getelementptr [64 x float], ptr addrspace(3) @smem, i64 0, i64 %r64
  %w = load float, ptr addrspace(3) %pr
  %pout = getelementptr float, ptr %out, i64 %i64
  store float %w, ptr %pout
  ret void
}
declare void @llvm.nvvm.barrier0()
declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
"""


def _run_reverse(barrier, reverse):
    from xla.backends.gpu.emulator import ThreadedKernel
    from xla.backends.gpu.kernels import KernelThunk
    text = REVERSE_IN_SHARED_MEMORY.replace(
        "BARRIER", "call void @llvm.nvvm.barrier0()" if barrier else "")
    kernel = ThreadedKernel(KernelThunk("reverse", text, [(0, 0), (1, 0)], 128, "reverse"))
    x = np.arange(128, dtype=np.float32)
    out = np.full(128, np.nan, np.float32)
    kernel.launch([x.ctypes.data, out.ctypes.data], 2, 64, reverse=reverse)
    return out, x.reshape(2, 64)[:, ::-1].reshape(-1)


@pytest.mark.parametrize("reverse", [False, True], ids=["ascending", "descending"])
def test_the_threaded_emulator_keeps_barriers(reverse):
    out, expected = _run_reverse(barrier=True, reverse=reverse)
    np.testing.assert_array_equal(out, expected)
    _, messages = assemble(compile_ptx(REVERSE_IN_SHARED_MEMORY.replace(
        "BARRIER", "call void @llvm.nvvm.barrier0()"), "sm_80"), "sm_80")
    assert messages.strip() == "", messages


@pytest.mark.parametrize("reverse", [False, True], ids=["ascending", "descending"])
def test_a_missing_barrier_is_a_wrong_answer_in_the_emulator(reverse):
    out, expected = _run_reverse(barrier=False, reverse=reverse)
    assert not np.array_equal(out, expected)


def test_a_barrier_some_threads_skip_raises():
    from xla.backends.gpu.emulator import ThreadedKernel
    from xla.backends.gpu.kernels import KernelThunk
    text = """target triple = "nvptx64-nvidia-cuda"
define ptx_kernel void @k(ptr %p) {
entry:
  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %odd = and i32 %t, 1
  %skip = icmp ne i32 %odd, 0
  br i1 %skip, label %done, label %sync
sync:
  call void @llvm.nvvm.barrier0()
  br label %done
done:
  ret void
}
declare void @llvm.nvvm.barrier0()
declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
"""
    kernel = ThreadedKernel(KernelThunk("k", text, [(0, 0)], 8, "k"))
    with pytest.raises(xla.errors.XlaError, match="barrier every thread of the block must reach"):
        kernel.launch([0], 1, 8)


# Each lane adds its value and the other lanes' by a butterfly of shuffles
# (or, with SKIP, lane 7 leaves before the first).
WARP_SUM = """target triple = "nvptx64-nvidia-cuda"
define ptx_kernel void @warp_sum(ptr %out) {
entry:
  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %skip = icmp eq i32 %t, SKIP
  br i1 %skip, label %done, label %sum
sum:
  %v0 = add i32 %t, 1
  %s16 = call i32 @llvm.nvvm.shfl.sync.bfly.i32(i32 -1, i32 %v0, i32 16, i32 31)
  %v1 = add i32 %v0, %s16
  %s8 = call i32 @llvm.nvvm.shfl.sync.bfly.i32(i32 -1, i32 %v1, i32 8, i32 31)
  %v2 = add i32 %v1, %s8
  %s4 = call i32 @llvm.nvvm.shfl.sync.bfly.i32(i32 -1, i32 %v2, i32 4, i32 31)
  %v3 = add i32 %v2, %s4
  %s2 = call i32 @llvm.nvvm.shfl.sync.bfly.i32(i32 -1, i32 %v3, i32 2, i32 31)
  %v4 = add i32 %v3, %s2
  %s1 = call i32 @llvm.nvvm.shfl.sync.bfly.i32(i32 -1, i32 %v4, i32 1, i32 31)
  %v5 = add i32 %v4, %s1
  %t64 = zext i32 %t to i64
  %p = getelementptr i32, ptr %out, i64 %t64
  store i32 %v5, ptr %p
  br label %done
done:
  ret void
}
declare i32 @llvm.nvvm.shfl.sync.bfly.i32(i32, i32, i32, i32)
declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
"""


@pytest.mark.parametrize("reverse", [False, True], ids=["ascending", "descending"])
def test_the_emulator_runs_warp_shuffles(reverse):
    from xla.backends.gpu.emulator import ThreadedKernel
    from xla.backends.gpu.kernels import KernelThunk
    text = WARP_SUM.replace("SKIP", "-1")
    kernel = ThreadedKernel(KernelThunk("warp_sum", text, [(0, 0)], 64, "warp_sum"))
    out = np.zeros(64, np.int32)
    kernel.launch([out.ctypes.data], 1, 64, reverse=reverse)
    np.testing.assert_array_equal(out, [528] * 32 + [1552] * 32)   # 1+...+32, 33+...+64
    _, messages = assemble(compile_ptx(text, "sm_80"), "sm_80")
    assert messages.strip() == "", messages


def test_a_shuffle_some_lanes_skip_raises():
    from xla.backends.gpu.emulator import ThreadedKernel
    from xla.backends.gpu.kernels import KernelThunk
    kernel = ThreadedKernel(KernelThunk("warp_sum", WARP_SUM.replace("SKIP", "7"), [(0, 0)], 32,
                                        "warp_sum"))
    out = np.zeros(32, np.int32)
    with pytest.raises(xla.errors.XlaError, match="a shuffle of the full warp every lane must reach"):
        kernel.launch([out.ctypes.data], 1, 32)


# Every thread adds 1 and its index to two counters with atomics (LLVM's
# atomicrmw, which NVPTX lowers to atom.add), before a barrier or not.
ATOMIC_COUNT = """target triple = "nvptx64-nvidia-cuda"
define ptx_kernel void @count(ptr %counters) {
  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %c = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %n = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %base = mul i32 %c, %n
  %i = add i32 %base, %t
  %old = atomicrmw add ptr %counters, i32 1 monotonic
  %p1 = getelementptr i32, ptr %counters, i64 1
  %old1 = atomicrmw add ptr %p1, i32 %i monotonic
  BARRIER
  ret void
}
declare void @llvm.nvvm.barrier0()
declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
"""


@pytest.mark.parametrize("threaded", [False, True], ids=["sequential", "threaded"])
def test_atomics_run_in_the_emulator(threaded):
    from xla.backends.gpu.emulator import EmulatedKernel
    from xla.backends.gpu.kernels import KernelThunk
    text = ATOMIC_COUNT.replace("BARRIER", "call void @llvm.nvvm.barrier0()" if threaded else "")
    if not threaded:
        text = text.replace("declare void @llvm.nvvm.barrier0()\n", "")
    kernel = EmulatedKernel(KernelThunk("count", text, [(0, 0)], 3 * 64, "count"))
    assert kernel.threaded == threaded
    counters = np.zeros(2, np.int32)
    kernel.launch([counters.ctypes.data], 3, 64)
    np.testing.assert_array_equal(counters, [3 * 64, sum(range(3 * 64))])
    ptx = compile_ptx(text, "sm_80")
    assert "atom" in ptx
    _, messages = assemble(ptx, "sm_80")
    assert messages.strip() == "", messages
