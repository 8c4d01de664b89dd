"""CallInliner: replaces ``call`` instructions by the body of the computation
they call.

For every ``call`` in every computation (callees are processed before their
callers, so a nest of calls flattens in one run), the callee's instructions
are cloned into the caller just before the call, under fresh names from
``HloModule.unique_name``: parameter ``i`` of the callee becomes operand
``i`` of the call, control predecessors inside the callee are kept between
the clones, and every use of the call becomes a use of the clone of the
callee's root (or of the operand, when that root is a parameter). Dead
instructions of the callee are cloned too, so their side effects survive;
DCE removes the pure ones. Attributes of the call itself (metadata,
backend_config such as ``xla_cpu_small_call``) are dropped with it.

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


def inline_call(call):
    """Inlines one ``call`` into its computation; returns the instruction that
    replaced it."""
    comp = call.parent
    result = inline_computation(comp, call, call.attr("to_apply"), list(call.operands))
    comp.replace_all_uses(call, result)
    comp.remove_instruction(call)
    return result


class CallInliner(HloPass):
    name = "call-inliner"

    def run(self, module):
        inlined = []
        for comp in module.computations_post_order():
            successors = control_successor_ids(comp)
            calls = [i for i in comp.instructions
                     if i.opcode == "call" and not has_control_dependencies(i, successors)]
            for call in calls:
                callee = call.attr("to_apply")
                inline_call(call)
                if callee not in inlined:
                    inlined.append(callee)
        remove_unreferenced(module, inlined)
        return bool(inlined)
