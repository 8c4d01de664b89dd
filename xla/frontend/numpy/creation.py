"""Array creation: ``np.array`` of lists holding traced values, the
``_like`` functions (which dispatch), and the creation functions NumPy's
protocols cannot reach (``zeros``, ``ones``, ``full``, ``arange``, ``eye``...:
``xla.numpy``'s, and what jit's stand-in ``np`` calls; ``traced_creation``)."""
import builtins
import operator

import numpy as np

from xla.frontend import lax, tracing
from xla.frontend.lax import checks
from xla.frontend.numpy._common import implements
from xla.frontend.numpy.manipulation import expand_dims, ravel, reshape, stack
from xla.frontend.tracing import (Tracer, as_tracer, broadcast_arrays, broadcast_to, convert,
                                  result_type, tracing_error)


# ----- from existing data -----------------------------------------------------------------

def array(obj, dtype=None, copy=True, order="K", ndmin=0, like=None):
    """``np.array`` for nested lists that contain traced values."""
    if isinstance(obj, Tracer):
        out = obj if dtype is None else convert(obj, dtype)
    elif isinstance(obj, (list, tuple)) and builtins.any(isinstance(e, Tracer) or isinstance(e, (list, tuple))
                                                for e in obj):
        if not builtins.any(isinstance(e, Tracer) for e in tracing._flat(obj)):
            out = as_tracer(np.array(obj, dtype=dtype))
        else:
            items = [array(e) if isinstance(e, (list, tuple)) else e for e in obj]
            out = stack(items)
            if dtype is not None:
                out = convert(out, dtype)
    else:
        out = as_tracer(obj, dtype=dtype)
    while out.ndim < ndmin:
        out = expand_dims(out, 0)
    return out


def asarray(obj, dtype=None, order=None, like=None):
    return array(obj, dtype=dtype)


# ----- filled arrays ----------------------------------------------------------------------

@implements(np.zeros_like)
def zeros_like(a, dtype=None, order="K", subok=True, shape=None, device=None):
    return full_like(a, 0, dtype=dtype, shape=shape)


@implements(np.ones_like)
def ones_like(a, dtype=None, order="K", subok=True, shape=None, device=None):
    return full_like(a, 1, dtype=dtype, shape=shape)


@implements(np.empty_like)
def empty_like(a, dtype=None, order="K", subok=True, shape=None, device=None):
    return full_like(a, 0, dtype=dtype, shape=shape)


@implements(np.full_like)
def full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None, device=None):
    a = as_tracer(a)
    dtype = np.dtype(dtype) if dtype is not None else a.dtype
    shape = a.shape if shape is None else tuple(np.atleast_1d(shape)) if not isinstance(shape, int) else (shape,)
    if isinstance(fill_value, Tracer):
        return broadcast_to(convert(fill_value, dtype), shape)
    return tracing.full(shape, fill_value, dtype)


def zeros(shape, dtype=float):
    return tracing.full((shape,) if isinstance(shape, int) else tuple(shape), 0, np.dtype(dtype))


def ones(shape, dtype=float):
    return tracing.full((shape,) if isinstance(shape, int) else tuple(shape), 1, np.dtype(dtype))


def full(shape, fill_value, dtype=None):
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    if isinstance(fill_value, Tracer):
        v = fill_value if dtype is None else convert(fill_value, dtype)
        return broadcast_to(v, shape)
    dtype = np.dtype(dtype) if dtype is not None else np.asarray(fill_value).dtype
    return tracing.full(shape, fill_value, dtype)


# ----- numerical ranges -------------------------------------------------------------------

def arange(start, stop=None, step=1, dtype=None):
    if builtins.any(isinstance(v, Tracer) for v in (start, stop, step)):
        raise tracing_error("np.arange with traced bounds has a data-dependent length; pass Python "
                            "numbers")
    return as_tracer(np.arange(start, stop, step, dtype=dtype))


@implements(np.linspace)
def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0):
    """NumPy's formula: ``arange(num) * step + start`` with ``step = (stop -
    start) / div``, the last sample exactly ``stop`` with ``endpoint``;
    traced endpoints (scalars, or arrays that broadcast: samples along a new
    leading axis) compute it in HLO."""
    if not builtins.any(isinstance(v, Tracer) for v in (start, stop)):
        return as_tracer(np.linspace(start, stop, num, endpoint=endpoint, retstep=retstep,
                                     dtype=dtype, axis=axis)) if not retstep else \
            tuple(as_tracer(v) for v in np.linspace(start, stop, num, endpoint=endpoint,
                                                    retstep=True, dtype=dtype, axis=axis))
    num = operator.index(num)
    if num < 0:
        raise ValueError(f"Number of samples, {num}, must be non-negative.")
    start, stop = as_tracer(start), as_tracer(stop)
    dt = result_type(start, stop, float(num))
    start, stop = convert(start, dt), convert(stop, dt)
    start, stop = broadcast_arrays(start, stop)
    if axis != 0 and start.ndim:
        raise tracing_error("np.linspace with array endpoints takes axis=0 under xla.jit")
    div = (num - 1) if endpoint else num
    delta = stop - start
    steps = lax.broadcasted_iota(dt, (num,) + start.shape, 0)
    if div > 0:
        step = delta / np.asarray(div, dt)
        y = steps * step + start
    else:
        step = delta * np.asarray(np.nan, dt)
        y = steps * delta + start
    if endpoint and num > 1:
        y[-1] = stop
    if dtype is not None and np.dtype(dtype) != dt:
        y = np.floor(y).astype(dtype) if np.dtype(dtype).kind in "iu" else y.astype(dtype)
    return (y, step) if retstep else y


@implements(np.logspace)
def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    """``base ** linspace(start, stop)`` as NumPy: a Python ``base`` is
    weak (float32 endpoints stay float32); a ``base`` array broadcasts with
    the endpoints, along a new ``axis``."""
    if not isinstance(base, (float, int)) and np.ndim(base):
        nd = len(np.broadcast_shapes(np.shape(start), np.shape(stop), np.shape(base)))

        def at_least(v):
            v = as_tracer(v)
            return reshape(v, (1,) * (nd - v.ndim) + v.shape)

        start, stop, base = at_least(start), at_least(stop), at_least(base)
        base = expand_dims(base, axis)
    y = linspace(start, stop, num=num, endpoint=endpoint, axis=axis)
    r = np.power(base, y)
    return r if dtype is None else convert(r, np.dtype(dtype))


@implements(np.geomspace)
def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    """NumPy's: in ``result_type(start, stop, float(num), float64)``, the
    ends rotated to positive by their sign, ``logspace`` of their log10,
    the ends set to ``start`` and ``stop`` exactly, rotated back. A zero
    end raises NumPy's ``ValueError`` after the call."""
    start, stop = as_tracer(start), as_tracer(stop)
    checks.error_if(np.logical_or(np.any(np.equal(start, 0)), np.any(np.equal(stop, 0))),
                    ValueError, "Geometric sequence cannot include zero")
    dt = np.result_type(start.dtype, stop.dtype, float(num), np.zeros((), dtype))
    dtype = dt if dtype is None else np.dtype(dtype)
    start, stop = np.broadcast_arrays(convert(start, dt), convert(stop, dt))
    out_sign = np.sign(start)
    start = np.true_divide(start, out_sign)
    stop = np.true_divide(stop, out_sign)
    result = logspace(np.log10(start), np.log10(stop), num=num, endpoint=endpoint, base=10.0,
                      dtype=dt)
    if num > 0:
        parts = [expand_dims(start, 0), result[1:]]
        if num > 1 and endpoint:
            parts = [parts[0], result[1:-1], expand_dims(stop, 0)]
        result = np.concatenate(parts, axis=0)
    result = np.multiply(result, out_sign)
    if axis != 0:
        result = np.moveaxis(result, 0, axis)
    return convert(result, dtype)


def eye(N, M=None, k=0, dtype=float):
    return as_tracer(np.eye(N, M, k, dtype=dtype))


def identity(n, dtype=float):
    return as_tracer(np.identity(n, dtype=dtype))


@implements(np.meshgrid)
def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    xs = [ravel(as_tracer(x)) for x in xi]
    nd = len(xs)
    out = []
    for i, x in enumerate(xs):
        shape = [1] * nd
        shape[i] = x.shape[0]
        out.append(reshape(x, shape))
    if indexing == "xy" and nd > 1:
        for k in range(nd):
            s = list(out[k].shape)
            s[0], s[1] = s[1], s[0]
            out[k] = reshape(out[k], s)
    if not sparse:
        full_shape = tracing.broadcast_shapes(*(o.shape for o in out))
        out = [broadcast_to(o, full_shape) for o in out]
    return tuple(out)
