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
    weak = builtins.all(isinstance(v, (int, float, complex)) or isinstance(v, Tracer) and v.weak for v in (x, y))
    return Tracer(current_builder().select(c.op, xt.op, yt.op), weak=weak)


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
    if opcode == "multiply" or opcode == "and":
        return np.ones((), dtype)
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
    if method == "accumulate" and ufunc in (np.add, np.multiply) and "cumsum" in FUNCTIONS_BY_NAME:
        fn = FUNCTIONS_BY_NAME["cumsum" if ufunc is np.add else "cumprod"]
        return fn(inputs[0], axis=kwargs.get("axis", 0), dtype=kwargs.get("dtype"))
    raise tracing_error(f"np.{ufunc.__name__}.{method} is not supported under xla.jit")


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
