"""Differences (``np.diff``, ``np.ediff1d``), 1-D convolution and
correlation (one gather and one dot), piecewise-linear interpolation,
trapezoidal integration, polynomial evaluation, ``np.gradient`` and
``np.unwrap``."""
import builtins

import numpy as np

from xla.frontend import indexing, tracing
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
    requires, unchecked). Segments are found by compare-and-count. With
    ``period`` (a constant), as NumPy: ``x`` and ``xp`` taken modulo the
    period, ``xp`` sorted (``fp`` with it) and extended by one sample
    each way across the period; ``left`` and ``right`` are ignored."""
    if period is not None:
        if isinstance(period, Tracer):
            raise tracing_error("np.interp(period=...) under xla.jit takes a constant period")
        if period == 0:
            raise ValueError("period must be a non-zero value")
        period = abs(period)
        left = right = None
        fpt = as_tracer(fp)
        dt = np.dtype(np.complex128) if fpt.dtype.kind == "c" else np.dtype(np.float64)
        x = convert(as_tracer(x), np.float64)
        xp, fp = convert(as_tracer(xp), np.float64), convert(fpt, dt)
        if xp.ndim != 1 or fp.ndim != 1:
            raise ValueError("Data points must be 1-D sequences")
        if xp.shape[0] != fp.shape[0]:
            raise ValueError("fp and xp are not of the same length")
        x, xp = np.mod(x, period), np.mod(xp, period)
        order = np.argsort(xp, kind="stable")
        xp, fp = take(xp, order), take(fp, order)
        xp = concatenate([xp[-1:] - period, xp, xp[:1] + period])
        fp = concatenate([fp[-1:], fp, fp[:1]])
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


# ----- gradient and phase unwrapping -------------------------------------------------------

def _along(a, axis, index):
    """``a[..., index, ...]`` with ``index`` (a slice or an int kept as a
    length-1 slice) on ``axis``."""
    if isinstance(index, int):
        index = slice(index, index + 1) if index != -1 else slice(-1, None)
    return a[(slice(None),) * axis + (index,)]


def _spacing(distances, i, axis, length):
    """Dimension ``i``'s spacing as NumPy reads ``varargs``: a scalar, or
    coordinates (1-D, one per point) as their differences; constant
    coordinates with equal differences are a scalar, as in NumPy."""
    if not isinstance(distances, Tracer):
        distances = np.asanyarray(distances)
    if distances.ndim == 0:
        return distances
    if distances.ndim != 1:
        raise ValueError("distances must be either scalars or 1d")
    if distances.shape[0] != length:
        raise ValueError("when 1d, distances must match the length of the corresponding dimension")
    if distances.dtype.kind in "iub":
        distances = distances.astype(np.float64)
    d = diff(distances) if isinstance(distances, Tracer) else np.diff(distances)
    if not isinstance(d, Tracer) and (d == d[0]).all():
        return d[0]
    return d


@implements(np.gradient)
def gradient(f, *varargs, axis=None, edge_order=1):
    """NumPy's second-order central differences inside, one-sided
    differences of ``edge_order`` (1 or 2) at the ends, uniform spacings or
    coordinates per axis; integer input gives float64. Coordinates that are
    traced take the non-uniform formula (NumPy takes the uniform one when
    their differences are all equal: the same values, to rounding)."""
    f = as_tracer(f)
    n_dim = f.ndim
    axes = tuple(range(n_dim)) if axis is None else \
        tuple(normalize_axis(a, n_dim) for a in ((axis,) if isinstance(axis, int) else axis))
    if len(set(axes)) != len(axes):
        raise ValueError("repeated axis")
    if len(varargs) == 0:
        dx = [1.0] * len(axes)
    elif len(varargs) == 1 and np.ndim(varargs[0]) == 0:
        dx = list(varargs) * len(axes)
    elif len(varargs) == len(axes):
        dx = [_spacing(d, i, axes[i], f.shape[axes[i]]) for i, d in enumerate(varargs)]
    else:
        raise TypeError("invalid number of arguments")
    if edge_order > 2:
        raise ValueError("'edge_order' greater than 2 not supported")
    otype = f.dtype
    if otype.kind not in "fc":
        if otype.kind in "iu":
            f = convert(f, np.float64)
        otype = np.dtype(np.float64)
    outvals = []
    for ax, h in zip(axes, dx):
        if f.shape[ax] < edge_order + 1:
            raise ValueError("Shape of array too small to calculate a numerical gradient, at least "
                             "(edge_order + 1) elements are required.")
        uniform = np.ndim(h) == 0 if not isinstance(h, Tracer) else h.ndim == 0

        def at(i):
            return _along(f, ax, i)

        def along_axis(v):
            """A 1-D array of spacings shaped to broadcast along ``ax``."""
            return reshape(v, [-1 if k == ax else 1 for k in range(n_dim)])

        if uniform:
            inner = (at(slice(2, None)) - at(slice(None, -2))) / (2.0 * h)
        else:
            dx1, dx2 = h[:-1], h[1:]
            a = along_axis(-dx2 / (dx1 * (dx1 + dx2)))
            b = along_axis((dx2 - dx1) / (dx1 * dx2))
            c = along_axis(dx1 / (dx2 * (dx1 + dx2)))
            inner = a * at(slice(None, -2)) + b * at(slice(1, -1)) + c * at(slice(2, None))
        if edge_order == 1:
            first = (at(1) - at(0)) / (h if uniform else h[0])
            last = (at(-1) - at(-2)) / (h if uniform else h[-1])
        else:
            if uniform:
                a, b, c = -1.5 / h, 2.0 / h, -0.5 / h
            else:
                dx1, dx2 = h[0], h[1]
                a = -(2.0 * dx1 + dx2) / (dx1 * (dx1 + dx2))
                b = (dx1 + dx2) / (dx1 * dx2)
                c = -dx1 / (dx2 * (dx1 + dx2))
            first = a * at(0) + b * at(1) + c * at(2)
            if uniform:
                a, b, c = 0.5 / h, -2.0 / h, 1.5 / h
            else:
                dx1, dx2 = h[-2], h[-1]
                a = dx2 / (dx1 * (dx1 + dx2))
                b = -(dx2 + dx1) / (dx1 * dx2)
                c = (2.0 * dx2 + dx1) / (dx2 * (dx1 + dx2))
            last = a * at(-3) + b * at(-2) + c * at(-1)
        parts = [convert(as_tracer(p), otype) for p in (first, inner, last)]
        outvals.append(concatenate(parts, axis=ax))
    return outvals[0] if len(axes) == 1 else tuple(outvals)


@implements(np.unwrap)
def unwrap(p, discont=None, axis=-1, *, period=2 * np.pi):
    """NumPy's ``unwrap``: differences along ``axis`` larger than
    ``max(discont, period / 2)`` wrapped into ``[-period/2, period/2)``
    (``period/2`` kept for positive jumps), their corrections accumulated;
    in ``np.result_type(diff(p), period)`` (integer periods stay integer)."""
    p = as_tracer(p)
    axis = normalize_axis(axis, p.ndim)
    dd = diff(p, axis=axis)
    if discont is None:
        discont = period / 2
    dtype = tracing.result_type(dd, period)
    if np.issubdtype(dtype, np.integer):
        interval_high, rem = divmod(period, 2)
        boundary_ambiguous = rem == 0
    else:
        interval_high = period / 2
        boundary_ambiguous = True
    interval_low = -interval_high
    ddmod = np.mod(dd - interval_low, period) + interval_low
    if boundary_ambiguous:
        ddmod = where(np.equal(ddmod, interval_low) & (dd > 0),
                      convert(as_tracer(interval_high), ddmod.dtype), ddmod)
    ph_correct = ddmod - dd
    ph_correct = where(np.abs(dd) < discont, convert(as_tracer(0), ph_correct.dtype), ph_correct)
    if p.shape[axis] == 0:
        return convert(p, dtype)
    rest = convert(_along(p, axis, slice(1, None)) + np.cumsum(ph_correct, axis=axis), dtype)
    return concatenate([convert(_along(p, axis, 0), dtype), rest], axis=axis)
