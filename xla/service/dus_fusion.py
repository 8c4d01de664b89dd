"""dynamic-update-slice fusion: a DUS whose update is a loop fusion made
only for it joins that fusion as its root, so ``x[1:-1] = f(y)`` is one
kernel that writes ``f(y)`` straight into ``x`` (XLA fuses in-place DUS
the same way; buffer assignment's ``in_place_update_operand`` and
``emit_in_place.py`` then make it write only the update).

Runs after ``fusion``. A DUS joins its update's fusion when the fusion has
no other user, is a kLoop fusion with one array result (not a multi-output
one), and does not read the array the DUS updates (the kernel would read
elements it has already overwritten). The array and the start indices
become parameters of the fused computation; the fusion keeps its name and
computation, so a dump shows one fusion more than before and no DUS.
"""
from xla.hlo.ir import HloInstruction
from xla.service.hlo_pass import HloPass
from xla.service.pass_utils import fusion_computations


class DynamicUpdateSliceFusion(HloPass):
    name = "dynamic-update-slice-fusion"

    def run(self, module):
        changed = False
        fused = fusion_computations(module)
        for comp in list(module.computations):
            if id(comp) in fused:
                continue
            for dus in list(comp.instructions):
                if dus.opcode == "dynamic-update-slice" and dus.parent is comp:
                    changed |= self._fuse(comp, dus)
        return changed

    @staticmethod
    def _fuse(comp, dus):
        array, update, starts = dus.operands[0], dus.operands[1], list(dus.operands[2:])
        if (update.opcode != "fusion" or update.attr("kind") != "kLoop" or
                not update.shape.is_array or len(update.users) != 1 or
                comp.root_instruction is update or any(o is array for o in update.operands)):
            return False
        fused = update.attr("calls")
        if fused.root_instruction.opcode == "tuple":
            return False
        n = len(update.operands)
        new_params = []
        for k, operand in enumerate([array] + starts):
            p = HloInstruction.create_parameter(n + k, operand.shape,
                                                name=f"{dus.name}.param_{n + k}")
            fused.add_instruction(p)
            new_params.append(p)
        root = HloInstruction("dynamic-update-slice", dus.shape,
                              [new_params[0], fused.root_instruction] + new_params[1:],
                              name=dus.name, attrs=dict(dus.attrs))
        fused.add_instruction(root)
        fused.root_instruction = root
        fusion = HloInstruction("fusion", dus.shape, list(update.operands) + [array] + starts,
                                name=update.name, attrs=dict(update.attrs))
        comp.insert_before(dus, fusion)
        comp.replace_all_uses(dus, fusion)
        comp.remove_instruction(dus)
        comp.remove_instruction(update)
        return True
