"""Elementwise functions that are not ufuncs (``np.round``, ``np.clip``,
``np.real``, ``np.sinc``, ``np.i0``...) and the comparisons built on them
(``np.isclose``, ``np.allclose``, ``np.isin``). The ufuncs themselves are
``xla.frontend.ufuncs``."""
import numpy as np

from xla.frontend import lax, tracing
from xla.frontend.numpy._common import check_no_out, implements
from xla.frontend.numpy.creation import zeros_like
from xla.frontend.numpy.indexing_routines import where
from xla.frontend.numpy.manipulation import expand_dims, ravel
from xla.frontend.numpy.reductions import all, any
from xla.frontend.tracing import as_tracer, convert, result_type, tracing_error


# ----- rounding and clipping --------------------------------------------------------------

@implements(np.round, np.around)
def round(a, decimals=0, out=None):
    check_no_out("round", out)
    a = as_tracer(a)
    if a.dtype.kind in "biu":
        if decimals >= 0:
            return a
        f = 10 ** -decimals
        q, r = np.floor_divide(a, f), np.remainder(a, f)
        up = np.logical_or(r * 2 > f, np.logical_and(r * 2 == f, np.remainder(q, 2) == 1))
        return (np.where(up, q + 1, q) * f).astype(a.dtype)
    if decimals == 0:
        return np.rint(a)
    f = np.asarray(10.0 ** decimals, dtype=a.dtype)
    return np.rint(a * f) / f


@implements(np.fix)
def fix(x, out=None):
    check_no_out("fix", out)
    x = as_tracer(x)
    return where(np.greater_equal(x, 0), np.floor(x), np.ceil(x))


@implements(np.clip)
def clip(a, a_min=None, a_max=None, out=None, *, min=None, max=None, **kwargs):
    check_no_out("clip", out)
    lo = a_min if a_min is not None else min
    hi = a_max if a_max is not None else max
    out_ = as_tracer(a)
    if lo is not None:
        out_ = np.maximum(out_, lo)
    if hi is not None:
        out_ = np.minimum(out_, hi)
    return out_


@implements(np.nan_to_num)
def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    x = as_tracer(x)
    if x.dtype.kind == "c":
        return lax.complex(nan_to_num(real(x), nan=nan, posinf=posinf, neginf=neginf),
                           nan_to_num(imag(x), nan=nan, posinf=posinf, neginf=neginf))
    if x.dtype.kind != "f":
        return x
    info = np.finfo(x.dtype)
    hi = info.max if posinf is None else posinf
    lo = info.min if neginf is None else neginf
    x = where(np.isnan(x), np.asarray(nan, x.dtype), x)
    x = where(np.equal(x, np.inf), np.asarray(hi, x.dtype), x)
    return where(np.equal(x, -np.inf), np.asarray(lo, x.dtype), x)


@implements(np.sinc)
def sinc(x):
    x = as_tracer(x)
    y = np.multiply(np.pi, where(np.equal(x, 0), 1.0e-20, x))
    return np.true_divide(np.sin(y), y)


def _i0_coefficients():
    """Cephes' Chebyshev coefficients for I0 on [0, 8] and (8, inf), read
    from NumPy's own tables so that the series are NumPy's term for term."""
    try:
        from numpy.lib import _function_base_impl as impl
        return impl._i0A, impl._i0B
    except (ImportError, AttributeError) as e:       # a NumPy that moved them
        raise tracing_error("np.i0 under xla.jit reads NumPy's coefficient tables, which this "
                            f"NumPy ({np.__version__}) does not have where expected") from e


def _chebyshev(x, coefficients):
    b0, b1, b2 = coefficients[0], 0.0, 0.0
    for c in coefficients[1:]:
        b2, b1 = b1, b0
        b0 = x * b1 - b2 + c
    return 0.5 * (b0 - b2)


@implements(np.i0)
def i0(x):
    """NumPy's ``i0``: the modified Bessel function of order 0 of ``|x|``,
    Cephes' Chebyshev series below and above 8 (both evaluated, one
    selected); float inputs keep their type, others are float64."""
    x = as_tracer(x)
    if x.dtype.kind == "c":
        raise TypeError("i0 not supported for complex values")
    if x.dtype.kind != "f":
        x = convert(x, np.float64)
    x = np.abs(x)
    low, high = _i0_coefficients()
    small = np.exp(x) * _chebyshev(x / 2.0 - 2, low)
    safe = where(x <= 8.0, np.asarray(8.0, x.dtype), x)       # (no 32 / 0 in the unused branch)
    large = np.exp(safe) * _chebyshev(32.0 / safe - 2.0, high) / np.sqrt(safe)
    return where(x <= 8.0, small, large)


# ----- complex numbers --------------------------------------------------------------------

@implements(np.real)
def real(val):
    v = as_tracer(val)
    return lax.real(v) if v.dtype.kind == "c" else v


@implements(np.imag)
def imag(val):
    v = as_tracer(val)
    if v.dtype.kind == "c":
        return lax.imag(v)
    return zeros_like(v)


@implements(np.angle)
def angle(z, deg=False):
    z = as_tracer(z)
    if z.dtype.kind != "c":
        z = convert(z, result_type(z, 1.0))
        r = np.arctan2(zeros_like(z), z)
    else:
        r = np.arctan2(imag(z), real(z))
    return np.degrees(r) if deg else r


@implements(np.conj, np.conjugate)
def conj(x):
    return np.conjugate(as_tracer(x))


@implements(np.iscomplexobj)
def iscomplexobj(x):
    return as_tracer(x).dtype.kind == "c"


@implements(np.isrealobj)
def isrealobj(x):
    return as_tracer(x).dtype.kind != "c"


@implements(np.iscomplex)
def iscomplex(x):
    x = as_tracer(x)
    if x.dtype.kind != "c":
        return tracing.full(x.shape, False, np.bool_)
    return np.not_equal(imag(x), 0)


@implements(np.isreal)
def isreal(x):
    x = as_tracer(x)
    if x.dtype.kind != "c":
        return tracing.full(x.shape, True, np.bool_)
    return np.equal(imag(x), 0)


# ----- comparisons ------------------------------------------------------------------------

@implements(np.isclose)
def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    a, b = as_tracer(a), as_tracer(b)
    dt = result_type(a, b, 1.0)
    a, b = convert(a, dt), convert(b, dt)
    close = np.less_equal(np.abs(a - b), atol + rtol * np.abs(b))
    both_inf = np.logical_and(np.isinf(a), np.equal(a, b))
    out = np.logical_or(close, both_inf)
    if equal_nan:
        out = np.logical_or(out, np.logical_and(np.isnan(a), np.isnan(b)))
    return out


@implements(np.allclose)
def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    return all(isclose(a, b, rtol, atol, equal_nan))


@implements(np.array_equal)
def array_equal(a1, a2, equal_nan=False):
    a1, a2 = as_tracer(a1), as_tracer(a2)
    if a1.shape != a2.shape:
        return tracing.full((), False, np.bool_)
    return all(np.equal(a1, a2))


@implements(np.isin)
def isin(element, test_elements, assume_unique=False, invert=False, *, kind=None):
    e = as_tracer(element)
    t = ravel(as_tracer(test_elements))
    if t.shape[0] == 0:
        return tracing.full(e.shape, bool(invert), np.bool_)
    hit = any(np.equal(expand_dims(e, -1), t), axis=-1)
    return np.logical_not(hit) if invert else hit


def _signed_infinity(x, name, negative):
    x = as_tracer(x)
    if x.dtype.kind == "c":
        raise TypeError(f"This operation is not supported for complex values because it would be "
                        f"ambiguous. (np.{name})")
    is_inf = np.isinf(x)
    sign = np.signbit(x)
    return np.logical_and(is_inf, sign if negative else np.logical_not(sign))


@implements(np.isposinf)
def isposinf(x, out=None):
    check_no_out("isposinf", out)
    return _signed_infinity(x, "isposinf", False)


@implements(np.isneginf)
def isneginf(x, out=None):
    check_no_out("isneginf", out)
    return _signed_infinity(x, "isneginf", True)

