"""HloCSE: common-subexpression elimination by hashing.

Two instructions of the same computation are identical, and the later one
is replaced by the earlier, when they have

* the same opcode and the same shape, layout included;
* the same operands (after earlier merges), in the same order, except that
  the two operands of add, multiply, maximum, minimum, and, or, xor and of
  compare with direction EQ or NE may come in either order;
* the same attributes, except ``metadata`` (names never matter). Called
  computations are the same when they are the same object or structurally
  identical: same instructions in the same post order, with the same
  opcodes, shapes, operands, attributes and literals (names and metadata
  aside);
* for constants, the same value: element type, dimensions and bytes (so
  ``0.0`` and ``-0.0`` differ, and a NaN equals only the same NaN bits).

Never merged: parameters, instructions with a side effect (see
``pass_utils.SideEffects``; this covers rng, collectives, send/recv and
after-all), instructions with control predecessors or successors, and
constants whose value the text elided. The pass visits every computation
(callees before callers, so structural keys of callees are final) in one
walk each, in linear time apart from hashing literals.

What it does not do: merge across computations, merge instructions that
compute the same value differently (``a+b`` vs ``b+a`` for subtract, or
algebraic identities: that is the algebraic simplifier's job), or remove the
operands that become dead (run DCE after).
"""
import numpy as np

from xla.hlo.ir import HloComputation
from xla.service.hlo_pass import HloPass
from xla.service.pass_utils import (SideEffects, apply_replacements, control_successor_ids,
                                    has_control_dependencies, instruction_order)

COMMUTATIVE = frozenset(["add", "multiply", "maximum", "minimum", "and", "or", "xor"])
_IGNORED_ATTRS = frozenset(["metadata", "control-predecessors"])


def literal_key(literal):
    """A hashable key for a literal's exact value, or None for an elided one."""
    if literal is None:
        return None
    if isinstance(literal, tuple):
        parts = tuple(literal_key(x) for x in literal)
        return None if any(p is None for p in parts) else ("tuple", parts)
    array = np.ascontiguousarray(literal)
    return (str(array.dtype), array.shape, array.tobytes())


class _Keys:
    """Structural keys of instructions and computations for one pass run."""

    def __init__(self):
        self._computation_tokens = {}   # id(computation) -> int
        self._structures = {}           # structural key -> int
        self._unique = 0

    def computation_token(self, comp):
        token = self._computation_tokens.get(id(comp))
        if token is None:
            token = self._structures.setdefault(self._structure(comp), len(self._structures))
            self._computation_tokens[id(comp)] = token
        return token

    def _structure(self, comp):
        order = comp.post_order()
        index = {id(i): n for n, i in enumerate(order)}
        items = []
        for instr in order:
            literal = None
            if instr.opcode == "constant":
                literal = literal_key(instr.literal)
                if literal is None:
                    literal = self.unique()
            preds = tuple(index[id(p)] for p in instr.control_predecessors)
            items.append((instr.opcode, instr.shape, tuple(index[id(o)] for o in instr.operands),
                          self.attrs_key(instr), literal, instr.parameter_number, preds))
        return tuple(items), index[id(comp.root_instruction)]

    def unique(self):
        self._unique += 1
        return ("unique", self._unique)

    def freeze(self, value):
        if isinstance(value, HloComputation):
            return ("computation", self.computation_token(value))
        if isinstance(value, (tuple, list)):
            return tuple(self.freeze(v) for v in value)
        try:
            hash(value)
        except TypeError:
            return self.unique()
        return value

    def attrs_key(self, instr):
        if not instr.attrs:
            return ()
        return tuple(sorted((name, self.freeze(value)) for name, value in instr.attrs.items()
                            if name not in _IGNORED_ATTRS))


def _operands_key(instr):
    ids = tuple(map(id, instr.operands))
    if len(ids) == 2 and (instr.opcode in COMMUTATIVE or
                          (instr.opcode == "compare" and instr.attr("direction") in ("EQ", "NE"))):
        ids = tuple(sorted(ids))
    return ids


class HloCSE(HloPass):
    name = "cse"

    def run(self, module):
        side_effects = SideEffects()
        keys = _Keys()
        changed = False
        for comp in module.computations_post_order():
            changed |= self._run_on_computation(comp, side_effects, keys)
        return changed

    @staticmethod
    def _run_on_computation(comp, side_effects, keys):
        successors = control_successor_ids(comp)
        replacements = {}
        table = {}
        for instr in instruction_order(comp):
            if replacements and any(id(o) in replacements for o in instr.operands):
                instr.operands = [replacements.get(id(o), o) for o in instr.operands]
            if (instr.opcode == "parameter"
                    or (successors or instr.attrs) and has_control_dependencies(instr, successors)
                    or side_effects.has_side_effect(instr)):
                continue
            literal = None
            if instr.opcode == "constant":
                literal = literal_key(instr.literal)
                if literal is None:
                    continue
            key = (instr.opcode, instr.shape, _operands_key(instr), keys.attrs_key(instr), literal)
            first = table.setdefault(key, instr)
            if first is not instr:
                replacements[id(instr)] = first
        apply_replacements(comp, replacements)
        return bool(replacements)
