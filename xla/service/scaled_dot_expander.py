"""ScaledDotExpander: ``scaled-dot(lhs, lhs_scale, rhs, rhs_scale)`` (jaxlib
0.10.2's operand order) becomes converts, multiplies and a ``dot``, for
backends without a block-scaled kernel (the CPU runs it after this pass).

As XLA defines it (``xla/hlo/evaluator/ops_linalg.py``): each element of a
scale multiplies its block of the operand (a scale of shape ``[s0, s1]``
over an operand ``[d0, d1]`` covers blocks of ``d0/s0 x d1/s1``; a scalar
scale all of it), in the compute type (the result's for f32/f64, f32 for
narrower floats, f64 when an operand is f64), then the dot in that type,
converted to the result's. A block is repeated by broadcasting the scale to
``[s0, d0/s0, s1, d1/s1]`` and reshaping. Scales of another rank are left
alone, and the backend names the op.
"""
from xla.hlo.shape import Shape
from xla.hlo.types import PrimitiveType
from xla.service.pass_utils import OpExpanderPass


def _expandable(instr):
    if instr.opcode != "scaled-dot" or len(instr.operands) != 4 or not instr.shape.is_array:
        return False
    lhs, lhs_scale, rhs, rhs_scale = instr.operands
    if not instr.shape.element_type.is_float:
        return False
    for x, s in ((lhs, lhs_scale), (rhs, rhs_scale)):
        if s.shape.rank not in (0, x.shape.rank):
            return False
        if any(sd == 0 or xd % sd for xd, sd in zip(x.shape.dimensions, s.shape.dimensions)):
            return False
    return True


def _compute_type(instr):
    types = [instr.shape.element_type] + [o.shape.element_type for o in instr.operands]
    if PrimitiveType.F64 in types:
        return PrimitiveType.F64
    return PrimitiveType.F32


class ScaledDotExpander(OpExpanderPass):
    name = "scaled-dot-expander"

    def matches(self, instr):
        return _expandable(instr)

    def expand(self, b, sd):
        lhs, lhs_scale, rhs, rhs_scale = sd.operands
        ct = _compute_type(sd)

        def as_compute(x):
            if x.shape.element_type == ct:
                return x
            return b.add("convert", Shape.array(ct, x.shape.dimensions), [x])

        def scaled(x, scale):
            x, scale = as_compute(x), as_compute(scale)
            dims = list(x.shape.dimensions)
            if scale.shape.rank == 0:
                full = b.add("broadcast", Shape.array(ct, dims), [scale], dimensions=())
            else:
                blocks = []
                for d, s in zip(dims, scale.shape.dimensions):
                    blocks += [s, d // s]
                spread = b.add("broadcast", Shape.array(ct, blocks), [scale],
                               dimensions=tuple(range(0, 2 * len(dims), 2)))
                full = b.add("reshape", Shape.array(ct, dims), [spread])
            return b.add("multiply", Shape.array(ct, dims), [x, full])

        attrs = {k: tuple(sd.attr(k, ()) or ()) for k in ("lhs_batch_dims", "rhs_batch_dims",
                                                          "lhs_contracting_dims",
                                                          "rhs_contracting_dims")}
        dot = b.add("dot", Shape.array(ct, sd.shape.dimensions),
                    [scaled(lhs, lhs_scale), scaled(rhs, rhs_scale)],
                    **{k: v for k, v in attrs.items() if v})
        return dot if ct == sd.shape.element_type else b.add("convert", sd.shape, [dot])
