"""LLVM types of HLO element types, in memory and in registers.

=========  ===============  ==============================================
type       memory           register
=========  ===============  ==============================================
pred       i8 (0 or 1)      i1 (loaded as ``x != 0``, stored zero-extended)
sN / uN    iN               iN (signedness lives in the ops, not the type)
f16        i16 (bits)       float; ``fpext half`` on load, ``fptrunc`` on store
bf16       i16 (bits)       float; ``bits << 16`` on load, round to nearest
                            even on store (NaN -> quiet NaN with its sign,
                            as ml_dtypes does)
f8e4m3fn   i8 (bits)        float; decoded exactly on load, rounded to
f8e5m2                      nearest even on store as ml_dtypes does
                            (e4m3fn: no inf, overflow and inf -> NaN 0x7f;
                            e5m2: overflow -> inf, NaN -> 0x7e; sign kept)
f32 / f64  float / double   float / double
c64        {float, float}   {float, float}  (real, imag)
c128       {double, double} {double, double}
=========  ===============  ==============================================

An f16/bf16/f8 register value produced by the elemental emitter is always
exactly representable in its type (each op rounds its result once, as the
interpreter does), so storing it is exact; rounding on store only matters
for values computed elsewhere.
"""
import math

import numpy as np
from llvmlite import ir

from xla.errors import UnimplementedError
from xla.hlo.types import PrimitiveType as PT

I1 = ir.IntType(1)
I8 = ir.IntType(8)
I16 = ir.IntType(16)
I32 = ir.IntType(32)
I64 = ir.IntType(64)
F16 = ir.HalfType()
F32 = ir.FloatType()
F64 = ir.DoubleType()
C64 = ir.LiteralStructType([F32, F32])
C128 = ir.LiteralStructType([F64, F64])

F8_TYPES = (PT.F8E4M3FN, PT.F8E5M2)
NARROW_FLOATS = (PT.F16, PT.BF16) + F8_TYPES

_REGISTER = {
    PT.PRED: I1,
    PT.S8: I8, PT.S16: I16, PT.S32: I32, PT.S64: I64,
    PT.U8: I8, PT.U16: I16, PT.U32: I32, PT.U64: I64,
    PT.F16: F32, PT.BF16: F32, PT.F32: F32, PT.F64: F64,
    PT.C64: C64, PT.C128: C128,
    PT.F8E4M3FN: F32, PT.F8E5M2: F32,
}

_MEMORY = dict(_REGISTER)
_MEMORY.update({PT.PRED: I8, PT.F16: I16, PT.BF16: I16, PT.F8E4M3FN: I8, PT.F8E5M2: I8})


def _unsupported(element_type, what):
    return UnimplementedError(f"cpu: element type {element_type} is not supported ({what})")


def register_type(element_type):
    """The LLVM type an element of ``element_type`` has in registers."""
    try:
        return _REGISTER[element_type]
    except KeyError:
        raise _unsupported(element_type, "register type") from None


def memory_type(element_type):
    """The LLVM type an element of ``element_type`` has in memory."""
    try:
        return _MEMORY[element_type]
    except KeyError:
        raise _unsupported(element_type, "memory type") from None


def is_supported(element_type):
    return element_type in _REGISTER


# ----------------------------------------------------------------------------
# narrow floats
# ----------------------------------------------------------------------------

def f32_to_bf16_bits(b, value):
    """The bf16 bits (i16) of f32 ``value``: round to nearest even; NaN ->
    0x7fc0 / 0xffc0 (quiet, sign kept), as ml_dtypes does."""
    bits = b.bitcast(value, I32)
    lsb = b.and_(b.lshr(bits, ir.Constant(I32, 16)), ir.Constant(I32, 1))
    rounded = b.add(bits, b.add(ir.Constant(I32, 0x7FFF), lsb))
    out = b.trunc(b.lshr(rounded, ir.Constant(I32, 16)), I16)
    is_nan = b.fcmp_unordered("uno", value, value)
    sign = b.trunc(b.lshr(bits, ir.Constant(I32, 16)), I16)
    qnan = b.or_(b.and_(sign, ir.Constant(I16, 0x8000)), ir.Constant(I16, 0x7FC0))
    return b.select(is_nan, qnan, out)


def bf16_bits_to_f32(b, bits16):
    """The f32 value of bf16 bits (i16); exact."""
    return b.bitcast(b.shl(b.zext(bits16, I32), ir.Constant(I32, 16)), F32)


def f32_to_f16_bits(b, value):
    return b.bitcast(b.fptrunc(value, F16), I16)


def f16_bits_to_f32(b, bits16):
    return b.fpext(b.bitcast(bits16, F16), F32)


# f8 formats: (exponent bits, mantissa bits, has inf). e4m3fn's only NaN is
# S.1111.111 and it has no inf; e5m2 is IEEE-like.
_F8_FORMAT = {PT.F8E4M3FN: (4, 3, False), PT.F8E5M2: (5, 2, True)}


def f32_to_f8_bits(b, value, element_type):
    """The f8 bits (i8) of f32 ``value``, rounded to nearest even as ml_dtypes
    rounds: subnormals included; e5m2: overflow -> inf, NaN -> 0x7e;
    e4m3fn: overflow and inf -> NaN 0x7f; the sign kept throughout."""
    e_bits, m_bits, has_inf = _F8_FORMAT[element_type]
    bias = (1 << (e_bits - 1)) - 1
    c = lambda v: ir.Constant(I32, v)  # noqa: E731
    bits = b.bitcast(value, I32)
    sign = b.trunc(b.lshr(bits, c(24)), I8)
    sign = b.and_(sign, ir.Constant(I8, 0x80))
    mag = b.and_(bits, c(0x7FFFFFFF))
    # Normal results: round the f32 mantissa to m_bits (nearest even), then
    # rebias the exponent; a carry moves into the exponent correctly.
    shift = 23 - m_bits
    lsb = b.and_(b.lshr(mag, c(shift)), c(1))
    rounded = b.lshr(b.add(mag, b.add(c((1 << (shift - 1)) - 1), lsb)), c(shift))
    normal = b.sub(rounded, c((127 - bias) << m_bits))
    # Subnormal results (|x| < the smallest normal): x / 2^(1-bias-m_bits)
    # rounded to an integer (nearest even); 2^m_bits is the smallest normal's code.
    absval = b.bitcast(mag, F32)
    scaled = b.fmul(absval, ir.Constant(F32, float(2.0 ** (bias + m_bits - 1))))
    fn = b.module.declare_intrinsic("llvm.rint", [F32])
    sub = b.fptoui(b.call(fn, [scaled]), I32)
    min_normal_bits = (127 + 1 - bias) << 23
    code = b.select(b.icmp_unsigned("<", mag, c(min_normal_bits)), sub, normal)
    is_nan = b.icmp_unsigned(">", mag, c(0x7F800000))
    if has_inf:
        inf_code = ((1 << e_bits) - 1) << m_bits
        code = b.select(b.icmp_unsigned(">", code, c(inf_code)), c(inf_code), code)
        code = b.select(is_nan, c(inf_code | (1 << (m_bits - 1))), code)
    else:
        nan_code = (1 << (e_bits + m_bits)) - 1
        code = b.select(b.icmp_unsigned(">", code, c(nan_code)), c(nan_code), code)
        code = b.select(is_nan, c(nan_code), code)
    return b.or_(b.trunc(code, I8), sign)


def f8_bits_to_f32(b, bits8, element_type):
    """The f32 value of f8 bits (i8); exact (NaNs stay NaN)."""
    e_bits, m_bits, has_inf = _F8_FORMAT[element_type]
    bias = (1 << (e_bits - 1)) - 1
    c = lambda v: ir.Constant(I32, v)  # noqa: E731
    x = b.zext(bits8, I32)
    sign = b.shl(b.and_(x, c(0x80)), c(24))
    mag = b.and_(x, c(0x7F))
    exp = b.lshr(mag, c(m_bits))
    man = b.and_(mag, c((1 << m_bits) - 1))
    normal = b.add(b.shl(mag, c(23 - m_bits)), c((127 - bias) << 23))
    sub = b.bitcast(b.fmul(b.uitofp(man, F32), ir.Constant(F32, float(2.0 ** (1 - bias - m_bits)))),
                    I32)
    out = b.select(b.icmp_unsigned("==", exp, c(0)), sub, normal)
    if has_inf:
        special = b.or_(c(0x7F800000), b.shl(man, c(23 - m_bits)))
        out = b.select(b.icmp_unsigned("==", exp, c((1 << e_bits) - 1)), special, out)
    else:
        out = b.select(b.icmp_unsigned("==", mag, c(0x7F)), c(0x7FC00000), out)
    return b.bitcast(b.or_(out, sign), F32)


def round_to_type(b, value, element_type):
    """An f32 register value rounded to ``element_type`` (f16/bf16/f8) and
    widened back, so that it is exactly representable; other types as is."""
    if element_type is PT.F16:
        return b.fpext(b.fptrunc(value, F16), F32)
    if element_type is PT.BF16:
        return bf16_bits_to_f32(b, f32_to_bf16_bits(b, value))
    if element_type in _F8_FORMAT:
        return f8_bits_to_f32(b, f32_to_f8_bits(b, value, element_type), element_type)
    return value


# ----------------------------------------------------------------------------
# loads and stores
# ----------------------------------------------------------------------------

def _typed_pointer(b, ptr, typ):
    """``ptr`` as a pointer to ``typ`` (typed-pointer llvmlite IR needs it)."""
    ptype = ptr.type
    if not isinstance(ptype, ir.PointerType):
        raise TypeError(f"expected a pointer, got {ptype}")
    if getattr(ptype, "is_opaque", False) or ptype.pointee == typ:
        return ptr
    return b.bitcast(ptr, typ.as_pointer(getattr(ptype, "addrspace", 0)))


def load_element(b, ptr, element_type, align=None):
    """Loads the element at ``ptr`` and returns its register value."""
    mem = memory_type(element_type)
    raw = b.load(_typed_pointer(b, ptr, mem), typ=mem, align=align)
    if element_type is PT.PRED:
        return b.icmp_unsigned("!=", raw, ir.Constant(I8, 0))
    if element_type is PT.F16:
        return f16_bits_to_f32(b, raw)
    if element_type is PT.BF16:
        return bf16_bits_to_f32(b, raw)
    if element_type in _F8_FORMAT:
        return f8_bits_to_f32(b, raw, element_type)
    return raw


def to_memory(b, value, element_type):
    """The in-memory form of a register value (i8 0/1, rounded i16, ...)."""
    if element_type is PT.PRED:
        return b.zext(value, I8)
    if element_type is PT.F16:
        return f32_to_f16_bits(b, value)
    if element_type is PT.BF16:
        return f32_to_bf16_bits(b, value)
    if element_type in _F8_FORMAT:
        return f32_to_f8_bits(b, value, element_type)
    return value


def store_element(b, value, ptr, element_type, align=None):
    """Stores register value ``value`` to ``ptr`` in its memory form."""
    mem = memory_type(element_type)
    return b.store(to_memory(b, value, element_type), _typed_pointer(b, ptr, mem), align=align)


# ----------------------------------------------------------------------------
# constants
# ----------------------------------------------------------------------------

def _float_constant(typ, element_type, value):
    value = float(value)
    if element_type in NARROW_FLOATS and math.isfinite(value):
        with np.errstate(over="ignore"):
            value = float(np.asarray(value).astype(element_type.dtype).astype(np.float32))
    elif element_type in NARROW_FLOATS and math.isnan(value):
        value = float("nan")
    return ir.Constant(typ, value)


def constant(element_type, value):
    """The register value of constant ``value`` (a Python or NumPy scalar),
    first rounded to ``element_type`` as the interpreter would hold it."""
    typ = register_type(element_type)
    if element_type is PT.PRED:
        return ir.Constant(I1, 1 if bool(value) else 0)
    if element_type.is_integer:
        v = int(np.asarray(value).astype(element_type.dtype))
        return ir.Constant(typ, v & ((1 << typ.width) - 1))
    if element_type.is_float:
        if element_type is PT.F32:
            with np.errstate(over="ignore"):
                value = np.float32(value)
        return _float_constant(typ, element_type, value)
    if element_type.is_complex:
        c = complex(np.asarray(value).astype(element_type.dtype))
        comp = element_type.complex_component_type
        ctyp = register_type(comp)
        re, im = c.real, c.imag
        if comp is PT.F32:
            re, im = np.float32(re), np.float32(im)
        return ir.Constant(typ, [ir.Constant(ctyp, float(re)), ir.Constant(ctyp, float(im))])
    raise _unsupported(element_type, "constant")
