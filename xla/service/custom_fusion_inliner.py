"""CustomFusionInliner: replaces ``fusion(kind=kCustom)`` instructions by the
instructions of the computation they call.

XLA:CPU's optimized dumps hold backend-specific custom fusions (for example
YNNPACK's ``"fusion_config":{"kind":"__ynn_fusion"}``: a dot with its
neighbours, to be run by a library). Their computation is ordinary HLO and
their semantics are exactly those of that computation, so a backend that has
no such library (this repository's CPU backend) can run them as plain HLO:
this pass inlines each one, as the call inliner does a ``call`` (parameter
``i`` becomes operand ``i``, clones get fresh names, control predecessors
inside the callee are kept, uses of the fusion become uses of the clone of
the root), and its backend_config goes with it. The normal pipeline then
simplifies and re-fuses the result.

The interpreter evaluates kCustom fusions directly and does not run this
pass; CpuCompiler runs it first. What it does not inline: fusions of other
kinds, and kCustom fusions with control predecessors or successors. The
inlined computations that nothing else calls are removed.
"""
from xla.service.hlo_pass import HloPass
from xla.service.pass_utils import (control_successor_ids, has_control_dependencies,
                                    inline_computation, remove_unreferenced)


def is_custom_fusion(instr):
    return instr.opcode == "fusion" and instr.attr("kind") == "kCustom"


class CustomFusionInliner(HloPass):
    name = "custom-fusion-inliner"

    def run(self, module):
        inlined = []
        if not any(is_custom_fusion(i) for c in module.computations for i in c.instructions):
            return False
        for comp in module.computations_post_order():
            successors = control_successor_ids(comp)
            fusions = [i for i in comp.instructions
                       if is_custom_fusion(i) and not has_control_dependencies(i, successors)]
            for fusion in fusions:
                callee = fusion.attr("calls")
                result = inline_computation(comp, fusion, callee, list(fusion.operands))
                comp.replace_all_uses(fusion, result)
                comp.remove_instruction(fusion)
                if callee not in inlined:
                    inlined.append(callee)
        remove_unreferenced(module, inlined)
        return bool(inlined)
