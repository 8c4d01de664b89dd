"""CopyInsertion: adds copies so that while loops, conditionals and the entry
result own the buffers they write.

A *leaf* below is an array element of a value: the value itself when it is
an array, the operands of a ``tuple`` instruction (recursively) when it is
built by one, and ``get-tuple-element(v, i)`` otherwise. A leaf's *source*
looks through ``get-tuple-element`` of ``tuple`` instructions;
``get-tuple-element`` of a parameter has the parameter as its source.
Copies are ``copy`` instructions of a leaf's shape (layout included);
token leaves are never copied.

The cases handled, in every computation:

1. ``while`` init: a leaf gets a copy when its source is a parameter (the
   loop would overwrite its caller's buffer) or a constant (read-only),
   when it has users other than the tuple that builds the init and the
   while (whether they run before or after the loop is not analysed: any
   other user counts), or when the same instruction is already an earlier
   leaf of the init. A parameter of the while body the loop runs in (the
   enclosing loop's state) is not copied for being a parameter: buffer
   assignment lets the nested loop update it in place when nothing else
   reads it, and gives the nested loop a slot of its own, which the loop
   copies its init into, otherwise. An element the body passes through
   unchanged (root element k is ``get-tuple-element(parameter, k)``) and
   whose result nothing reads gets no copy, whatever its source (constants
   aside) and users: the loop only reads it (a matrix a nested loop reads).
   The init is rebuilt with the copies (a ``tuple`` used only by the while
   is changed in place).
2. ``while`` body root (a ``tuple`` instruction, or an array): element
   ``i`` gets a copy when it is ``get-tuple-element(parameter, j)`` with
   ``j != i`` (swapped loop state), a constant, the body parameter itself
   (for an array loop state nothing is needed), or the same instruction as
   an earlier element.
3. ``conditional`` branches: a root leaf gets a copy when its source is the
   branch parameter or a constant, or when it repeats an earlier leaf, so
   the conditional's result never aliases its operand.
4. The entry root: a leaf gets a copy when its source is an entry parameter
   or a constant, or when it repeats an earlier leaf (outputs must be
   distinct buffers), unless ``input_output_alias`` in the module header
   says that output index aliases exactly that parameter (index).

What it does not do: the liveness analysis XLA uses to add only the copies
that are needed and remove redundant ones (it may add copies XLA would
elide, never fewer than the cases above); copies for values live across a
loop that are read after being updated in place (beyond case 1's
any-other-user rule); ``call``s, fusions and async ops, whose buffers are
not aliased by this compiler.
"""
import re

from xla.hlo.attributes import RawAttr
from xla.hlo.ir import HloInstruction
from xla.hlo.shape import Shape
from xla.service.hlo_pass import HloPass


def _source(value):
    """Looks through get-tuple-element of tuple instructions (and of parameters)."""
    # Iterative: chains of get-tuple-element and tuple may be as deep as the graph.
    pending = []  # get-tuple-elements whose operand's source is not known yet
    while True:
        while value.opcode == "get-tuple-element":
            pending.append(value)
            value = value.operands[0]
        # ``value`` is the source of the innermost pending gte's operand.
        if not pending:
            return value
        gte = pending.pop()
        if value.opcode == "tuple":
            value = value.operands[gte.attr("index")]
        elif value.opcode != "parameter":
            value = gte
            # Not looked through: the source of each outer gte is itself.
            while pending:
                value = pending.pop()
            return value


def _is_read_only_or_parameter(value):
    return _source(value).opcode in ("parameter", "constant")


def parse_input_output_alias(module):
    """{output index: (parameter number, parameter index)} from the header."""
    value = module.header_attrs.get("input_output_alias")
    if value is None:
        return {}
    text = value.text if isinstance(value, RawAttr) else str(value)
    out = {}
    for m in re.finditer(r"\{([\d,\s]*)\}\s*:\s*\(\s*(\d+)\s*,\s*\{([\d,\s]*)\}", text):
        out_index = tuple(int(x) for x in m.group(1).replace(" ", "").split(",") if x)
        param_index = tuple(int(x) for x in m.group(3).replace(" ", "").split(",") if x)
        out[out_index] = (int(m.group(2)), param_index)
    return out


def _parameter_index(value):
    """(parameter, index path) when ``value`` is a parameter or gte chain of one."""
    path = []
    while value.opcode == "get-tuple-element":
        path.append(value.attr("index"))
        value = value.operands[0]
    if value.opcode == "parameter":
        return value, tuple(reversed(path))
    return None, None


def _read_only_elements(loop):
    """Indices ``(k,)`` of a while's state that its body passes through
    unchanged (root element k is get-tuple-element k of the body parameter)
    and whose result nothing reads: the loop only reads the init's value."""
    body = loop.attr("body")
    root, param = body.root_instruction, body.parameter(0)
    if root.opcode != "tuple" or loop.is_root:
        return set()
    used = set()
    for u in loop.users:
        if u.opcode != "get-tuple-element":
            return set()
        used.add(u.attr("index"))
    return {(k,) for k, e in enumerate(root.operands)
            if k not in used and e.opcode == "get-tuple-element" and e.operands[0] is param
            and e.attr("index") == k and e.shape.is_array}


class _Inserter:
    def __init__(self, module):
        self.module = module
        self.changed = False

    def new(self, comp, opcode, shape, operands, before, attrs=None):
        instr = HloInstruction(opcode, shape, operands, name=self.module.unique_name(opcode), attrs=attrs)
        comp.insert_before(before, instr)
        self.changed = True
        return instr

    def rebuild(self, comp, value, needs_copy, before, index=(), seen=None):
        """``value`` with a copy of every leaf ``needs_copy(leaf, index, seen)`` selects.

        Returns ``value`` itself when nothing is copied."""
        seen = set() if seen is None else seen
        shape = value.shape
        if shape.is_token:
            return value
        if shape.is_array:
            copy = needs_copy(value, index, seen)
            seen.add(value)
            return self.new(comp, "copy", shape, [value], before) if copy else value
        if value.opcode == "tuple":
            elements = [self.rebuild(comp, e, needs_copy, before, index + (i,), seen)
                        for i, e in enumerate(value.operands)]
            if all(a is b for a, b in zip(elements, value.operands)):
                return value
            return self.new(comp, "tuple", shape, elements, before)
        # A tuple-shaped value not built here: look at its elements through gtes.
        pending = []
        for i, sub in enumerate(shape.tuple_shapes):
            gte = HloInstruction("get-tuple-element", sub, [value], name=self.module.unique_name("get-tuple-element"),
                                 attrs={"index": i})
            comp.insert_before(before, gte)
            pending.append(gte)
        elements = [self.rebuild(comp, g, needs_copy, before, index + (i,), seen) for i, g in enumerate(pending)]
        if all(a is b for a, b in zip(elements, pending)):
            for g in pending:
                comp.remove_instruction(g)
            return value
        self.changed = True
        return self.new(comp, "tuple", shape, elements, before)

    # ----- case 1: while init ------------------------------------------------------
    def while_init(self, comp, loop, while_bodies=frozenset()):
        init = loop.operands[0]
        users = comp.users_map()
        shared = init.is_root or any(u is not loop for u in users.get(id(init), []))
        allowed = {id(loop), id(init)}
        body_state = id(comp) in while_bodies
        read_only = _read_only_elements(loop)

        def needs_copy(leaf, index, seen):
            if shared or leaf.is_root or leaf in seen:
                return True
            source = _source(leaf)
            if index in read_only and source.opcode != "constant":
                return False
            if body_state and source.opcode == "parameter" and source.parent is comp:
                # The enclosing loop's state: this loop may update it in place
                # when nothing else reads it (buffer assignment decides, and
                # copies into the nested loop's own slot where it may not).
                pass
            elif _is_read_only_or_parameter(leaf):
                return True
            return any(id(u) not in allowed for u in users.get(id(leaf), []))

        if init.opcode == "tuple" and not shared:
            seen = set()
            new_operands = [self.rebuild(comp, e, needs_copy, init, (i,), seen)
                            for i, e in enumerate(init.operands)]
            if not all(a is b for a, b in zip(new_operands, init.operands)):
                init.operands = new_operands
                self.changed = True
            return
        new_init = self.rebuild(comp, init, needs_copy, loop)
        if new_init is not init:
            loop.operands[0] = new_init

    # ----- case 2: while body root -------------------------------------------------
    def body_root(self, body):
        root = body.root_instruction
        if root.shape.is_array:
            if root.opcode == "constant":
                body.root_instruction = self.new_after_root(body, root)
            return
        if root.opcode != "tuple":
            return
        new_operands = []
        seen = set()
        for i, e in enumerate(root.operands):
            swapped = (e.opcode == "get-tuple-element" and e.operands[0].opcode == "parameter"
                       and e.attr("index") != i)
            if e.shape.is_token:
                new_operands.append(e)
            elif swapped or e.opcode in ("constant", "parameter") or e in seen:
                new_operands.append(self.rebuild(comp=body, value=e, before=root,
                                                 needs_copy=lambda *_: True))
            else:
                new_operands.append(e)
            seen.add(e)
        if not all(a is b for a, b in zip(new_operands, root.operands)):
            root.operands = new_operands
            self.changed = True

    def new_after_root(self, comp, root):
        copy = HloInstruction("copy", root.shape, [root], name=self.module.unique_name("copy"))
        comp.add_instruction(copy)
        self.changed = True
        return copy

    # ----- cases 3 and 4: roots that must own their buffers ---------------------------
    def owned_root(self, comp, aliases=None):
        root = comp.root_instruction
        aliases = aliases or {}

        def needs_copy(leaf, index, seen):
            if leaf in seen:
                return True
            if not _is_read_only_or_parameter(leaf):
                return False
            param, path = _parameter_index(leaf)
            return not (param is not None and aliases.get(index) == (param.parameter_number, path))

        users = comp.users_map()
        if root.opcode == "tuple" and not users.get(id(root)):
            # Change the root tuple in place.
            seen = set()
            new_operands = [self.rebuild(comp, e, needs_copy, root, (i,), seen)
                            for i, e in enumerate(root.operands)]
            if not all(a is b for a, b in zip(new_operands, root.operands)):
                root.operands = new_operands
                self.changed = True
            return
        anchor = HloInstruction("after-all", Shape.token(), name="copy-insertion-anchor")
        comp.add_instruction(anchor)
        new_root = self.rebuild(comp, root, needs_copy, anchor)
        comp.remove_instruction(anchor)
        if new_root is not root:
            comp.root_instruction = new_root


class CopyInsertion(HloPass):
    name = "copy-insertion"

    def run(self, module):
        inserter = _Inserter(module)
        bodies = {id(i.attr("body")): i.attr("body") for i in module.all_instructions() if i.opcode == "while"}
        for comp in module.computations:
            for instr in list(comp.instructions):
                if instr.opcode == "while":
                    inserter.while_init(comp, instr, bodies)
        for body in bodies.values():
            inserter.body_root(body)
        branches = {}
        for instr in module.all_instructions():
            if instr.opcode == "conditional":
                for c in (instr.attr("branch_computations") or
                          [instr.attr("true_computation"), instr.attr("false_computation")]):
                    branches[id(c)] = c
        for branch in branches.values():
            inserter.owned_root(branch)
        inserter.owned_root(module.entry, parse_input_output_alias(module))
        return inserter.changed
