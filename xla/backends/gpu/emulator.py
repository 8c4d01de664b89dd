"""Runs NVPTX kernels on the host: the GPU execution model emulated, for
testing without a GPU (as Numba's CUDA simulator and Triton's interpreter
do).

A kernel's LLVM IR (``kernel_emitter.py``) is lowered to host code:

- the special registers ``tid.x``, ``ctaid.x``, ``ntid.x``, ``nctaid.x``
  (``llvm.nvvm.read.ptx.sreg.*``) become loads of module globals;
- the ``ptx_kernel`` calling convention and the NVPTX triple go; the host's
  come in when llvmlite compiles it;
- a launcher ``__emu_launch(ptr args, i32 grid, i32 block)`` runs every
  thread of every block, one after another, setting the registers first.

Running threads one after another is exact for kernels without barriers,
shuffles, shared memory or atomics, which are the only ones generated today
(grid-stride loops where each output element is computed by one thread).
Any other NVVM intrinsic in a kernel is rejected here, so a kernel that
needs real barrier semantics can never run on the emulator by accident.
"""
import ctypes
import re

from xla.errors import UnimplementedError

_SREGS = ("tid.x", "ctaid.x", "ntid.x", "nctaid.x")
_SREG_CALL = re.compile(r'call i32 @"?llvm\.nvvm\.read\.ptx\.sreg\.([a-z]+\.[xyz])"?\(\)')
_LAUNCH = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int32, ctypes.c_int32)


def host_ir(ir_text, name, n_args):
    """The host version of kernel ``name``'s module, with its launcher."""
    text = re.sub(r'^target (triple|datalayout) = .*$', "", ir_text, flags=re.M)
    text = text.replace(f'define ptx_kernel void @"{name}"(', f'define void @"{name}"(')
    text = text.replace(f"define ptx_kernel void @{name}(", f"define void @{name}(")

    def sreg(m):
        reg = m.group(1)
        if reg not in _SREGS:
            raise UnimplementedError(f"the GPU emulator has no special register %{reg}")
        return f"load i32, ptr @__emu_{reg.replace('.', '_')}"
    text = _SREG_CALL.sub(sreg, text)
    # libdevice's math on the GPU is the host's libm here.
    text = re.sub(r"@__nv_([a-z0-9]+)(?=[(\s])", r"@\1", text)
    text = re.sub(r'^declare i32 @"?llvm\.nvvm\.read\.ptx\.sreg\.[a-z.]+"?\(\).*$', "", text,
                  flags=re.M)
    other = re.findall(r"@llvm\.nvvm\.[\w.]+", text)
    if other:
        raise UnimplementedError(f"the GPU emulator cannot run {sorted(set(other))[0]} "
                                 "(barriers, shuffles, atomics need a threaded emulation)")
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


class EmulatedKernel:
    """A kernel compiled for the host; ``launch(pointers, grid, block)``."""

    def __init__(self, thunk, opt_level=2):
        from xla.backends.cpu import jit
        self.thunk = thunk
        n_args = len(thunk.slices) + len(thunk.scalars)
        self._module = jit.JitModule(host_ir(thunk.ir_text, thunk.name, n_args),
                                     opt_level=opt_level)
        self._launch = _LAUNCH(self._module.address("__emu_launch"))

    def launch(self, pointers, grid, block):
        args = (ctypes.c_void_p * max(1, len(pointers)))(*pointers)
        self._launch(ctypes.addressof(args), grid, block)
