"""MixedPrecisionNormalizer: makes mixed floating-point precision explicit,
so that a module the verifier accepts with ``allow_mixed_precision`` (as
XLA's test modules need) runs on backends that compute in one type per
instruction. XLA does the equivalent in its float normalization and its
elemental emitter's converts.

Two rewrites, for every instruction outside ``EXACT_SHAPE_OPCODES`` (whose
result is its input's bits) of every computation:

* operands of different floating-point types, for the elementwise ops
  (``add``, ``maximum``, ``compare``, ``select``, ``clamp``...), ``pad`` and
  ``concatenate``: every floating-point operand is converted to the highest
  precision among them (XLA's HigherPrecisionType: exponent range, then
  significand), and the op computes in that type; a
  ``dynamic-update-slice``'s update is converted to its operand's type;
  the inputs and init values of ``reduce`` and ``reduce-window`` to the
  types of their reducer's parameters (the reducer computes in its types);
* a declared result type that differs in floating-point precision from the
  inferred one (``maximum(f16, f32) -> f16``, ``negate(f32) -> bf16``,
  ``reshape(f32) -> f16``...): the op computes its inferred type and a
  ``convert`` gives the declared one.

What it cannot rewrite raises ``UnimplementedError`` naming the
instruction, never a silent wrong answer: mixed operands of any other
opcode outside ``MIXED_PRECISION_EXEMPT`` (where mixing is the op's own
business: dot, convolution, call, while...), ``map`` (whose operands
each feed a parameter of their own type), ``after-all`` and
``add-dependency`` (which compute nothing), and a differing precision in a
tuple-shaped result. Modules without mixed precision are left alone (the
check per instruction looks at operand and result types before inferring
anything).
"""
from xla.errors import UnimplementedError
from xla.hlo import opcodes
from xla.hlo.ir import HloInstruction
from xla.hlo.shape_functions import higher_precision_type, program_shape, shapes_match
from xla.hlo.shape_inference import infer_shape
from xla.hlo.verifier import EXACT_SHAPE_OPCODES, MIXED_PRECISION_EXEMPT
from xla.service.hlo_pass import HloPass

# Opcodes whose inputs and init values convert to their reducer's parameter types.
_REDUCERS = frozenset(["reduce", "reduce-window"])

# Opcodes whose floating-point operands may be converted to one type.
_CONVERTIBLE = (opcodes.ELEMENTWISE - {"map", "convert", "bitcast-convert", "reduce-precision",
                                       "stochastic-convert"}) | {"pad", "concatenate",
                                                                 "dynamic-update-slice"}


def _float_types(instr):
    return {leaf.element_type for op in instr.operands for _, leaf in op.shape.leaves()
            if leaf.is_array and leaf.element_type.is_float}


# Operands mixing types that need no convert: map's operands each feed a
# parameter of their own type (shape inference checks it); after-all and
# add-dependency compute nothing.
_NO_CONVERT = MIXED_PRECISION_EXEMPT | {"map", "after-all", "add-dependency"}


def _candidate(instr):
    """Cheap: may ``instr`` mix precisions (operands, or result vs operands)?"""
    if instr.opcode in EXACT_SHAPE_OPCODES:
        return False
    shape = instr.shape
    if shape.is_array:
        # The usual case, and no candidate: every operand an array of the
        # result's element type.
        et = shape.element_type
        for op in instr.operands:
            s = op.shape
            if not s.is_array or s.element_type is not et:
                break
        else:
            return False
    types = _float_types(instr)
    if len(types) > 1 and instr.opcode not in _NO_CONVERT:
        return True
    return shape.is_tuple or (shape.is_array and shape.element_type.is_float and bool(types)
                              and shape.element_type not in types)


class MixedPrecisionNormalizer(HloPass):
    name = "mixed-precision-normalizer"

    def run(self, module):
        changed = False
        for comp in module.computations:
            for instr in list(comp.instructions):
                if _candidate(instr):
                    changed |= self._normalize(module, comp, instr)
        return changed

    def _add(self, module, comp, anchor, instr):
        instr.name = module.unique_name(instr.opcode)
        comp.insert_before(anchor, instr)
        return instr

    def _convert(self, module, comp, anchor, op, target):
        if op.shape.element_type is target:
            return op
        return self._add(module, comp, anchor, HloInstruction(
            "convert", op.shape.with_element_type(target), [op]))

    def _normalize(self, module, comp, instr):
        types = _float_types(instr)
        new = instr
        if instr.opcode in _REDUCERS:
            # Inputs and init values to the types of the reducer's parameters.
            params = program_shape(instr.attr("to_apply")).parameters
            n = len(instr.operands) // 2
            wants = [p.element_type for p in params[n:]] + [p.element_type for p in params[:n]]
            if any(o.shape.element_type is not w for o, w in zip(instr.operands, wants)):
                operands = [self._convert(module, comp, instr, o, w)
                            for o, w in zip(instr.operands, wants)]
                new = HloInstruction(instr.opcode, instr.shape, operands, attrs=dict(instr.attrs))
        elif len(types) > 1 and instr.opcode not in _NO_CONVERT:
            if instr.opcode not in _CONVERTIBLE:
                raise UnimplementedError(
                    f"mixed precision: {instr.opcode} %{instr.name} in %{comp.name} mixes "
                    f"floating-point types {', '.join(sorted(t.text for t in types))}; only "
                    f"elementwise ops, pad, concatenate and dynamic-update-slice are "
                    f"converted to one type")
            target = None
            for t in types:
                target = t if target is None else higher_precision_type(target, t)
            if instr.opcode == "dynamic-update-slice":
                target = instr.operands[0].shape.element_type
            operands = [self._convert(module, comp, instr, op, target)
                        if op.shape.is_array and op.shape.element_type.is_float else op
                        for op in instr.operands]
            new = HloInstruction(instr.opcode, instr.shape, operands, attrs=dict(instr.attrs))
        inferred = infer_shape(new)
        if not shapes_match(instr.shape, inferred):
            if not (instr.shape.is_array and inferred.is_array):
                raise UnimplementedError(
                    f"mixed precision: {instr.opcode} %{instr.name} in %{comp.name} declares "
                    f"{instr.shape.to_text(False)} but computes {inferred.to_text(False)}; only "
                    f"array results are converted")
            computed = instr.shape.with_element_type(inferred.element_type)
            if new is instr:
                new = HloInstruction(instr.opcode, computed, list(instr.operands),
                                     attrs=dict(instr.attrs))
            else:
                new.shape = computed
            self._add(module, comp, instr, new)
            new = HloInstruction("convert", instr.shape, [new])
        if new is instr:
            return False
        if new.parent is None:
            self._add(module, comp, instr, new)
        name = instr.name
        comp.replace_instruction(instr, new)
        new.name = name   # the converted result keeps the name its users know
        return True
