"""Differences (``np.diff``, ``np.ediff1d``), 1-D convolution and
correlation (one gather and one dot), piecewise-linear interpolation,
trapezoidal integration and polynomial evaluation."""
import builtins

import numpy as np

from xla.frontend import indexing
from xla.frontend.numpy._common import implements, normalize_axis
from xla.frontend.numpy.creation import zeros_like
from xla.frontend.numpy.indexing_routines import pad, take, where
from xla.frontend.numpy.manipulation import concatenate, flip, ravel, reshape
from xla.frontend.numpy.products import matmul
from xla.frontend.numpy.reductions import sum
from xla.frontend.numpy.sorting import searchsorted
from xla.frontend.tracing import Tracer, as_tracer, broadcast_to, convert, tracing_error


# ----- differences ------------------------------------------------------------------------

@implements(np.diff)
def diff(a, n=1, axis=-1, prepend=np._NoValue, append=np._NoValue):
    a = as_tracer(a)
    axis = normalize_axis(axis, a.ndim)
    parts = []
    for extra in (prepend, append):
        if extra is np._NoValue:
            parts.append(None)
            continue
        e = as_tracer(extra)
        if e.ndim == 0:
            shape = list(a.shape)
            shape[axis] = 1
            e = broadcast_to(e, tuple(shape))
        parts.append(e)
    if parts[0] is not None or parts[1] is not None:
        a = concatenate([p for p in (parts[0], a, parts[1]) if p is not None], axis=axis)
    hi = [slice(None)] * a.ndim
    lo = [slice(None)] * a.ndim
    hi[axis] = slice(1, None)
    lo[axis] = slice(None, -1)
    for _ in range(n):
        a = np.not_equal(a[tuple(hi)], a[tuple(lo)]) if a.dtype == np.bool_ else \
            np.subtract(a[tuple(hi)], a[tuple(lo)])
    return a


@implements(np.ediff1d)
def ediff1d(ary, to_end=None, to_begin=None):
    a = ravel(as_tracer(ary))
    d = diff(a)
    parts = [ravel(as_tracer(to_begin)).astype(a.dtype)] if to_begin is not None else []
    parts.append(d)
    if to_end is not None:
        parts.append(ravel(as_tracer(to_end)).astype(a.dtype))
    return concatenate(parts) if len(parts) > 1 else d


# ----- convolution ------------------------------------------------------------------------

def _full_correlate(a, v):
    """c[k] = sum_j a_padded[k + j] v[j] for the full overlap, as one gather
    and one dot (the window positions are static)."""
    n, m = a.shape[0], v.shape[0]
    ap = pad(a, (m - 1, m - 1))
    idx = np.arange(n + m - 1)[:, None] + np.arange(m)[None, :]
    return matmul(indexing.getitem(ap, idx), v)


def _mode_slice(full, n, m, mode):
    if mode == "full":
        return full
    if mode == "same":
        length = builtins.max(n, m)
        start = (n + m - 1 - length) // 2
        return full[start:start + length]
    if mode == "valid":
        return full[builtins.min(n, m) - 1:builtins.max(n, m)]
    raise ValueError(f"mode must be one of 'valid', 'same', or 'full' (got {mode!r})")


@implements(np.convolve)
def convolve(a, v, mode="full"):
    a, v = ravel(as_tracer(a)), ravel(as_tracer(v))
    if a.shape[0] == 0 or v.shape[0] == 0:
        raise ValueError("a cannot be empty" if a.shape[0] == 0 else "v cannot be empty")
    if v.shape[0] > a.shape[0]:
        a, v = v, a
    full = _full_correlate(a, flip(v))
    return _mode_slice(full, a.shape[0], v.shape[0], mode)


@implements(np.correlate)
def correlate(a, v, mode="valid"):
    a, v = ravel(as_tracer(a)), ravel(as_tracer(v))
    n, m = a.shape[0], v.shape[0]
    v = np.conjugate(v)
    if m > n:
        full = flip(_full_correlate(v, a))
    else:
        full = _full_correlate(a, v)
    return _mode_slice(full, n, m, mode)


# ----- interpolation, integration, polynomials --------------------------------------------

@implements(np.interp)
def interp(x, xp, fp, left=None, right=None, period=None):
    """Piecewise-linear interpolation; ``xp`` must increase (as NumPy
    requires, unchecked). Segments are found by compare-and-count."""
    if period is not None:
        raise tracing_error("np.interp(period=...) is not supported under xla.jit")
    fpt = as_tracer(fp)
    dt = np.dtype(np.complex128) if fpt.dtype.kind == "c" else np.dtype(np.float64)
    x, xp, fp = convert(as_tracer(x), np.float64), convert(ravel(as_tracer(xp)), np.float64), \
        convert(ravel(fpt), dt)
    n = xp.shape[0]
    if n == 0:
        raise ValueError("array of sample points is empty")
    if n == 1:
        r = broadcast_to(fp, x.shape) if x.ndim else reshape(fp, ())
    else:
        j = np.clip(searchsorted(xp, x, side="right") - 1, 0, n - 2)
        x0, x1 = take(xp, j), take(xp, j + 1)
        f0, f1 = take(fp, j), take(fp, j + 1)
        slope = np.true_divide(f1 - f0, x1 - x0)
        r = slope * (x - x0) + f0
        # At a sample point the sample value (also where the next segment has zero width).
        r = where(np.equal(x, x1), f1, r)
    lv = take(fp, 0) if left is None else as_tracer(left, dt)
    rv = take(fp, n - 1) if right is None else as_tracer(right, dt)
    r = where(np.less(x, take(xp, 0)), lv, r)
    r = where(np.greater(x, take(xp, n - 1)), rv, r)
    return convert(r, dt)


@implements(np.trapezoid)
def trapezoid(y, x=None, dx=1.0, axis=-1):
    y = as_tracer(y)
    axis = normalize_axis(axis, y.ndim)
    hi = [slice(None)] * y.ndim
    lo = [slice(None)] * y.ndim
    hi[axis] = slice(1, None)
    lo[axis] = slice(None, -1)
    if x is None:
        d = dx
    else:
        x = as_tracer(x)
        d = diff(x, axis=-1 if x.ndim == 1 else axis)
        if x.ndim == 1:
            shape = [1] * y.ndim
            shape[axis] = d.shape[0]
            d = reshape(d, shape)
    return sum(d * (y[tuple(hi)] + y[tuple(lo)]) / 2.0, axis=axis)


@implements(np.polyval)
def polyval(p, x):
    if not isinstance(p, Tracer):
        p = np.asarray(p)
    y = zeros_like(as_tracer(x))
    for k in range(len(p)):
        y = y * x + p[k]
    return y
