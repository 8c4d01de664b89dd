"""VJP rules of elementwise ops."""

import numpy as np

from xla.errors import UnimplementedError
from xla.frontend.autodiff.table import is_float, vjp_rule


# ----- elementwise rules ------------------------------------------------------------

@vjp_rule("add")
def _add(g, instr, ct):
    return [ct, ct]


@vjp_rule("subtract")
def _subtract(g, instr, ct):
    return [ct, g.neg(ct)]


@vjp_rule("multiply")
def _multiply(g, instr, ct):
    x, y = map(g.op, instr.operands)
    return [g.mul(ct, y), g.mul(ct, x)]


@vjp_rule("divide")
def _divide(g, instr, ct):
    x, y = map(g.op, instr.operands)
    out = g.op(instr)
    cx = g.div(ct, y)
    return [cx, g.neg(g.mul(cx, out))]


@vjp_rule("negate")
def _negate(g, instr, ct):
    return [g.neg(ct)]


@vjp_rule("exponential")
def _exp(g, instr, ct):
    return [g.mul(ct, g.op(instr))]


@vjp_rule("exponential-minus-one")
def _expm1(g, instr, ct):
    out = g.op(instr)
    return [g.mul(ct, g.add(out, g.const(out, 1)))]


@vjp_rule("log")
def _log(g, instr, ct):
    return [g.div(ct, g.op(instr.operands[0]))]


@vjp_rule("log-plus-one")
def _log1p(g, instr, ct):
    x = g.op(instr.operands[0])
    return [g.div(ct, g.add(x, g.const(x, 1)))]


@vjp_rule("sqrt")
def _sqrt(g, instr, ct):
    out = g.op(instr)
    return [g.div(g.mul(ct, g.const(out, 0.5)), out)]


@vjp_rule("rsqrt")
def _rsqrt(g, instr, ct):
    x, out = g.op(instr.operands[0]), g.op(instr)
    return [g.mul(g.mul(ct, g.const(out, -0.5)), g.div(out, x))]


@vjp_rule("cbrt")
def _cbrt(g, instr, ct):
    x, out = g.op(instr.operands[0]), g.op(instr)
    return [g.div(g.mul(ct, out), g.mul(g.const(x, 3), x))]


@vjp_rule("tanh")
def _tanh(g, instr, ct):
    out = g.op(instr)
    return [g.mul(ct, g.sub(g.const(out, 1), g.mul(out, out)))]


@vjp_rule("logistic")
def _logistic(g, instr, ct):
    out = g.op(instr)
    return [g.mul(ct, g.mul(out, g.sub(g.const(out, 1), out)))]


@vjp_rule("sine")
def _sin(g, instr, ct):
    return [g.mul(ct, g.u("cosine", g.op(instr.operands[0])))]


@vjp_rule("cosine")
def _cos(g, instr, ct):
    return [g.neg(g.mul(ct, g.u("sine", g.op(instr.operands[0]))))]


@vjp_rule("tan")
def _tan(g, instr, ct):
    out = g.op(instr)
    return [g.mul(ct, g.add(g.const(out, 1), g.mul(out, out)))]


@vjp_rule("erf")
def _erf(g, instr, ct):
    x = g.op(instr.operands[0])
    scale = g.const(x, 2 / np.sqrt(np.pi))
    return [g.mul(ct, g.mul(scale, g.u("exponential", g.neg(g.mul(x, x)))))]


@vjp_rule("atan2")
def _atan2(g, instr, ct):
    y, x = map(g.op, instr.operands)
    denom = g.add(g.mul(x, x), g.mul(y, y))
    return [g.div(g.mul(ct, x), denom), g.neg(g.div(g.mul(ct, y), denom))]


@vjp_rule("power")
def _power(g, instr, ct):
    x, y = map(g.op, instr.operands)
    out = g.op(instr)
    zero = g.const(x, 0)
    one = g.const(x, 1)
    # d/dx x^y = y x^(y-1); at x == 0 use y * 0^(y-1) computed directly.
    cx = g.mul(ct, g.mul(y, g.b.binary("power", x, g.sub(y, one))))
    safe_log = g.u("log", g.select(g.cmp(x, zero, "EQ"), one, x))
    cy = g.mul(ct, g.mul(out, safe_log))
    cy = g.select(g.cmp(x, zero, "EQ"), g.const(x, 0), cy)
    return [cx, cy]


def _chooser(g, instr, ct, direction):
    x, y = map(g.op, instr.operands)
    # Ties split the cotangent evenly, as JAX defines max/min's derivative.
    half = g.mul(ct, g.const(ct, 0.5))
    zero = g.zeros(ct.shape)
    pick_x = g.cmp(x, y, direction)
    tie = g.cmp(x, y, "EQ")
    cx = g.select(tie, half, g.select(pick_x, ct, zero))
    cy = g.select(tie, half, g.select(pick_x, zero, ct))
    return [cx, cy]


@vjp_rule("maximum")
def _maximum(g, instr, ct):
    return _chooser(g, instr, ct, "GT")


@vjp_rule("minimum")
def _minimum(g, instr, ct):
    return _chooser(g, instr, ct, "LT")


@vjp_rule("abs")
def _abs(g, instr, ct):
    x = g.op(instr.operands[0])
    if x.element_type.kind == "c":
        raise UnimplementedError("gradient of abs of a complex value is not supported")
    return [g.mul(ct, g.u("sign", x))]


@vjp_rule("sign", "floor", "ceil", "round-nearest-afz", "round-nearest-even")
def _zero_grad(g, instr, ct):
    return [g.zeros(instr.operands[0].shape)]


@vjp_rule("copy", "opt-barrier")
def _identity(g, instr, ct):
    return [ct]


@vjp_rule("convert")
def _convert(g, instr, ct):
    src = instr.operands[0].shape
    if not is_float(src):
        return [None]
    if ct.element_type.kind == "c" and src.element_type.kind != "c":
        ct = g.u("real", ct)   # real -> complex: the imaginary part of the cotangent drops
    return [g.b.convert(ct, src.element_type)]


@vjp_rule("reduce-precision")
def _reduce_precision(g, instr, ct):
    return [ct]


@vjp_rule("real")
def _real(g, instr, ct):
    zero = g.zeros(ct.shape)
    return [g.b.binary("complex", ct, zero)]


@vjp_rule("imag")
def _imag(g, instr, ct):
    zero = g.zeros(ct.shape)
    return [g.b.binary("complex", zero, g.neg(ct))]


@vjp_rule("complex")
def _complex(g, instr, ct):
    return [g.u("real", ct), g.neg(g.u("imag", ct))]


@vjp_rule("select")
def _select(g, instr, ct):
    p = g.op(instr.operands[0])
    zero = g.zeros(ct.shape)
    return [None, g.select(p, ct, zero), g.select(p, zero, ct)]


@vjp_rule("clamp")
def _clamp(g, instr, ct):
    lo, x, hi = map(g.op, instr.operands)
    zero = g.zeros(ct.shape)
    below = g.cmp(x, lo if lo.dims == x.dims else g.b.broadcast_in_dim(lo, x.dims, ()), "LT")
    above = g.cmp(x, hi if hi.dims == x.dims else g.b.broadcast_in_dim(hi, x.dims, ()), "GT")
    inside = g.b.binary("and", g.u("not", below), g.u("not", above))
    clo = g.select(below, ct, zero)
    chi = g.select(above, ct, zero)
    if not lo.dims and x.dims:
        clo = g.sum_to(clo, range(len(x.dims)))
    if not hi.dims and x.dims:
        chi = g.sum_to(chi, range(len(x.dims)))
    return [clo, g.select(inside, ct, zero), chi]


@vjp_rule("sinh")
def _sinh(g, instr, ct):
    return [g.mul(ct, g.u("cosh", g.op(instr.operands[0])))]


@vjp_rule("cosh")
def _cosh(g, instr, ct):
    return [g.mul(ct, g.u("sinh", g.op(instr.operands[0])))]


def _inverse_sqrt_rule(sign_one, sign_square):
    """ct / sqrt(sign_one * 1 + sign_square * x^2): asin, acos (negated), asinh, acosh."""
    def rule(g, instr, ct):
        x = g.op(instr.operands[0])
        square = g.mul(x, x)
        inner = g.add(g.const(x, sign_one), square) if sign_square > 0 else \
            g.sub(g.const(x, sign_one), square)
        return [g.div(ct, g.u("sqrt", inner))]
    return rule


vjp_rule("asin")(_inverse_sqrt_rule(1, -1))
vjp_rule("asinh")(_inverse_sqrt_rule(1, 1))
vjp_rule("acosh")(_inverse_sqrt_rule(-1, 1))


@vjp_rule("acos")
def _acos(g, instr, ct):
    x = g.op(instr.operands[0])
    return [g.neg(g.div(ct, g.u("sqrt", g.sub(g.const(x, 1), g.mul(x, x)))))]


@vjp_rule("atanh")
def _atanh(g, instr, ct):
    x = g.op(instr.operands[0])
    return [g.div(ct, g.sub(g.const(x, 1), g.mul(x, x)))]
