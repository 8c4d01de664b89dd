"""Array manipulation: reshapes, transposes, joining, splitting, flips and
rolls, ``np.apply_along_axis``, and the static facts (``np.shape``,
``np.ndim``, ``np.size``) of traced arrays. Built on the Tracer and ``xla.lax`` alone: every other topic
module may use these."""
import builtins

import numpy as np

from xla.errors import ShapeError
from xla.frontend import lax, tracing
from xla.frontend.numpy._common import check_no_out, implements, normalize_axes, normalize_axis, strong
from xla.frontend.tracing import Tracer, as_tracer, convert, result_type, tracing_error


# ----- changing shape ---------------------------------------------------------------------

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
    return lax.reshape(a, shape)


@implements(np.ravel)
def ravel(a, order="C"):
    return reshape(a, (-1,), order=order)


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


@implements(np.broadcast_to)
def broadcast_to(array, shape, subok=False):
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    return tracing.broadcast_to(as_tracer(array), shape)


@implements(np.broadcast_arrays)
def broadcast_arrays(*args, subok=False):
    return tuple(tracing.broadcast_arrays(*(as_tracer(a) for a in args)))


# ----- transposes -------------------------------------------------------------------------

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
    return lax.transpose(a, axes)


permute_dims = transpose   # NumPy 2's np.permute_dims is np.transpose itself


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


@implements(np.matrix_transpose)
def matrix_transpose(x, /):
    x = as_tracer(x)
    if x.ndim < 2:
        raise ValueError(f"Input array must be at least 2-dimensional, but it is {x.ndim}")
    return swapaxes(x, -1, -2)


# ----- joining ----------------------------------------------------------------------------

@implements(np.concatenate)
def concatenate(arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    check_no_out("concatenate", out)
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
    return lax.concatenate(ts, axis)


@implements(np.stack)
def stack(arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    check_no_out("stack", out)
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
            t = strong(as_tracer(x))    # np.array(x): a Python scalar is a float64/int64 array
            return reshape(t, (1,) * (nd - t.ndim) + t.shape)
        return concatenate([build(e, level + 1) for e in x], axis=nd - d + level)
    return build(arrays, 0)


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


# ----- rearranging ------------------------------------------------------------------------

@implements(np.flip)
def flip(m, axis=None):
    m = as_tracer(m)
    axes = normalize_axes(axis, m.ndim)
    if not axes:
        return m
    return lax.rev(m, axes)


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


# ----- static facts -----------------------------------------------------------------------

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


# ----- applying a function along an axis -------------------------------------------------

@implements(np.apply_along_axis)
def apply_along_axis(func1d, axis, arr, *args, **kwargs):
    """NumPy's ``apply_along_axis``: ``func1d`` traced once per 1-D slice
    along ``axis`` (the loop over the other dimensions unrolls: one copy of
    the function per slice), the results stacked where the axis was, in the
    first result's dtype (later ones cast to it, as NumPy's buffer does)."""
    arr = as_tracer(arr)
    axis = normalize_axis(axis, arr.ndim)
    view = transpose(arr, [d for d in range(arr.ndim) if d != axis] + [axis])
    outer = view.shape[:-1]
    if builtins.any(d == 0 for d in outer):
        raise ValueError("Cannot apply_along_axis when any iteration dimensions are 0")
    results = [as_tracer(func1d(view[ind], *args, **kwargs)) for ind in np.ndindex(*outer)]
    first = results[0]
    try:
        results = [broadcast_to(convert(r, first.dtype), first.shape) for r in results]
    except (ValueError, ShapeError) as e:
        raise ValueError(f"np.apply_along_axis: func1d's results have shapes {first.shape} and "
                         "others that do not broadcast to it") from e
    buff = reshape(stack([strong(r) for r in results]), outer + first.shape)
    n = buff.ndim
    permute = list(range(axis)) + list(range(n - first.ndim, n)) + list(range(axis, n - first.ndim))
    return transpose(buff, permute)


if hasattr(np, "unstack"):
    @implements(np.unstack)
    def unstack(x, /, *, axis=0):
        x = as_tracer(x)
        if x.ndim == 0:
            raise ValueError("Input array must be at least 1-d.")
        x = moveaxis(x, axis, 0)
        return tuple(x[i] for i in range(x.shape[0]))
