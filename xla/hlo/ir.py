"""HloInstruction, HloComputation, HloModule: the in-memory HLO IR.

The IR is deliberately plain: an instruction is an opcode string, a Shape,
a list of operand instructions and a dict of typed attributes (see
``xla.hlo.attributes``). Opcode-specific facts live in per-opcode tables in
the layers that need them (shape inference, interpreter, emitters).
"""
import itertools
import weakref

import numpy as np

from xla.hlo.attributes import ATTRIBUTE_KINDS

from xla.hlo.shape import Shape

# Attribute names that hold one computation (True) or a list of them (False).
_CALLED = {name: kind == "computation" for name, kind in ATTRIBUTE_KINDS.items()
           if kind in ("computation", "computations")}

_ids = itertools.count()


class _OperandList(list):
    """An instruction's operand list that keeps its operands' user sets current.

    Any change (item assignment, append, insert, slice assignment, ...) is
    applied and then reconciled: each operand's ``_users`` maps its users to
    how many times they use it.
    """

    __slots__ = ("_owner",)

    def __init__(self, owner, items=()):
        super().__init__(items)
        self._owner = owner
        if not getattr(owner, "_detached", False):
            for op in self:
                _add_use(op, owner)

    def _detach(self):
        if getattr(self._owner, "_detached", False):
            return
        for op in self:
            _remove_use(op, self._owner)

    def _attach(self):
        for op in self:
            _add_use(op, self._owner)

    def _reconcile(self, before):
        owner = self._owner
        if getattr(owner, "_detached", False):  # unset while copy rebuilds an instruction
            return
        for op in before:
            _remove_use(op, owner)
        for op in self:
            _add_use(op, owner)


def _add_use(operand, user):
    users = getattr(operand, "_users", None)  # the parser holds None for forward references
    if users is not None:
        users[user] = users.get(user, 0) + 1


def _remove_use(operand, user):
    users = getattr(operand, "_users", None)
    if users is None:
        return
    n = users.get(user, 0) - 1
    if n > 0:
        users[user] = n
    else:
        users.pop(user, None)


def _tracked(name):
    method = getattr(list, name)

    def wrapper(self, *args, **kwargs):
        before = list(self)
        result = method(self, *args, **kwargs)
        self._reconcile(before)
        return result if result is not self else self
    wrapper.__name__ = name
    return wrapper


for _name in ("__setitem__", "__delitem__", "__iadd__", "__imul__", "append", "extend",
              "insert", "pop", "remove", "clear", "sort", "reverse"):
    setattr(_OperandList, _name, _tracked(_name))


class _Attrs(dict):
    """Instruction attributes; notes which instructions gain control
    predecessors, so that rewiring uses can skip scanning for them in the
    (usual) case where no instruction of the computation has any."""

    __slots__ = ("_owner",)

    def __init__(self, owner, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._owner = owner
        if self.get("control-predecessors"):
            self._note()

    def __reduce__(self):
        return dict, (dict(self),)  # a copy is a plain dict, owned by no instruction

    def _note(self):
        _control_dependencies_seen[0] = True
        _with_control_predecessors.add(self._owner)

    def __setitem__(self, key, value):
        if key == "control-predecessors" and value:
            self._note()
        super().__setitem__(key, value)

    def update(self, *args, **kwargs):
        super().update(*args, **kwargs)
        if self.get("control-predecessors"):
            self._note()

    def setdefault(self, key, default=None):
        if key == "control-predecessors" and default:
            self._note()
        return super().setdefault(key, default)


# Instructions that have had control predecessors (a superset of those that
# have them now), so a computation finds its own without a scan.
_with_control_predecessors = weakref.WeakSet()

# Whether any instruction in this process has had control predecessors.
_control_dependencies_seen = [False]


def control_dependencies_seen():
    """Whether any instruction in this process has had control predecessors
    (while none has, passes may skip looking for them)."""
    return _control_dependencies_seen[0]


class HloInstruction:
    """One HLO instruction.

    Attributes:
      opcode: the opcode as spelled in HLO text (``add``, ``get-tuple-element``).
      shape: the result Shape.
      operands: list of HloInstruction.
      name: unique within the module (without the ``%`` sigil).
      attrs: dict name -> typed value, in printing order.
      literal: for ``constant``: a NumPy array (tuple constants: a tuple of
        literals). None otherwise.
      parameter_number: for ``parameter``: its index. None otherwise.
      parent: the HloComputation that holds this instruction.
    """

    __slots__ = ("opcode", "shape", "_operands", "_users", "name", "attrs", "literal",
                 "parameter_number", "parent", "unique_id", "_detached", "__weakref__")

    def __init__(self, opcode, shape, operands=(), name=None, attrs=None, literal=None,
                 parameter_number=None):
        if not isinstance(shape, Shape):
            raise TypeError(f"shape of {opcode} must be a Shape, got {type(shape).__name__}")
        self.opcode = opcode
        self.shape = shape
        self._users = {}
        # True while removed by ``HloComputation.remove_instruction``: its
        # operands do not list it as a user until it is added again.
        self._detached = False
        self._operands = _OperandList(self, operands)
        self.unique_id = next(_ids)
        self.name = name if name is not None else f"{opcode}.{self.unique_id}"
        self.attrs = _Attrs(self, attrs) if attrs else _Attrs(self)
        self.literal = literal
        self.parameter_number = parameter_number
        self.parent = None

    # ----- constructors for the two ops with a value in parentheses ----------
    @staticmethod
    def create_parameter(number, shape, name=None):
        return HloInstruction("parameter", shape, name=name, parameter_number=number)

    @staticmethod
    def create_constant(value, shape=None, name=None):
        if shape is None:
            if isinstance(value, tuple):
                raise ValueError("a tuple constant needs an explicit shape")
            value = np.asarray(value)
            shape = Shape.from_array(value)
        return HloInstruction("constant", shape, name=name, literal=value)

    # ----- attributes ---------------------------------------------------
    def attr(self, name, default=None):
        return self.attrs.get(name, default)

    def has_attr(self, name):
        return name in self.attrs

    @property
    def operand(self):
        return self.operands

    @property
    def called_computations(self):
        """Computations this instruction calls, in attribute order."""
        out = []
        attrs = self.attrs
        if attrs:
            called = _CALLED
            for name in attrs:
                single = called.get(name)
                if single is not None:
                    if single:
                        out.append(attrs[name])
                    else:
                        out.extend(attrs[name])
        return out

    @property
    def control_predecessors(self):
        preds = self.attrs.get("control-predecessors")
        return tuple(preds) if preds else ()

    @property
    def is_root(self):
        return self.parent is not None and self.parent.root_instruction is self

    @property
    def operands(self):
        return self._operands

    @operands.setter
    def operands(self, value):
        self._operands._detach()
        self._operands = _OperandList(self, value)

    @property
    def users(self):
        """Instructions of the same computation that use this one, each once,
        in the order they started using it. Kept up to date by every change
        to an operand list, so this costs O(users), not O(instructions)."""
        parent = self.parent
        return [u for u in self._users if u.parent is parent and parent is not None]

    def replace_operand(self, old, new):
        self.operands = [new if o is old else o for o in self.operands]

    @property
    def is_elided_constant(self):
        """A constant whose value the text elided as ``{...}`` (literal is None).

        Such a module prints back unchanged but cannot be evaluated.
        """
        return self.opcode == "constant" and self.literal is None

    def to_text(self):
        from xla.hlo.printer import instruction_to_text
        return instruction_to_text(self)

    def __str__(self):
        return self.to_text()

    def __repr__(self):
        return f"<HloInstruction {self.name} = {self.shape} {self.opcode}>"


class HloComputation:
    """A list of instructions with one root; parameters are numbered 0..n-1.

    ``instructions`` is kept in a valid order (operands before users) and,
    for a scheduled module, is the schedule.

    ``remove_instruction``, ``insert_before`` and ``insert_after`` cost O(1):
    they are recorded and applied to the list in one O(n) pass the next time
    ``instructions`` is read, so a pass that rewrites many instructions
    without reading the list in between stays linear.
    """

    def __init__(self, name, instructions=(), root=None, is_entry=False):
        self.name = name
        self._instructions = []
        self._removed = {}      # id -> instruction removed but still in _instructions
        self._inserted = {}     # id(anchor) -> instructions to insert before it
        self._inserted_after = {}  # id(anchor) -> instructions to insert after it, in order
        self.root_instruction = None
        self.is_entry = is_entry
        self.parent = None
        # Text after the signature that the IR does not model (e.g.
        # ``execution_thread="main"``), kept verbatim for printing.
        self.extra_attrs = {}
        for instr in instructions:
            self.add_instruction(instr)
        if root is not None:
            self.root_instruction = root
        elif self.instructions:
            self.root_instruction = self.instructions[-1]

    @property
    def instructions(self):
        if self._removed or self._inserted or self._inserted_after:
            self._apply_pending()
        return self._instructions

    @instructions.setter
    def instructions(self, value):
        taken = getattr(self.parent, "_taken_names", None)
        for instr in value:
            if instr._detached:  # listed again after remove_instruction
                self._reattach(instr)
            if taken is not None:
                taken.add(instr.name)
        self._instructions = value
        self._removed = {}
        self._inserted = {}
        self._inserted_after = {}

    def _apply_pending(self):
        removed, before, after = self._removed, self._inserted, self._inserted_after
        self._removed, self._inserted, self._inserted_after = {}, {}, {}
        out = []
        for listed in self._instructions:
            if id(listed) not in before and id(listed) not in after:
                if id(listed) not in removed:
                    out.append(listed)
                continue
            # Inserted instructions may be anchors themselves: expand in order.
            stack = [(listed, False)]
            while stack:
                instr, emit = stack.pop()
                if emit:
                    if id(instr) not in removed:
                        out.append(instr)
                    continue
                stack.extend((i, False) for i in after.pop(id(instr), ()))  # pushed first to last
                stack.append((instr, True))
                stack.extend((i, False) for i in reversed(before.pop(id(instr), ())))
        # Anchors never listed.
        for pending in list(before.values()) + [a[::-1] for a in after.values()]:
            out.extend(i for i in pending if id(i) not in removed)
        self._instructions = out  # a new list: callers iterating the old one are unaffected

    @staticmethod
    def _reattach(instr):
        if instr._detached:
            instr._detached = False
            instr._operands._attach()

    def add_instruction(self, instr):
        if id(instr) in self._removed:
            self._apply_pending()  # re-added after a removal: listed once, at the end
        self._reattach(instr)
        instr.parent = self
        self._instructions.append(instr)
        self._note_name(instr)
        return instr

    def _note_name(self, instr):
        taken = getattr(self.parent, "_taken_names", None)
        if taken is not None:
            taken.add(instr.name)

    def insert_before(self, anchor, instr):
        """Adds ``instr`` to the list just before ``anchor`` (O(1); several
        instructions inserted before one anchor keep their insertion order)."""
        if anchor.parent is not self:
            raise ValueError(f"{anchor.name} is not in computation {self.name}")
        if id(instr) in self._removed:
            self._apply_pending()
        self._reattach(instr)
        instr.parent = self
        self._note_name(instr)
        self._inserted.setdefault(id(anchor), []).append(instr)
        return instr

    def insert_after(self, anchor, instr):
        """Adds ``instr`` to the list just after ``anchor``, before anything
        inserted after it earlier (O(1))."""
        if anchor.parent is not self:
            raise ValueError(f"{anchor.name} is not in computation {self.name}")
        if id(instr) in self._removed:
            self._apply_pending()
        self._reattach(instr)
        instr.parent = self
        self._note_name(instr)
        self._inserted_after.setdefault(id(anchor), []).append(instr)  # listed last to first
        return instr

    @property
    def parameters(self):
        params = [i for i in self.instructions if i.opcode == "parameter"]
        return sorted(params, key=lambda p: p.parameter_number)

    @property
    def num_parameters(self):
        return sum(1 for i in self.instructions if i.opcode == "parameter")

    def parameter(self, number):
        for instr in self.instructions:
            if instr.opcode == "parameter" and instr.parameter_number == number:
                return instr
        raise IndexError(f"computation {self.name} has no parameter {number}")

    @property
    def result_shape(self):
        return self.root_instruction.shape

    def instruction(self, name):
        for instr in self.instructions:
            if instr.name == name:
                return instr
        raise KeyError(f"no instruction {name} in computation {self.name}")

    def post_order(self):
        """Instructions with operands (and control predecessors) before users.

        Depth-first from every instruction in list order, the root last, so
        a valid order is kept as it is, dead instructions are included, and
        the root comes last.
        """
        instructions = self.instructions
        root = self.root_instruction
        if _is_post_order(instructions, root):
            return list(instructions)   # what the walk below returns, found in one pass
        visited = set()
        order = []
        for start in [i for i in instructions if i is not root] + [root]:
            if start is None or id(start) in visited:
                continue
            stack = [(start, False)]
            while stack:
                node, expanded = stack.pop()
                if expanded:
                    order.append(node)
                    continue
                if id(node) in visited:
                    continue
                visited.add(id(node))
                stack.append((node, True))
                preds = list(node.operands) + list(node.control_predecessors)
                for pred in reversed(preds):
                    if id(pred) not in visited:
                        stack.append((pred, False))
        return order

    # ----- mutation (used by passes) ------------------------------------
    def users_map(self):
        """id(instruction) -> list of users (with repeats removed), in order.

        One pass over the computation; passes that need users of many
        instructions should call this once instead of ``instr.users``.
        """
        users = {id(i): [] for i in self.instructions}
        for instr in self.instructions:
            seen = set()
            for op in instr.operands:
                if id(op) not in seen:
                    seen.add(id(op))
                    users.setdefault(id(op), []).append(instr)
        return users

    def replace_all_uses(self, old, new):
        """Makes every user of ``old`` (and the root, if it is ``old``) use ``new``."""
        if old is new:
            return
        for user in list(old._users):
            if user.parent is self:
                user.operands = [new if o is old else o for o in user.operands]
        if self._has_control_dependencies():
            for instr in self.instructions:
                preds = instr.attrs.get("control-predecessors")
                if preds and any(p is old for p in preds):
                    instr.attrs["control-predecessors"] = tuple(new if p is old else p for p in preds)
        if self.root_instruction is old:
            self.root_instruction = new

    def _has_control_dependencies(self):
        # Control dependencies are rare (they come from parsed text); the
        # scan is skipped while no instruction in the process has any.
        return _control_dependencies_seen[0] and any(
            i.parent is self and i.attrs.get("control-predecessors")
            for i in list(_with_control_predecessors))

    def replace_instruction(self, old, new):
        """Adds ``new`` if needed, redirects all uses of ``old`` to it, removes ``old``."""
        if new.parent is not self:
            self.add_instruction(new)
        self.replace_all_uses(old, new)
        self.remove_instruction(old)

    def remove_instruction(self, instr):
        """Removes an instruction that nothing uses any more (O(1))."""
        if instr is self.root_instruction:
            raise ValueError(f"cannot remove the root {instr.name} of {self.name}")
        if instr.parent is not self or id(instr) in self._removed:
            instructions = self.instructions
            index = instructions.index(instr)  # ValueError when it is not listed
            self.instructions = instructions[:index] + instructions[index + 1:]
            instr.parent = None
            return
        # Applied when ``instructions`` is next read (a new list then, so
        # callers iterating the old one are unaffected).
        self._removed[id(instr)] = instr
        instr.parent = None
        # Its operands stop listing it as a user (so checking them for users
        # stays O(live users)); adding it again restores that.
        instr._operands._detach()
        instr._detached = True

    def sort_post_order(self):
        """Puts ``instructions`` in post order (after passes appended new ones)."""
        if not _is_post_order(self.instructions, self.root_instruction):
            self.instructions = self.post_order()

    def to_text(self):
        from xla.hlo.printer import computation_to_text
        return computation_to_text(self)

    def __str__(self):
        return self.to_text()

    def __repr__(self):
        return f"<HloComputation {self.name}: {len(self.instructions)} instructions>"


def _is_post_order(instructions, root):
    """Whether ``instructions`` lists each instruction once, after its
    operands and control predecessors, with ``root`` (if any) last: then
    ``post_order`` would return the list as it is (passes that changed
    nothing in a computation leave it so)."""
    if root is not None and (not instructions or instructions[-1] is not root):
        return False   # a pass appended instructions after the root: no scan needed
    # Instructions hash by identity (HloInstruction defines no __eq__).
    seen = set()
    add = seen.add
    if not _control_dependencies_seen[0]:
        for x in instructions:
            for o in x._operands:
                if o not in seen:
                    return False
            if x in seen:
                return False
            add(x)
        return True
    for x in instructions:
        for o in x._operands:
            if o not in seen:
                return False
        preds = x.attrs.get("control-predecessors")
        if preds:
            for p in preds:
                if p not in seen:
                    return False
        if x in seen:
            return False
        add(x)
    return True


class HloModule:
    """Computations plus the module header.

    ``computations`` is in printing order (callees before callers, entry
    last as XLA prints it). ``header_attrs`` holds the header's attributes
    (``entry_computation_layout``, ``is_scheduled``, ``input_output_alias``,
    ...) as name -> RawAttr/typed value, in text order. ``extra_sections``
    keeps text sections the IR does not model (the stack-frame tables
    ``FileNames``, ``FunctionNames``, ``FileLocations``, ``StackFrames`` of
    newer dumps) as (section name, list of raw lines). ``print_options``
    records the text style the parser found (``%`` on names, operand shapes,
    computation signatures...; see ``xla.hlo.printer``) so that printing
    reproduces it; empty for modules built in code (XLA's default style).
    """

    def __init__(self, name, computations=(), entry=None):
        self.name = name
        self.computations = []
        self.entry = None
        self.header_attrs = {}
        self.extra_sections = []
        self.print_options = {}
        for comp in computations:
            self.add_computation(comp)
        if entry is not None:
            self.set_entry(entry)

    def add_computation(self, comp):
        comp.parent = self
        self.computations.append(comp)
        taken = getattr(self, "_taken_names", None)
        if taken is not None:
            taken.add(comp.name)
            taken.update(i.name for i in comp._instructions)
        if comp.is_entry:
            self.entry = comp
        return comp

    def set_entry(self, comp):
        if comp not in self.computations:
            self.add_computation(comp)
        for c in self.computations:
            c.is_entry = c is comp
        self.entry = comp

    def computation(self, name):
        for comp in self.computations:
            if comp.name == name:
                return comp
        raise KeyError(f"no computation {name} in module {self.name}")

    @property
    def is_scheduled(self):
        value = self.header_attrs.get("is_scheduled")
        return value is True or getattr(value, "text", None) == "true"

    def remove_computation(self, comp):
        if comp is self.entry:
            raise ValueError(f"cannot remove the entry computation {comp.name}")
        self.computations = [c for c in self.computations if c is not comp]
        comp.parent = None

    def unique_name(self, prefix):
        """A name starting with ``prefix`` that no instruction or computation has."""
        # Built once; instructions and computations added through the IR's
        # methods (add_instruction, insert_before/after, assigning
        # ``instructions``, add_computation) add their names to it, so a call
        # costs O(1). Code that renames instructions resets it to None.
        taken = getattr(self, "_taken_names", None)
        if taken is None:
            taken = {i.name for i in self.all_instructions()} | {c.name for c in self.computations}
            self._taken_names = taken
        base = prefix.split(".")[0] if prefix.rsplit(".", 1)[-1].isdigit() else prefix
        n = getattr(self, "_next_suffix", 0)
        while True:
            n += 1
            name = f"{base}.{n}"
            if name not in taken:
                taken.add(name)
                self._next_suffix = n
                return name

    def called_computations_of(self, comp):
        """The computations ``comp`` calls directly, in first-use order."""
        out = {}
        for instr in comp.instructions:
            for c in instr.called_computations:
                out[id(c)] = c
        return list(out.values())

    def computations_post_order(self):
        """Computations with callees before callers; unreachable ones too."""
        order, seen = [], set()
        for start in ([self.entry] if self.entry else []) + self.computations:
            if id(start) in seen:
                continue
            seen.add(id(start))
            # Iterative depth-first search: call chains may be deep.
            stack = [(start, iter(self.called_computations_of(start)))]
            while stack:
                comp, callees = stack[-1]
                for callee in callees:
                    if id(callee) not in seen:
                        seen.add(id(callee))
                        stack.append((callee, iter(self.called_computations_of(callee))))
                        break
                else:
                    stack.pop()
                    order.append(comp)
        return order

    def all_instructions(self):
        for comp in self.computations:
            yield from comp.instructions

    def to_text(self):
        from xla.hlo.printer import module_to_text
        return module_to_text(self)

    def __str__(self):
        return self.to_text()

    def __repr__(self):
        return f"<HloModule {self.name}: {len(self.computations)} computations>"
