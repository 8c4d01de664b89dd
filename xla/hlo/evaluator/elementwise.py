"""Interpreter handlers: elementwise ops (unary, binary, ternary, convert).

Semantics follow XLA's operation semantics and what XLA:CPU computes (the
results JAX returns), element by element:

* integers wrap around (two's complement); division rounds toward zero,
  ``x / 0`` is all ones (-1 signed, the maximum unsigned), ``INT_MIN / -1``
  is ``INT_MIN``, ``x % 0`` is ``x`` and ``INT_MIN % -1`` is 0;
* shifts treat the amount as unsigned; an amount >= the bit width gives 0
  (shift-left, shift-right-logical) or the sign fill (arithmetic);
* integer power by repeated squaring (wrapping); a negative exponent gives
  1 for base 1 and 0 otherwise (XLA's elemental emitter and evaluator);
* maximum/minimum propagate NaN; compare FLOAT is IEEE (NaN != NaN),
  TOTALORDER orders -NaN < -inf < ... < -0 < +0 < ... < +inf < +NaN;
* f16/bf16 and the minifloats (f8*, f6*, f4e2m1fn) compute in f32 and
  round once to the result type, as XLA:CPU does;
* the sub-byte integers (s1..u4, ml_dtypes' int1..uint4) compute widened
  to a byte and wrap, with shifts, popcnt, clz, mulhi and compare at their
  own width;
* pred arithmetic behaves like ``int8(x) OP int8(y) != 0``;
* convert float -> int truncates toward zero, saturates to the integer
  range and maps NaN to 0; x -> pred is ``x != 0``; complex -> real takes
  the real part.

Handlers also run in "elementwise mode" (see Evaluator.call_elementwise):
operands may then be whole arrays where the instruction shape says scalar,
so they rely on broadcasting and never reshape to ``instr.shape``.
"""
import math

import numpy as np

from xla.hlo.evaluator.ops_common import total_order_key
from xla.hlo.evaluator.registry import register
from xla.errors import UnimplementedError
from xla.hlo.types import from_dtype

_NARROW_FLOAT_COMPUTE = np.dtype(np.float32)


def _result_dtype(instr):
    return instr.shape.dtype


def _element_type(dtype):
    try:
        return from_dtype(dtype)
    except ValueError:
        return None


def _is_narrow_float(dtype):
    """f16, bf16 and the ml_dtypes minifloats (f8*, f6*, f4*): computed in f32."""
    et = _element_type(dtype)
    return et is not None and et.is_narrow_float


def _is_ml_float(dtype):
    """A float that NumPy does not know (bf16 and the minifloats, from ml_dtypes)."""
    et = _element_type(dtype)
    return et is not None and et.is_float and et.dtype.type not in (np.float16, np.float32, np.float64)


def is_float_dtype(dtype):
    dtype = np.dtype(dtype)
    return dtype.kind == "f" or _is_ml_float(dtype)


def is_int_dtype(dtype):
    """NumPy's integers and ml_dtypes' (int1, int2, int4 and unsigned)."""
    et = _element_type(dtype)
    return et is not None and et.is_integer


def _sub_byte_bits(dtype):
    """The width of ml_dtypes' int1..uint4 (kept one per byte), else None."""
    et = _element_type(dtype)
    return et.bits if et is not None and et.is_integer and et.is_sub_byte else None


def _widen_sub_byte(x):
    """ml_dtypes' int1..uint4 as int8/uint8 with the same values, which NumPy
    computes with; the handler's store wraps the result back (modular)."""
    x = np.asarray(x)
    if _sub_byte_bits(x.dtype):
        return x.astype(np.int8 if from_dtype(x.dtype).is_signed_integer else np.uint8)
    return x


def _sub_byte_patterns(x, bits):
    """(unsigned bit pattern, signed value) of sub-byte ints, as int64."""
    u = np.asarray(x).astype(np.int64) & ((1 << bits) - 1)
    return u, u - ((u >> (bits - 1)) << bits)


def _wraps_sub_byte(handler):
    """Runs ``handler`` on sub-byte int operands widened to int8/uint8: right
    for every op whose result wraps modulo 2^bits (not shifts, popcnt, clz)."""
    def wrapped(instr, operands, ctx):
        return handler(instr, [_widen_sub_byte(o) for o in operands], ctx)
    wrapped.__name__ = handler.__name__
    return wrapped


def _upcast(x):
    x = np.asarray(x)
    if _is_narrow_float(x.dtype):
        return x.astype(_NARROW_FLOAT_COMPUTE)
    return x


def _store(x, dtype):
    """The computed value as an array of the result dtype (one rounding)."""
    x = np.asarray(x)
    if x.dtype != dtype:
        x = x.astype(dtype)
    return x


def _unsigned_of(dtype):
    return np.dtype(f"u{np.dtype(dtype).itemsize}")


def _signed_of(dtype):
    return np.dtype(f"i{np.dtype(dtype).itemsize}")


# ----------------------------------------------------------------------------
# unary
# ----------------------------------------------------------------------------

def _float_unary(fn):
    """A handler computing fn on floats (narrow floats in f32) and complex."""
    def handler(instr, operands, ctx):
        x = np.asarray(operands[0])
        if not (is_float_dtype(x.dtype) or x.dtype.kind == "c"):
            raise UnimplementedError(
                f"interpreter: {instr.opcode} of {x.dtype} is not supported ({instr.name})")
        return _store(fn(_upcast(x)), _result_dtype(instr))
    return handler


def _logistic(x):
    if x.dtype.kind == "c":
        return 1 / (1 + np.exp(-x))
    # Stable for both signs: exp of a non-positive number never overflows.
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


_erf_scalar = np.vectorize(math.erf, otypes=[np.float64])


def _erf(x):
    if x.dtype.kind == "c":
        raise UnimplementedError("interpreter: erf of complex values is not supported")
    if x.size == 0:
        return x.copy()
    return _erf_scalar(x.astype(np.float64)).astype(x.dtype)


def _rsqrt(x):
    return 1 / np.sqrt(x)


def _cbrt(x):
    if x.dtype.kind == "c":
        return x ** (1.0 / 3.0)
    return np.cbrt(x)


for _opcode, _fn in {
    "exponential": np.exp,
    "exponential-minus-one": np.expm1,
    "log": np.log,
    "log-plus-one": np.log1p,
    "sqrt": np.sqrt,
    "rsqrt": _rsqrt,
    "cbrt": _cbrt,
    "tanh": np.tanh,
    "logistic": _logistic,
    "sine": np.sin,
    "cosine": np.cos,
    "tan": np.tan,
    "erf": _erf,
    "acos": np.arccos,
    "acosh": np.arccosh,
    "asin": np.arcsin,
    "asinh": np.arcsinh,
    "atanh": np.arctanh,
    "cosh": np.cosh,
    "sinh": np.sinh,
}.items():
    register(_opcode)(_float_unary(_fn))


@register("floor", "ceil", "round-nearest-even", "round-nearest-afz")
def _rounding(instr, operands, ctx):
    x = np.asarray(operands[0])
    if not is_float_dtype(x.dtype):
        return _store(x, _result_dtype(instr))  # integers are already integral
    x = _upcast(x)
    if instr.opcode == "floor":
        y = np.floor(x)
    elif instr.opcode == "ceil":
        y = np.ceil(x)
    elif instr.opcode == "round-nearest-even":
        y = np.rint(x)
    else:
        # Half away from zero. x - trunc(x) is exact, so no double rounding
        # (unlike floor(|x| + 0.5), wrong for 0.49999999999999994).
        t = np.trunc(x)
        y = np.where(np.abs(x - t) >= 0.5, t + np.copysign(np.ones_like(x), x), t)
    return _store(y, _result_dtype(instr))


@register("abs")
@_wraps_sub_byte
def _abs(instr, operands, ctx):
    x = np.asarray(operands[0])
    if x.dtype == np.bool_:
        return x.copy()
    return _store(np.abs(_upcast(x)), _result_dtype(instr))


@register("negate")
@_wraps_sub_byte
def _negate(instr, operands, ctx):
    x = np.asarray(operands[0])
    if x.dtype == np.bool_:
        return x.copy()  # int8(x) negated is nonzero exactly when x is
    return _store(np.negative(_upcast(x)), _result_dtype(instr))


@register("sign")
@_wraps_sub_byte
def _sign(instr, operands, ctx):
    x = _upcast(operands[0])
    if x.dtype == np.bool_:
        return x.copy()
    if x.dtype.kind == "c":
        mag = np.abs(x)
        y = np.where(mag == 0, x, x / np.where(mag == 0, 1, mag))
    elif x.dtype.kind == "f":
        # sign(NaN) = NaN, sign(+-0) = +-0 (np.sign(-0.0) is +0.0).
        y = np.where((x == 0) | np.isnan(x), x, np.sign(x))
    else:
        y = np.sign(x)
    return _store(y, _result_dtype(instr))


@register("is-finite")
def _is_finite(instr, operands, ctx):
    return np.isfinite(_upcast(operands[0]))


@register("not")
@_wraps_sub_byte
def _not(instr, operands, ctx):
    x = np.asarray(operands[0])
    if x.dtype == np.bool_:
        return np.logical_not(x)
    return np.invert(x)


@register("popcnt")
def _popcnt(instr, operands, ctx):
    x = np.asarray(operands[0])
    if _sub_byte_bits(x.dtype):
        return _store(np.bitwise_count(_sub_byte_patterns(x, _sub_byte_bits(x.dtype))[0]),
                      _result_dtype(instr))
    u = x.view(_unsigned_of(x.dtype)) if x.dtype.kind == "i" else x
    return _store(np.bitwise_count(u), _result_dtype(instr))


@register("count-leading-zeros")
def _clz(instr, operands, ctx):
    x = np.asarray(operands[0])
    bits = x.dtype.itemsize * 8
    if _sub_byte_bits(x.dtype):
        bits = _sub_byte_bits(x.dtype)
        x = _sub_byte_patterns(x, bits)[0].astype(np.uint8)
    y = (x.view(_unsigned_of(x.dtype)) if x.dtype.kind == "i" else x).astype(np.uint64)
    length = np.zeros(y.shape, np.int64)
    s = 32
    while s >= 1:
        big = (y >> np.uint64(s)) != 0
        length += np.where(big, s, 0)
        y = np.where(big, y >> np.uint64(s), y)
        s //= 2
    length += (y != 0)
    return _store(bits - length, _result_dtype(instr))


@register("real")
def _real(instr, operands, ctx):
    x = np.asarray(operands[0])
    return _store(np.real(x), _result_dtype(instr))


@register("imag")
def _imag(instr, operands, ctx):
    x = np.asarray(operands[0])
    if x.dtype.kind == "c":
        return _store(np.imag(x), _result_dtype(instr))
    # Zero converted (f8e8m0fnu has no zero: NaN), not zero bytes.
    return _store(np.zeros(x.shape, np.float32), _result_dtype(instr))


@register("reduce-precision")
def _reduce_precision(instr, operands, ctx):
    x = np.asarray(operands[0])
    out = reduce_precision(_upcast(x), instr.attr("exponent_bits"), instr.attr("mantissa_bits"))
    return _store(out, _result_dtype(instr))


def reduce_precision(x, exponent_bits, mantissa_bits):
    """Rounds f32/f64 values to a float format with the given exponent and
    mantissa widths (round to nearest even; too large -> inf; below the
    smallest normal of the narrow format -> signed zero; NaN stays NaN)."""
    x = np.asarray(x)
    if x.dtype == np.float64:
        utype, src_m, src_e = np.uint64, 52, 11
    else:
        x = x.astype(np.float32)
        utype, src_m, src_e = np.uint32, 23, 8
    u = x.view(utype).copy()
    one = utype(1)
    if mantissa_bits < src_m:
        shift = utype(src_m - mantissa_bits)
        last_bit = one << shift
        bias = (last_bit >> one) - one + ((u & last_bit) >> shift)
        u = (u + bias) & ~(last_bit - one)
    if exponent_bits < src_e:
        sign_mask = one << utype(src_m + src_e)
        sign = u & sign_mask
        mag = u & ~sign_mask
        src_bias = (1 << (src_e - 1)) - 1
        dst_bias = (1 << (exponent_bits - 1)) - 1
        max_exp = src_bias + dst_bias           # biased (source) exponent of the largest normal
        min_exp = src_bias - dst_bias + 1       # ... of the smallest normal
        exp = mag >> utype(src_m)
        inf_bits = utype(((1 << src_e) - 1) << src_m)
        u = np.where(exp > max_exp, sign | inf_bits, np.where(exp < min_exp, sign, u)).astype(utype)
    out = u.view(x.dtype)
    nan = np.isnan(x)
    if nan.any():
        out = np.where(nan, x if mantissa_bits > 0 else np.asarray(np.nan, x.dtype), out)
    return out


# ----------------------------------------------------------------------------
# binary
# ----------------------------------------------------------------------------

def _pred_arith(fn, a, b):
    """pred arithmetic: int8(a) OP int8(b) != 0."""
    return fn(np.asarray(a, np.int8), np.asarray(b, np.int8)) != 0


@register("add", "subtract", "multiply")
@_wraps_sub_byte
def _arith(instr, operands, ctx):
    fn = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply}[instr.opcode]
    a, b = (np.asarray(o) for o in operands)
    if a.dtype == np.bool_:
        return _pred_arith(fn, a, b)
    return _store(fn(_upcast(a), _upcast(b)), _result_dtype(instr))


def int_divide(a, b):
    """XLA integer division: toward zero; x/0 = -1 (all ones); MIN/-1 = MIN."""
    dtype = a.dtype
    zero = b == 0
    if dtype.kind == "u":
        q = a // np.where(zero, 1, b).astype(dtype)
        return np.where(zero, np.iinfo(dtype).max, q).astype(dtype)
    imin = np.iinfo(dtype).min
    overflow = (a == imin) & (b == -1)
    safe = np.where(zero | overflow, 1, b).astype(dtype)
    q = a // safe
    r = a - q * safe
    q = q + ((r != 0) & ((a < 0) != (safe < 0))).astype(dtype)  # floor -> toward zero
    return np.where(zero, -1, q).astype(dtype)


def int_remainder(a, b):
    """XLA integer remainder: sign of the dividend; x%0 = x; MIN%-1 = 0."""
    dtype = a.dtype
    zero = b == 0
    if dtype.kind == "u":
        return np.where(zero, a, a % np.where(zero, 1, b).astype(dtype)).astype(dtype)
    overflow = (a == np.iinfo(dtype).min) & (b == -1)
    safe = np.where(zero | overflow, 1, b).astype(dtype)
    return np.where(zero, a, np.fmod(a, safe)).astype(dtype)


@register("divide")
@_wraps_sub_byte
def _divide(instr, operands, ctx):
    a, b = (np.asarray(o) for o in operands)
    if a.dtype == np.bool_:
        # int8: 1/1 = 1, 0/1 = 0, x/0 = -1 (nonzero).
        return np.where(b, a, True)
    if is_int_dtype(a.dtype):
        return _store(int_divide(a, b), _result_dtype(instr))
    return _store(np.divide(_upcast(a), _upcast(b)), _result_dtype(instr))


@register("remainder")
@_wraps_sub_byte
def _remainder(instr, operands, ctx):
    a, b = (np.asarray(o) for o in operands)
    if a.dtype == np.bool_:
        return np.where(b, False, a)
    if is_int_dtype(a.dtype):
        return _store(int_remainder(a, b), _result_dtype(instr))
    a, b = _upcast(a), _upcast(b)
    if a.dtype.kind == "c":
        raise UnimplementedError("interpreter: remainder of complex values is not supported")
    return _store(np.fmod(a, b), _result_dtype(instr))


def int_power(a, b):
    """Wrapping integer power; a negative exponent gives 1 for base 1, else 0."""
    dtype = a.dtype
    a, b = np.broadcast_arrays(a, b)
    if dtype.kind == "i":
        e = b.astype(np.int64)
        negative = e < 0
        e = np.where(negative, 0, e).astype(np.uint64)
    else:
        negative = np.zeros(b.shape, bool)
        e = b.astype(np.uint64)
    acc = np.ones(a.shape, dtype)
    base = a.copy()
    one = np.uint64(1)
    while True:
        odd = (e & one) != 0
        acc = np.where(odd, acc * base, acc).astype(dtype)
        e = e >> one
        if not e.any():
            break
        base = (base * base).astype(dtype)
    return np.where(negative, (a == 1).astype(dtype), acc).astype(dtype)


@register("power")
@_wraps_sub_byte
def _power(instr, operands, ctx):
    a, b = (np.asarray(o) for o in operands)
    if a.dtype == np.bool_:
        return np.logical_or(a, np.logical_not(b))
    if is_int_dtype(a.dtype):
        return _store(int_power(a, b), _result_dtype(instr))
    return _store(np.power(_upcast(a), _upcast(b)), _result_dtype(instr))


def nan_max(a, b):
    """XLA maximum: NaN-propagating (np.maximum)."""
    return np.maximum(a, b)


@register("maximum", "minimum")
@_wraps_sub_byte
def _max_min(instr, operands, ctx):
    a, b = (np.asarray(o) for o in operands)
    if a.dtype == np.bool_:
        return (np.logical_or if instr.opcode == "maximum" else np.logical_and)(a, b)
    fn = np.maximum if instr.opcode == "maximum" else np.minimum
    return _store(fn(_upcast(a), _upcast(b)), _result_dtype(instr))


@register("and", "or", "xor")
@_wraps_sub_byte
def _bitwise(instr, operands, ctx):
    fn = {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[instr.opcode]
    a, b = (np.asarray(o) for o in operands)
    return _store(fn(a, b), _result_dtype(instr))


@register("mulhi")
def _mulhi(instr, operands, ctx):
    """The high half of the double-width product (signed for s types,
    unsigned for u), as CUDA's __mulhi and XLA's mulhi."""
    a, b = (np.asarray(o) for o in operands)
    dtype = a.dtype
    if _sub_byte_bits(dtype):
        bits = _sub_byte_bits(dtype)
        k = 0 if from_dtype(dtype).is_unsigned_integer else 1
        product = _sub_byte_patterns(a, bits)[k] * _sub_byte_patterns(b, bits)[k]
        return _store(product >> bits, _result_dtype(instr))
    bits = dtype.itemsize * 8
    if bits <= 32:
        wide = np.int64 if dtype.kind == "i" else np.uint64
        product = a.astype(wide) * b.astype(wide)
        return _store((product >> wide(bits)).astype(dtype), _result_dtype(instr))
    high = np.frompyfunc(lambda x, y: (int(x) * int(y)) >> bits, 2, 1)(a, b)
    mask = (1 << bits) - 1
    unsigned = np.array([int(v) & mask for v in np.ravel(high)], np.uint64).reshape(a.shape)
    return _store(unsigned.view(dtype), _result_dtype(instr))


@register("shift-left", "shift-right-logical", "shift-right-arithmetic")
def _shift(instr, operands, ctx):
    a, b = (np.asarray(o) for o in operands)
    dtype = a.dtype
    if _sub_byte_bits(dtype):
        bits = _sub_byte_bits(dtype)
        ua, sa = _sub_byte_patterns(a, bits)
        amount = _sub_byte_patterns(b, bits)[0]
        too_big = amount >= bits
        amt = np.where(too_big, 0, amount)
        if instr.opcode == "shift-left":
            y = np.where(too_big, 0, ua << amt)
        elif instr.opcode == "shift-right-logical":
            y = np.where(too_big, 0, ua >> amt)
        else:
            y = sa >> np.where(too_big, bits - 1, amt)
        return _store(y, _result_dtype(instr))
    bits = dtype.itemsize * 8
    amount = b.view(_unsigned_of(b.dtype)) if b.dtype.kind == "i" else b
    too_big = amount >= bits
    amt = np.where(too_big, 0, amount)
    if instr.opcode == "shift-left":
        y = np.where(too_big, 0, np.left_shift(a, amt.astype(dtype))).astype(dtype)
    elif instr.opcode == "shift-right-logical":
        ua = a.view(_unsigned_of(dtype)) if dtype.kind == "i" else a
        y = np.where(too_big, 0, np.right_shift(ua, amt.astype(ua.dtype))).astype(ua.dtype).view(dtype)
    else:
        sa = a.view(_signed_of(dtype)) if dtype.kind == "u" else a
        shifted = np.right_shift(sa, np.where(too_big, bits - 1, amt).astype(sa.dtype))
        y = shifted.astype(sa.dtype).view(dtype)
    return _store(y, _result_dtype(instr))


@register("atan2")
def _atan2(instr, operands, ctx):
    a, b = (_upcast(o) for o in operands)
    return _store(np.arctan2(a, b), _result_dtype(instr))


@register("complex")
def _complex(instr, operands, ctx):
    a, b = (np.asarray(o) for o in operands)
    dtype = _result_dtype(instr)
    out = np.empty(np.broadcast_shapes(a.shape, b.shape), dtype)
    out.real = a
    out.imag = b
    return out


_COMPARE = {"EQ": np.equal, "NE": np.not_equal, "LT": np.less, "LE": np.less_equal,
            "GT": np.greater, "GE": np.greater_equal}


@register("compare")
def _compare(instr, operands, ctx):
    a, b = (np.asarray(o) for o in operands)
    direction = instr.attr("direction")
    if direction not in _COMPARE:
        raise UnimplementedError(f"interpreter: compare direction {direction!r} ({instr.name})")
    fn = _COMPARE[direction]
    ctype = instr.attr("type")
    if _sub_byte_bits(a.dtype):
        bits = _sub_byte_bits(a.dtype)
        signed = ctype == "SIGNED" or (ctype != "UNSIGNED" and from_dtype(a.dtype).is_signed_integer)
        k = 1 if signed else 0
        return np.asarray(fn(_sub_byte_patterns(a, bits)[k], _sub_byte_patterns(b, bits)[k]))
    if is_float_dtype(a.dtype):
        if ctype == "TOTALORDER":
            a, b = total_order_key(a), total_order_key(b)
        else:
            a, b = _upcast(a), _upcast(b)
    elif a.dtype.kind in "iu":
        if ctype == "UNSIGNED" and a.dtype.kind == "i":
            a, b = a.view(_unsigned_of(a.dtype)), b.view(_unsigned_of(b.dtype))
        elif ctype == "SIGNED" and a.dtype.kind == "u":
            a, b = a.view(_signed_of(a.dtype)), b.view(_signed_of(b.dtype))
    elif a.dtype.kind == "c" and direction not in ("EQ", "NE"):
        raise UnimplementedError(f"interpreter: compare {direction} of complex values ({instr.name})")
    return np.asarray(fn(a, b))


# ----------------------------------------------------------------------------
# ternary
# ----------------------------------------------------------------------------

@register("select")
@_wraps_sub_byte
def _select(instr, operands, ctx):
    pred, a, b = (np.asarray(o) for o in operands)
    return _store(np.where(pred, a, b), _result_dtype(instr))


@register("clamp")
@_wraps_sub_byte
def _clamp(instr, operands, ctx):
    lo, x, hi = (np.asarray(o) for o in operands)
    dtype = _result_dtype(instr)
    if x.dtype == np.bool_:
        return np.logical_and(np.logical_or(x, lo), hi)
    return _store(np.minimum(np.maximum(_upcast(x), _upcast(lo)), _upcast(hi)), dtype)


# ----------------------------------------------------------------------------
# conversions
# ----------------------------------------------------------------------------

def convert(x, dtype):
    """XLA's convert of array x to dtype (see the module docstring)."""
    x = np.asarray(x)
    dtype = np.dtype(dtype)
    if x.dtype == dtype:
        return x.copy()
    if dtype == np.bool_:
        return x != 0
    if x.dtype == np.bool_:
        return x.astype(np.int8).astype(dtype)
    if x.dtype.kind == "c" and dtype.kind != "c":
        x = np.real(x)
        if x.dtype == dtype:
            return x.copy()
    if is_int_dtype(dtype) and is_float_dtype(x.dtype):
        return _float_to_int(x, dtype)
    if is_int_dtype(dtype) and is_int_dtype(x.dtype):
        if dtype.kind in "iu" and x.dtype.kind in "iu":
            return x.astype(dtype)  # modular
        # ml_dtypes' int1..uint4 cast only to and from NumPy's integers.
        return x.astype(np.int64).astype(dtype)
    if is_float_dtype(dtype) and is_int_dtype(x.dtype) and _is_narrow_float(dtype):
        # One rounding: integers up to 2**24 are exact in f32; larger ones go
        # through f64 (exact to 2**53) before the narrow rounding.
        return x.astype(np.float64).astype(dtype)
    if x.dtype == np.float64 and _is_ml_float(dtype):
        # ml_dtypes goes f64 -> f32 -> narrow: two roundings. Rounding to
        # f32 with round-to-odd first makes the second rounding exact.
        return _f64_to_f32_round_to_odd(x).astype(dtype)
    if _is_ml_float(dtype) and _is_ml_float(x.dtype):
        # ml_dtypes casts some pairs only through f32 (f8e8m0fnu and the
        # others), where every value of theirs is exact: one rounding.
        return x.astype(np.float32).astype(dtype)
    return x.astype(dtype)


def _f64_to_f32_round_to_odd(x):
    y = x.astype(np.float32)
    bits = y.view(np.uint32).copy()
    wide = y.astype(np.float64)
    fix = (wide != x) & np.isfinite(y) & ((bits & 1) == 0) & ~np.isnan(x)
    # Step one ulp toward x (sign-magnitude: +1 on the bits grows |y|).
    grow = np.abs(wide) < np.abs(x)
    bits = np.where(fix & grow, bits + np.uint32(1), np.where(fix & ~grow, bits - np.uint32(1), bits))
    return bits.astype(np.uint32).view(np.float32)


def _float_to_int(x, dtype):
    import ml_dtypes
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        lo, hi = int(info.min), int(info.max)
    else:
        info = ml_dtypes.iinfo(dtype)
        lo, hi = int(info.min), int(info.max)
    v = x.astype(np.float64)
    nan = np.isnan(v)
    # float(hi + 1) is exact (a power of two); v >= it saturates.
    too_big = v >= float(hi + 1)
    too_small = v <= float(lo)
    safe = np.where(nan | too_big | too_small, 0, np.trunc(v))
    wide = np.uint64 if dtype == np.uint64 else np.int64
    out = safe.astype(wide)
    out = np.where(too_big, wide(hi), np.where(too_small, wide(lo) if lo >= 0 else np.int64(lo), out))
    out = np.where(nan, 0, out)
    return out.astype(dtype)


@register("convert")
def _convert(instr, operands, ctx):
    return convert(operands[0], _result_dtype(instr))


@register("bitcast-convert")
def _bitcast_convert(instr, operands, ctx):
    x = np.asarray(operands[0], order="C")
    dtype = _result_dtype(instr)
    in_bits = instr.operands[0].shape.element_type.bits
    out_bits = instr.shape.element_type.bits
    if min(in_bits, out_bits) < 8:
        return _bitcast_sub_byte(x, in_bits, dtype, out_bits)
    if x.dtype.itemsize == dtype.itemsize:
        return x.view(dtype).copy()
    if x.dtype.itemsize > dtype.itemsize:
        # Wider -> narrower: a new minor dimension of in/out elements
        # (little-endian order, as XLA:CPU lays bytes out).
        ratio = x.dtype.itemsize // dtype.itemsize
        return x.reshape(x.shape + (1,)).view(dtype).reshape(x.shape + (ratio,)).copy()
    # Narrower -> wider: the minor dimension disappears.
    return x.view(dtype).reshape(x.shape[:-1]).copy()


def _bitcast_sub_byte(x, in_bits, dtype, out_bits):
    """bitcast-convert where a side has fewer than 8 bits (s4, u4, s2, f4e2m1fn):
    NumPy holds one such element per byte (its low bits), so the bits are
    regrouped by arithmetic: the first element in the least significant
    bits, as XLA packs them."""
    def raw_bits(a, bits):
        if bits < 8:
            return a.view(np.uint8).astype(np.uint64) & np.uint64((1 << bits) - 1)
        return a.view(np.dtype(f"u{bits // 8}")).astype(np.uint64)

    raw = raw_bits(x, in_bits)
    if in_bits < out_bits:      # the minor dimension disappears
        ratio = out_bits // in_bits
        shifts = np.arange(ratio, dtype=np.uint64) * np.uint64(in_bits)
        raw = np.bitwise_or.reduce(raw << shifts, axis=-1)
    elif in_bits > out_bits:    # a new minor dimension of in/out elements
        ratio = in_bits // out_bits
        shifts = np.arange(ratio, dtype=np.uint64) * np.uint64(out_bits)
        raw = (raw[..., None] >> shifts) & np.uint64((1 << out_bits) - 1)
    if out_bits < 8:
        return raw.astype(np.uint8).view(dtype)
    return raw.astype(np.dtype(f"u{out_bits // 8}")).view(dtype)


@register("stochastic-convert")
def _stochastic_convert(instr, operands, ctx):
    """A float to an integer type, rounding stochastically as XLA does (checked
    against XLA:CPU): the magnitude's fractional part f rounds up when the
    random bits r (an unsigned integer as wide as the operand's type) are
    below floor(f * 2^bits); the sign is put back, the result saturates at
    the type's range and NaN gives 0."""
    dtype = _result_dtype(instr)
    src = instr.operands[0].shape.element_type
    if not np.issubdtype(dtype, np.integer) or src.kind != "f":
        raise UnimplementedError(f"interpreter: stochastic-convert from {src.text} to "
                                 f"{instr.shape.element_type.text} ({instr.name}); XLA converts "
                                 "floats to integers")
    x = np.asarray(operands[0]).astype(np.float64)
    r = np.asarray(operands[1]).astype(np.uint64)
    bits = instr.operands[1].shape.element_type.bits
    magnitude = np.abs(x)
    with np.errstate(invalid="ignore"):
        whole = np.floor(magnitude)
        fraction = np.nan_to_num(magnitude - whole, nan=0.0, posinf=0.0)
        threshold = np.floor(fraction * float(2 ** bits)).astype(np.uint64)
        rounded = whole + (r < threshold)
        signed = np.where(np.signbit(x), -rounded, rounded)
    info = np.iinfo(dtype)
    signed = np.where(np.isnan(x), 0.0, signed)
    too_big, too_small = signed >= float(info.max), signed <= float(info.min)
    wide = np.uint64 if info.min == 0 else np.int64
    inside = np.where(too_big | too_small, 0.0, signed).astype(wide)
    out = np.where(too_big, wide(info.max), np.where(too_small, wide(info.min), inside))
    return out.astype(dtype)
