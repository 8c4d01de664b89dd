"""DynamicPadder (``dynamic-padder``): removes dynamic shapes from the entry
computation, as XLA's pass of that name does, so that backends without
dynamic shapes (the CPU) run modules that use them.

Every bounded dynamic dimension (``f32[<=8]``) becomes static at its bound:
the array is held padded, its valid elements at the low end of the
dimension, and the dimension's size is tracked as an ``s32[]`` instruction
alongside (XLA's ``DynamicDimensionInference``). The sizes come from
``set-dimension-size`` (its size operand) and ``dynamic-reshape`` (its size
operands) and flow through the ops below; a dynamic dimension with no
source (an ``iota`` or a ``broadcast`` of a static operand declared
``f32[<=8]``) has its bound as its size. The meaning kept is the
interpreter's: an array of a dynamic shape is its valid elements, in row-major
order of its dynamic sizes (``xla/hlo/evaluator``).

What each op becomes (``_HANDLERS``, one row per opcode):

* ``set-dimension-size``: its operand, with the new size tracked; where the
  operand's dimension was already dynamic, the elements between its old
  and new size are zeroed first (they are padding, which the interpreter
  exposes as zeros when a dimension grows).
* ``get-dimension-size``: the tracked size (the bound, or the static size,
  where none is tracked).
* ``dynamic-reshape``, and ``reshape`` of a dynamic operand: a plain
  reshape where the padding stays at the end of each group of merged or
  split dimensions (only the major-most dimension of a group is dynamic);
  otherwise a gather that moves each valid element to its place: the
  element at valid position ``(j...)`` of the result is the operand's
  element of the same row-major rank among its valid elements. A reshape
  infers the size of the one dynamic result dimension of each group of
  dimensions it merges or splits (several dynamic result dimensions in one
  group are refused: the sizes are ambiguous).
* ``reduce``: every input is masked with its init value over the reduced
  dynamic dimensions (``select(iota < size, x, init)``), so the padding
  adds nothing (the init must be the reducer's identity, as XLA assumes).
* ``dot``: both operands are masked with zero over dynamic contracting
  dimensions.
* ``concatenate`` along a dynamic dimension: the operands are written one
  after the other at their running dynamic offsets
  (dynamic-update-slices into a zero array of the result's bound), so the
  valid elements are contiguous; the size is the sum.
* ``slice``: the same slice of the padded array; a dynamic dimension's
  size becomes ``max(0, ceil((min(limit, size) - start) / stride))``
  (what slicing the valid elements gives).
* elementwise ops, ``broadcast``, ``transpose``, ``tuple``,
  ``get-tuple-element``, ``copy``, ``convert``: the sizes follow the
  dimensions (an elementwise op takes each size from its first operand
  that has one, as XLA does).

What it does not do: any other op with a dynamic operand (``pad``,
``reverse``, ``sort``, ``gather``, windows, control flow, ...) is refused
with UnimplementedError naming the op, as are dynamic shapes outside the
entry computation, unbounded dimensions (``f32[?]``) and entry parameters
of a dynamic shape: the caller binds those to sizes first
(``dynamic_entry.bind_dynamic_entry``, which also gives the sizes of a
dynamic result; this pass returns the entry's result padded). Sizes out of
range (a ``set-dimension-size`` beyond its bound) are not checked here:
the binding reports them. Afterwards no shape in the entry is dynamic.
"""
import math

from xla.errors import UnimplementedError
from xla.hlo.attributes import PaddingDim
from xla.hlo.opcodes import ELEMENTWISE, OpcodeTable
from xla.hlo.shape import Shape, reshape_dimension_groups
from xla.hlo.types import PrimitiveType
from xla.service.hlo_pass import HloPass
from xla.service.pass_utils import Emitter

S32, PRED = PrimitiveType.S32, PrimitiveType.PRED


def _array(element_type, dims):
    return Shape.array(element_type, dims, layout=None)


_SCALAR = _array(S32, ())

# Opcodes handled even when nothing they read is dynamic.
_SOURCES = frozenset(["set-dimension-size", "get-dimension-size", "dynamic-reshape"])

_HANDLERS = OpcodeTable("dynamic padder")


def static_shape(shape):
    """``shape`` with every dimension static at its bound."""
    if shape.is_tuple:
        return Shape.tuple([static_shape(s) for s in shape.tuple_shapes])
    if not shape.is_array or not shape.is_dynamic:
        return shape
    return Shape(shape.element_type, shape.dimensions, shape.layout)


def _refuse(instr, why):
    raise UnimplementedError(f"dynamic-padder: {instr.opcode} {instr.name}: {why}")


class DynamicPadder(HloPass):
    name = "dynamic-padder"

    def run(self, module):
        entry = module.entry
        for comp in module.computations:
            if comp is entry:
                continue
            for instr in comp.instructions:
                # (get-dimension-size of a static dimension is algsimp's to fold)
                if instr.shape.is_dynamic or instr.opcode in ("set-dimension-size",
                                                              "dynamic-reshape"):
                    _refuse(instr, f"dynamic shapes inside computation {comp.name} are not "
                                   "supported (only in the entry computation)")
        if not any(i.shape.is_dynamic or i.opcode in _SOURCES for i in entry.instructions):
            return False
        for p in entry.parameters:
            if p.shape.is_dynamic:
                _refuse(p, f"entry parameter of dynamic shape {p.shape.to_text(False)}: bind its "
                           "sizes first (xla.service.dynamic_entry.bind_dynamic_entry)")
        padder = _Padder(module, entry)
        for instr in entry.post_order():
            padder.visit(instr)
        for instr in entry.instructions:
            instr.shape = static_shape(instr.shape)
        entry.sort_post_order()
        return True


class _Padder:
    """The tracked sizes: id(instruction) -> {(shape index, dimension): s32[] instruction}."""

    def __init__(self, module, comp):
        self.module, self.comp = module, comp
        self.sizes = {}

    def visit(self, instr):
        for _, shape in instr.shape.leaves():
            if shape.is_array and any(d < 0 for d in shape.dimensions):
                _refuse(instr, f"unbounded dynamic dimension in {shape.to_text(False)}")
        dynamic_operands = any(self.sizes.get(id(o)) for o in instr.operands)
        if not dynamic_operands and instr.opcode not in _SOURCES:
            return   # its dynamic dimensions, if any, are at their bounds
        handler = _HANDLERS.get(instr.opcode)
        if handler is None:
            if instr.opcode in ELEMENTWISE:
                handler = _elementwise
            else:
                _refuse(instr, "a dynamic operand whose padding would change the result "
                               "(this op is not padded)")
        b = Emitter(self.module, self.comp, instr)
        result = handler(self, b, instr)
        value, sizes = result if isinstance(result, tuple) else (instr, result)
        if value is not instr:
            if sizes and any(value is o for o in instr.operands) and len(value.users) > 1:
                # The operand keeps its own sizes for its other users.
                value = b.add("copy", static_shape(value.shape), [value])
            self.comp.replace_instruction(instr, value)
        if sizes:
            self.sizes[id(value)] = sizes

    # ----- helpers -------------------------------------------------------------
    def tracked(self, instr, index=()):
        """{dimension: size} of the array at ``index`` of ``instr``'s value."""
        return {d: s for (i, d), s in self.sizes.get(id(instr), {}).items() if i == index}

    def size(self, b, instr, d, index=()):
        """The size of dimension ``d`` (tracked, else the bound as a constant)."""
        size = self.sizes.get(id(instr), {}).get((index, d))
        if size is None:
            size = b.constant(instr.shape.subshape(index).dimensions[d], S32)
        return size

    @staticmethod
    def scalar_op(b, opcode, x, y):
        return b.add(opcode, _SCALAR, [x, y])

    def mask(self, b, x, dims, fill):
        """``x`` with every element at or beyond ``dims[d]`` in a dimension
        ``d`` replaced by the scalar ``fill``."""
        shape = static_shape(x.shape)
        index_shape = _array(S32, shape.dimensions)
        pred_shape = _array(PRED, shape.dimensions)
        inside = None
        for d, size in sorted(dims.items()):
            iota = b.add("iota", index_shape, iota_dimension=d)
            limit = b.add("broadcast", index_shape, [size], dimensions=())
            lt = b.add("compare", pred_shape, [iota, limit], direction="LT")
            inside = lt if inside is None else b.add("and", pred_shape, [inside, lt])
        if inside is None:
            return x
        fill = b.add("broadcast", shape, [fill], dimensions=())
        return b.add("select", shape, [inside, x, fill])

    def zero(self, b, element_type):
        return b.constant(0, element_type) if element_type != PRED else b.constant(False, PRED)

    def relayout(self, b, x, in_sizes, out_dims, out_sizes):
        """An array of bounds ``out_dims`` whose valid elements (``out_sizes``)
        are ``x``'s valid elements (``in_sizes``) in row-major order: a
        gather from the flattened padded operand."""
        et = x.shape.element_type
        out_shape = _array(et, out_dims)
        in_dims = x.shape.dimensions
        if math.prod(in_dims) == 0 or math.prod(out_dims) == 0:
            return b.add("broadcast", out_shape, [self.zero(b, et)], dimensions=())
        index_shape = _array(S32, out_dims)

        def full(scalar):
            return b.add("broadcast", index_shape, [scalar], dimensions=())

        def arith(opcode, lhs, rhs):
            return b.add(opcode, index_shape, [lhs, rhs])

        # The row-major rank of each result position among the valid ones.
        rank = None
        stride = None   # s32[]: product of the sizes of the dimensions after j
        for j in reversed(range(len(out_dims))):
            iota = b.add("iota", index_shape, iota_dimension=j)
            term = iota if stride is None else arith("multiply", iota, full(stride))
            rank = term if rank is None else arith("add", rank, term)
            stride = out_sizes[j] if stride is None else self.scalar_op(b, "multiply", stride,
                                                                      out_sizes[j])
        if rank is None:   # rank-0 result
            rank = b.add("broadcast", index_shape, [b.constant(0, S32)], dimensions=())
        # That rank as a position in the operand: digits in its sizes,
        # placed at the padded operand's row-major strides.
        one = b.constant(1, S32)
        flat_index = None
        remaining = rank
        padded_stride = 1
        for i in reversed(range(len(in_dims))):
            radix = full(self.scalar_op(b, "maximum", in_sizes[i], one))
            digit = arith("remainder", remaining, radix)
            remaining = arith("divide", remaining, radix)
            placed = digit if padded_stride == 1 else arith(
                "multiply", digit, full(b.constant(padded_stride, S32)))
            flat_index = placed if flat_index is None else arith("add", flat_index, placed)
            padded_stride *= in_dims[i]
        if flat_index is None:
            flat_index = b.add("broadcast", index_shape, [b.constant(0, S32)], dimensions=())
        total = math.prod(in_dims)
        flat = b.add("reshape", _array(et, (total,)), [x])
        indices = b.add("reshape", _array(S32, tuple(out_dims) + (1,)), [flat_index])
        return b.add("gather", out_shape, [flat, indices], offset_dims=(),
                     collapsed_slice_dims=(0,), start_index_map=(0,),
                     index_vector_dim=len(out_dims), slice_sizes=(1,))


# ----- handlers: (padder, emitter, instr) -> sizes, or (replacement, sizes) ------
def _elementwise(p, b, instr):
    sizes = {}
    rank = instr.shape.rank
    for o in instr.operands:   # scalars (clamp's bounds) have none
        for d, s in p.tracked(o).items():
            if d < rank:
                sizes.setdefault(((), d), s)
    return sizes


@_HANDLERS.register("set-dimension-size")
def _set_dimension_size(p, b, instr):
    x, size = instr.operands
    (d,) = instr.attr("dimensions")
    old = p.tracked(x).get(d)
    value = x
    if old is not None:   # a dimension that grows shows zeros, not stale padding
        value = p.mask(b, x, {d: old}, p.zero(b, x.shape.element_type))
    sizes = {(i, k): s for (i, k), s in p.sizes.get(id(x), {}).items()}
    sizes[((), d)] = size
    return value, sizes


@_HANDLERS.register("get-dimension-size")
def _get_dimension_size(p, b, instr):
    (d,) = instr.attr("dimensions")
    return p.size(b, instr.operands[0], d), {}


@_HANDLERS.register("dynamic-reshape")
def _dynamic_reshape(p, b, instr):
    x, out_sizes = instr.operands[0], list(instr.operands[1:])
    in_sizes = [p.size(b, x, i) for i in range(x.shape.rank)]
    value = p.relayout(b, x, in_sizes, instr.shape.dimensions, out_sizes)
    return value, {((), j): s for j, s in enumerate(out_sizes)}


def _first_above_one(dims, indices):
    return next((k for k in indices if dims[k] > 1), indices[0] if indices else None)


@_HANDLERS.register("reshape")
def _reshape(p, b, instr):
    x = instr.operands[0]
    in_dims, out_dims = x.shape.dimensions, instr.shape.dimensions
    tracked = p.tracked(x)
    out_sizes = {}
    aligned = True
    for ins, outs in reshape_dimension_groups(in_dims, out_dims):
        if not any(i in tracked for i in ins):
            continue
        if len(ins) == 1 and len(outs) == 1:
            out_sizes[outs[0]] = tracked[ins[0]]
            continue
        dynamic = [j for j in outs if instr.shape.dynamic[j]]
        if len(dynamic) != 1:
            _refuse(instr, f"{len(dynamic)} dynamic result dimensions {dynamic} for the operand "
                           f"dimensions {ins} (one is needed to hold the size)")
        j = dynamic[0]
        count = None
        for i in ins:
            s = p.size(b, x, i)
            count = s if count is None else p.scalar_op(b, "multiply", count, s)
        rest = math.prod(out_dims[k] for k in outs if k != j)
        out_sizes[j] = count if rest == 1 else p.scalar_op(b, "divide", count,
                                                          b.constant(rest, S32))
        first_in = _first_above_one(in_dims, ins)
        rest_in = math.prod(in_dims[k] for k in ins if k != first_in)
        if (any(i in tracked and i != first_in and in_dims[i] > 1 for i in ins)
                or j != _first_above_one(out_dims, outs) or rest_in % max(rest, 1)):
            aligned = False
    if not out_sizes:
        return {}
    if aligned:
        return {((), j): s for j, s in out_sizes.items()}
    sizes = [out_sizes.get(j) or b.constant(out_dims[j], S32) for j in range(len(out_dims))]
    value = p.relayout(b, x, [p.size(b, x, i) for i in range(len(in_dims))], out_dims, sizes)
    return value, {((), j): s for j, s in out_sizes.items()}


@_HANDLERS.register("reduce")
def _reduce(p, b, instr):
    n = len(instr.operands) // 2
    inputs, inits = instr.operands[:n], instr.operands[n:]
    reduced = set(instr.attr("dimensions"))
    operands = []
    for x, init in zip(inputs, inits):
        masked = {d: s for d, s in p.tracked(x).items() if d in reduced}
        operands.append(p.mask(b, x, masked, init) if masked else x)
    if any(o is not x for o, x in zip(operands, inputs)):
        instr.operands = operands + list(inits)
    kept = [d for d in range(inputs[0].shape.rank) if d not in reduced]
    sizes = {}
    for j, d in enumerate(kept):
        s = next((p.tracked(x)[d] for x in inputs if d in p.tracked(x)), None)
        if s is not None:
            for k in range(n if instr.shape.is_tuple else 1):
                sizes[((k,) if instr.shape.is_tuple else (), j)] = s
    return sizes


@_HANDLERS.register("dot")
def _dot(p, b, instr):
    lhs, rhs = instr.operands
    lc, rc = instr.attr("lhs_contracting_dims", ()), instr.attr("rhs_contracting_dims", ())
    lb, rb = instr.attr("lhs_batch_dims", ()), instr.attr("rhs_batch_dims", ())
    lt, rt = p.tracked(lhs), p.tracked(rhs)
    lmask, rmask = {}, {}
    for i, j in zip(lc, rc):
        s = lt.get(i) or rt.get(j)
        if s is not None:
            lmask[i], rmask[j] = s, s
    if lmask:
        instr.operands = [p.mask(b, lhs, lmask, p.zero(b, lhs.shape.element_type)),
                          p.mask(b, rhs, rmask, p.zero(b, rhs.shape.element_type))]
    sizes = {}
    out = 0
    for i, j in zip(lb, rb):
        s = lt.get(i) or rt.get(j)
        if s is not None:
            sizes[((), out)] = s
        out += 1
    for operand_tracked, rank, skip in ((lt, lhs.shape.rank, set(lb) | set(lc)),
                                        (rt, rhs.shape.rank, set(rb) | set(rc))):
        for d in range(rank):
            if d in skip:
                continue
            if d in operand_tracked:
                sizes[((), out)] = operand_tracked[d]
            out += 1
    return sizes


@_HANDLERS.register("concatenate")
def _concatenate(p, b, instr):
    (axis,) = instr.attr("dimensions")
    sizes = {}
    for o in instr.operands:
        for d, s in p.tracked(o).items():
            if d != axis:
                sizes.setdefault(((), d), s)
    if not any(axis in p.tracked(o) for o in instr.operands):
        return sizes
    shape = static_shape(instr.shape)
    value = b.add("broadcast", shape, [p.zero(b, shape.element_type)], dimensions=())
    zero = b.constant(0, S32)
    offset = zero
    for o in instr.operands:
        starts = [offset if k == axis else zero for k in range(shape.rank)]
        value = b.add("dynamic-update-slice", shape, [value, o] + starts)
        offset = p.scalar_op(b, "add", offset, p.size(b, o, axis))
    sizes[((), axis)] = offset
    return value, sizes


@_HANDLERS.register("slice")
def _slice(p, b, instr):
    x = instr.operands[0]
    sizes = {}
    for d, s in p.tracked(x).items():
        sd = instr.attr("slice")[d]
        start, limit, stride = sd.start, sd.limit, sd.stride
        end = p.scalar_op(b, "minimum", s, b.constant(limit, S32))
        count = p.scalar_op(b, "subtract", end, b.constant(start, S32)) if start else end
        count = p.scalar_op(b, "maximum", count, b.constant(0, S32))
        if stride > 1:
            count = p.scalar_op(b, "add", count, b.constant(stride - 1, S32))
            count = p.scalar_op(b, "divide", count, b.constant(stride, S32))
        sizes[((), d)] = count
    return sizes


@_HANDLERS.register("reverse")
def _reverse(p, b, instr):
    x = instr.operands[0]
    tracked = p.tracked(x)
    sizes = {((), d): s for d, s in tracked.items()}
    flipped = [d for d in instr.attr("dimensions") if d in tracked]
    if not flipped:
        return sizes
    # Reversing the padded array puts the padding first: shift the valid
    # elements back to the start (pad by the bound, then slice from
    # bound - size), so they begin at 0 as every dynamic array's do.
    dims = x.shape.dimensions
    wide = tuple(n * 2 if d in flipped else n for d, n in enumerate(dims))
    et = x.shape.element_type
    config = tuple(PaddingDim(0, n if d in flipped else 0, 0) for d, n in enumerate(dims))
    reversed_ = b.add("reverse", _array(et, dims), [x], dimensions=instr.attr("dimensions"))
    padded = b.add("pad", _array(et, wide), [reversed_, p.zero(b, et)], padding=config)
    zero = b.constant(0, S32)
    starts = [p.scalar_op(b, "subtract", b.constant(n, S32), tracked[d]) if d in flipped else zero
              for d, n in enumerate(dims)]
    value = b.add("dynamic-slice", _array(et, dims), [padded] + starts,
                  dynamic_slice_sizes=tuple(dims))
    return value, sizes


@_HANDLERS.register("broadcast")
def _broadcast(p, b, instr):
    mapping = instr.attr("dimensions", ())
    return {((), mapping[i]): s for i, s in p.tracked(instr.operands[0]).items()}


@_HANDLERS.register("transpose")
def _transpose(p, b, instr):
    tracked = p.tracked(instr.operands[0])
    return {((), j): tracked[d] for j, d in enumerate(instr.attr("dimensions"))
            if d in tracked}


@_HANDLERS.register("tuple")
def _tuple(p, b, instr):
    return {((k,) + i, d): s for k, o in enumerate(instr.operands)
            for (i, d), s in p.sizes.get(id(o), {}).items()}


@_HANDLERS.register("get-tuple-element")
def _get_tuple_element(p, b, instr):
    k = instr.attr("index")
    return {(i[1:], d): s for (i, d), s in p.sizes.get(id(instr.operands[0]), {}).items()
            if i[:1] == (k,)}
