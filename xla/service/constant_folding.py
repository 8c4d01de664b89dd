"""HloConstantFolding: evaluates instructions whose operands are all constants.

In every non-fused computation, walking from operands to users (so chains
fold in one run), an instruction whose operands are all constants with
known values (not elided ``{...}``) is evaluated with the interpreter's
handler for its opcode (``xla.hlo.evaluator``, the reference
semantics) and replaced by a new ``constant`` with the instruction's shape,
layout included. The replaced instruction is removed, and so are its
constant operands that nothing else uses; other dead code is left to DCE.

Not folded:

* parameters, constants, tuples (a tuple of constants stays a tuple), and
  instructions with a tuple or token result, or a dynamic shape;
* instructions with a side effect (rng, collectives, infeed/outfeed,
  send/recv, after-all, side-effecting custom-calls, or calls of
  computations containing them), rng-bit-generator, replica-id and
  partition-id;
* while, conditional, call, fusion, custom-call, optimization-barrier,
  domain, add-dependency, async and dynamic-shape ops (map, reduce, sort
  and other ops with a pure called computation are folded);
* broadcast and iota: a broadcast of a constant or an iota is cheaper to
  keep than the array it would become;
* instructions with control predecessors or successors;
* results with more than ``max_constant_elements`` elements (default
  45,000,000, XLA's limit) unless the operands being replaced are at least
  as large;
* instructions the interpreter cannot evaluate (no handler, or the handler
  fails): they stay as they are.

Instructions with no operands (besides the excluded iota, replica-id and
partition-id) are not folded either: there is nothing constant to fold.
"""
import numpy as np

from xla.hlo.evaluator.evaluator import Evaluator
from xla.hlo.evaluator.registry import HANDLERS
from xla.hlo.ir import HloInstruction
from xla.service.hlo_pass import HloPass
from xla.service.pass_utils import (SideEffects, apply_replacements, conform,
                                    control_successor_ids, fusion_computations,
                                    has_control_dependencies, instruction_order)

MAX_CONSTANT_ELEMENTS = 45 * 1000 * 1000

_NOT_FOLDED = frozenset("""
parameter constant tuple broadcast iota while conditional call fusion custom-call
after-all rng rng-bit-generator rng-get-and-update-state replica-id partition-id
optimization-barrier domain add-dependency async-start async-update async-done
copy-start copy-done infeed outfeed send recv send-done recv-done
set-dimension-size dynamic-reshape get-dimension-size
""".split())


def _elements(shape):
    return sum(s.num_elements() for _, s in shape.leaves() if s.is_array)


class HloConstantFolding(HloPass):
    name = "constant_folding"

    def __init__(self, max_constant_elements=MAX_CONSTANT_ELEMENTS):
        self.max_constant_elements = max_constant_elements

    def run(self, module):
        fused = fusion_computations(module)
        evaluator = _LazyEvaluator()
        side_effects = SideEffects()
        changed = False
        for comp in module.computations:
            if id(comp) not in fused:
                changed |= self._run_on_computation(comp, evaluator, side_effects)
        return changed

    def _foldable(self, instr, successors, side_effects):
        operands = instr.operands
        if not operands or instr.opcode in _NOT_FOLDED:
            return False
        for o in operands:
            if o.opcode != "constant" or o.literal is None:
                return False
        shape = instr.shape
        if not shape.is_array or shape.is_dynamic:
            return False
        if has_control_dependencies(instr, successors) or side_effects.has_side_effect(instr):
            return False
        result = shape.num_elements()
        return result <= max(self.max_constant_elements,
                             sum(_elements(o.shape) for o in instr.operands))

    def _run_on_computation(self, comp, evaluator, side_effects):
        module = comp.parent
        successors = control_successor_ids(comp)
        replacements = {}
        operands = []
        for instr in instruction_order(comp):
            if replacements and any(id(o) in replacements for o in instr.operands):
                instr.operands = [replacements.get(id(o), o) for o in instr.operands]
            if not self._foldable(instr, successors, side_effects):
                continue
            ctx = evaluator.get()   # loads the handlers (xla.hlo.evaluator) on first use
            handler = HANDLERS.get(instr.opcode)
            if handler is None:
                continue
            try:
                with np.errstate(all="ignore"):
                    value = conform(handler(instr, [o.literal for o in instr.operands], ctx),
                                    instr.shape)
            except Exception:  # noqa: BLE001 - an op the interpreter cannot fold stays unfolded
                continue
            replacements[id(instr)] = HloInstruction.create_constant(
                value, shape=instr.shape, name=module.unique_name("constant"))
            operands.extend(instr.operands)
        apply_replacements(comp, replacements)
        _remove_unused_constants(comp, operands, successors)
        return bool(replacements)


class _LazyEvaluator:
    """The Evaluator, made when the first foldable instruction is found: a
    module with nothing to fold (most modules a compile sees) never imports
    the interpreter's handler modules (~5 ms in a fresh process)."""

    def __init__(self):
        self._evaluator = None

    def get(self):
        if self._evaluator is None:
            self._evaluator = Evaluator()
        return self._evaluator


def _remove_unused_constants(comp, candidates, successors):
    """Removes the constants among ``candidates`` that nothing uses any more."""
    if not candidates:
        return
    used = {id(o) for i in comp.instructions for o in i.operands}
    used.add(id(comp.root_instruction))
    dead = {id(c) for c in candidates
            if c.parent is comp and id(c) not in used and not has_control_dependencies(c, successors)}
    if dead:
        for instr in comp.instructions:
            if id(instr) in dead:
                instr.parent = None
        comp.instructions = [i for i in comp.instructions if id(i) not in dead]
