"""RaggedDotExpander: a ``ragged-dot`` whose lhs ragged dimension is a
non-contracting one (the mixture-of-experts form: rows of the lhs split
into consecutive groups, group ``j`` multiplied by slice ``j`` of the rhs
along its group dimension), with no batch dimensions and ``group_sizes`` of
rank 1, becomes ordinary dots and selects, for backends without a ragged
kernel (the CPU runs it after this pass).

For each group ``j`` of the ``g``: the dot of the whole lhs with rhs slice
``j``, kept on the rows ``start_j <= row < end_j`` (``end_j`` the running
sum of the sizes, ``start_j`` the previous one); rows in no group are zero,
as XLA defines them (``xla/hlo/evaluator/ops_linalg.py``). That is ``g``
times the work of one dot: a fallback that gives the right answer, not a
fast ragged kernel. A ragged contracting dimension of a 2-D x 2-D dot
gives one dot per group over that group's part of it (both operands
selected to zero outside), stacked; a ragged batch dimension is the dot
itself (as XLA computes it). Other forms (batch dimensions with a ragged
non-contracting or contracting one, group sizes per row of a prefix,
several contracting dimensions) are left alone, and the backend names the
op it does not support.
"""
from xla.hlo.attributes import SliceDim
from xla.hlo.shape import Shape
from xla.hlo.types import PrimitiveType
from xla.service.pass_utils import OpExpanderPass

S64, PRED = PrimitiveType.S64, PrimitiveType.PRED


def _batch_kind(instr):
    """Whether the ragged dimension is a batch one: then the op is the dot
    itself (every batch position computed, as XLA computes it)."""
    from xla.hlo.shape_inference import ragged_dot_mode
    try:
        mode = ragged_dot_mode(instr.operands[0].shape.rank, instr.attr("lhs_contracting_dims", ()),
                               instr.attr("lhs_batch_dims", ()), instr.attr("lhs_ragged_dims", ()),
                               instr.attr("rhs_group_dims", ()))
    except Exception:   # noqa: BLE001 - the verifier reports malformed ones
        return False
    return mode.kind == "batch"


def _contracting_2d(instr):
    """A ragged contracting dimension of a 2-D x 2-D dot with rank-1 group
    sizes: result slice j is the dot over group j's part of it."""
    lhs, rhs, sizes = instr.operands
    lc = tuple(instr.attr("lhs_contracting_dims", ()) or ())
    return (lhs.shape.rank == 2 and rhs.shape.rank == 2 and len(lc) == 1 and
            not instr.attr("lhs_batch_dims", ()) and
            tuple(instr.attr("lhs_ragged_dims", ()) or ()) == lc and
            not instr.attr("rhs_group_dims", ()) and sizes.shape.rank == 1)


def _expandable(instr):
    if instr.opcode != "ragged-dot":
        return False
    if _batch_kind(instr) or _contracting_2d(instr):
        return True
    lhs, rhs, sizes = instr.operands
    lc = tuple(instr.attr("lhs_contracting_dims", ()) or ())
    rc = tuple(instr.attr("rhs_contracting_dims", ()) or ())
    lb = tuple(instr.attr("lhs_batch_dims", ()) or ())
    ragged = tuple(instr.attr("lhs_ragged_dims", ()) or ())
    groups = tuple(instr.attr("rhs_group_dims", ()) or ())
    return (lhs.shape.rank == 2 and not lb and len(lc) == 1 and len(rc) == 1 and
            ragged == (1 - lc[0],) and len(groups) == 1 and rhs.shape.rank == 3 and
            sizes.shape.rank == 1 and instr.shape.is_array)


class RaggedDotExpander(OpExpanderPass):
    name = "ragged-dot-expander"

    def matches(self, instr):
        return _expandable(instr)

    def expand(self, b, rd):
        if _batch_kind(rd):
            dims = {k: tuple(rd.attr(k, ()) or ()) for k in ("lhs_batch_dims", "rhs_batch_dims",
                                                             "lhs_contracting_dims",
                                                             "rhs_contracting_dims")}
            return b.add("dot", rd.shape, rd.operands[:2], **{k: v for k, v in dims.items() if v})
        if _contracting_2d(rd):
            return _expand_contracting(b, rd)
        return _expand_noncontracting(b, rd)


def _group_masks(b, sizes, length):
    """For each group j: pred[length], true at positions start_j <= p < end_j
    (end_j the running sum of ``sizes``, start_j the one before)."""
    g = sizes.shape.dimensions[0]
    sizes64 = sizes if sizes.shape.element_type == S64 else b.add(
        "convert", Shape.array(S64, (g,)), [sizes])
    positions = b.add("iota", Shape.array(S64, (length,)), iota_dimension=0)
    vector, scalar = Shape.array(S64, (length,)), Shape.array(S64, ())
    mask = Shape.array(PRED, (length,))
    end = b.constant(0, S64)
    for j in range(g):
        size_j = b.add("reshape", scalar,
                       [b.add("slice", Shape.array(S64, (1,)), [sizes64], slice=(SliceDim(j, j + 1, 1),))])
        start, end = end, b.add("add", scalar, [end, size_j])
        yield b.add("and", mask, [
            b.add("compare", mask, [positions, b.add("broadcast", vector, [start], dimensions=())],
                  direction="GE"),
            b.add("compare", mask, [positions, b.add("broadcast", vector, [end], dimensions=())],
                  direction="LT")])


def _expand_noncontracting(b, rd):
    """The dot of the whole lhs with each rhs group slice, kept on its rows."""
    lhs, rhs, sizes = rd.operands
    lc = rd.attr("lhs_contracting_dims")[0]
    rc = rd.attr("rhs_contracting_dims")[0]
    gd = rd.attr("rhs_group_dims")[0]
    out = rd.shape
    rhs_dims = list(rhs.shape.dimensions)
    part_dims = rhs_dims[:gd] + rhs_dims[gd + 1:]
    rc2 = rc - (rc > gd)
    acc = b.add("broadcast", out, [b.constant(0, out.element_type)], dimensions=())
    # The result's row dimension: lhs free dims come first in a dot's result.
    for j, inside in enumerate(_group_masks(b, sizes, lhs.shape.dimensions[1 - lc])):
        mask = b.add("broadcast", Shape.array(PRED, out.dimensions), [inside], dimensions=(0,))
        slab = [SliceDim(0, d, 1) for d in rhs_dims]
        slab[gd] = SliceDim(j, j + 1, 1)
        rj = b.add("reshape", Shape.array(rhs.shape.element_type, part_dims),
                   [b.add("slice", Shape.array(rhs.shape.element_type,
                                               [1 if k == gd else d for k, d in enumerate(rhs_dims)]),
                          [rhs], slice=tuple(slab))])
        part = b.add("dot", out, [lhs, rj], lhs_contracting_dims=(lc,), rhs_contracting_dims=(rc2,))
        acc = b.add("select", out, [mask, part, acc])
    return acc


def _expand_contracting(b, rd):
    """Result slice j: the dot of lhs and rhs with every contracting
    position outside group j selected to zero in both (so an inf or NaN
    there never reaches the result), stacked along a new leading dimension."""
    lhs, rhs, sizes = rd.operands
    lc = rd.attr("lhs_contracting_dims")[0]
    rc = rd.attr("rhs_contracting_dims")[0]
    out = rd.shape
    lzero = b.add("broadcast", lhs.shape, [b.constant(0, lhs.shape.element_type)], dimensions=())
    rzero = b.add("broadcast", rhs.shape, [b.constant(0, rhs.shape.element_type)], dimensions=())
    part_shape = Shape.array(out.element_type, out.dimensions[1:])
    parts = []
    for inside in _group_masks(b, sizes, lhs.shape.dimensions[lc]):
        lmask = b.add("broadcast", Shape.array(PRED, lhs.shape.dimensions), [inside], dimensions=(lc,))
        rmask = b.add("broadcast", Shape.array(PRED, rhs.shape.dimensions), [inside], dimensions=(rc,))
        lj = b.add("select", lhs.shape, [lmask, lhs, lzero])
        rj = b.add("select", rhs.shape, [rmask, rhs, rzero])
        d = b.add("dot", part_shape, [lj, rj], lhs_contracting_dims=(lc,), rhs_contracting_dims=(rc,))
        parts.append(b.add("reshape", Shape.array(out.element_type, (1,) + tuple(part_shape.dimensions)),
                           [d]))
    if not parts:     # no groups: an empty result
        return b.add("broadcast", out, [b.constant(0, out.element_type)], dimensions=())
    if len(parts) == 1:
        return b.add("reshape", out, parts)
    return b.add("concatenate", out, parts, dimensions=(0,))
