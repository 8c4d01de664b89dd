"""Branch-free, call-free LLVM IR for exp, log, expm1, log1p, tanh, logistic,
hypot, atan2 and (f32) erf.

libm calls (and the ``llvm.exp``/``llvm.log`` intrinsics, which LLVM lowers
to them) are opaque to the loop vectorizer, so a loop applying them runs one
element at a time (GUIDE, "Code generation"). The functions here emit only
arithmetic, integer bit manipulation, ``select`` and the ``llvm.fmuladd``
/ ``llvm.copysign`` intrinsics, which vectorize (``<8 x float>`` with AVX2);
``fmuladd`` is fused where the target has FMA and is a multiply and an add
otherwise, and the error bounds below hold either way.

Each function takes an llvmlite ``IRBuilder`` and a ``float`` or ``double``
register value and returns one of the same type. f16/bf16 are computed in
f32 by the caller and rounded once.

Algorithms (polynomial coefficients: Taylor coefficients, or our own
near-minimax fit for f32 exp; nothing is copied from a libm):

* exp(x): x clamped to [lo, hi] (just past the underflow-to-zero and
  overflow-to-inf points, NaN kept); n = round(x / ln 2) with the
  1.5 * 2^p "magic number" addition; Cody-Waite reduction
  r = (x - n * ln2_hi) - n * ln2_lo with ln2_hi short enough that
  n * ln2_hi and the subtraction are exact, so |r| <= ln2 / 2 + tiny;
  e^r - 1 = r + r^2 * Q(r) (f32: degree-5 Q fitted by iteratively
  reweighted least squares to the relative error of both e^r and e^r - 1,
  approximation error <= 0.04 ulp; f64: Taylor to r^13, error <= 0.13 ulp);
  result (1 + (e^r - 1)) * 2^n1 * 2^n2 with n1 = n >> 1, n2 = n - n1, so
  that 2^n1 and 2^n2 are normal and the only rounding into a denormal
  result is the last multiplication (with AVX-512F, llvm.ldexp: one
  vscalefps for the nine vector operations, the same single rounding, so
  the same bits). Overflow to inf, underflow to 0 and
  exp(-inf) = 0 fall out of the clamp; NaN propagates through every step.
* log(x): denormals scaled by 2^p first; exponent k and mantissa m in
  [sqrt(1/2), sqrt 2) from the bits (subtracting the bits of sqrt(1/2)
  carries into the exponent exactly when m >= sqrt 2); f = m - 1 (exact);
  log(1 + f) = 2 atanh(s), s = f / (2 + f), written as
  f - (f^2/2 - s * (f^2/2 + R(s^2))) with R(z) = sum 2 z^j / (2j + 1)
  (Taylor, j <= 4 for f32, j <= 10 for f64), so the rounding errors of s
  and R only touch a term 30x smaller than the result; plus
  k * ln2_hi + k * ln2_lo. Specials by select: log(+-0) = -inf,
  log(x < 0) = NaN, log(inf) = inf, NaN -> NaN.
* expm1(x): the same reduction; for n = 0 the result is the polynomial
  itself (relative accuracy near 0); otherwise 2^n * (e^r - 1) + (2^n - 1)
  (both terms exact but the last addition) while 2^n is far below the
  overflow range, and the exp path above for large n.
* log1p(x): u = 1 + x with its exact rounding error c (TwoSum); log(u)
  with c / u added to the small terms of the log sum. Specials: -1 -> -inf,
  < -1 -> NaN, inf -> inf, +-0 and NaN -> x.
* tanh(x), f32: m / (m + 2) with m = expm1(2 min(|x|, 10)), an expm1
  specialized to [0, 20], and x's sign; f64: -copysign(e / (2 + e), x)
  with e = expm1(-2|x|) in (-1, 0]. No cancellation anywhere.
* logistic(x) = (x >= 0 ? 1 : e) / (1 + e) with e = exp(-|x|).

Measured max errors (tests/cpu/test_fast_math.py: ~1.6M inputs per type
over the whole range incl. denormals and specials, against NumPy in float64
/ long double rounded to the type), in ulps:

    exp 1 / 1, log 1 / 1, expm1 1 / 2, log1p 1 / 1, tanh 2 / 2,
    logistic 2 / 2   (f32 / f64)
"""
import contextlib
import math
from decimal import Decimal

import numpy as np
from llvmlite import ir

from xla.backends.cpu import llvm_types

F32 = ir.FloatType()
F64 = ir.DoubleType()
I32 = ir.IntType(32)
I64 = ir.IntType(64)


class _Consts:
    """Per-type constants."""

    def __init__(self, typ):
        self.typ = typ
        if isinstance(typ, ir.DoubleType):
            self.ityp, self.mant, self.bias = I64, 52, 1023
            # exp(x) overflows for x > 709.78, is 0 (rounded) for x < -745.13.
            self.exp_lo, self.exp_hi = -746.0, 710.0
            self.expm1_lo = -40.0  # e^-40 < 2^-54: expm1 rounds to -1 below
            # 32-bit ln2_hi: n * ln2_hi exact for |n| < 2^21.
            self.ln2_hi = _truncate_f64(math.log(2), 32)
            self.ln2_lo = _ln2_lo(self.ln2_hi)
            # e^r - 1 = r + r^2 Q(r): Taylor, Q(r) = sum r^k / (k + 2)!
            self.exp_q = [1.0 / math.factorial(k + 2) for k in range(12)]
            # log: R(z) = sum_{j>=1} 2 z^j / (2j + 1)
            self.log_r = [2.0 / (2 * j + 1) for j in range(1, 11)]
        else:
            self.ityp, self.mant, self.bias = I32, 23, 127
            # exp(x) overflows for x > 88.7228, is 0 (rounded) for x < -103.973.
            self.exp_lo, self.exp_hi = -104.0, 89.0
            self.expm1_lo = -25.0  # e^-25 < 2^-25
            # 16-bit ln2_hi: n * ln2_hi exact for |n| < 2^8 (|n| <= 151 here).
            self.ln2_hi = _truncate_f32(math.log(2), 16)
            self.ln2_lo = float(np.float32(_ln2_lo(self.ln2_hi)))
            # Q fitted to (e^r - 1 - r) / r^2 on [-ln2/2, ln2/2], weight r^2/|e^r - 1|
            # (the relative error of expm1; that of exp is then smaller still).
            self.exp_q = [0.5, 0.1666666567325592, 0.041666362434625626, 0.008333389647305012,
                          0.0013940627686679363, 0.00019845877250190824]
            self.log_r = [2.0 / (2 * j + 1) for j in range(1, 5)]
        self.inv_ln2 = 1.0 / math.log(2)
        self.magic = 1.5 * 2.0 ** self.mant  # adding it rounds to an integer
        self.sqrt_half_bits = _bits(math.sqrt(0.5), typ)
        self.exp_mask = (1 << self.mant) - 1
        self.min_normal = 2.0 ** (1 - self.bias)


def _truncate_f32(v, bits):
    i = int(np.float32(v).view(np.uint32))
    return float(np.uint32(i & ~((1 << (24 - bits)) - 1)).view(np.float32))


def _truncate_f64(v, bits):
    i = int(np.float64(v).view(np.uint64))
    return float(np.uint64(i & ~((1 << (53 - bits)) - 1)).view(np.float64))


def _ln2_lo(hi):
    # ln 2 to 36 digits, so that hi + lo is ln 2 to ~2^-48 relative.
    ln2 = Decimal("0.693147180559945309417232121458176568")
    return float(ln2 - Decimal(hi))


def _bits(v, typ):
    if isinstance(typ, ir.DoubleType):
        return int(np.float64(v).view(np.uint64))
    return int(np.float32(v).view(np.uint32))


_CONSTS = {}


def _consts(typ):
    key = str(typ)
    c = _CONSTS.get(key)
    if c is None:
        c = _CONSTS[key] = _Consts(typ)
    return c


def _f(typ, v):
    return ir.Constant(typ, float(v))


def _i(typ, v):
    return ir.Constant(typ, int(v) & ((1 << typ.width) - 1))


def _intrinsic(b, name, args):
    typ = args[0].type
    suffix = "f64" if isinstance(typ, ir.DoubleType) else "f32"
    full = f"llvm.{name}.{suffix}"
    fn = b.module.globals.get(full)
    if fn is None:
        fn = ir.Function(b.module, ir.FunctionType(typ, [a.type for a in args]), full)
    return b.call(fn, list(args))


def _fma(b, x, y, z):
    """x * y + z, fused where the target has FMA (``llvm.fmuladd``)."""
    return _intrinsic(b, "fmuladd", [x, y, z])


def _horner(b, x, coeffs):
    """coeffs[0] + x * (coeffs[1] + x * (...))."""
    typ = x.type
    acc = _f(typ, coeffs[-1])
    for c in reversed(coeffs[:-1]):
        acc = _fma(b, acc, x, _f(typ, c))
    return acc


def _clamp_keep_nan(b, x, lo, hi):
    typ = x.type
    x = b.select(b.fcmp_ordered("<", x, _f(typ, lo)), _f(typ, lo), x)
    return b.select(b.fcmp_ordered(">", x, _f(typ, hi)), _f(typ, hi), x)


def _pow2(b, n, c):
    """2^n for an integer register n with a normal result."""
    biased = b.add(n, _i(c.ityp, c.bias))
    return b.bitcast(b.shl(biased, _i(c.ityp, c.mant)), c.typ)


def _reduce(b, x, c):
    """(n as float, n as int, r, e^r - 1) for x already clamped."""
    typ = x.type
    k = _fma(b, x, _f(typ, c.inv_ln2), _f(typ, c.magic))
    nf = b.fsub(k, _f(typ, c.magic))
    ni = b.sub(b.bitcast(k, c.ityp), _i(c.ityp, _bits(c.magic, typ)))
    neg_n = b.fneg(nf)
    r = _fma(b, neg_n, _f(typ, c.ln2_hi), x)  # exact
    r = _fma(b, neg_n, _f(typ, c.ln2_lo), r)
    r2 = b.fmul(r, r)
    pm1 = _fma(b, r2, _horner(b, r, c.exp_q), r)
    return nf, ni, r, pm1


def _scale(b, p, ni, c):
    """p * 2^n for n in the clamped range, rounded once."""
    if llvm_types.has_avx512():
        # One vscalefps/vscalefpd (what llvm.ldexp becomes with AVX-512F)
        # where the two multiplications below are nine vector operations:
        # the same value, p * 2^n rounded once (both are exact but for the
        # rounding into a denormal result). Elsewhere ldexp would be a
        # libm call, opaque to the loop vectorizer.
        n32 = ni if ni.type.width == 32 else b.trunc(ni, I32)
        name = f"llvm.ldexp.{'f64' if isinstance(p.type, ir.DoubleType) else 'f32'}.i32"
        fn = b.module.globals.get(name) or ir.Function(
            b.module, ir.FunctionType(p.type, [p.type, I32]), name)
        return b.call(fn, [p, n32])
    n1 = b.ashr(ni, _i(c.ityp, 1))
    n2 = b.sub(ni, n1)
    return b.fmul(b.fmul(p, _pow2(b, n1, c)), _pow2(b, n2, c))


def exp(b, x):
    c = _consts(x.type)
    # Below exp_lo the result rounds to 0. Those lanes (a softmax's masked
    # -1e9 or -inf) are computed at 0 and replaced, so they never run the
    # subnormal arithmetic of the clamped point, which costs microcode
    # assists: a causal-masked softmax row sum ran 2x slower.
    zero = _f(x.type, 0.0)
    underflow = b.fcmp_ordered("<", x, _f(x.type, c.exp_lo))
    xc = _clamp_keep_nan(b, b.select(underflow, zero, x), c.exp_lo, c.exp_hi)
    _, ni, _, pm1 = _reduce(b, xc, c)
    return b.select(underflow, zero, _scale(b, b.fadd(pm1, _f(x.type, 1.0)), ni, c))


def expm1(b, x):
    typ = x.type
    c = _consts(typ)
    xc = _clamp_keep_nan(b, x, c.expm1_lo, c.exp_hi)
    _, ni, _, pm1 = _reduce(b, xc, c)
    one = _f(typ, 1.0)
    # Moderate n: 2^n (e^r - 1) + (2^n - 1); n is in [-58, 1024] after the
    # clamp, and 2^n is formed for small n only (the select picks the other
    # path otherwise).
    small_n = b.icmp_signed("<=", ni, _i(c.ityp, c.mant + 1))  # 2^n - 1 exact
    safe_n = b.select(small_n, ni, _i(c.ityp, 0))
    t = _pow2(b, safe_n, c)
    moderate = _fma(b, t, pm1, b.fsub(t, one))
    # Large n: 1 is below a quarter ulp of e^x; one more rounding.
    large = b.fsub(_scale(b, b.fadd(pm1, one), ni, c), one)
    res = b.select(small_n, moderate, large)
    # expm1(+-0) = +-0 (the sign of zero).
    return b.select(b.fcmp_ordered("==", x, _f(typ, 0.0)), x, res)


def _log_core(b, x, corr):
    """log(x) for finite x > 0, plus the small term ``corr`` (None: 0)."""
    typ = x.type
    c = _consts(typ)
    ityp = c.ityp
    sub = b.fcmp_ordered("<", x, _f(typ, c.min_normal))
    xs = b.select(sub, b.fmul(x, _f(typ, 2.0 ** c.mant)), x)
    bits = b.bitcast(xs, ityp)
    ix = b.sub(bits, _i(ityp, c.sqrt_half_bits))
    # Exponent of x relative to m in [sqrt(1/2), sqrt 2).
    e = b.sub(b.ashr(ix, _i(ityp, c.mant)), b.select(sub, _i(ityp, c.mant), _i(ityp, 0)))
    m = b.bitcast(b.add(b.and_(ix, _i(ityp, c.exp_mask)), _i(ityp, c.sqrt_half_bits)), typ)
    f = b.fsub(m, _f(typ, 1.0))
    s = b.fdiv(f, b.fadd(f, _f(typ, 2.0)))
    z = b.fmul(s, s)
    big_r = b.fmul(z, _horner(b, z, c.log_r))
    hfsq = b.fmul(b.fmul(f, f), _f(typ, 0.5))
    k = b.sitofp(e, typ)
    lo = b.fmul(k, _f(typ, c.ln2_lo))
    if corr is not None:
        lo = b.fadd(lo, corr)
    t = _fma(b, s, b.fadd(hfsq, big_r), lo)
    v = b.fsub(f, b.fsub(hfsq, t))
    return _fma(b, k, _f(typ, c.ln2_hi), v)


def _log_specials(b, x, res, at_zero):
    """res for x > 0 finite; x == at_zero -> -inf; below it NaN; inf -> inf;
    NaN -> NaN."""
    typ = x.type
    inf = _f(typ, math.inf)
    res = b.select(b.fcmp_ordered("==", x, inf), inf, res)
    res = b.select(b.fcmp_ordered("<", x, _f(typ, at_zero)), _f(typ, math.nan), res)
    res = b.select(b.fcmp_ordered("==", x, _f(typ, at_zero)), _f(typ, -math.inf), res)
    return b.select(b.fcmp_unordered("uno", x, x), x, res)


def log(b, x):
    return _log_specials(b, x, _log_core(b, x, None), 0.0)


def log1p(b, x):
    typ = x.type
    one = _f(typ, 1.0)
    u = b.fadd(x, one)
    # TwoSum: u + err == x + 1 exactly.
    bp = b.fsub(u, x)
    ap = b.fsub(u, bp)
    err = b.fadd(b.fsub(x, ap), b.fsub(one, bp))
    # u <= 0 only where the specials below take over; keep the core finite.
    safe_u = b.select(b.fcmp_ordered(">", u, _f(typ, 0.0)), u, one)
    res = _log_core(b, safe_u, b.fdiv(err, safe_u))
    res = _log_specials(b, x, res, -1.0)
    return b.select(b.fcmp_ordered("==", x, _f(typ, 0.0)), x, res)


def tanh(b, x):
    if _approximate and isinstance(x.type, ir.FloatType):
        return tanh_rational(b, x)
    return _tanh_accurate(b, x)


def _tanh_accurate(b, x):
    typ = x.type
    ax = _intrinsic(b, "fabs", [x])
    if isinstance(typ, ir.FloatType):
        # tanh|x| = m / (m + 2) with m = expm1(2|x|) >= 0 (no cancellation),
        # |x| clamped to 10 (tanh rounds to 1 from 9.01 on), so 2|x| <= 20:
        # m = 2^n (e^r - 1) + (2^n - 1) with n <= 29 needs neither the
        # general expm1's lower clamp nor its large-n path (for n > 24,
        # 2^n - 1 rounds, far below an ulp of the result). About 22
        # operations, 2 ulp.
        c = _consts(typ)
        ten = _f(typ, 10.0)
        y = b.fmul(b.select(b.fcmp_ordered(">", ax, ten), ten, ax), _f(typ, 2.0))
        _, ni, _, pm1 = _reduce(b, y, c)
        t = _pow2(b, ni, c)
        m = _fma(b, t, pm1, b.fsub(t, _f(typ, 1.0)))
        th = b.fdiv(m, b.fadd(m, _f(typ, 2.0)))
        # th >= 0 (or NaN): x's sign bit or-ed in (two ops; copysign is three).
        sign = b.and_(b.bitcast(x, c.ityp), _i(c.ityp, 1 << 31))
        return b.bitcast(b.or_(b.bitcast(th, c.ityp), sign), typ)
    e = expm1(b, b.fmul(ax, _f(typ, -2.0)))
    t = b.fdiv(e, b.fadd(e, _f(typ, 2.0)))
    return _intrinsic(b, "copysign", [t, x])  # |t| with x's sign


def hypot(b, x, y):
    """sqrt(x^2 + y^2) without intermediate overflow or underflow, with
    C99's special case hypot(+-inf, anything, NaN included) = inf.

    f32: in f64, where the squares are exact and their sum cannot overflow,
    rounded once to f64 and once to f32 (glibc's hypotf does the same).
    f64: the larger magnitude a and the smaller c scaled by a power of two
    into [2^-450, 2^500] (exact), h = sqrt(a^2 + c^2), then one Newton step
    on the exact residual h^2 - a^2 - c^2 (its three parts from FMAs;
    h_sq - a_sq is exact because a >= c): Borges' correction, within an ulp
    of the true value. The libm call these replace is opaque to the loop
    vectorizer (a complex abs ran one element at a time)."""
    typ = x.type
    ax = _intrinsic(b, "fabs", [x])
    ay = _intrinsic(b, "fabs", [y])
    inf = _f(typ, math.inf)
    either_inf = b.or_(b.fcmp_ordered("==", ax, inf), b.fcmp_ordered("==", ay, inf))
    if isinstance(typ, ir.FloatType):
        xd, yd = b.fpext(ax, F64), b.fpext(ay, F64)
        s = b.fadd(b.fmul(xd, xd), b.fmul(yd, yd))
        r = b.fptrunc(_intrinsic(b, "sqrt", [s]), typ)
        return b.select(either_inf, inf, r)
    x_big = b.fcmp_ordered(">=", ax, ay)
    a = b.select(x_big, ax, ay)
    c = b.select(x_big, ay, ax)
    huge = b.fcmp_ordered(">", a, _f(typ, 2.0 ** 500))
    tiny = b.fcmp_ordered("<", a, _f(typ, 2.0 ** -450))
    one = _f(typ, 1.0)
    down = b.select(huge, _f(typ, 2.0 ** -600), b.select(tiny, _f(typ, 2.0 ** 600), one))
    up = b.select(huge, _f(typ, 2.0 ** 600), b.select(tiny, _f(typ, 2.0 ** -600), one))
    a, c = b.fmul(a, down), b.fmul(c, down)
    h = _intrinsic(b, "sqrt", [_exact_fma(b, a, a, b.fmul(c, c))])
    h_sq, a_sq = b.fmul(h, h), b.fmul(a, a)
    residual = b.fsub(
        b.fadd(_exact_fma(b, b.fneg(c), c, b.fsub(h_sq, a_sq)),
               _exact_fma(b, h, h, b.fneg(h_sq))),
        _exact_fma(b, a, a, b.fneg(a_sq)))
    corrected = b.fsub(h, b.fdiv(residual, b.fmul(h, _f(typ, 2.0))))
    r = b.select(b.fcmp_ordered("==", h, _f(typ, 0.0)), h, corrected)
    return b.select(either_inf, inf, b.fmul(r, up))



# atan(u) = u + u z P(z), z = u^2, on |u| <= 7/16: P our own near-minimax
# fit (Lawson's iteratively reweighted least squares in 40-digit
# arithmetic) to the relative error of atan(u); approximation error
# 4.6e-11 (f32, degree 5) and 1.7e-19 (f64, degree 11).
_PI = Decimal("3.141592653589793238462643383279502884197")
_ATAN_HALF = Decimal("0.4636476090008061162142562314612144020285")
_ATAN_P = {
    "float": [-0.33333331813733386, 0.1999984281467978, -0.14280266135350653,
              0.1102327744831677, -0.08357853631110836, 0.04502266838615931],
    "double": [-0.33333333333333315, 0.1999999999999298, -0.14285714284834125,
               0.11111111055672471, -0.09090907039608938, 0.07692259203516187,
               -0.06665898516261971, 0.058739856667829854, -0.051999239108787204,
               0.04432416602631569, -0.03190511681913741, 0.013683081522173497],
}


def atan2(b, y, x):
    """The angle of (x, y) in [-pi, pi], with C99's special cases (signed
    zeros and infinities: atan2(+-0, -0) = +-pi, atan2(+-inf, -inf) =
    +-3pi/4, ...; NaN in, NaN out).

    The smaller magnitude over the larger, t in [0, 1], reduced as fdlibm's
    atan does: t itself up to 7/16; atan(1/2) + atan((2t - 1) / (2 + t))
    up to 11/16; pi/4 + atan((t - 1) / (t + 1)) above (2t - 1 and t - 1 are
    exact there), so the reduced argument is at most 7/16 and no sum
    cancels; atan of it by the polynomial above; then pi/2 - r where
    |y| > |x|, pi - r where x is negative (its sign bit, so -0 counts), and
    y's sign. Every constant added is a head and a tail, the tail added to
    the small term first. libm's atan2 call is opaque to the loop
    vectorizer (jnp.angle of c64[4M] took 154 ms)."""
    typ = x.type
    is_double = isinstance(typ, ir.DoubleType)
    c = _consts(typ)
    zero, one, two = _f(typ, 0.0), _f(typ, 1.0), _f(typ, 2.0)
    ax = _intrinsic(b, "fabs", [x])
    ay = _intrinsic(b, "fabs", [y])
    swap = b.fcmp_ordered(">", ay, ax)
    t = b.fdiv(b.select(swap, ax, ay), b.select(swap, ay, ax))
    mid = b.fcmp_ordered(">", t, _f(typ, 7 / 16))
    high = b.fcmp_ordered(">", t, _f(typ, 11 / 16))
    u_mid = b.fdiv(b.fsub(b.fmul(t, two), one), b.fadd(t, two))
    u_high = b.fdiv(b.fsub(t, one), b.fadd(t, one))
    u = b.select(high, u_high, b.select(mid, u_mid, t))
    z = b.fmul(u, u)
    p = _fma(b, b.fmul(u, z), _horner(b, z, _ATAN_P["double" if is_double else "float"]), u)

    # The result is K + p or K - p, K a constant of the region, of |y| > |x|
    # (pi/2 - r) and of x's sign (pi - r): K's head and tail are chosen,
    # the tail added to +-p first, so only p, that sum and the last
    # addition round.
    x_neg = b.icmp_signed("<", b.bitcast(x, c.ityp), _i(c.ityp, 0))

    def head_tail(v):
        """(v rounded to the type, the rest rounded to the type)."""
        head = float(np.float64(float(v))) if is_double else float(np.float32(float(v)))
        return _f(typ, head), _f(typ, float(v - Decimal(head)))

    def pick(values):
        """The constant of each (x negative, swapped, region) as one value."""
        by_neg = []
        for neg in (False, True):
            by_swap = []
            for sw in (False, True):
                low, middle, top = (values(neg, sw, region) for region in range(3))
                by_swap.append(b.select(high, top, b.select(mid, middle, low)))
            by_neg.append(b.select(swap, by_swap[1], by_swap[0]))
        return b.select(x_neg, by_neg[1], by_neg[0])

    bases = (Decimal(0), _ATAN_HALF, _PI / 4)

    def k(neg, sw, region):
        v = bases[region]
        if sw:
            v = _PI / 2 - v
        if neg:
            v = _PI - v
        return v

    k_hi = pick(lambda *a: head_tail(k(*a))[0])
    k_lo = pick(lambda *a: head_tail(k(*a))[1])
    flip = b.xor(swap, x_neg)
    r = b.fadd(k_hi, b.select(flip, b.fsub(k_lo, p), b.fadd(k_lo, p)))
    pi_hi = head_tail(_PI)[0]
    # Both zero (0/0) or both infinite (inf/inf): the quotient is NaN.
    both_zero = b.and_(b.fcmp_ordered("==", ax, zero), b.fcmp_ordered("==", ay, zero))
    inf = _f(typ, math.inf)
    both_inf = b.and_(b.fcmp_ordered("==", ax, inf), b.fcmp_ordered("==", ay, inf))
    r = b.select(both_zero, b.select(x_neg, pi_hi, zero), r)
    r = b.select(both_inf, b.select(x_neg, _f(typ, 3 * math.pi / 4), _f(typ, math.pi / 4)), r)
    return _intrinsic(b, "copysign", [r, y])


# erf of f32, our own near-minimax fits (Lawson's iteratively reweighted
# least squares in 40-digit arithmetic), relative errors: erf(x) / x =
# P(x^2) on |x| <= 1.5 (8.1e-10); erfc(x) e^(x^2) = Q(1/x) on [1.5, 4]
# (1.6e-9).
_ERF_P = [1.1283791661764424, -0.3761263257529569, 0.11283718737215015, -0.026862889322104344,
          0.005216481916422951, -0.0008450582886822403, 0.00011288871819564051,
          -1.1272975936605062e-05, 6.144708441309492e-07]
_ERFC_Q = [6.644642263782015e-05, 0.5627667123139971, 0.012855022236057076, -0.3438315892261719,
           0.15347641689840902, 0.3381283435051828, -0.5782035919887132, 0.3801407418691522,
           -0.0980835044080814]


def erf_f32(b, x):
    """erf of an f32, computed in f64 and rounded once: x P(x^2) below 1.5
    in magnitude (relative accuracy down to the denormals); 1 - e^(-x^2)
    Q(1/|x|) with x's sign up to 4; +-1 beyond (erfc(4) = 1.5e-8 is below
    half an ulp of 1); NaN in, NaN out. In f32 arithmetic the cancellations
    inside P near 1.5 and inside Q cost 2 ulps; in f64 the result is the
    correctly rounded one but for ties of the fits' error
    (tests/cpu/test_fast_math.py). libm's erff call is opaque to the loop
    vectorizer (erf of f32[4M] 4.7 ms, XLA:CPU 3.7)."""
    xd = b.fpext(x, F64)
    ax = _intrinsic(b, "fabs", [xd])
    one = _f(F64, 1.0)
    small = b.fmul(xd, _horner(b, b.fmul(xd, xd), _ERF_P))
    big = b.fsub(one, b.fmul(exp(b, b.fneg(b.fmul(ax, ax))),
                             _horner(b, b.fdiv(one, ax), _ERFC_Q)))
    big = b.select(b.fcmp_ordered(">=", ax, _f(F64, 4.0)), one, big)
    r = b.select(b.fcmp_ordered("<", ax, _f(F64, 1.5)), small, _intrinsic(b, "copysign", [big, xd]))
    return b.fptrunc(r, x.type)

def _exact_fma(b, x, y, z):
    """x * y + z rounded once (``llvm.fma``: the residuals above need the
    exact product, which ``fmuladd`` does not promise)."""
    return _intrinsic(b, "fma", [x, y, z])


# --xla_cpu_enable_fast_math: f32 tanh as one rational function (as XLA:CPU
# computes it by default), x P(x^2) / Q(x^2) on |x| <= 9.02 (beyond, tanh
# rounds to +-1), result clamped to [-1, 1]; a weighted least-squares fit
# for the relative error in the scaled variable, coefficients rounded to
# f32. 6 ulp at most (tests/cpu/test_fast_math.py), about 15 operations
# against 22 for the accurate form (2 ulp). XLA's own measures 5 ulp.
_TANH_RATIONAL_P = [1.0, 0.13083162903785706, 0.003103007562458515, 1.1144319614686538e-05,
                    -2.0184216964480584e-08, 5.257892732313252e-11, -8.436319405644849e-14]
_TANH_RATIONAL_Q = [1.0, 0.4641648828983307, 0.024491406977176666, 0.00025447600637562573]
_TANH_RATIONAL_CLAMP = 9.02
_approximate = False


@contextlib.contextmanager
def approximations(enabled=True):
    """While active, ``tanh`` of f32 emits ``tanh_rational`` (the compiler
    enters it for --xla_cpu_enable_fast_math)."""
    global _approximate
    saved, _approximate = _approximate, bool(enabled)
    try:
        yield
    finally:
        _approximate = saved


def tanh_rational(b, x):
    """The fast-math f32 tanh (see above); f64 gets the accurate ``tanh``."""
    typ = x.type
    if not isinstance(typ, ir.FloatType):
        return _tanh_accurate(b, x)
    xc = _clamp_keep_nan(b, x, -_TANH_RATIONAL_CLAMP, _TANH_RATIONAL_CLAMP)
    s = b.fmul(xc, xc)
    r = b.fdiv(b.fmul(xc, _horner(b, s, _TANH_RATIONAL_P)), _horner(b, s, _TANH_RATIONAL_Q))
    return _clamp_keep_nan(b, r, -1.0, 1.0)


def logistic(b, x):
    typ = x.type
    one = _f(typ, 1.0)
    e = exp(b, b.fneg(_intrinsic(b, "fabs", [x])))
    num = b.select(b.fcmp_ordered(">=", x, _f(typ, 0.0)), one, e)
    return b.fdiv(num, b.fadd(one, e))
