"""Element generators: for each instruction of a fused computation, a
function from a multi-dimensional index to the element's register value
(``ElementGenerator.value``), one row per opcode in ``GENERATORS``.

An operand that has a buffer is loaded at its layout-aware linear index;
everything else is computed from its operands' generators. Elementwise
opcodes go to ``elemental_ir_emitter.emit_elementwise``; data movement rows
are here; rows that emit loops (reduce and dot: ``reduction_emitter``;
others in the ``emit_*.py`` files) register with ``register_generator``.
Results are memoized per index inside one loop body.

Data movement never reads outside a buffer: pad and concatenate clamp the
index they read with and select, dynamic-slice and dynamic-update-slice
clamp their start indices as XLA specifies.
"""
import numpy as np
from llvmlite import ir

from xla.hlo.opcodes import OpcodeTable
from xla.backends.cpu import loop_emitter as le
from xla.backends.cpu.elemental_ir_emitter import emit_elementwise
from xla.backends.cpu.kernels import I8, Kernel, Slice
from xla.backends.cpu.llvm_types import (from_bits, is_supported, load_element, register_type,
                                         round_to_type, to_bits)
from xla.backends.cpu.loop_emitter import I64, i64
from xla.errors import UnimplementedError
from xla.hlo.opcodes import ELEMENTWISE
from xla.hlo.types import PrimitiveType


def unsupported(instr, what=None):
    detail = f" ({what})" if what else ""
    return UnimplementedError(
        f"the cpu backend does not support {instr.opcode}{detail} (instruction {instr.name})")


def convert_register(b, v, src, dst):
    """Numeric conversion between register values of real element types
    (used by dot and iota; elementwise convert goes through the elemental
    emitter)."""
    return round_to_type(b, _convert(b, v, src, dst), dst)


def _convert(b, v, src, dst):
    st, dt = register_type(src), register_type(dst)
    if st == dt:
        return v
    if src.kind == "pred":
        v, src = b.zext(v, I8), PrimitiveType.U8
        st = I8
    if dst.kind == "pred":
        zero = ir.Constant(st, 0)
        return b.fcmp_unordered("!=", v, zero) if src.kind == "f" else b.icmp_unsigned("!=", v, zero)
    if src.kind in "su" and dst.kind in "su":
        if dt.width > st.width:
            return b.sext(v, dt) if src.kind == "s" else b.zext(v, dt)
        return b.trunc(v, dt)
    if src.kind in "su":
        return b.sitofp(v, dt) if src.kind == "s" else b.uitofp(v, dt)
    if dst.kind in "su":
        return b.fptosi(v, dt) if dst.kind == "s" else b.fptoui(v, dt)
    return b.fpext(v, dt) if isinstance(dt, ir.DoubleType) else b.fptrunc(v, dt)


def literal_array(instr):
    """A constant's value as an array of its shape's dtype, logical order."""
    shape = instr.shape
    value = np.asarray(instr.literal)
    if value.dtype != shape.dtype:
        value = value.astype(shape.dtype)
    if value.shape != shape.dimensions:
        if value.size == 1:
            value = np.broadcast_to(value.reshape(()), shape.dimensions)
        else:
            value = value.reshape(shape.dimensions)
    return value


def physical_bytes(array, shape):
    """The bytes of ``array`` as a buffer of ``shape`` (its layout) stores them."""
    order = le.major_to_minor(shape)
    return np.ascontiguousarray(np.transpose(array, order)).tobytes()


def check_element_type(shape, instr):
    """Refuses element types and layouts the cpu backend cannot hold."""
    for _, leaf in shape.leaves():
        if not leaf.is_array:
            continue
        if not is_supported(leaf.element_type):
            raise unsupported(instr, f"element type {leaf.element_type}")
        packed = leaf.layout.element_size_in_bits if leaf.layout is not None else 0
        if packed and packed != leaf.element_type.byte_size * 8:
            raise unsupported(instr, f"packed layout {leaf.to_text()}: elements of "
                                     f"{packed} bits; one element per byte is supported")


class ElementGenerator:
    """Element values of the instructions of one kernel (see module docstring)."""

    def __init__(self, emitter, kernel, fusion=None):
        self.emitter = emitter
        self.kernel = kernel
        self.fusion = fusion
        self.memo = {}
        # A shape-generic kernel's sizes are values (shape_generic.py); the
        # GPU backend's kernels, which use these generators too, are never.
        self.generic = isinstance(kernel, Kernel) and kernel.generic

    @property
    def b(self):
        return self.kernel.b

    # ----- memo scoping -------------------------------------------------------
    def push_scope(self):
        saved = self.memo
        self.memo = dict(saved)
        return saved

    def pop_scope(self, saved):
        self.memo = saved

    # ----- values ---------------------------------------------------------------
    def value(self, h, index):
        key = (id(h),) + tuple(("c", v.constant) if isinstance(v, ir.Constant) else id(v)
                               for v in index)
        v = self.memo.get(key)
        if v is None:
            v = self._compute(h, index)
            self.memo[key] = v
        return v

    def materialized(self, h):
        """Whether this kernel reads ``h`` from its buffer: instructions of
        computations with buffers (the entry, while bodies and conditions,
        conditional branches, calls), but the kernel's own root."""
        return h is not self.kernel.root and self.emitter.assignment.has_buffers(h)

    def outside(self, h):
        """``h``, or where it is a parameter of the fusion being emitted, the
        fusion's operand it stands for (as ``_compute`` maps it)."""
        if h.opcode == "parameter" and self.fusion is not None and not self.materialized(h):
            return self.fusion.operands[h.parameter_number]
        return h

    def _compute(self, h, index):
        if self.materialized(h):
            return self.load(h, index)
        if h.opcode == "parameter" and self.fusion is not None:
            return self.value(self.fusion.operands[h.parameter_number], index)
        if self.generic and h.opcode not in SIZE_FREE_GENERATORS:
            self.kernel.sizes_in_code = True
        gen = GENERATORS.get(h.opcode)
        if gen is None:
            if h.opcode in ELEMENTWISE:
                return self.elementwise(h, index)
            raise unsupported(h)
        return gen(self, h, index)

    def constant_sizes(self):
        """Called by a generator whose code holds dimension sizes as
        constants, or chose between codes by a size other than by which
        sizes are equal: the kernel's text then depends on more than its
        size-free key (``shape_generic.SizeFreeKernels``)."""
        if self.generic:
            self.kernel.sizes_in_code = True

    def load(self, h, index, shape_index=()):
        """The element of materialized instruction ``h`` at ``index``."""
        buffer = self.emitter.assignment.buffer(h, shape_index)
        shape = h.shape.subshape(shape_index)  # a bitcast reads its operand's buffer its own way
        ptr = self.kernel.pointer(Slice(buffer))
        return load_element(self.b, self.element_pointer(ptr, shape, index), shape.element_type)

    def element_pointer(self, base, shape, index):
        strides = self.kernel.strides(shape) if self.generic else None
        return self.offset_pointer(base, shape.element_type,
                                   le.linear_index(self.b, shape, index, strides))

    def offset_pointer(self, base, element_type, linear):
        """The address of element ``linear`` (an element offset) from ``base``."""
        size = element_type.byte_size
        offset = linear if size == 1 else self.b.mul(linear, i64(size), flags=("nsw", "nuw"))
        return self.b.gep(base, [offset], inbounds=True, source_etype=I8)

    def elementwise(self, h, index):
        if h.opcode == "map":
            args = [self.value(o, index) for o in h.operands]
            return self.emitter.emit_scalar_computation(self.b, h.attr("to_apply"), args)
        if not h.shape.is_array:
            raise unsupported(h, "tuple-shaped")
        return emit_elementwise(self.b, h, [self.value(o, index) for o in h.operands])


# ----- generators: one row per opcode -------------------------------------------
def _gen_constant(g, h, index):
    gv = g.emitter.constant_global(h, g.kernel.module)
    shape = h.shape
    ptr = g.element_pointer(gv, shape, index) if shape.rank else gv
    return load_element(g.b, ptr, shape.element_type)


def _gen_copy(g, h, index):
    return g.value(h.operands[0], index)


def _gen_broadcast(g, h, index):
    dims = h.attr("dimensions", ())
    return g.value(h.operands[0], [index[d] for d in dims])


def _gen_transpose(g, h, index):
    perm = h.attr("dimensions")
    operand_index = [None] * len(perm)
    for i, d in enumerate(perm):
        operand_index[d] = index[i]
    return g.value(h.operands[0], operand_index)


def _gen_reshape(g, h, index):
    op = h.operands[0]
    out_dims, in_dims = h.shape.dimensions, op.shape.dimensions
    if [d for d in out_dims if d != 1] == [d for d in in_dims if d != 1]:
        # Only size-1 dimensions added or removed: map the others one to one.
        real = [v for v, d in zip(index, out_dims) if d != 1]
        it = iter(real)
        return g.value(op, [next(it) if d != 1 else i64(0) for d in in_dims])
    g.constant_sizes()
    linear = le.row_major_linear(g.b, out_dims, index)
    stored = _stored(g, op)
    if stored is not None and stored.shape.is_row_major():
        # Read from a row-major buffer: the row-major offset is the address
        # (no index of the operand rebuilt from it with divisions).
        return _load_at(g, stored, linear)
    return g.value(op, le.delinearize(g.b, linear, in_dims))


def _stored(g, h):
    """The materialized instruction whose buffer this kernel reads ``h``
    from (``h``, or a fusion parameter's operand), or None where ``h`` is
    computed here or the kernel is shape-generic."""
    if g.generic:
        return None
    h = g.outside(h)
    return h if g.materialized(h) and h.shape.is_array else None


def _load_at(g, src, offset):
    """The element of materialized ``src`` at element offset ``offset`` of
    its buffer."""
    ptr = g.kernel.pointer(Slice(g.emitter.assignment.buffer(src, ())))
    et = src.shape.element_type
    return load_element(g.b, g.offset_pointer(ptr, et, offset), et)


def _gen_bitcast(g, h, index):
    op = h.operands[0]
    src, dst = op.shape.element_type, h.shape.element_type
    if src is not dst and (src.byte_size != dst.byte_size or {src.kind, dst.kind} & {"c", "pred"}
                           or src.bits != dst.bits):
        raise unsupported(h, "changing the element size inside a fusion")
    relabeled = _relabel(h.shape, op.shape) if g.generic else None
    if relabeled is not None:
        # The same sizes in the same storage order: no index arithmetic.
        value = g.value(op, [index[d] if d is not None else i64(0) for d in relabeled])
    else:
        g.constant_sizes()
        linear = le.linear_index(g.b, h.shape, index)
        stored = _stored(g, op)
        if stored is not None:
            # The same bytes: the offset in this layout is the address.
            value = _load_at(g, stored, linear)
        else:
            value = g.value(op, le.delinearize(g.b, linear, op.shape.dimensions,
                                               le.major_to_minor(op.shape)))
    if src is dst:
        return value
    # Same size, another type: the element's bits, reinterpreted.
    return from_bits(g.b, to_bits(g.b, value, src), dst)


def _relabel(shape, op_shape):
    """For a bitcast from ``op_shape`` to ``shape`` whose dimensions other
    than size 1, in storage order, have the same sizes: for each dimension
    of ``op_shape``, the dimension of ``shape`` that indexes it (None for
    size 1). None when the bitcast moves elements between dimensions."""
    mine = [d for d in le.major_to_minor(shape) if shape.dimensions[d] != 1]
    theirs = [d for d in le.major_to_minor(op_shape) if op_shape.dimensions[d] != 1]
    if [shape.dimensions[d] for d in mine] != [op_shape.dimensions[d] for d in theirs]:
        return None
    mapping = [None] * op_shape.rank
    for d, e in zip(theirs, mine):
        mapping[d] = e
    return mapping


def _gen_slice(g, h, index):
    operand_index = []
    for v, s in zip(index, h.attr("slice")):
        stride = s.stride or 1
        if stride != 1:
            v = g.b.mul(v, i64(stride), flags=("nsw", "nuw"))
        if s.start:
            v = g.b.add(v, i64(s.start), flags=("nsw", "nuw"))
        operand_index.append(v)
    return g.value(h.operands[0], operand_index)


def _gen_reverse(g, h, index):
    dims = set(h.attr("dimensions", ()))
    n = h.shape.dimensions
    return g.value(h.operands[0], [g.b.sub(i64(n[d] - 1), v) if d in dims else v
                                   for d, v in enumerate(index)])


def _gen_iota(g, h, index):
    d = h.attr("iota_dimension", 0)
    v = index[d] if h.shape.rank else i64(0)
    return convert_register(g.b, v, PrimitiveType.S64, h.shape.element_type)


def _gen_pad(g, h, index):
    b = g.b
    op, pad_value = h.operands
    pv = g.value(pad_value, [])
    if op.shape.num_elements() == 0:
        return pv
    valid = None
    operand_index = []
    for v, p, n in zip(index, h.attr("padding"), op.shape.dimensions):
        pos = b.sub(v, i64(p.low)) if p.low else v
        conds = [b.icmp_signed(">=", pos, i64(0))]
        if p.interior:
            step = i64(p.interior + 1)
            conds.append(b.icmp_signed("==", b.srem(pos, step), i64(0)))
            pos = b.sdiv(pos, step)
        conds.append(b.icmp_signed("<", pos, i64(n)))
        for c in conds:
            valid = c if valid is None else b.and_(valid, c)
        operand_index.append(le.clamp(b, pos, 0, n - 1))
    if valid is None:
        return g.value(op, operand_index)
    if any(p.interior for p in h.attr("padding")) and not _cheap(g, op):
        # Interior padding (associative_scan's interleaves, upsampling): most
        # elements are padding, and a computed operand is computed only for
        # the others. Selecting computed it for every element, and each
        # level of jax.lax.associative_scan's tree pads two arrays that read
        # the level below: 2^levels evaluations per element (f32[512, 2048]:
        # 102 ms, XLA:CPU 4).
        entry = b.block
        with b.if_then(valid):
            scope = g.push_scope()
            ov = g.value(op, operand_index)
            computed = b.block
            g.pop_scope(scope)
        result = b.phi(ov.type)
        result.add_incoming(ov, computed)
        result.add_incoming(pv, entry)
        return result
    ov = g.value(op, operand_index)
    return b.select(valid, ov, pv)


_CHEAP_VIEWS = ("bitcast", "reshape", "broadcast", "convert", "copy", "transpose")


def _cheap(g, h):
    """Whether ``h``'s element is a load or a constant (through views of
    one): cheaper to compute for every element and select than to branch.
    A parameter (of the entry, or of a fusion: its operand has a buffer)
    is a load."""
    while h.opcode in _CHEAP_VIEWS and len(h.operands) == 1 and not g.materialized(h):
        h = h.operands[0]
    return g.materialized(h) or h.opcode in ("parameter", "constant", "iota")


def _gen_concatenate(g, h, index):
    b = g.b
    (axis,) = h.attr("dimensions")
    pieces = []
    offset = 0
    for op in h.operands:
        n = op.shape.dimensions[axis]
        if n:
            pieces.append((op, offset, n))
        offset += n
    result = None
    for k, (op, start, n) in enumerate(pieces):
        local = b.sub(index[axis], i64(start)) if start else index[axis]
        operand_index = list(index)
        operand_index[axis] = le.clamp(b, local, 0, n - 1) if len(pieces) > 1 else local
        v = g.value(op, operand_index)
        if result is None:
            result = v
        else:
            result = b.select(b.icmp_signed(">=", index[axis], i64(start)), v, result)
    return result


def _start_index(g, h, operand):
    b = g.b
    v = g.value(operand, [])
    et = operand.shape.element_type
    if v.type.width < 64:
        v = b.sext(v, I64) if et.kind == "s" else b.zext(v, I64)
    elif et.kind == "u":
        # u64 starts of 2^63 or more are huge, not negative: they clamp to
        # dim - size like every start past the end (as XLA and the evaluator do).
        big = ir.Constant(I64, 2**63 - 1)
        v = b.select(b.icmp_unsigned(">", v, big), big, v)
    return v


def _dynamic_starts(g, h, first, data_shape, sizes):
    ops = h.operands[first:]
    if len(ops) == 1 and ops[0].shape.rank == 1:
        raise unsupported(h, "start indices as one vector")
    return [le.clamp(g.b, _start_index(g, h, o), 0, max(d - n, 0))
            for o, d, n in zip(ops, data_shape.dimensions, sizes)]


def _gen_dynamic_slice(g, h, index):
    op = h.operands[0]
    sizes = h.attr("dynamic_slice_sizes") or h.shape.dimensions
    starts = _dynamic_starts(g, h, 1, op.shape, sizes)
    return g.value(op, [g.b.add(s, v) for s, v in zip(starts, index)])


def _gen_dynamic_update_slice(g, h, index):
    b = g.b
    op, update = h.operands[0], h.operands[1]
    sizes = update.shape.dimensions
    base = g.value(op, index)
    if update.shape.num_elements() == 0:
        return base
    starts = _dynamic_starts(g, h, 2, op.shape, sizes)
    inside = None
    update_index = []
    for v, s, n in zip(index, starts, sizes):
        local = b.sub(v, s)
        c = b.and_(b.icmp_signed(">=", local, i64(0)), b.icmp_signed("<", local, i64(n)))
        inside = c if inside is None else b.and_(inside, c)
        update_index.append(le.clamp(b, local, 0, n - 1))
    uv = g.value(update, update_index)
    return b.select(inside, uv, base) if inside is not None else uv


def _gen_get_tuple_element(g, h, index):
    value = g.value(h.operands[0], index)
    if not isinstance(value, (list, tuple)):
        raise unsupported(h, "of a non-tuple value")
    return value[h.attr("index")]


def _gen_tuple(g, h, index):
    return [g.value(o, index) for o in h.operands]


def _gen_bitcast_convert(g, h, index):
    """Bits reinterpreted; a narrower side has one more, minor dimension of
    pieces, little-endian (s8[4] <-> s4[4,2] as XLA packs them)."""
    op = h.operands[0]
    src, dst = op.shape.element_type, h.shape.element_type
    if src.bits == dst.bits:
        return g.elementwise(h, index)
    if src.kind == "c" or dst.kind == "c":
        raise unsupported(h, f"{src} to {dst}")
    b = g.b
    if src.bits > dst.bits:  # one operand element -> a minor dimension of pieces
        bits = to_bits(b, g.value(op, index[:-1]), src)
        shift = b.mul(index[-1], i64(dst.bits))
        piece = b.lshr(bits, b.trunc(shift, bits.type) if bits.type.width < 64 else shift)
        return from_bits(b, b.trunc(piece, ir.IntType(dst.bits)), dst)
    wide = ir.IntType(dst.bits)
    n = op.shape.dimensions[-1]
    acc = ir.Constant(wide, 0)
    for k in range(n):  # little-endian: piece k holds bits [k*w, (k+1)*w)
        piece = b.zext(to_bits(b, g.value(op, list(index) + [i64(k)]), src), wide)
        acc = b.or_(acc, b.shl(piece, ir.Constant(wide, k * src.bits)) if k else piece)
    return from_bits(b, acc, dst)


GENERATORS = OpcodeTable("cpu element generators", {
    "bitcast-convert": _gen_bitcast_convert,
    "constant": _gen_constant,
    "copy": _gen_copy,
    "broadcast": _gen_broadcast,
    "transpose": _gen_transpose,
    "reshape": _gen_reshape,
    "bitcast": _gen_bitcast,
    "slice": _gen_slice,
    "reverse": _gen_reverse,
    "iota": _gen_iota,
    "pad": _gen_pad,
    "concatenate": _gen_concatenate,
    "dynamic-slice": _gen_dynamic_slice,
    "dynamic-update-slice": _gen_dynamic_update_slice,
    "get-tuple-element": _gen_get_tuple_element,
    "tuple": _gen_tuple,
})


# The generators whose code in a shape-generic kernel asks for every size it
# uses (``Kernel.dim``, ``dims``, ``strides``) and makes no decision from a
# size other than which sizes are equal or 1, unless they call
# ``ElementGenerator.constant_sizes`` (reshape and bitcast do, when they
# divide by constant sizes). Every other generator (pad, concatenate,
# reverse, dynamic slices, reductions, dots, ...) marks its kernel as
# holding sizes (``shape_generic.SizeFreeKernels`` then never reuses it for
# other sizes); elementwise ops never look at sizes.
SIZE_FREE_GENERATORS = ELEMENTWISE | frozenset([
    "parameter", "constant", "copy", "broadcast", "transpose", "reshape", "bitcast", "slice",
    "iota", "get-tuple-element", "tuple"])


def register_generator(*opcodes):
    return GENERATORS.register(*opcodes)
