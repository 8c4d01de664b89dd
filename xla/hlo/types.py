"""Element types (XLA's PrimitiveType) and their NumPy counterparts.

bf16 and the other narrow floats come from ml_dtypes, the package JAX uses.
ml_dtypes is imported when one of them is first used (the ``dtype`` of such
an element type, or ``from_dtype`` of a dtype NumPy alone does not have):
``import xla`` and modules of NumPy's types alone do not pay for it.
"""
import enum
import threading
from typing import NamedTuple

import numpy as np


class PrimitiveType(enum.Enum):
    # value: (text name, NumPy type | name of an ml_dtypes type | None, bit width, kind)
    # kind: 'pred', 's' (signed int), 'u' (unsigned int), 'f' (float),
    #       'c' (complex), 'token', 'tuple', 'opaque', 'buffer'
    PRED = ("pred", np.bool_, 8, "pred")
    S1 = ("s1", "int1", 1, "s")
    S2 = ("s2", "int2", 2, "s")
    S4 = ("s4", "int4", 4, "s")
    S8 = ("s8", np.int8, 8, "s")
    S16 = ("s16", np.int16, 16, "s")
    S32 = ("s32", np.int32, 32, "s")
    S64 = ("s64", np.int64, 64, "s")
    U1 = ("u1", "uint1", 1, "u")
    U2 = ("u2", "uint2", 2, "u")
    U4 = ("u4", "uint4", 4, "u")
    U8 = ("u8", np.uint8, 8, "u")
    U16 = ("u16", np.uint16, 16, "u")
    U32 = ("u32", np.uint32, 32, "u")
    U64 = ("u64", np.uint64, 64, "u")
    F4E2M1FN = ("f4e2m1fn", "float4_e2m1fn", 4, "f")
    F6E2M3FN = ("f6e2m3fn", "float6_e2m3fn", 6, "f")
    F6E3M2FN = ("f6e3m2fn", "float6_e3m2fn", 6, "f")
    F8E3M4 = ("f8e3m4", "float8_e3m4", 8, "f")
    F8E4M3 = ("f8e4m3", "float8_e4m3", 8, "f")
    F8E4M3FN = ("f8e4m3fn", "float8_e4m3fn", 8, "f")
    F8E4M3FNUZ = ("f8e4m3fnuz", "float8_e4m3fnuz", 8, "f")
    F8E4M3B11FNUZ = ("f8e4m3b11fnuz", "float8_e4m3b11fnuz", 8, "f")
    F8E5M2 = ("f8e5m2", "float8_e5m2", 8, "f")
    F8E5M2FNUZ = ("f8e5m2fnuz", "float8_e5m2fnuz", 8, "f")
    F8E8M0FNU = ("f8e8m0fnu", "float8_e8m0fnu", 8, "f")
    F16 = ("f16", np.float16, 16, "f")
    BF16 = ("bf16", "bfloat16", 16, "f")
    F32 = ("f32", np.float32, 32, "f")
    F64 = ("f64", np.float64, 64, "f")
    C64 = ("c64", np.complex64, 64, "c")
    C128 = ("c128", np.complex128, 128, "c")
    TOKEN = ("token", None, 0, "token")
    TUPLE = ("tuple", None, 0, "tuple")
    OPAQUE = ("opaque", None, 0, "opaque")
    # A buffer shape wraps one array shape, written b(f32[4,16]); as in XLA,
    # 'buffer' is never spelled as an element type in text.
    BUFFER = ("buffer", None, 0, "buffer")

    def __init__(self, text, dtype, bits, kind):
        # dtype: a NumPy type, None, or the name of an ml_dtypes type, whose
        # ``dtype`` attribute is set when one is first read (__getattr__).
        self.text = text
        if isinstance(dtype, str):
            self._ml_dtypes_name = dtype
        else:
            self.dtype = np.dtype(dtype) if dtype is not None else None
        self.bits = bits
        self.kind = kind

    def __getattr__(self, name):
        # Only reached for an attribute not set: ``dtype`` of an ml_dtypes type.
        if name == "dtype" and "_ml_dtypes_name" in self.__dict__:
            _load_ml_dtypes()
            return self.__dict__["dtype"]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __repr__(self):
        return f"PrimitiveType.{self.name}"

    def __str__(self):
        return self.text

    @property
    def is_pred(self):
        return self.kind == "pred"

    @property
    def is_integer(self):
        return self.kind in ("s", "u")

    @property
    def is_signed_integer(self):
        return self.kind == "s"

    @property
    def is_unsigned_integer(self):
        return self.kind == "u"

    @property
    def is_float(self):
        return self.kind == "f"

    @property
    def is_narrow_float(self):
        """f16, bf16 and the ml_dtypes minifloats (f8*, f6*, f4*): computed in f32."""
        return self.kind == "f" and self.bits < 32

    @property
    def is_sub_byte(self):
        """s1/u1/s2/u2/s4/u4 and f4/f6: fewer bits than a byte (one byte each
        in memory unless a layout packs them)."""
        return self.dtype is not None and self.bits < 8

    @property
    def is_complex(self):
        return self.kind == "c"

    @property
    def is_array_type(self):
        """True for element types that arrays can hold (not token/tuple/opaque/buffer)."""
        return self.dtype is not None

    @property
    def byte_size(self):
        return max(self.bits // 8, 1) if self.dtype is not None else 0

    @property
    def complex_component_type(self):
        """f32 for c64, f64 for c128."""
        if self is PrimitiveType.C64:
            return PrimitiveType.F32
        if self is PrimitiveType.C128:
            return PrimitiveType.F64
        raise ValueError(f"{self.text} is not a complex type")


_BY_TEXT = {t.text: t for t in PrimitiveType}
_BY_DTYPE = {t.dtype: t for t in PrimitiveType if "dtype" in t.__dict__ and t.dtype is not None}
_ml_dtypes_lock = threading.Lock()
_ml_dtypes_loaded = False


def _load_ml_dtypes():
    """Imports ml_dtypes and gives its element types their dtypes."""
    global _ml_dtypes_loaded
    with _ml_dtypes_lock:
        if _ml_dtypes_loaded:
            return
        import ml_dtypes
        for t in PrimitiveType:
            name = t.__dict__.get("_ml_dtypes_name")
            if name is not None:
                t.dtype = np.dtype(getattr(ml_dtypes, name))
                _BY_DTYPE[t.dtype] = t
        _ml_dtypes_loaded = True


def from_text(text):
    """The PrimitiveType spelled ``text`` in HLO (``f32``), or None."""
    return _BY_TEXT.get(text)


def from_dtype(dtype):
    """The PrimitiveType of a NumPy dtype; raises ValueError if there is none."""
    dtype = np.dtype(dtype)
    try:
        return _BY_DTYPE[dtype]
    except KeyError:
        pass
    _load_ml_dtypes()   # the dtype may be one of ml_dtypes' (then its program imported it)
    try:
        return _BY_DTYPE[dtype]
    except KeyError:
        raise ValueError(f"no HLO element type for NumPy dtype {dtype}") from None


def floats_from_text(values, element_type):
    """Float64 values (parsed from HLO text) as an array of ``element_type``.

    As ml_dtypes casts, except that f8e8m0fnu values below 2^-126 are rounded
    from the double itself (an exponent rounded half up, below 2^-127 the
    smallest code): ml_dtypes rounds them through an f32 subnormal, which
    sends the 5.9e-39 that XLA prints for 2^-127 to 2^-126."""
    values = np.asarray(values, np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        out = values.astype(element_type.dtype)
    if element_type is PrimitiveType.F8E8M0FNU:
        tiny = (values > 0) & (values < 2.0 ** -126)
        if tiny.any():
            m, e = np.frexp(values[tiny])  # values = m * 2^e, 0.5 <= m < 1
            code = np.maximum(e - 1 + (m >= 0.75) + 127, 0)
            out = out.copy()
            out[tiny] = code.astype(np.uint8).view(element_type.dtype)
    return out


class MinifloatFormat(NamedTuple):
    """How a minifloat's bits encode its values (cpu/minifloat.py's table of
    what each encoding does with overflow, NaN, zero and the sign)."""
    exponent_bits: int
    mantissa_bits: int
    bias: int
    encoding: str  # 'ieee', 'fn', 'fnuz', 'finite' or 'e8m0' (see cpu/minifloat.py)

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

    def total_order_keys(self, codes):
        """Integer keys (int64 array) ordering codes as XLA's TOTALORDER
        compare does (measured on XLA:CPU, jaxlib 0.10.2): sign and magnitude
        (-NaN < -inf < ... < -0 < +0 < ... < inf < NaN, NaN payloads
        ordered by their bits); fnuz's NaN (0x80) below everything; f8e8m0fnu
        (no sign) by its code."""
        codes = np.asarray(codes).astype(np.int64) & ((1 << self.bits) - 1)
        if not self.signed:
            return codes
        top = 1 << (self.bits - 1)
        mag = codes & (top - 1)
        keys = np.where(codes & top, -mag - 1, mag)
        if self.encoding == "fnuz":
            keys = np.where(codes == top, -top - 1, keys)
        return keys


MINIFLOAT_FORMATS = {
    PrimitiveType.F8E5M2: MinifloatFormat(5, 2, 15, "ieee"),
    PrimitiveType.F8E4M3: MinifloatFormat(4, 3, 7, "ieee"),
    PrimitiveType.F8E3M4: MinifloatFormat(3, 4, 3, "ieee"),
    PrimitiveType.F8E4M3FN: MinifloatFormat(4, 3, 7, "fn"),
    PrimitiveType.F8E4M3FNUZ: MinifloatFormat(4, 3, 8, "fnuz"),
    PrimitiveType.F8E5M2FNUZ: MinifloatFormat(5, 2, 16, "fnuz"),
    PrimitiveType.F8E4M3B11FNUZ: MinifloatFormat(4, 3, 11, "fnuz"),
    PrimitiveType.F8E8M0FNU: MinifloatFormat(8, 0, 127, "e8m0"),
    PrimitiveType.F6E3M2FN: MinifloatFormat(3, 2, 3, "finite"),
    PrimitiveType.F6E2M3FN: MinifloatFormat(2, 3, 1, "finite"),
    PrimitiveType.F4E2M1FN: MinifloatFormat(2, 1, 1, "finite"),
}


def all_type_names():
    return list(_BY_TEXT)
