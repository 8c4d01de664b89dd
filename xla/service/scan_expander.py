"""ScanExpander: every ``scan`` (``xla/hlo/scan.py``) becomes a ``while`` loop,
as XLA's ``ScanExpander`` does, for backends without a scan kernel (the CPU
and the GPU run it first).

The loop state is ``(index: s64[], carries..., inputs..., outputs...)``.
The condition is ``index < L`` (L the inputs' scan-dimension size); the body
reads each input at position ``p`` (``index``, or ``L - 1 - index`` when
``is_reverse``) with a dynamic-slice and a reshape that drops the scan
dimension, runs ``to_apply`` on those slices and the carries (inlined into
the body), writes each output at ``p`` with a reshape and a
dynamic-update-slice, and passes the new carries on. The outputs start as
zeros (every position is written before the loop ends). A scan of length 0
has no loop: its result is empty outputs and the initial carries (XLA's
expander builds the loop anyway, whose dynamic-slice of size 1 over a
dimension of size 0 its own verifier refuses). The scan's result is rebuilt
from the loop's: a tuple ``(outputs..., carries...)``, or its one element
when the scan's shape is no tuple. ``is_associative`` is ignored: the loop
is the sequential scan, whose values are the scan's by definition.
"""
import numpy as np

from xla.hlo.ir import HloComputation, HloInstruction
from xla.hlo.shape import Shape
from xla.hlo.types import PrimitiveType
from xla.service.pass_utils import OpExpanderPass, inline_computation, remove_unreferenced

S64, PRED = PrimitiveType.S64, PrimitiveType.PRED
_INDEX = Shape.array(S64, ())


class _Builder:
    """Appends instructions to a new computation, under fresh names."""

    def __init__(self, module, comp):
        self.module, self.comp = module, comp

    def add(self, opcode, shape, operands=(), **attrs):
        return self.comp.add_instruction(HloInstruction(
            opcode, shape, list(operands), name=self.module.unique_name(opcode), attrs=attrs))

    def constant(self, value, element_type):
        return self.comp.add_instruction(HloInstruction.create_constant(
            np.asarray(value, element_type.dtype), Shape.array(element_type, ()),
            name=self.module.unique_name("constant")))

    def parameter(self, shape):
        return self.comp.add_instruction(
            HloInstruction.create_parameter(0, shape, name=self.module.unique_name("loop_state")))


def _drop(dims, d):
    return dims[:d] + dims[d + 1:]


def _one_at(dims, d):
    return dims[:d] + (1,) + dims[d + 1:]


class _Scan:
    """What the expansion needs to know about one scan instruction."""

    def __init__(self, scan):
        self.scan = scan
        self.to_apply = scan.attr("to_apply")
        self.num_carries = scan.attr("num_carries")
        self.dim = tuple(scan.attr("dimensions"))[0]
        self.num_inputs = len(scan.operands) - self.num_carries
        self.inputs = scan.operands[:self.num_inputs]
        self.inits = scan.operands[self.num_inputs:]
        self.length = self.inputs[0].shape.dimensions[self.dim]
        self.reverse = bool(scan.attr("is_reverse", False))
        if scan.shape.is_tuple:
            self.output_shapes = list(scan.shape.tuple_shapes[:len(scan.shape.tuple_shapes)
                                                              - self.num_carries])
        else:
            self.output_shapes = [scan.shape] if self.num_carries == 0 else []
        self.state_shape = Shape.tuple(
            [_INDEX] + [o.shape for o in self.inits] + [o.shape for o in self.inputs]
            + self.output_shapes)

    def condition(self, module):
        comp = HloComputation(module.unique_name(f"{self.scan.name}_condition"))
        b = _Builder(module, comp)
        state = b.parameter(self.state_shape)
        index = b.add("get-tuple-element", _INDEX, [state], index=0)
        limit = b.constant(self.length, S64)
        comp.root_instruction = b.add("compare", Shape.array(PRED, ()), [index, limit],
                                      direction="LT")
        return comp

    def body(self, module):
        comp = HloComputation(module.unique_name(f"{self.scan.name}_body"))
        comp.parent = module
        b = _Builder(module, comp)
        state = b.parameter(self.state_shape)
        elements = [b.add("get-tuple-element", s, [state], index=k)
                    for k, s in enumerate(self.state_shape.tuple_shapes)]
        index = elements[0]
        carries = elements[1:1 + self.num_carries]
        inputs = elements[1 + self.num_carries:1 + self.num_carries + self.num_inputs]
        outputs = elements[1 + self.num_carries + self.num_inputs:]
        position = index
        if self.reverse:
            last = b.constant(self.length - 1, S64)
            position = b.add("subtract", _INDEX, [last, index])
        d = self.dim
        zero = b.constant(0, S64) if any(
            s.rank > 1 for s in self.state_shape.tuple_shapes[1:] if s.is_array) else None

        def starts(rank):
            return [position if k == d else zero for k in range(rank)]

        slices = []
        for x in inputs:
            dims, et = x.shape.dimensions, x.shape.element_type
            one = b.add("dynamic-slice", Shape.array(et, _one_at(dims, d)),
                        [x] + starts(len(dims)), dynamic_slice_sizes=_one_at(dims, d))
            slices.append(b.add("reshape", Shape.array(et, _drop(dims, d)), [one]))
        root_shape = self.to_apply.root_instruction.shape
        call = b.add("call", root_shape, slices + carries, to_apply=self.to_apply)
        if root_shape.is_tuple:
            values = [b.add("get-tuple-element", s, [call], index=k)
                      for k, s in enumerate(root_shape.tuple_shapes)]
        else:
            values = [call]
        updated = []
        for out, value in zip(outputs, values):
            dims, et = out.shape.dimensions, out.shape.element_type
            update = b.add("reshape", Shape.array(et, _one_at(dims, d)), [value])
            updated.append(b.add("dynamic-update-slice", out.shape, [out, update] + starts(len(dims))))
        one = b.constant(1, S64)
        following = b.add("add", _INDEX, [index, one])
        comp.root_instruction = b.add("tuple", self.state_shape,
                                      [following] + values[len(outputs):] + inputs + updated)
        result = inline_computation(comp, call, self.to_apply, slices + carries)
        comp.replace_instruction(call, result)
        return comp


def _add_before(module, comps, caller):
    """Adds ``comps`` to ``module`` just before ``caller`` in printing order
    (callees before callers)."""
    for comp in comps:
        module.add_computation(comp)
    ids = {id(c) for c in comps}
    rest = [c for c in module.computations if id(c) not in ids]
    at = next(k for k, c in enumerate(rest) if c is caller)
    module.computations = rest[:at] + list(comps) + rest[at:]


class ScanExpander(OpExpanderPass):
    name = "scan-expander"

    def matches(self, instr):
        return instr.opcode == "scan"

    def run(self, module):
        # Until none is left: a scan inside to_apply is copied into the new
        # loop body, which the first sweep did not visit.
        changed = False
        while any(self.matches(i) for c in module.computations for i in c.instructions):
            callees = [i.attr("to_apply") for c in module.computations for i in c.instructions
                       if self.matches(i)]
            super().run(module)
            remove_unreferenced(module, callees)
            changed = True
        return changed

    def expand(self, b, instr):
        s = _Scan(instr)
        if s.length == 0:
            results = [b.add("broadcast", shape, [b.constant(0, shape.element_type)], dimensions=())
                       for shape in s.output_shapes] + list(s.inits)
            return b.add("tuple", instr.shape, results) if instr.shape.is_tuple else results[0]
        module = b.module
        condition, body = s.condition(module), s.body(module)
        _add_before(module, [condition, body], b.comp)
        init = [b.constant(0, S64)] + list(s.inits) + list(s.inputs)
        for shape in s.output_shapes:
            zero = b.constant(0, shape.element_type)
            init.append(b.add("broadcast", shape, [zero], dimensions=()))
        state = b.add("tuple", s.state_shape, init)
        loop = b.add("while", s.state_shape, [state], condition=condition, body=body)
        first_output = 1 + s.num_carries + s.num_inputs
        results = [b.add("get-tuple-element", shape, [loop], index=first_output + k)
                   for k, shape in enumerate(s.output_shapes)]
        results += [b.add("get-tuple-element", o.shape, [loop], index=1 + k)
                    for k, o in enumerate(s.inits)]
        if instr.shape.is_tuple:
            return b.add("tuple", instr.shape, results)
        return results[0]
