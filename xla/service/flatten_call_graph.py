"""FlattenCallGraph: every computation that control flow runs has exactly one
call site.

A computation called by a ``while`` (body, condition), ``conditional``
(branches) or ``call`` (to_apply) from more than one place -- two whiles
with one body (the call inliner makes these when it inlines one callee that
holds a loop twice), a conditional naming one computation for two branches,
a while whose body is its condition -- is cloned for every call site but
the first (in order from the entry, callers before callees), so that buffer
assignment can give each call site's loop state and parameters buffers of
their own: two whiles sharing one body would otherwise share one loop-state
slot while both results are live. The clones get fresh names from
``HloModule.unique_name`` and keep the original's instruction order (its
schedule, if any); the computations they call are then cloned in turn when
they too have another call site.

What it does not clone: computations called by fusion, reduce, map, sort,
scatter and other instructions that run them as scalar or fused code (they
have no buffers; sharing them is fine), and the entry.
"""
from xla.hlo.attributes import kind_of
from xla.hlo.ir import HloComputation
from xla.service.hlo_pass import HloPass
from xla.service.pass_utils import clone_instruction

_CONTROL_FLOW = frozenset(["while", "conditional", "call"])


def clone_computation(module, comp):
    """A copy of ``comp`` (same instruction order, fresh names) added to ``module``."""
    mapping = {}
    clones = []
    for instr in comp.instructions:
        clone = clone_instruction(instr, [mapping[id(o)] for o in instr.operands],
                                  module.unique_name(instr.name))
        if "control-predecessors" in clone.attrs:
            clone.attrs["control-predecessors"] = tuple(
                mapping[id(p)] for p in instr.control_predecessors)
        mapping[id(instr)] = clone
        clones.append(clone)
    new = HloComputation(module.unique_name(comp.name), clones,
                         root=mapping[id(comp.root_instruction)])
    new.extra_attrs = dict(comp.extra_attrs)
    module.add_computation(new)
    return new


class FlattenCallGraph(HloPass):
    name = "flatten-call-graph"

    def run(self, module):
        if module.entry is None:
            return False
        changed = False
        seen = {id(module.entry)}
        worklist = [module.entry]
        while worklist:
            comp = worklist.pop(0)
            for instr in comp.instructions:
                if instr.opcode not in _CONTROL_FLOW:
                    continue
                for name, value in list(instr.attrs.items()):
                    kind = kind_of(name)
                    if kind == "computation":
                        callees, single = [value], True
                    elif kind == "computations":
                        callees, single = list(value), False
                    else:
                        continue
                    new_callees = []
                    for callee in callees:
                        if id(callee) in seen:
                            callee = clone_computation(module, callee)
                            changed = True
                        seen.add(id(callee))
                        worklist.append(callee)
                        new_callees.append(callee)
                    if single:
                        instr.attrs[name] = new_callees[0]
                    else:
                        instr.attrs[name] = type(value)(new_callees) if isinstance(value, (list, tuple)) \
                            else new_callees
        return changed
