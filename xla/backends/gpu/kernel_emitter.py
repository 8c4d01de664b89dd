"""NVPTX kernels for a scheduled, buffer-assigned module: one kernel per
instruction of the entry computation that computes a buffer (a fusion, an
elementwise op, data movement, a reduce or dot), and the launch sequence.

Each kernel is an LLVM module of its own for ``nvptx64-nvidia-cuda``:
``ptx_kernel void NAME(ptr %slice0, ..., ptr %sliceK)``, one pointer per
distinct buffer slice it reads or writes, computing its output elements in a
grid-stride loop::

    for (i = ctaid.x * ntid.x + tid.x; i < N; i += nctaid.x * ntid.x)
        index = the output's logical index of physical offset i
        out[k][i] = value of output k at index         (every output of a fusion)

The values come from the element generators the CPU backend uses
(``xla/backends/cpu/element_generator.py``, ``elemental_ir_emitter.py``, one
row per opcode): operands with buffers are loaded at their layout's offset,
fused instructions are computed from their operands, and reduce and dot
loop over their contracted elements per output element. Special registers
are read with ``llvm.nvvm.read.ptx.sreg.*`` and nothing else is
target-specific, which is what lets the emulator (``emulator.py``) run the
same IR on the host.

A plain matrix product (``gemm.py``) is a ``GemmThunk``: cuBLAS on a
GPU, NumPy on the emulator.

Control flow runs on the host (``WhileThunk``, ``ConditionalThunk``; a call
is inlined): the condition's pred and the selector are read back from the
device, and buffers move between a loop's state and its body's results by
device-to-device copies (``CopyThunk``), as the CPU backend's control flow
does. What has no kernel here raises UnimplementedError naming the op and
"gpu": ops the CPU runs through its runtime (sort, custom-call, fft, rng,
linear algebra, collectives), and math
outside the list libdevice covers here (``to_libdevice``: the generators'
``llvm.sin`` and libm calls become libdevice's ``__nv_sinf`` and friends,
linked in when PTX is made; the emulator maps them back to the host's libm).
"""
import re
from dataclasses import dataclass

from llvmlite import ir

from xla.backends.cpu import loop_emitter as le
from xla.backends.cpu.element_generator import GENERATORS, ElementGenerator
from xla.backends.cpu.ir_emitter import NO_CODE, ModuleEmitter
from xla.backends.cpu.kernels import Slice
from xla.backends.cpu.llvm_types import store_element
from xla.backends.cpu.loop_emitter import I64, i64
from xla.backends.gpu.nvptx import DATA_LAYOUT, TRIPLE
from xla.errors import UnimplementedError
from xla.hlo.opcodes import ELEMENTWISE

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


class _Emitter:
    """What the shared element generators ask of an emitter."""
    constant_global = ModuleEmitter.constant_global
    unique = ModuleEmitter.unique
    emit_scalar_computation = ModuleEmitter.emit_scalar_computation

    def __init__(self, module, assignment):
        self.module = module
        self.assignment = assignment
        self._globals = {}
        self._names = set()
        self.llmod = None


class _Kernel:
    """One NVPTX kernel under construction (the element generators' ``kernel``)."""

    def __init__(self, name, keys, root):
        self.root = root
        self.module = ir.Module(name=name)
        self.module.triple = TRIPLE
        self.module.data_layout = DATA_LAYOUT
        fn = ir.Function(self.module, ir.FunctionType(VOID, [PTR] * len(keys)), name)
        fn.calling_convention = "ptx_kernel"
        self.function = fn
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


def _unsupported(h, why=None):
    return UnimplementedError(f"the gpu backend does not support {h.opcode}"
                              + (f" ({why})" if why else "") + f" (instruction {h.name})")


def _outputs(h):
    """[(shape index, output shape, instruction computing it)] of ``h``."""
    if not h.shape.is_tuple:
        return [((), h.shape, h.attrs["calls"].root_instruction if h.opcode == "fusion" else h)]
    if h.opcode != "fusion" or h.attrs["calls"].root_instruction.opcode != "tuple":
        raise _unsupported(h, "a tuple result")
    root = h.attrs["calls"].root_instruction
    outs = [((k,), s, root.operands[k]) for k, s in enumerate(h.shape.tuple_shapes)]
    if any(not s.is_array for _, s, _ in outs):
        raise _unsupported(h, "a multi-output fusion with a tuple output")
    return outs


def _output_groups(h, assignment):
    """``h``'s outputs grouped by shape: one kernel per group (a group's
    outputs share the loop over their elements; values two groups share are
    computed by both). Separate kernels are only correct when no output is
    written over memory an operand is read from."""
    groups = {}
    for out in _outputs(h):
        groups.setdefault(tuple(out[1].dimensions), []).append(out)
    groups = list(groups.values())
    if len(groups) > 1:
        reads = {s.key for s in _reads(h, assignment)}
        for index, _, _ in _outputs(h):
            if Slice(assignment.buffer(h, index)).key in reads:
                raise _unsupported(h, "a multi-output fusion whose outputs differ in shape "
                                      "and overwrite an operand")
    return groups


def _reads(h, assignment):
    """The buffer slices ``h``'s kernel reads: its operands' (for a fusion,
    every operand of the fusion), each array leaf."""
    slices = []
    for o in h.operands:
        for index, s in o.shape.leaves():
            if s.is_array and assignment.has_buffers(o):
                slices.append(Slice(assignment.buffer(o, index)))
    return slices


def grid_stride_loop(kernel, n, body):
    """``for (i = ctaid.x * ntid.x + tid.x; i < n; i += nctaid.x * ntid.x)
    body(builder, i)`` in ``kernel``, then its return."""
    b = kernel.b
    start = b.add(b.mul(kernel.sreg("ctaid.x"), kernel.sreg("ntid.x")), kernel.sreg("tid.x"))
    stride = b.mul(kernel.sreg("nctaid.x"), kernel.sreg("ntid.x"))
    entry = b.block
    header = b.append_basic_block("loop.header")
    loop = b.append_basic_block("loop.body")
    done = b.append_basic_block("loop.exit")
    b.branch(header)
    b.position_at_end(header)
    i = b.phi(I64, name="i")
    i.add_incoming(start, entry)
    b.cbranch(b.icmp_unsigned("<", i, i64(n)), loop, done)
    b.position_at_end(loop)
    body(b, i)
    nxt = b.add(i, stride, name="i.next")
    i.add_incoming(nxt, b.block)
    b.branch(header)
    b.position_at_end(done)
    b.ret_void()
    kernel.alloca_builder.branch(kernel.start_block)


def finish_kernel(kernel, h, n, body):
    """The kernel's text: a grid-stride loop over ``n`` running ``body``,
    math renamed to libdevice's; raises naming ``h`` when it needs a
    function NVPTX cannot lower."""
    try:
        grid_stride_loop(kernel, n, body)
    except UnimplementedError as e:
        raise UnimplementedError(str(e).replace("the cpu backend", "the gpu backend")) from None
    text = to_libdevice(str(kernel.module))
    for fn in re.findall(r"^declare [^@]*@\"?([\w.$]+)\"?\(", text, re.M):
        if not _NVPTX_OK.match(fn):
            raise _unsupported(h, f"it needs {fn}, which has no NVPTX lowering here "
                                  "(libdevice is not linked)")
    return text


def emit_kernel(emitter, h, name, outputs=None):
    """The KernelThunk computing ``h``'s buffer(s) (``outputs``: those of
    ``_outputs(h)`` to compute, all of the same shape; default all)."""
    op = h.opcode
    if op == "fusion":
        kind = h.attrs.get("kind")
        if str(kind) not in ("kLoop", "kInput"):
            raise _unsupported(h, f"fusion kind {kind}")
    elif op not in ELEMENTWISE and op not in GENERATORS:
        raise _unsupported(h)
    if op == "map":
        raise _unsupported(h)
    assignment = emitter.assignment
    outputs = outputs or _outputs(h)
    if len({tuple(s.dimensions) for _, s, _ in outputs}) != 1:
        raise _unsupported(h, "one kernel for outputs of different shapes")
    out_slices = [Slice(assignment.buffer(h, index)) for index, _, _ in outputs]
    slices = out_slices + _reads(h, assignment)
    keys = list(dict.fromkeys(s.key for s in slices))
    kernel = _Kernel(name, keys, h)
    g = ElementGenerator(emitter, kernel, fusion=h if op == "fusion" else None)
    shape = outputs[0][1]
    n = shape.num_elements()

    def body(b, i):
        index = le.delinearize(b, i, list(shape.dimensions), le.major_to_minor(shape))
        values = [g.value(value_of, index) for _, _, value_of in outputs]
        for (_, out_shape, _), out_slice, v in zip(outputs, out_slices, values):
            ptr = g.element_pointer(kernel.pointer(out_slice), out_shape, index)
            store_element(b, v, ptr, out_shape.element_type)
    text = finish_kernel(kernel, h, n, body)
    return KernelThunk(name, text, keys, n, h.name)


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


@dataclass
class CopyThunk:
    """Device-to-device copies [(dst, src, bytes)], done as if all at once
    (every source read before any destination is written)."""
    copies: list


@dataclass
class WhileThunk:
    """``init``; then: ``condition``, read the pred at ``pred``, stop if
    false, ``body``, ``carry`` (the body's result into the loop state)."""
    init: CopyThunk
    condition: list
    pred: tuple
    body: list
    carry: CopyThunk


@dataclass
class ConditionalThunk:
    """Reads the selector at ``selector`` (a pred, or an index clamped into
    range as XLA does: out of range is the last branch), then runs that
    branch's thunks: copy in, its computation, copy out."""
    selector: tuple
    selector_dtype: object
    branches: list


def _leaf_buffers(assignment, instr):
    return [(index, b) for index, b in sorted(assignment.buffers_of(instr).items())
            if b.shape.is_array]


def _copies(pairs):
    """CopyThunk for [(dst buffer, src buffer)], skipping a buffer onto itself."""
    out = []
    for dst, src in pairs:
        if dst.allocation is src.allocation and dst.offset == src.offset:
            continue
        out.append(((dst.allocation.index, dst.offset), (src.allocation.index, src.offset),
                    min(dst.size, src.size)))
    return CopyThunk(out)


def split_reduction(emitter, h, name, outputs):
    from xla.backends.gpu.split_reduction import emit_split_reduction
    return emit_split_reduction(emitter, h, name, outputs or _outputs(h))


class _ThunkEmitter:
    def __init__(self, module, assignment):
        from xla.backends.cpu.ir_emitter import load_extensions
        load_extensions()   # the generator rows of the emit_*.py files (gather, convolution...)
        self.emitter = _Emitter(module, assignment)
        self.assignment = assignment
        self.kernels = 0

    def computation(self, comp):
        thunks = []
        for h in comp.instructions:
            thunk = self.instruction(h)
            if thunk is not None:
                thunks.append(thunk)
        return thunks

    def instruction(self, h):
        a = self.assignment
        if h.opcode in NO_CODE:
            if h.opcode == "bitcast" and a.buffer(h) is not a.buffer(h.operands[0]):
                return _copies([(a.buffer(h), a.buffer(h.operands[0]))])
            return None
        if h.opcode == "while":
            body, cond = h.attr("body"), h.attr("condition")
            state = _leaf_buffers(a, h)
            root = cond.root_instruction
            if not (root.shape.is_array and root.shape.rank == 0 and root.shape.element_type.kind == "pred"):
                raise _unsupported(h, "condition root is not a pred scalar")
            pred = a.buffer(root, ())
            return WhileThunk(_copies([(wb, a.buffer(h.operands[0], i)) for i, wb in state]),
                              self.computation(cond), (pred.allocation.index, pred.offset),
                              self.computation(body),
                              _copies([(wb, a.buffer(body.root_instruction, i)) for i, wb in state]))
        if h.opcode in ("conditional", "call"):
            if h.opcode == "call":
                branches, operands, selector = [h.attr("to_apply")], [list(h.operands)], None
            else:
                branches = h.attr("branch_computations") or [h.attr("true_computation"),
                                                             h.attr("false_computation")]
                operands = [[o] for o in h.operands[1:]]
                selector = h.operands[0]
            parts = []
            for comp, ops in zip(branches, operands):
                copy_in = _copies([(pb, a.buffer(o, i)) for p, o in zip(comp.parameters, ops)
                                   for i, pb in _leaf_buffers(a, p)])
                copy_out = _copies([(out, a.buffer(comp.root_instruction, i))
                                    for i, out in _leaf_buffers(a, h)])
                parts.append([copy_in] + self.computation(comp) + [copy_out])
            if selector is None:
                return parts[0]
            sb = a.buffer(selector, ())
            return ConditionalThunk((sb.allocation.index, sb.offset), selector.shape.dtype, parts)
        if h.opcode == "dot":
            from xla.backends.gpu.gemm import gemm_thunk
            gemm = gemm_thunk(h, a)
            if gemm is not None:
                return gemm
        groups = _output_groups(h, a) if h.opcode == "fusion" and h.shape.is_tuple else [None]
        thunks = []
        for k, outputs in enumerate(groups):
            suffix = f"_{k}" if len(groups) > 1 else ""
            self.kernels += 1
            name = f"k{self.kernels - 1}_{_symbol(h.name)}{suffix}"
            split = split_reduction(self.emitter, h, name, outputs)
            thunks.extend(split or [emit_kernel(self.emitter, h, name, outputs)])
        return thunks[0] if len(thunks) == 1 else thunks


def emit_thunks(module, assignment):
    """The thunk sequence of the entry computation, in schedule order:
    kernel launches, copies, and host-side while loops and conditionals."""
    return _ThunkEmitter(module, assignment).computation(module.entry)


def kernel_thunks(thunks):
    """Every KernelThunk in ``thunks``, nested ones included, in order."""
    for t in thunks:
        if isinstance(t, KernelThunk):
            yield t
        elif isinstance(t, list):
            yield from kernel_thunks(t)
        elif isinstance(t, WhileThunk):
            yield from kernel_thunks(t.condition)
            yield from kernel_thunks(t.body)
        elif isinstance(t, ConditionalThunk):
            for branch in t.branches:
                yield from kernel_thunks(branch)


def _symbol(name):
    return re.sub(r"[^A-Za-z0-9_]", "_", name)
