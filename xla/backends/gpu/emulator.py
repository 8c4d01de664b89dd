"""Runs NVPTX kernels on the host: the GPU execution model emulated, for
testing without a GPU (as Numba's CUDA simulator and Triton's interpreter
do).

A kernel's LLVM IR (``kernel_emitter.py``) is lowered to host code: the
``ptx_kernel`` calling convention and the NVPTX triple go (the host's come
in when llvmlite compiles it), libdevice's math becomes the host's libm,
and the special registers ``tid.x``, ``ctaid.x``, ``ntid.x``, ``nctaid.x``
(``llvm.nvvm.read.ptx.sreg.*``) are read from the emulator. Then:

- **Sequential** (``host_ir``), for kernels without barriers or shared
  memory (grid-stride loops where each output element is computed by one
  thread: what the backend generates): the registers are module globals and
  a launcher ``__emu_launch(ptr args, i32 grid, i32 block)`` runs every
  thread of every block in turn. Exact for such kernels.
- **Threaded** (``threaded_host_ir``, ``ThreadedKernel``), for kernels with
  ``__syncthreads`` (``llvm.nvvm.barrier0``), warp shuffles
  (``llvm.nvvm.shfl.sync.{bfly,down,up,idx}.i32``) or shared memory
  (``addrspace(3)`` globals): the kernel takes its thread's context as one
  more argument (its special registers, and the barrier and the shuffle,
  which call into the scheduler), and ``__emu_thread(args, context)`` calls
  it. Shared memory becomes a module global (blocks run one after another,
  so one copy serves them all). The block scheduler
  (``xla/backends/gpu/runtime/block_scheduler.h``, C++, reached through
  ``xla._core``) runs a block's threads as fibers on the calling thread,
  one at a time, in a fixed order (ascending or descending thread index),
  from one synchronization point to the next: every thread finishes a phase
  before any starts the next, which is what a barrier promises and nothing
  more. A missing barrier therefore gives a wrong result in at least one of
  the two orders, every time, instead of now and then; a barrier that some
  threads of a block never reach raises. A shuffle is a rendezvous of the
  32 threads of its warp: when all of them wait at it, each gets the value
  of its source lane (a source outside the warp: its own, as on the GPU); a
  shuffle some lanes of the warp do not reach raises, and only full-warp
  shuffles (member mask of all 32 lanes, width 32) are emulated.

Atomics written as LLVM's ``atomicrmw`` run as they are (one thread runs at
a time either way, so they are atomic). Any other NVVM intrinsic (NVVM's
atomics, votes...) is rejected, so a kernel never runs here with semantics
the emulator does not have.
"""
import ctypes
import re

from xla.errors import InternalError, UnimplementedError

_SREGS = ("tid.x", "ctaid.x", "ntid.x", "nctaid.x")
_SREG_CALL = re.compile(r'call i32 @"?llvm\.nvvm\.read\.ptx\.sreg\.([a-z]+\.[xyz])"?\(\)')
_SREG_DECL = re.compile(r'^declare i32 @"?llvm\.nvvm\.read\.ptx\.sreg\.[a-z.]+"?\(\).*$', re.M)
_BARRIER = "@llvm.nvvm.barrier0"
_SHUFFLE_MODES = ("bfly", "down", "up", "idx")
_SHUFFLE_CALL = re.compile(r"call i32 @llvm\.nvvm\.shfl\.sync\.(bfly|down|up|idx)\.i32\(")
_SHUFFLE_DECL = re.compile(r"^declare i32 @llvm\.nvvm\.shfl\.sync\.[a-z]+\.i32\(.*$", re.M)
_LAUNCH = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int32, ctypes.c_int32)


def _unquoted(ir_text):
    """``ir_text`` with NVVM intrinsics' names unquoted (llvmlite quotes
    names with dots: ``@"llvm.nvvm.barrier0"``), so that one spelling is
    matched below."""
    return re.sub(r'@"(llvm\.nvvm\.[\w.]+)"', r"@\1", ir_text)


def needs_threads(ir_text):
    """Whether a kernel needs the threaded emulation (barriers, warp
    shuffles, shared memory)."""
    text = _unquoted(ir_text)
    return _BARRIER in text or "@llvm.nvvm.shfl.sync." in text or "addrspace(3)" in ir_text


def _common(ir_text, name):
    """The kernel's module for the host: no NVPTX triple or calling
    convention, libm for libdevice, unsupported intrinsics refused."""
    text = re.sub(r'^target (triple|datalayout) = .*$', "", _unquoted(ir_text), flags=re.M)
    text = text.replace(f'define ptx_kernel void @"{name}"(', f'define void @"{name}"(')
    text = text.replace(f"define ptx_kernel void @{name}(", f"define void @{name}(")
    text = re.sub(r"@__nv_([a-z0-9]+)(?=[(\s])", r"@\1", text)
    for m in _SREG_CALL.finditer(text):
        if m.group(1) not in _SREGS:
            raise UnimplementedError(f"the GPU emulator has no special register %{m.group(1)}")
    other = set(re.findall(r"@llvm\.nvvm\.[\w.]+", _SREG_DECL.sub("", _SREG_CALL.sub("", text))))
    other.discard(_BARRIER)
    other -= {f"@llvm.nvvm.shfl.sync.{mode}.i32" for mode in _SHUFFLE_MODES}
    if other:
        raise UnimplementedError(f"the GPU emulator cannot run {sorted(other)[0]} "
                                 "(atomics and other intrinsics are not emulated)")
    return _SREG_DECL.sub("", text)


def _argument_loads(n_args):
    """IR loading the kernel's ``n_args`` pointers from the array ``%args``
    into ``%a0``..., and the call's argument list of them."""
    loads = "".join(
        f"  %a{k}.p = getelementptr ptr, ptr %args, i64 {k}\n  %a{k} = load ptr, ptr %a{k}.p\n"
        for k in range(n_args))
    return loads, ", ".join(f"ptr %a{k}" for k in range(n_args))


def host_ir(ir_text, name, n_args):
    """The host version of kernel ``name``'s module, with its sequential
    launcher (kernels without barriers or shared memory)."""
    if needs_threads(ir_text):
        raise UnimplementedError(f"kernel {name} uses barriers or shared memory: it runs "
                                 "threaded (threaded_host_ir), not sequentially")
    text = _SREG_CALL.sub(lambda m: f"load i32, ptr @__emu_{m.group(1).replace('.', '_')}",
                          _common(ir_text, name))
    globals_ = "".join(f"@__emu_{r.replace('.', '_')} = internal global i32 0\n" for r in _SREGS)
    loads, call_args = _argument_loads(n_args)
    launcher = f"""
define void @__emu_launch(ptr %args, i32 %grid, i32 %block) {{
entry:
{loads}  store i32 %grid, ptr @__emu_nctaid_x
  store i32 %block, ptr @__emu_ntid_x
  br label %blocks
blocks:
  %c = phi i32 [0, %entry], [%c.next, %blocks.end]
  %c.done = icmp sge i32 %c, %grid
  br i1 %c.done, label %exit, label %threads.pre
threads.pre:
  store i32 %c, ptr @__emu_ctaid_x
  br label %threads
threads:
  %t = phi i32 [0, %threads.pre], [%t.next, %thread]
  %t.done = icmp sge i32 %t, %block
  br i1 %t.done, label %blocks.end, label %thread
thread:
  store i32 %t, ptr @__emu_tid_x
  call void @"{name}"({call_args})
  %t.next = add i32 %t, 1
  br label %threads
blocks.end:
  %c.next = add i32 %c, 1
  br label %blocks
exit:
  ret void
}}
"""
    return globals_ + text + launcher


def threaded_host_ir(ir_text, name, n_args):
    """The host version of kernel ``name``'s module for the threaded
    emulation: the kernel takes one more argument, its thread context
    (``ThreadContext`` of block_scheduler.h), and ``__emu_thread(ptr args,
    ptr context)`` calls it with ``n_args`` pointers from ``args``."""
    text = _common(ir_text, name)
    # The kernel's definition gains the context as its last parameter.
    head = re.search(r'define void @"?' + re.escape(name) + r'"?\(', text)
    if head is None:
        raise InternalError(f"kernel {name} not found in its module")
    depth, end = 1, head.end()
    while depth:
        depth += {"(": 1, ")": -1}.get(text[end], 0)
        end += 1
    params = text[head.end():end - 1].strip()
    text = text[:head.end()] + (params + ", " if params else "") + "ptr %__emu_ctx" + text[end - 1:]
    fields = {r: k * 4 for k, r in enumerate(_SREGS)}

    def sreg(m):
        return f"call i32 @__emu_sreg(ptr %__emu_ctx, i64 {fields[m.group(1)]})"
    text = _SREG_CALL.sub(sreg, text)
    text = re.sub(r"call void " + re.escape(_BARRIER) + r"\(\)",
                  "call void @__emu_barrier(ptr %__emu_ctx)", text)
    text = re.sub(r"^declare void " + re.escape(_BARRIER) + r"\(\).*$", "", text, flags=re.M)
    text = _SHUFFLE_CALL.sub(lambda m: f"call i32 @__emu_shfl(ptr %__emu_ctx, i32 "
                                       f"{_SHUFFLE_MODES.index(m.group(1))}, ", text)
    text = _SHUFFLE_DECL.sub("", text)
    # Shared memory: one module global (blocks run one after another).
    text = re.sub(r"addrspacecast \(ptr addrspace\(3\) (@[\w.\"]+) to ptr\)", r"\1", text)
    text = re.sub(r"(%[\w.\"]+) = addrspacecast ptr addrspace\(3\) (%[\w.\"]+) to ptr",
                  r"\1 = getelementptr i8, ptr \2, i64 0", text)
    text = text.replace(" addrspace(3)", "")
    helpers = """
define internal i32 @__emu_sreg(ptr %ctx, i64 %offset) {
  %p = getelementptr i8, ptr %ctx, i64 %offset
  %v = load i32, ptr %p
  ret i32 %v
}

define internal void @__emu_barrier(ptr %ctx) {
  %p = getelementptr i8, ptr %ctx, i64 16
  %f = load ptr, ptr %p
  call void %f(ptr %ctx)
  ret void
}

define internal i32 @__emu_shfl(ptr %ctx, i32 %mode, i32 %mask, i32 %v, i32 %arg, i32 %c) {
  %p = getelementptr i8, ptr %ctx, i64 32
  %f = load ptr, ptr %p
  %r = call i32 %f(ptr %ctx, i32 %mode, i32 %mask, i32 %v, i32 %arg, i32 %c)
  ret i32 %r
}
"""
    loads, call_args = _argument_loads(n_args)
    entry = f"""
define void @__emu_thread(ptr %args, ptr %ctx) {{
{loads}  call void @"{name}"({call_args + ", " if call_args else ""}ptr %ctx)
  ret void
}}
"""
    return text + helpers + entry


class ThreadedKernel:
    """A kernel with barriers, warp shuffles or shared memory compiled for
    the host; ``launch(pointers, grid, block, reverse=False)`` runs it, block
    after block, each block's threads as fibers of the block scheduler
    (``xla/backends/gpu/runtime/block_scheduler.h``; ``reverse``: threads
    in descending order within each phase)."""

    def __init__(self, thunk, opt_level=2):
        from xla.backends.cpu import jit
        self.thunk = thunk
        n_args = len(thunk.slices) + len(thunk.scalars)
        self._module = jit.JitModule(threaded_host_ir(thunk.ir_text, thunk.name, n_args),
                                     opt_level=opt_level)
        self._entry = self._module.address("__emu_thread")

    def launch(self, pointers, grid, block, reverse=False):
        from xla import _core
        args = (ctypes.c_void_p * max(1, len(pointers)))(*pointers)
        for c in range(grid):
            error = _core.gpu_emulator_run_block(self._entry, ctypes.addressof(args), block, c,
                                                 grid, reverse)
            if error:
                raise InternalError(f"kernel {self.thunk.name}, block {c}: {error}")


class EmulatedKernel:
    """A kernel compiled for the host; ``launch(pointers, grid, block)``."""

    def __init__(self, thunk, opt_level=2):
        from xla.backends.cpu import jit
        self.thunk = thunk
        if needs_threads(thunk.ir_text):
            self._threaded = ThreadedKernel(thunk, opt_level)
            return
        self._threaded = None
        n_args = len(thunk.slices) + len(thunk.scalars)
        self._module = jit.JitModule(host_ir(thunk.ir_text, thunk.name, n_args),
                                     opt_level=opt_level)
        self._launch = _LAUNCH(self._module.address("__emu_launch"))

    @property
    def threaded(self):
        return self._threaded is not None

    def launch(self, pointers, grid, block):
        if self._threaded is not None:
            self._threaded.launch(pointers, grid, block)
            return
        args = (ctypes.c_void_p * max(1, len(pointers)))(*pointers)
        self._launch(ctypes.addressof(args), grid, block)
