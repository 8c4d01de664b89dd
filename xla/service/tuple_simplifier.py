"""TupleSimplifier: removes tuples that are built only to be taken apart.

Two rewrites, in every computation, applied in one walk from operands to
users (so chains such as ``gte(gte(tuple(tuple(a, b), c), 0), 1)`` fold
completely):

* ``get-tuple-element(tuple(a0, a1, ...), index=i)`` becomes ``ai``;
* ``tuple(gte(x, 0), gte(x, 1), ..., gte(x, n-1))``, where ``x`` has exactly
  ``n`` elements and the same shape as the tuple (layouts compared where
  both sides have one), becomes ``x``. This may make ``x`` (a parameter,
  a while loop) the root of a computation.

The replaced instruction is removed. Instructions with control predecessors
or successors are left alone, as are get-tuple-elements of a tuple that has
control dependencies.

What it does not do: look through constants (``gte`` of a tuple constant is
constant folding's job), through calls, while loops or conditionals, or
remove the operands that become dead (run DCE after).
"""
from xla.service.hlo_pass import HloPass
from xla.service.pass_utils import (apply_replacements, control_successor_ids,
                                    has_control_dependencies, instruction_order)


def shapes_equivalent(a, b):
    """Equal shapes, where a missing layout on either side matches any layout."""
    if a.is_tuple or b.is_tuple:
        return (a.is_tuple and b.is_tuple and len(a.tuple_shapes) == len(b.tuple_shapes) and
                all(shapes_equivalent(x, y) for x, y in zip(a.tuple_shapes, b.tuple_shapes)))
    if not a.compatible(b):
        return False
    return a.layout is None or b.layout is None or not a.is_array or a.layout == b.layout


_TUPLE_OPCODES = frozenset(["tuple", "get-tuple-element"])


class TupleSimplifier(HloPass):
    name = "tuple-simplifier"

    def run(self, module):
        changed = False
        for comp in module.computations:
            changed |= self._run_on_computation(comp)
        return changed

    @staticmethod
    def _run_on_computation(comp):
        if not any(i.opcode in _TUPLE_OPCODES for i in comp.instructions):
            return False   # nothing to simplify
        successors = control_successor_ids(comp)
        replacements = {}
        for instr in instruction_order(comp):
            if replacements and any(id(o) in replacements for o in instr.operands):
                instr.operands = [replacements.get(id(o), o) for o in instr.operands]
            if has_control_dependencies(instr, successors):
                continue
            if instr.opcode == "get-tuple-element":
                operand = instr.operands[0]
                if operand.opcode != "tuple" or has_control_dependencies(operand, successors):
                    continue
                element = operand.operands[instr.attr("index")]
                if shapes_equivalent(element.shape, instr.shape):
                    replacements[id(instr)] = element
            elif instr.opcode == "tuple" and instr.operands:
                source = _common_source(instr, successors)
                if source is not None and shapes_equivalent(source.shape, instr.shape):
                    replacements[id(instr)] = source
        apply_replacements(comp, replacements)
        return bool(replacements)


def _common_source(tuple_instr, successors):
    """``x`` when the operands are gte(x, 0), ..., gte(x, n-1) of an n-element ``x``
    (none of them with control dependencies)."""
    source = None
    for i, op in enumerate(tuple_instr.operands):
        if (op.opcode != "get-tuple-element" or op.attr("index") != i
                or has_control_dependencies(op, successors)):
            return None
        if source is None:
            source = op.operands[0]
        elif op.operands[0] is not source:
            return None
    if not source.shape.is_tuple or len(source.shape.tuple_shapes) != len(tuple_instr.operands):
        return None
    return source
