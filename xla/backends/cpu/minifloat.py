"""f32 <-> minifloat conversions as LLVM IR, one routine for every format.

A minifloat (the f8, f6 and f4 types, from ml_dtypes) is i8 in memory (one
element per byte, the code in the low bits, the rest zero) and f32 in
registers. ``decode`` widens a code to f32 exactly; ``encode`` rounds an
f32 to a code exactly as ml_dtypes casts from float32 (XLA:CPU gives the
same codes): round to nearest even, subnormals included, then

==========  ==================================  =============================
encoding    overflow (and inf)                  NaN
==========  ==================================  =============================
ieee        inf, sign kept                      quiet NaN: inf | 1<<(m-1)
            (f8e5m2, f8e4m3, f8e3m4)            sign kept
fn          NaN (all ones), sign kept           all ones, sign kept
            (f8e4m3fn)
fnuz        NaN 0x80; -0 becomes +0             0x80
            (f8e4m3fnuz, f8e5m2fnuz, f8e4m3b11fnuz)
finite      the largest finite value, sign      zero with the opposite sign
            kept (f4e2m1fn, f6e2m3fn,           (what ml_dtypes does; XLA:CPU
            f6e3m2fn)                           gives -0 for both NaNs)
e8m0        NaN 0xff; no sign, no zero:         0xff
            negative and zero are NaN, ties
            round up; an f32 subnormal is
            2^-127 up to 2^-127, 2^-126 above
            (f8e8m0fnu)
==========  ==================================  =============================

The format of each element type is one row of ``MINIFLOAT_FORMATS``
(xla/hlo/types.py).
"""
from llvmlite import ir

from xla.hlo.types import MINIFLOAT_FORMATS

I8 = ir.IntType(8)
I32 = ir.IntType(32)
F32 = ir.FloatType()


FORMATS = MINIFLOAT_FORMATS
MINIFLOAT_TYPES = tuple(FORMATS)


def _c(v):
    return ir.Constant(I32, v)


def encode(b, value, element_type, keep_nan_payload=False):
    """The code (i8) of f32 ``value`` rounded to ``element_type``.
    ``keep_nan_payload``: an ieee NaN keeps the mantissa ``decode`` put in
    the low bits of the f32 NaN instead of becoming the quiet NaN ml_dtypes
    gives (exact codes for TOTALORDER)."""
    fmt = FORMATS[element_type]
    m_bits, bias = fmt.mantissa_bits, fmt.bias
    bits = b.bitcast(value, I32)
    negative = b.icmp_signed("<", bits, _c(0))
    mag = b.and_(bits, _c(0x7FFFFFFF))
    is_nan = b.icmp_unsigned(">", mag, _c(0x7F800000))
    # Normal results: round the f32 mantissa to m_bits, then rebias the
    # exponent; a carry moves into the exponent correctly.
    shift = 23 - m_bits
    if fmt.encoding == "e8m0":
        round_bias = _c(1 << (shift - 1))  # ties up, as ml_dtypes and XLA do
    else:  # nearest even
        lsb = b.and_(b.lshr(mag, _c(shift)), _c(1))
        round_bias = b.add(_c((1 << (shift - 1)) - 1), lsb)
    rounded = b.lshr(b.add(mag, round_bias), _c(shift))
    code = b.sub(rounded, _c((127 - bias) << m_bits))
    if fmt.encoding == "e8m0":
        # The exponent field of f32 is the code (same bias). f32 subnormals
        # give 2^-127 (code 0) up to 2^-127 itself and 2^-126 above it, as
        # ml_dtypes does.
        small = b.select(b.icmp_unsigned(">", mag, _c(0x00400000)), _c(1), _c(0))
        code = b.select(b.icmp_unsigned("<", mag, _c(0x00800000)), small, code)
    else:
        # Subnormal results (|x| below the smallest normal): |x| in units of
        # the smallest subnormal, rounded to an integer (nearest even); the
        # smallest normal's code, 1 << m_bits, comes out of a carry.
        scaled = b.fmul(b.bitcast(mag, F32), ir.Constant(F32, float(2.0 ** (bias + m_bits - 1))))
        rint = b.module.declare_intrinsic("llvm.rint", [F32])
        sub = b.fptoui(b.call(rint, [scaled]), I32)
        min_normal_bits = (127 + 1 - bias) << 23
        code = b.select(b.icmp_unsigned("<", mag, _c(min_normal_bits)), sub, code)
    overflow = b.icmp_unsigned(">", code, _c(fmt.max_code))
    sign = _c(1 << (fmt.bits - 1))
    if fmt.encoding == "ieee":
        code = b.select(overflow, _c(fmt.inf_code), code)
        nan_code = _c(fmt.inf_code | (1 << (m_bits - 1)))
        if keep_nan_payload:
            payload = b.and_(mag, _c((1 << m_bits) - 1))
            nan_code = b.select(b.icmp_unsigned("==", payload, _c(0)), nan_code,
                                b.or_(_c(fmt.inf_code), payload))
        code = b.select(is_nan, nan_code, code)
        code = b.or_(code, b.select(negative, sign, _c(0)))
    elif fmt.encoding == "fn":
        code = b.select(b.or_(overflow, is_nan), _c(fmt.magnitude_mask), code)
        code = b.or_(code, b.select(negative, sign, _c(0)))
    elif fmt.encoding == "fnuz":
        signed_code = b.or_(code, b.select(b.and_(negative, b.icmp_unsigned("!=", code, _c(0))),
                                           sign, _c(0)))
        code = b.select(b.or_(overflow, is_nan), sign, signed_code)
    elif fmt.encoding == "finite":
        code = b.select(overflow, _c(fmt.max_code), code)
        code = b.or_(code, b.select(negative, sign, _c(0)))
        code = b.select(is_nan, b.select(negative, _c(0), sign), code)
    else:  # e8m0
        bad = b.or_(b.or_(overflow, is_nan), b.or_(negative, b.icmp_unsigned("==", mag, _c(0))))
        code = b.select(bad, _c(0xFF), code)
    return b.trunc(code, I8)


def decode(b, code8, element_type):
    """The f32 value of code ``code8`` (i8, bits above the format's ignored); exact."""
    fmt = FORMATS[element_type]
    e_bits, m_bits, bias = fmt.exponent_bits, fmt.mantissa_bits, fmt.bias
    x = b.and_(b.zext(code8, I32), _c((1 << fmt.bits) - 1))
    mag = b.and_(x, _c(fmt.magnitude_mask))
    exp = b.lshr(mag, _c(m_bits))
    normal = b.add(b.shl(mag, _c(23 - m_bits)), _c((127 - bias) << 23))
    if fmt.encoding == "e8m0":
        # Code 0 is 2^-127, an f32 subnormal; 0xff is NaN.
        out = b.select(b.icmp_unsigned("==", exp, _c(0)), _c(0x00400000), normal)
        out = b.select(b.icmp_unsigned("==", exp, _c(0xFF)), _c(0x7FC00000), out)
        return b.bitcast(out, F32)
    man = b.and_(mag, _c((1 << m_bits) - 1))
    sub = b.bitcast(b.fmul(b.uitofp(man, F32), ir.Constant(F32, float(2.0 ** (1 - bias - m_bits)))),
                    I32)
    out = b.select(b.icmp_unsigned("==", exp, _c(0)), sub, normal)
    if fmt.encoding == "ieee":
        # inf, or a quiet NaN (as ml_dtypes gives) with the code's mantissa
        # in its low bits, for encode(keep_nan_payload=True).
        nan = b.or_(_c(0x7FC00000), man)
        special = b.select(b.icmp_unsigned("==", man, _c(0)), _c(0x7F800000), nan)
        out = b.select(b.icmp_unsigned("==", exp, _c((1 << e_bits) - 1)), special, out)
    elif fmt.encoding == "fn":
        out = b.select(b.icmp_unsigned("==", mag, _c(fmt.magnitude_mask)), _c(0x7FC00000), out)
    sign = b.shl(b.lshr(x, _c(fmt.bits - 1)), _c(31))
    out = b.or_(out, sign)
    if fmt.encoding == "fnuz":  # 0x80: NaN, negative as ml_dtypes gives it
        out = b.select(b.icmp_unsigned("==", x, _c(1 << (fmt.bits - 1))), _c(0xFFC00000 - (1 << 32)), out)
    return b.bitcast(out, F32)


def total_order_key(b, value, element_type):
    """An i32 key ordering register values of ``element_type`` as XLA's
    TOTALORDER compare orders their codes (MinifloatFormat.total_order_keys)."""
    fmt = FORMATS[element_type]
    code = b.zext(encode(b, value, element_type, keep_nan_payload=True), I32)
    if not fmt.signed:
        return code
    top = 1 << (fmt.bits - 1)
    mag = b.and_(code, _c(top - 1))
    negative = b.icmp_unsigned("!=", b.and_(code, _c(top)), _c(0))
    key = b.select(negative, b.sub(_c(-1), mag), mag)
    if fmt.encoding == "fnuz":
        key = b.select(b.icmp_unsigned("==", code, _c(top)), _c(-top - 1), key)
    return key
