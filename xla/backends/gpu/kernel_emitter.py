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
GPU, NumPy on the emulator. A sort is a copy into its outputs and a
bitonic network sorting them in place (``sort.py``); row and column
reductions split into partials and a combine (``split_reduction.py``).

Control flow runs on the host (``WhileThunk``, ``ConditionalThunk``; a call
is inlined): the condition's pred and the selector are read back from the
device, and buffers move between a loop's state and its body's results by
device-to-device copies (``CopyThunk``), as the CPU backend's control flow
does. fft is an ``FftThunk`` (``fft.py``): cuFFT on a GPU, NumPy on the emulator.
Collectives are ``CollectiveThunk``s (``collectives.py``), staged through
the host. What has no kernel here raises UnimplementedError naming the op
and "gpu": custom-calls other than TopK and LAPACK's, and math
outside the list libdevice covers here (``to_libdevice``: the generators'
``llvm.sin`` and libm calls become libdevice's ``__nv_sinf`` and friends,
linked in when PTX is made; the emulator maps them back to the host's libm).
"""
import re
from dataclasses import dataclass, field

from xla.backends.cpu import loop_emitter as le
from xla.backends.cpu.element_generator import GENERATORS, ElementGenerator
from xla.backends.cpu.ir_emitter import NO_CODE, ModuleEmitter
from xla.backends.cpu.kernels import Slice
from xla.backends.cpu.llvm_types import store_element
from xla.backends.gpu.collectives import ASYNC_OPCODES, COLLECTIVE_OPCODES, collective_thunk
from xla.backends.gpu.kernels import Kernel, KernelThunk, finish_kernel, reads, unsupported
from xla.backends.gpu.linalg import LAPACK_TARGETS
from xla.backends.gpu.split_reduction import emit_split_reduction
from xla.backends.gpu.transpose import emit_tiled_transpose, transpose_source
from xla.hlo.opcodes import ELEMENTWISE


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



class _Leaf:
    """Element ``k`` of a variadic reduce's (or reduce-window's) values."""

    def __init__(self, instruction, k):
        self.instruction, self.k = instruction, k
        self.opcode = f"{instruction.opcode} output {k}"

    def value(self, g, index):
        return g.value(self.instruction, index)[self.k]


def _outputs(h):
    """[(shape index, output shape, what computes it: an instruction or a
    ``_Leaf``)] of ``h``."""
    root = h.attrs["calls"].root_instruction if h.opcode == "fusion" else h
    if not h.shape.is_tuple:
        return [((), h.shape, root)]
    if root.opcode in ("reduce", "reduce-window") and len(root.operands) > 2:
        outs = [((k,), s, _Leaf(root, k)) for k, s in enumerate(h.shape.tuple_shapes)]
    elif h.opcode == "fusion" and root.opcode == "tuple":
        outs = [((k,), s, root.operands[k]) for k, s in enumerate(h.shape.tuple_shapes)]
    else:
        raise unsupported(h, "a tuple result")
    if any(not s.is_array for _, s, _ in outs):
        raise unsupported(h, "a multi-output fusion with a tuple output")
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
        read = {s.key for s in reads(h, assignment)}
        for index, _, _ in _outputs(h):
            if Slice(assignment.buffer(h, index)).key in read:
                raise unsupported(h, "a multi-output fusion whose outputs differ in shape "
                                      "and overwrite an operand")
    return groups


def emit_kernel(emitter, h, name, outputs=None):
    """The KernelThunk computing ``h``'s buffer(s) (``outputs``: those of
    ``_outputs(h)`` to compute, all of the same shape; default all)."""
    op = h.opcode
    if op == "fusion":
        kind = h.attrs.get("kind")
        if str(kind) not in ("kLoop", "kInput"):
            raise unsupported(h, f"fusion kind {kind}")
    elif op not in ELEMENTWISE and op not in GENERATORS:
        raise unsupported(h)
    assignment = emitter.assignment
    outputs = outputs or _outputs(h)
    if len({tuple(s.dimensions) for _, s, _ in outputs}) != 1:
        raise unsupported(h, "one kernel for outputs of different shapes")
    out_slices = [Slice(assignment.buffer(h, index)) for index, _, _ in outputs]
    slices = out_slices + reads(h, assignment)
    keys = list(dict.fromkeys(s.key for s in slices))
    kernel = Kernel(name, keys, h)
    g = ElementGenerator(emitter, kernel, fusion=h if op == "fusion" else None)
    shape = outputs[0][1]
    n = shape.num_elements()

    def body(b, i):
        index = le.delinearize(b, i, list(shape.dimensions), le.major_to_minor(shape))
        values = [value_of.value(g, index) if isinstance(value_of, _Leaf) else
                  g.value(value_of, index) for _, _, value_of in outputs]
        for (_, out_shape, _), out_slice, v in zip(outputs, out_slices, values):
            ptr = g.element_pointer(kernel.pointer(out_slice), out_shape, index)
            store_element(b, v, ptr, out_shape.element_type)
    text = finish_kernel(kernel, h, n, body)
    return KernelThunk(name, text, keys, n, h.name)



@dataclass
class CopyThunk:
    """Device-to-device copies [(dst, src, bytes)], done as if all at once
    (every source read before any destination is written). ``sequential``:
    no copy writes what a later one reads, so they may simply run in order;
    otherwise (a loop's state permuted by its body) they go through staging
    buffers."""
    copies: list
    sequential: bool = field(init=False)

    def __post_init__(self):
        self.sequential = not any(
            dst[0] == src[0] and dst[1] < src[1] + m and src[1] < dst[1] + n
            for k, (dst, _, n) in enumerate(self.copies) for _, src, m in self.copies[k + 1:])


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


class _ThunkEmitter:
    def __init__(self, module, assignment, gemm=True):
        from xla.backends.cpu.ir_emitter import load_extensions
        load_extensions()   # the generator rows of the emit_*.py files (gather, convolution...)
        self.emitter = _Emitter(module, assignment)
        self.assignment = assignment
        self.gemm = gemm
        self.kernels = 0

    def computation(self, comp):
        thunks = []
        for h in comp.instructions:
            thunk = self.instruction(h)
            if thunk is not None:
                thunks.append(thunk)
        return thunks

    def _name(self, h, suffix=""):
        """A new kernel's name: its number in the module, the instruction's name."""
        self.kernels += 1
        return f"k{self.kernels - 1}_{_symbol(h.name)}{suffix}"

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
                raise unsupported(h, "condition root is not a pred scalar")
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
        if h.opcode == "sort":
            from xla.backends.gpu.sort import emit_sort
            leaves = [(k,) for k in range(len(h.operands))] if h.shape.is_tuple else [()]
            copy = _copies([(a.buffer(h, index), a.buffer(o)) for index, o in zip(leaves, h.operands)])
            return [copy] + emit_sort(self.emitter, h, self._name(h))
        if h.opcode == "topk" or (h.opcode == "custom-call" and
                                  h.attr("custom_call_target") in ("TopK", "__cpu$TopK")):
            from xla.backends.gpu.sort import emit_topk
            largest = h.attr("largest", True) if h.opcode == "topk" else True
            k = int(h.attr("k")) if h.opcode == "topk" else h.shape.tuple_shapes[0].dimensions[-1]
            return emit_topk(self.emitter, h, self._name(h), k,
                             True if largest is None else bool(largest))
        if h.opcode in ("rng", "rng-bit-generator", "rng-get-and-update-state"):
            from xla.backends.gpu import rng
            emit = {"rng": rng.emit_rng, "rng-bit-generator": rng.emit_rng_bit_generator,
                    "rng-get-and-update-state": rng.emit_rng_get_and_update_state}[h.opcode]
            return emit(self.emitter, h, self._name(h))
        if h.opcode in ("cholesky", "triangular-solve") or (
                h.opcode == "custom-call" and h.attr("custom_call_target") in LAPACK_TARGETS):
            from xla.backends.gpu.linalg import emit_linalg
            return emit_linalg(self.emitter, h, self._name(h))
        if h.opcode == "select-and-scatter":
            from xla.backends.gpu.select_and_scatter import emit_select_and_scatter
            return emit_select_and_scatter(self.emitter, h, self._name(h))
        if h.opcode == "fft":
            from xla.backends.gpu.fft import fft_thunk
            return fft_thunk(h, a)
        if h.opcode in COLLECTIVE_OPCODES or h.opcode in ASYNC_OPCODES:
            return collective_thunk(h, a)
        if h.opcode == "dot" and self.gemm:
            from xla.backends.gpu.gemm import gemm_thunk
            gemm = gemm_thunk(h, a)
            if gemm is not None:
                return gemm
        source = transpose_source(h, a)
        if source is not None:
            return emit_tiled_transpose(self.emitter, h, self._name(h), source)
        groups = _output_groups(h, a) if h.opcode == "fusion" and h.shape.is_tuple else [None]
        thunks = []
        for k, outputs in enumerate(groups):
            name = self._name(h, f"_{k}" if len(groups) > 1 else "")
            split = emit_split_reduction(self.emitter, h, name, outputs or _outputs(h))
            thunks.extend(split or [emit_kernel(self.emitter, h, name, outputs)])
        return thunks[0] if len(thunks) == 1 else thunks


def emit_thunks(module, assignment, gemm=True):
    """The thunk sequence of the entry computation, in schedule order:
    kernel launches, cuBLAS calls (``gemm``: else dots are kernels), copies,
    and host-side while loops and conditionals."""
    return _ThunkEmitter(module, assignment, gemm).computation(module.entry)


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
