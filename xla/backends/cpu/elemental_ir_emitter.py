"""The elemental IR emitter: one element of an elementwise op as LLVM IR.

``emit_elementwise(b, instr, operands)`` takes an llvmlite ``IRBuilder``,
the HloInstruction and the register values of one element of each operand
(see ``llvm_types``) and returns the register value of the result element.
It emits straight-line code only (no new basic blocks, no traps): integer
division by zero and INT_MIN / -1 are made safe with selects, shift
amounts are clamped before shifting, integer power is unrolled repeated
squaring. Loop emitters may therefore call it anywhere.

Semantics are the interpreter's (``xla/hlo/evaluator/elementwise.py``
and docs/interpreter.md); the notable points:

* f16/bf16 and the minifloats are computed in f32 and the result is
  rounded once to the result type (``llvm_types.round_result``), so every
  such register value this returns is exactly representable in its type;
  with --xla_allow_excess_precision (XLA's default) the result stays in
  f32 and the store rounds it (see ``llvm_types``). ``convert`` and
  ``reduce-precision`` always round.
  Sub-byte integers are iN registers: LLVM wraps at their width.
* maximum/minimum: ``isnan(a) or a > b ? a : b`` (and ``<``): NaN
  propagates, and for equal operands (+0 and -0) the second one is taken,
  as NumPy does.
* convert float -> int: truncate, saturate, NaN -> 0 (``llvm.fpto[su]i.sat``'s
  semantics, emitted as a clamp and a plain conversion: ``_float_to_int``). int64 -> bf16 rounds through f64 and f32 (like NumPy + ml_dtypes);
  f64 -> bf16 rounds to f32 with round-to-odd first (one rounding overall);
  f64 -> f16 likewise (no ``__truncdfhf2`` libcall).
* Math functions: exp, log, expm1, log1p, tanh, logistic and atan2 of real
  floats, and the modulus and argument of complex ones (abs, and inside
  log, sqrt and friends: ``fast_math.hypot`` and ``atan2``) are
  branch-free, call-free IR from ``fast_math.py`` (so loops over them
  vectorize; f32 within 1 ulp, tanh/logistic 2 ulp, see
  tests/cpu/test_fast_math.py and test_fast_math_binary.py). Otherwise LLVM intrinsics where they exist
  (sin, cos, pow, sqrt, fabs, floor, ceil, round, roundeven, copysign,
  ctpop, ctlz, fpto[su]i.sat, and exp/log inside complex functions), which
  LLVM lowers to instructions or libm calls; the others call libm directly
  (cbrt, tan, erf, and log1p inside complex log, with an ``f`` suffix for
  f32). ``jit.py`` makes the process's libm resolvable.

Complex functions and the IR helpers (intrinsic and libm calls) are in
``complex_math.py``.

One row per opcode in ``_EMITTERS`` (GUIDE: "One opcode, one row per
layer"). A combination with no row raises UnimplementedError naming the
opcode, the element type and "cpu".
"""
from llvmlite import ir

from xla.hlo.opcodes import OpcodeTable
from xla.backends.cpu import fast_math, llvm_types, minifloat
from xla.backends.cpu.complex_math import (
    _complex_abs, _complex_cbrt, _complex_cos, _complex_div, _complex_exp, _complex_expm1,
    _complex_log, _complex_log1p, _complex_logistic, _complex_mul, _complex_pow, _complex_rsqrt,
    _complex_sin, _complex_sqrt, _complex_tan, _complex_tanh, _fconst, _fmax, _fmin, _iconst, _im,
    _intrinsic, _is_nan, _libm, _make_complex, _re)
from xla.backends.cpu.llvm_types import F32, F64, I1, I32, I64
from xla.errors import UnimplementedError
from xla.hlo.types import PrimitiveType as PT


# ----------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------

def _unimplemented(instr, element_type=None, detail=""):
    et = element_type if element_type is not None else _operand_type(instr, 0)
    extra = f": {detail}" if detail else ""
    return UnimplementedError(
        f"cpu: {instr.opcode} of {et} is not supported{extra} ({instr.name})")


def _operand_type(instr, i):
    if i < len(instr.operands):
        return instr.operands[i].shape.element_type
    return instr.shape.element_type


def _result_type(instr):
    return instr.shape.element_type


def _kind(et):
    """'pred', 's', 'u', 'f' or 'c'."""
    return et.kind


def _round_f64_to_f32_odd(b, x):
    """f64 -> f32 rounding to odd: the f32 nearest x toward zero, with its
    last bit set when inexact. A later rounding to a narrower type is then
    a correct rounding of x (the interpreter's f64 -> bf16)."""
    y = b.fptrunc(x, F32)
    wide = b.fpext(y, F64)
    bits = b.bitcast(y, I32)
    finite = b.fcmp_ordered("<", _intrinsic(b, "fabs", [y]), _fconst(F32, float("inf")))
    inexact = b.fcmp_ordered("!=", wide, x)  # false for NaN
    even = b.icmp_unsigned("==", b.and_(bits, ir.Constant(I32, 1)), ir.Constant(I32, 0))
    fix = b.and_(b.and_(finite, inexact), even)
    grow = b.fcmp_ordered("<", _intrinsic(b, "fabs", [wide]), _intrinsic(b, "fabs", [x]))
    step = b.select(grow, ir.Constant(I32, 1), ir.Constant(I32, -1 & 0xFFFFFFFF))
    bits = b.select(fix, b.add(bits, step), bits)
    return b.bitcast(bits, F32)


# ----------------------------------------------------------------------------
# unary
# ----------------------------------------------------------------------------

def _float_math(real_fn, complex_fn=None):
    """An emitter for a math function of floats (and maybe complex)."""
    def emit(b, instr, x):
        kind = _kind(_operand_type(instr, 0))
        if kind == "f":
            return real_fn(b, x)
        if kind == "c" and complex_fn is not None:
            return complex_fn(b, x)
        raise _unimplemented(instr)
    return emit


def _erf(b, x):
    """f32 (and the narrow floats computed in f32): fast_math.erf_f32; f64:
    libm's erf."""
    if isinstance(x.type, ir.FloatType):
        return fast_math.erf_f32(b, x)
    return _libm(b, "erf", x)


def _logistic(b, x):
    return fast_math.logistic(b, x)


# Element types of at most 11 significant bits (bf16, f16, the f8 types),
# computed in f32 registers: their tanh takes the rational form
# (fast_math.tanh_rational, 6 f32 ulp, about 15 operations against the
# accurate form's 22), an error some 2^8 (f16) to 2^16 (bf16) times below
# the half unit in the last place the result rounds to, as XLA:CPU computes
# every f32 tanh. JAX's bf16 GELU on [4096, 1024]: 0.56 -> 0.49 ms (2-core Zen 5).
_NARROW_FLOATS = frozenset((PT.BF16, PT.F16, *llvm_types.MINIFLOAT_TYPES))


_tanh_f32_f64_complex = _float_math(fast_math.tanh, _complex_tanh)


def _tanh(b, instr, x):
    if _operand_type(instr, 0) in _NARROW_FLOATS:
        return fast_math.tanh_rational(b, x)
    return _tanh_f32_f64_complex(b, instr, x)


def _abs(b, instr, x):
    kind = _kind(_operand_type(instr, 0))
    if kind in ("pred", "u"):
        return x
    if kind == "s":
        return _intrinsic(b, "abs", [x], extra_args=[ir.Constant(I1, 0)])
    if kind == "f":
        return _intrinsic(b, "fabs", [x])
    if kind == "c":
        return _complex_abs(b, x)
    raise _unimplemented(instr)


def _negate(b, instr, x):
    kind = _kind(_operand_type(instr, 0))
    if kind == "pred":
        return x
    if kind in ("s", "u"):
        return b.neg(x)
    if kind == "f":
        return b.fneg(x)
    if kind == "c":
        return _make_complex(b, b.fneg(_re(b, x)), b.fneg(_im(b, x)))
    raise _unimplemented(instr)


def _sign(b, instr, x):
    kind = _kind(_operand_type(instr, 0))
    if kind == "pred":
        return x
    typ = x.type
    if kind == "s":
        zero = _iconst(typ, 0)
        pos = b.zext(b.icmp_signed(">", x, zero), typ)
        neg = b.zext(b.icmp_signed("<", x, zero), typ)
        return b.sub(pos, neg)
    if kind == "u":
        return b.zext(b.icmp_unsigned("!=", x, _iconst(typ, 0)), typ)
    if kind == "f":
        keep = b.fcmp_unordered("==", x, _fconst(typ, 0.0))  # zero or NaN
        return b.select(keep, x, _intrinsic(b, "copysign", [_fconst(typ, 1.0), x]))
    if kind == "c":
        mag = _complex_abs(b, x)
        ctyp = mag.type
        is_zero = b.fcmp_ordered("==", mag, _fconst(ctyp, 0.0))
        safe = b.select(is_zero, _fconst(ctyp, 1.0), mag)
        divisor = _make_complex(b, safe, _fconst(ctyp, 0.0))
        return b.select(is_zero, x, _complex_div(b, x, divisor))
    raise _unimplemented(instr)


def _rounding(intrinsic_name):
    def emit(b, instr, x):
        kind = _kind(_operand_type(instr, 0))
        if kind == "f":
            return _intrinsic(b, intrinsic_name, [x])
        if kind in ("s", "u", "pred"):
            return x  # already integral
        raise _unimplemented(instr)
    return emit


def _is_finite(b, instr, x):
    kind = _kind(_operand_type(instr, 0))
    if kind == "f":
        return b.fcmp_ordered("!=", _intrinsic(b, "fabs", [x]), _fconst(x.type, float("inf")))
    if kind in ("s", "u", "pred"):
        return ir.Constant(I1, 1)
    raise _unimplemented(instr)


def _not(b, instr, x):
    kind = _kind(_operand_type(instr, 0))
    if kind in ("pred", "s", "u"):
        return b.not_(x)
    raise _unimplemented(instr)


def _popcnt(b, instr, x):
    if _kind(_operand_type(instr, 0)) in ("s", "u"):
        return _intrinsic(b, "ctpop", [x])
    raise _unimplemented(instr)


def _clz(b, instr, x):
    if _kind(_operand_type(instr, 0)) in ("s", "u"):
        return _intrinsic(b, "ctlz", [x], extra_args=[ir.Constant(I1, 0)])
    raise _unimplemented(instr)


def _real(b, instr, x):
    kind = _kind(_operand_type(instr, 0))
    if kind == "c":
        return _re(b, x)
    if kind == "f":
        return x
    raise _unimplemented(instr)


def _imag(b, instr, x):
    kind = _kind(_operand_type(instr, 0))
    if kind == "c":
        return _im(b, x)
    if kind == "f":
        return _fconst(x.type, 0.0)
    raise _unimplemented(instr)


def _copy(b, instr, x):
    return x


def _reduce_precision(b, instr, x):
    et = _operand_type(instr, 0)
    if _kind(et) != "f":
        raise _unimplemented(instr)
    exponent_bits = int(instr.attr("exponent_bits"))
    mantissa_bits = int(instr.attr("mantissa_bits"))
    if isinstance(x.type, ir.DoubleType):
        ityp, src_m, src_e = I64, 52, 11
    else:
        ityp, src_m, src_e = I32, 23, 8

    def c(v):
        return _iconst(ityp, v)

    u = b.bitcast(x, ityp)
    if mantissa_bits < src_m:
        shift = src_m - mantissa_bits
        last_bit = 1 << shift
        bias = b.add(c((last_bit >> 1) - 1), b.lshr(b.and_(u, c(last_bit)), c(shift)))
        u = b.and_(b.add(u, bias), c(~(last_bit - 1)))
    if exponent_bits < src_e:
        sign_mask = 1 << (src_m + src_e)
        sign = b.and_(u, c(sign_mask))
        mag = b.and_(u, c(~sign_mask))
        src_bias = (1 << (src_e - 1)) - 1
        dst_bias = (1 << (exponent_bits - 1)) - 1
        max_exp = src_bias + dst_bias
        min_exp = src_bias - dst_bias + 1
        exp = b.lshr(mag, c(src_m))
        inf_bits = ((1 << src_e) - 1) << src_m
        u = b.select(b.icmp_unsigned(">", exp, c(max_exp)), b.or_(sign, c(inf_bits)),
                     b.select(b.icmp_unsigned("<", exp, c(min_exp)), sign, u))
    out = b.bitcast(u, x.type)
    nan_value = x if mantissa_bits > 0 else _fconst(x.type, float("nan"))
    return b.select(_is_nan(b, x), nan_value, out)


# ----------------------------------------------------------------------------
# binary
# ----------------------------------------------------------------------------

# f32/f64 multiplies and the adds and subtracts that consume them may fuse
# into one FMA (LLVM's ``contract``), as XLA:CPU allows everywhere (its
# target options set AllowFPOpFusion=Fast: one rounding instead of two).
# Narrow floats, computed in f32 and rounded to their type, are left alone.
_CONTRACT = ("contract",)
_CONTRACTED_TYPES = frozenset(["f32", "f64"])


def _arith(pred_op, int_op, float_op, complex_fn):
    """add, subtract, multiply: one IRBuilder method per kind of element
    (pred arithmetic is boolean: or, xor, and), complex by ``complex_fn``."""
    def emit(b, instr, x, y):
        et = _operand_type(instr, 0)
        kind = _kind(et)
        op = {"pred": pred_op, "s": int_op, "u": int_op, "f": float_op}.get(kind)
        if op is not None:
            if kind == "f" and et.text in _CONTRACTED_TYPES:
                return getattr(b, op)(x, y, flags=_CONTRACT)
            return getattr(b, op)(x, y)
        if kind == "c":
            return complex_fn(b, x, y)
        raise _unimplemented(instr)
    return emit


def _componentwise(float_op):
    def emit(b, x, y):
        op = getattr(b, float_op)
        return _make_complex(b, op(_re(b, x), _re(b, y)), op(_im(b, x), _im(b, y)))
    return emit


_add = _arith("or_", "add", "fadd", _componentwise("fadd"))
_subtract = _arith("xor", "sub", "fsub", _componentwise("fsub"))
_multiply = _arith("and_", "mul", "fmul", _complex_mul)


def _divide(b, instr, x, y):
    kind = _kind(_operand_type(instr, 0))
    typ = x.type
    if kind == "pred":
        return b.select(y, x, ir.Constant(I1, 1))
    if kind == "s":
        zero = b.icmp_signed("==", y, _iconst(typ, 0))
        overflow = b.and_(b.icmp_signed("==", x, _iconst(typ, 1 << (typ.width - 1))),
                          b.icmp_signed("==", y, _iconst(typ, -1)))
        safe = b.select(b.or_(zero, overflow), _iconst(typ, 1), y)
        return b.select(zero, _iconst(typ, -1), b.sdiv(x, safe))
    if kind == "u":
        zero = b.icmp_unsigned("==", y, _iconst(typ, 0))
        safe = b.select(zero, _iconst(typ, 1), y)
        return b.select(zero, _iconst(typ, -1), b.udiv(x, safe))
    if kind == "f":
        if _reciprocal_divide_is_exact(instr):
            return _divide_by_reciprocal(b, x, y)
        return b.fdiv(x, y)
    if kind == "c":
        return _complex_div(b, x, y)
    raise _unimplemented(instr)


# A bf16 quotient x / y of bf16 values x and y, rounded to bf16, is the same
# as x * (1 / y) rounded to bf16 (both through f32) whenever 1 / y is a
# normal f32 (2^-126 <= |y| <= 2^126): x / y is never a bf16 rounding
# midpoint, and is at least 2^-17 relatively away from one, where the
# reciprocal's product is within 2^-23 of x / y. Checked for every bf16 x
# and every such y (tests/cpu/test_bf16_reciprocal_divide.py). A divide by
# a broadcast row value (softmax's normalization) then multiplies: the
# reciprocal and the range test are loop-invariant, LLVM unswitches the
# loop on the test, and one vdivps per 16 lanes becomes a vmulps. The
# rewrite needs the operands to hold bf16 values exactly and the quotient
# to be rounded before any use (where excess precision would keep x / y in
# f32 for other ops of the kernel, x * (1 / y) could differ in its last f32
# bits): without excess precision every op rounds; with it, operands read
# from memory, constants and converts (through data movement) are exact,
# and an array root of a computation (a fusion's output, or one element
# of its root tuple) is stored. f16 has no such margin (11-bit operands).
# CPU compiles only: the GPU's kernels (grid-stride loops, not unswitched)
# would compute both the product and the quotient.
_EXACT_NARROW_SOURCES = frozenset(("parameter", "constant", "convert", "reduce-precision"))
_DATA_MOVEMENT = frozenset(("broadcast", "reshape", "bitcast", "transpose", "slice", "copy",
                            "reverse"))


def _holds_bf16_exactly(instr):
    while instr.opcode in _DATA_MOVEMENT:
        instr = instr.operands[0]
    return instr.opcode in _EXACT_NARROW_SOURCES


def _reciprocal_divide_is_exact(instr):
    if not llvm_types.cpu_target() or _result_type(instr) is not PT.BF16 or any(
            op.shape.element_type is not PT.BF16 for op in instr.operands):
        return False
    if not llvm_types.excess_precision_allowed():
        return True
    if not all(_holds_bf16_exactly(op) for op in instr.operands) or not instr.shape.dimensions:
        return False
    root = instr.parent.root_instruction if instr.parent is not None else None
    return instr is root or (root is not None and root.opcode == "tuple" and instr.users
                             and all(u is root for u in instr.users))


def _divide_by_reciprocal(b, x, y):
    ay = _intrinsic(b, "fabs", [y])
    normal = b.and_(b.fcmp_ordered(">=", ay, _fconst(y.type, 2.0 ** -126)),
                    b.fcmp_ordered("<=", ay, _fconst(y.type, 2.0 ** 126)))
    return b.select(normal, b.fmul(x, b.fdiv(_fconst(y.type, 1.0), y)), b.fdiv(x, y))


def _remainder(b, instr, x, y):
    kind = _kind(_operand_type(instr, 0))
    typ = x.type
    if kind == "pred":
        return b.and_(x, b.not_(y))
    if kind == "s":
        zero = b.icmp_signed("==", y, _iconst(typ, 0))
        overflow = b.and_(b.icmp_signed("==", x, _iconst(typ, 1 << (typ.width - 1))),
                          b.icmp_signed("==", y, _iconst(typ, -1)))
        safe = b.select(b.or_(zero, overflow), _iconst(typ, 1), y)
        return b.select(zero, x, b.srem(x, safe))
    if kind == "u":
        zero = b.icmp_unsigned("==", y, _iconst(typ, 0))
        safe = b.select(zero, _iconst(typ, 1), y)
        return b.select(zero, x, b.urem(x, safe))
    if kind == "f":
        return b.frem(x, y)
    raise _unimplemented(instr)


def _power(b, instr, x, y):
    kind = _kind(_operand_type(instr, 0))
    if kind == "pred":
        return b.or_(x, b.not_(y))
    if kind in ("s", "u"):
        typ = x.type
        one = _iconst(typ, 1)
        # Unrolled repeated squaring over every exponent bit: straight-line,
        # wraps like the interpreter's.
        exponent = y
        if kind == "s":
            negative = b.icmp_signed("<", y, _iconst(typ, 0))
            exponent = b.select(negative, _iconst(typ, 0), y)
        acc = one
        base = x
        for i in range(typ.width):
            bit = b.trunc(b.lshr(exponent, _iconst(typ, i)), I1) if i else b.trunc(exponent, I1)
            acc = b.select(bit, b.mul(acc, base), acc)
            if i + 1 < typ.width:
                base = b.mul(base, base)
        if kind == "s":
            base_is_one = b.zext(b.icmp_signed("==", x, one), typ)
            acc = b.select(negative, base_is_one, acc)
        return acc
    if kind == "f":
        return _intrinsic(b, "pow", [x, y])
    if kind == "c":
        return _complex_pow(b, x, y)
    raise _unimplemented(instr)


def _maximum(b, instr, x, y):
    kind = _kind(_operand_type(instr, 0))
    if kind == "pred":
        return b.or_(x, y)
    if kind == "s":
        return b.select(b.icmp_signed(">", x, y), x, y)
    if kind == "u":
        return b.select(b.icmp_unsigned(">", x, y), x, y)
    if kind == "f":
        return _fmax(b, x, y)
    raise _unimplemented(instr)


def _minimum(b, instr, x, y):
    kind = _kind(_operand_type(instr, 0))
    if kind == "pred":
        return b.and_(x, y)
    if kind == "s":
        return b.select(b.icmp_signed("<", x, y), x, y)
    if kind == "u":
        return b.select(b.icmp_unsigned("<", x, y), x, y)
    if kind == "f":
        return _fmin(b, x, y)
    raise _unimplemented(instr)


def _bitwise(method):
    def emit(b, instr, x, y):
        if _kind(_operand_type(instr, 0)) in ("pred", "s", "u"):
            return getattr(b, method)(x, y)
        raise _unimplemented(instr)
    return emit


def _shift(b, instr, x, y):
    kind = _kind(_operand_type(instr, 0))
    if kind not in ("s", "u"):
        raise _unimplemented(instr)
    typ = x.type
    bits = typ.width
    too_big = b.icmp_unsigned(">=", y, _iconst(typ, bits))
    if instr.opcode == "shift-right-arithmetic":
        return b.ashr(x, b.select(too_big, _iconst(typ, bits - 1), y))
    safe = b.select(too_big, _iconst(typ, 0), y)
    shifted = b.shl(x, safe) if instr.opcode == "shift-left" else b.lshr(x, safe)
    return b.select(too_big, _iconst(typ, 0), shifted)


def _mulhi(b, instr, x, y):
    """The high half of the double-width product (signed for s, unsigned for u)."""
    kind = _kind(_operand_type(instr, 0))
    if kind not in ("s", "u"):
        raise _unimplemented(instr)
    bits = x.type.width
    wide = ir.IntType(2 * bits)
    ext = b.sext if kind == "s" else b.zext
    product = b.mul(ext(x, wide), ext(y, wide))
    return b.trunc(b.lshr(product, ir.Constant(wide, bits)), x.type)


def _atan2(b, instr, x, y):
    if _kind(_operand_type(instr, 0)) == "f":
        return fast_math.atan2(b, x, y)
    raise _unimplemented(instr)


def _complex(b, instr, x, y):
    if _kind(_operand_type(instr, 0)) == "f" and _kind(_result_type(instr)) == "c":
        comp = llvm_types.register_type(_result_type(instr).complex_component_type)
        return _make_complex(b, _float_to_float(b, x, _operand_type(instr, 0), comp),
                             _float_to_float(b, y, _operand_type(instr, 1), comp))
    raise _unimplemented(instr)


_FLOAT_PREDICATES = {"EQ": "==", "NE": "!=", "LT": "<", "LE": "<=", "GT": ">", "GE": ">="}


def _total_order_key(b, x, et):
    """XLA's TOTALORDER key: sign-magnitude bits made two's complement
    (f16/bf16 order as their exact f32 values do); a minifloat's from its
    code (minifloat.total_order_key)."""
    if et in llvm_types.MINIFLOAT_TYPES:
        return minifloat.total_order_key(b, x, et)
    ityp = I64 if isinstance(x.type, ir.DoubleType) else I32
    s = b.bitcast(x, ityp)
    flipped = b.xor(s, _iconst(ityp, (1 << (ityp.width - 1)) - 1))
    return b.select(b.icmp_signed("<", s, _iconst(ityp, 0)), flipped, s)


def _compare(b, instr, x, y):
    et = _operand_type(instr, 0)
    kind = _kind(et)
    direction = instr.attr("direction")
    if direction not in _FLOAT_PREDICATES:
        raise _unimplemented(instr, detail=f"direction {direction!r}")
    op = _FLOAT_PREDICATES[direction]
    ctype = instr.attr("type")
    if kind == "f":
        if ctype == "TOTALORDER":
            return b.icmp_signed(op, _total_order_key(b, x, et), _total_order_key(b, y, et))
        if direction == "NE":
            return b.fcmp_unordered("!=", x, y)
        return b.fcmp_ordered(op, x, y)
    if kind == "pred":
        return b.icmp_unsigned(op, x, y)
    if kind in ("s", "u"):
        signed = (kind == "s") if ctype not in ("SIGNED", "UNSIGNED") else ctype == "SIGNED"
        return (b.icmp_signed if signed else b.icmp_unsigned)(op, x, y)
    if kind == "c" and direction in ("EQ", "NE"):
        re_eq = b.fcmp_ordered("==", _re(b, x), _re(b, y))
        im_eq = b.fcmp_ordered("==", _im(b, x), _im(b, y))
        eq = b.and_(re_eq, im_eq)
        return eq if direction == "EQ" else b.not_(eq)
    raise _unimplemented(instr, detail=f"direction {direction}")


# ----------------------------------------------------------------------------
# ternary
# ----------------------------------------------------------------------------

def _select(b, instr, p, x, y):
    return b.select(p, x, y)


def _clamp(b, instr, lo, x, hi):
    kind = _kind(_operand_type(instr, 1))
    if kind == "pred":
        return b.and_(b.or_(x, lo), hi)
    if kind == "s":
        m = b.select(b.icmp_signed(">", x, lo), x, lo)
        return b.select(b.icmp_signed("<", m, hi), m, hi)
    if kind == "u":
        m = b.select(b.icmp_unsigned(">", x, lo), x, lo)
        return b.select(b.icmp_unsigned("<", m, hi), m, hi)
    if kind == "f":
        return _fmin(b, _fmax(b, x, lo), hi)
    raise _unimplemented(instr, element_type=_operand_type(instr, 1))


# ----------------------------------------------------------------------------
# conversions
# ----------------------------------------------------------------------------

def _float_to_float(b, x, src, dst_typ, dst=None):
    """Register float ``x`` of element type ``src`` converted to register
    type ``dst_typ`` (``dst``: the element type, for narrow rounding)."""
    if x.type == dst_typ:
        return x  # f32 -> f16/bf16: rounded by the caller
    if isinstance(x.type, ir.FloatType) and isinstance(dst_typ, ir.DoubleType):
        return b.fpext(x, F64)
    # double -> float. To f16/bf16: round to odd in f32 here, so that the
    # caller's rounding to the narrow type is one correct rounding of x
    # (and no __truncdfhf2 libcall is needed).
    if dst in llvm_types.NARROW_FLOATS:
        return _round_f64_to_f32_odd(b, x)
    return b.fptrunc(x, dst_typ)


def _int_to_float(b, x, signed, dst, dst_typ):
    conv = b.sitofp if signed else b.uitofp
    if dst is PT.BF16 and x.type.width > 32:
        # NumPy + ml_dtypes: int64 -> f64 -> f32 -> bf16.
        return b.fptrunc(conv(x, F64), F32)
    return conv(x, dst_typ)


def _float_to_int(b, x, signed, dst_typ):
    """Float ``x`` to an integer register: truncated toward zero, saturated
    at the type's bounds, NaN to 0 (``llvm.fpto[su]i.sat``'s semantics).
    Emitted as a clamp in the float type (to the bounds, or to the largest
    float below 2^w where the bound is not a float), a plain conversion
    (to i32 for narrower types, then truncated) and selects for NaN and
    for values past an unrepresentable upper bound: x86 lowers the vector
    ``fpto[su]i.sat`` intrinsics one lane at a time (a clamp and a
    vcvttss2si per lane: f32 -> s8 of 4M elements 0.86 ms, a plain
    elementwise op 0.27)."""
    typ = x.type
    w = dst_typ.width
    mant = 53 if isinstance(typ, ir.DoubleType) else 24
    lo = -(2 ** (w - 1)) if signed else 0
    hi = 2 ** (w - 1) - 1 if signed else 2 ** w - 1
    top = 2 ** (w - 1) if signed else 2 ** w            # the first value past hi
    hi_f = hi if hi < 2 ** mant else top - top // 2 ** mant  # largest float < top
    clamped = b.select(b.fcmp_ordered("<", x, _fconst(typ, lo)), _fconst(typ, lo), x)
    clamped = b.select(b.fcmp_ordered(">", clamped, _fconst(typ, hi_f)), _fconst(typ, hi_f),
                       clamped)
    narrow = w < 32
    via = ir.IntType(32) if narrow else dst_typ
    v = (b.fptosi if signed or narrow else b.fptoui)(clamped, via)
    if narrow:
        v = b.trunc(v, dst_typ)
    if hi_f != hi:
        v = b.select(b.fcmp_ordered(">=", x, _fconst(typ, top)), ir.Constant(dst_typ, hi), v)
    return b.select(_is_nan(b, x), ir.Constant(dst_typ, 0), v)


def _convert_real(b, x, src, dst):
    """Converts a non-complex register value between non-complex types."""
    sk, dk = _kind(src), _kind(dst)
    dst_typ = llvm_types.register_type(dst)
    if src is dst:
        return x
    if dk == "pred":
        if sk == "f":
            return b.fcmp_unordered("!=", x, _fconst(x.type, 0.0))
        return b.icmp_unsigned("!=", x, _iconst(x.type, 0))
    if sk == "pred":
        if dk == "f":
            return b.uitofp(x, dst_typ)
        return b.zext(x, dst_typ)
    if sk in ("s", "u") and dk in ("s", "u"):
        if dst_typ.width == x.type.width:
            return x
        if dst_typ.width < x.type.width:
            return b.trunc(x, dst_typ)
        return (b.sext if sk == "s" else b.zext)(x, dst_typ)
    if sk in ("s", "u") and dk == "f":
        return _int_to_float(b, x, sk == "s", dst, dst_typ)
    if sk == "f" and dk in ("s", "u"):
        return _float_to_int(b, x, dk == "s", dst_typ)
    if sk == "f" and dk == "f":
        return _float_to_float(b, x, src, dst_typ, dst)
    raise UnimplementedError(f"cpu: convert from {src} to {dst} is not supported")


def _convert(b, instr, x):
    src, dst = _operand_type(instr, 0), _result_type(instr)
    if not (llvm_types.is_supported(src) and llvm_types.is_supported(dst)):
        raise _unimplemented(instr, detail=f"convert to {dst}")
    sk, dk = _kind(src), _kind(dst)
    if src is dst:
        return x
    if sk == "c" and dk == "c":
        comp_src = src.complex_component_type
        comp_dst = dst.complex_component_type
        return _make_complex(b, _convert_real(b, _re(b, x), comp_src, comp_dst),
                             _convert_real(b, _im(b, x), comp_src, comp_dst))
    if sk == "c":
        if dk == "pred":
            zero = _fconst(_re(b, x).type, 0.0)
            return b.or_(b.fcmp_unordered("!=", _re(b, x), zero),
                         b.fcmp_unordered("!=", _im(b, x), zero))
        return _convert_real(b, _re(b, x), src.complex_component_type, dst)
    if dk == "c":
        comp = dst.complex_component_type
        re = _convert_real(b, x, src, comp)
        return _make_complex(b, re, _fconst(re.type, 0.0))
    return _convert_real(b, x, src, dst)


def _to_bits(b, x, et):
    """The bits of register value ``x`` as an integer of ``et.bits`` bits."""
    if _kind(et) == "c":
        half = et.bits // 2
        wide = ir.IntType(et.bits)
        lo = b.zext(b.bitcast(_re(b, x), ir.IntType(half)), wide)
        hi = b.zext(b.bitcast(_im(b, x), ir.IntType(half)), wide)
        return b.or_(lo, b.shl(hi, ir.Constant(wide, half)))
    return llvm_types.to_bits(b, x, et)


def _from_bits(b, bits, et):
    if _kind(et) == "c":
        half = et.bits // 2
        comp = llvm_types.register_type(et.complex_component_type)
        re = b.bitcast(b.trunc(bits, ir.IntType(half)), comp)
        im = b.bitcast(b.trunc(b.lshr(bits, ir.Constant(bits.type, half)), ir.IntType(half)), comp)
        return _make_complex(b, re, im)
    return llvm_types.from_bits(b, bits, et)


def _bitcast_convert(b, instr, x):
    src, dst = _operand_type(instr, 0), _result_type(instr)
    if not (llvm_types.is_supported(src) and llvm_types.is_supported(dst)):
        raise _unimplemented(instr, detail=f"bitcast-convert to {dst}")
    if src.bits != dst.bits:
        raise _unimplemented(instr, detail=f"bitcast-convert to {dst} of another width "
                                           "is not elementwise")
    if src is dst:
        return x
    return _from_bits(b, _to_bits(b, x, src), dst)


# ----------------------------------------------------------------------------
# the table
# ----------------------------------------------------------------------------

def _exp(b, x):
    return fast_math.exp(b, x)


def _log(b, x):
    return fast_math.log(b, x)


def _sqrt(b, x):
    return _intrinsic(b, "sqrt", [x])


def _rsqrt(b, x):
    return b.fdiv(_fconst(x.type, 1.0), _intrinsic(b, "sqrt", [x]))


def _libm_unary(name):
    return lambda b, x: _libm(b, name, x)


def _intrinsic_unary(name):
    return lambda b, x: _intrinsic(b, name, [x])


_EMITTERS = OpcodeTable("cpu elemental emitter", {
    # unary
    "abs": _abs,
    "negate": _negate,
    "sign": _sign,
    "exponential": _float_math(_exp, _complex_exp),
    "exponential-minus-one": _float_math(fast_math.expm1, _complex_expm1),
    "log": _float_math(_log, _complex_log),
    "log-plus-one": _float_math(fast_math.log1p, _complex_log1p),
    "sqrt": _float_math(_sqrt, _complex_sqrt),
    "rsqrt": _float_math(_rsqrt, _complex_rsqrt),
    "cbrt": _float_math(_libm_unary("cbrt"), _complex_cbrt),
    "tanh": _tanh,
    "logistic": _float_math(_logistic, _complex_logistic),
    "sine": _float_math(_intrinsic_unary("sin"), _complex_sin),
    "cosine": _float_math(_intrinsic_unary("cos"), _complex_cos),
    "tan": _float_math(_libm_unary("tan"), _complex_tan),
    # libm's inverse and hyperbolic functions (real only here).
    **{op: _float_math(_libm_unary(fn)) for op, fn in (
        ("acos", "acos"), ("acosh", "acosh"), ("asin", "asin"), ("asinh", "asinh"),
        ("atanh", "atanh"), ("cosh", "cosh"), ("sinh", "sinh"))},
    "erf": _float_math(_erf),
    "floor": _rounding("floor"),
    "ceil": _rounding("ceil"),
    "round-nearest-afz": _rounding("round"),
    "round-nearest-even": _rounding("roundeven"),
    "is-finite": _is_finite,
    "not": _not,
    "popcnt": _popcnt,
    "count-leading-zeros": _clz,
    "real": _real,
    "imag": _imag,
    "copy": _copy,
    "convert": _convert,
    "bitcast-convert": _bitcast_convert,
    "reduce-precision": _reduce_precision,
    # binary
    "add": _add,
    "subtract": _subtract,
    "multiply": _multiply,
    "divide": _divide,
    "remainder": _remainder,
    "power": _power,
    "maximum": _maximum,
    "minimum": _minimum,
    "and": _bitwise("and_"),
    "or": _bitwise("or_"),
    "xor": _bitwise("xor"),
    "shift-left": _shift,
    "shift-right-arithmetic": _shift,
    "shift-right-logical": _shift,
    "mulhi": _mulhi,
    "compare": _compare,
    "atan2": _atan2,
    "complex": _complex,
    # ternary
    "select": _select,
    "clamp": _clamp,
})

# Ops whose f16/bf16 result is exactly representable without rounding
# (it is one of the operands, or an exact function of one).
_EXACT_FOR_NARROW = frozenset("""
abs negate sign floor ceil round-nearest-afz round-nearest-even real imag copy
maximum minimum select clamp bitcast-convert
""".split())


# Ops that round to a narrow result type whether or not excess precision is
# allowed: what the program asks for is the rounding itself (XLA:CPU keeps
# the roundings of a fused convert chain f32 -> f8e3m4 -> f8e4m3b11fnuz:
# tests/cpu/test_cpu_narrow_types_jax.py).
_ALWAYS_ROUNDED = frozenset(("convert", "reduce-precision"))


def supports(instr):
    """Whether ``emit_elementwise`` has a row for ``instr``'s opcode (the
    element types may still be unsupported)."""
    return instr.opcode in _EMITTERS


def emit_elementwise(b, instr, operands):
    """Emits one element of elementwise ``instr`` at ``b``'s position and
    returns its register value (see the module docstring)."""
    emitter = _EMITTERS.get(instr.opcode)
    if emitter is None:
        raise _unimplemented(instr, element_type=_result_type(instr))
    for i, op in enumerate(instr.operands):
        if not llvm_types.is_supported(op.shape.element_type):
            raise _unimplemented(instr, element_type=op.shape.element_type)
    result_type = _result_type(instr)
    if not llvm_types.is_supported(result_type):
        raise _unimplemented(instr, element_type=result_type)
    if len(operands) != len(instr.operands):
        raise ValueError(f"{instr.name}: {len(operands)} operand values for "
                         f"{len(instr.operands)} operands")
    value = emitter(b, instr, *operands)
    if result_type in llvm_types.NARROW_FLOATS and instr.opcode not in _EXACT_FOR_NARROW:
        if instr.opcode in _ALWAYS_ROUNDED:
            value = llvm_types.round_to_type(b, value, result_type)
        else:
            value = llvm_types.round_result(b, value, result_type)
    return value
