"""WhileLoopSimplifier: removes while loops that run zero times and inlines
loops that run exactly once.

The trip count is found by evaluating, with the interpreter's handlers, the
part of the loop that depends only on what is known before the loop runs:

* the known loop state is the while's init when it is a constant, or the
  elements of an init ``tuple(...)`` that are constants;
* the condition is evaluated on the known state: it must depend on the
  state only through ``get-tuple-element``s of known elements (or on the
  whole state when all of it is known) and constants;
* if it is false, the loop runs zero times: the while is replaced by its
  init;
* if it is true, the body's root (a ``tuple``) is evaluated element by
  element on the known state; the elements it can compute are the known
  state after one iteration (this is how a counted loop ``i = c; while
  i < n: i += 1`` with ``n == c + 1`` is recognized, and any other form
  whose condition after one step is computable). If the condition on that
  state is false, the loop runs exactly once: the body is inlined in place
  of the while, its parameter bound to the init (as CallInliner does).

After a rewrite, the condition and body computations that nothing calls any
more are removed.

Loops left alone: those with control predecessors or successors, whose
condition has a side effect (its evaluations would be lost), whose
condition or needed body parts use anything not known (parameters of the
enclosing computation, unknown state elements, while loops, rng,
custom-calls, infeed...), and those whose trip count is not 0 or 1.

What it does not do (XLA's WhileLoopSimplifier does more): remove dead or
constant tuple elements, flatten nested tuples, unroll loops with a larger
known trip count, or simplify the condition or body themselves.
"""
import numpy as np

from xla.hlo.evaluator.evaluator import Evaluator
from xla.service.hlo_pass import HloPass
from xla.service.pass_utils import (NotEvaluable, SideEffects, control_successor_ids,
                                    evaluate_expression, has_control_dependencies,
                                    inline_computation, remove_unreferenced)


class _State:
    """What is known about a loop state: the whole value, and/or elements."""

    def __init__(self, whole=None, elements=None):
        self.whole = whole
        self.elements = elements or {}

    @staticmethod
    def of_init(init):
        if init.opcode == "constant" and init.literal is not None:
            lit = init.literal
            elements = dict(enumerate(lit)) if isinstance(lit, tuple) else {}
            return _State(lit, elements)
        if init.opcode == "tuple":
            elements = {i: op.literal for i, op in enumerate(init.operands)
                        if op.opcode == "constant" and op.literal is not None}
            whole = None
            if len(elements) == len(init.operands):
                whole = tuple(elements[i] for i in range(len(init.operands)))
            return _State(whole, elements)
        return _State()

    def leaf_function(self, parameter):
        def leaf(instr):
            if instr is parameter:
                return self.whole
            if (instr.opcode == "get-tuple-element" and instr.operands[0] is parameter
                    and instr.attr("index") in self.elements):
                return self.elements[instr.attr("index")]
            return None
        return leaf


def _truth(value):
    value = np.asarray(value)
    if value.size != 1:
        raise NotEvaluable("the condition is not a scalar")
    return bool(value.reshape(()))


class WhileLoopSimplifier(HloPass):
    name = "simplify-while-loops"

    def run(self, module):
        if not any(i.opcode == "while" for c in module.computations for i in c.instructions):
            return False
        evaluator = None   # made for the first loop (it imports the interpreter's handlers)
        side_effects = SideEffects()
        changed = False
        dropped = []
        for comp in module.computations_post_order():
            if comp.parent is not module:
                continue
            loops = [i for i in comp.instructions if i.opcode == "while"]
            if not loops:
                continue
            successors = control_successor_ids(comp)
            loops = [i for i in loops if not has_control_dependencies(i, successors)]
            for loop in loops:
                evaluator = evaluator or Evaluator()
                trips = self._trip_count(loop, evaluator, side_effects)
                if trips is None:
                    continue
                condition, body = loop.attr("condition"), loop.attr("body")
                init = loop.operands[0]
                if trips == 0:
                    result = init
                else:
                    result = inline_computation(comp, loop, body, [init])
                comp.replace_all_uses(loop, result)
                comp.remove_instruction(loop)
                dropped += [condition, body]
                changed = True
        remove_unreferenced(module, dropped)
        return changed

    @staticmethod
    def _trip_count(loop, evaluator, side_effects):
        """0 or 1 when the loop provably runs that many times, else None."""
        condition, body = loop.attr("condition"), loop.attr("body")
        if side_effects.computation_has_side_effect(condition):
            return None
        state = _State.of_init(loop.operands[0])
        if state.whole is None and not state.elements:
            return None

        def condition_holds(known):
            leaf = known.leaf_function(condition.parameter(0))
            return _truth(evaluate_expression(condition.root_instruction, leaf, evaluator, side_effects))

        try:
            if not condition_holds(state):
                return 0
            root = body.root_instruction
            leaf = state.leaf_function(body.parameter(0))
            after = _State()
            if root.opcode == "tuple":
                for i, element in enumerate(root.operands):
                    try:
                        after.elements[i] = evaluate_expression(element, leaf, evaluator, side_effects)
                    except NotEvaluable:
                        pass
                if len(after.elements) == len(root.operands):
                    after.whole = tuple(after.elements[i] for i in range(len(root.operands)))
            else:
                after.whole = evaluate_expression(root, leaf, evaluator, side_effects)
                if isinstance(after.whole, tuple):
                    after.elements = dict(enumerate(after.whole))
            if not condition_holds(after):
                return 1
        except NotEvaluable:
            return None
        except Exception:  # noqa: BLE001 - a handler that fails leaves the loop alone
            return None
        return None
