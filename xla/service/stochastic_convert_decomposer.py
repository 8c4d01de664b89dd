"""StochasticConvertDecomposer (XLA's ``stochastic_convert_decomposer``):
``stochastic-convert(x, random)`` of a float to an integer type becomes the
ops it stands for, so the backends run it. With ``bits`` the width of the
random operand's type, as XLA computes it (and the interpreter's handler,
checked against XLA:CPU):

    a = |x|, whole = floor(a), threshold = convert<uN>((a - whole) * 2^bits)
    rounded = whole + (random < threshold ? 1 : 0)
    result = sign(x) * rounded, saturated at the integer type's range, 0 for NaN

``(a - whole) * 2^bits`` is exact (a power-of-two scaling of an exact
difference, in f32 or f64 so that 2^bits fits), and its conversion truncates
as XLA's does.
"""
import numpy as np

from xla.hlo.ir import HloInstruction
from xla.hlo.shape import Shape
from xla.service.hlo_pass import HloPass


def _decompose(module, comp, sc):
    x, random = sc.operands
    dims = tuple(sc.shape.dimensions)
    ft, ut, it = x.shape.element_type, random.shape.element_type, sc.shape.element_type

    def add(opcode, et, operands, attrs=None, literal=None, shape_dims=dims):
        instr = HloInstruction(opcode, Shape.array(et, shape_dims), list(operands),
                               name=module.unique_name(opcode), attrs=attrs, literal=literal)
        comp.insert_before(sc, instr)
        return instr

    def full(value, et):
        scalar = add("constant", et, [], literal=np.asarray(value, dtype=et.dtype), shape_dims=())
        return add("broadcast", et, [scalar], {"dimensions": ()})

    def compare(a, b, direction):
        return add("compare", _pred(), [a, b], {"direction": direction})

    magnitude = add("abs", ft, [x])
    whole = add("floor", ft, [magnitude])
    fraction = add("subtract", ft, [magnitude, whole])
    # 2^bits in a type that holds it (2^16 overflows f16): f32, or f64 for u64.
    from xla.hlo.types import PrimitiveType
    wide = PrimitiveType.F64 if ut.bits > 32 or ft.bits > 32 else PrimitiveType.F32
    if wide is not ft:
        fraction = add("convert", wide, [fraction])
    scaled = add("multiply", wide, [fraction, full(float(2 ** ut.bits), wide)])
    threshold = add("convert", ut, [scaled])
    up = compare(random, threshold, "LT")
    rounded = add("select", ft, [up, add("add", ft, [whole, full(1.0, ft)]), whole])
    negative = compare(x, full(0.0, ft), "LT")
    signed = add("select", ft, [negative, add("negate", ft, [rounded]), rounded])
    info = np.iinfo(it.dtype)
    too_big = compare(signed, full(float(info.max), ft), "GE")
    too_small = compare(signed, full(float(info.min), ft), "LE")
    is_nan = compare(x, x, "NE")
    inside = add("convert", it, [signed])
    result = add("select", it, [too_small, full(int(info.min), it), inside])
    result = add("select", it, [too_big, full(int(info.max), it), result])
    return HloInstruction("select", sc.shape, [is_nan, full(0, it), result], name=sc.name)


def _pred():
    from xla.hlo.types import PrimitiveType
    return PrimitiveType.PRED


class StochasticConvertDecomposer(HloPass):
    name = "stochastic_convert_decomposer"

    def run(self, module):
        changed = False
        for comp in list(module.computations):
            for sc in list(comp.instructions):
                if sc.opcode != "stochastic-convert" or sc.shape.is_dynamic \
                        or sc.operands[0].shape.element_type.kind != "f" \
                        or sc.shape.element_type.kind not in ("s", "u"):
                    continue   # (anything else stays, and a backend names it unsupported)
                new = _decompose(module, comp, sc)
                comp.insert_before(sc, new)
                comp.replace_instruction(sc, new)
                changed = True
        return changed
