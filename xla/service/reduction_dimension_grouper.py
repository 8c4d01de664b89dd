"""ReductionDimensionGrouper (``reduction-dimension-grouper``, after XLA's
pass of that name): a reduce over several dimensions that lie next to each
other in memory reduces one dimension of their product instead, through a
reshape of its operand (a bitcast once layouts are final). A reduce over
(2, 56, 56) of f32[16, 32, 2, 56, 56] (GroupNorm's statistics as JAX
lowers them) was a row reduction vectorized over rows of 56 elements, a
short vector loop per row: 0.59 ms; over rows of 6272, 0.075 ms.

The operand's elementwise producers are rebuilt in the grouped shape (a
copy where others read them too, as fusion duplicates elementwise
producers into each consumer), their broadcasts of kept dimensions (a
group's mean) broadcast into it, so the fusion that follows computes the
reduce's input in its loop over the grouped shape: a reshape of a value
computed inside a fusion would rebuild each element's index with a
division per dimension. Other producers (parameters, materialized
values) are reshaped: row-major to row-major, the same bytes.

Where the (grouped) reduced dimension lies just above a kept minor
dimension of c < 16 elements (a per-channel mean of NHWC images: a column
reduction three columns wide, folded three elements per row) and the
reducer is one associative, commutative op, its extent R is split too:
[..., R, c] becomes [..., R / g, g * c] with g * c a multiple of 16 (48
columns for c = 3), reduced to [..., g * c], then [..., g, c] reduced to
[..., c]. Float sums and products regroup as a row reduction's lanes do.
The per-channel mean of u8[64, 224, 224, 3] 9.1 -> 0.61 ms (XLA:CPU
6.2-11).

Applies to single-input reduces of a row-major operand (and result) whose
reduced dimensions are consecutive, at least two of them or one just above
a narrow kept minor dimension (at least 32 rows of g), before fusion and
after layout assignment.
"""
import math

from xla.hlo.opcodes import ELEMENTWISE
from xla.hlo.shape import Shape
from xla.service.pass_utils import OpExpanderPass


# A reduce along the dimension just above a kept minor dimension of fewer
# elements than this (a column reduction a few columns wide) is split.
NARROW_COLUMNS = 16
# Reducers the split may regroup (their ops are associative and commutative;
# float sums and products regroup as a row reduction's lanes do).
_REGROUPABLE = frozenset(["add", "multiply", "maximum", "minimum", "and", "or"])


class ReductionDimensionGrouper(OpExpanderPass):
    name = "reduction-dimension-grouper"

    def matches(self, instr):
        return _plan(instr) is not None

    def expand(self, b, reduce):
        first, last, split = _plan(reduce)
        x = reduce.operands[0]
        dims = list(x.shape.dimensions)
        grouped = dims[:first] + [math.prod(dims[first:last + 1])] + dims[last + 1:]
        removed = last - first
        target = list(grouped)
        if split:
            # [..., R, c] -> [..., R / g, g * c]: each of the g * c columns one
            # channel's partial fold.
            target[first] //= split
            target[first + 1] *= split

        def new_dim(d):
            """Dimension ``d`` of the operand in the target shape (None where
            the split mixes it with another)."""
            g = d if d < first else first if d <= last else d - removed
            return None if split and g >= first else g

        memo = {}

        def rebuild(h):
            if id(h) in memo:
                return memo[id(h)]
            shape = Shape.array(h.shape.element_type, target)
            bdims = h.attr("dimensions", ()) if h.opcode == "broadcast" else ()
            if h.opcode == "broadcast" and not any(first <= d <= last for d in bdims) \
                    and all(new_dim(d) is not None for d in bdims):
                out = b.add("broadcast", shape, [h.operands[0]],
                            dimensions=tuple(new_dim(d) for d in bdims))
            elif (h.opcode in ELEMENTWISE and h.operands
                  and all(o.shape.is_array and o.shape.dimensions == h.shape.dimensions
                          and _row_major(o.shape) for o in h.operands)):
                attrs = {k: v for k, v in h.attrs.items() if k != "control-predecessors"}
                out = b.add(h.opcode, shape, [rebuild(o) for o in h.operands], **attrs)
            else:
                source = h
                while source.opcode in ("reshape", "bitcast") and _row_major(source.operands[0].shape) \
                        and source.operands[0].shape.element_type is h.shape.element_type:
                    source = source.operands[0]
                out = b.add("reshape", shape, [source])
            memo[id(h)] = out
            return out

        attrs = {k: v for k, v in reduce.attrs.items() if k != "control-predecessors"}
        attrs["dimensions"] = (first,)
        init = reduce.operands[1]
        if not split:
            return b.add("reduce", reduce.shape, [rebuild(x), init], **attrs)
        et = reduce.shape.element_type
        partial_dims = target[:first] + target[first + 1:]
        partial = b.add("reduce", Shape.array(et, partial_dims), [rebuild(x), init], **attrs)
        lanes = b.add("reshape", Shape.array(et, target[:first] + [split, grouped[first + 1]]
                                             + target[first + 2:]), [partial])
        return b.add("reduce", reduce.shape, [lanes, init], **attrs)


def _row_major(shape):
    return shape.is_array and list(shape.physical_minor_to_major()) == list(
        range(shape.rank - 1, -1, -1))


def _plan(instr):
    """(first, last, split) when ``instr`` is a reduce this pass rewrites:
    its reduced dimensions ``first``..``last`` of a row-major operand (its
    result row-major too) are grouped where there are several, and where
    the group is just above the minor dimension, which is kept and has
    fewer than NARROW_COLUMNS elements c, the group's extent R is split
    into R / g rows of g * c columns (``split`` = g: g * c a multiple of 16)
    for a regroupable reducer; else None."""
    if instr.opcode != "reduce" or len(instr.operands) != 2 or not instr.shape.is_array:
        return None
    x = instr.operands[0]
    dims = sorted(instr.attr("dimensions", ()))
    if not dims or dims != list(range(dims[0], dims[-1] + 1)):
        return None
    if not _row_major(x.shape) or not _row_major(instr.shape):
        return None
    first, last = dims[0], dims[-1]
    split = None
    c = x.shape.dimensions[-1] if last == x.shape.rank - 2 else None
    if c is not None and c < NARROW_COLUMNS and _regroupable(instr.attr("to_apply")):
        g = NARROW_COLUMNS // math.gcd(c, NARROW_COLUMNS)
        rows = math.prod(x.shape.dimensions[first:last + 1])
        if rows % g == 0 and rows // g >= 2 * g:
            split = g
    if first == last and split is None:
        return None
    return first, last, split


def _regroupable(comp):
    """Whether reducer ``comp`` is one associative, commutative binary op of
    its two parameters."""
    root = comp.root_instruction if comp is not None else None
    return (root is not None and root.opcode in _REGROUPABLE and len(comp.instructions) == 3
            and all(o.opcode == "parameter" for o in root.operands))
