"""The building blocks of an NVPTX kernel, shared by the kernel emitters
(``kernel_emitter.py``, ``split_reduction.py``): ``Kernel`` (an LLVM module
with one ``ptx_kernel`` function taking one pointer per buffer slice),
``KernelThunk`` (one launch of it), the grid-stride loop every kernel runs,
and the finishing step (math renamed to libdevice's, anything NVPTX cannot
lower refused with the op named).
"""
import re
from dataclasses import dataclass

from llvmlite import ir

from xla.backends.cpu.kernels import Slice
from xla.backends.cpu.loop_emitter import I64, i64
from xla.backends.gpu.nvptx import DATA_LAYOUT, TRIPLE
from xla.errors import UnimplementedError

PTR = ir.PointerType()
I32 = ir.IntType(32)
VOID = ir.VoidType()

# LLVM functions the generated code may call that NVPTX lowers itself, and
# libdevice's (linked in by nvptx.compile_ptx).
_NVPTX_OK = re.compile(r"^__nv_[a-z0-9]+$|^llvm\.(nvvm\.|fmuladd|fma|fabs|copysign|sqrt|floor|ceil|trunc|rint|"
                       r"round|roundeven|nearbyint|minnum|maxnum|minimum|maximum|ctpop|ctlz|cttz|"
                       r"abs|smax|smin|umax|umin|fpto[su]i\.sat|bswap|bitreverse|memcpy|memset|"
                       r"lifetime|assume|experimental\.noalias)")



@dataclass
class KernelThunk:
    """One launch: the kernel's name and LLVM IR, the (allocation, offset)
    of each pointer argument (a scratch allocation's key is ``("scratch", name)``), and
    how many elements its grid-stride loop runs over."""
    name: str
    ir_text: str
    slices: list
    elements: int
    instruction: str
    scratch: dict = None   # scratch allocation key -> bytes (allocated per execution)
    scalars: tuple = ()    # integers passed after the pointers (as pointer-sized values)
    persistent: dict = None   # state key -> bytes kept across executions (zeroed when loaded)
    block: int = None      # the block size the kernel needs (None: any; launchers choose)


class Kernel:
    """One NVPTX kernel under construction (the element generators' ``kernel``)."""

    def __init__(self, name, keys, root):
        self.root = root
        self.module = ir.Module(name=name)
        self.module.triple = TRIPLE
        self.module.data_layout = DATA_LAYOUT
        fn = ir.Function(self.module, ir.FunctionType(VOID, [PTR] * len(keys)), name)
        fn.calling_convention = "ptx_kernel"
        self.function = fn
        self.keys = list(keys)
        self.ptrs = dict(zip(keys, fn.args))
        self.alloca_block = fn.append_basic_block("allocas")
        self.alloca_builder = ir.IRBuilder(self.alloca_block)
        self.start_block = fn.append_basic_block("start")
        self.b = ir.IRBuilder(self.start_block)

    def alloca(self, typ, name=""):
        return self.alloca_builder.alloca(typ, name=name)

    def pointer(self, slice_):
        return self.ptrs[slice_.key]

    def sreg(self, name):
        fn = self.module.globals.get(f"llvm.nvvm.read.ptx.sreg.{name}")
        if fn is None:
            fn = ir.Function(self.module, ir.FunctionType(I32, []), f"llvm.nvvm.read.ptx.sreg.{name}")
        return self.b.zext(self.b.call(fn, []), I64)



def unsupported(h, why=None):
    return UnimplementedError(f"the gpu backend does not support {h.opcode}"
                              + (f" ({why})" if why else "") + f" (instruction {h.name})")


def reads(h, assignment):
    """The buffer slices ``h``'s kernel reads: its operands' (for a fusion,
    every operand of the fusion), each array leaf."""
    slices = []
    for o in h.operands:
        for index, s in o.shape.leaves():
            if s.is_array and assignment.has_buffers(o):
                slices.append(Slice(assignment.buffer(o, index)))
    return slices


LAUNCH_BLOCK = 256   # a launch runs at most ceil(n / 256) blocks of 256 threads (or fewer
                     # threads in all: the emulator's blocks are 64 wide, AOT caps the grid)


def max_threads(n):
    """The most threads any launcher starts for a grid-stride loop over ``n``
    (what per-thread scratch is sized for)."""
    return max(1, -(-n // LAUNCH_BLOCK)) * LAUNCH_BLOCK


def stride_loop(kernel, n, body, start, stride, name="i"):
    """``for (i = start; i < n; i += stride) body(builder, i)`` in
    ``kernel``, then its return."""
    b = kernel.b
    entry = b.block
    header = b.append_basic_block("loop.header")
    loop = b.append_basic_block("loop.body")
    done = b.append_basic_block("loop.exit")
    b.branch(header)
    b.position_at_end(header)
    i = b.phi(I64, name=name)
    i.add_incoming(start, entry)
    b.cbranch(b.icmp_unsigned("<", i, i64(n)), loop, done)
    b.position_at_end(loop)
    body(b, i)
    nxt = b.add(i, stride, name=f"{name}.next")
    i.add_incoming(nxt, b.block)
    b.branch(header)
    b.position_at_end(done)
    b.ret_void()
    kernel.alloca_builder.branch(kernel.start_block)


def grid_stride_loop(kernel, n, body):
    """``for (i = ctaid.x * ntid.x + tid.x; i < n; i += nctaid.x * ntid.x)
    body(builder, i)`` in ``kernel``, then its return."""
    b = kernel.b
    start = b.add(b.mul(kernel.sreg("ctaid.x"), kernel.sreg("ntid.x")), kernel.sreg("tid.x"))
    stride_loop(kernel, n, body, start, b.mul(kernel.sreg("nctaid.x"), kernel.sreg("ntid.x")))


def finish_kernel(kernel, h, n, body, loop=None):
    """The kernel's text: a grid-stride loop over ``n`` (or ``loop(kernel,
    n, body)``) running ``body``, math renamed to libdevice's; raises naming
    ``h`` when it needs a function NVPTX cannot lower."""
    try:
        (loop or grid_stride_loop)(kernel, n, body)
    except UnimplementedError as e:
        raise UnimplementedError(str(e).replace("the cpu backend", "the gpu backend")) from None
    text = to_libdevice(str(kernel.module))
    for fn in re.findall(r"^declare [^@]*@\"?([\w.$]+)\"?\(", text, re.M):
        if not _NVPTX_OK.match(fn):
            raise unsupported(h, f"it needs {fn}, which has no NVPTX lowering here "
                                  "(libdevice is not linked)")
    return text


# Math the shared generators get from LLVM intrinsics or libm, and the
# libdevice functions that compute it on the GPU (``__nv_sinf`` for f32,
# ``__nv_sin`` for f64).
_INTRINSIC_MATH = ("sin", "cos", "tan", "pow", "exp", "exp2", "log", "log2", "log10")
_LIBM_MATH = ("hypot", "atan2", "erf", "erfc", "cbrt", "tan", "log1p", "expm1", "sinh", "cosh",
              "tanh", "atan", "asin", "acos", "asinh", "acosh", "atanh", "lgamma", "tgamma")
_INTRINSIC_RE = re.compile(r'@"?llvm\.(' + "|".join(_INTRINSIC_MATH) + r')\.(f32|f64)"?(?=[(\s,)])')
_LIBM_RE = re.compile(r'@"?(' + "|".join(_LIBM_MATH) + r')(f?)"?(?=\()')


def to_libdevice(text):
    """Calls of LLVM math intrinsics and libm functions renamed to libdevice's."""
    text = _INTRINSIC_RE.sub(lambda m: f"@__nv_{m.group(1)}{'f' if m.group(2) == 'f32' else ''}", text)
    return _LIBM_RE.sub(lambda m: f"@__nv_{m.group(1)}{m.group(2)}", text)
