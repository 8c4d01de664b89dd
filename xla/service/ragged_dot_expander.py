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
from xla.hlo.ir import HloInstruction
from xla.hlo.shape import Shape
from xla.hlo.types import PrimitiveType
from xla.service.hlo_pass import HloPass


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


class RaggedDotExpander(HloPass):
    name = "ragged-dot-expander"

    def run(self, module):
        changed = False
        for comp in module.computations:
            for instr in list(comp.instructions):
                if _expandable(instr):
                    self._expand(module, comp, instr)
                    changed = True
        return changed

    @staticmethod
    def _expand(module, comp, rd):
        lhs, rhs, sizes = rd.operands
        if _batch_kind(rd):
            dims = {k: tuple(rd.attr(k, ()) or ()) for k in ("lhs_batch_dims", "rhs_batch_dims",
                                                             "lhs_contracting_dims",
                                                             "rhs_contracting_dims")}
            dot = HloInstruction("dot", rd.shape, [lhs, rhs], name=module.unique_name("dot"),
                                 attrs={k: v for k, v in dims.items() if v})
            comp.insert_before(rd, dot)
            comp.replace_instruction(rd, dot)
            return
        if _contracting_2d(rd):
            RaggedDotExpander._expand_contracting(module, comp, rd)
            return
        lc = rd.attr("lhs_contracting_dims")[0]
        rc = rd.attr("rhs_contracting_dims")[0]
        gd = rd.attr("rhs_group_dims")[0]
        ragged = 1 - lc
        g = rhs.shape.dimensions[gd]
        m = lhs.shape.dimensions[ragged]
        out = rd.shape
        s64 = PrimitiveType.S64

        def add(opcode, shape, operands, **attrs):
            instr = HloInstruction(opcode, shape, operands, name=module.unique_name(opcode),
                                   attrs=attrs)
            comp.insert_before(rd, instr)
            return instr

        def scalar_s64(value):
            return HloInstruction.create_constant(_np_s64(value), Shape.array(s64, ()),
                                                  name=module.unique_name("constant"))

        zero = scalar_s64(0)
        comp.insert_before(rd, zero)
        fzero = HloInstruction.create_constant(_np_zero(out), Shape.array(out.element_type, ()),
                                               name=module.unique_name("constant"))
        comp.insert_before(rd, fzero)
        acc = add("broadcast", out, [fzero], dimensions=())
        rows = add("iota", Shape.array(s64, (m,)), [], iota_dimension=0)
        pred_rows = Shape.array(PrimitiveType.PRED, (m,))
        sizes64 = sizes if sizes.shape.element_type == s64 else add(
            "convert", Shape.array(s64, sizes.shape.dimensions), [sizes])
        end = zero
        rhs_dims = list(rhs.shape.dimensions)
        part_dims = rhs_dims[:gd] + rhs_dims[gd + 1:]
        rc2 = rc - (rc > gd)
        # The result's row dimension: lhs free dims come first in a dot's result.
        for j in range(g):
            size_j = add("reshape", Shape.array(s64, ()),
                         [add("slice", Shape.array(s64, (1,)), [sizes64], slice=(SliceDim(j, j + 1, 1),))])
            start = end
            end = add("add", Shape.array(s64, ()), [start, size_j])
            starts = add("broadcast", Shape.array(s64, (m,)), [start], dimensions=())
            ends = add("broadcast", Shape.array(s64, (m,)), [end], dimensions=())
            inside = add("and", pred_rows, [add("compare", pred_rows, [rows, starts], direction="GE"),
                                            add("compare", pred_rows, [rows, ends], direction="LT")])
            mask = add("broadcast", Shape.array(PrimitiveType.PRED, out.dimensions), [inside],
                       dimensions=(0,))
            slab = [SliceDim(0, d, 1) for d in rhs_dims]
            slab[gd] = SliceDim(j, j + 1, 1)
            rj = add("reshape", Shape.array(rhs.shape.element_type, part_dims),
                     [add("slice", Shape.array(rhs.shape.element_type,
                                               [1 if k == gd else d for k, d in enumerate(rhs_dims)]),
                          [rhs], slice=tuple(slab))])
            part = add("dot", out, [lhs, rj], lhs_contracting_dims=(lc,), rhs_contracting_dims=(rc2,))
            acc = add("select", out, [mask, part, acc])
        comp.replace_instruction(rd, acc)


def _expand_contracting(module, comp, rd):
    """Result slice j: the dot of lhs and rhs with every contracting
    position outside group j selected to zero in both (so an inf or NaN
    there never reaches the result), stacked along a new leading dimension."""
    lhs, rhs, sizes = rd.operands
    lc = rd.attr("lhs_contracting_dims")[0]
    rc = rd.attr("rhs_contracting_dims")[0]
    k = lhs.shape.dimensions[lc]
    g = sizes.shape.dimensions[0]
    out = rd.shape
    s64, pred = PrimitiveType.S64, PrimitiveType.PRED

    def add(opcode, shape, operands, **attrs):
        instr = HloInstruction(opcode, shape, operands, name=module.unique_name(opcode), attrs=attrs)
        comp.insert_before(rd, instr)
        return instr

    def constant(value, shape):
        c = HloInstruction.create_constant(_np_zero(shape) + value if value else _np_zero(shape),
                                           Shape.array(shape.element_type, ()),
                                           name=module.unique_name("constant"))
        comp.insert_before(rd, c)
        return c

    positions = add("iota", Shape.array(s64, (k,)), [], iota_dimension=0)
    sizes64 = sizes if sizes.shape.element_type == s64 else add(
        "convert", Shape.array(s64, (g,)), [sizes])
    end = constant(0, Shape.array(s64, ()))
    lzero = add("broadcast", lhs.shape, [constant(0, lhs.shape)], dimensions=())
    rzero = add("broadcast", rhs.shape, [constant(0, rhs.shape)], dimensions=())
    part_shape = Shape.array(out.element_type, out.dimensions[1:])
    parts = []
    for j in range(g):
        size_j = add("reshape", Shape.array(s64, ()),
                     [add("slice", Shape.array(s64, (1,)), [sizes64], slice=(SliceDim(j, j + 1, 1),))])
        start = end
        end = add("add", Shape.array(s64, ()), [start, size_j])
        inside = add("and", Shape.array(pred, (k,)), [
            add("compare", Shape.array(pred, (k,)),
                [positions, add("broadcast", Shape.array(s64, (k,)), [start], dimensions=())],
                direction="GE"),
            add("compare", Shape.array(pred, (k,)),
                [positions, add("broadcast", Shape.array(s64, (k,)), [end], dimensions=())],
                direction="LT")])
        lmask = add("broadcast", Shape.array(pred, lhs.shape.dimensions), [inside], dimensions=(lc,))
        rmask = add("broadcast", Shape.array(pred, rhs.shape.dimensions), [inside], dimensions=(rc,))
        lj = add("select", lhs.shape, [lmask, lhs, lzero])
        rj = add("select", rhs.shape, [rmask, rhs, rzero])
        d = add("dot", part_shape, [lj, rj], lhs_contracting_dims=(lc,), rhs_contracting_dims=(rc,))
        parts.append(add("reshape", Shape.array(out.element_type, (1,) + tuple(part_shape.dimensions)),
                         [d]))
    if not parts:     # no groups: an empty result
        stacked = add("broadcast", out, [constant(0, out)], dimensions=())
    elif len(parts) == 1:
        stacked = add("reshape", out, parts)
    else:
        stacked = add("concatenate", out, parts, dimensions=(0,))
    comp.replace_instruction(rd, stacked)


RaggedDotExpander._expand_contracting = staticmethod(_expand_contracting)


def _np_s64(value):
    import numpy as np
    return np.asarray(value, np.int64)


def _np_zero(shape):
    import numpy as np
    return np.zeros((), shape.dtype)
