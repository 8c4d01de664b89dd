"""Elementwise math, as ``jax.lax``: exponentials and logarithms,
trigonometric and hyperbolic functions, rounding, division, remainder and
power, shifts, bit counts, and bitcasts. Each is one HLO instruction (after
a broadcast of a scalar operand; ``nextafter`` steps the bits, ``sign`` of
unsigned integers is a compare), with the rules of ``primitives``: one
dtype, one shape, JAX's accepted dtypes (``lax.exp`` of an integer array is
an error, not a conversion).

Where these differ from JAX, the difference is a superset or an error,
never another value: ``pow`` also takes integer bases (HLO's power is
defined there; JAX requires an inexact base), and the inverse and
hyperbolic functions take real operands only (the backends implement the
real functions; a complex operand raises). ``atan`` is ``atan2(x, 1)`` and
``exp2`` is ``exp(x * log(2))`` (HLO has neither instruction), as in JAX.
"""
import enum

import numpy as np

from xla.errors import InvalidArgumentError, ShapeError
from xla.frontend.lax.eager import eager
from xla.frontend.lax.primitives import (_ACCEPTS, _NUMBER, _binary, _builder, _check_kind, _kind,
                                         _one_dtype, _one_shape, add, bitwise_and, bitwise_or,
                                         convert_element_type, eq, full_like, gt, lt, mul, ne, select, sub)
from xla.frontend.lax.subcomputation import type_text
from xla.frontend.tracing import Tracer, as_tracer

# Dtype kinds (NumPy kind letters; ``primitives._ACCEPTS`` names them).
_FLOAT, _INEXACT, _INT, _INT_FLOAT, _SIGNED = "f", "fc", "iu", "iuf", "ifc"


def _unary(name, opcode, kinds, doc, weak=True):
    """A JAX unary primitive: HLO ``opcode`` on operands of ``kinds``."""
    @eager
    def op(x):
        t = as_tracer(x)
        _check_kind(name, t, kinds, _ACCEPTS[kinds])
        return Tracer(_builder().unary(opcode, t.op), weak=weak and t.weak)
    op.__name__ = op.__qualname__ = name
    op.__doc__ = doc
    return op


exp = _unary("exp", "exponential", _INEXACT, "e ** x (HLO exponential).")
expm1 = _unary("expm1", "exponential-minus-one", _INEXACT, "e ** x - 1, accurate near 0 (HLO exponential-minus-one).")
log = _unary("log", "log", _INEXACT, "The natural logarithm (HLO log).")
log1p = _unary("log1p", "log-plus-one", _INEXACT, "log(1 + x), accurate near 0 (HLO log-plus-one).")
sqrt = _unary("sqrt", "sqrt", _INEXACT, "The square root (HLO sqrt).")
cbrt = _unary("cbrt", "cbrt", _FLOAT, "The real cube root (HLO cbrt).")
sin = _unary("sin", "sine", _INEXACT, "The sine (HLO sine).")
cos = _unary("cos", "cosine", _INEXACT, "The cosine (HLO cosine).")
tan = _unary("tan", "tan", _INEXACT, "The tangent (HLO tan).")
tanh = _unary("tanh", "tanh", _INEXACT, "The hyperbolic tangent (HLO tanh).")
asin = _unary("asin", "asin", _FLOAT, "The arc sine of reals (HLO asin).")
acos = _unary("acos", "acos", _FLOAT, "The arc cosine of reals (HLO acos).")
sinh = _unary("sinh", "sinh", _FLOAT, "The hyperbolic sine of reals (HLO sinh).")
cosh = _unary("cosh", "cosh", _FLOAT, "The hyperbolic cosine of reals (HLO cosh).")
asinh = _unary("asinh", "asinh", _FLOAT, "The inverse hyperbolic sine of reals (HLO asinh).")
acosh = _unary("acosh", "acosh", _FLOAT, "The inverse hyperbolic cosine of reals (HLO acosh).")
atanh = _unary("atanh", "atanh", _FLOAT, "The inverse hyperbolic tangent of reals (HLO atanh).")
floor = _unary("floor", "floor", _FLOAT, "Rounds down to an integer value (HLO floor).")
ceil = _unary("ceil", "ceil", _FLOAT, "Rounds up to an integer value (HLO ceil).")
is_finite = _unary("is_finite", "is-finite", _FLOAT,
                   "True where x is neither infinite nor NaN (HLO is-finite).", weak=False)
population_count = _unary("population_count", "popcnt", _INT, "The number of set bits (HLO popcnt).")
clz = _unary("clz", "count-leading-zeros", _INT,
             "The number of leading zero bits (HLO count-leading-zeros).")
abs = _unary("abs", "abs", _SIGNED,
             "|x|; of complex numbers, the real magnitude (HLO abs). Unsigned integers are refused, as in JAX.")

# JAX's binary primitives here (add, sub, mul, max, min, compares and
# bitwise ones live in ``primitives``).
div = _binary("div", "divide", _NUMBER, "x / y; integers round toward zero (HLO divide).")
rem = _binary("rem", "remainder", _INT_FLOAT,
              "The remainder of x / y rounded toward zero, with x's sign, as C's fmod (HLO remainder).")
atan2 = _binary("atan2", "atan2", _FLOAT, "The arc tangent of x / y in the quadrant of (y, x) (HLO atan2).")
shift_left = _binary("shift_left", "shift-left", _INT, "x << y (HLO shift-left).")
shift_right_arithmetic = _binary("shift_right_arithmetic", "shift-right-arithmetic", _INT,
                                 "x >> y, copying the sign bit (HLO shift-right-arithmetic).")
shift_right_logical = _binary("shift_right_logical", "shift-right-logical", _INT,
                              "x >> y, shifting in zeros (HLO shift-right-logical).")


@eager
def atan(x):
    """The arc tangent: ``atan2(x, 1)`` (HLO has no atan)."""
    t = as_tracer(x)
    _check_kind("atan", t, _FLOAT, _ACCEPTS[_FLOAT])
    return atan2(t, full_like(t, 1))


@eager
def exp2(x):
    """2 ** x: ``exp(x * log(2))``, as JAX writes it."""
    t = as_tracer(x)
    _check_kind("exp2", t, _INEXACT, _ACCEPTS[_INEXACT])
    return exp(mul(t, full_like(t, np.log(2.0))))


@eager
def pow(x, y):
    """x ** y (HLO power). As in JAX, an inexact ``x`` takes an integer ``y``
    (converted to x's dtype), else the two have one dtype; unlike JAX,
    integer bases are accepted too (HLO defines power on integers)."""
    x, y = as_tracer(x), as_tracer(y)
    if _kind(x.dtype) in _INEXACT and _kind(y.dtype) in "iu":
        y = convert_element_type(y, x.dtype)
    x, y = _one_shape("pow", _one_dtype("pow", [x, y]))
    _check_kind("pow", x, _NUMBER, _ACCEPTS[_NUMBER])
    return Tracer(_builder().binary("power", x.op, y.op), weak=x.weak and y.weak)


@eager
def sign(x):
    """-1, 0 or 1 by the sign of x (NaN for NaN; x / |x| for complex x;
    0 or 1 for unsigned x, which HLO's sign does not define: a compare)."""
    t = as_tracer(x)
    _check_kind("sign", t, _NUMBER, _ACCEPTS[_NUMBER])
    if _kind(t.dtype) == "u":
        return convert_element_type(ne(t, full_like(t, 0)), t.dtype)
    return Tracer(_builder().unary("sign", t.op), weak=t.weak)


@eager
def nextafter(x1, x2):
    """The float next to ``x1`` in the direction of ``x2`` (NaN if either
    is; ``x2`` if they are equal), by stepping the bits of ``x1``."""
    x, y = _one_shape("nextafter", _one_dtype("nextafter", [as_tracer(x1), as_tracer(x2)]))
    _check_kind("nextafter", x, _FLOAT, _ACCEPTS[_FLOAT])
    bits = np.dtype(f"i{x.dtype.itemsize}")
    xi, yi = bitcast_convert_type(x, bits), bitcast_convert_type(y, bits)
    sign_mask = full_like(xi, np.iinfo(bits).min)
    one = full_like(xi, 1)
    # Away from zero when y is beyond x in x's direction: |x| grows.
    away = bitwise_and(ne(x, full_like(x, 0)), eq(lt(x, y), gt(x, full_like(x, 0))))
    stepped = select(away, add(xi, one), sub(xi, one))
    # From zero: the smallest subnormal with y's sign.
    from_zero = bitwise_or(bitwise_and(yi, sign_mask), one)
    out = select(eq(x, full_like(x, 0)), from_zero, stepped)
    out = bitcast_convert_type(out, x.dtype)
    out = select(eq(x, y), y, out)
    nan = bitwise_or(ne(x, x), ne(y, y))
    return select(nan, add(x, y), out)


class RoundingMethod(enum.IntEnum):
    """How ``lax.round`` rounds halfway values (JAX's values)."""
    AWAY_FROM_ZERO = 0
    TO_NEAREST_EVEN = 1


_ROUNDING_OPCODES = {RoundingMethod.AWAY_FROM_ZERO: "round-nearest-afz",
                     RoundingMethod.TO_NEAREST_EVEN: "round-nearest-even"}


@eager
def round(x, rounding_method=RoundingMethod.AWAY_FROM_ZERO):
    """x rounded to an integer value, halfway values by ``rounding_method``
    (HLO round-nearest-afz or round-nearest-even)."""
    t = as_tracer(x)
    _check_kind("round", t, _FLOAT, _ACCEPTS[_FLOAT])
    try:
        opcode = _ROUNDING_OPCODES[RoundingMethod(rounding_method)]
    except ValueError:
        raise InvalidArgumentError(f"lax.round: unknown rounding_method {rounding_method!r} "
                                   "(AWAY_FROM_ZERO or TO_NEAREST_EVEN)") from None
    return Tracer(_builder().unary(opcode, t.op), weak=t.weak)


@eager
def bitcast_convert_type(operand, new_dtype):
    """The bits of ``operand`` read as ``new_dtype`` (HLO bitcast-convert).
    Between widths, as in JAX: to a narrower type a minor dimension of the
    width ratio is added; to a wider one the minor dimension, which must be
    that ratio, is removed."""
    t = as_tracer(operand)
    new = np.dtype(new_dtype)
    old = t.dtype
    if new.kind == "b" or old.kind == "b":
        raise InvalidArgumentError(f"lax.bitcast_convert_type does not convert {old} to {new} (bool "
                                   "has no defined bit pattern)")
    shape = t.shape
    if new.itemsize < old.itemsize:
        shape = shape + (old.itemsize // new.itemsize,)
    elif new.itemsize > old.itemsize:
        ratio = new.itemsize // old.itemsize
        if not shape or shape[-1] != ratio:
            raise ShapeError(f"lax.bitcast_convert_type from {type_text(t)} to {new} needs a minor "
                             f"dimension of {ratio}")
        shape = shape[:-1]
    if new == old:
        return t
    return Tracer(_builder().bitcast_convert(t.op, new, shape))
