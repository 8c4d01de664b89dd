"""Complex arithmetic and functions as LLVM IR, for the elemental emitter
(``elemental_ir_emitter.py``): division, multiplication, abs, exp, log,
sqrt, rsqrt, sin, cos, tan, tanh, expm1, log1p, logistic, pow and cbrt of
c64/c128 register values (``{re, im}`` structs), with C99's special cases
where they differ from the naive formulas; and the IR helpers they share
with the real-valued emitters: intrinsic and libm calls, constants, NaN
tests, float max/min. Moduli and arguments are ``fast_math.hypot`` and
``fast_math.atan2``.
"""
from llvmlite import ir

from xla.backends.cpu import fast_math


# ----------------------------------------------------------------------------
# IR helpers
# ----------------------------------------------------------------------------

def _type_suffix(typ):
    if isinstance(typ, ir.IntType):
        return f"i{typ.width}"
    if isinstance(typ, ir.FloatType):
        return "f32"
    if isinstance(typ, ir.DoubleType):
        return "f64"
    if isinstance(typ, ir.HalfType):
        return "f16"
    raise TypeError(f"no intrinsic suffix for {typ}")


def _function(module, name, ret, args):
    """The function ``name`` of ``module``, declared if it is not there yet."""
    fn = module.globals.get(name)
    if fn is None:
        fn = ir.Function(module, ir.FunctionType(ret, list(args)), name)
    return fn


def _intrinsic(b, name, args, ret=None, suffix_types=None, extra_args=()):
    """Calls ``llvm.<name>.<suffixes>`` (overloaded on the first arg's type
    unless ``suffix_types`` says otherwise)."""
    types = suffix_types if suffix_types is not None else [args[0].type]
    full = "llvm." + name + "".join("." + _type_suffix(t) for t in types)
    ret = ret if ret is not None else args[0].type
    all_args = list(args) + list(extra_args)
    fn = _function(b.module, full, ret, [a.type for a in all_args])
    return b.call(fn, all_args)


def _libm(b, base, *args):
    """Calls libm's ``base`` (double) or ``basef`` (float) on float args."""
    typ = args[0].type
    name = base + ("f" if isinstance(typ, ir.FloatType) else "")
    fn = _function(b.module, name, typ, [a.type for a in args])
    return b.call(fn, list(args))


def _fconst(typ, value):
    return ir.Constant(typ, float(value))


def _iconst(typ, value):
    return ir.Constant(typ, int(value) & ((1 << typ.width) - 1))


def _is_nan(b, x):
    return b.fcmp_unordered("uno", x, x)


def _re(b, z):
    return b.extract_value(z, 0)


def _im(b, z):
    return b.extract_value(z, 1)


def _make_complex(b, re, im):
    typ = ir.LiteralStructType([re.type, re.type])
    z = b.insert_value(ir.Constant(typ, ir.Undefined), re, 0)
    return b.insert_value(z, im, 1)


# ----------------------------------------------------------------------------
# float building blocks (shared by real and complex emitters)
# ----------------------------------------------------------------------------

def _fmax(b, x, y):
    """NumPy's maximum: x if x is NaN or x > y, else y."""
    take_x = b.or_(_is_nan(b, x), b.fcmp_ordered(">", x, y))
    return b.select(take_x, x, y)


def _fmin(b, x, y):
    take_x = b.or_(_is_nan(b, x), b.fcmp_ordered("<", x, y))
    return b.select(take_x, x, y)


def _complex_div(b, a, c):
    """NumPy's complex division (Smith's algorithm)."""
    ar, ai, br, bi = _re(b, a), _im(b, a), _re(b, c), _im(b, c)
    typ = ar.type
    one = _fconst(typ, 1.0)
    br_abs = _intrinsic(b, "fabs", [br])
    bi_abs = _intrinsic(b, "fabs", [bi])
    real_big = b.fcmp_ordered(">=", br_abs, bi_abs)
    both_zero = b.and_(b.fcmp_ordered("==", br_abs, _fconst(typ, 0.0)),
                       b.fcmp_ordered("==", bi_abs, _fconst(typ, 0.0)))
    # |br| >= |bi|, divisor nonzero
    rat1 = b.fdiv(bi, br)
    scl1 = b.fdiv(one, b.fadd(br, b.fmul(bi, rat1)))
    r1 = b.fmul(b.fadd(ar, b.fmul(ai, rat1)), scl1)
    i1 = b.fmul(b.fsub(ai, b.fmul(ar, rat1)), scl1)
    # divisor zero
    r0 = b.fdiv(ar, br_abs)
    i0 = b.fdiv(ai, br_abs)
    # |br| < |bi| (or NaN)
    rat2 = b.fdiv(br, bi)
    scl2 = b.fdiv(one, b.fadd(bi, b.fmul(br, rat2)))
    r2 = b.fmul(b.fadd(b.fmul(ar, rat2), ai), scl2)
    i2 = b.fmul(b.fsub(b.fmul(ai, rat2), ar), scl2)
    re = b.select(real_big, b.select(both_zero, r0, r1), r2)
    im = b.select(real_big, b.select(both_zero, i0, i1), i2)
    return _make_complex(b, re, im)


def _complex_mul(b, x, y):
    ar, ai, br, bi = _re(b, x), _im(b, x), _re(b, y), _im(b, y)
    return _make_complex(b, b.fsub(b.fmul(ar, br), b.fmul(ai, bi)),
                         b.fadd(b.fmul(ar, bi), b.fmul(ai, br)))


def _complex_abs(b, z):
    return fast_math.hypot(b, _re(b, z), _im(b, z))


def _complex_exp(b, z):
    x, y = _re(b, z), _im(b, z)
    e = _intrinsic(b, "exp", [x])
    im_zero = b.fcmp_ordered("==", y, _fconst(y.type, 0.0))
    re = b.select(im_zero, e, b.fmul(e, _intrinsic(b, "cos", [y])))
    im = b.select(im_zero, y, b.fmul(e, _intrinsic(b, "sin", [y])))
    return _make_complex(b, re, im)


def _complex_log(b, z):
    """log|z| + i arg z; near |z| = 1, log|z| = log1p((a-1)(a+1) + b*b) / 2
    (a = max(|x|, |y|), b = min) keeps the real part accurate."""
    x, y = _re(b, z), _im(b, z)
    typ = x.type
    one = _fconst(typ, 1.0)
    r = fast_math.hypot(b, x, y)
    ax = _intrinsic(b, "fabs", [x])
    ay = _intrinsic(b, "fabs", [y])
    big = b.select(b.fcmp_ordered(">=", ax, ay), ax, ay)
    small = b.select(b.fcmp_ordered(">=", ax, ay), ay, ax)
    near_one = b.and_(b.fcmp_ordered(">", r, _fconst(typ, 0.7)),
                      b.fcmp_ordered("<", r, _fconst(typ, 1.4)))
    t = b.fadd(b.fmul(b.fsub(big, one), b.fadd(big, one)), b.fmul(small, small))
    re_near = b.fmul(_libm(b, "log1p", t), _fconst(typ, 0.5))
    re = b.select(near_one, re_near, _intrinsic(b, "log", [r]))
    return _make_complex(b, re, fast_math.atan2(b, y, x))


def _complex_sqrt(b, z):
    x, y = _re(b, z), _im(b, z)
    typ = x.type
    zero = _fconst(typ, 0.0)
    ax = _intrinsic(b, "fabs", [x])
    ay = _intrinsic(b, "fabs", [y])
    t = _intrinsic(b, "sqrt", [b.fmul(b.fadd(ax, fast_math.hypot(b, x, y)), _fconst(typ, 0.5))])
    two_t = b.fmul(t, _fconst(typ, 2.0))
    x_nonneg = b.fcmp_ordered(">=", x, zero)
    re = b.select(x_nonneg, t, b.fdiv(ay, two_t))
    im = b.select(x_nonneg, b.fdiv(y, two_t), _intrinsic(b, "copysign", [t, y]))
    is_zero = b.and_(b.fcmp_ordered("==", x, zero), b.fcmp_ordered("==", y, zero))
    y_inf = b.fcmp_ordered("==", ay, _fconst(typ, float("inf")))
    re = b.select(is_zero, zero, b.select(y_inf, _fconst(typ, float("inf")), re))
    im = b.select(is_zero, y, b.select(y_inf, y, im))
    return _make_complex(b, re, im)


def _complex_const(b, typ, re, im=0.0):
    return _make_complex(b, _fconst(typ, re), _fconst(typ, im))


def _complex_tanh(b, z):
    """tanh(x + iy), Kahan's form: with t = tan y, s = sinh x, rho =
    sqrt(1 + s^2), tanh z = (rho s (1 + t^2) + i t) / (1 + s^2 (1 + t^2));
    beyond |x| = 22 (where tanh x is 1 to f64 precision) the real part is
    sign(x) and the imaginary part 4 sin y cos y e^(-2|x|), so nothing
    overflows."""
    x, y = _re(b, z), _im(b, z)
    typ = x.type
    one = _fconst(typ, 1.0)
    t = _libm(b, "tan", y)
    beta = b.fadd(one, b.fmul(t, t))
    sh = _libm(b, "sinh", x)
    rho = _intrinsic(b, "sqrt", [b.fadd(one, b.fmul(sh, sh))])
    den = b.fadd(one, b.fmul(beta, b.fmul(sh, sh)))
    re = b.fdiv(b.fmul(beta, b.fmul(rho, sh)), den)
    im = b.fdiv(t, den)
    ax = _intrinsic(b, "fabs", [x])
    big = b.fcmp_ordered(">", ax, _fconst(typ, 22.0))
    tail = b.fmul(b.fmul(_fconst(typ, 4.0), b.fmul(_intrinsic(b, "sin", [y]), _intrinsic(b, "cos", [y]))),
                  _intrinsic(b, "exp", [b.fmul(ax, _fconst(typ, -2.0))]))
    re = b.select(big, _intrinsic(b, "copysign", [one, x]), re)
    im = b.select(big, tail, im)
    return _make_complex(b, re, im)


def _complex_tan(b, z):
    """tan z = -i tanh(i z)."""
    x, y = _re(b, z), _im(b, z)
    w = _complex_tanh(b, _make_complex(b, b.fneg(y), x))
    return _make_complex(b, _im(b, w), b.fneg(_re(b, w)))


def _complex_expm1(b, z):
    """e^z - 1 = (expm1(x) cos y - 2 sin^2(y/2)) + i e^x sin y (NumPy's form):
    accurate real part near 0."""
    x, y = _re(b, z), _im(b, z)
    typ = x.type
    h = _intrinsic(b, "sin", [b.fmul(y, _fconst(typ, 0.5))])
    re = b.fsub(b.fmul(fast_math.expm1(b, x), _intrinsic(b, "cos", [y])),
                b.fmul(_fconst(typ, 2.0), b.fmul(h, h)))
    im = b.fmul(fast_math.exp(b, x), _intrinsic(b, "sin", [y]))
    return _make_complex(b, re, im)


def _complex_log1p(b, z):
    """log(1 + z) = log|1 + z| + i arg(1 + z) (NumPy's form)."""
    x, y = _re(b, z), _im(b, z)
    u = b.fadd(x, _fconst(x.type, 1.0))
    return _make_complex(b, _intrinsic(b, "log", [fast_math.hypot(b, u, y)]),
                         fast_math.atan2(b, y, u))


def _complex_logistic(b, z):
    """1 / (1 + e^-z)."""
    typ = _re(b, z).type
    e = _complex_exp(b, _make_complex(b, b.fneg(_re(b, z)), b.fneg(_im(b, z))))
    den = _make_complex(b, b.fadd(_re(b, e), _fconst(typ, 1.0)), _im(b, e))
    return _complex_div(b, _complex_const(b, typ, 1.0), den)


def _complex_pow(b, z, w):
    """z^w = e^(w log z); w = 0 gives 1 and z = 0 gives 0 when w is real and
    positive, NaN otherwise (NumPy's special cases)."""
    typ = _re(b, z).type
    zero = _fconst(typ, 0.0)
    r = _complex_exp(b, _complex_mul(b, w, _complex_log(b, z)))
    w_zero = b.and_(b.fcmp_ordered("==", _re(b, w), zero), b.fcmp_ordered("==", _im(b, w), zero))
    z_zero = b.and_(b.fcmp_ordered("==", _re(b, z), zero), b.fcmp_ordered("==", _im(b, z), zero))
    w_pos = b.and_(b.fcmp_ordered(">", _re(b, w), zero), b.fcmp_ordered("==", _im(b, w), zero))
    nan = _fconst(typ, float("nan"))
    at_zero_re = b.select(w_pos, zero, nan)
    at_zero_im = b.select(w_pos, zero, nan)
    re = b.select(z_zero, at_zero_re, _re(b, r))
    im = b.select(z_zero, at_zero_im, _im(b, r))
    re = b.select(w_zero, _fconst(typ, 1.0), re)
    im = b.select(w_zero, zero, im)
    return _make_complex(b, re, im)


def _complex_cbrt(b, z):
    """The principal cube root, z^(1/3)."""
    typ = _re(b, z).type
    return _complex_pow(b, z, _complex_const(b, typ, 1.0 / 3.0))


def _complex_rsqrt(b, z):
    typ = _re(b, z).type
    one = _make_complex(b, _fconst(typ, 1.0), _fconst(typ, 0.0))
    return _complex_div(b, one, _complex_sqrt(b, z))


def _mul_keep_zero(b, a, c):
    """a * c, but a zero ``a`` gives a signed zero even when c is infinite
    (C99's csin/ccos special cases: 0 * cosh(inf) is 0, not NaN)."""
    is_zero = b.fcmp_ordered("==", a, _fconst(a.type, 0.0))
    signed_zero = b.fmul(a, _intrinsic(b, "copysign", [_fconst(a.type, 1.0), c]))
    return b.select(is_zero, signed_zero, b.fmul(a, c))


def _complex_sin(b, z):
    x, y = _re(b, z), _im(b, z)
    return _make_complex(b, _mul_keep_zero(b, _intrinsic(b, "sin", [x]), _libm(b, "cosh", y)),
                         _mul_keep_zero(b, _intrinsic(b, "cos", [x]), _libm(b, "sinh", y)))


def _complex_cos(b, z):
    x, y = _re(b, z), _im(b, z)
    return _make_complex(b, _mul_keep_zero(b, _intrinsic(b, "cos", [x]), _libm(b, "cosh", y)),
                         b.fneg(_mul_keep_zero(b, _intrinsic(b, "sin", [x]), _libm(b, "sinh", y))))
