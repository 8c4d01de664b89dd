"""ConvolutionTypeWidening: convolutions in element types a backend has no
convolution for become convolutions in a type it has, between converts
(XLA's ``ChangeOpDataType``; XLA:CPU's float normalization upcasts bf16
convolutions to f32 the same way).

The types are those of ``dot-type-widening`` (``contraction_type``), the
contraction being a convolution's: for each result element, the kernel's
input features times its spatial positions (padding and dilation holes
only drop terms).

* Floating point: a convolution of floats of at most 32 bits, one of them
  narrower (bf16, f16, f8...), runs in f32 and rounds its result once:
  the interpreter's definition (narrow floats accumulate in f32, rounded
  once) up to the order of the sums.
* Integers of at most 32 bits: in f32 or f64 where no partial sum can
  leave the integers the float holds exactly (then the result converts
  through s32 and keeps the low bits, as a wrapping integer sum would),
  else in s32.

``accepts(instr, wide)``, when given, says whether the backend computes
``instr`` faster in type ``wide`` (the CPU: where its runtime's conv2d or
``convolution-im2col`` takes the widened convolution, and not s8 x s8 ->
s32 ones, which im2col keeps in s8: ``layout_constraints.widened_conv2d``);
a convolution it refuses is left as it is.
"""
import math

from xla.service.dot_type_widening import contraction_type, widen
from xla.service.pass_utils import OpExpanderPass


def contraction_length(instr):
    """The terms each element of convolution ``instr`` sums, at most: the
    kernel's input features times its spatial positions."""
    dn = instr.attr("dim_labels")
    kernel = instr.operands[1].shape.dimensions
    return kernel[dn.kernel_input_feature_dimension] * math.prod(
        kernel[d] for d in dn.kernel_spatial_dimensions)


class ConvolutionTypeWidening(OpExpanderPass):
    name = "convolution-type-widening"

    def __init__(self, accepts=None):
        self.accepts = accepts

    def _target(self, instr):
        """The type to compute convolution ``instr`` in, or None."""
        if (instr.opcode != "convolution" or not instr.shape.is_array
                or len(instr.operands) != 2 or instr.control_predecessors
                or not all(o.shape.is_array for o in instr.operands)
                or instr.attr("dim_labels") is None):
            return None
        lhs, rhs = (o.shape.element_type for o in instr.operands)
        wide = contraction_type(instr.shape.element_type, lhs, rhs, contraction_length(instr))
        if wide is None or (self.accepts is not None and not self.accepts(instr, wide)):
            return None
        return wide

    def matches(self, instr):
        return self._target(instr) is not None

    def expand(self, b, conv):
        return widen(b, conv, self._target(conv))
