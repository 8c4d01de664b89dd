"""ScatterToDynamicUpdateSlice (``scatter-to-dynamic-update-slice``): a
scatter that writes one window (its start indices hold a single index
vector) over its input, keeping the update (the combiner returns its
second parameter), becomes a dynamic-update-slice. JAX lowers
``x.at[i].set(v)`` to such a scatter; in a loop (``fori_loop`` over the
rows of a state) the scatter copied the whole state every step (the
scatter emitter's output starts as a copy of its input: 104 ms for 256
row updates of f32[256, 4096], XLA:CPU 1.7 ms), where a
dynamic-update-slice is updated in place (buffer assignment).

The semantics are kept exactly: scatter skips a window that does not fit
the operand (a start below 0 or past ``dim - window``), where a
dynamic-update-slice clamps its start. So the update is

    select(in_bounds, update, dynamic-slice(operand, starts))

written at those starts: out of bounds, the clamped window is written
back unchanged. ``in_bounds`` compares each start with the constants 0 and
``dim - window`` in the index type (unsigned types unsigned); a bound the
index type cannot hold leaves the scatter alone, and so do batching
dimensions, several operands, other combiners and scatters inside fused
computations.
"""
import numpy as np

from xla.hlo.attributes import SliceDim
from xla.hlo.ir import HloInstruction
from xla.hlo.shape import Shape
from xla.hlo.types import PrimitiveType as PT
from xla.service.hlo_pass import HloPass
from xla.service.pass_utils import fusion_computations


def _overwrites(comp):
    """Whether ``comp`` returns its second parameter (scatter's overwrite)."""
    params = [i for i in comp.instructions if i.opcode == "parameter"]
    root = comp.root_instruction
    return len(params) == 2 and root.opcode == "parameter" and root.parameter_number == 1


def plan(scatter):
    """(window sizes per operand dimension, {operand dim: index component})
    where ``scatter`` is rewritten (module docstring), else None."""
    if scatter.opcode != "scatter" or len(scatter.operands) != 3 or not scatter.shape.is_array:
        return None
    operand, indices, updates = scatter.operands
    if scatter.attr("input_batching_dims") or scatter.attr("scatter_indices_batching_dims"):
        return None
    comp = scatter.attr("to_apply")
    if comp is None or not _overwrites(comp):
        return None
    et = indices.shape.element_type
    if not et.is_integer or et.bits < 8 or operand.shape.is_dynamic or updates.shape.is_dynamic \
            or updates.shape.element_type is not operand.shape.element_type:
        return None
    ivd = scatter.attr("index_vector_dim")
    ivd = indices.shape.rank if ivd is None else int(ivd)
    vectors = [n for d, n in enumerate(indices.shape.dimensions) if d != ivd]
    if int(np.prod(vectors, dtype=np.int64)) != 1:
        return None
    uwd = tuple(scatter.attr("update_window_dims", ()))
    inserted = set(scatter.attr("inserted_window_dims", ()))
    sd2od = tuple(scatter.attr("scatter_dims_to_operand_dims", ()))
    if any(n != 1 for d, n in enumerate(updates.shape.dimensions) if d not in uwd):
        return None
    window_dims = [d for d in range(operand.shape.rank) if d not in inserted]
    if len(window_dims) != len(uwd):
        return None
    sizes = [1] * operand.shape.rank
    for d, u in zip(window_dims, uwd):
        sizes[d] = updates.shape.dimensions[u]
    info = np.iinfo(et.dtype)
    for d, n in enumerate(operand.shape.dimensions):
        if sizes[d] > n or n - sizes[d] > info.max:
            return None
    return sizes, {d: k for k, d in enumerate(sd2od)}


class ScatterToDynamicUpdateSlice(HloPass):
    name = "scatter-to-dynamic-update-slice"

    def run(self, module):
        changed = False
        fused = fusion_computations(module)
        for comp in module.computations:
            if id(comp) in fused:
                continue
            for scatter in list(comp.instructions):
                found = plan(scatter)
                if found is None or scatter.control_predecessors:
                    continue
                self._rewrite(module, comp, scatter, *found)
                changed = True
        return changed

    @staticmethod
    def _rewrite(module, comp, scatter, sizes, components):
        operand, indices, updates = scatter.operands
        et = indices.shape.element_type
        scalar = Shape.array(et, ())
        rank = operand.shape.rank

        def add(opcode, shape, operands, **attrs):
            instr = HloInstruction(opcode, shape, operands, name=module.unique_name(opcode),
                                   attrs=attrs)
            comp.insert_before(scatter, instr)
            return instr

        def constant(value):
            instr = HloInstruction.create_constant(np.asarray(value, et.dtype), scalar)
            instr.name = module.unique_name("constant")
            comp.insert_before(scatter, instr)
            return instr

        count = max(components.values(), default=-1) + 1
        vector = add("reshape", Shape.array(et, (count,)), [indices]) if count else None
        pred = Shape.array(PT.PRED, ())
        starts, fits = [], None   # fits: every start inside [0, dim - window]
        for d in range(rank):
            k = components.get(d)
            if k is None:
                starts.append(constant(0))
                continue
            piece = add("slice", Shape.array(et, (1,)), [vector], slice=(SliceDim(k, k + 1, 1),))
            starts.append(add("reshape", scalar, [piece]))
            bound = operand.shape.dimensions[d] - sizes[d]
            conds = [add("compare", pred, [starts[d], constant(bound)], direction="LE")]
            if et.is_signed_integer:
                conds.append(add("compare", pred, [starts[d], constant(0)], direction="GE"))
            for c in conds:
                fits = c if fits is None else add("and", pred, [fits, c])
        window = Shape.array(operand.shape.element_type, sizes)
        update = add("reshape", window, [updates])
        if fits is not None:
            old = add("dynamic-slice", window, [operand] + starts, dynamic_slice_sizes=tuple(sizes))
            mask = add("broadcast", window.with_element_type(PT.PRED), [fits], dimensions=())
            update = add("select", window, [mask, update, old])
        dus = HloInstruction("dynamic-update-slice", scatter.shape, [operand, update] + starts,
                             name=module.unique_name("dynamic-update-slice"))
        comp.insert_before(scatter, dus)
        comp.replace_instruction(scatter, dus)
