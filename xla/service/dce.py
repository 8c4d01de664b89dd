"""HloDCE: removes dead instructions and dead computations.

An instruction is dead when it is not reachable from its computation's
root through operands and control predecessors (a control predecessor of a
live instruction counts as used), and is neither a parameter nor an
instruction with a side effect: opcodes in ``xla.hlo.opcodes.SIDE_EFFECTING``,
custom-calls with ``custom_call_has_side_effect=true``, and instructions
that call a computation containing one of those (a while loop whose body
sends, a call of such a computation). Instructions reachable from a kept
side-effecting instruction are live too. Every computation of the module is
cleaned, fused computations included.

A computation is dead when it is not the entry and not called, directly or
transitively, from the entry (after dead instructions are removed, so a
computation called only by a dead instruction goes too). Dead computations
are removed whatever they contain.

What it does not do: it never removes parameters (a computation's signature
is fixed) or changes signatures, tuple elements of while loops, or unused
outputs of multi-output instructions; the order of the remaining
instructions is unchanged (a schedule stays valid).
"""
from xla.service.hlo_pass import HloPass
from xla.service.pass_utils import SideEffects


class HloDCE(HloPass):
    name = "dce"

    def run(self, module):
        side_effects = SideEffects()
        changed = False
        for comp in module.computations:
            changed |= self._run_on_computation(comp, side_effects)
        changed |= self._remove_dead_computations(module)
        return changed

    @staticmethod
    def _run_on_computation(comp, side_effects):
        if comp.root_instruction is None:
            return False
        stack = [comp.root_instruction]
        stack += [i for i in comp.instructions
                  if i.opcode == "parameter" or side_effects.has_side_effect(i)]
        live = set()   # instructions hash by identity
        add, pop, extend = live.add, stack.pop, stack.extend
        while stack:
            instr = pop()
            if instr in live:
                continue
            add(instr)
            extend(instr.operands)
            if instr.attrs.get("control-predecessors"):
                extend(instr.control_predecessors)
        if len(live) == len(comp.instructions):
            return False
        kept = []
        for instr in comp.instructions:
            if instr in live:
                kept.append(instr)
            else:
                instr.parent = None
        comp.instructions = kept
        return True

    @staticmethod
    def _remove_dead_computations(module):
        if module.entry is None:
            return False
        reachable = set()
        stack = [module.entry]
        while stack:
            comp = stack.pop()
            if id(comp) in reachable:
                continue
            reachable.add(id(comp))
            stack.extend(module.called_computations_of(comp))
        dead = [c for c in module.computations if id(c) not in reachable]
        for comp in dead:
            module.remove_computation(comp)
        return bool(dead)
