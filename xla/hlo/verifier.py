"""The HLO verifier: checks that a module keeps the IR's invariants.

``verify_module(module)`` returns None or raises ``xla.errors.VerifierError``
whose message names where the problem is, e.g.::

    instruction %add.3 in computation %main: operand 1 has shape f32[3] but add needs f32[4] ...

What it checks, in order (the first violation is reported):

* module: an entry computation that belongs to the module; computation and
  instruction names unique within the module;
* computations: a root that belongs to the computation; parameters numbered
  0..n-1 with no gaps or duplicates; operands and control-predecessors in
  the same computation; no cycles through operands and control-predecessors
  (the C++ core's ``find_cycle``); called computations belong to the module,
  no computation calls itself (directly or not), the entry is never called,
  and a computation is not both fused (``fusion``'s ``calls``) and called
  from non-fusion instructions;
* instructions: valid layouts (minor_to_major a permutation of 0..rank-1),
  non-negative dimensions, arrays of fewer than 2^63 bytes, the operand count of the opcode, and a declared
  shape compatible with the one ``xla.hlo.shape_inference`` infers (layouts
  and dynamic flags ignored; for bounded dynamic dimensions the bounds are
  compared). Shape inference also checks the signatures of called
  computations (reducers, comparators, while condition/body, branches,
  map/call/fusion parameters);
* the header's ``entry_computation_layout``, when present, matches the entry
  computation's parameters and result (ignoring layouts).

Mixed floating-point precision, as XLA's ``HloVerifierOpts``: shape
inference accepts operands whose floating-point types differ where XLA's
does (elementwise ops, select, clamp, pad, concatenate: the result has the
higher precision; a dynamic-update-slice's update; the inputs and init
values of reduce and reduce-window against their reducer's parameters),
and by default (``allow_mixed_precision=False``, XLA's default)
the verifier refuses an instruction whose operands hold floating-point
types of different precisions ("mixed precision is disallowed"), except the
opcodes that only pass data through or mix types by definition
(``MIXED_PRECISION_EXEMPT``: call, while, tuple, dot, convolution,
custom-call, fusion...). With ``allow_mixed_precision=True`` (what XLA's
HloTestBase uses, so XLA's test modules need it) it lets them through, and
a declared shape may differ from the inferred one in floating-point
precision (``maximum(f16[4], f32[4]) -> f16[4]``), except for the opcodes
whose result is their input's bits (``EXACT_SHAPE_OPCODES``: parameter,
tuple, get-tuple-element, while, call...). The backends run such modules
after ``mixed-precision-normalizer`` (``xla/service``) makes the converts
explicit.

What it does not check: that a scheduled module's order is a valid schedule,
sharding, backend configs, or that custom-call targets exist.
"""
import numpy as np

from xla.errors import ShapeError, VerifierError
from xla.hlo import shape_functions, shape_inference


def _core():
    try:
        from xla import _core
    except ImportError as e:
        raise ImportError(
            "the HLO verifier needs the C++ extension xla._core (for find_cycle), which is not "
            "built; run `make setup` to build it") from e
    return _core


def find_cycle(offsets, indices):
    """A node on a cycle of the CSR graph, or -1 (xla._core.find_cycle)."""
    return int(_core().find_cycle(np.asarray(offsets, dtype=np.int64),
                                  np.asarray(indices, dtype=np.int64)))


# XLA's CheckMixedPrecisionOperands lets these mix floating-point types (data
# passes through, or the op converts by definition); scan as while (jaxlib
# 0.10.2 accepts a scan with an f32 input and a bf16 carry), ragged-dot and
# scaled-dot as dot (f8 operands with bf16 scales are scaled-dot's use).
MIXED_PRECISION_EXEMPT = frozenset("""call conditional constant convolution dot ragged-dot
scaled-dot all-reduce
all-reduce-start all-reduce-done all-gather all-gather-start all-gather-done async-done
async-update async-start copy-done copy-start custom-call domain fusion get-tuple-element
opt-barrier infeed outfeed parameter recv recv-done reduce-precision reduce-window send send-done
sort tuple while scan""".split())

# XLA's CheckShape compares these exactly even with mixed precision allowed:
# their result is their input's bits, never a rounding.
EXACT_SHAPE_OPCODES = frozenset("""bitcast call conditional constant copy-done copy-start
custom-call get-tuple-element infeed outfeed opt-barrier parameter recv recv-done send send-done
tuple while""".split())


def mixed_precision_problem(instr):
    """A message when ``instr`` mixes floating-point precisions in its
    operands (or, for reduce and reduce-window, between its operands and its
    reducer's parameters: XLA's SameElementTypesForOperandsAndToApplyParameters)
    where XLA's verifier needs allow_mixed_precision, else None."""
    if instr.opcode in ("reduce", "reduce-window") and instr.attr("to_apply") is not None:
        n = len(instr.operands) // 2
        try:
            shape_functions.check_reducer(
                shape_functions.program_shape(instr.attr("to_apply")),
                [o.shape.element_type for o in instr.operands[n:]],
                [o.shape.element_type for o in instr.operands[:n]], instr.opcode)
        except ShapeError as e:
            return f"{e}, but mixed precision is disallowed (allow_mixed_precision)"
    if instr.opcode in MIXED_PRECISION_EXEMPT:
        return None
    seen = None
    for op in instr.operands:
        for _, leaf in op.shape.leaves():
            if leaf.is_array and leaf.element_type.is_float:
                if seen is None:
                    seen = leaf.element_type
                elif leaf.element_type is not seen:
                    return (f"operands mix floating-point types {seen.text} and "
                            f"{leaf.element_type.text}, but mixed precision is disallowed "
                            f"(allow_mixed_precision)")
    return None


def _where(comp, instr=None):
    if instr is None:
        return f"computation %{comp.name}"
    return f"instruction %{instr.name} in computation %{comp.name}"


def _fail(comp, instr, message):
    raise VerifierError(f"{_where(comp, instr)}: {message}")


def _check_size(shape):
    """A message when an array in ``shape`` has more bytes than an int64
    counts (XLA: "shape size may overflow int64_t"), else None: no backend
    could address it, and sizes are int64 everywhere past the verifier."""
    for _, leaf in shape.leaves():
        if leaf.is_array and leaf.byte_size() >= 2**63:
            return f"shape {leaf.to_text(False)} has {leaf.byte_size():,} bytes, more than an int64 counts"
    return None


def _check_layout(shape, path=""):
    """A message when some layout in ``shape`` is invalid, else None."""
    if shape.is_tuple:
        for i, s in enumerate(shape.tuple_shapes):
            msg = _check_layout(s, f"{path}{{{i}}}")
            if msg:
                return msg
        return None
    where = f" (at tuple index {path})" if path else ""
    for d, dyn in zip(shape.dimensions, shape.dynamic):
        if d < 0 and not (dyn and d == -1):
            return f"shape {shape} has a negative dimension{where}"
    if shape.layout is None or not shape.is_array:
        return None
    m2m = shape.layout.minor_to_major
    if sorted(m2m) != list(range(shape.rank)):
        return (f"layout {{{','.join(map(str, m2m))}}} of shape {shape.to_text(False)} is not a "
                f"permutation of 0..{shape.rank - 1}{where}")
    return None


class _Verifier:
    def __init__(self, module, allow_mixed_precision=False):
        self.module = module
        self.allow_mixed_precision = allow_mixed_precision
        self.module_comps = {id(c) for c in module.computations}
        self.shapes_checked = {}   # id(shape) -> (shape, message or None)

    def run(self):
        module = self.module
        comps = module.computations
        if module.entry is None:
            raise VerifierError(f"module {module.name} has no entry computation")
        if not any(c is module.entry for c in comps):
            raise VerifierError(f"module {module.name}: entry computation %{module.entry.name} "
                                f"does not belong to the module")
        seen = {}
        for comp in comps:
            if comp.name in seen:
                raise VerifierError(f"module {module.name}: computation name %{comp.name} is used twice")
            seen[comp.name] = comp
            if comp.parent is not None and comp.parent is not module:
                _fail(comp, None, "belongs to another module")
        names = {}
        for comp in comps:
            for instr in comp.instructions:
                if instr.name in names:
                    _fail(comp, instr, f"name %{instr.name} is not unique in the module (also in "
                                       f"computation %{names[instr.name].name})")
                names[instr.name] = comp
        for comp in comps:
            self.verify_structure(comp)
        for comp in comps:
            self.verify_acyclic(comp)
        self.verify_call_graph()
        for comp in comps:
            for instr in comp.instructions:
                self.verify_shape(comp, instr)
        self.verify_entry_layout()

    # ----- structure --------------------------------------------------------
    def verify_structure(self, comp):
        members = {id(i) for i in comp.instructions}
        root = comp.root_instruction
        if root is None:
            _fail(comp, None, "has no root instruction")
        if id(root) not in members:
            _fail(comp, None, f"root %{root.name} does not belong to the computation")
        numbers = {}
        for instr in comp.instructions:
            if instr.parent is not comp:
                _fail(comp, instr, "has a parent other than the computation holding it")
            if instr.opcode == "parameter":
                n = instr.parameter_number
                if n is None or n < 0:
                    _fail(comp, instr, f"parameter has an invalid number {n}")
                if n in numbers:
                    _fail(comp, instr, f"parameter number {n} is also used by %{numbers[n].name}")
                numbers[n] = instr
        if sorted(numbers) != list(range(len(numbers))):
            missing = sorted(set(range(len(numbers))) - set(numbers))
            _fail(comp, numbers[max(numbers)],
                  f"parameters must be numbered 0..{len(numbers) - 1}; parameter {missing[0]} is missing")
        module_comps = self.module_comps
        shapes_checked = self.shapes_checked
        for instr in comp.instructions:
            for i, op in enumerate(instr.operands):
                if id(op) not in members:
                    where = f"computation %{op.parent.name}" if op.parent is not None else "no computation"
                    _fail(comp, instr, f"operand {i} (%{op.name}) belongs to {where}, not to "
                                       f"computation %{comp.name}")
            for pred in instr.control_predecessors:
                if id(pred) not in members:
                    _fail(comp, instr, f"control-predecessor %{pred.name} is not in computation %{comp.name}")
            for callee in instr.called_computations:
                if id(callee) not in module_comps:
                    _fail(comp, instr, f"calls computation %{callee.name}, which does not belong "
                                       f"to module {self.module.name}")
            shape = instr.shape
            checked = shapes_checked.get(id(shape))
            if checked is None:   # shapes are immutable; the parser shares equal ones
                checked = shapes_checked[id(shape)] = (shape, _check_layout(shape) or _check_size(shape))
            if checked[1]:
                _fail(comp, instr, checked[1])

    def verify_acyclic(self, comp):
        instrs = comp.instructions
        index = {id(i): n for n, i in enumerate(instrs)}
        offsets = [0]
        indices = []
        for instr in instrs:
            for pred in list(instr.operands) + list(instr.control_predecessors):
                indices.append(index[id(pred)])
            offsets.append(len(indices))
        node = find_cycle(offsets, indices)
        if node >= 0:
            _fail(comp, instrs[node], "is on a cycle (through operands or control-predecessors)")

    def verify_call_graph(self):
        comps = self.module.computations
        index = {id(c): n for n, c in enumerate(comps)}
        offsets = [0]
        indices = []
        contexts = {}  # computation id -> (fused?, first caller instruction, its computation)
        for comp in comps:
            for instr in comp.instructions:
                for callee in instr.called_computations:
                    indices.append(index[id(callee)])
                    if callee is self.module.entry:
                        _fail(comp, instr, f"calls the entry computation %{callee.name}")
                    fused = instr.opcode == "fusion"
                    prior = contexts.setdefault(id(callee), (fused, instr, comp))
                    if prior[0] != fused:
                        fused_caller, other = (instr, prior[1]) if fused else (prior[1], instr)
                        _fail(comp, instr,
                              f"computation %{callee.name} is called both as a fused computation "
                              f"(by %{fused_caller.name}) and from a non-fusion instruction "
                              f"(%{other.name})")
            offsets.append(len(indices))
        node = find_cycle(offsets, indices)
        if node >= 0:
            raise VerifierError(f"computation %{comps[node].name} calls itself (directly or through "
                                f"other computations)")

    # ----- shapes -----------------------------------------------------------
    def verify_shape(self, comp, instr):
        if instr.opcode == "custom-call":
            from xla.hlo import custom_call_signatures
            problem = custom_call_signatures.check(instr)
            if problem:
                _fail(comp, instr, f"custom-call target {instr.attr('custom_call_target')!r}: "
                                   f"{problem}")
        try:
            inferred = shape_inference.infer_shape(instr)
        except ShapeError as e:
            _fail(comp, instr, str(e))
        if not self.allow_mixed_precision:
            problem = mixed_precision_problem(instr)
            if problem:
                _fail(comp, instr, problem)
        match = (shape_functions.shapes_match_ignoring_fp_precision
                 if self.allow_mixed_precision and instr.opcode not in EXACT_SHAPE_OPCODES
                 else shape_functions.shapes_match)
        if not match(instr.shape, inferred):
            _fail(comp, instr, f"declared shape {instr.shape.to_text(False)} does not match the "
                               f"shape inferred for {instr.opcode}, {inferred.to_text(False)}")

    def verify_entry_layout(self):
        try:
            from xla.hlo.entry_layout import entry_computation_layout
            layout = entry_computation_layout(self.module)
        except Exception as e:  # noqa: BLE001 - reported as a verifier error
            raise VerifierError(f"module {self.module.name}: cannot parse entry_computation_layout: {e}") from e
        if layout is None:
            return
        param_shapes, result = layout
        entry = self.module.entry
        if len(param_shapes) != entry.num_parameters:
            _fail(entry, None, f"has {entry.num_parameters} parameters but entry_computation_layout "
                               f"lists {len(param_shapes)}")
        for p, want in zip(entry.parameters, param_shapes):
            if not shape_functions.shapes_match(p.shape, want):
                _fail(entry, p, f"parameter {p.parameter_number} has shape {p.shape.to_text(False)} "
                                f"but entry_computation_layout says {want.to_text(False)}")
        root = entry.root_instruction
        if not shape_functions.shapes_match(root.shape, result):
            _fail(entry, root, f"root shape {root.shape.to_text(False)} does not match the result "
                               f"{result.to_text(False)} in entry_computation_layout")


def verify_module(module, allow_mixed_precision=False):
    """Raises VerifierError on the first broken invariant of ``module``.
    ``allow_mixed_precision``: XLA's HloVerifierOpts option of that name (see
    the module docstring)."""
    _Verifier(module, allow_mixed_precision).run()
