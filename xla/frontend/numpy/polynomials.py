"""Polynomials in NumPy's power form (highest power first): ``np.vander``,
``np.polyder``, ``np.polyint``, ``np.polyadd``, ``np.polysub``,
``np.polymul``, ``np.polyfit`` (a least-squares fit through
``np.linalg.lstsq``) and ``np.roots`` (the eigenvalues of the companion
matrix, ``np.linalg.eigvals``); ``np.polyval`` is in ``differences``. The degree and
the lengths are static (Python ints and the arrays' shapes), the
coefficients may be traced; dtypes as NumPy's (``np.polyder`` of float32
coefficients is float64: NumPy multiplies them by an int64 ``arange``)."""
import operator

import numpy as np

from xla.frontend.numpy._common import implements
from xla.frontend.lax import checks
from xla.frontend.numpy.differences import convolve
from xla.frontend.numpy.linalg_eig import _complex_dtype, eigvals
from xla.frontend.numpy.linalg_svd import lstsq
from xla.frontend.numpy.manipulation import atleast_1d, concatenate, reshape
from xla.frontend.numpy.reductions import cumprod, sum
from xla.frontend.tracing import Tracer, as_tracer, broadcast_to, convert, tracing_error


@implements(np.vander)
def vander(x, N=None, increasing=False):
    """Columns ``x**(N-1), ..., x, 1`` (``increasing``: the other way), in
    ``np.promote_types(x.dtype, int)`` (bool and small integers widen to
    int64, uint64 to float64), each power one more multiplication by ``x``
    as NumPy's ``multiply.accumulate``."""
    x = as_tracer(x)
    if x.ndim != 1:
        raise ValueError("x must be a one-dimensional array or sequence.")
    n = x.shape[0] if N is None else operator.index(N)
    dt = np.promote_types(x.dtype, np.int_)
    x = convert(x, dt)
    if n == 0:
        return broadcast_to(np.zeros((), dt), (x.shape[0], 0))
    ones = broadcast_to(np.ones((), dt), (x.shape[0], 1))
    if n == 1:
        cols = ones
    else:
        powers = cumprod(broadcast_to(reshape(x, (-1, 1)), (x.shape[0], n - 1)), axis=1)
        cols = concatenate([ones, convert(powers, dt)], axis=1)
    return cols if increasing else cols[:, ::-1]


def _coefficients(p):
    return p if isinstance(p, Tracer) else np.asarray(p)


def _refuse_poly1d(p, what):
    if isinstance(p, np.poly1d):
        raise tracing_error(f"{what} of an np.poly1d is not supported under xla.jit; pass its "
                            "coefficients")


@implements(np.polyder)
def polyder(p, m=1):
    m = int(m)
    if m < 0:
        raise ValueError("Order of derivative must be positive (see polyint)")
    _refuse_poly1d(p, "np.polyder")
    p = _coefficients(p)
    for _ in range(m):
        n = len(p) - 1
        p = np.multiply(p[:-1], np.arange(n, 0, -1))
    return as_tracer(p) if m == 0 else p


@implements(np.polyint)
def polyint(p, m=1, k=None):
    m = int(m)
    if m < 0:
        raise ValueError("Order of integral must be positive (see polyder)")
    _refuse_poly1d(p, "np.polyint")
    k = np.zeros(m, float) if k is None else k
    k = atleast_1d(as_tracer(k)) if isinstance(k, Tracer) else np.atleast_1d(k)
    if len(k) == 1 and m > 1:
        k = k[0] * np.ones(m, float)
    if len(k) < m:
        raise ValueError("k must be a scalar or a rank-1 array of length 1 or >m.")
    p = _coefficients(p)
    if m == 0:
        return as_tracer(p)
    for i in range(m):
        p = concatenate([np.true_divide(p, np.arange(len(p), 0, -1)), reshape(as_tracer(k[i]), (1,))])
    return p


def _padded(a1, a2):
    a1, a2 = atleast_1d(as_tracer(a1)), atleast_1d(as_tracer(a2))
    diff = a2.shape[0] - a1.shape[0]
    if diff > 0:
        a1 = concatenate([np.zeros(diff, a1.dtype), a1])
    elif diff < 0:
        a2 = concatenate([np.zeros(-diff, a2.dtype), a2])
    return a1, a2


@implements(np.polyadd)
def polyadd(a1, a2):
    a1, a2 = _padded(a1, a2)
    return np.add(a1, a2)


@implements(np.polysub)
def polysub(a1, a2):
    a1, a2 = _padded(a1, a2)
    return np.subtract(a1, a2)


@implements(np.polymul)
def polymul(a1, a2):
    return convolve(atleast_1d(as_tracer(a1)), atleast_1d(as_tracer(a2)))


@implements(np.polyfit)
def polyfit(x, y, deg, rcond=None, full=False, w=None, cov=False):
    """NumPy's least-squares fit: the Vandermonde matrix with columns scaled
    to unit norm, ``np.linalg.lstsq`` with ``rcond`` (default ``len(x) *
    eps``), the scale divided out again. ``full=True`` returns ``(p,
    residuals, rank, singular values, rcond)`` as NumPy (``rank`` a traced
    int). NumPy warns (``RankWarning``) when the matrix is rank deficient, a
    fact of the values: no warning here. ``cov=`` raises."""
    if cov:
        raise tracing_error("np.polyfit(cov=...) is not supported under xla.jit; fit with "
                            "cov=False and compute the covariance outside")
    order = int(deg) + 1
    x = np.add(as_tracer(x), 0.0)
    y = np.add(as_tracer(y), 0.0)
    if deg < 0:
        raise ValueError("expected deg >= 0")
    if x.ndim != 1:
        raise TypeError("expected 1D vector for x")
    if x.size == 0:
        raise TypeError("expected non-empty vector for x")
    if y.ndim < 1 or y.ndim > 2:
        raise TypeError("expected 1D or 2D array for y")
    if x.shape[0] != y.shape[0]:
        raise TypeError("expected x and y to have same length")
    if x.dtype.kind == "c" or y.dtype.kind == "c":
        raise tracing_error("np.polyfit under xla.jit takes real x and y (lstsq is real here)")
    if rcond is None:
        rcond = len(x) * np.finfo(x.dtype).eps
    lhs = vander(x, order)
    rhs = y
    if w is not None:
        w = np.add(as_tracer(w), 0.0)
        if w.ndim != 1:
            raise TypeError("expected a 1-d array for weights")
        if w.shape[0] != y.shape[0]:
            raise TypeError("expected w and y to have the same length")
        lhs = np.multiply(lhs, reshape(w, (-1, 1)))
        rhs = np.multiply(rhs, reshape(w, (-1, 1)) if rhs.ndim == 2 else w)
    scale = np.sqrt(sum(np.multiply(lhs, lhs), axis=0))
    lhs = np.true_divide(lhs, scale)
    c, resids, rank, s = lstsq(lhs, rhs, rcond)
    c = np.transpose(np.true_divide(np.transpose(c), scale))
    if full:
        return c, resids, rank, s, rcond
    return c


@implements(np.roots)
def roots(p):
    """The roots of the polynomial ``p`` (highest power first), NumPy's
    way: the eigenvalues of the companion matrix (``eigvals``: complex
    always, complex64 for float32 coefficients, in the solver's order),
    with a root 0 per trailing zero coefficient, leading zeros stripped.

    Constant coefficients (not traced) are stripped as NumPy strips them.
    Traced ones: the number of roots, ``len(p) - 1``, cannot depend on the
    values, so a leading zero (which NumPy strips, returning fewer roots)
    raises ValueError after the call; trailing zeros are found at run
    time and give exact zero roots (the companion matrix of the stripped
    polynomial in one corner, zeros in the other), where the solver's
    order puts them (NumPy appends them last)."""
    _refuse_poly1d(p, "np.roots")
    traced = isinstance(p, Tracer)
    p = as_tracer(p) if traced else np.atleast_1d(np.asarray(p))
    if p.ndim != 1:
        raise ValueError("Input must be a rank-1 array.")
    if p.dtype.kind in "iub":
        p = convert(p, np.float64) if traced else p.astype(float)
    cdt = _complex_dtype(p.dtype)
    if not traced:
        nonzero = np.flatnonzero(p)
        if len(nonzero) == 0:
            return as_tracer(np.zeros(0, cdt))
        trailing = len(p) - 1 - nonzero[-1]
        p = p[nonzero[0]:nonzero[-1] + 1]
        if len(p) < 2:
            return as_tracer(np.zeros(trailing, cdt))
        a = np.diag(np.ones(len(p) - 2, p.dtype), -1)
        a[0, :] = -p[1:] / p[0]
        return concatenate([eigvals(a), np.zeros(trailing, cdt)])
    n = p.shape[0]
    if n < 2:
        return broadcast_to(np.zeros((), cdt), (0,))
    checks.error_if(p[0] == 0, ValueError,
                    "np.roots under xla.jit: the leading coefficient is 0; NumPy strips leading "
                    "zeros, returning fewer roots, a shape that depends on the values: strip them "
                    "before the call or pass constant coefficients")
    # The degree of p without its trailing zeros: its last nonzero position.
    index = np.arange(n)
    degree = np.max(np.where(np.not_equal(p, 0), index, 0))
    rows = index[1:n - 1, None]
    cols = index[None, :n - 1]
    sub = np.logical_and(rows == cols + 1, rows < degree)
    companion = np.where(sub, np.ones((), p.dtype), np.zeros((), p.dtype))
    first = reshape(np.negative(np.true_divide(p[1:], p[0])), (1, n - 1))
    return eigvals(concatenate([first, companion], axis=0))
