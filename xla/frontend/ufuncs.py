"""NumPy ufuncs on traced arrays: one row per ufunc.

``dispatch`` is what ``Tracer.__array_ufunc__`` calls. It picks the loop
dtypes exactly as NumPy would (``ufunc.resolve_dtypes``, with Python scalars
weak), converts and broadcasts the inputs, and calls the ufunc's row in
``UFUNCS``: a function of the builder and the operands' XlaOps (all of the
loop's input dtype and the broadcast shape) that returns the result XlaOp.
Rows written in terms of other rows (``square``, ``logaddexp``) say what
NumPy's definition is, in HLO.

``reduce`` and ``accumulate`` of the ufuncs that have an HLO reduction
(``np.add.reduce`` is ``np.sum``) go to ``xla.frontend.numpy``.
"""
import sys

import numpy as np

from xla.frontend import tracing
from xla.frontend.tracing import Tracer, as_tracer, broadcast_arrays, convert, tracing_error

UFUNCS = {}


def _row(*ufuncs):
    def register(fn):
        for u in ufuncs:
            UFUNCS[u] = fn
        return fn
    return register


def _const(b, like, value):
    """``value`` broadcast to the shape and dtype of XlaOp ``like``."""
    c = b.constant(np.asarray(value, dtype=like.dtype))
    return b.broadcast_in_dim(c, like.dims, ()) if like.dims else c


# ----- one HLO opcode each ------------------------------------------------------------

def _unary_op(opcode):
    return lambda b, x: b.unary(opcode, x)


def _binary_op(opcode):
    return lambda b, x, y: b.binary(opcode, x, y)


for _u, _op in ((np.negative, "negate"), (np.exp, "exponential"),
                (np.log, "log"), (np.sqrt, "sqrt"), (np.sin, "sine"),
                (np.cos, "cosine"), (np.cbrt, "cbrt"),
                (np.invert, "not")):
    UFUNCS[_u] = _unary_op(_op)

def _bool_aware(opcode, on_bool):
    """NumPy's + and * on booleans are 'or' and 'and' (HLO's add and
    multiply are not defined on pred)."""
    return lambda b, x, y: b.binary(on_bool if x.element_type.is_pred else opcode, x, y)


UFUNCS[np.add] = _bool_aware("add", "or")
UFUNCS[np.multiply] = _bool_aware("multiply", "and")

for _u, _op in ((np.subtract, "subtract"), (np.true_divide, "divide"),
                (np.arctan2, "atan2"), (np.bitwise_and, "and"),
                (np.bitwise_or, "or"), (np.bitwise_xor, "xor"), (np.left_shift, "shift-left")):
    UFUNCS[_u] = _binary_op(_op)

for _u, _dir in ((np.equal, "EQ"), (np.not_equal, "NE")):
    UFUNCS[_u] = (lambda d: lambda b, x, y: b.compare(x, y, d))(_dir)


def _ordered_compare(direction):
    """<, <=, >, >=; complex numbers compare lexicographically (real part
    first), as in NumPy, which HLO's compare does not define."""
    strict = direction[0] + "T"

    def row(b, x, y):
        if x.dtype.kind != "c":
            return b.compare(x, y, direction)
        xr, xi, yr, yi = _re(b, x), _im(b, x), _re(b, y), _im(b, y)
        return b.binary("or", b.compare(xr, yr, strict),
                        b.binary("and", b.compare(xr, yr, "EQ"), b.compare(xi, yi, direction)))
    return row


for _u, _dir in ((np.less, "LT"), (np.less_equal, "LE"), (np.greater, "GT"), (np.greater_equal, "GE")):
    UFUNCS[_u] = _ordered_compare(_dir)


# ----- complex building blocks (rows whose complex form HLO backends lack) ---------------

def _re(b, z):
    return b.unary("real", z)


def _im(b, z):
    return b.unary("imag", z)


def _cplx(b, re, im):
    return b.binary("complex", re, im)


def _times_i(b, z):
    """i*z."""
    return _cplx(b, b.unary("negate", _im(b, z)), _re(b, z))


def _times_minus_i(b, z):
    return _cplx(b, _im(b, z), b.unary("negate", _re(b, z)))


def _each_part(fn):
    """A real row applied to the real and imaginary parts of complex input
    separately (NumPy's rint, floor... on complex)."""
    def row(b, x):
        if x.dtype.kind == "c":
            return _cplx(b, fn(b, _re(b, x)), fn(b, _im(b, x)))
        return fn(b, x)
    return row


def _float_only(opcode):
    """floor/ceil: NumPy 2 keeps integer and bool inputs as they are."""
    def row(b, x):
        return x if x.dtype.kind in "biu" else b.unary(opcode, x)
    return row


UFUNCS[np.floor] = _float_only("floor")
UFUNCS[np.ceil] = _float_only("ceil")
UFUNCS[np.rint] = _each_part(_float_only("round-nearest-even"))


@_row(np.isfinite)
def _isfinite(b, x):
    if x.dtype.kind in "biu":
        return b.compare(x, x, "EQ")  # always true
    if x.dtype.kind == "c":
        return b.binary("and", _isfinite(b, _re(b, x)), _isfinite(b, _im(b, x)))
    return b.unary("is-finite", x)


@_row(np.fmod)
def _fmod(b, x, y):
    if x.dtype.kind in "iu":
        # NumPy: integer fmod by zero is 0; HLO leaves it to the backend.
        zero = _const(b, x, 0)
        y_is_zero = b.compare(y, zero, "EQ")
        r = b.binary("remainder", x, b.select(y_is_zero, _const(b, x, 1), y))
        return b.select(y_is_zero, zero, r)
    return b.binary("remainder", x, y)


# ----- defined by NumPy in terms of others --------------------------------------------

def _truth(b, x):
    """NumPy's truth value of each element (x != 0) as pred."""
    if x.dtype == np.bool_:
        return x
    return b.compare(x, _const(b, x, 0), "NE")


for _u, _op in ((np.logical_and, "and"), (np.logical_or, "or"), (np.logical_xor, "xor")):
    UFUNCS[_u] = (lambda o: lambda b, x, y: b.binary(o, _truth(b, x), _truth(b, y)))(_op)


@_row(np.logical_not)
def _logical_not(b, x):
    return b.unary("not", _truth(b, x))


@_row(np.positive)
def _positive(b, x):
    return x


@_row(np.absolute, np.fabs)
def _absolute(b, x):
    if x.dtype.kind in "ub":
        return x
    return b.unary("abs", x)


@_row(np.sign)
def _sign(b, x):
    if x.dtype.kind == "u":
        zero = _const(b, x, 0)
        return b.convert(b.compare(x, zero, "NE"), x.dtype)
    return b.unary("sign", x)


@_row(np.square)
def _square(b, x):
    return b.binary("multiply", x, x)


@_row(np.reciprocal)
def _reciprocal(b, x):
    return b.binary("divide", _const(b, x, 1), x)


@_row(np.conjugate)
def _conjugate(b, x):
    if x.dtype.kind != "c":
        return x
    re, im = b.unary("real", x), b.unary("imag", x)
    return b.binary("complex", re, b.unary("negate", im))


@_row(np.exp2)
def _exp2(b, x):
    return b.unary("exponential", b.binary("multiply", x, _const(b, x, np.log(2.0))))


@_row(np.log2)
def _log2(b, x):
    return b.binary("divide", b.unary("log", x), _const(b, x, np.log(2.0)))


@_row(np.log10)
def _log10(b, x):
    return b.binary("divide", b.unary("log", x), _const(b, x, np.log(10.0)))


def _sqrt_one_minus_square(b, x):
    one = _const(b, x, 1)
    return b.unary("sqrt", b.binary("multiply", b.binary("subtract", one, x), b.binary("add", one, x)))


@_row(np.arctan)
def _arctan(b, x):
    return b.binary("atan2", x, _const(b, x, 1))


@_row(np.arcsin)
def _arcsin(b, x):
    return b.binary("atan2", x, _sqrt_one_minus_square(b, x))


@_row(np.arccos)
def _arccos(b, x):
    return b.binary("atan2", _sqrt_one_minus_square(b, x), x)


@_row(np.sinh)
def _sinh(b, x):
    # (e^x - e^-x) / 2 through expm1, accurate near 0.
    a = b.unary("exponential-minus-one", x)
    c = b.unary("exponential-minus-one", b.unary("negate", x))
    return b.binary("multiply", b.binary("subtract", a, c), _const(b, x, 0.5))


@_row(np.cosh)
def _cosh(b, x):
    a = b.unary("exponential", x)
    c = b.unary("exponential", b.unary("negate", x))
    return b.binary("multiply", b.binary("add", a, c), _const(b, x, 0.5))


@_row(np.arcsinh)
def _arcsinh(b, x):
    ax = b.unary("abs", x)
    r = b.unary("log", b.binary("add", ax, b.unary("sqrt", b.binary(
        "add", b.binary("multiply", ax, ax), _const(b, x, 1)))))
    return b.binary("multiply", b.unary("sign", x), r)


@_row(np.arccosh)
def _arccosh(b, x):
    return b.unary("log", b.binary("add", x, b.unary("sqrt", b.binary(
        "subtract", b.binary("multiply", x, x), _const(b, x, 1)))))


@_row(np.arctanh)
def _arctanh(b, x):
    one = _const(b, x, 1)
    return b.binary("multiply", _const(b, x, 0.5),
                    b.unary("log-plus-one", b.binary("divide", b.binary("add", x, x),
                                                     b.binary("subtract", one, x))))


@_row(np.deg2rad, np.radians)
def _deg2rad(b, x):
    return b.binary("multiply", x, _const(b, x, np.pi / 180))


@_row(np.rad2deg, np.degrees)
def _rad2deg(b, x):
    return b.binary("multiply", x, _const(b, x, 180 / np.pi))


@_row(np.isnan)
def _isnan(b, x):
    if x.dtype.kind in "biu":
        return b.compare(x, x, "NE")  # always false
    if x.dtype.kind == "c":
        return b.binary("or", _isnan(b, b.unary("real", x)), _isnan(b, b.unary("imag", x)))
    return b.compare(x, x, "NE")


@_row(np.isinf)
def _isinf(b, x):
    if x.dtype.kind in "biu":
        return b.compare(x, x, "NE")
    if x.dtype.kind == "c":
        return b.binary("or", _isinf(b, b.unary("real", x)), _isinf(b, b.unary("imag", x)))
    return b.compare(b.unary("abs", x), _const(b, x, np.inf), "EQ")


def _signbit_op(b, x):
    if x.dtype.kind in "bu":
        return b.compare(x, x, "NE")
    if x.dtype.kind == "i":
        return b.compare(x, _const(b, x, 0), "LT")
    bits = np.dtype(f"i{x.dtype.itemsize}")
    as_int = b.bitcast_convert(x, bits)
    return b.compare(as_int, _const(b, as_int, 0), "LT")


_row(np.signbit)(_signbit_op)


@_row(np.trunc)
def _trunc(b, x):
    if x.dtype.kind in "biu":
        return x
    neg = b.compare(x, _const(b, x, 0), "LT")
    return b.select(neg, b.unary("ceil", x), b.unary("floor", x))


@_row(np.copysign)
def _copysign(b, x, y):
    ax = b.unary("abs", x)
    return b.select(_signbit_op(b, y), b.unary("negate", ax), ax)


@_row(np.right_shift)
def _right_shift(b, x, y):
    return b.binary("shift-right-logical" if x.dtype.kind == "u" else "shift-right-arithmetic", x, y)


@_row(np.floor_divide)
def _floor_divide(b, x, y):
    if x.dtype.kind == "f":
        return _float_floor_divide(b, x, y)
    if x.dtype.kind == "b":
        return b.binary("and", x, y)
    zero = _const(b, x, 0)
    y_is_zero = b.compare(y, zero, "EQ")
    safe_y = b.select(y_is_zero, _const(b, x, 1), y)
    q = b.binary("divide", x, safe_y)
    if x.dtype.kind == "i":
        # HLO divides toward zero; NumPy floors.
        r = b.binary("remainder", x, safe_y)
        signs_differ = b.compare(b.compare(r, zero, "LT"), b.compare(safe_y, zero, "LT"), "NE")
        adjust = b.binary("and", b.compare(r, zero, "NE"), signs_differ)
        q = b.select(adjust, b.binary("subtract", q, _const(b, x, 1)), q)
    return b.select(y_is_zero, zero, q)  # NumPy: integer x // 0 is 0


@_row(np.remainder)
def _remainder(b, x, y):
    zero = _const(b, x, 0)
    if x.dtype.kind == "b":
        return b.binary("and", x, b.unary("not", y))
    if x.dtype.kind == "u":
        y_is_zero = b.compare(y, zero, "EQ")
        r = b.binary("remainder", x, b.select(y_is_zero, _const(b, x, 1), y))
        return b.select(y_is_zero, zero, r)
    if x.dtype.kind == "i":
        y_is_zero = b.compare(y, zero, "EQ")
        safe_y = b.select(y_is_zero, _const(b, x, 1), y)
    else:
        safe_y = y
    r = b.binary("remainder", x, safe_y)
    # The result takes the divisor's sign (Python's %), HLO's the dividend's.
    signs_differ = b.compare(b.compare(r, zero, "LT"), b.compare(safe_y, zero, "LT"), "NE")
    adjust = b.binary("and", b.compare(r, zero, "NE"), signs_differ)
    r = b.select(adjust, b.binary("add", r, safe_y), r)
    if x.dtype.kind == "f":
        # NumPy: a zero result carries the divisor's sign.
        r = b.select(b.compare(r, zero, "EQ"), _copysign(b, r, safe_y), r)
        return r
    return b.select(y_is_zero, zero, r)


@_row(np.power)
def _power(b, x, y):
    if x.dtype.kind == "b":
        return b.binary("or", x, b.unary("not", y))
    if x.dtype.kind == "c":
        return _power_c(b, x, y)
    return b.binary("power", x, y)


@_row(np.float_power)
def _float_power(b, x, y):
    return _power_c(b, x, y) if x.dtype.kind == "c" else b.binary("power", x, y)


def _float_floor_divide(b, x, y):
    """NumPy's npy_divmod quotient: (x - fmod(x, y)) / y, moved down one
    when the remainder's sign differs from y's, then rounded to the nearest
    integer (not floor(x / y), which differs at infinities and near
    integers)."""
    zero = _const(b, x, 0)
    mod = b.binary("remainder", x, y)
    div = b.binary("divide", b.binary("subtract", x, mod), y)
    adjust = b.binary("and", b.compare(mod, zero, "NE"),
                      b.compare(b.compare(y, zero, "LT"), b.compare(mod, zero, "LT"), "NE"))
    div = b.select(adjust, b.binary("subtract", div, _const(b, x, 1)), div)
    fl = b.unary("floor", div)
    fl = b.select(b.compare(b.binary("subtract", div, fl), _const(b, x, 0.5), "GT"),
                  b.binary("add", fl, _const(b, x, 1)), fl)
    quotient = b.binary("divide", x, y)
    fl = b.select(b.compare(div, zero, "EQ"), _copysign(b, zero, quotient), fl)
    return b.select(b.compare(y, zero, "EQ"), quotient, fl)


@_row(np.hypot)
def _hypot(b, x, y):
    # max * sqrt(1 + (min/max)^2): no overflow; an infinity wins over NaN.
    ax, ay = b.unary("abs", x), b.unary("abs", y)
    hi, lo = b.binary("maximum", ax, ay), b.binary("minimum", ax, ay)
    zero = _const(b, x, 0)
    safe = b.select(b.compare(hi, zero, "EQ"), _const(b, x, 1), hi)
    q = b.binary("divide", lo, safe)
    r = b.binary("multiply", hi, b.unary("sqrt", b.binary("add", _const(b, x, 1), b.binary("multiply", q, q))))
    inf = _const(b, x, np.inf)
    any_inf = b.binary("or", b.compare(ax, inf, "EQ"), b.compare(ay, inf, "EQ"))
    return b.select(any_inf, inf, r)


@_row(np.logaddexp)
def _logaddexp(b, x, y):
    m = b.binary("maximum", x, y)
    d = b.unary("negate", b.unary("abs", b.binary("subtract", x, y)))
    r = b.binary("add", m, b.unary("log-plus-one", b.unary("exponential", d)))
    # Equal infinities: x - y is NaN, but the answer is that infinity.
    return b.select(b.compare(x, y, "EQ"), b.binary("add", x, _const(b, x, np.log(2.0))), r)


@_row(np.logaddexp2)
def _logaddexp2(b, x, y):
    ln2 = _const(b, x, np.log(2.0))
    r = _logaddexp(b, b.binary("multiply", x, ln2), b.binary("multiply", y, ln2))
    return b.binary("divide", r, ln2)


@_row(np.heaviside)
def _heaviside(b, x, y):
    zero = _const(b, x, 0)
    one = _const(b, x, 1)
    at_zero = b.select(b.compare(x, zero, "EQ"), y, one)
    r = b.select(b.compare(x, zero, "LT"), zero, at_zero)
    return b.select(b.compare(x, x, "NE"), x, r)


@_row(np.ldexp)
def _ldexp(b, x, y):
    two = _const(b, x, 2)
    return b.binary("multiply", x, b.binary("power", two, b.convert(y, x.dtype)))


# ----- complex forms of the transcendental rows ----------------------------------------
# The backends have complex exp, log, sqrt, sin, cos and arithmetic; the rest
# is written here from real parts with NumPy's branch cuts.

def _real_or_complex(opcode, complex_row):
    def row(b, x):
        return complex_row(b, x) if x.dtype.kind == "c" else b.unary(opcode, x)
    return row


def _expm1_c(b, z):
    x, y = _re(b, z), _im(b, z)
    # Re: e^x cos y - 1 = expm1(x) cos y - 2 sin^2(y/2), accurate near 0.
    s = b.unary("sine", b.binary("multiply", y, _const(b, y, 0.5)))
    re = b.binary("subtract", b.binary("multiply", b.unary("exponential-minus-one", x), b.unary("cosine", y)),
                  b.binary("multiply", _const(b, y, 2), b.binary("multiply", s, s)))
    im = b.binary("multiply", b.unary("exponential", x), b.unary("sine", y))
    return _cplx(b, re, im)


def _log1p_c(b, z):
    x, y = _re(b, z), _im(b, z)
    # |1+z|^2 - 1 = x(2 + x) + y^2
    t = b.binary("add", b.binary("multiply", x, b.binary("add", x, _const(b, x, 2))),
                 b.binary("multiply", y, y))
    re = b.binary("multiply", _const(b, x, 0.5), b.unary("log-plus-one", t))
    im = b.binary("atan2", y, b.binary("add", x, _const(b, x, 1)))
    return _cplx(b, re, im)


def _tanh_c(b, z):
    x, y = _re(b, z), _im(b, z)
    x2, y2 = b.binary("add", x, x), b.binary("add", y, y)
    den = b.binary("add", _cosh(b, x2), b.unary("cosine", y2))
    re = b.binary("divide", _sinh(b, x2), den)
    im = b.binary("divide", b.unary("sine", y2), den)
    # Large |x|: cosh overflows, the limit is sign(x) + 0i.
    big = b.compare(b.unary("abs", x), _const(b, x, 20), "GT")
    re = b.select(big, b.unary("sign", x), re)
    im = b.select(big, b.binary("multiply", im, _const(b, im, 0)), im)
    return _cplx(b, re, im)


def _tan_c(b, z):
    return _times_minus_i(b, _tanh_c(b, _times_i(b, z)))   # tan z = -i tanh(iz)


UFUNCS[np.expm1] = _real_or_complex("exponential-minus-one", _expm1_c)
UFUNCS[np.log1p] = _real_or_complex("log-plus-one", _log1p_c)
UFUNCS[np.tanh] = _real_or_complex("tanh", _tanh_c)
UFUNCS[np.tan] = _real_or_complex("tan", _tan_c)


def _one(b, z):
    return _const(b, z, 1)


def _arcsinh_c(b, z):
    # log(z + sqrt(z^2 + 1)) computed for Re z >= 0 (no cancellation), odd symmetry.
    neg = b.compare(_re(b, z), _const(b, _re(b, z), 0), "LT")
    w = b.select(neg, b.unary("negate", z), z)
    r = b.unary("log", b.binary("add", w, b.unary("sqrt", b.binary("add", b.binary("multiply", w, w),
                                                                      _one(b, w)))))
    return b.select(neg, b.unary("negate", r), r)


def _arccosh_c(b, z):
    # log(z + sqrt(z + 1) sqrt(z - 1)): the principal branch (Kahan).
    one = _one(b, z)
    s = b.binary("multiply", b.unary("sqrt", b.binary("add", z, one)), b.unary("sqrt", b.binary("subtract", z, one)))
    return b.unary("log", b.binary("add", z, s))


def _arctanh_c(b, z):
    one = _one(b, z)
    return b.binary("multiply", _const(b, z, 0.5),
                    b.binary("subtract", _log1p_c(b, z), _log1p_c(b, b.unary("negate", z))))


def _arcsin_c(b, z):
    return _times_minus_i(b, _arcsinh_c(b, _times_i(b, z)))    # -i asinh(iz)


def _arccos_c(b, z):
    return b.binary("subtract", _const(b, z, np.pi / 2), _arcsin_c(b, z))


def _arctan_c(b, z):
    return _times_minus_i(b, _arctanh_c(b, _times_i(b, z)))    # -i atanh(iz)


def _sinh_c(b, z):
    x, y = _re(b, z), _im(b, z)
    return _cplx(b, b.binary("multiply", _sinh(b, x), b.unary("cosine", y)),
                 b.binary("multiply", _cosh(b, x), b.unary("sine", y)))


def _with_complex(real_row, complex_row):
    def row(b, x):
        return complex_row(b, x) if x.dtype.kind == "c" else real_row(b, x)
    return row


for _u, _c in ((np.arcsinh, _arcsinh_c), (np.arccosh, _arccosh_c), (np.arctanh, _arctanh_c),
               (np.arcsin, _arcsin_c), (np.arccos, _arccos_c), (np.arctan, _arctan_c),
               (np.sinh, _sinh_c)):
    UFUNCS[_u] = _with_complex(UFUNCS[_u], _c)


def _power_c(b, x, y):
    # z**w = exp(w log z); 0**w is 1 for w == 0 and 0 otherwise (NumPy gives
    # nan for Re w <= 0 with w != 0; the common cases match).
    zero = _const(b, x, 0)
    r = b.unary("exponential", b.binary("multiply", y, b.unary("log", x)))
    x_zero = b.compare(x, zero, "EQ")
    at_zero = b.select(b.compare(y, zero, "EQ"), _const(b, x, 1), zero)
    return b.select(x_zero, at_zero, r)


def _lex_max_min(opcode, nan_wins):
    """maximum/minimum (NaN wins) and fmax/fmin (NaN loses); complex values
    order lexicographically, as NumPy orders them."""
    def row(b, x, y):
        if x.dtype.kind not in "fc":
            return b.binary(opcode, x, y)
        x_nan, y_nan = _isnan(b, x), _isnan(b, y)
        if x.dtype.kind == "c":
            pick_x = _ordered_compare("GE" if opcode == "maximum" else "LE")(b, x, y)
            m = b.select(pick_x, x, y)
        else:
            m = b.binary(opcode, x, y)
        if nan_wins:
            return b.select(x_nan, x, b.select(y_nan, y, m))
        return b.select(x_nan, y, b.select(y_nan, x, m))
    return row


UFUNCS[np.maximum] = _lex_max_min("maximum", True)
UFUNCS[np.minimum] = _lex_max_min("minimum", True)
UFUNCS[np.fmax] = _lex_max_min("maximum", False)
UFUNCS[np.fmin] = _lex_max_min("minimum", False)


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
    row = UFUNCS.get(ufunc)
    if row is None:
        raise tracing_error(f"np.{ufunc.__name__} is not supported under xla.jit")
    loop = _resolve(ufunc, inputs, dtype)
    in_dtypes, out_dtypes = loop[:ufunc.nin], loop[ufunc.nin:]
    ops = [convert(as_tracer(x), dt) for x, dt in zip(inputs, in_dtypes)]
    if all(dt == np.float16 for dt in in_dtypes):
        # NumPy's half loops compute in float32 and round once at the end.
        ops = [convert(t, np.float32) for t in ops]
    ops = broadcast_arrays(*ops)
    b = tracing.current_builder()
    result = row(b, *(t.op for t in ops))
    weak = all(isinstance(x, Tracer) and x.weak or type(x) in tracing.PYTHON_SCALARS
               for x in inputs)
    t = Tracer(result, weak=weak)
    if t.dtype != out_dtypes[0]:
        t = convert(t, out_dtypes[0])
    return t


tracing.install_table("ufuncs", sys.modules[__name__])
