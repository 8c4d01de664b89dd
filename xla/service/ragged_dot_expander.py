"""RaggedDotExpander: a ``ragged-dot`` becomes ordinary dots and selects,
for backends without a ragged kernel (the CPU runs it after this pass).
Every form XLA accepts is expanded, by the kind of the lhs ragged
dimension (``ragged_dot_mode``; semantics as the interpreter defines them,
``xla/hlo/evaluator/ops_linalg.py``):

* non-contracting (the mixture-of-experts form): for each group ``j`` of
  the ``g``, the dot of the whole lhs with slice ``j`` of the rhs along its
  group dimension, kept where the lhs position along the ragged dimension
  lies in group ``j`` (``start_j <= p < end_j``, the running sums of the
  sizes); positions in no group are zero;
* contracting: result slice ``j`` is the dot over group ``j``'s part of the
  contracting dimension, both operands selected to zero outside it (so an
  inf or NaN there never reaches the result), stacked along a new leading
  dimension;
* batch: the dot itself (as XLA computes it).

Group sizes of rank 1 apply to every position of the prefix dimensions
(batch dimensions and, for the non-contracting kind, the free dimensions
before the ragged one; for the contracting kind the contracting ones
before it); group sizes of full rank give each prefix position its own
groups. That is ``g`` times the work of one dot: a fallback that gives the
right answer, not a fast ragged kernel.
"""
from xla.hlo.attributes import SliceDim
from xla.hlo.shape import Shape
from xla.hlo.shape_functions_compute import ragged_dot_mode
from xla.hlo.types import PrimitiveType
from xla.service.pass_utils import OpExpanderPass

S64, PRED = PrimitiveType.S64, PrimitiveType.PRED


def _mode(instr):
    """The RaggedDotMode of ``instr``, or None for a malformed one (the
    verifier reports those)."""
    try:
        return ragged_dot_mode(instr.operands[0].shape.rank, instr.attr("lhs_contracting_dims", ()),
                               instr.attr("lhs_batch_dims", ()), instr.attr("lhs_ragged_dims", ()),
                               instr.attr("rhs_group_dims", ()))
    except Exception:   # noqa: BLE001 - the verifier reports malformed ones
        return None


def _expandable(instr):
    if instr.opcode != "ragged-dot" or len(instr.operands) != 3 or not instr.shape.is_array:
        return False
    mode = _mode(instr)
    if mode is None:
        return False
    sizes = instr.operands[2].shape
    return sizes.is_array and sizes.rank in (1, len(mode.group_prefix) + 1)


def _dims(rd):
    return tuple(tuple(rd.attr(k, ()) or ()) for k in ("lhs_batch_dims", "rhs_batch_dims",
                                                       "lhs_contracting_dims",
                                                       "rhs_contracting_dims"))


def _dot(b, shape, lhs, rhs, lb, rb, lc, rc):
    attrs = {k: v for k, v in (("lhs_batch_dims", lb), ("rhs_batch_dims", rb),
                               ("lhs_contracting_dims", lc), ("rhs_contracting_dims", rc)) if v}
    return b.add("dot", shape, [lhs, rhs], **attrs)


class RaggedDotExpander(OpExpanderPass):
    name = "ragged-dot-expander"

    def matches(self, instr):
        return _expandable(instr)

    def expand(self, b, rd):
        mode = _mode(rd)
        if mode.kind == "batch":
            return _dot(b, rd.shape, *rd.operands[:2], *_dims(rd))
        if mode.kind == "contracting":
            return _expand_contracting(b, rd, mode)
        return _expand_noncontracting(b, rd, mode)


def _group_masks(b, rd, mode):
    """For each group j: (axes, pred mask) over the lhs dimensions ``axes``
    (the prefix dimensions, then the ragged one), true where the position
    along the ragged dimension lies in group j of that prefix position."""
    lhs, _, sizes = rd.operands
    axes = list(mode.group_prefix) + [mode.ragged]
    dims = [lhs.shape.dimensions[d] for d in axes]
    g = sizes.shape.dimensions[-1]
    lead = list(sizes.shape.dimensions[:-1])          # [] or the prefix dimensions
    sizes64 = sizes if sizes.shape.element_type == S64 else b.add(
        "convert", Shape.array(S64, sizes.shape.dimensions), [sizes])
    positions = b.add("iota", Shape.array(S64, dims), iota_dimension=len(dims) - 1)
    bound_shape, full = Shape.array(S64, lead), Shape.array(S64, dims)
    spread = tuple(range(len(lead)))
    mask = Shape.array(PRED, dims)
    end = b.add("broadcast", bound_shape, [b.constant(0, S64)], dimensions=())
    for j in range(g):
        window = tuple(SliceDim(0, d, 1) for d in lead) + (SliceDim(j, j + 1, 1),)
        size_j = b.add("reshape", bound_shape,
                       [b.add("slice", Shape.array(S64, lead + [1]), [sizes64], slice=window)])
        start, end = end, b.add("add", bound_shape, [end, size_j])
        yield axes, b.add("and", mask, [
            b.add("compare", mask, [positions, b.add("broadcast", full, [start], dimensions=spread)],
                  direction="GE"),
            b.add("compare", mask, [positions, b.add("broadcast", full, [end], dimensions=spread)],
                  direction="LT")])


def _place(b, mask, targets, dims):
    """``mask`` (over some lhs dimensions) broadcast into an array of
    ``dims``, its dimension k landing on ``targets[k]``."""
    order = sorted(range(len(targets)), key=lambda k: targets[k])
    if order != list(range(len(order))):
        mask = b.add("transpose", Shape.array(PRED, [mask.shape.dimensions[k] for k in order]),
                     [mask], dimensions=tuple(order))
    return b.add("broadcast", Shape.array(PRED, dims), [mask],
                 dimensions=tuple(sorted(targets)))


def _expand_noncontracting(b, rd, mode):
    """The dot of the whole lhs with each rhs group slice, kept on its rows."""
    lhs, rhs, _ = rd.operands
    lb, rb, lc, rc = _dims(rd)
    gd = mode.group_dim
    out = rd.shape
    rhs_dims = list(rhs.shape.dimensions)
    part_dims = rhs_dims[:gd] + rhs_dims[gd + 1:]
    rb2 = tuple(d - (d > gd) for d in rb)
    rc2 = tuple(d - (d > gd) for d in rc)
    # Where each lhs dimension lands in the result: batch dimensions first
    # (in lhs_batch_dims order), then the lhs free ones in order.
    free = [d for d in range(lhs.shape.rank) if d not in lb and d not in lc]
    where = {d: k for k, d in enumerate(lb)} | {d: len(lb) + k for k, d in enumerate(free)}
    acc = b.add("broadcast", out, [b.constant(0, out.element_type)], dimensions=())
    for j, (axes, inside) in enumerate(_group_masks(b, rd, mode)):
        slab = [SliceDim(0, d, 1) for d in rhs_dims]
        slab[gd] = SliceDim(j, j + 1, 1)
        rj = b.add("reshape", Shape.array(rhs.shape.element_type, part_dims),
                   [b.add("slice", Shape.array(rhs.shape.element_type,
                                               [1 if k == gd else d for k, d in enumerate(rhs_dims)]),
                          [rhs], slice=tuple(slab))])
        part = _dot(b, out, lhs, rj, lb, rb2, lc, rc2)
        mask = _place(b, inside, [where[d] for d in axes], out.dimensions)
        acc = b.add("select", out, [mask, part, acc])
    return acc


def _expand_contracting(b, rd, mode):
    """Result slice j: the dot of lhs and rhs with every contracting
    position outside group j selected to zero in both, stacked along a new
    leading dimension."""
    lhs, rhs, _ = rd.operands
    lb, rb, lc, rc = _dims(rd)
    out = rd.shape
    to_rhs = dict(zip(lb + lc, rb + rc))
    lzero = b.add("broadcast", lhs.shape, [b.constant(0, lhs.shape.element_type)], dimensions=())
    rzero = b.add("broadcast", rhs.shape, [b.constant(0, rhs.shape.element_type)], dimensions=())
    part_shape = Shape.array(out.element_type, out.dimensions[1:])
    stacked = Shape.array(out.element_type, (1,) + tuple(part_shape.dimensions))
    parts = []
    for axes, inside in _group_masks(b, rd, mode):
        lj = b.add("select", lhs.shape, [_place(b, inside, axes, lhs.shape.dimensions), lhs, lzero])
        rj = b.add("select", rhs.shape, [_place(b, inside, [to_rhs[d] for d in axes],
                                                rhs.shape.dimensions), rhs, rzero])
        parts.append(b.add("reshape", stacked, [_dot(b, part_shape, lj, rj, lb, rb, lc, rc)]))
    if not parts:     # no groups: an empty result
        return b.add("broadcast", out, [b.constant(0, out.element_type)], dimensions=())
    if len(parts) == 1:
        return b.add("reshape", out, parts)
    return b.add("concatenate", out, parts, dimensions=(0,))
