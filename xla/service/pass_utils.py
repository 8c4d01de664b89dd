"""Small helpers shared by the simplification passes (DCE, CSE, tuple
simplifier, constant folding, call inlining, while-loop passes).

* ``SideEffects``: whether an instruction has a side effect, looking into
  the computations it calls (XLA's ``HloInstruction::HasSideEffect``);
* ``has_control_dependencies``: instructions a pass must leave in place;
* ``apply_replacements``: redirects many uses at once (linear time) and
  drops the replaced instructions, keeping the instruction list a valid
  order (a scheduled module's order stays a valid schedule);
* ``instruction_order``: the order a pass should walk a computation in;
* ``clone_instruction`` and ``inline_computation``: copy a callee's
  instructions into a caller under fresh unique names; ``insert_before``
  and ``insert_after`` place new instructions in a computation's order;
* ``remove_unreferenced``: drops computations nothing calls any more;
* ``Emitter`` and ``OpExpanderPass``: an expander pass (XLA's
  OpExpanderPass) that replaces each instruction it matches by new ones
  emitted just before it;
* ``evaluate_expression``: evaluates an expression from constants and
  known leaf values with the interpreter's handlers.
"""
import numpy as np

from xla.hlo import opcodes
from xla.hlo.ir import HloInstruction, control_dependencies_seen
from xla.hlo.shape import Shape
from xla.service.hlo_pass import HloPass


def _is_true(value):
    return value is True or getattr(value, "text", None) == "true"


class SideEffects:
    """Answers ``has_side_effect(instr)``, caching per computation.

    An instruction has a side effect when its opcode is in
    ``opcodes.SIDE_EFFECTING``, when it is a custom-call with
    ``custom_call_has_side_effect=true``, or when a computation it calls
    (transitively) contains such an instruction. Make a new object after
    changing called computations.
    """

    def __init__(self):
        self._computations = {}

    def has_side_effect(self, instr):
        if instr.opcode in opcodes.SIDE_EFFECTING:
            return True
        if instr.opcode == "custom-call" and _is_true(instr.attr("custom_call_has_side_effect")):
            return True
        called = instr.called_computations
        if not called:
            return False
        return any(self.computation_has_side_effect(c) for c in called)

    def computation_has_side_effect(self, comp):
        cached = self._computations.get(id(comp))
        if cached is None:
            self._computations[id(comp)] = False  # breaks (invalid) call cycles
            cached = any(self.has_side_effect(i) for i in comp.instructions)
            self._computations[id(comp)] = cached
        return cached


def control_successor_ids(comp):
    """ids of the instructions of ``comp`` that are some instruction's control predecessor."""
    out = set()
    if not control_dependencies_seen():
        return out   # no instruction in this process has had control predecessors
    for instr in comp.instructions:
        for pred in instr.control_predecessors:
            out.add(id(pred))
    return out


def has_control_dependencies(instr, successor_ids):
    """True when ``instr`` has control predecessors or successors."""
    return bool(instr.control_predecessors) or id(instr) in successor_ids


def instruction_order(comp):
    """Operands before users: the list itself for a scheduled module (so that
    an earlier instruction stays earlier in the schedule), else post order."""
    module = comp.parent
    if module is not None and module.is_scheduled:
        return list(comp.instructions)
    return comp.post_order()


def apply_replacements(comp, replacements):
    """Makes every use of ``old`` a use of ``replacements[id(old)]`` and removes ``old``.

    A replacement may itself be replaced (chains are followed). A
    replacement that is not in any computation yet (``parent is None``) is
    added at the position of the instruction it replaces. The replaced
    instructions must have no side effects the caller still needs.
    """
    if not replacements:
        return

    def resolve(instr):
        while id(instr) in replacements:
            instr = replacements[id(instr)]
        return instr

    def rewire(instr):
        if any(id(o) in replacements for o in instr.operands):
            instr.operands = [resolve(o) for o in instr.operands]
        preds = instr.attrs.get("control-predecessors")
        if preds and any(id(p) in replacements for p in preds):
            instr.attrs["control-predecessors"] = tuple(dict.fromkeys(resolve(p) for p in preds))

    kept = []
    for instr in comp.instructions:
        new = replacements.get(id(instr))
        if new is None:
            rewire(instr)
            kept.append(instr)
            continue
        if new.parent is None:
            new.parent = comp
            rewire(new)
            kept.append(new)
        instr.parent = None
    comp.instructions = kept
    comp.root_instruction = resolve(comp.root_instruction)


def clone_instruction(instr, operands, name):
    """A copy of ``instr`` with new operands and name (attributes copied,
    literal shared: literals are never mutated in place)."""
    return HloInstruction(instr.opcode, instr.shape, operands, name=name, attrs=dict(instr.attrs),
                          literal=instr.literal, parameter_number=instr.parameter_number)


def inline_computation(caller, before, callee, args, clones_out=None):
    """Clones ``callee``'s instructions into ``caller`` in front of ``before``.

    Parameter ``i`` of the callee becomes ``args[i]``; every other
    instruction (dead ones too, so side effects survive) is cloned with a
    fresh name from ``module.unique_name`` and its control predecessors
    mapped to the clones. Returns the instruction that holds the callee's
    result in the caller (a clone, or one of ``args`` when the callee's root
    is a parameter). Nothing uses it yet. ``clones_out``, a list, receives
    the clones.
    """
    module = caller.parent
    mapping = {}
    clones = []
    for instr in callee.post_order():
        if instr.opcode == "parameter":
            mapping[id(instr)] = args[instr.parameter_number]
            continue
        clone = clone_instruction(instr, [mapping[id(o)] for o in instr.operands],
                                  module.unique_name(instr.name))
        if "control-predecessors" in clone.attrs:
            clone.attrs["control-predecessors"] = tuple(
                mapping[id(p)] for p in instr.control_predecessors)
        mapping[id(instr)] = clone
        clones.append(clone)
    insert_before(caller, before, clones)
    if clones_out is not None:
        clones_out.extend(clones)
    return mapping[id(callee.root_instruction)]


class Emitter:
    """New instructions in ``comp`` just before ``anchor``, under fresh names."""

    def __init__(self, module, comp, anchor):
        self.module, self.comp, self.anchor = module, comp, anchor

    def add(self, opcode, shape, operands=(), **attrs):
        instr = HloInstruction(opcode, shape, list(operands),
                               name=self.module.unique_name(opcode), attrs=attrs)
        self.comp.insert_before(self.anchor, instr)
        return instr

    def constant(self, value, element_type):
        """A scalar constant of ``element_type`` (a PrimitiveType)."""
        instr = HloInstruction.create_constant(np.asarray(value, element_type.dtype),
                                               Shape.array(element_type, ()),
                                               name=self.module.unique_name("constant"))
        self.comp.insert_before(self.anchor, instr)
        return instr


class OpExpanderPass(HloPass):
    """Replaces every instruction ``matches`` accepts by what ``expand(b,
    instr)`` emits with the Emitter ``b`` (its result's instruction)."""

    def matches(self, instr):
        raise NotImplementedError

    def expand(self, b, instr):
        raise NotImplementedError

    def run(self, module):
        changed = False
        for comp in module.computations:
            for instr in list(comp.instructions):
                if self.matches(instr):
                    comp.replace_instruction(instr, self.expand(Emitter(module, comp, instr), instr))
                    changed = True
        return changed


def insert_before(comp, anchor, instrs):
    """Adds ``instrs`` (in order) to ``comp`` just before ``anchor``."""
    for instr in instrs:
        comp.insert_before(anchor, instr)


def insert_after(comp, anchor, instrs):
    """Adds ``instrs`` (in order) to ``comp`` just after ``anchor``."""
    for instr in reversed(list(instrs)):
        comp.insert_after(anchor, instr)


def fusion_computations(module):
    """ids of the computations fusion instructions of ``module`` call (one
    loop nest each: the passes that rewrite sequences of buffers skip them)."""
    return {id(c) for comp in module.computations for i in comp.instructions
            if i.opcode == "fusion" for c in i.called_computations}


def referenced_computations(module):
    """ids of the computations some instruction of ``module`` calls."""
    out = set()
    for comp in module.computations:
        for instr in comp.instructions:
            for callee in instr.called_computations:
                out.add(id(callee))
    return out


def add_before_callers(module, callees):
    """Adds the new computations ``callees`` ({id(caller): [computation,
    ...]}) to ``module``, each group just before the computation that calls
    it (callees come before their callers, as in XLA's text)."""
    computations = []
    for comp in module.computations:
        for callee in callees.get(id(comp), ()):
            callee.parent = module
            computations.append(callee)
        computations.append(comp)
    module.computations = computations
    module._taken_names = None   # module.unique_name's cache


def remove_unreferenced(module, candidates):
    """Removes the computations of ``candidates`` that nothing calls, and then
    the ones only they called; never the entry. Returns True if any went.

    Counts the instructions calling each computation once, so a chain of
    computations each called by the one before goes in linear time."""
    if not candidates:
        return False
    callers = {}
    for comp in module.computations:
        for instr in comp.instructions:
            for callee in instr.called_computations:
                callers[id(callee)] = callers.get(id(callee), 0) + 1
    removed = set()
    pending = list(candidates)
    while pending:
        comp = pending.pop()
        if (comp is module.entry or callers.get(id(comp)) or comp.parent is not module
                or id(comp) in removed):
            continue
        removed.add(id(comp))
        for instr in comp.instructions:
            for callee in instr.called_computations:
                callers[id(callee)] -= 1
        pending.extend(module.called_computations_of(comp))
    if not removed:
        return False
    for comp in module.computations:
        if id(comp) in removed:
            comp.parent = None
    module.computations = [c for c in module.computations if id(c) not in removed]
    return True


class NotEvaluable(Exception):
    """The expression depends on something other than constants and known leaves."""


# Opcodes evaluate_expression refuses: no fixed value, or possibly unbounded work.
_NOT_EVALUABLE = opcodes.SIDE_EFFECTING | frozenset([
    "parameter", "while", "custom-call", "rng-bit-generator", "replica-id", "partition-id",
    "infeed", "outfeed", "async-start", "async-update", "async-done", "copy-start", "copy-done",
    "optimization-barrier", "domain", "add-dependency", "set-dimension-size", "dynamic-reshape",
    "get-dimension-size"])


def evaluate_expression(root, leaf_value, evaluator, side_effects, max_elements=1 << 20):
    """The value of ``root`` computed with the interpreter's handlers.

    ``leaf_value(instr)`` returns a known value for an instruction (or None);
    constants supply their literal. Raises NotEvaluable when the expression
    needs anything else (a parameter, an unknown leaf, an elided constant, a
    side effect, a while loop), or an intermediate result has more than
    ``max_elements`` elements.
    """
    from xla.hlo.evaluator.registry import HANDLERS

    values = {}
    stack = [(root, False)]
    while stack:
        node, expanded = stack.pop()
        if id(node) in values:
            continue
        if not expanded:
            leaf = leaf_value(node)
            if leaf is not None:
                values[id(node)] = leaf
                continue
            if node.opcode == "constant":
                if node.literal is None:
                    raise NotEvaluable(f"{node.name} is an elided constant")
                values[id(node)] = node.literal
                continue
            if node.opcode in _NOT_EVALUABLE or side_effects.has_side_effect(node):
                raise NotEvaluable(f"{node.name} ({node.opcode}) cannot be evaluated")
            if node.shape.is_dynamic or any(s.num_elements() > max_elements
                                            for _, s in node.shape.leaves() if s.is_array):
                raise NotEvaluable(f"{node.name} is dynamic or too large")
            stack.append((node, True))
            for op in reversed(node.operands):
                if id(op) not in values:
                    stack.append((op, False))
            continue
        handler = HANDLERS.get(node.opcode)
        if handler is None:
            raise NotEvaluable(f"the interpreter has no handler for {node.opcode}")
        with np.errstate(all="ignore"):
            value = handler(node, [values[id(o)] for o in node.operands], evaluator)
        values[id(node)] = conform(value, node.shape)
    return values[id(root)]


def conform(value, shape):
    """A handler's value as a contiguous array of ``shape``'s type (tuples recursively)."""
    if shape.is_tuple:
        return tuple(conform(v, s) for v, s in zip(value, shape.tuple_shapes))
    if not shape.is_array:
        return value
    value = np.asarray(value)
    if value.dtype != shape.dtype:
        value = value.astype(shape.dtype)
    if tuple(value.shape) != tuple(shape.dimensions):
        raise NotEvaluable(f"value has dimensions {list(value.shape)}, shape says {shape}")
    if not value.flags.c_contiguous:
        value = np.array(value, order="C")
    return value
