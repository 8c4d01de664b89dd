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
  ``__syncthreads`` (``llvm.nvvm.barrier0``) or shared memory
  (``addrspace(3)`` globals): each thread of a block is a host thread that
  calls the kernel with a context of its own (its registers, and the
  barrier, which calls back into the scheduler); shared memory becomes a
  module global (blocks run one after another, so one copy serves them
  all). The scheduler lets one thread run at a time, in a fixed order
  (ascending or descending thread index), from one barrier to the next:
  every thread finishes a phase before any starts the next, which is what a
  barrier promises and nothing more. A missing barrier therefore gives a
  wrong result in at least one of the two orders, every time, instead of
  now and then; a barrier that some threads of a block never reach raises.

Any other NVVM intrinsic (shuffles, atomics) is rejected, so a kernel never
runs here with semantics the emulator does not have.
"""
import ctypes
import re
import threading

from xla.errors import InternalError, UnimplementedError

_SREGS = ("tid.x", "ctaid.x", "ntid.x", "nctaid.x")
_SREG_CALL = re.compile(r'call i32 @"?llvm\.nvvm\.read\.ptx\.sreg\.([a-z]+\.[xyz])"?\(\)')
_SREG_DECL = re.compile(r'^declare i32 @"?llvm\.nvvm\.read\.ptx\.sreg\.[a-z.]+"?\(\).*$', re.M)
_BARRIER = "@llvm.nvvm.barrier0"
_LAUNCH = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int32, ctypes.c_int32)
_BARRIER_CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class _Context(ctypes.Structure):
    """What a threaded kernel reads: its special registers, and the barrier."""
    _fields_ = [("tid_x", ctypes.c_int32), ("ctaid_x", ctypes.c_int32),
                ("ntid_x", ctypes.c_int32), ("nctaid_x", ctypes.c_int32),
                ("barrier", ctypes.c_void_p), ("thread", ctypes.c_int64)]


def _unquoted(ir_text):
    """``ir_text`` with NVVM intrinsics' names unquoted (llvmlite quotes
    names with dots: ``@"llvm.nvvm.barrier0"``), so that one spelling is
    matched below."""
    return re.sub(r'@"(llvm\.nvvm\.[\w.]+)"', r"@\1", ir_text)


def needs_threads(ir_text):
    """Whether a kernel needs the threaded emulation (barriers, shared memory)."""
    return _BARRIER in _unquoted(ir_text) or "addrspace(3)" in ir_text


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
    if other:
        raise UnimplementedError(f"the GPU emulator cannot run {sorted(other)[0]} "
                                 "(shuffles and atomics are not emulated)")
    return _SREG_DECL.sub("", text)


def host_ir(ir_text, name, n_args):
    """The host version of kernel ``name``'s module, with its sequential
    launcher (kernels without barriers or shared memory)."""
    if needs_threads(ir_text):
        raise UnimplementedError(f"kernel {name} uses barriers or shared memory: it runs "
                                 "threaded (threaded_host_ir), not sequentially")
    text = _SREG_CALL.sub(lambda m: f"load i32, ptr @__emu_{m.group(1).replace('.', '_')}",
                          _common(ir_text, name))
    globals_ = "".join(f"@__emu_{r.replace('.', '_')} = internal global i32 0\n" for r in _SREGS)
    loads = "".join(
        f"  %a{k}.p = getelementptr ptr, ptr %args, i64 {k}\n  %a{k} = load ptr, ptr %a{k}.p\n"
        for k in range(n_args))
    call_args = ", ".join(f"ptr %a{k}" for k in range(n_args))
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


def threaded_host_ir(ir_text, name):
    """The host version of kernel ``name``'s module for the threaded
    emulation: the kernel takes one more argument, its ``_Context``."""
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
"""
    return text + helpers


class _Phases:
    """Runs a block's threads one at a time, in ``order``, from barrier to
    barrier (see the module docstring). Each thread waits on an event of its
    own, so handing the turn on wakes one thread, not all of them."""

    def __init__(self, order):
        self.order = list(order)
        self.position = {t: k for k, t in enumerate(self.order)}
        self.go = {t: threading.Event() for t in self.order}
        self.lock = threading.Lock()
        self.state = {t: "ready" for t in self.order}   # ready, barrier, done
        self.error = None
        self.go[self.order[0]].set()

    def wait_turn(self, t):
        """Waits until thread t may run; False when the block failed (the
        thread then runs to its end unscheduled, and the launch raises)."""
        self.go[t].wait()
        self.go[t].clear()
        return self.error is None

    def fail(self, error):
        with self.lock:
            self.error = self.error or error
            for event in self.go.values():
                event.set()

    def _advance(self, t):
        """Called holding the lock by thread t, which stops running (at a
        barrier or done): the turn goes to the next ready thread in order,
        or a new phase starts."""
        for u in self.order[self.position[t] + 1:]:
            if self.state[u] == "ready":
                self.go[u].set()
                return
        at_barrier = [u for u in self.order if self.state[u] == "barrier"]
        done = [u for u in self.order if self.state[u] == "done"]
        if at_barrier and done:
            self.error = InternalError(
                f"threads {done[:4]} of a block ended while threads {at_barrier[:4]} wait "
                "at a barrier: a barrier every thread of the block must reach")
            for event in self.go.values():
                event.set()
        elif at_barrier:
            for u in at_barrier:
                self.state[u] = "ready"
            self.go[at_barrier[0]].set()

    def barrier(self, t):
        with self.lock:
            self.state[t] = "barrier"
            self._advance(t)
        self.wait_turn(t)

    def finished(self, t):
        with self.lock:
            self.state[t] = "done"
            self._advance(t)


class ThreadedKernel:
    """A kernel with barriers or shared memory compiled for the host;
    ``launch(pointers, grid, block, reverse=False)`` runs it (see the module
    docstring; ``reverse``: threads in descending order within each phase)."""

    def __init__(self, thunk, opt_level=2):
        from xla.backends.cpu import jit
        self.thunk = thunk
        n_args = len(thunk.slices) + len(thunk.scalars)
        self._module = jit.JitModule(threaded_host_ir(thunk.ir_text, thunk.name),
                                     opt_level=opt_level)
        self._fn = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * (n_args + 1))(
            self._module.address(thunk.name))

    def launch(self, pointers, grid, block, reverse=False):
        for c in range(grid):
            self._run_block(pointers, c, grid, block, reverse)

    def _run_block(self, pointers, c, grid, block, reverse):
        order = list(range(block))[::-1] if reverse else list(range(block))
        phases = _Phases(order)
        callback = _BARRIER_CALLBACK(lambda ctx: phases.barrier(
            ctypes.cast(ctx, ctypes.POINTER(_Context)).contents.thread))
        contexts = [_Context(t, c, block, grid, ctypes.cast(callback, ctypes.c_void_p).value, t)
                    for t in range(block)]
        def thread(t):
            try:
                if not phases.wait_turn(t):
                    return
                self._fn(*pointers, ctypes.addressof(contexts[t]))
            except BaseException as e:   # reported by the launching thread
                phases.fail(e)
                return
            phases.finished(t)
        threads = [threading.Thread(target=thread, args=(t,), daemon=True) for t in range(block)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        if phases.error is not None:
            raise phases.error


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

    def launch(self, pointers, grid, block):
        if self._threaded is not None:
            self._threaded.launch(pointers, grid, block)
            return
        args = (ctypes.c_void_p * max(1, len(pointers)))(*pointers)
        self._launch(ctypes.addressof(args), grid, block)
