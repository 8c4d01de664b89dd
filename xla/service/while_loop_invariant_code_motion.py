"""WhileLoopInvariantCodeMotion: hoists loop-invariant work out of while bodies.

In a while body whose root is a ``tuple``, state element ``i`` is invariant
when the root's operand ``i`` is ``get-tuple-element(parameter, index=i)``:
the body passes it through unchanged, so it always equals element ``i`` of
the init. An instruction of the body is loop invariant when it is such a
``get-tuple-element``, a constant, or an instruction whose operands are all
loop invariant and that is not a parameter, has no side effect (see
``pass_utils.SideEffects``), has no control predecessors or successors, and
is not an optimization-barrier, domain, add-dependency or after-all.

Hoisting. An invariant instruction that does real work is hoisted; the
cheap ones (constant, get-tuple-element, bitcast, broadcast, iota, reshape,
reverse, slice, transpose, tuple) are hoisted only as operands of one that
does, since on their own moving them only lengthens live ranges. The
hoisted instructions are cloned, in order, into the computation of the
while just before it, with ``get-tuple-element(parameter, i)`` replaced by
element ``i`` of the init (its operand when the init is a ``tuple``, else a
new ``get-tuple-element`` of the init). Each hoisted instruction that
non-hoisted body instructions still use becomes a new element of the loop
state, appended after the existing ones, as XLA does: the while's init is a
new tuple with the extra elements, the body reads them with new
``get-tuple-element``s and passes them through at the new root, the
condition's parameter gets the wider shape, and users of the while that are
not ``get-tuple-element``s get a tuple of its original elements. Hoisted
instructions left unused in the body are removed; cheap ones still used
there stay (they are cheap).

Dead instructions of the body are not hoisted (DCE's business), and the
old init, if nothing else uses it, is left for DCE.

Loops left alone: loops whose body root is not a tuple, with control
predecessors or successors, whose condition or body is called from anywhere
else, or whose body or condition use the parameter other than through
``get-tuple-element``.

What it does not do: hoist from the condition, hoist out of conditionals,
estimate whether hoisting is worth its memory (every instruction that does
work is hoisted), or remove state elements that become unused.
"""
from xla.hlo.ir import HloInstruction
from xla.hlo.shape import Shape
from xla.service.hlo_pass import HloPass
from xla.service.pass_utils import (SideEffects, clone_instruction, control_successor_ids,
                                    has_control_dependencies, insert_after, insert_before)

NOT_WORTH_HOISTING_ALONE = frozenset("""
constant get-tuple-element bitcast broadcast iota reshape reverse slice transpose tuple
""".split())

_NEVER_HOISTED = frozenset(["parameter", "optimization-barrier", "domain", "add-dependency",
                            "after-all"])


def _call_counts(module):
    counts = {}
    for comp in module.computations:
        for instr in comp.instructions:
            for callee in instr.called_computations:
                counts[id(callee)] = counts.get(id(callee), 0) + 1
    return counts


def _live(comp, side_effects):
    """ids of the instructions the root or a side effect depends on (the rest
    is dead code, DCE's business)."""
    live = set()
    stack = [comp.root_instruction] + [i for i in comp.instructions if side_effects.has_side_effect(i)]
    while stack:
        instr = stack.pop()
        if id(instr) not in live:
            live.add(id(instr))
            stack.extend(instr.operands)
            stack.extend(instr.control_predecessors)
    return live


def _only_gte_users(parameter):
    return all(u.opcode == "get-tuple-element" for u in parameter.users)


def _is_gte_of(instr, parameter, index=None):
    return (instr.opcode == "get-tuple-element" and instr.operands[0] is parameter
            and (index is None or instr.attr("index") == index))


class WhileLoopInvariantCodeMotion(HloPass):
    name = "while-loop-invariant-code-motion"

    def run(self, module):
        side_effects = SideEffects()
        changed = False
        for comp in module.computations_post_order():
            loops = [i for i in comp.instructions if i.opcode == "while"]
            for loop in loops:
                changed |= self._hoist(module, comp, loop, side_effects)
        return changed

    def _hoist(self, module, comp, loop, side_effects):
        body, condition = loop.attr("body"), loop.attr("condition")
        counts = _call_counts(module)
        if counts.get(id(body)) != 1 or counts.get(id(condition)) != 1 or body is condition:
            return False
        if has_control_dependencies(loop, control_successor_ids(comp)) or not loop.shape.is_tuple:
            return False
        root = body.root_instruction
        param = body.parameter(0)
        cond_param = condition.parameter(0)
        if root.opcode != "tuple" or not _only_gte_users(param) or not _only_gte_users(cond_param):
            return False

        invariant_elements = {i for i, op in enumerate(root.operands) if _is_gte_of(op, param, i)}
        successors = control_successor_ids(body)
        order = body.post_order()
        invariant = set()
        for instr in order:
            if instr.opcode == "constant":
                invariant.add(id(instr))
            elif _is_gte_of(instr, param):
                if instr.attr("index") in invariant_elements:
                    invariant.add(id(instr))
            elif (instr.opcode not in _NEVER_HOISTED and instr is not root
                  and all(id(o) in invariant for o in instr.operands)
                  and not has_control_dependencies(instr, successors)
                  and not side_effects.has_side_effect(instr)):
                invariant.add(id(instr))

        live = _live(body, side_effects)
        worth = [i for i in order if id(i) in invariant and id(i) in live
                 and i.opcode not in NOT_WORTH_HOISTING_ALONE]
        if not worth:
            return False
        # The hoisted set: the worthwhile instructions and their operands.
        hoisted = set()
        stack = list(worth)
        while stack:
            instr = stack.pop()
            if id(instr) not in hoisted:
                hoisted.add(id(instr))
                if not _is_gte_of(instr, param):
                    stack.extend(instr.operands)
        hoisted_order = [i for i in order if id(i) in hoisted]

        # Clone into the while's computation.
        init = loop.operands[0]
        n = len(loop.shape.tuple_shapes)
        outside = {}
        new_outside = []

        init_elements = {}

        def init_element(i):
            if init.opcode == "tuple":
                return init.operands[i]
            if i not in init_elements:
                init_elements[i] = HloInstruction(
                    "get-tuple-element", loop.shape.tuple_shapes[i], [init],
                    name=module.unique_name("get-tuple-element"), attrs={"index": i})
                new_outside.append(init_elements[i])
            return init_elements[i]

        for instr in hoisted_order:
            if _is_gte_of(instr, param):
                outside[id(instr)] = init_element(instr.attr("index"))
                continue
            clone = clone_instruction(instr, [outside[id(o)] for o in instr.operands],
                                      module.unique_name(instr.name))
            clone.attrs.pop("control-predecessors", None)
            outside[id(instr)] = clone
            new_outside.append(clone)

        # What stays in the body: instructions not hoisted, and cheap hoisted
        # ones that something staying still uses. A worthwhile instruction
        # that something staying uses becomes a new state element.
        users = body.users_map()
        stays = {id(i) for i in order if id(i) not in hoisted}
        for instr in reversed(hoisted_order):
            if (instr.opcode in NOT_WORTH_HOISTING_ALONE
                    and any(id(u) in stays for u in users[id(instr)])):
                stays.add(id(instr))
        slots = [i for i in hoisted_order if id(i) not in stays
                 and any(id(u) in stays for u in users[id(i)])]

        # The wider loop state.
        old_shapes = list(loop.shape.tuple_shapes)
        new_shape = Shape.tuple(old_shapes + [s.shape for s in slots])
        elements = [init_element(i) for i in range(n)]
        new_init = HloInstruction("tuple", new_shape, elements + [outside[id(s)] for s in slots],
                                  name=module.unique_name("tuple"))
        new_outside.append(new_init)
        insert_before(comp, loop, new_outside)

        old_users = [u for u in comp.instructions if any(o is loop for o in u.operands)]
        was_root = comp.root_instruction is loop
        old_shape = loop.shape
        loop.shape = new_shape
        loop.operands = [new_init]
        if was_root or any(u.opcode != "get-tuple-element" for u in old_users):
            parts = [HloInstruction("get-tuple-element", s, [loop],
                                    name=module.unique_name("get-tuple-element"), attrs={"index": i})
                     for i, s in enumerate(old_shapes)]
            narrow = HloInstruction("tuple", old_shape, parts, name=module.unique_name("tuple"))
            insert_after(comp, loop, parts + [narrow])
            for user in old_users:
                if user.opcode != "get-tuple-element":
                    user.replace_operand(loop, narrow)
            if was_root:
                comp.root_instruction = narrow

        # The body reads the hoisted values from the new state elements.
        param.shape = new_shape
        cond_param.shape = new_shape
        reads = []
        for j, s in enumerate(slots):
            read = HloInstruction("get-tuple-element", s.shape, [param],
                                  name=module.unique_name("get-tuple-element"), attrs={"index": n + j})
            reads.append(read)
            for user in users[id(s)]:
                if id(user) in stays:
                    user.replace_operand(s, read)
        insert_after(body, param, reads)
        new_root = HloInstruction("tuple", new_shape, list(root.operands) + reads,
                                  name=module.unique_name("tuple"))
        body.add_instruction(new_root)
        body.root_instruction = new_root
        self._remove_unused(body, [root] + hoisted_order[::-1])
        return True

    @staticmethod
    def _remove_unused(body, candidates):
        """Removes candidates (users before operands) that nothing uses."""
        uses = {}
        for instr in body.instructions:
            for op in instr.operands:
                uses[id(op)] = uses.get(id(op), 0) + 1
        removed = set()
        for instr in candidates:
            if instr is body.root_instruction or uses.get(id(instr), 0) or instr.opcode == "parameter":
                continue
            removed.add(id(instr))
            for op in instr.operands:
                uses[id(op)] -= 1
        for instr in body.instructions:
            if id(instr) in removed:
                instr.parent = None
        body.instructions = [i for i in body.instructions if id(i) not in removed]
