"""LLVM types of HLO element types, in memory and in registers.

=========  ===============  ==============================================
type       memory           register
=========  ===============  ==============================================
pred       i8 (0 or 1)      i1 (loaded as ``x != 0``, stored zero-extended)
sN / uN    iN               iN (signedness lives in the ops, not the type)
s1 .. u4   i8 (low bits,    i1 / i2 / i4; one element per byte as
           the rest zero)   ml_dtypes holds them (XLA:CPU's packed E(4)
                            layouts are unpacked by sub-byte-size-removal)
f16        i16 (bits)       float; ``fpext half`` on load, ``fptrunc`` on store
bf16       i16 (bits)       float; ``bits << 16`` on load, round to nearest
                            even on store (NaN -> quiet NaN with its sign,
                            as ml_dtypes does; the target's vcvtneps2bf16
                            where it has AVX512-BF16, see f32_to_bf16_bits);
                            a rounding kept in f32 stays in 32-bit lanes
                            (_round_bf16_in_f32)
f8* f6*    i8 (code in the  float; decoded exactly on load, rounded to
f4e2m1fn   low bits)        nearest even on store as ml_dtypes does
                            (minifloat.py: one routine, one row per format)
f32 / f64  float / double   float / double
c64        {float, float}   {float, float}  (real, imag)
c128       {double, double} {double, double}
=========  ===============  ==============================================

Per-op rounding and excess precision (``--xla_allow_excess_precision``,
XLA's "allow xla to increase the output precision of an instruction"):
with the flag false, every f16/bf16/minifloat result the emitters produce is
rounded to its type (``round_result``), so a register value is exactly
representable and matches the interpreter bit for bit. With it true (XLA's
default), a narrow result stays in f32 while it lives in registers, inside
one kernel (a fusion, a reducer's accumulator): it is rounded only where it
is stored (a kernel's outputs and every other value that reaches a buffer),
as XLA's float normalization followed by simplify-fp-conversions computes a
bf16 fusion in f32. ``convert`` and ``reduce-precision`` always round
(the program asks for that rounding; XLA:CPU keeps a fused convert's).
"""
import contextlib
import contextvars
import math

import numpy as np
from llvmlite import ir

from xla.backends.cpu import minifloat
from xla.backends.cpu.minifloat import MINIFLOAT_TYPES
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

NARROW_FLOATS = (PT.F16, PT.BF16) + MINIFLOAT_TYPES
SUB_BYTE_INTS = (PT.S1, PT.S2, PT.S4, PT.U1, PT.U2, PT.U4)

_REGISTER = {
    PT.PRED: I1,
    PT.S8: I8, PT.S16: I16, PT.S32: I32, PT.S64: I64,
    PT.U8: I8, PT.U16: I16, PT.U32: I32, PT.U64: I64,
    PT.F16: F32, PT.BF16: F32, PT.F32: F32, PT.F64: F64,
    PT.C64: C64, PT.C128: C128,
}
_REGISTER.update({t: F32 for t in MINIFLOAT_TYPES})
_REGISTER.update({t: ir.IntType(t.bits) for t in SUB_BYTE_INTS})

_MEMORY = dict(_REGISTER)
_MEMORY.update({PT.PRED: I8, PT.F16: I16, PT.BF16: I16})
_MEMORY.update({t: I8 for t in MINIFLOAT_TYPES + SUB_BYTE_INTS})


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

class _BFloatType(ir.types._BaseFloatType):
    """LLVM's ``bfloat`` (llvmlite has no such type): only ever the target
    of an ``fptrunc``, bitcast to i16 at once."""
    null = "0.0"
    intrinsic_name = "bf16"

    def __str__(self):
        return "bfloat"


_BFloatType._create_instance()
BF16_LLVM = _BFloatType()


def f32_to_bf16_bits(b, value):
    """The bf16 bits (i16) of f32 ``value``: round to nearest even; NaN ->
    0x7fc0 / 0xffc0 (quiet, sign kept), as ml_dtypes does."""
    if _native_bf16.get():
        return _f32_to_bf16_bits_native(b, value)
    # The NaN select is on the 32-bit words and one shift and truncation
    # follow it: vectorized, that is one vpsrld + vpmovdw per 16 lanes
    # where selecting the two 16-bit candidates needed two of each.
    return b.trunc(b.lshr(_rounded_word(b, value), ir.Constant(I32, 16)), I16)


def _rounded_word(b, value):
    """The 32-bit word whose high half is the bf16 bits of f32 ``value``
    (round to nearest even; NaN -> quiet NaN with its sign) and whose low
    half is left over from the rounding (zero for a NaN)."""
    bits = b.bitcast(value, I32)
    lsb = b.and_(b.lshr(bits, ir.Constant(I32, 16)), ir.Constant(I32, 1))
    rounded = b.add(bits, b.add(ir.Constant(I32, 0x7FFF), lsb))
    is_nan = b.fcmp_unordered("uno", value, value)
    qnan = b.or_(b.and_(bits, ir.Constant(I32, 0x80000000)), ir.Constant(I32, 0x7FC00000))
    return b.select(is_nan, qnan, rounded)


def _f32_to_bf16_bits_native(b, value):
    """``f32_to_bf16_bits`` through ``fptrunc float to bfloat``, which LLVM
    lowers to vcvtneps2bf16 with AVX512-BF16: one instruction per 16 lanes
    where the integer rounding is nine. The instruction rounds to
    nearest even but takes denormal inputs as zero and keeps a NaN's
    payload (quieted); three fix-ups (six instructions with the two masks,
    vptestnmd and vcmpunordps) give ml_dtypes' bits exactly:

    * zero exponent field (zero or denormal x): converts x + copysign(2^-126,
      x), the bits plus 0x00800000 (exact), a normal number whose bf16
      spacing (2^-133) is that of bf16's denormals and of which 2^-126 is
      an even multiple: its rounding is 2^-126 plus x's, ties alike, and
      the result is its bits less 0x0080 (the sign bit untouched).
    * NaN: the instruction's sign | 0x7f80 | 0x0040 | payload bits, with
      the payload cleared (& 0xffc0): sign | 0x7fc0.
    """
    bits = b.bitcast(value, I32)
    tiny = b.icmp_unsigned("==", b.and_(bits, ir.Constant(I32, 0x7F800000)), ir.Constant(I32, 0))
    moved = b.select(tiny, b.add(bits, ir.Constant(I32, 0x00800000)), bits)
    converted = b.bitcast(b.fptrunc(b.bitcast(moved, F32), BF16_LLVM), I16)
    converted = b.select(tiny, b.sub(converted, ir.Constant(I16, 0x0080)), converted)
    is_nan = b.fcmp_unordered("uno", value, value)
    return b.select(is_nan, b.and_(converted, ir.Constant(I16, 0xFFC0)), converted)


def bf16_bits_to_f32(b, bits16):
    """The f32 value of bf16 bits (i16); exact."""
    return b.bitcast(b.shl(b.zext(bits16, I32), ir.Constant(I32, 16)), F32)


def _round_bf16_in_f32(b, value):
    """``round_to_type``'s bf16 case: f32 ``value`` rounded to bf16 (nearest
    even; NaN -> quiet NaN with its sign: ml_dtypes' bits) and kept in f32,
    computed in 32-bit lanes: the rounded bits with their low half zero.
    Where the value goes on in f32 (a convert's result, an op's rounded
    result under --xla_allow_excess_precision=false), this does not narrow
    to 16 bits and widen back: vcvtneps2bf16 with its fix-ups and then
    vpmovzxwd and vpslld, about 10 vector instructions per 16 lanes, where
    this is 7. Denormals round like the rest (bf16's are f32's with the
    low half cut off). ``_widened_bf16_bits`` recognizes the result, and
    stores it without a second rounding."""
    high = b.and_(_rounded_word(b, value), ir.Constant(I32, 0xFFFF0000))
    high.bf16_source = value
    return b.bitcast(high, F32)


def _widened_bf16_bits(b, value):
    """The i16 ``bits`` when ``value`` is ``bf16_bits_to_f32(bits)`` as
    emitted (a loaded bf16, a rounded convert's result) or a
    ``_round_bf16_in_f32`` result, else None: storing it needs no second
    rounding, which LLVM cannot see through (a convert rounded twice, and
    through ``fptrunc`` to bfloat the loop vectorizer's cost model then
    chose 4 lanes). A NaN keeps its payload, as moved elements keep it in
    the interpreter."""
    if not (isinstance(value, ir.CastInstr) and value.opname == "bitcast"
            and value.type == F32):
        return None
    shifted = value.operands[0]
    source = getattr(shifted, "bf16_source", None)
    if source is not None:
        # The high half as it is; with AVX512-BF16 the conversion of the
        # unrounded value instead, the same bits in one vcvtneps2bf16 that
        # narrows too (the rounding above is then dead code where nothing
        # else reads it: a convert whose result is only stored).
        if _native_bf16.get():
            return _f32_to_bf16_bits_native(b, source)
        return b.trunc(b.lshr(shifted, ir.Constant(I32, 16)), I16)
    if not (isinstance(shifted, ir.Instruction) and shifted.opname == "shl"
            and isinstance(shifted.operands[1], ir.Constant)
            and shifted.operands[1].constant == 16):
        return None
    wide = shifted.operands[0]
    if (isinstance(wide, ir.CastInstr) and wide.opname == "zext"
            and wide.operands[0].type == I16):
        return wide.operands[0]
    return None


def f32_to_f16_bits(b, value):
    return b.bitcast(b.fptrunc(value, F16), I16)


def f16_bits_to_f32(b, bits16):
    return b.fpext(b.bitcast(bits16, F16), F32)


def round_to_type(b, value, element_type):
    """An f32 register value rounded to ``element_type`` (f16/bf16/f8) and
    widened back, so that it is exactly representable; other types as is."""
    if element_type is PT.F16:
        return b.fpext(b.fptrunc(value, F16), F32)
    if element_type is PT.BF16:
        return _round_bf16_in_f32(b, value)
    if element_type in MINIFLOAT_TYPES:
        return minifloat.decode(b, minifloat.encode(b, value, element_type), element_type)
    return value


_excess_precision = contextvars.ContextVar("xla_cpu_excess_precision", default=False)


@contextlib.contextmanager
def excess_precision(allowed=True):
    """While active (the compiler enters it with --xla_allow_excess_precision),
    ``round_result`` leaves narrow results in f32 (see the module docstring).
    Outside it, every op rounds (the GPU backend's emission, which shares the
    element generators, stays there)."""
    token = _excess_precision.set(bool(allowed))
    try:
        yield
    finally:
        _excess_precision.reset(token)


def excess_precision_allowed():
    return _excess_precision.get()


# The width of the target's vector registers, in bits: 512 where the CPU
# has AVX-512 (jit.host_vector_bits), 256 otherwise (AOT objects for a
# baseline CPU); None outside a CPU compile (the GPU backend's shared
# generators, kernels emitted by tests), which vector_lanes takes as 256.
_vector_bits = contextvars.ContextVar("xla_cpu_vector_bits", default=None)


@contextlib.contextmanager
def vector_width(bits):
    """While active (the compiler enters it with its target's width), the
    loops that ask the vectorizer for an explicit width (row reductions)
    run ``vector_lanes`` wide."""
    token = _vector_bits.set(int(bits))
    try:
        yield
    finally:
        _vector_bits.reset(token)


def has_avx512():
    """Whether the target has AVX-512F (the only targets compiled 512 bits
    wide): instructions such as vscalefps may be asked of LLVM."""
    return (_vector_bits.get() or 0) >= 512


def cpu_target():
    """Whether a CPU compile (JIT or AOT: x86-64 or AArch64, IEEE f32
    arithmetic with denormals) is emitting; the GPU backend, which shares
    the element generators, never enters ``vector_width``."""
    return _vector_bits.get() is not None


# Whether the target converts f32 to bf16 natively (AVX512-BF16's
# vcvtneps2bf16, which LLVM emits for ``fptrunc float to bfloat``): the
# JIT's host may; elsewhere (AOT objects, the GPU backend's shared
# generators, kernels emitted by tests) the integer rounding, which every
# target runs, is emitted. Without the instruction LLVM would lower that
# fptrunc to a libcall per element.
_native_bf16 = contextvars.ContextVar("xla_cpu_native_bf16", default=False)


@contextlib.contextmanager
def native_bf16_conversion(allowed=True):
    """While active with ``allowed`` (the compiler enters it where the
    target has AVX512-BF16), ``f32_to_bf16_bits`` emits ``fptrunc`` to
    bfloat with its fix-ups."""
    token = _native_bf16.set(bool(allowed))
    try:
        yield
    finally:
        _native_bf16.reset(token)


def vector_lanes(element_bits):
    """How many ``element_bits``-wide lanes one of the target's vector
    registers holds."""
    return max(1, (_vector_bits.get() or 256) // element_bits)


def round_result(b, value, element_type):
    """The register value of an op's ``element_type`` result computed as
    ``value`` (in f32): rounded to the type, unless excess precision is
    allowed (then the store rounds it)."""
    if _excess_precision.get():
        return value
    return round_to_type(b, value, element_type)


# ----------------------------------------------------------------------------
# loads and stores
# ----------------------------------------------------------------------------

def typed_pointer(b, ptr, typ):
    """``ptr`` as a pointer to ``typ`` (typed-pointer llvmlite IR needs it)."""
    ptype = ptr.type
    if not isinstance(ptype, ir.PointerType):
        raise TypeError(f"expected a pointer, got {ptype}")
    if getattr(ptype, "is_opaque", False) or ptype.pointee == typ:
        return ptr
    return b.bitcast(ptr, typ.as_pointer(getattr(ptype, "addrspace", 0)))


def from_memory(b, raw, element_type):
    """The register value of an element whose memory form is ``raw``."""
    if element_type is PT.PRED:
        return b.icmp_unsigned("!=", raw, ir.Constant(I8, 0))
    if element_type is PT.F16:
        return f16_bits_to_f32(b, raw)
    if element_type is PT.BF16:
        return bf16_bits_to_f32(b, raw)
    if element_type in MINIFLOAT_TYPES:
        return minifloat.decode(b, raw, element_type)
    if element_type in SUB_BYTE_INTS:
        return b.trunc(raw, _REGISTER[element_type])
    return raw


def load_element(b, ptr, element_type, align=None):
    """Loads the element at ``ptr`` and returns its register value."""
    mem = memory_type(element_type)
    return from_memory(b, b.load(typed_pointer(b, ptr, mem), typ=mem, align=align), element_type)


def to_memory(b, value, element_type):
    """The in-memory form of a register value (i8 0/1, rounded i16, ...)."""
    if element_type is PT.PRED:
        return b.zext(value, I8)
    if element_type is PT.F16:
        return f32_to_f16_bits(b, value)
    if element_type is PT.BF16:
        return _widened_bf16_bits(b, value) or f32_to_bf16_bits(b, value)
    if element_type in MINIFLOAT_TYPES:
        return minifloat.encode(b, value, element_type)
    if element_type in SUB_BYTE_INTS:
        return b.zext(value, I8)  # the low bits, the rest zero (as ml_dtypes holds them)
    return value


def store_element(b, value, ptr, element_type, align=None):
    """Stores register value ``value`` to ``ptr`` in its memory form."""
    mem = memory_type(element_type)
    return b.store(to_memory(b, value, element_type), typed_pointer(b, ptr, mem), align=align)


def to_bits(b, value, element_type):
    """The bits of a real register value as bitcast-convert sees them: an
    integer of ``element_type.bits`` bits (i4 for s4 and f4e2m1fn, i8 for pred)."""
    mem = to_memory(b, value, element_type)
    if not isinstance(mem.type, ir.IntType):
        mem = b.bitcast(mem, ir.IntType(element_type.bits))
    if mem.type.width > element_type.bits:
        mem = b.trunc(mem, ir.IntType(element_type.bits))
    return mem


def from_bits(b, bits, element_type):
    """The register value of a real element whose bits (``element_type.bits``
    wide, as ``to_bits`` gives them) are ``bits``."""
    mem = memory_type(element_type)
    if isinstance(mem, ir.IntType):
        if bits.type.width < mem.width:
            bits = b.zext(bits, mem)
    else:
        bits = b.bitcast(bits, mem)
    return from_memory(b, bits, element_type)


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
