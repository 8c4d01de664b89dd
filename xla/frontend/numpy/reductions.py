"""Reductions (``np.sum``, ``np.mean``, ``np.var``...) as HLO reduces,
cumulative ones as reduce-windows (``xla.lax.reduce_window``), their
NaN-aware forms, and the ufunc methods ``reduce``, ``accumulate``,
``outer`` and ``at``. Accumulators follow NumPy: ``np.sum`` of int32 gives
the platform integer."""
import builtins  # the module defines sum, max, min, any, all as NumPy does

import numpy as np

from xla.errors import ShapeError
from xla.frontend import indexing, lax
from xla.frontend.numpy._common import check_no_out, implements, normalize_axes, normalize_axis, strong
from xla.frontend.numpy.creation import ones_like, zeros_like
from xla.frontend.numpy.indexing_routines import diagonal, take, where
from xla.frontend.numpy.manipulation import concatenate, ravel, reshape
from xla.frontend.tracing import Tracer, as_tracer, convert, tracing_error


# ----- reductions -------------------------------------------------------------------------

def _sum_dtype(a_dtype):
    """NumPy's accumulator for sum/prod: small integers and bool widen."""
    if a_dtype.kind == "b" or a_dtype.kind == "i" and a_dtype.itemsize < np.dtype(np.int_).itemsize:
        return np.dtype(np.int_)
    if a_dtype.kind == "u" and a_dtype.itemsize < np.dtype(np.uint).itemsize:
        return np.dtype(np.uint)
    return a_dtype


def reduction_identity(opcode, dtype):
    if opcode == "add" or opcode == "or":
        return np.zeros((), dtype)
    if opcode == "multiply":
        return np.ones((), dtype)
    if opcode == "and":      # every bit set (True for bools): x & identity == x
        return np.asarray(True if dtype.kind == "b" else np.iinfo(dtype).max if dtype.kind == "u"
                          else -1, dtype)
    if dtype.kind == "f":
        return np.asarray(-np.inf if opcode == "maximum" else np.inf, dtype)
    if dtype.kind == "b":
        return np.asarray(opcode == "minimum", dtype)
    info = np.iinfo(dtype)
    return np.asarray(info.min if opcode == "maximum" else info.max, dtype)


# The HLO opcodes reductions name, as xla.lax's binary functions.
_LAX_REDUCERS = {"add": lax.add, "multiply": lax.mul, "maximum": lax.max, "minimum": lax.min,
                 "and": lax.bitwise_and, "or": lax.bitwise_or, "xor": lax.bitwise_xor}


def reduce(a, opcode, axis, keepdims=False, dtype=None, initial=None):
    """Reduces Tracer ``a`` with the binary HLO ``opcode`` over ``axis``."""
    a = as_tracer(a)
    if dtype is not None:
        a = convert(a, dtype)
    axes = normalize_axes(axis, a.ndim)
    init = reduction_identity(opcode, a.dtype) if initial is None else np.asarray(initial, a.dtype)
    if axes:
        t = lax.reduce(a, init, _LAX_REDUCERS[opcode], axes)
    elif initial is not None:
        # NumPy's add and multiply of bools are logical or and and.
        op = {"add": "or", "multiply": "and"}.get(opcode, opcode) if a.dtype == np.bool_ else opcode
        t = _LAX_REDUCERS[op](a, init)
    else:
        t = strong(a)
    if keepdims:
        t = reshape(t, [1 if i in axes else d for i, d in enumerate(a.shape)])
    return t


def _masked(a, mask, fill):
    """``a`` where the boolean ``mask`` (broadcast to ``a``'s shape, as
    NumPy's ``where=`` argument is) holds, ``fill`` elsewhere."""
    mask = convert(as_tracer(mask), np.bool_)
    if np.broadcast_shapes(mask.shape, a.shape) != a.shape:
        raise ValueError(f"where= of shape {mask.shape} does not broadcast to the array's shape "
                         f"{a.shape}")
    return where(mask, a, np.asarray(fill, a.dtype))


def _count(a, axes, keepdims, mask):
    """How many elements each reduction over ``axes`` takes: a Python int, or
    with a ``where=`` mask, the intp count of its True values."""
    if mask is True:
        count = 1
        for x in axes:
            count *= a.shape[x]
        return count
    return reduce(_masked(np.ones(a.shape, np.intp), mask, 0), "add", axes, keepdims)


def _reduction(name, opcode, widen):
    def impl(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True, **kw):
        check_no_out(name, out)
        a = as_tracer(a)
        if dtype is None and widen:
            dtype = _sum_dtype(a.dtype)
        if where is not True:
            if opcode in ("maximum", "minimum") and initial is None:
                raise ValueError(f"reduction operation '{opcode}' does not have an identity, so to "
                                 "use a where mask one has to specify 'initial'")
            # Masked-out elements count as the identity (max/min: as `initial`).
            a = _masked(a, where, reduction_identity(opcode, a.dtype) if initial is None
                        else np.asarray(initial).astype(a.dtype))
        elif opcode in ("maximum", "minimum") and initial is None:
            axes = normalize_axes(axis, a.ndim)
            if builtins.any(a.shape[x] == 0 for x in axes):
                raise ShapeError(f"zero-size array to reduction operation {name} which has no identity")
        return reduce(a, opcode, axis, keepdims, dtype, initial)
    impl.__name__ = name
    return impl


sum = implements(np.sum)(_reduction("sum", "add", True))


prod = implements(np.prod)(_reduction("prod", "multiply", True))


max = implements(np.max, np.amax)(_reduction("max", "maximum", False))


min = implements(np.min, np.amin)(_reduction("min", "minimum", False))


@implements(np.any)
def any(a, axis=None, out=None, keepdims=False, *, where=True):
    check_no_out("any", out)
    a = convert(as_tracer(a), np.bool_)
    return reduce(a if where is True else _masked(a, where, False), "or", axis, keepdims)


@implements(np.all)
def all(a, axis=None, out=None, keepdims=False, *, where=True):
    check_no_out("all", out)
    a = convert(as_tracer(a), np.bool_)
    return reduce(a if where is True else _masked(a, where, True), "and", axis, keepdims)


@implements(np.mean)
def mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=True):
    check_no_out("mean", out)
    a = as_tracer(a)
    if dtype is None:
        dtype = a.dtype if a.dtype.kind in "fc" else np.dtype(np.float64)
    axes = normalize_axes(axis, a.ndim)
    count = _count(a, axes, keepdims, where)
    if where is not True:
        a = _masked(a, where, 0)
    s = reduce(a, "add", axes, keepdims, dtype)
    if isinstance(count, Tracer):
        return np.true_divide(s, convert(count, s.dtype))
    return np.true_divide(s, np.asarray(count, dtype=s.dtype))


@implements(np.var)
def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, mean=None,
        correction=None):
    check_no_out("var", out)
    a = as_tracer(a)
    if correction is not None:
        ddof = correction
    if mean is None:
        m = globals()["mean"](a, axis, dtype, keepdims=True, where=where)
    else:
        m = as_tracer(mean)          # NumPy's precomputed mean, of keepdims' shape
    d = np.subtract(a if dtype is None else convert(a, dtype), m)
    sq = np.real(np.multiply(d, np.conjugate(d))) if d.dtype.kind == "c" else np.multiply(d, d)
    axes = normalize_axes(axis, a.ndim)
    count = _count(a, axes, keepdims, where)
    if where is not True:
        sq = _masked(sq, where, 0)
    s = reduce(sq, "add", axes, keepdims)
    if isinstance(count, Tracer):
        return np.true_divide(s, convert(np.maximum(count - ddof, 0), s.dtype))
    return np.true_divide(s, np.asarray(builtins.max(count - ddof, 0), dtype=s.dtype))


@implements(np.std)
def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, mean=None,
        correction=None):
    return np.sqrt(var(a, axis, dtype, out, ddof, keepdims, where=where, mean=mean,
                       correction=correction))


@implements(np.count_nonzero)
def count_nonzero(a, axis=None, *, keepdims=False):
    return sum(convert(as_tracer(a), np.bool_), axis=axis, keepdims=keepdims, dtype=np.int_)


@implements(np.ptp)
def ptp(a, axis=None, out=None, keepdims=False):
    check_no_out("ptp", out)
    return np.subtract(max(a, axis=axis, keepdims=keepdims), min(a, axis=axis, keepdims=keepdims))


@implements(np.trace)
def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    check_no_out("trace", out)
    return sum(diagonal(a, offset, axis1, axis2), axis=-1, dtype=dtype)


# ----- ufunc methods ----------------------------------------------------------------------

def ufunc_method(ufunc, method, inputs, kwargs):
    """``np.add.reduce`` and friends."""
    opcodes = {np.add: "add", np.multiply: "multiply", np.maximum: "maximum",
               np.minimum: "minimum", np.logical_and: "and", np.logical_or: "or",
               np.bitwise_and: "and", np.bitwise_or: "or", np.bitwise_xor: "xor"}
    if method == "reduce" and ufunc in opcodes:
        a = inputs[0]
        axis = kwargs.pop("axis", 0)
        dtype = kwargs.pop("dtype", None)
        check_no_out(f"{ufunc.__name__}.reduce", kwargs.pop("out", None))
        keepdims = kwargs.pop("keepdims", False)
        initial = kwargs.pop("initial", None)
        a = as_tracer(a)
        if ufunc in (np.logical_and, np.logical_or):
            a = convert(a, np.bool_)
        elif dtype is None and ufunc in (np.add, np.multiply):
            dtype = _sum_dtype(a.dtype)
        return reduce(a, opcodes[ufunc], axis, keepdims, dtype, initial)
    if method == "accumulate" and ufunc in opcodes and ufunc is not np.bitwise_xor:
        # add and multiply widen small integers as np.sum does; the others
        # keep the input's type.
        a = as_tracer(inputs[0])
        axis = kwargs.pop("axis", 0)
        dtype = kwargs.pop("dtype", None)
        check_no_out(f"{ufunc.__name__}.accumulate", kwargs.pop("out", None))
        if ufunc in (np.logical_and, np.logical_or):
            a = convert(a, np.bool_)
        if dtype is None:
            dtype = _sum_dtype(a.dtype) if ufunc in (np.add, np.multiply) else a.dtype
        return _cumulative(a, axis, dtype, opcodes[ufunc], f"{ufunc.__name__}.accumulate")
    if method == "outer" and len(inputs) == 2 and ufunc.nin == 2:
        # ufunc(a[..., None, None...], b): every element of a with every one of b.
        a, b = as_tracer(inputs[0]), as_tracer(inputs[1])
        return ufunc(np.reshape(a, tuple(a.shape) + (1,) * b.ndim), b, **kwargs)
    if method == "at" and ufunc in _AT_UPDATES and len(inputs) == 3:
        # Unbuffered: repeated indices each apply (a scatter with the combiner).
        a, index, b = inputs
        what = f"np.{ufunc.__name__}.at"
        if not isinstance(a, Tracer):
            raise tracing_error(f"{what}: the array updated in place is not traced (a NumPy array "
                                "inside the function cannot take traced values): create it with "
                                "np.zeros/np.empty inside the function or pass it as an argument")
        how = _AT_UPDATES[ufunc]
        if ufunc is np.subtract:
            b = np.negative(as_tracer(b))
        a._assign(getattr(indexing.AtIndexer(a)[index], how)(b), what)
        return None
    raise tracing_error(f"np.{ufunc.__name__}.{method} is not supported under xla.jit")


_AT_UPDATES = {np.add: "add", np.subtract: "add", np.multiply: "multiply", np.minimum: "min",
               np.maximum: "max"}


# ----- cumulative reductions --------------------------------------------------------------

def _cumulative(a, axis, dtype, opcode, name):
    a = as_tracer(a)
    if axis is None:
        a, axis = ravel(a), 0
    axis = normalize_axis(axis, a.ndim)
    if dtype is None:
        dtype = _sum_dtype(a.dtype) if opcode in ("add", "multiply") else a.dtype
    a = convert(a, dtype)
    n = a.shape[axis]
    if n == 0:
        return a
    window = [1] * a.ndim
    window[axis] = n
    padding = [(0, 0)] * a.ndim
    padding[axis] = (n - 1, 0)
    return lax.reduce_window(a, reduction_identity(opcode, a.dtype), opcode, window, [1] * a.ndim, padding)


@implements(np.cumsum)
def cumsum(a, axis=None, dtype=None, out=None):
    check_no_out("cumsum", out)
    return _cumulative(a, axis, dtype, "add", "cumsum")


@implements(np.cumprod)
def cumprod(a, axis=None, dtype=None, out=None):
    check_no_out("cumprod", out)
    return _cumulative(a, axis, dtype, "multiply", "cumprod")


if hasattr(np, "cumulative_sum"):
    @implements(np.cumulative_sum)
    def cumulative_sum(x, /, *, axis=None, dtype=None, out=None, include_initial=False):
        r = cumsum(x, axis, dtype)
        if include_initial:
            ax = 0 if axis is None else axis
            z = zeros_like(take(r, [0], axis=ax))
            r = concatenate([z, r], axis=ax)
        return r


if hasattr(np, "cumulative_prod"):
    @implements(np.cumulative_prod)
    def cumulative_prod(x, /, *, axis=None, dtype=None, out=None, include_initial=False):
        r = cumprod(x, axis, dtype, out)
        if include_initial:
            ax = 0 if axis is None else axis
            r = concatenate([ones_like(take(r, [0], axis=ax)), r], axis=ax)
        return r


# ----- NaN-aware reductions ---------------------------------------------------------------

_where = where   # for functions whose NumPy signature has a `where` parameter


def replace_nan(a, value):
    a = as_tracer(a)
    if a.dtype.kind not in "fc":
        return a
    return where(np.isnan(a), np.asarray(value, a.dtype), a)


@implements(np.nansum)
def nansum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True):
    return sum(replace_nan(a, 0), axis=axis, dtype=dtype, out=out, keepdims=keepdims, initial=initial,
               where=where)


@implements(np.nanprod)
def nanprod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True):
    return prod(replace_nan(a, 1), axis=axis, dtype=dtype, out=out, keepdims=keepdims, initial=initial,
                where=where)


@implements(np.nanmax)
def nanmax(a, axis=None, out=None, keepdims=False, initial=None, where=True):
    return max(replace_nan(a, -np.inf), axis=axis, out=out, keepdims=keepdims, initial=initial,
               where=where)


@implements(np.nanmin)
def nanmin(a, axis=None, out=None, keepdims=False, initial=None, where=True):
    return min(replace_nan(a, np.inf), axis=axis, out=out, keepdims=keepdims, initial=initial,
               where=where)


@implements(np.nanmean)
def nanmean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=True):
    a = as_tracer(a)
    count = sum(np.logical_and(np.logical_not(np.isnan(a)), where), axis=axis, keepdims=keepdims)
    s = nansum(a, axis=axis, dtype=dtype, keepdims=keepdims, where=where)
    return np.true_divide(s, count.astype(s.dtype))


@implements(np.nanvar)
def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, mean=None,
           correction=None):
    check_no_out("nanvar", out)
    if where is not True or mean is not None:
        raise tracing_error("np.nanvar/np.nanstd(..., where=, mean=) are not supported under "
                            "xla.jit; mask with np.where(mask, x, np.nan) first")
    a = as_tracer(a)
    if correction is not None:
        ddof = correction
    if a.dtype.kind not in "fc":
        return var(a, axis, dtype, ddof=ddof, keepdims=keepdims)
    if dtype is not None:
        a = convert(a, dtype)
    ok = np.logical_not(np.isnan(a))
    count = sum(ok, axis=axis, keepdims=True)
    m = np.true_divide(nansum(a, axis=axis, keepdims=True), count.astype(a.dtype))
    d = _where(ok, np.subtract(a, m), np.asarray(0, a.dtype))
    sq = np.real(np.multiply(d, np.conjugate(d))) if d.dtype.kind == "c" else np.multiply(d, d)
    s = sum(sq, axis=axis, keepdims=keepdims)
    n = sum(ok, axis=axis, keepdims=keepdims)
    return np.true_divide(s, np.maximum(n - ddof, 0).astype(s.dtype))


@implements(np.nanstd)
def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, mean=None,
           correction=None):
    return np.sqrt(nanvar(a, axis, dtype, out, ddof, keepdims, where=where, mean=mean,
                          correction=correction))


@implements(np.nancumsum)
def nancumsum(a, axis=None, dtype=None, out=None):
    return cumsum(replace_nan(a, 0), axis=axis, dtype=dtype, out=out)


@implements(np.nancumprod)
def nancumprod(a, axis=None, dtype=None, out=None):
    return cumprod(replace_nan(a, 1), axis=axis, dtype=dtype, out=out)
