"""LayoutAssignment: gives every array shape of the module a layout.

What it does, computation by computation, callers before callees:

* Entry parameters and result follow ``header_attrs['entry_computation_layout']``
  when the module has one (and it has a layout for them); otherwise they keep
  their layout, or get the row-major one (``{n-1,...,0}``) if they have none.
* Parameters of computations called by ``call``, ``fusion``, ``while`` and
  ``conditional`` take the layouts of the caller's operands (the while's own
  shape for the body and condition); the root of a called computation takes
  the caller's result layout (a while body's root: the while's shape). A
  computation called from several sites is constrained by the first one;
  at the other sites copies are inserted so that operands and results match.
* ``tuple`` and ``get-tuple-element`` take their layouts from their
  operands. Every other instruction keeps its layout, or gets row-major if
  it has none (``bitcast`` included: it is layout-sensitive and its layout
  is never changed). Computations called by other instructions (reducers,
  comparators, ``map`` and scatter computations) get row-major layouts.
* Elementwise instructions (except ``copy``, which is how layouts change)
  whose array operands of the same rank have a layout other than the
  result's get a ``copy`` of those operands with the result's layout.
* Wherever an instruction's existing layout had to change (a parameter or
  a root constrained from outside, a tuple or get-tuple-element following
  its operand, a call site's result following its callee), a ``copy`` back
  to the old layout is inserted for its users, so no consumer (a bitcast in
  particular) sees a layout other than the one it was written against; a
  root that must have another layout gets a ``copy`` (per tuple element,
  through ``get-tuple-element`` and ``tuple``) to it.

* ``constraints`` (an option, the backend's: a function of an instruction
  returning None or ``(operand layouts, result layout)``, each a Layout or
  None for "any"): those operands get a ``copy`` in the layout asked for and
  the result that layout (users written against another layout see a
  ``copy`` back), as XLA:CPU's layout assignment constrains its library
  calls (the CPU's: ``xla/backends/cpu/layout_constraints.py``).

What it does not do: choose layouts for performance (XLA's layout
assignment makes e.g. transposes bitcasts, or picks operand layouts for dot
and convolution); nothing is propagated backwards from users to operands
other than the copies above. Layouts with tiling (the text after ``:``)
are kept as they are. Filling a missing layout with row-major never
changes what the module computes (no layout means row-major).
"""
from xla.hlo.entry_layout import entry_computation_layout
from xla.hlo.ir import HloInstruction
from xla.hlo.opcodes import ELEMENTWISE
from xla.hlo.shape import Layout, Shape
from xla.service.hlo_pass import HloPass

_CALL_SITES = frozenset(["call", "fusion", "while", "conditional"])


def with_default_layouts(shape):
    """``shape`` with row-major layouts wherever an array has none."""
    if shape.is_tuple:
        return Shape.tuple([with_default_layouts(s) for s in shape.tuple_shapes])
    if shape.is_array and shape.layout is None:
        return shape.with_layout(Layout.row_major(shape.rank))
    return shape


def _merge(shape, wanted):
    """``shape`` with the layouts ``wanted`` has (where it has them)."""
    if wanted is None:
        return shape
    if shape.is_tuple:
        if not wanted.is_tuple or len(wanted.tuple_shapes) != len(shape.tuple_shapes):
            return shape
        return Shape.tuple([_merge(s, w) for s, w in zip(shape.tuple_shapes, wanted.tuple_shapes)])
    if shape.is_array and wanted.is_array and wanted.layout is not None:
        return shape.with_layout(wanted.layout)
    return shape




class _Assigner:
    def __init__(self, module, constraints=None):
        self.module = module
        self.instruction_constraints = constraints
        # computation -> (parameter shapes or None, root shape or None)
        self.constraints = {}
        self.changed = False

    # ----- instruction helpers ----------------------------------------------------
    def _new(self, comp, opcode, shape, operands, attrs=None, before=None, after=None):
        instr = HloInstruction(opcode, shape, operands, name=self.module.unique_name(opcode), attrs=attrs)
        if before is not None:
            comp.insert_before(before, instr)
        else:
            comp.insert_after(after, instr)
        self.changed = True
        return instr

    def convert(self, comp, value, target, before=None, after=None):
        """``value`` with the layouts of ``target``: a copy for an array, a tuple
        of converted elements for a tuple; new instructions go just before
        ``before`` or just after ``after``."""
        if value.shape == target or not (value.shape.is_array or value.shape.is_tuple):
            return value
        if before is None:
            placeholder = HloInstruction("after-all", Shape.token(), name="layout-assignment-placeholder")
            comp.insert_after(after, placeholder)
            try:
                return self.convert(comp, value, target, before=placeholder)
            finally:
                comp.remove_instruction(placeholder)
        if value.shape.is_array:
            return self._new(comp, "copy", target, [value], before=before)
        elements = []
        for i, (have, want) in enumerate(zip(value.shape.tuple_shapes, target.tuple_shapes)):
            gte = self._new(comp, "get-tuple-element", have, [value], attrs={"index": i}, before=before)
            elements.append(self.convert(comp, gte, want, before=before))
        return self._new(comp, "tuple", target, elements, before=before)

    def force_shape(self, comp, instr, shape):
        """Sets ``instr.shape``. Users keep seeing the old layout through a copy
        when it was written explicitly, or when a bitcast (layout-sensitive)
        uses ``instr``."""
        old = with_default_layouts(instr.shape)
        explicit = instr.shape == old
        if instr.shape == shape:
            return
        self._set(instr, shape)
        if old == shape:
            return
        users = instr.users
        if explicit or any(u.opcode == "bitcast" for u in users):
            self._restore_users(comp, instr, old, users)

    # ----- computations -------------------------------------------------------------
    def run(self):
        module = self.module
        entry = module.entry
        layout = entry_computation_layout(module)
        if layout is not None:
            params, result = layout
            self.constraints[id(entry)] = (params if len(params) == entry.num_parameters else None, result)
        for comp in reversed(module.computations_post_order()):
            self.assign(comp)
        return self.changed

    def assign(self, comp):
        params, root_shape = self.constraints.get(id(comp), (None, None))
        for instr in list(comp.instructions):
            if instr.parent is not comp:
                continue
            op = instr.opcode
            if op == "parameter":
                want = with_default_layouts(instr.shape)
                if params is not None and instr.parameter_number < len(params):
                    want = _merge(want, params[instr.parameter_number])
                self.force_shape(comp, instr, want)
            elif op == "tuple":
                self.force_shape(comp, instr, Shape.tuple([o.shape for o in instr.operands]))
            elif op == "get-tuple-element":
                self.force_shape(comp, instr, instr.operands[0].shape.tuple_shapes[instr.attr("index")])
            elif op in _CALL_SITES:
                self.fill(instr)
                self.call_site(comp, instr)
            else:
                self.fill(instr)
                if op in ELEMENTWISE and op != "copy" and instr.shape.is_array:
                    self.match_operands(comp, instr)
                wanted = (self.instruction_constraints(instr)
                          if self.instruction_constraints is not None else None)
                if wanted is not None:
                    self.constrain(comp, instr, *wanted)
        root = comp.root_instruction
        want = _merge(with_default_layouts(root.shape), root_shape)
        if root.shape != want:
            comp.root_instruction = self.convert(comp, root, want, after=root)

    def fill(self, instr):
        self._set(instr, with_default_layouts(instr.shape))

    def _set(self, instr, shape):
        # A scalar's layout is always {}: filling it in is not a change
        # anyone can observe (nor does it print), so it is not reported.
        if shape is not instr.shape and shape.to_text() != instr.shape.to_text():
            self.changed = True
        instr.shape = shape

    def match_operands(self, comp, instr):
        layout = instr.shape.layout
        for i, operand in enumerate(instr.operands):
            s = operand.shape
            if s.is_array and s.rank == instr.shape.rank and s.rank > 0 and s.layout != layout:
                target = s.with_layout(layout)
                instr.operands[i] = self.convert(comp, operand, target, before=instr)

    def constrain(self, comp, instr, operand_layouts, result_layout):
        """Operands copied to ``operand_layouts`` (None: as they are) and
        the result given ``result_layout``, its users seeing a copy back."""
        for i, (operand, layout) in enumerate(zip(list(instr.operands), operand_layouts)):
            s = operand.shape
            if layout is not None and s.is_array and s.layout != layout:
                instr.operands[i] = self.convert(comp, operand, s.with_layout(layout), before=instr)
        s = instr.shape
        if result_layout is not None and s.is_array and s.layout != result_layout:
            self._set(instr, s.with_layout(result_layout))
            self._restore_users(comp, instr, s)

    def call_site(self, comp, instr):
        op = instr.opcode
        if op == "while":
            pairs = [(instr.attr("body"), [instr.shape], instr.shape),
                     (instr.attr("condition"), [instr.shape], None)]
            init = instr.operands[0]
            if init.shape != instr.shape:
                instr.operands[0] = self.convert(comp, init, instr.shape, before=instr)
            for callee, params, root in pairs:
                if id(callee) not in self.constraints:
                    self.constraints[id(callee)] = (params, root)
                else:
                    have_params, have_root = self.constraints[id(callee)]
                    if have_params[0] != instr.shape or (root is not None and have_root != root):
                        # A body shared with a differently laid-out loop: the
                        # loop follows the first one.
                        old = instr.shape
                        self._set(instr, have_params[0])
                        instr.operands[0] = self.convert(comp, instr.operands[0], instr.shape, before=instr)
                        self._restore_users(comp, instr, old)
            return
        if op == "conditional":
            callees = list(instr.attr("branch_computations") or
                           [instr.attr("true_computation"), instr.attr("false_computation")])
            operand_groups = [[o] for o in instr.operands[1:]]
        else:
            callees = [instr.attr("to_apply") if op == "call" else instr.attr("calls")]
            operand_groups = [list(instr.operands)]
        for callee, operands in zip(callees, operand_groups):
            if id(callee) not in self.constraints:
                self.constraints[id(callee)] = ([o.shape for o in operands], instr.shape)
                continue
            params, root = self.constraints[id(callee)]
            for o, want in zip(operands, params):
                if o.shape != want:
                    new = self.convert(comp, o, want, before=instr)
                    instr.operands = [new if (x is o) else x for x in instr.operands]
            if root is not None and root != instr.shape:
                old = instr.shape
                self._set(instr, root)
                self._restore_users(comp, instr, old)

    def _restore_users(self, comp, instr, old, users=None):
        """Users of ``instr`` (and the root, if it is ``instr``) use a copy of it
        with the ``old`` layout."""
        self.changed = True
        if users is None:
            users = instr.users
        is_root = comp.root_instruction is instr
        if not users and not is_root:
            return
        back = self.convert(comp, instr, old, after=instr)
        for u in users:
            u.replace_operand(instr, back)
        if is_root:
            comp.root_instruction = back


class LayoutAssignment(HloPass):
    name = "layout-assignment"

    def __init__(self, constraints=None):
        self.constraints = constraints

    def run(self, module):
        return _Assigner(module, self.constraints).run()
