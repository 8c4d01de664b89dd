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

The format of each element type is one row of ``FORMATS``.
"""
from typing import NamedTuple

from llvmlite import ir

from xla.hlo.types import PrimitiveType as PT

I8 = ir.IntType(8)
I32 = ir.IntType(32)
F32 = ir.FloatType()


class MinifloatFormat(NamedTuple):
    exponent_bits: int
    mantissa_bits: int
    bias: int
    encoding: str  # 'ieee', 'fn', 'fnuz', 'finite' or 'e8m0' (module docstring)

    @property
    def signed(self):
        return self.encoding != "e8m0"

    @property
    def bits(self):
        return self.exponent_bits + self.mantissa_bits + (1 if self.signed else 0)

    @property
    def magnitude_mask(self):
        return (1 << (self.exponent_bits + self.mantissa_bits)) - 1

    @property
    def inf_code(self):
        """ieee: the code of +inf (all-ones exponent, zero mantissa)."""
        return ((1 << self.exponent_bits) - 1) << self.mantissa_bits

    @property
    def max_code(self):
        """The code of the largest finite magnitude."""
        if self.encoding == "ieee":
            return self.inf_code - 1
        if self.encoding in ("fn", "e8m0"):
            return self.magnitude_mask - 1
        return self.magnitude_mask


FORMATS = {
    PT.F8E5M2: MinifloatFormat(5, 2, 15, "ieee"),
    PT.F8E4M3: MinifloatFormat(4, 3, 7, "ieee"),
    PT.F8E3M4: MinifloatFormat(3, 4, 3, "ieee"),
    PT.F8E4M3FN: MinifloatFormat(4, 3, 7, "fn"),
    PT.F8E4M3FNUZ: MinifloatFormat(4, 3, 8, "fnuz"),
    PT.F8E5M2FNUZ: MinifloatFormat(5, 2, 16, "fnuz"),
    PT.F8E4M3B11FNUZ: MinifloatFormat(4, 3, 11, "fnuz"),
    PT.F8E8M0FNU: MinifloatFormat(8, 0, 127, "e8m0"),
    PT.F6E3M2FN: MinifloatFormat(3, 2, 3, "finite"),
    PT.F6E2M3FN: MinifloatFormat(2, 3, 1, "finite"),
    PT.F4E2M1FN: MinifloatFormat(2, 1, 1, "finite"),
}

MINIFLOAT_TYPES = tuple(FORMATS)


def _c(v):
    return ir.Constant(I32, v)


def encode(b, value, element_type):
    """The code (i8) of f32 ``value`` rounded to ``element_type``."""
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
        code = b.select(is_nan, _c(fmt.inf_code | (1 << (m_bits - 1))), code)
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
        special = b.or_(_c(0x7F800000), b.shl(man, _c(23 - m_bits)))
        out = b.select(b.icmp_unsigned("==", exp, _c((1 << e_bits) - 1)), special, out)
    elif fmt.encoding == "fn":
        out = b.select(b.icmp_unsigned("==", mag, _c(fmt.magnitude_mask)), _c(0x7FC00000), out)
    sign = b.shl(b.lshr(x, _c(fmt.bits - 1)), _c(31))
    out = b.or_(out, sign)
    if fmt.encoding == "fnuz":
        out = b.select(b.icmp_unsigned("==", x, _c(1 << (fmt.bits - 1))), _c(0x7FC00000), out)
    return b.bitcast(out, F32)
