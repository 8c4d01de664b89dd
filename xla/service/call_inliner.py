"""CallInliner: replaces ``call`` instructions by the body of the computation
they call.

For every ``call`` in every computation, the callee's instructions
are cloned into the caller just before the call, under fresh names from
``HloModule.unique_name``: parameter ``i`` of the callee becomes operand
``i`` of the call, control predecessors inside the callee are kept between
the clones, and every use of the call becomes a use of the clone of the
callee's root (or of the operand, when that root is a parameter). Dead
instructions of the callee are cloned too, so their side effects survive;
DCE removes the pure ones. Attributes of the call itself (metadata,
backend_config such as ``xla_cpu_small_call``) are dropped with it.

Callers are processed before their callees, and calls cloned into a
caller are inlined there in turn, so a nest of calls flattens in one run
and each instruction is cloned once per place it ends up in (inlining the
innermost calls first would copy every level into the one above: quadratic
in the depth of the nest). A computation that only inlined calls called is
not processed: it goes, with its calls.

Afterwards, each computation that was inlined and is no longer called by any
instruction is removed from the module (with the computations only it
called).

What it does not inline: calls with control predecessors or successors,
and anything other than ``call`` (fusion, map, while, conditional,
custom-call keep their computations). Other computations that are unused
stay (DCE removes them).
"""
from xla.service.hlo_pass import HloPass
from xla.service.pass_utils import (control_successor_ids, has_control_dependencies,
                                    inline_computation, remove_unreferenced)


def inline_call(call, clones_out=None):
    """Inlines one ``call`` into its computation; returns the instruction that
    replaced it. ``clones_out``, a list, receives the new instructions."""
    comp = call.parent
    result = inline_computation(comp, call, call.attr("to_apply"), list(call.operands), clones_out)
    comp.replace_all_uses(call, result)
    comp.remove_instruction(call)
    return result


class CallInliner(HloPass):
    name = "call-inliner"

    def run(self, module):
        inlined = {}  # id -> computation, in first-inlined order
        callers = {}  # id(computation) -> number of instructions that call it
        for comp in module.computations:
            for instr in comp.instructions:
                for callee in instr.called_computations:
                    callers[id(callee)] = callers.get(id(callee), 0) + 1
        for comp in reversed(module.computations_post_order()):  # callers first
            if id(comp) in inlined and not callers.get(id(comp)) and comp is not module.entry:
                for instr in comp.instructions:
                    for callee in instr.called_computations:
                        callers[id(callee)] -= 1
                continue
            successors = control_successor_ids(comp)
            pending = [i for i in comp.instructions
                       if i.opcode == "call" and not has_control_dependencies(i, successors)]
            pending.reverse()
            while pending:
                call = pending.pop()
                callee = call.attr("to_apply")
                clones = []
                inline_call(call, clones)
                callers[id(callee)] -= 1
                inlined.setdefault(id(callee), callee)
                successors.update(id(p) for c in clones for p in c.control_predecessors)
                nested = []
                for clone in clones:
                    for c in clone.called_computations:
                        callers[id(c)] = callers.get(id(c), 0) + 1
                    if clone.opcode == "call" and not has_control_dependencies(clone, successors):
                        nested.append(clone)
                pending.extend(reversed(nested))
        remove_unreferenced(module, list(inlined.values()))
        return bool(inlined)
