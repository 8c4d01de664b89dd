"""DotTypeWidening: dots in element types a backend has no GEMM for become
dots in a type it has, between converts (XLA's ``ChangeOpDataType``, as
XLA:CPU applies it to narrow dots).

* Floating point: a dot whose operands and result are floats of at most 32
  bits, at least one of them narrower (bf16, f16, f8...), converts its
  operands to f32, multiplies in f32 and converts the result back. Every
  product of two such values is exact in f32, so this is the precision
  the interpreter defines (``xla/hlo/evaluator/ops_linalg.py``: computed
  in f32, rounded once) up to the order of the sums.
* Integers: a dot of integers of at most 32 bits (s8 x s8 -> s32, u8,
  s16, u32...) with an integer result of at most 32 bits is a dot in s32.
  Converting an operand to s32 keeps its value (u32: its bits), the sums
  wrap modulo 2^32, and the final narrowing convert keeps the low bits,
  so every result is the one XLA defines: the sum of products modulo
  2^bits of the result type.
* Narrow integers in floating point: where no partial sum can leave the
  integers a float holds exactly (k x max|a| x max|b| <= 2^24 for f32,
  below 2^31 for f64, k the contracted length), the dot is computed in
  f32 or f64 and converted to s32 first: exact in any summation order, and
  a float GEMM is an order of magnitude faster than an integer one (s8 x s8
  with k <= 1024 runs at f32 GEMM speed).

* Low-precision operands a backend multiplies itself (``native``: pairs of
  an operand type and the type it accumulates in, e.g. ``(("s8", "s32"),
  ("bf16", "f32"))``): a dot whose two operands are of such a type and
  whose result is of the same kind (integer / float) of at most 32 bits
  keeps its operands and gets the accumulation type as its result,
  followed by a convert to the original result type when that differs
  (s8 x s8 -> s8 is the s32 dot's low bits; bf16 x bf16 -> bf16 its f32
  sum rounded once). Those dots are left alone by the rules above.

The CPU runs the widened dots through its Eigen GEMM
(``__xla_cpu_matmul_f32``/``_f64``/``_s32``) and its native ones through
``__xla_cpu_matmul_s8_s32``/``_bf16_f32``; the converts are elementwise
and fuse with their neighbours.
"""
import math

from xla.hlo.shape import Shape
from xla.hlo.types import PrimitiveType
from xla.service.pass_utils import OpExpanderPass


def _native_type(instr, native):
    """The accumulation type for a dot whose operands ``native`` lists, or None."""
    lhs, rhs = (o.shape.element_type for o in instr.operands)
    out = instr.shape.element_type
    acc = native.get(lhs.text)
    if lhs != rhs or acc is None:
        return None
    acc = PrimitiveType[acc.upper()]
    same_kind = out.is_integer if acc.is_integer else out.is_float
    return acc if same_kind and out.bits <= 32 else None


def _wide_type(instr):
    """The type to compute ``instr`` (a dot) in, or None to leave it."""
    lhs, rhs = instr.operands
    k = math.prod(lhs.shape.dimensions[d] for d in instr.attr("lhs_contracting_dims", ()))
    return contraction_type(instr.shape.element_type, lhs.shape.element_type,
                            rhs.shape.element_type, k)


def contraction_type(out, lhs, rhs, k):
    """The type to compute a contraction of ``k`` terms (a dot's, a
    convolution's) with operand types ``lhs`` and ``rhs`` and result type
    ``out`` in, or None to leave it: f32 for floats of at most 32 bits
    with a narrower one among them; for integers of at most 32 bits, f32
    or f64 where every partial sum is an integer the float holds exactly
    (``k * max|lhs| * max|rhs|`` at most 2^24, below 2^31), else s32."""
    types = [out, lhs, rhs]
    if all(t.is_float and t.bits <= 32 for t in types):
        if all(t == PrimitiveType.F32 for t in types):
            return None
        return PrimitiveType.F32
    if all(t.is_integer and t.bits <= 32 for t in types):
        bound = k * _max_magnitude(lhs) * _max_magnitude(rhs)
        if bound <= 2 ** 24:
            return PrimitiveType.F32
        if bound < 2 ** 31:
            return PrimitiveType.F64
        if all(t == PrimitiveType.S32 for t in types):
            return None
        return PrimitiveType.S32
    return None


def _max_magnitude(t):
    """The largest absolute value of integer type ``t``."""
    return 2 ** (t.bits - 1) if t.is_signed_integer else 2 ** t.bits - 1


class DotTypeWidening(OpExpanderPass):
    name = "dot-type-widening"

    def __init__(self, native=()):
        self.native = dict(native)

    def _target(self, instr):
        """(accumulation type, whether the operands keep their type), or None."""
        if (instr.opcode != "dot" or not instr.shape.is_array or len(instr.operands) != 2
                or instr.control_predecessors or not all(o.shape.is_array for o in instr.operands)):
            return None
        acc = _native_type(instr, self.native)
        if acc is not None:
            return None if acc == instr.shape.element_type else (acc, True)
        wide = _wide_type(instr)
        return None if wide is None else (wide, False)

    def matches(self, instr):
        return self._target(instr) is not None

    def expand(self, b, dot):
        wide, native = self._target(dot)
        if native:
            new = b.add("dot", Shape.array(wide, dot.shape.dimensions), list(dot.operands),
                        **dict(dot.attrs))
            out = Shape.array(dot.shape.element_type, dot.shape.dimensions)
            return b.add("convert", out, [new])
        return widen(b, dot, wide)


def widen(b, instr, wide):
    """``instr`` (a dot or a convolution) computed in type ``wide`` with the
    Emitter ``b``: its operands converted to ``wide``, its result converted
    back (integers computed in a float through s32, whose narrowing
    convert keeps the low bits); the result's instruction."""
    def widened(x):
        if x.shape.element_type == wide:
            return x
        return b.add("convert", Shape.array(wide, x.shape.dimensions), [x])

    dims = instr.shape.dimensions
    new = b.add(instr.opcode, Shape.array(wide, dims), [widened(o) for o in instr.operands],
                **dict(instr.attrs))
    out = instr.shape.element_type
    if out.is_integer and wide.is_float:
        # Exact integers below 2^31: to s32, then (wrapping) to the result.
        new = b.add("convert", Shape.array(PrimitiveType.S32, dims), [new])
    if new.shape.element_type == out:
        return new
    return b.add("convert", Shape.array(out, dims), [new])
