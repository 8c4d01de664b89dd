"""DynamicIndexSplitter (XLA's pass of the same name): dynamic-slice and
dynamic-update-slice with their start indices as one rank-1 array (the old
form XLA still accepts: ``dynamic-slice(x, s32[2] i)``) get one scalar
start index per dimension instead (``slice`` of the array, ``reshape`` to a
scalar), the form the backends emit.

A rank-1 operand with its one scalar index is already canonical and is left
alone; nothing else changes.
"""
from xla.hlo.attributes import SliceDim
from xla.hlo.ir import HloInstruction
from xla.hlo.shape import Shape
from xla.service.hlo_pass import HloPass


def _vector_form(instr):
    first = {"dynamic-slice": 1, "dynamic-update-slice": 2}.get(instr.opcode)
    if first is None or len(instr.operands) != first + 1:
        return None
    index = instr.operands[first]
    # (A rank-1 operand's one start index is a scalar; a vector there is invalid.)
    if not index.shape.is_array or index.shape.rank != 1 or instr.operands[0].shape.rank == 1:
        return None
    return first


class DynamicIndexSplitter(HloPass):
    name = "dynamic-index-splitter"

    def run(self, module):
        changed = False
        for comp in module.computations:
            for instr in list(comp.instructions):
                first = _vector_form(instr)
                if first is None:
                    continue
                index = instr.operands[first]
                element = index.shape.element_type
                scalars = []
                for k in range(index.shape.dimensions[0]):
                    piece = HloInstruction("slice", Shape.array(element, (1,)), [index],
                                           name=module.unique_name("slice"),
                                           attrs={"slice": (SliceDim(k, k + 1, 1),)})
                    comp.insert_before(instr, piece)
                    scalar = HloInstruction("reshape", Shape.array(element, ()), [piece],
                                            name=module.unique_name("reshape"))
                    comp.insert_before(instr, scalar)
                    scalars.append(scalar)
                new = HloInstruction(instr.opcode, instr.shape,
                                     list(instr.operands[:first]) + scalars,
                                     name=module.unique_name(instr.opcode), attrs=dict(instr.attrs))
                comp.insert_before(instr, new)
                comp.replace_instruction(instr, new)
                changed = True
        return changed
