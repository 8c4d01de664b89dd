"""NumPy ufuncs on traced arrays: one row per ufunc.

``dispatch`` is what ``Tracer.__array_ufunc__`` calls. It picks the loop
dtypes exactly as NumPy would (``ufunc.resolve_dtypes``, with Python scalars
weak), converts and broadcasts the inputs, and calls the ufunc's row in
``UFUNCS``: a function of the operands (Tracers, all of the loop's input
dtype and the broadcast shape) that returns the result, written with
``xla.lax`` as ``jax.numpy``'s ufuncs are: NumPy's promotion happens here,
lax's functions see one dtype. Rows written in terms of other rows
(``square``, ``logaddexp``) say what NumPy's definition is.

``reduce`` and ``accumulate`` of the ufuncs that have an HLO reduction
(``np.add.reduce`` is ``np.sum``) go to ``xla.frontend.numpy``.
"""
import functools
import sys

import numpy as np

from xla.frontend import lax, tracing
from xla.frontend.tracing import Tracer, as_tracer, broadcast_arrays, convert, tracing_error

UFUNCS = {}


def _row(*ufuncs):
    def register(fn):
        for u in ufuncs:
            UFUNCS[u] = fn
        return fn
    return register


def _const(like, value):
    """``value`` in the shape and dtype of Tracer ``like``."""
    return lax.full_like(like, value)


# ----- one lax primitive each ---------------------------------------------------------

for _u, _f in ((np.negative, lax.neg), (np.exp, lax.exp), (np.log, lax.log), (np.sqrt, lax.sqrt),
               (np.sin, lax.sin), (np.cos, lax.cos), (np.cbrt, lax.cbrt), (np.invert, lax.bitwise_not)):
    UFUNCS[_u] = _f


def _bool_aware(f, on_bool):
    """NumPy's + and * on booleans are 'or' and 'and' (lax's add and mul
    do not take bools)."""
    return lambda x, y: (on_bool if x.dtype == np.bool_ else f)(x, y)


UFUNCS[np.add] = _bool_aware(lax.add, lax.bitwise_or)
UFUNCS[np.multiply] = _bool_aware(lax.mul, lax.bitwise_and)

for _u, _f in ((np.subtract, lax.sub), (np.true_divide, lax.div), (np.arctan2, lax.atan2),
               (np.bitwise_and, lax.bitwise_and), (np.bitwise_or, lax.bitwise_or),
               (np.bitwise_xor, lax.bitwise_xor), (np.left_shift, lax.shift_left),
               (np.equal, lax.eq), (np.not_equal, lax.ne)):
    UFUNCS[_u] = _f

_COMPARES = {"LT": lax.lt, "LE": lax.le, "GT": lax.gt, "GE": lax.ge}


def _ordered_compare(direction):
    """<, <=, >, >=; complex numbers compare lexicographically (real part
    first), as in NumPy, which lax's compares do not define."""
    strict, cmp = _COMPARES[direction[0] + "T"], _COMPARES[direction]

    def row(x, y):
        if x.dtype.kind != "c":
            return cmp(x, y)
        xr, xi, yr, yi = lax.real(x), lax.imag(x), lax.real(y), lax.imag(y)
        return lax.bitwise_or(strict(xr, yr), lax.bitwise_and(lax.eq(xr, yr), cmp(xi, yi)))
    return row


for _u, _dir in ((np.less, "LT"), (np.less_equal, "LE"), (np.greater, "GT"), (np.greater_equal, "GE")):
    UFUNCS[_u] = _ordered_compare(_dir)


# ----- complex building blocks (rows whose complex form HLO backends lack) ---------------

_re, _im, _cplx = lax.real, lax.imag, lax.complex


def _times_i(z):
    """i*z."""
    return _cplx(lax.neg(_im(z)), _re(z))


def _times_minus_i(z):
    return _cplx(_im(z), lax.neg(_re(z)))


def _each_part(fn):
    """A real row applied to the real and imaginary parts of complex input
    separately (NumPy's rint, floor... on complex)."""
    def row(x):
        if x.dtype.kind == "c":
            return _cplx(fn(_re(x)), fn(_im(x)))
        return fn(x)
    return row


def _float_only(f):
    """floor/ceil: NumPy 2 keeps integer and bool inputs as they are."""
    def row(x):
        return x if x.dtype.kind in "biu" else f(x)
    return row


UFUNCS[np.floor] = _float_only(lax.floor)
UFUNCS[np.ceil] = _float_only(lax.ceil)
UFUNCS[np.rint] = _each_part(_float_only(lambda x: lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN)))


@_row(np.isfinite)
def _isfinite(x):
    if x.dtype.kind in "biu":
        return lax.eq(x, x)  # always true
    if x.dtype.kind == "c":
        return lax.bitwise_and(_isfinite(_re(x)), _isfinite(_im(x)))
    return lax.is_finite(x)


@_row(np.fmod)
def _fmod(x, y):
    if x.dtype.kind in "iu":
        # NumPy: integer fmod by zero is 0; HLO leaves it to the backend.
        zero = _const(x, 0)
        y_is_zero = lax.eq(y, zero)
        r = lax.rem(x, lax.select(y_is_zero, _const(x, 1), y))
        return lax.select(y_is_zero, zero, r)
    return lax.rem(x, y)


# ----- defined by NumPy in terms of others --------------------------------------------

def _truth(x):
    """NumPy's truth value of each element (x != 0) as bool."""
    if x.dtype == np.bool_:
        return x
    return lax.ne(x, _const(x, 0))


for _u, _f in ((np.logical_and, lax.bitwise_and), (np.logical_or, lax.bitwise_or),
               (np.logical_xor, lax.bitwise_xor)):
    UFUNCS[_u] = (lambda f: lambda x, y: f(_truth(x), _truth(y)))(_f)


@_row(np.logical_not)
def _logical_not(x):
    return lax.bitwise_not(_truth(x))


@_row(np.positive)
def _positive(x):
    return x


@_row(np.absolute, np.fabs)
def _absolute(x):
    if x.dtype.kind in "ub":
        return x
    return lax.abs(x)


@_row(np.sign)
def _sign(x):
    return lax.sign(x)


@_row(np.square)
def _square(x):
    return lax.mul(x, x)


@_row(np.reciprocal)
def _reciprocal(x):
    return lax.div(_const(x, 1), x)


@_row(np.conjugate)
def _conjugate(x):
    if x.dtype.kind != "c":
        return x
    re, im = lax.real(x), lax.imag(x)
    return lax.complex(re, lax.neg(im))


@_row(np.exp2)
def _exp2(x):
    return lax.exp2(x)


# log2 and log10 are log(x) / log(base), within an ulp or two of libm's
# correctly rounded results, which NumPy returns: log10(1000.0) came out
# 2.9999999999999996, so floor(log10(x)) counted 2 digits where NumPy
# counts 3. At the arguments whose result is an integer k, a power of the
# base (2^k exactly, 10^k as the float nearest to it, whose log10 is
# within half an ulp of k), the result is k, as libm's.


def _snapped(r, exact, k):
    """``r`` where ``exact`` is false, else ``k``, through a correction that
    has no gradient: r and k are a few ulps apart there, so k - r is exact
    and a multiple of 2^-(mantissa bits + 1), which round() of it scaled
    keeps exactly while its gradient is zero; r + (k - r) is then k, and
    the gradient is r's (that of log at x, not the 0 of k = round(r))."""
    scale = 2.0 ** (np.finfo(r.dtype).nmant + 1)
    delta = lax.mul(lax.round(lax.mul(lax.sub(k, r), _const(r, scale)),
                              lax.RoundingMethod.TO_NEAREST_EVEN), _const(r, 1 / scale))
    return lax.add(r, lax.select(exact, delta, _const(r, 0)))

@_row(np.log2)
def _log2(x):
    r = lax.div(lax.log(x), _const(x, np.log(2.0)))
    if x.dtype not in (np.float32, np.float64):
        return r
    m, e = _frexp(x)
    power = lax.bitwise_and(lax.eq(m, _const(m, 0.5)), lax.gt(x, _const(x, 0)))
    return _snapped(r, power, lax.convert_element_type(lax.sub(e, _const(e, 1)), x.dtype))


@functools.lru_cache(maxsize=None)
def _powers_of_ten(dtype):
    """(the floats nearest 10^k for k from ``lo`` up, as ``dtype``, ``lo``):
    the normal ones only (a subnormal's few bits put it far from 10^k)."""
    info = np.finfo(dtype)
    lo, hi = int(np.ceil(np.log10(float(info.smallest_normal)))), int(info.maxexp * np.log10(2))
    table = np.array([dtype.type(f"1e{k}") for k in range(lo, hi + 1)], dtype)
    table.flags.writeable = False   # shared by every trace (cached)
    return table, lo


@_row(np.log10)
def _log10(x):
    r = lax.div(lax.log(x), _const(x, np.log(10.0)))
    if x.dtype not in (np.float32, np.float64):
        return r
    from xla.frontend import indexing
    table, lo = _powers_of_ten(np.dtype(x.dtype))
    # k: r rounded, NaN and infinities kept to the table's range first.
    finite = lax.select(_isnan(r), _const(r, 0), lax.clamp(_const(r, lo), r, _const(r, lo + len(table) - 1)))
    k = lax.round(finite, lax.RoundingMethod.TO_NEAREST_EVEN)
    index = lax.convert_element_type(lax.sub(k, _const(k, lo)), np.int32)
    nearest = indexing.getitem(as_tracer(table), (index,))
    return _snapped(r, lax.eq(x, nearest), k)


def _sqrt_one_minus_square(x):
    one = _const(x, 1)
    return lax.sqrt(lax.mul(lax.sub(one, x), lax.add(one, x)))


@_row(np.arctan)
def _arctan(x):
    return lax.atan(x)


@_row(np.arcsin)
def _arcsin(x):
    return lax.atan2(x, _sqrt_one_minus_square(x))


@_row(np.arccos)
def _arccos(x):
    return lax.atan2(_sqrt_one_minus_square(x), x)


@_row(np.sinh)
def _sinh(x):
    # (e^x - e^-x) / 2 through expm1, accurate near 0.
    a = lax.expm1(x)
    c = lax.expm1(lax.neg(x))
    return lax.mul(lax.sub(a, c), _const(x, 0.5))


@_row(np.cosh)
def _cosh(x):
    a = lax.exp(x)
    c = lax.exp(lax.neg(x))
    return lax.mul(lax.add(a, c), _const(x, 0.5))


@_row(np.arcsinh)
def _arcsinh(x):
    ax = lax.abs(x)
    r = lax.log(lax.add(ax, lax.sqrt(lax.add(lax.mul(ax, ax), _const(x, 1)))))
    return lax.mul(lax.sign(x), r)


@_row(np.arccosh)
def _arccosh(x):
    return lax.log(lax.add(x, lax.sqrt(lax.sub(lax.mul(x, x), _const(x, 1)))))


@_row(np.arctanh)
def _arctanh(x):
    one = _const(x, 1)
    return lax.mul(_const(x, 0.5), lax.log1p(lax.div(lax.add(x, x), lax.sub(one, x))))


@_row(np.deg2rad, np.radians)
def _deg2rad(x):
    return lax.mul(x, _const(x, np.pi / 180))


@_row(np.rad2deg, np.degrees)
def _rad2deg(x):
    return lax.mul(x, _const(x, 180 / np.pi))


@_row(np.isnan)
def _isnan(x):
    if x.dtype.kind == "c":
        return lax.bitwise_or(_isnan(lax.real(x)), _isnan(lax.imag(x)))
    return lax.ne(x, x)  # always false for integers


@_row(np.isinf)
def _isinf(x):
    if x.dtype.kind in "biu":
        return lax.ne(x, x)
    if x.dtype.kind == "c":
        return lax.bitwise_or(_isinf(lax.real(x)), _isinf(lax.imag(x)))
    return lax.eq(lax.abs(x), _const(x, np.inf))


def _signbit_op(x):
    if x.dtype.kind in "bu":
        return lax.ne(x, x)
    if x.dtype.kind == "i":
        return lax.lt(x, _const(x, 0))
    as_int = lax.bitcast_convert_type(x, np.dtype(f"i{x.dtype.itemsize}"))
    return lax.lt(as_int, _const(as_int, 0))


_row(np.signbit)(_signbit_op)


@_row(np.trunc)
def _trunc(x):
    if x.dtype.kind in "biu":
        return x
    neg = lax.lt(x, _const(x, 0))
    return lax.select(neg, lax.ceil(x), lax.floor(x))


@_row(np.copysign)
def _copysign(x, y):
    ax = lax.abs(x)
    return lax.select(_signbit_op(y), lax.neg(ax), ax)


@_row(np.right_shift)
def _right_shift(x, y):
    return (lax.shift_right_logical if x.dtype.kind == "u" else lax.shift_right_arithmetic)(x, y)


@_row(np.floor_divide)
def _floor_divide(x, y):
    if x.dtype.kind == "f":
        return _float_floor_divide(x, y)
    if x.dtype.kind == "b":
        return lax.bitwise_and(x, y)
    zero = _const(x, 0)
    y_is_zero = lax.eq(y, zero)
    safe_y = lax.select(y_is_zero, _const(x, 1), y)
    q = lax.div(x, safe_y)
    if x.dtype.kind == "i":
        # lax.div rounds toward zero; NumPy floors.
        r = lax.rem(x, safe_y)
        signs_differ = lax.ne(lax.lt(r, zero), lax.lt(safe_y, zero))
        adjust = lax.bitwise_and(lax.ne(r, zero), signs_differ)
        q = lax.select(adjust, lax.sub(q, _const(x, 1)), q)
    return lax.select(y_is_zero, zero, q)  # NumPy: integer x // 0 is 0


@_row(np.remainder)
def _remainder(x, y):
    zero = _const(x, 0)
    if x.dtype.kind == "b":
        return lax.bitwise_and(x, lax.bitwise_not(y))
    if x.dtype.kind == "u":
        y_is_zero = lax.eq(y, zero)
        r = lax.rem(x, lax.select(y_is_zero, _const(x, 1), y))
        return lax.select(y_is_zero, zero, r)
    if x.dtype.kind == "i":
        y_is_zero = lax.eq(y, zero)
        safe_y = lax.select(y_is_zero, _const(x, 1), y)
    else:
        safe_y = y
    r = lax.rem(x, safe_y)
    # The result takes the divisor's sign (Python's %), lax.rem's the dividend's.
    signs_differ = lax.ne(lax.lt(r, zero), lax.lt(safe_y, zero))
    adjust = lax.bitwise_and(lax.ne(r, zero), signs_differ)
    r = lax.select(adjust, lax.add(r, safe_y), r)
    if x.dtype.kind == "f":
        # NumPy: a zero result carries the divisor's sign.
        return lax.select(lax.eq(r, zero), _copysign(r, safe_y), r)
    return lax.select(y_is_zero, zero, r)


@_row(np.power)
def _power(x, y):
    if x.dtype.kind == "b":
        return lax.bitwise_or(x, lax.bitwise_not(y))
    if x.dtype.kind == "c":
        return _power_c(x, y)
    return lax.pow(x, y)


@_row(np.float_power)
def _float_power(x, y):
    return _power_c(x, y) if x.dtype.kind == "c" else lax.pow(x, y)


def _float_floor_divide(x, y):
    """NumPy's npy_divmod quotient: (x - fmod(x, y)) / y, moved down one
    when the remainder's sign differs from y's, then rounded to the nearest
    integer (not floor(x / y), which differs at infinities and near
    integers)."""
    zero = _const(x, 0)
    mod = lax.rem(x, y)
    div = lax.div(lax.sub(x, mod), y)
    adjust = lax.bitwise_and(lax.ne(mod, zero), lax.ne(lax.lt(y, zero), lax.lt(mod, zero)))
    div = lax.select(adjust, lax.sub(div, _const(x, 1)), div)
    fl = lax.floor(div)
    fl = lax.select(lax.gt(lax.sub(div, fl), _const(x, 0.5)), lax.add(fl, _const(x, 1)), fl)
    quotient = lax.div(x, y)
    fl = lax.select(lax.eq(div, zero), _copysign(zero, quotient), fl)
    return lax.select(lax.eq(y, zero), quotient, fl)


@_row(np.hypot)
def _hypot(x, y):
    # max * sqrt(1 + (min/max)^2): no overflow; an infinity wins over NaN.
    ax, ay = lax.abs(x), lax.abs(y)
    hi, lo = lax.max(ax, ay), lax.min(ax, ay)
    zero = _const(x, 0)
    safe = lax.select(lax.eq(hi, zero), _const(x, 1), hi)
    q = lax.div(lo, safe)
    r = lax.mul(hi, lax.sqrt(lax.add(_const(x, 1), lax.mul(q, q))))
    inf = _const(x, np.inf)
    any_inf = lax.bitwise_or(lax.eq(ax, inf), lax.eq(ay, inf))
    return lax.select(any_inf, inf, r)


@_row(np.logaddexp)
def _logaddexp(x, y):
    m = lax.max(x, y)
    d = lax.neg(lax.abs(lax.sub(x, y)))
    r = lax.add(m, lax.log1p(lax.exp(d)))
    # Equal infinities: x - y is NaN, but the answer is that infinity.
    return lax.select(lax.eq(x, y), lax.add(x, _const(x, np.log(2.0))), r)


@_row(np.logaddexp2)
def _logaddexp2(x, y):
    ln2 = _const(x, np.log(2.0))
    r = _logaddexp(lax.mul(x, ln2), lax.mul(y, ln2))
    return lax.div(r, ln2)


@_row(np.heaviside)
def _heaviside(x, y):
    zero = _const(x, 0)
    one = _const(x, 1)
    at_zero = lax.select(lax.eq(x, zero), y, one)
    r = lax.select(lax.lt(x, zero), zero, at_zero)
    return lax.select(lax.ne(x, x), x, r)


@_row(np.ldexp)
def _ldexp(x, y):
    two = _const(x, 2)
    return lax.mul(x, lax.pow(two, lax.convert_element_type(y, x.dtype)))


# ----- complex forms of the transcendental rows ----------------------------------------
# The backends have complex exp, log, sqrt, sin, cos and arithmetic; the rest
# is written here from real parts with NumPy's branch cuts.

def _real_or_complex(f, complex_row):
    def row(x):
        return complex_row(x) if x.dtype.kind == "c" else f(x)
    return row


def _expm1_c(z):
    x, y = _re(z), _im(z)
    # Re: e^x cos y - 1 = expm1(x) cos y - 2 sin^2(y/2), accurate near 0.
    s = lax.sin(lax.mul(y, _const(y, 0.5)))
    re = lax.sub(lax.mul(lax.expm1(x), lax.cos(y)), lax.mul(_const(y, 2), lax.mul(s, s)))
    im = lax.mul(lax.exp(x), lax.sin(y))
    return _cplx(re, im)


def _log1p_c(z):
    x, y = _re(z), _im(z)
    # |1+z|^2 - 1 = x(2 + x) + y^2
    t = lax.add(lax.mul(x, lax.add(x, _const(x, 2))), lax.mul(y, y))
    re = lax.mul(_const(x, 0.5), lax.log1p(t))
    im = lax.atan2(y, lax.add(x, _const(x, 1)))
    return _cplx(re, im)


def _tanh_c(z):
    x, y = _re(z), _im(z)
    x2, y2 = lax.add(x, x), lax.add(y, y)
    den = lax.add(_cosh(x2), lax.cos(y2))
    re = lax.div(_sinh(x2), den)
    im = lax.div(lax.sin(y2), den)
    # Large |x|: cosh overflows, the limit is sign(x) + 0i.
    big = lax.gt(lax.abs(x), _const(x, 20))
    re = lax.select(big, lax.sign(x), re)
    im = lax.select(big, lax.mul(im, _const(im, 0)), im)
    return _cplx(re, im)


def _tan_c(z):
    return _times_minus_i(_tanh_c(_times_i(z)))   # tan z = -i tanh(iz)


UFUNCS[np.expm1] = _real_or_complex(lax.expm1, _expm1_c)
UFUNCS[np.log1p] = _real_or_complex(lax.log1p, _log1p_c)
UFUNCS[np.tanh] = _real_or_complex(lax.tanh, _tanh_c)
UFUNCS[np.tan] = _real_or_complex(lax.tan, _tan_c)


def _one(z):
    return _const(z, 1)


def _arcsinh_c(z):
    # log(z + sqrt(z^2 + 1)) computed for Re z >= 0 (no cancellation), odd symmetry.
    neg = lax.lt(_re(z), _const(_re(z), 0))
    w = lax.select(neg, lax.neg(z), z)
    r = lax.log(lax.add(w, lax.sqrt(lax.add(lax.mul(w, w), _one(w)))))
    return lax.select(neg, lax.neg(r), r)


def _arccosh_c(z):
    # log(z + sqrt(z + 1) sqrt(z - 1)): the principal branch (Kahan).
    one = _one(z)
    s = lax.mul(lax.sqrt(lax.add(z, one)), lax.sqrt(lax.sub(z, one)))
    return lax.log(lax.add(z, s))


def _arctanh_c(z):
    return lax.mul(_const(z, 0.5), lax.sub(_log1p_c(z), _log1p_c(lax.neg(z))))


def _arcsin_c(z):
    return _times_minus_i(_arcsinh_c(_times_i(z)))    # -i asinh(iz)


def _arccos_c(z):
    return lax.sub(_const(z, np.pi / 2), _arcsin_c(z))


def _arctan_c(z):
    return _times_minus_i(_arctanh_c(_times_i(z)))    # -i atanh(iz)


def _sinh_c(z):
    x, y = _re(z), _im(z)
    return _cplx(lax.mul(_sinh(x), lax.cos(y)), lax.mul(_cosh(x), lax.sin(y)))


def _with_complex(real_row, complex_row):
    def row(x):
        return complex_row(x) if x.dtype.kind == "c" else real_row(x)
    return row


for _u, _c in ((np.arcsinh, _arcsinh_c), (np.arccosh, _arccosh_c), (np.arctanh, _arctanh_c),
               (np.arcsin, _arcsin_c), (np.arccos, _arccos_c), (np.arctan, _arctan_c),
               (np.sinh, _sinh_c)):
    UFUNCS[_u] = _with_complex(UFUNCS[_u], _c)


def _power_c(x, y):
    # z**w = exp(w log z); 0**w is 1 for w == 0 and 0 otherwise (NumPy gives
    # nan for Re w <= 0 with w != 0; the common cases match).
    zero = _const(x, 0)
    r = lax.exp(lax.mul(y, lax.log(x)))
    x_zero = lax.eq(x, zero)
    at_zero = lax.select(lax.eq(y, zero), _const(x, 1), zero)
    return lax.select(x_zero, at_zero, r)


def _lex_max_min(f, nan_wins):
    """maximum/minimum (NaN wins) and fmax/fmin (NaN loses); complex values
    order lexicographically, as NumPy orders them."""
    pick = _ordered_compare("GE" if f is lax.max else "LE")

    def row(x, y):
        if x.dtype.kind not in "fc":
            return f(x, y)
        x_nan, y_nan = _isnan(x), _isnan(y)
        m = lax.select(pick(x, y), x, y) if x.dtype.kind == "c" else f(x, y)
        if nan_wins:
            return lax.select(x_nan, x, lax.select(y_nan, y, m))
        return lax.select(x_nan, y, lax.select(y_nan, x, m))
    return row


UFUNCS[np.maximum] = _lex_max_min(lax.max, True)
UFUNCS[np.minimum] = _lex_max_min(lax.min, True)
UFUNCS[np.fmax] = _lex_max_min(lax.max, False)
UFUNCS[np.fmin] = _lex_max_min(lax.min, False)


# ----- floats bit by bit, integer number theory -------------------------------------

@_row(np.nextafter)
def _nextafter(x, y):
    r = lax.nextafter(x, y)
    # C's nextafter returns y where x == y; NumPy's float16 loop returns x
    # (nextafter(float16(-0.0), float16(0.0)) is -0.0).
    return lax.select(lax.eq(x, y), x, r) if x.dtype == np.float16 else r


@_row(np.spacing)
def _spacing(x):
    """As NumPy's: the distance to the next float away from zero, negative
    for negative ``x`` (``-0.0`` is not: its spacing is the smallest
    subnormal), NaN for infinities; NumPy's float16 loop always steps toward
    +inf (``spacing(float16(-1)) == +2**-11``), and so does this."""
    up = _const(x, np.inf)
    toward = up if x.dtype == np.float16 else lax.select(lax.lt(x, _const(x, 0)), lax.neg(up), up)
    r = lax.sub(lax.nextafter(x, toward), x)
    return lax.select(_isinf(x), _const(x, np.nan), r)


@_row(np.modf)
def _modf(x):
    """``(fraction, integral part)``, both with ``x``'s sign (``modf(-3.0)
    == (-0.0, -3.0)``); infinities have fraction ±0."""
    whole = _trunc(x)
    frac = lax.select(_isinf(x), _const(x, 0), lax.sub(x, whole))
    return _copysign(frac, x), whole


@_row(np.frexp)
def _frexp(x):
    """``(m, e)`` with ``x == m * 2**e``, ``0.5 <= |m| < 1``, read from the
    bits (subnormals scaled up first); zeros, infinities and NaN are
    ``(x, 0)``, as C's frexp."""
    info = np.finfo(x.dtype)
    mant_bits, bias = info.nmant, info.maxexp - 1
    ints = np.dtype(f"i{x.dtype.itemsize}")
    small = lax.lt(lax.abs(x), _const(x, info.smallest_normal))
    scaled = lax.select(small, lax.mul(x, _const(x, 2.0 ** (mant_bits + 2))), x)
    bits = lax.bitcast_convert_type(scaled, ints)
    field = lax.bitwise_and(lax.shift_right_logical(bits, _const(bits, mant_bits)),
                            _const(bits, 2 * bias + 1))
    e = lax.sub(field, _const(bits, bias - 1))
    e = lax.select(small, lax.sub(e, _const(e, mant_bits + 2)), e)
    kept = lax.bitwise_and(bits, _const(bits, ~((2 * bias + 1) << mant_bits)))
    m = lax.bitcast_convert_type(lax.bitwise_or(kept, _const(bits, (bias - 1) << mant_bits)), x.dtype)
    special = lax.bitwise_or(lax.eq(x, _const(x, 0)), lax.bitwise_or(_isinf(x), _isnan(x)))
    return (lax.select(special, x, m),
            lax.convert_element_type(lax.select(special, _const(e, 0), e), np.int32))


@_row(np.bitwise_count)
def _bitwise_count(x):
    """The set bits of ``|x|`` (NumPy counts the magnitude's)."""
    if x.dtype.kind == "i":
        x = lax.abs(x)      # (|min| wraps to min: one bit, as the magnitude's)
    return lax.population_count(x)


def _gcd_of_magnitudes(a, b):
    """Euclid's algorithm elementwise, a fixed number of steps: consecutive
    Fibonacci numbers take the most, under 1.5 steps per bit."""
    steps = int(1.5 * 8 * a.dtype.itemsize) + 2
    zero, one = _const(b, 0), _const(b, 1)

    def step(_, ab):
        a, b = ab
        live = lax.ne(b, zero)
        return lax.select(live, b, a), lax.select(live, lax.rem(a, lax.select(live, b, one)), zero)

    return lax.fori_loop(0, steps, step, (a, b))[0]


@_row(np.gcd)
def _gcd(x, y):
    return _gcd_of_magnitudes(lax.abs(x), lax.abs(y)) if x.dtype.kind == "i" else \
        _gcd_of_magnitudes(x, y)


@_row(np.lcm)
def _lcm(x, y):
    if x.dtype.kind == "i":
        x, y = lax.abs(x), lax.abs(y)
    g = _gcd_of_magnitudes(x, y)
    zero = lax.eq(g, _const(g, 0))
    # (wraps on overflow, as NumPy's: |x| / g * |y| in the integer type)
    r = lax.mul(lax.div(x, lax.select(zero, _const(g, 1), g)), y)
    return lax.select(zero, _const(g, 0), r)


# ----- dispatch ----------------------------------------------------------------------

_TWO_OUTPUTS = {np.divmod: (np.floor_divide, np.remainder)}


def _resolve(ufunc, inputs, dtype):
    types = []
    for x in inputs:
        t = tracing.promotion_type(x)
        types.append(np.dtype(bool) if t is bool else t)
    if all(isinstance(t, type) for t in types):
        # Only weak operands: NumPy resolves Python types alone to object
        # loops, so the widest stands as its own dtype (x < 100 for weak x).
        j = max(range(len(types)), key=lambda k: (int, float, complex).index(types[k]))
        x = inputs[j]
        types[j] = x.dtype if isinstance(x, Tracer) else np.asarray(x).dtype
    try:
        return ufunc.resolve_dtypes(tuple(types) + (None,) * ufunc.nout,
                                    **({"signature": (None,) * ufunc.nin + (np.dtype(dtype),) * ufunc.nout}
                                       if dtype is not None else {}))
    except TypeError as e:  # NumPy's "no loop" errors are TypeErrors
        names = ", ".join(str(t) if not isinstance(t, type) else t.__name__ for t in types)
        raise tracing_error(f"np.{ufunc.__name__} has no loop for ({names}): {e}") from None


def _small_integer_power(x, n):
    """``x ** n`` for a float32/float64 array ``x`` and a Python int ``n`` of
    -1 to 4, as JAX's ``integer_pow`` computes it: multiplications (x * x,
    x * x * x, (x * x) * (x * x), 1 / x), not HLO's power, which the CPU
    computes with a call to libm's pow per element (bisection's ``mid ** 3``:
    70 ms of libm calls in NumPy's 49 ms kernel). The squares and the
    reciprocal are correctly rounded (equal to the correctly rounded pow, as
    NumPy's own ``x ** 2`` and ``x ** -1`` are ``np.square`` and
    ``np.reciprocal``); ``x ** 3`` and ``x ** 4`` round twice (within 2 ulp,
    as NumPy's vectorized pow is within a few); signed zeros, infinities and
    NaN come out as pow's. None for anything else."""
    if not isinstance(x, Tracer) or type(n) is not int or n not in (-1, 2, 3, 4) or \
            x.dtype not in (np.float32, np.float64):
        return None
    if n == -1:
        r = lax.div(_const(x, 1), x)
    else:
        sq = lax.mul(x, x)
        r = sq if n == 2 else lax.mul(sq, x) if n == 3 else lax.mul(sq, sq)
    return Tracer(r.op, weak=x.weak)


def dispatch(ufunc, method, inputs, kwargs):
    if method != "__call__":
        return tracing.table("numpy").ufunc_method(ufunc, method, inputs, kwargs)
    if ufunc is getattr(np, "vecdot", None):   # a gufunc with an axis keyword
        return tracing.table("numpy").vecdot(*inputs, **kwargs)
    out = kwargs.pop("out", None)
    outs = out if isinstance(out, tuple) else (out,)
    if out is not None and any(o is not None for o in outs):
        # out=: the result is written into the given (traced) arrays, as NumPy does.
        from xla.frontend.tracing import Tracer as _Traced
        if not all(isinstance(o, _Traced) for o in outs):
            raise tracing_error(f"np.{ufunc.__name__}(..., out=...): out must be arrays of this "
                                "traced function (a NumPy array from outside cannot hold traced "
                                "values)")
        result = dispatch(ufunc, method, inputs, kwargs)
        results = result if isinstance(result, tuple) else (result,)
        for o, r in zip(outs, results):
            o._assign(r, f"np.{ufunc.__name__}(..., out=...)")
        return out if isinstance(out, tuple) and len(out) > 1 else outs[0]
    where = kwargs.pop("where", True)
    if where is not True:
        raise tracing_error(f"np.{ufunc.__name__}(..., where=...) is not supported under xla.jit; "
                            "use np.where on the result")
    dtype = kwargs.pop("dtype", None)
    kwargs.pop("casting", None)
    kwargs.pop("order", None)
    kwargs.pop("subok", None)
    if kwargs:
        raise tracing_error(f"np.{ufunc.__name__}: unsupported keyword arguments {sorted(kwargs)}")
    if ufunc is np.matmul:
        return tracing.table("numpy").matmul(*inputs)
    if ufunc in _TWO_OUTPUTS:
        return tuple(dispatch(u, "__call__", inputs, {"dtype": dtype} if dtype else {})
                     for u in _TWO_OUTPUTS[ufunc])
    if ufunc is np.power and dtype is None:
        small = _small_integer_power(*inputs)
        if small is not None:
            return small
    row = UFUNCS.get(ufunc)
    if row is None:
        raise tracing_error(f"np.{ufunc.__name__} is not supported under xla.jit")
    loop = _resolve(ufunc, inputs, dtype)
    in_dtypes, out_dtypes = loop[:ufunc.nin], loop[ufunc.nin:]
    ops = [convert(as_tracer(x), dt) for x, dt in zip(inputs, in_dtypes)]
    if all(dt == np.float16 for dt in in_dtypes) and ufunc not in (np.nextafter, np.spacing):
        # NumPy's half loops compute in float32 and round once at the end.
        ops = [convert(t, np.float32) for t in ops]
    ops = broadcast_arrays(*ops)
    result = row(*ops)
    weak = all(isinstance(x, Tracer) and x.weak or type(x) in tracing.PYTHON_SCALARS
               for x in inputs)
    results = []
    for r, out_dtype in zip(result if isinstance(result, tuple) else (result,), out_dtypes):
        t = Tracer(r.op, weak=weak)
        results.append(t if t.dtype == out_dtype else convert(t, out_dtype))
    return tuple(results) if isinstance(result, tuple) else results[0]


tracing.install_table("ufuncs", sys.modules[__name__])
