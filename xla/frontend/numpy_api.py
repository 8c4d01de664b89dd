"""NumPy functions on traced arrays: one row per function.

``FUNCTIONS`` maps a NumPy function (``np.sum``, ``np.concatenate``...) to
its implementation over Tracers; ``Tracer.__array_function__`` looks calls up
here, so ``np.sum(t, axis=0)`` in user code lands in ``sum`` below. Each
implementation takes NumPy's signature and follows NumPy's semantics and
dtype rules (a float64 program stays float64; ``np.sum`` of int32 gives the
platform integer, as NumPy does). The same functions are exported by
``xla.numpy`` for what NumPy's protocols cannot reach (creating arrays
inside a trace, ``np.array([tracer, ...])``).

Functions whose output shape depends on the data (``np.unique``,
``np.nonzero``, ...) are not here on purpose: ``unsupported`` explains them
and names the static-size alternative.
"""
import builtins  # the module defines sum, max, min, any, all as NumPy does
import operator
import sys

import numpy as np

from xla.frontend import tracing
from xla.frontend.tracing import (Tracer, as_tracer, broadcast_arrays, broadcast_to, convert,
                                  current_builder, result_type, tracing_error)
from xla.errors import ShapeError

FUNCTIONS = {}


def implements(*numpy_functions):
    """Registers the decorated function for ``numpy_functions``."""
    def register(fn):
        for f in numpy_functions:
            FUNCTIONS[f] = fn
        return fn
    return register


# Data-dependent output shapes: why each can't compile, and what can.
_DATA_DEPENDENT = {
    "unique": "np.unique(x, size=N) is not NumPy; sort with np.sort and compare neighbours, "
              "or compute unique values outside the jitted function",
    "nonzero": "use np.where(condition, x, fill) to keep the shape, or count with np.sum(condition)",
    "flatnonzero": "use np.where(condition, x, fill) to keep the shape",
    "argwhere": "use np.where(condition, x, fill) to keep the shape",
    "extract": "use np.where(condition, x, fill) to keep the shape",
    "compress": "use np.where(condition, x, fill) to keep the shape",
    "trim_zeros": "slice with static bounds instead",
    "setdiff1d": "use np.isin with a static-size result",
    "union1d": "compute it outside the jitted function",
    "intersect1d": "compute it outside the jitted function",
    "bincount": "its length is max(x) + 1; count into a static number of bins n with "
                "np.sum(x[:, None] == np.arange(n), axis=0)",
}


def unsupported(func):
    name = getattr(func, "__name__", str(func))
    module = getattr(func, "__module__", "numpy") or "numpy"
    qual = "np." + name if module.startswith("numpy") and ".linalg" not in module else \
        module.replace("numpy", "np") + "." + name
    hint = _DATA_DEPENDENT.get(name)
    if hint is not None:
        raise tracing_error(f"{qual} has an output shape that depends on the data, so it cannot be "
                            f"compiled (must-compile semantics, like jit_compile=True); {hint}")
    raise tracing_error(f"{qual} is not supported under xla.jit (no HLO lowering for it yet); "
                        "compute it outside the jitted function or use xla.numpy / xla.lax")


# ----- helpers ---------------------------------------------------------------------

def normalize_axis(axis, ndim, what="axis"):
    a = operator.index(axis)
    if not -ndim <= a < ndim:
        raise ShapeError(f"{what} {a} is out of bounds for an array of dimension {ndim}")
    return a % ndim


def normalize_axes(axis, ndim):
    """``axis`` (None, int or sequence) as a sorted tuple of non-negative axes."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (tuple, list)):
        axes = tuple(normalize_axis(a, ndim) for a in axis)
        if len(set(axes)) != len(axes):
            raise ShapeError(f"repeated axis in {tuple(axis)}")
        return tuple(sorted(axes))
    return (normalize_axis(axis, ndim),)


def _check_no_out(name, out):
    if out is not None:
        raise tracing_error(f"np.{name}(..., out=...) writes into an array in place; traced arrays "
                            "are immutable, use the return value")


def _scalar_const(b, value, dtype):
    return b.constant(np.asarray(value, dtype=dtype))


# ----- creation -------------------------------------------------------------------

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


# ----- shape manipulation ---------------------------------------------------------

@implements(np.reshape)
def reshape(a, /, shape=None, order="C", *, newshape=None, copy=None):
    a = as_tracer(a)
    if shape is None:
        shape = newshape
    if order not in ("C", "A"):
        raise tracing_error(f"np.reshape(order={order!r}) is not supported under xla.jit (only 'C')")
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(int(d) for d in shape)
    if shape.count(-1) > 1:
        raise ShapeError("can only specify one unknown dimension")
    if -1 in shape:
        known = 1
        for d in shape:
            if d != -1:
                known *= d
        if known == 0 or a.size % known:
            raise ShapeError(f"cannot reshape array of size {a.size} into shape {shape}")
        shape = tuple(a.size // known if d == -1 else d for d in shape)
    if int(np.prod(shape, dtype=np.int64)) != a.size:
        raise ShapeError(f"cannot reshape array of size {a.size} into shape {shape}")
    if shape == a.shape:
        return a
    return Tracer(current_builder().reshape(a.op, shape), weak=a.weak)


@implements(np.ravel)
def ravel(a, order="C"):
    return reshape(a, (-1,), order=order)


def flatten(a, order="C"):
    return ravel(a, order)


@implements(np.transpose)
def transpose(a, axes=None):
    a = as_tracer(a)
    if axes is None:
        axes = tuple(reversed(range(a.ndim)))
    axes = tuple(normalize_axis(x, a.ndim) for x in axes)
    if sorted(axes) != list(range(a.ndim)):
        raise ShapeError(f"axes {axes} don't match an array of dimension {a.ndim}")
    if axes == tuple(range(a.ndim)):
        return a
    return Tracer(current_builder().transpose(a.op, axes), weak=a.weak)


@implements(np.permute_dims)
def permute_dims(a, axes=None):
    return transpose(a, axes)


@implements(np.swapaxes)
def swapaxes(a, axis1, axis2):
    a = as_tracer(a)
    perm = list(range(a.ndim))
    i, j = normalize_axis(axis1, a.ndim), normalize_axis(axis2, a.ndim)
    perm[i], perm[j] = perm[j], perm[i]
    return transpose(a, perm)


@implements(np.moveaxis)
def moveaxis(a, source, destination):
    a = as_tracer(a)
    src = [normalize_axis(s, a.ndim) for s in np.atleast_1d(source)]
    dst = [normalize_axis(d, a.ndim) for d in np.atleast_1d(destination)]
    order = [n for n in range(a.ndim) if n not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return transpose(a, order)


@implements(np.expand_dims)
def expand_dims(a, axis):
    a = as_tracer(a)
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    out_ndim = a.ndim + len(axes)
    axes = sorted(normalize_axis(x, out_ndim) for x in axes)
    shape = list(a.shape)
    for x in axes:
        shape.insert(x, 1)
    return reshape(a, shape)


@implements(np.squeeze)
def squeeze(a, axis=None):
    a = as_tracer(a)
    if axis is None:
        axes = [i for i, d in enumerate(a.shape) if d == 1]
    else:
        axes = normalize_axes(axis, a.ndim)
        for x in axes:
            if a.shape[x] != 1:
                raise ShapeError("cannot select an axis to squeeze out which has size not equal to one")
    return reshape(a, [d for i, d in enumerate(a.shape) if i not in axes])


@implements(np.broadcast_to)
def broadcast_to_(array, shape, subok=False):
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    return broadcast_to(as_tracer(array), shape)


@implements(np.broadcast_arrays)
def broadcast_arrays_(*args, subok=False):
    return tuple(broadcast_arrays(*(as_tracer(a) for a in args)))


@implements(np.atleast_1d)
def atleast_1d(*arys):
    out = [reshape(a, (1,)) if as_tracer(a).ndim == 0 else as_tracer(a) for a in arys]
    return out[0] if len(out) == 1 else tuple(out)


@implements(np.atleast_2d)
def atleast_2d(*arys):
    out = []
    for a in arys:
        a = as_tracer(a)
        out.append(reshape(a, (1,) * (2 - a.ndim) + a.shape) if a.ndim < 2 else a)
    return out[0] if len(out) == 1 else tuple(out)


# ----- joining ----------------------------------------------------------------------

@implements(np.concatenate)
def concatenate(arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    _check_no_out("concatenate", out)
    arrays = list(arrays)
    if not arrays:
        raise ShapeError("need at least one array to concatenate")
    if axis is None:
        arrays = [ravel(a) for a in arrays]
        axis = 0
    dt = np.dtype(dtype) if dtype is not None else result_type(*arrays)
    ts = [convert(as_tracer(a), dt) for a in arrays]
    ndim = ts[0].ndim
    if ndim == 0:
        raise ShapeError("zero-dimensional arrays cannot be concatenated")
    axis = normalize_axis(axis, ndim)
    for t in ts[1:]:
        if t.ndim != ndim:
            raise ShapeError(f"all the input arrays must have same number of dimensions, but the "
                             f"arrays have {ndim} and {t.ndim} dimensions")
        for i in range(ndim):
            if i != axis and t.shape[i] != ts[0].shape[i]:
                raise ShapeError(f"all the input array dimensions except for the concatenation axis must "
                                 f"match exactly, but along dimension {i}, the arrays have sizes "
                                 f"{ts[0].shape[i]} and {t.shape[i]}")
    if len(ts) == 1:
        return ts[0]
    return Tracer(current_builder().concatenate([t.op for t in ts], axis))


@implements(np.stack)
def stack(arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    _check_no_out("stack", out)
    ts = [as_tracer(a) for a in arrays]
    if not ts:
        raise ShapeError("need at least one array to stack")
    shape = ts[0].shape
    for t in ts[1:]:
        if t.shape != shape:
            raise ShapeError("all input arrays must have the same shape")
    axis = normalize_axis(axis, len(shape) + 1)
    return concatenate([expand_dims(t, axis) for t in ts], axis=axis, dtype=dtype)


@implements(np.vstack)
def vstack(tup, *, dtype=None, casting="same_kind"):
    return concatenate([atleast_2d(a) for a in tup], axis=0, dtype=dtype)


@implements(np.hstack)
def hstack(tup, *, dtype=None, casting="same_kind"):
    arrs = [atleast_1d(a) for a in tup]
    return concatenate(arrs, axis=0 if arrs[0].ndim == 1 else 1, dtype=dtype)


# ----- selection --------------------------------------------------------------------

@implements(np.where)
def where(condition, x=None, y=None):
    if x is None and y is None:
        raise tracing_error("np.where(condition) with one argument returns indices whose number "
                            "depends on the data, so it cannot be compiled; use "
                            "np.where(condition, x, y) to keep the shape")
    if x is None or y is None:
        raise TypeError("np.where takes 1 or 3 arguments")
    dt = result_type(x, y)
    c = convert(as_tracer(condition), np.bool_)
    xt, yt = convert(as_tracer(x), dt), convert(as_tracer(y), dt)
    c, xt, yt = broadcast_arrays(c, xt, yt)
    # An array, never weak: np.where(c, 1.0, 2.0) is a float64 array in
    # NumPy 2, which a float32 array added to it promotes to float64.
    return Tracer(current_builder().select(c.op, xt.op, yt.op), weak=False)


_where = where   # for functions whose NumPy signature has a `where` parameter


@implements(np.clip)
def clip(a, a_min=None, a_max=None, out=None, *, min=None, max=None, **kwargs):
    _check_no_out("clip", out)
    lo = a_min if a_min is not None else min
    hi = a_max if a_max is not None else max
    out_ = as_tracer(a)
    if lo is not None:
        out_ = np.maximum(out_, lo)
    if hi is not None:
        out_ = np.minimum(out_, hi)
    return out_


# ----- reductions -------------------------------------------------------------------

def _sum_dtype(a_dtype):
    """NumPy's accumulator for sum/prod: small integers and bool widen."""
    if a_dtype.kind == "b" or a_dtype.kind == "i" and a_dtype.itemsize < np.dtype(np.int_).itemsize:
        return np.dtype(np.int_)
    if a_dtype.kind == "u" and a_dtype.itemsize < np.dtype(np.uint).itemsize:
        return np.dtype(np.uint)
    return a_dtype


def _identity(opcode, dtype):
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


def reduce(a, opcode, axis, keepdims=False, dtype=None, initial=None):
    """Reduces Tracer ``a`` with the binary HLO ``opcode`` over ``axis``."""
    a = as_tracer(a)
    if dtype is not None:
        a = convert(a, dtype)
    axes = normalize_axes(axis, a.ndim)
    b = current_builder()
    init = _identity(opcode, a.dtype) if initial is None else np.asarray(initial, a.dtype)
    out = a.op
    if axes:
        out = b.reduce(a.op, b.constant(init), b.scalar_computation(opcode, a.dtype), axes)
    elif initial is not None:
        out = b.binary(opcode, a.op, b.broadcast_in_dim(b.constant(init), a.shape, ()))
    t = Tracer(out)
    if keepdims:
        t = reshape(t, [1 if i in axes else d for i, d in enumerate(a.shape)])
    return t


def _reduction(name, opcode, widen):
    def impl(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True, **kw):
        _check_no_out(name, out)
        if where is not True:
            raise tracing_error(f"np.{name}(..., where=...) is not supported under xla.jit; mask "
                                "with np.where first")
        a = as_tracer(a)
        if dtype is None and widen:
            dtype = _sum_dtype(a.dtype)
        if opcode in ("maximum", "minimum") and initial is None:
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
    _check_no_out("any", out)
    return reduce(convert(as_tracer(a), np.bool_), "or", axis, keepdims)


@implements(np.all)
def all(a, axis=None, out=None, keepdims=False, *, where=True):
    _check_no_out("all", out)
    return reduce(convert(as_tracer(a), np.bool_), "and", axis, keepdims)


@implements(np.mean)
def mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=True):
    _check_no_out("mean", out)
    a = as_tracer(a)
    if dtype is None:
        dtype = a.dtype if a.dtype.kind in "fc" else np.dtype(np.float64)
    axes = normalize_axes(axis, a.ndim)
    count = 1
    for x in axes:
        count *= a.shape[x]
    s = reduce(a, "add", axes, keepdims, dtype)
    return np.true_divide(s, np.asarray(count, dtype=s.dtype)) if count else \
        np.true_divide(s, np.asarray(0, dtype=s.dtype))


@implements(np.var)
def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, mean=None,
        correction=None):
    _check_no_out("var", out)
    a = as_tracer(a)
    if correction is not None:
        ddof = correction
    m = globals()["mean"](a, axis, dtype, keepdims=True)
    d = np.subtract(a if dtype is None else convert(a, dtype), m)
    sq = np.real(np.multiply(d, np.conjugate(d))) if d.dtype.kind == "c" else np.multiply(d, d)
    axes = normalize_axes(axis, a.ndim)
    count = 1
    for x in axes:
        count *= a.shape[x]
    s = reduce(sq, "add", axes, keepdims)
    return np.true_divide(s, np.asarray(builtins.max(count - ddof, 0), dtype=s.dtype))


@implements(np.std)
def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, mean=None,
        correction=None):
    return np.sqrt(var(a, axis, dtype, out, ddof, keepdims, correction=correction))


def ufunc_method(ufunc, method, inputs, kwargs):
    """``np.add.reduce`` and friends."""
    opcodes = {np.add: "add", np.multiply: "multiply", np.maximum: "maximum",
               np.minimum: "minimum", np.logical_and: "and", np.logical_or: "or",
               np.bitwise_and: "and", np.bitwise_or: "or", np.bitwise_xor: "xor"}
    if method == "reduce" and ufunc in opcodes:
        a = inputs[0]
        axis = kwargs.pop("axis", 0)
        dtype = kwargs.pop("dtype", None)
        _check_no_out(f"{ufunc.__name__}.reduce", kwargs.pop("out", None))
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
        _check_no_out(f"{ufunc.__name__}.accumulate", kwargs.pop("out", None))
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
        from xla.frontend import indexing
        from xla.frontend.tracing import Tracer
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


# ----- products ---------------------------------------------------------------------

def dot_general(lhs, rhs, contracting, batch=((), ()), preferred=None):
    """HLO dot with dimension numbers; operands converted to their common dtype."""
    dt = result_type(lhs, rhs)
    lhs, rhs = convert(as_tracer(lhs), dt), convert(as_tracer(rhs), dt)
    b = current_builder()
    if dt.kind == "b":
        # NumPy's boolean matmul is "any(a and b)": compute in int32, compare.
        li, ri = convert(lhs, np.int32), convert(rhs, np.int32)
        out = Tracer(b.dot_general(li.op, ri.op, contracting[0], contracting[1], batch[0], batch[1]))
        return convert(out, np.bool_)
    return Tracer(b.dot_general(lhs.op, rhs.op, contracting[0], contracting[1], batch[0], batch[1],
                                preferred))


@implements(np.matmul)
def matmul(x1, x2, /, out=None, **kwargs):
    _check_no_out("matmul", out)
    a, b = as_tracer(x1), as_tracer(x2)
    if a.ndim == 0 or b.ndim == 0:
        raise ShapeError("matmul: Input operand does not have enough dimensions (a scalar)")
    squeeze_a = a.ndim == 1
    squeeze_b = b.ndim == 1
    if squeeze_a:
        a = reshape(a, (1, a.shape[0]))
    if squeeze_b:
        b = reshape(b, (b.shape[0], 1))
    if a.shape[-1] != b.shape[-2]:
        raise ShapeError(f"matmul: Input operand 1 has a mismatch in its core dimension 0, with "
                         f"gufunc signature (n?,k),(k,m?)->(n?,m?) (size {b.shape[-2]} is different "
                         f"from {a.shape[-1]}) for shapes {tuple(x1.shape if hasattr(x1, 'shape') else ())} "
                         f"and {tuple(x2.shape if hasattr(x2, 'shape') else ())}")
    batch = broadcast_shapes_(a.shape[:-2], b.shape[:-2])
    a = broadcast_to(a, batch + a.shape[-2:])
    b = broadcast_to(b, batch + b.shape[-2:])
    nb = len(batch)
    out_ = dot_general(a, b, ((nb + 1,), (nb,)), (tuple(range(nb)), tuple(range(nb))))
    if squeeze_a and squeeze_b:
        return reshape(out_, batch)
    if squeeze_a:
        return reshape(out_, batch + (out_.shape[-1],))
    if squeeze_b:
        return reshape(out_, batch + (out_.shape[-2],))
    return out_


def broadcast_shapes_(*shapes):
    return tracing.broadcast_shapes(*shapes)


@implements(np.dot)
def dot(a, b, out=None):
    _check_no_out("dot", out)
    a, b = as_tracer(a), as_tracer(b)
    if a.ndim == 0 or b.ndim == 0:
        return np.multiply(a, b)
    if b.ndim <= 2:
        return matmul(a, b)
    # N-d: sum over a's last axis and b's second-to-last.
    if a.shape[-1] != b.shape[-2]:
        raise ShapeError(f"shapes {a.shape} and {b.shape} not aligned: {a.shape[-1]} (dim "
                         f"{a.ndim - 1}) != {b.shape[-2]} (dim {b.ndim - 2})")
    out_ = dot_general(a, b, ((a.ndim - 1,), (b.ndim - 2,)))
    return out_


@implements(np.vdot)
def vdot(a, b):
    a = ravel(as_tracer(a))
    b = ravel(as_tracer(b))
    return dot(np.conjugate(a), b)


@implements(np.inner)
def inner(a, b):
    a, b = as_tracer(a), as_tracer(b)
    if a.ndim == 0 or b.ndim == 0:
        return np.multiply(a, b)
    return dot_general(a, b, ((a.ndim - 1,), (b.ndim - 1,)))


@implements(np.outer)
def outer(a, b, out=None):
    _check_no_out("outer", out)
    a, b = ravel(as_tracer(a)), ravel(as_tracer(b))
    return np.multiply(reshape(a, (-1, 1)), reshape(b, (1, -1)))


FUNCTIONS_BY_NAME = {}


def _index_names():
    for f, impl in FUNCTIONS.items():
        FUNCTIONS_BY_NAME.setdefault(getattr(f, "__name__", ""), impl)


_index_names()


# ----- index-producing reductions, sorting, scans -----------------------------------

def _arg_reduce(a, axis, keepdims, direction):
    """argmax/argmax as a variadic reduce over (value, index); the first
    index wins ties and NaN wins everything, as in NumPy."""
    a = as_tracer(a)
    if axis is None:
        a = ravel(a)
        axis = 0
    axis = normalize_axis(axis, a.ndim)
    if a.shape[axis] == 0:
        raise ShapeError(f"attempt to get arg{'max' if direction == 'GT' else 'min'} of an empty sequence")
    b = current_builder()
    idx = b.iota(np.int64, a.shape, axis)
    sub = b.sub_builder(f"arg{'max' if direction == 'GT' else 'min'}")
    from xla.frontend.builder import element_type
    vt = element_type(a.dtype)
    from xla.hlo.shape import Shape
    av = sub.parameter(0, Shape.scalar(vt), "acc_value")
    ai = sub.parameter(1, Shape.scalar(element_type(np.int64)), "acc_index")
    xv = sub.parameter(2, Shape.scalar(vt), "value")
    xi = sub.parameter(3, Shape.scalar(element_type(np.int64)), "index")
    if a.dtype.kind == "c":
        from xla.frontend.ufuncs import _ordered_compare
        better = _ordered_compare(direction)(sub, xv, av)
    else:
        better = sub.compare(xv, av, direction)
    same = sub.compare(xv, av, "EQ")
    if a.dtype.kind in "fc":
        x_nan = sub.compare(xv, xv, "NE")
        a_nan = sub.compare(av, av, "NE")
        # NaN beats numbers; between NaNs (and equal values) the first index.
        better = sub.binary("or", sub.binary("and", x_nan, sub.unary("not", a_nan)),
                            sub.binary("and", better, sub.unary("not", a_nan)))
        same = sub.binary("or", same, sub.binary("and", x_nan, a_nan))
    first = sub.compare(xi, ai, "LT")
    take = sub.binary("or", better, sub.binary("and", same, first))
    sub.build(sub.tuple([sub.select(take, xv, av), sub.select(take, xi, ai)]))
    comp = sub._built
    if a.dtype.kind == "c":
        inf = -np.inf if direction == "GT" else np.inf
        init_v = b.constant(np.asarray(complex(inf, inf), a.dtype))
    else:
        init_v = b.constant(_identity("maximum" if direction == "GT" else "minimum", a.dtype))
    # The largest index, so that any element equal to the init value wins the tie.
    init_i = b.constant(np.int64(np.iinfo(np.int64).max))
    out = b.reduce([a.op, idx], [init_v, init_i], comp, (axis,))
    t = Tracer(b.get_tuple_element(out, 1))
    if keepdims:
        t = expand_dims(t, axis)
    return t


@implements(np.argmax)
def argmax(a, axis=None, out=None, *, keepdims=False):
    _check_no_out("argmax", out)
    return _arg_reduce(a, axis, keepdims, "GT")


@implements(np.argmin)
def argmin(a, axis=None, out=None, *, keepdims=False):
    _check_no_out("argmin", out)
    return _arg_reduce(a, axis, keepdims, "LT")


@implements(np.sort)
def sort(a, axis=-1, kind=None, order=None, *, stable=None):
    from xla.frontend import lax
    a = as_tracer(a)
    if axis is None:
        a, axis = ravel(a), 0
    if a.ndim == 0:
        raise ShapeError("Cannot sort a 0-d array")
    axis = normalize_axis(axis, a.ndim)
    if a.dtype.kind == "c":   # NumPy orders complex numbers lexicographically
        return lax.sort((real(a), imag(a), a), dimension=axis, num_keys=2)[2]
    return lax.sort(a, dimension=axis)


@implements(np.argsort)
def argsort(a, axis=-1, kind=None, order=None, *, stable=None):
    from xla.frontend import lax
    a = as_tracer(a)
    if axis is None:
        a, axis = ravel(a), 0
    axis = normalize_axis(axis, a.ndim)
    idx = Tracer(current_builder().iota(np.int64, a.shape, axis))
    if a.dtype.kind == "c":
        return lax.sort((real(a), imag(a), idx), dimension=axis, is_stable=True, num_keys=2)[2]
    return lax.sort((a, idx), dimension=axis, is_stable=True, num_keys=1)[1]


def _cumulative(a, axis, dtype, opcode, name):
    from xla.frontend import lax
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
    return lax.reduce_window(a, _identity(opcode, a.dtype), opcode, window, [1] * a.ndim, padding)


@implements(np.cumsum)
def cumsum(a, axis=None, dtype=None, out=None):
    _check_no_out("cumsum", out)
    return _cumulative(a, axis, dtype, "add", "cumsum")


@implements(np.cumprod)
def cumprod(a, axis=None, dtype=None, out=None):
    _check_no_out("cumprod", out)
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


# ----- gathering ----------------------------------------------------------------------

@implements(np.take)
def take(a, indices, axis=None, out=None, mode=None):
    _check_no_out("take", out)
    a = as_tracer(a)
    if axis is None:
        a, axis = ravel(a), 0
    axis = normalize_axis(axis, a.ndim)
    index = [slice(None)] * axis + [indices]
    from xla.frontend import indexing
    return indexing.getitem(a, tuple(index), mode=None if mode == "raise" else mode)


@implements(np.take_along_axis)
def take_along_axis(arr, indices, axis=-1):
    a = as_tracer(arr)
    if axis is None:
        a, axis = ravel(a), 0
    axis = normalize_axis(axis, a.ndim)
    idx = as_tracer(indices)
    if idx.ndim != a.ndim:
        raise ShapeError("`indices` and `arr` must have the same number of dimensions")
    shape = tracing.broadcast_shapes(tuple(1 if i == axis else d for i, d in enumerate(a.shape)),
                                     tuple(1 if i == axis else d for i, d in enumerate(idx.shape)))
    index = []
    b = current_builder()
    for i in range(a.ndim):
        if i == axis:
            index.append(idx)
        else:
            dims = [1] * a.ndim
            dims[i] = shape[i] if a.shape[i] != 1 else 1
            index.append(Tracer(b.iota(np.int64, tuple(dims), i)) if dims[i] > 1
                         else tracing.full(tuple(dims), 0, np.int64))
    from xla.frontend import indexing
    return indexing.getitem(a, tuple(index))


# ----- shape-changing copies ------------------------------------------------------------

@implements(np.flip)
def flip(m, axis=None):
    m = as_tracer(m)
    axes = normalize_axes(axis, m.ndim)
    if not axes:
        return m
    return Tracer(current_builder().reverse(m.op, axes), weak=m.weak)


@implements(np.fliplr)
def fliplr(m):
    return flip(m, 1)


@implements(np.flipud)
def flipud(m):
    return flip(m, 0)


@implements(np.roll)
def roll(a, shift, axis=None):
    a = as_tracer(a)
    if axis is None:
        return reshape(roll(ravel(a), shift, 0), a.shape)
    shifts = np.broadcast_to(shift, np.shape(axis)) if isinstance(axis, (tuple, list)) else [shift]
    axes = axis if isinstance(axis, (tuple, list)) else [axis]
    out = a
    for s, ax in zip(shifts, axes):
        ax = normalize_axis(ax, a.ndim)
        n = a.shape[ax]
        if n == 0:
            continue
        s = int(s) % n
        if s == 0:
            continue
        lo = [slice(None)] * a.ndim
        hi = [slice(None)] * a.ndim
        lo[ax] = slice(n - s, None)
        hi[ax] = slice(0, n - s)
        out = concatenate([out[tuple(lo)], out[tuple(hi)]], axis=ax)
    return out


@implements(np.tile)
def tile(A, reps):
    a = as_tracer(A)
    reps = (reps,) if isinstance(reps, int) else tuple(reps)
    d = builtins.max(len(reps), a.ndim)
    reps = (1,) * (d - len(reps)) + reps
    a = reshape(a, (1,) * (d - a.ndim) + a.shape)
    # Broadcast to (r0, s0, r1, s1, ...) then merge pairs.
    inter = []
    dims = []
    for i, (r, s) in enumerate(zip(reps, a.shape)):
        inter += [r, s]
        dims.append(2 * i + 1)
    b = current_builder()
    out = Tracer(b.broadcast_in_dim(a.op, tuple(inter), tuple(dims)))
    return reshape(out, tuple(r * s for r, s in zip(reps, a.shape)))


@implements(np.repeat)
def repeat(a, repeats, axis=None):
    a = as_tracer(a)
    if axis is None:
        a, axis = ravel(a), 0
    axis = normalize_axis(axis, a.ndim)
    if isinstance(repeats, Tracer):
        raise tracing_error("np.repeat with traced repeats has a data-dependent output shape; "
                            "pass repeats as a Python int or NumPy array")
    reps = np.asarray(repeats)
    if reps.ndim == 0:
        r = int(reps)
        shape = a.shape[:axis + 1] + (r,) + a.shape[axis + 1:]
        dims = tuple(range(axis + 1)) + tuple(range(axis + 2, a.ndim + 1))
        b = current_builder()
        out = Tracer(b.broadcast_in_dim(a.op, shape, dims))
        return reshape(out, a.shape[:axis] + (a.shape[axis] * r,) + a.shape[axis + 1:])
    index = np.repeat(np.arange(a.shape[axis]), reps)
    return take(a, index, axis=axis)


@implements(np.pad)
def pad(array, pad_width, mode="constant", **kwargs):
    a = as_tracer(array)
    pw = np.broadcast_to(np.asarray(pad_width, dtype=np.int64), (a.ndim, 2))
    if (pw < 0).any():
        raise ValueError("index can't contain negative values")
    b = current_builder()
    if mode == "constant":
        cv = np.broadcast_to(np.asarray(kwargs.get("constant_values", 0)), (a.ndim, 2))
        out = a
        if np.all(cv == cv.flat[0]):
            value = b.constant(np.asarray(cv.flat[0]).astype(a.dtype))
            return Tracer(b.pad(a.op, value, [(int(lo), int(hi), 0) for lo, hi in pw]))
        for ax in range(a.ndim):
            lo, hi = pw[ax]
            parts = []
            if lo:
                shape = list(out.shape)
                shape[ax] = lo
                parts.append(tracing.full(shape, cv[ax][0], a.dtype))
            parts.append(out)
            if hi:
                shape = list(out.shape)
                shape[ax] = hi
                parts.append(tracing.full(shape, cv[ax][1], a.dtype))
            out = concatenate(parts, axis=ax)
        return out
    if mode not in ("edge", "reflect", "symmetric", "wrap"):
        raise tracing_error(f"np.pad(mode={mode!r}) is not supported under xla.jit "
                            "(constant, edge, reflect, symmetric, wrap are)")
    out = a
    for ax in range(a.ndim):
        lo, hi = int(pw[ax][0]), int(pw[ax][1])
        n = out.shape[ax]
        if lo == hi == 0:
            continue
        if n == 0:
            raise ValueError(f"can't extend empty axis {ax} using modes other than 'constant'")
        idx = np.arange(-lo, n + hi)
        if mode == "edge":
            idx = np.clip(idx, 0, n - 1)
        elif mode == "wrap":
            idx = idx % n
        elif mode == "reflect":
            if n == 1:
                idx = np.zeros_like(idx)
            else:
                period = 2 * (n - 1)
                idx = np.abs(idx) % period
                idx = np.where(idx >= n, period - idx, idx)
        else:  # symmetric
            period = 2 * n
            idx = idx % period
            idx = np.where(idx >= n, period - 1 - idx, idx)
        out = take(out, idx, axis=ax)
    return out


# ----- diagonals and triangles ------------------------------------------------------------

def _tri_mask(n, m, k, lower):
    b = current_builder()
    rows = b.iota(np.int64, (n, m), 0)
    cols = b.iota(np.int64, (n, m), 1)
    shifted = b.binary("add", rows, b.broadcast_in_dim(b.constant(np.int64(k)), (n, m), ()))
    return Tracer(b.compare(cols, shifted, "LE" if lower else "GT"))


@implements(np.tril)
def tril(m, k=0):
    m = as_tracer(m)
    mask = broadcast_to(_tri_mask(m.shape[-2], m.shape[-1], k, True), m.shape)
    return where(mask, m, zeros_like(m))


@implements(np.triu)
def triu(m, k=0):
    m = as_tracer(m)
    mask = broadcast_to(_tri_mask(m.shape[-2], m.shape[-1], k - 1, False), m.shape)
    return where(mask, m, zeros_like(m))


@implements(np.diagonal)
def diagonal(a, offset=0, axis1=0, axis2=1):
    a = as_tracer(a)
    a1, a2 = normalize_axis(axis1, a.ndim), normalize_axis(axis2, a.ndim)
    rest = [i for i in range(a.ndim) if i not in (a1, a2)]
    t = transpose(a, rest + [a1, a2])
    n, m = t.shape[-2], t.shape[-1]
    if offset >= 0:
        length = builtins.max(0, builtins.min(n, m - offset))
        rows, cols = np.arange(length), np.arange(length) + offset
    else:
        length = builtins.max(0, builtins.min(n + offset, m))
        rows, cols = np.arange(length) - offset, np.arange(length)
    lead = (slice(None),) * (t.ndim - 2)
    from xla.frontend import indexing
    return indexing.getitem(t, lead + (rows, cols))


@implements(np.diag)
def diag(v, k=0):
    v = as_tracer(v)
    if v.ndim == 2:
        return diagonal(v, k)
    if v.ndim != 1:
        raise ValueError("Input must be 1- or 2-d.")
    n = v.shape[0] + builtins.abs(k)
    b = current_builder()
    rows = b.iota(np.int64, (n, n), 0)
    cols = b.iota(np.int64, (n, n), 1)
    on = Tracer(b.compare(b.binary("subtract", cols, rows),
                          b.broadcast_in_dim(b.constant(np.int64(k)), (n, n), ()), "EQ"))
    # On the diagonal, column c holds v[c - k] (k >= 0) or v[c] (k < 0).
    src = pad(v, (builtins.max(k, 0), builtins.max(-k, 0)))
    vals = broadcast_to(reshape(src, (1, n)), (n, n))
    return where(on, vals, zeros_like(vals))


@implements(np.trace)
def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    _check_no_out("trace", out)
    return sum(diagonal(a, offset, axis1, axis2), axis=-1, dtype=dtype)


# ----- splitting --------------------------------------------------------------------------

@implements(np.array_split)
def array_split(ary, indices_or_sections, axis=0):
    a = as_tracer(ary)
    axis = normalize_axis(axis, a.ndim)
    n = a.shape[axis]
    if isinstance(indices_or_sections, (int, np.integer)):
        sections = int(indices_or_sections)
        if sections <= 0:
            raise ValueError("number sections must be larger than 0.")
        each, extra = divmod(n, sections)
        sizes = [each + 1] * extra + [each] * (sections - extra)
        bounds = np.cumsum([0] + sizes)
    else:
        bounds = [0] + [int(i) for i in indices_or_sections] + [n]
    out = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        index = [slice(None)] * a.ndim
        index[axis] = slice(int(lo), int(hi))
        out.append(a[tuple(index)])
    return out


@implements(np.split)
def split(ary, indices_or_sections, axis=0):
    a = as_tracer(ary)
    if isinstance(indices_or_sections, (int, np.integer)) and \
            a.shape[normalize_axis(axis, a.ndim)] % int(indices_or_sections):
        raise ValueError("array split does not result in an equal division")
    return array_split(a, indices_or_sections, axis)


# ----- comparisons, rounding, nan-aware reductions -----------------------------------------

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


@implements(np.round, np.around)
def round(a, decimals=0, out=None):
    _check_no_out("round", out)
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


def _nan_to(a, value):
    a = as_tracer(a)
    if a.dtype.kind not in "fc":
        return a
    return where(np.isnan(a), np.asarray(value, a.dtype), a)


@implements(np.nansum)
def nansum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True):
    return sum(_nan_to(a, 0), axis=axis, dtype=dtype, out=out, keepdims=keepdims, initial=initial)


@implements(np.nanprod)
def nanprod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True):
    return prod(_nan_to(a, 1), axis=axis, dtype=dtype, out=out, keepdims=keepdims, initial=initial)


@implements(np.nanmax)
def nanmax(a, axis=None, out=None, keepdims=False, initial=None, where=True):
    return max(_nan_to(a, -np.inf), axis=axis, out=out, keepdims=keepdims, initial=initial)


@implements(np.nanmin)
def nanmin(a, axis=None, out=None, keepdims=False, initial=None, where=True):
    return min(_nan_to(a, np.inf), axis=axis, out=out, keepdims=keepdims, initial=initial)


@implements(np.nanmean)
def nanmean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=True):
    a = as_tracer(a)
    count = sum(np.logical_not(np.isnan(a)), axis=axis, keepdims=keepdims)
    s = nansum(a, axis=axis, dtype=dtype, keepdims=keepdims)
    return np.true_divide(s, count.astype(s.dtype))


@implements(np.average)
def average(a, axis=None, weights=None, returned=False, *, keepdims=False):
    a = as_tracer(a)
    if weights is None:
        avg = mean(a, axis=axis, keepdims=keepdims)
        count = np.asarray(a.size // builtins.max(avg.size, 1), dtype=avg.dtype)
        return (avg, broadcast_to(count, avg.shape)) if returned else avg
    w = as_tracer(weights)
    if w.shape != a.shape:
        if axis is None or w.ndim != 1:
            raise ShapeError("Axis must be specified when shapes of a and weights differ.")
        ax = normalize_axis(axis, a.ndim)
        w = reshape(w, [w.shape[0] if i == ax else 1 for i in range(a.ndim)])
        w = broadcast_to(w, a.shape)
    dt = result_type(a, w, 1.0)
    scl = sum(convert(w, dt), axis=axis, keepdims=keepdims)
    avg = np.true_divide(sum(np.multiply(convert(a, dt), convert(w, dt)), axis=axis,
                             keepdims=keepdims), scl)
    return (avg, scl) if returned else avg


@implements(np.ptp)
def ptp(a, axis=None, out=None, keepdims=False):
    _check_no_out("ptp", out)
    return np.subtract(max(a, axis=axis, keepdims=keepdims), min(a, axis=axis, keepdims=keepdims))


@implements(np.count_nonzero)
def count_nonzero(a, axis=None, *, keepdims=False):
    return sum(convert(as_tracer(a), np.bool_), axis=axis, keepdims=keepdims, dtype=np.int_)


@implements(np.real)
def real(val):
    v = as_tracer(val)
    return Tracer(current_builder().unary("real", v.op)) if v.dtype.kind == "c" else v


@implements(np.imag)
def imag(val):
    v = as_tracer(val)
    if v.dtype.kind == "c":
        return Tracer(current_builder().unary("imag", v.op))
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


@implements(np.cross)
def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    a, b = as_tracer(a), as_tracer(b)
    if axis is not None:
        axisa = axisb = axisc = axis
    a = moveaxis(a, axisa, -1)
    b = moveaxis(b, axisb, -1)
    if a.shape[-1] not in (2, 3) or b.shape[-1] not in (2, 3):
        raise ValueError("incompatible dimensions for cross product (dimension must be 2 or 3)")
    if a.shape[-1] == 2 and b.shape[-1] == 2:
        return a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]
    if a.shape[-1] == 2:
        a = pad(a, [(0, 0)] * (a.ndim - 1) + [(0, 1)])
    if b.shape[-1] == 2:
        b = pad(b, [(0, 0)] * (b.ndim - 1) + [(0, 1)])
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    c = stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)
    return moveaxis(c, -1, axisc)


@implements(np.kron)
def kron(a, b):
    a, b = as_tracer(a), as_tracer(b)
    nd = builtins.max(a.ndim, b.ndim)
    a = reshape(a, (1,) * (nd - a.ndim) + a.shape)
    b = reshape(b, (1,) * (nd - b.ndim) + b.shape)
    ea = reshape(a, tuple(x for d in a.shape for x in (d, 1)))
    eb = reshape(b, tuple(x for d in b.shape for x in (1, d)))
    return reshape(np.multiply(ea, eb), tuple(x * y for x, y in zip(a.shape, b.shape)))


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


@implements(np.searchsorted)
def searchsorted(a, v, side="left", sorter=None):
    a = as_tracer(a)
    if sorter is not None:
        a = take(a, sorter)
    v = as_tracer(v)
    dt = result_type(a, v)
    a, v = convert(a, dt), convert(v, dt)
    va = expand_dims(v, -1)
    cmp = np.less(a, va) if side == "left" else np.less_equal(a, va)
    return sum(cmp, axis=-1, dtype=np.int64)


def _quantile_dtype(a, q):
    """NumPy's result dtype: the float type of ``a`` promoted with ``q`` (a
    Python number is weak)."""
    dt = a.dtype if a.dtype.kind in "fc" else np.dtype(np.float64)
    if type(q) in tracing.PYTHON_SCALARS:
        return dt
    return np.result_type(dt, np.asarray(q).dtype)


def _quantile(a, q, axis, keepdims, name, q_src=None):
    q_src = q if q_src is None else q_src
    a = as_tracer(a)
    if axis is None:
        if keepdims:
            r = _quantile(ravel(a), q, 0, False, name, q_src)
            return reshape(r, r.shape + (1,) * a.ndim)
        return _quantile(ravel(a), q, 0, False, name, q_src)
    axis = normalize_axis(axis, a.ndim)
    if isinstance(q, Tracer):
        raise tracing_error(f"np.{name} with a traced q is not supported; pass q as a constant")
    q = np.asarray(q, dtype=np.float64)
    if np.any((q < 0) | (q > 1)):
        raise ValueError("Quantiles must be in the range [0, 1]")
    s = convert(sort(a, axis=axis), _quantile_dtype(a, q_src))
    n = a.shape[axis]
    pos = q * (n - 1)
    lo = np.floor(pos).astype(np.int64)
    hi = np.minimum(lo + 1, n - 1)
    frac = (pos - lo).astype(s.dtype)
    vlo = take(s, lo.reshape(-1), axis=axis)
    vhi = take(s, hi.reshape(-1), axis=axis)
    shape = [1] * s.ndim
    shape[axis] = lo.size
    f = np.asarray(frac.reshape(-1)).reshape(shape)
    r = vlo + (vhi - vlo) * f
    # NaNs propagate as in NumPy.
    has_nan = any(np.isnan(s), axis=axis, keepdims=True) if s.dtype.kind == "f" else None
    if has_nan is not None:
        r = where(has_nan, np.asarray(np.nan, s.dtype), r)
    r = moveaxis(r, axis, 0)
    r = reshape(r, q.shape + r.shape[1:])
    if keepdims:
        r = expand_dims(r, q.ndim + axis)
    return r


def _quantile_functions(kernel, prefix):
    """np.{prefix}quantile, np.{prefix}percentile and np.{prefix}median over
    ``kernel(a, q, axis, keepdims, name[, q as given])``."""
    def check(name, out, method):
        _check_no_out(name, out)
        if method != "linear":
            raise tracing_error(f"np.{name}(method={method!r}) is not supported under xla.jit (linear is)")

    def quantile_(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, **kw):
        check(prefix + "quantile", out, method)
        return kernel(a, q, axis, keepdims, prefix + "quantile")

    def percentile_(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, **kw):
        check(prefix + "percentile", out, method)
        return kernel(a, np.asarray(q) / 100.0, axis, keepdims, prefix + "percentile", q)

    def median_(a, axis=None, out=None, overwrite_input=False, keepdims=False):
        _check_no_out(prefix + "median", out)
        return kernel(a, 0.5, axis, keepdims, prefix + "median")

    for fn, name in ((quantile_, "quantile"), (percentile_, "percentile"), (median_, "median")):
        fn.__name__ = fn.__qualname__ = prefix + name
        implements(getattr(np, prefix + name))(fn)
    return quantile_, percentile_, median_


quantile, percentile, median = _quantile_functions(_quantile, "")


@implements(np.tensordot)
def tensordot(a, b, axes=2):
    a, b = as_tracer(a), as_tracer(b)
    if isinstance(axes, (int, np.integer)):
        ax_a = list(range(a.ndim - axes, a.ndim))
        ax_b = list(range(axes))
    else:
        ax_a, ax_b = axes
        ax_a = [normalize_axis(x, a.ndim) for x in np.atleast_1d(ax_a)]
        ax_b = [normalize_axis(x, b.ndim) for x in np.atleast_1d(ax_b)]
    return dot_general(a, b, (tuple(ax_a), tuple(ax_b)))


# ----- norms ------------------------------------------------------------------------------

@implements(np.linalg.norm)
def norm(x, ord=None, axis=None, keepdims=False):
    x = as_tracer(x)
    if x.dtype.kind not in "fc":
        x = convert(x, np.float64)
    absx = np.abs(x)
    if axis is None and ord is None:
        return np.sqrt(sum(np.real(x * np.conjugate(x)) if x.dtype.kind == "c" else x * x,
                           keepdims=keepdims) if not keepdims else
                       sum(absx * absx, axis=None, keepdims=True))
    if axis is None:
        axis = tuple(range(x.ndim))
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    if len(axes) == 1:
        if ord is None or ord == 2:
            return np.sqrt(sum(absx * absx, axis=axes, keepdims=keepdims))
        if ord == np.inf:
            return max(absx, axis=axes, keepdims=keepdims)
        if ord == -np.inf:
            return min(absx, axis=axes, keepdims=keepdims)
        if ord == 0:
            return sum(np.not_equal(x, 0).astype(absx.dtype), axis=axes, keepdims=keepdims)
        if ord == 1:
            return sum(absx, axis=axes, keepdims=keepdims)
        p = np.asarray(ord, absx.dtype)
        return sum(absx ** p, axis=axes, keepdims=keepdims) ** (1 / p)
    if len(axes) == 2:
        r, c = (normalize_axis(a, x.ndim) for a in axes)
        if ord in (None, "fro"):
            return np.sqrt(sum(absx * absx, axis=axes, keepdims=keepdims))
        if ord == 1:
            out = max(sum(absx, axis=r, keepdims=True), axis=c, keepdims=True)
        elif ord == -1:
            out = min(sum(absx, axis=r, keepdims=True), axis=c, keepdims=True)
        elif ord == np.inf:
            out = max(sum(absx, axis=c, keepdims=True), axis=r, keepdims=True)
        elif ord == -np.inf:
            out = min(sum(absx, axis=c, keepdims=True), axis=r, keepdims=True)
        else:
            raise tracing_error(f"np.linalg.norm(ord={ord!r}) for matrices is not supported under "
                                "xla.jit (None, 'fro', 1, -1, inf, -inf are)")
        return out if keepdims else squeeze(out, axis=(r, c))
    raise ValueError("Improper number of dimensions to norm.")


# ----- einsum -------------------------------------------------------------------------------

@implements(np.einsum)
def einsum(*operands, out=None, optimize=False, dtype=None, **kwargs):
    """Lowered to one dot_general per pair of operands (left to right),
    with diagonals taken and lone indices summed first."""
    _check_no_out("einsum", out)
    if not operands or not isinstance(operands[0], str):
        raise tracing_error("np.einsum under xla.jit needs the subscripts string form")
    spec, arrays = operands[0].replace(" ", ""), [as_tracer(a) for a in operands[1:]]
    if "->" in spec:
        inputs, output = spec.split("->")
        explicit = True
    else:
        inputs, output, explicit = spec, None, False
    in_specs = inputs.split(",")
    if len(in_specs) != len(arrays):
        raise ValueError("more operands provided to einstein sum function than specified in the "
                         "subscripts string" if len(arrays) > len(in_specs) else
                         "fewer operands provided to einstein sum function than specified")
    # Expand "..." into fresh upper-case letters.
    ell_rank = 0
    for s, a in zip(in_specs, arrays):
        if "..." in s:
            ell_rank = builtins.max(ell_rank, a.ndim - (len(s) - 3))
    ell = "".join(chr(ord("A") + i) for i in range(ell_rank))
    specs = []
    for s, a in zip(in_specs, arrays):
        if "..." in s:
            k = a.ndim - (len(s) - 3)
            s = s.replace("...", ell[ell_rank - k:])
        if len(s) != a.ndim:
            raise ValueError(f"einstein sum subscripts string {s!r} does not match operand "
                             f"dimension {a.ndim}")
        specs.append(s)
    if output is None:
        counts = {}
        for s in specs:
            for c in s:
                counts[c] = counts.get(c, 0) + 1
        output = ell + "".join(sorted(c for c, n in counts.items() if n == 1 and c not in ell))
    else:
        output = output.replace("...", ell)
    sizes = {}
    for s, a in zip(specs, arrays):
        for c, d in zip(s, a.shape):
            if sizes.setdefault(c, d) != d and d != 1 and sizes[c] != 1:
                raise ShapeError(f"operands could not be broadcast together in einsum: index "
                                 f"{c!r} has sizes {sizes[c]} and {d}")
            if sizes[c] == 1:
                sizes[c] = d
    dt = np.dtype(dtype) if dtype is not None else result_type(*arrays)
    ops = []
    for s, a in zip(specs, arrays):
        a = convert(a, dt)
        a, s = _einsum_diagonal(a, s)
        ops.append((a, s))

    def needed_later(k, c):
        return c in output or builtins.any(c in s for _, s in ops[k + 1:])

    # Sum indices that appear in one operand only and not in the output.
    acc, acc_s = ops[0]
    acc, acc_s = _einsum_sum_lone(acc, acc_s, lambda c: needed_later(0, c))
    for k in range(1, len(ops)):
        b_, b_s = ops[k]
        b_, b_s = _einsum_sum_lone(b_, b_s, lambda c: c in acc_s or needed_later(k, c))
        acc, acc_s = _einsum_pair(acc, acc_s, b_, b_s, lambda c: needed_later(k, c))
    acc, acc_s = _einsum_sum_lone(acc, acc_s, lambda c: c in output)
    perm = [acc_s.index(c) for c in output]
    result = transpose(acc, perm)
    target = tuple(sizes[c] for c in output)
    return broadcast_to(result, target) if result.shape != target else result


def _einsum_diagonal(a, s):
    """Repeated letters in one operand take the diagonal."""
    while len(set(s)) != len(s):
        for c in s:
            if s.count(c) > 1:
                i = s.index(c)
                j = s.index(c, i + 1)
                a = diagonal(a, 0, i, j)          # moves the diagonal to the end
                s = "".join(ch for k, ch in enumerate(s) if k not in (i, j)) + c
                break
    return a, s


def _einsum_sum_lone(a, s, keep):
    drop = [i for i, c in enumerate(s) if not keep(c)]
    if not drop:
        return a, s
    return sum(a, axis=tuple(drop)), "".join(c for i, c in enumerate(s) if i not in drop)


def _einsum_pair(a, a_s, b, b_s, keep):
    common = [c for c in a_s if c in b_s]
    batch = [c for c in common if keep(c)]
    contract = [c for c in common if not keep(c)]
    # Size-1 broadcasting of a shared index: broadcast both first.
    for c in common:
        da, db = a.shape[a_s.index(c)], b.shape[b_s.index(c)]
        if da != db:
            n = builtins.max(da, db)
            if da == 1:
                a = broadcast_to(a, tuple(n if ch == c else d for ch, d in zip(a_s, a.shape)))
            else:
                b = broadcast_to(b, tuple(n if ch == c else d for ch, d in zip(b_s, b.shape)))
    out = dot_general(a, b, (tuple(a_s.index(c) for c in contract), tuple(b_s.index(c) for c in contract)),
                      (tuple(a_s.index(c) for c in batch), tuple(b_s.index(c) for c in batch)))
    out_s = "".join(batch) + "".join(c for c in a_s if c not in common) + \
        "".join(c for c in b_s if c not in common)
    return out, out_s


# ----- more NaN-aware functions ------------------------------------------------------------

@implements(np.nanvar)
def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, mean=None,
           correction=None):
    _check_no_out("nanvar", out)
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
    return np.sqrt(nanvar(a, axis, dtype, out, ddof, keepdims, correction=correction))


@implements(np.nanargmax)
def nanargmax(a, axis=None, out=None, *, keepdims=False):
    """NaNs are skipped; an all-NaN slice gives index 0 (NumPy raises)."""
    return argmax(_nan_to(a, -np.inf), axis=axis, out=out, keepdims=keepdims)


@implements(np.nanargmin)
def nanargmin(a, axis=None, out=None, *, keepdims=False):
    """NaNs are skipped; an all-NaN slice gives index 0 (NumPy raises)."""
    return argmin(_nan_to(a, np.inf), axis=axis, out=out, keepdims=keepdims)


@implements(np.nancumsum)
def nancumsum(a, axis=None, dtype=None, out=None):
    return cumsum(_nan_to(a, 0), axis=axis, dtype=dtype, out=out)


@implements(np.nancumprod)
def nancumprod(a, axis=None, dtype=None, out=None):
    return cumprod(_nan_to(a, 1), axis=axis, dtype=dtype, out=out)


if hasattr(np, "cumulative_prod"):
    @implements(np.cumulative_prod)
    def cumulative_prod(x, /, *, axis=None, dtype=None, out=None, include_initial=False):
        r = cumprod(x, axis, dtype, out)
        if include_initial:
            ax = 0 if axis is None else axis
            r = concatenate([ones_like(take(r, [0], axis=ax)), r], axis=ax)
        return r


def _nan_quantile(a, q, axis, keepdims, name, q_src=None):
    """Linear-interpolation quantiles of the non-NaN values: NaNs sort last,
    so each slice's count of numbers picks the positions (traced)."""
    q_src = q if q_src is None else q_src
    a = as_tracer(a)
    if a.dtype.kind != "f":
        return _quantile(a, q, axis, keepdims, name, q_src)
    if axis is None:
        r = _nan_quantile(ravel(a), q, 0, False, name, q_src)
        return reshape(r, r.shape + (1,) * a.ndim) if keepdims else r
    axis = normalize_axis(axis, a.ndim)
    q = np.asarray(q, dtype=np.float64)
    if np.any((q < 0) | (q > 1)):
        raise ValueError("Quantiles must be in the range [0, 1]")
    s = moveaxis(convert(sort(a, axis=axis), _quantile_dtype(a, q_src)), axis, -1)
    n = sum(np.logical_not(np.isnan(s)), axis=-1, keepdims=True)        # int64
    last = np.maximum(n - 1, 0)
    results = []
    for qv in q.reshape(-1):
        pos = np.multiply(last.astype(s.dtype), np.asarray(qv, s.dtype))
        lo = np.floor(pos)
        frac = pos - lo
        lo_i = lo.astype(np.int64)
        hi_i = np.minimum(lo_i + 1, last)
        vlo = take_along_axis(s, lo_i, axis=-1)
        vhi = take_along_axis(s, hi_i, axis=-1)
        r = vlo + (vhi - vlo) * frac
        r = where(np.equal(n, 0), np.asarray(np.nan, s.dtype), r)   # all-NaN slice
        results.append(r)
    r = concatenate(results, axis=-1)                                # (..., len(q))
    r = moveaxis(r, -1, 0)
    r = reshape(r, q.shape + r.shape[1:])
    if keepdims:
        r = expand_dims(r, q.ndim + axis)
    return r


nanquantile, nanpercentile, nanmedian = _quantile_functions(_nan_quantile, "nan")


# ----- statistics ---------------------------------------------------------------------------

@implements(np.cov)
def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, *, dtype=None):
    if fweights is not None or aweights is not None:
        raise tracing_error("np.cov(fweights=/aweights=) is not supported under xla.jit")
    x = atleast_2d(as_tracer(m))
    if not rowvar and x.shape[0] != 1:
        x = transpose(x)
    if y is not None:
        yt = atleast_2d(as_tracer(y))
        if not rowvar and yt.shape[0] != 1:
            yt = transpose(yt)
        x = concatenate([x, yt], axis=0)
    dt = np.dtype(dtype) if dtype is not None else np.result_type(x.dtype, np.float64)
    x = convert(x, dt)
    if ddof is None:
        ddof = 0 if bias else 1
    n = x.shape[1]
    x = x - mean(x, axis=1, keepdims=True)
    c = matmul(x, np.conjugate(transpose(x)))
    c = np.true_divide(c, np.asarray(builtins.max(n - ddof, 0), dt))
    return squeeze(c)


@implements(np.corrcoef)
def corrcoef(x, y=None, rowvar=True, *, dtype=None):
    c = cov(x, y, rowvar, dtype=dtype)
    if c.ndim == 0:
        return np.true_divide(c, c)
    d = np.real(diagonal(c))
    sd = np.sqrt(d)
    c = np.true_divide(np.true_divide(c, reshape(sd, (-1, 1))), reshape(sd, (1, -1)))
    if c.dtype.kind == "c":
        return c
    return clip(c, -1, 1)


# ----- differences, convolution, interpolation ---------------------------------------------

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


def _full_correlate(a, v):
    """c[k] = sum_j a_padded[k + j] v[j] for the full overlap, as one gather
    and one dot (the window positions are static)."""
    n, m = a.shape[0], v.shape[0]
    ap = pad(a, (m - 1, m - 1))
    idx = np.arange(n + m - 1)[:, None] + np.arange(m)[None, :]
    from xla.frontend import indexing
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


@implements(np.polyval)
def polyval(p, x):
    if not isinstance(p, Tracer):
        p = np.asarray(p)
    y = zeros_like(as_tracer(x))
    for k in range(len(p)):
        y = y * x + p[k]
    return y


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


# ----- selection helpers -------------------------------------------------------------------

@implements(np.select)
def select(condlist, choicelist, default=0):
    if len(condlist) != len(choicelist):
        raise ValueError("list of cases must be same length as list of conditions")
    if not condlist:
        raise ValueError("select with an empty condition list is not possible")
    dt = result_type(*choicelist, default)
    out = convert(as_tracer(default), dt)
    for c, v in reversed(list(zip(condlist, choicelist))):
        out = where(c, convert(as_tracer(v), dt), out)
    return out


@implements(np.isin)
def isin(element, test_elements, assume_unique=False, invert=False, *, kind=None):
    e = as_tracer(element)
    t = ravel(as_tracer(test_elements))
    if t.shape[0] == 0:
        return tracing.full(e.shape, bool(invert), np.bool_)
    hit = any(np.equal(expand_dims(e, -1), t), axis=-1)
    return np.logical_not(hit) if invert else hit


@implements(np.nan_to_num)
def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    x = as_tracer(x)
    if x.dtype.kind == "c":
        return Tracer(current_builder().binary(
            "complex", nan_to_num(real(x), nan=nan, posinf=posinf, neginf=neginf).op,
            nan_to_num(imag(x), nan=nan, posinf=posinf, neginf=neginf).op))
    if x.dtype.kind != "f":
        return x
    info = np.finfo(x.dtype)
    hi = info.max if posinf is None else posinf
    lo = info.min if neginf is None else neginf
    x = where(np.isnan(x), np.asarray(nan, x.dtype), x)
    x = where(np.equal(x, np.inf), np.asarray(hi, x.dtype), x)
    return where(np.equal(x, -np.inf), np.asarray(lo, x.dtype), x)


@implements(np.digitize)
def digitize(x, bins, right=False):
    """Bins must be monotonic; NumPy checks, and so do we when they are a
    NumPy array (traced bins are taken as increasing)."""
    if isinstance(bins, Tracer):
        increasing = True
    else:
        bins_np = np.asarray(bins)
        d = np.diff(bins_np)
        if np.all(d >= 0):
            increasing = True
        elif np.all(d <= 0):
            increasing = False
        else:
            raise ValueError("bins must be monotonically increasing or decreasing")
    side = "left" if right else "right"
    if increasing:
        return searchsorted(bins, x, side=side)
    b = flip(as_tracer(bins))
    return np.subtract(b.shape[0], searchsorted(b, x, side=side))


@implements(np.partition)
def partition(a, kth, axis=-1, kind="introselect", order=None):
    """A full sort, which is one valid partition (NumPy leaves the order
    within each side unspecified)."""
    return sort(a, axis=axis)


@implements(np.argpartition)
def argpartition(a, kth, axis=-1, kind="introselect", order=None):
    return argsort(a, axis=axis)


@implements(np.lexsort)
def lexsort(keys, axis=-1):
    from xla.frontend import lax
    ks = [as_tracer(k) for k in keys] if not isinstance(keys, Tracer) else \
        [keys[i] for i in range(keys.shape[0])]
    ks = broadcast_arrays(*ks)
    axis = normalize_axis(axis, ks[0].ndim)
    idx = Tracer(current_builder().iota(np.int64, ks[0].shape, axis))
    out = lax.sort(tuple(reversed(ks)) + (idx,), dimension=axis, is_stable=True, num_keys=len(ks))
    return out[-1]


# ----- small elementwise functions -----------------------------------------------------------

@implements(np.sinc)
def sinc(x):
    x = as_tracer(x)
    y = np.multiply(np.pi, where(np.equal(x, 0), 1.0e-20, x))
    return np.true_divide(np.sin(y), y)


@implements(np.fix)
def fix(x, out=None):
    _check_no_out("fix", out)
    x = as_tracer(x)
    return where(np.greater_equal(x, 0), np.floor(x), np.ceil(x))


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


# ----- static facts and shape helpers ---------------------------------------------------------

@implements(np.shape)
def shape(a):
    return as_tracer(a).shape


@implements(np.ndim)
def ndim(a):
    return as_tracer(a).ndim


@implements(np.size)
def size(a, axis=None):
    a = as_tracer(a)
    return a.size if axis is None else a.shape[normalize_axis(axis, a.ndim)]


@implements(np.copy)
def copy(a, order="K", subok=False):
    t = as_tracer(a)
    return Tracer(t.op, weak=t.weak)     # a new array: never a view, updates apart


@implements(np.matrix_transpose)
def matrix_transpose(x, /):
    x = as_tracer(x)
    if x.ndim < 2:
        raise ValueError(f"Input array must be at least 2-dimensional, but it is {x.ndim}")
    return swapaxes(x, -1, -2)


def vecdot(x1, x2, /, *, axis=-1):
    """``np.vecdot`` (a gufunc, reached through ``ufuncs.dispatch``)."""
    a, b = broadcast_arrays(as_tracer(x1), as_tracer(x2))
    return sum(np.multiply(np.conjugate(a), b), axis=axis)


@implements(np.rollaxis)
def rollaxis(a, axis, start=0):
    a = as_tracer(a)
    n = a.ndim
    axis = normalize_axis(axis, n)
    if start < 0:
        start += n
    if not 0 <= start < n + 1:
        raise ShapeError(f"'start' arg requires {-n} <= start < {n + 1}, but {start} was passed in")
    if axis < start:
        start -= 1
    if axis == start:
        return a
    order = [i for i in range(n) if i != axis]
    order.insert(start, axis)
    return transpose(a, order)


@implements(np.rot90)
def rot90(m, k=1, axes=(0, 1)):
    m = as_tracer(m)
    a0, a1 = (normalize_axis(x, m.ndim) for x in axes)
    if a0 == a1:
        raise ValueError("Axes must be different.")
    k %= 4
    if k == 0:
        return m
    if k == 2:
        return flip(flip(m, a0), a1)
    perm = list(range(m.ndim))
    perm[a0], perm[a1] = perm[a1], perm[a0]
    return transpose(flip(m, a1), perm) if k == 1 else flip(transpose(m, perm), a1)


@implements(np.atleast_3d)
def atleast_3d(*arys):
    out = []
    for a in arys:
        a = as_tracer(a)
        if a.ndim == 0:
            a = reshape(a, (1, 1, 1))
        elif a.ndim == 1:
            a = reshape(a, (1, a.shape[0], 1))
        elif a.ndim == 2:
            a = reshape(a, a.shape + (1,))
        out.append(a)
    return out[0] if len(out) == 1 else tuple(out)


@implements(np.column_stack)
def column_stack(tup):
    cols = []
    for a in tup:
        a = as_tracer(a)
        cols.append(reshape(a, (a.shape[0], 1)) if a.ndim < 2 else a)
    return concatenate(cols, axis=1)


@implements(np.dstack)
def dstack(tup):
    return concatenate([atleast_3d(a) for a in tup], axis=2)


@implements(np.append)
def append(arr, values, axis=None):
    arr, values = as_tracer(arr), as_tracer(values)
    if axis is None:
        return concatenate([ravel(arr), ravel(values)], axis=0)
    return concatenate([arr, values], axis=axis)


@implements(np.hsplit)
def hsplit(ary, indices_or_sections):
    a = as_tracer(ary)
    if a.ndim == 0:
        raise ValueError("hsplit only works on arrays of 1 or more dimensions")
    return split(a, indices_or_sections, axis=1 if a.ndim > 1 else 0)


@implements(np.vsplit)
def vsplit(ary, indices_or_sections):
    a = as_tracer(ary)
    if a.ndim < 2:
        raise ValueError("vsplit only works on arrays of 2 or more dimensions")
    return split(a, indices_or_sections, axis=0)


@implements(np.dsplit)
def dsplit(ary, indices_or_sections):
    a = as_tracer(ary)
    if a.ndim < 3:
        raise ValueError("dsplit only works on arrays of 3 or more dimensions")
    return split(a, indices_or_sections, axis=2)


@implements(np.block)
def block(arrays):
    def depth(x):
        return 1 + depth(x[0]) if isinstance(x, list) and x else (1 if isinstance(x, list) else 0)

    def max_ndim(x):
        return builtins.max(max_ndim(e) for e in x) if isinstance(x, list) else as_tracer(x).ndim

    d = depth(arrays)
    nd = builtins.max(d, max_ndim(arrays))

    def build(x, level):
        if not isinstance(x, list):
            t = as_tracer(x)
            return reshape(t, (1,) * (nd - t.ndim) + t.shape)
        return concatenate([build(e, level + 1) for e in x], axis=nd - d + level)
    return build(arrays, 0)


@implements(np.resize)
def resize(a, new_shape):
    a = ravel(as_tracer(a))
    new_shape = (new_shape,) if isinstance(new_shape, (int, np.integer)) else tuple(new_shape)
    total = int(np.prod(new_shape, dtype=np.int64))
    if total == 0 or a.size == 0:
        return zeros_like(a, shape=new_shape)
    reps = -(-total // a.size)
    return reshape(tile(a, reps)[:total], new_shape)



# ----- linear algebra through HLO's own ops --------------------------------------------------

@implements(np.linalg.cholesky)
def cholesky(a, /, *, upper=False):
    """HLO cholesky; a matrix that is not positive definite gives NaNs (NumPy raises)."""
    a = as_tracer(a)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ShapeError(f"Last 2 dimensions of the array must be square, got {a.shape}")
    if a.dtype.kind not in "fc":
        a = convert(a, np.float64)
    low = Tracer(current_builder().add_instruction("cholesky", (a.op,), lower=True))
    low = tril(low)   # the other triangle is unspecified in HLO
    return np.conjugate(swapaxes(low, -1, -2)) if upper else low


# ----- creation (xla.numpy only: NumPy's creation functions don't dispatch) -----------------

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
    steps = Tracer(current_builder().iota(dt, (num,) + start.shape, 0))
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


def eye(N, M=None, k=0, dtype=float):
    return as_tracer(np.eye(N, M, k, dtype=dtype))


def identity(n, dtype=float):
    return as_tracer(np.identity(n, dtype=dtype))


FUNCTIONS_BY_NAME.clear()
_index_names()


# ----- numpy.fft ---------------------------------------------------------------------
# One HLO fft over up to three axes: the axes are moved last (transpose),
# cropped or zero-padded to the requested lengths, transformed, and moved
# back. NumPy 2's dtype rules: float32/complex64 stay single precision,
# everything else computes in complex128. ``norm``: "backward" (the
# default: inverse transforms scaled by 1/n), "ortho" (both by 1/sqrt n),
# "forward" (forward transforms by 1/n).

def _fft_axes(a, s, axes, default_all):
    if axes is None:
        if s is not None:
            axes = tuple(range(a.ndim - len(s), a.ndim))
        else:
            axes = tuple(range(a.ndim)) if default_all else (a.ndim - 1,)
    axes = tuple(normalize_axis(x, a.ndim) for x in (axes if isinstance(axes, (tuple, list)) else (axes,)))
    if len(set(axes)) != len(axes):
        raise ShapeError(f"fft: repeated axes {axes}")
    if not 1 <= len(axes) <= 3:
        raise tracing_error(f"xla.jit supports FFTs over 1 to 3 axes, got {len(axes)}; "
                            "transform the rest in a second call")
    if s is not None and len(s) != len(axes):
        raise ShapeError(f"fft: s {tuple(s)} and axes {axes} differ in length")
    return axes


def _resize_last(x, sizes):
    """Crops or zero-pads the last len(sizes) dimensions of x to sizes."""
    k = len(sizes)
    index = [slice(None)] * (x.ndim - k) + [slice(0, n) for n in sizes]
    x = x[tuple(index)]
    widths = [(0, 0)] * (x.ndim - k) + [(0, builtins.max(0, n - d)) for n, d in zip(sizes, x.shape[-k:])]
    return pad(x, widths) if builtins.any(w for _, w in widths) else x


def _fft(a, kind, s, axes, norm, default_all=False):
    a = as_tracer(a)
    axes = _fft_axes(a, s, axes, default_all)
    single = a.dtype in (np.float32, np.complex64)
    cdt, rdt = (np.complex64, np.float32) if single else (np.complex128, np.float64)
    in_sizes = [a.shape[x] for x in axes]
    if kind == "IRFFT":
        lengths = list(s) if s is not None else in_sizes[:-1] + [2 * (in_sizes[-1] - 1)]
        sizes = lengths[:-1] + [lengths[-1] // 2 + 1]
    else:
        lengths = list(s) if s is not None else in_sizes
        sizes = lengths
    if builtins.any(n < 1 for n in lengths):
        raise ShapeError(f"fft: invalid number of data points {tuple(lengths)}")
    perm = [d for d in range(a.ndim) if d not in axes] + list(axes)
    x = transpose(a, perm)
    x = convert(x, rdt if kind == "RFFT" else cdt)
    x = _resize_last(x, sizes)
    y = Tracer(current_builder().fft(x.op, kind, lengths))
    n = int(np.prod(lengths))
    inverse = kind in ("IFFT", "IRFFT")
    scale = {"backward": 1.0, None: 1.0, "ortho": 1.0 / np.sqrt(n),
             "forward": 1.0 / n}.get(norm)
    if scale is None:
        raise ValueError(f'Invalid norm value {norm}; should be "backward", "ortho" or "forward".')
    if inverse:
        # HLO's inverse transforms divide by n already ("backward").
        scale = {"backward": 1.0, None: 1.0, "ortho": np.sqrt(n), "forward": float(n)}[norm]
    if scale != 1.0:
        y = y * np.asarray(scale, rdt)
    return transpose(y, tuple(int(i) for i in np.argsort(perm)))


def _register_fft(kind, numpy_fn, form):
    """Registers ``numpy_fn`` with NumPy's signature for its ``form``: "1d"
    (n, axis), "2d" (s, axes=(-2, -1)) or "nd" (s, axes: all by default).
    Module-private, so that xla.numpy does not gain top-level fft names
    NumPy keeps under np.fft."""
    if form == "1d":
        def impl(a, n=None, axis=-1, norm=None, out=None):
            return _fft(a, kind, None if n is None else [n], (axis,), norm)
    elif form == "2d":
        def impl(a, s=None, axes=(-2, -1), norm=None, out=None):
            return _fft(a, kind, s, axes, norm)
    else:
        def impl(a, s=None, axes=None, norm=None, out=None):
            return _fft(a, kind, s, axes, norm, default_all=True)
    impl.__name__ = numpy_fn.__name__
    implements(numpy_fn)(impl)


for _kind, _fns in {"FFT": (np.fft.fft, np.fft.fft2, np.fft.fftn),
                    "IFFT": (np.fft.ifft, np.fft.ifft2, np.fft.ifftn),
                    "RFFT": (np.fft.rfft, np.fft.rfft2, np.fft.rfftn),
                    "IRFFT": (np.fft.irfft, np.fft.irfft2, np.fft.irfftn)}.items():
    for _form, _fn in zip(("1d", "2d", "nd"), _fns):
        _register_fft(_kind, _fn, _form)


tracing.install_table("numpy_api", sys.modules[__name__])
