"""NumPy's indexing routines (``where``, ``select``, ``take``,
``take_along_axis``, ``diagonal``) and what is built from them: ``diag``,
``tril`` and ``triu`` (selects), ``repeat`` and ``pad`` (gathers), with
``tile`` and ``resize`` beside them; ``piecewise`` (selects),
``fill_diagonal`` (an update in place), ``insert`` and ``delete`` with
constant positions (gathers), ``triu_indices_from``/``tril_indices_from``.
Gathers go through ``xla.frontend.indexing``, as ``x[idx]`` does."""
import builtins

import numpy as np

from xla.errors import ShapeError
from xla.frontend import indexing, lax, tracing
from xla.frontend.lax import checks
from xla.frontend.numpy._common import check_no_out, implements, normalize_axis, strong
from xla.frontend.numpy.creation import zeros_like
from xla.frontend.numpy.manipulation import concatenate, ravel, reshape, transpose
from xla.frontend.tracing import (Tracer, as_tracer, broadcast_arrays, broadcast_to, convert,
                                  result_type, tracing_error)


# ----- selection --------------------------------------------------------------------------

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
    return strong(lax.select(c, xt, yt))


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


def _broadcasts_to(shape, target):
    try:
        return np.broadcast_shapes(shape, target) == target
    except ValueError:
        return False


def _check_elementwise(func, value, x):
    """Raises unless ``value`` is an elementwise function of ``x``
    (``tracing.first_positional_op``): piecewise calls ``func`` on all of
    ``x`` where NumPy calls it on the selected elements only, which gives
    the same values only for such functions (``t - t.mean()`` would not)."""
    opcode = tracing.first_positional_op(value, x)
    if opcode is not None:
        raise tracing_error(
            f"np.piecewise under xla.jit calls each function on the whole array and selects "
            f"its values, which is NumPy's result only for elementwise functions: "
            f"{getattr(func, '__name__', func)!s} computes a {opcode} of x (NumPy calls it on "
            f"the selected elements alone); compute it with np.where or outside the jitted function")


@implements(np.piecewise)
def piecewise(x, condlist, funclist, *args, **kw):
    """NumPy's ``piecewise``: ``y = zeros_like(x)``, then for each condition
    in order ``y[cond] = f(x[cond])`` (a later condition wins), or
    ``y[cond] = f`` for a scalar ``f``, cast into ``x``'s dtype as NumPy's
    assignment casts; one function more than conditions is the "otherwise"
    case, where no condition holds. Conditions are boolean arrays of
    ``x``'s shape (or of its leading dimensions, as a boolean index).
    NumPy calls each function on the selected values, a 1-D array; here it
    is called once on all of ``x`` (shapes are static) and its values are
    selected, so each function must work elementwise (as NumPy's examples
    do): a result that does not broadcast to ``x``'s shape raises."""
    x = as_tracer(x)
    if not np.isscalar(condlist) and getattr(condlist, "ndim", 1) >= 1 and len(condlist) == 0:
        raise IndexError("np.piecewise: condlist is empty (NumPy reads condlist[0])")
    # NumPy's undocumented rule: a single condition is a list of one.
    if isinstance(condlist, (np.ndarray, Tracer)):
        listed = condlist.ndim >= 2 or condlist.ndim == 1 and x.ndim == 0
    else:
        listed = not np.isscalar(condlist) and (
            isinstance(condlist[0], (list, np.ndarray, Tracer)) or x.ndim == 0)
    if not listed:
        condlist = [condlist]
    conds = [convert(as_tracer(c), np.bool_) for c in condlist]
    if len({c.shape for c in conds}) > 1:
        raise ValueError("np.piecewise: the conditions have different shapes "
                         f"{[c.shape for c in conds]}")
    n, n2 = len(conds), len(funclist)
    if n == n2 - 1:
        anyone = as_tracer(np.zeros(conds[0].shape if conds else (), np.bool_))
        for c in conds:
            anyone = np.logical_or(anyone, c)
        conds.append(np.logical_not(anyone))
    elif n != n2:
        raise ValueError(f"with {n} condition(s), either {n} or {n + 1} functions are expected")
    y = zeros_like(x)
    for cond, func in zip(conds, funclist):
        if cond.shape != x.shape[:cond.ndim]:
            raise IndexError(f"np.piecewise: a condition of shape {cond.shape} does not index an "
                             f"array of shape {x.shape} (boolean index)")
        mask = reshape(cond, cond.shape + (1,) * (x.ndim - cond.ndim))
        value = as_tracer(func(x, *args, **kw) if callable(func) else func)
        if callable(func):
            _check_elementwise(func, value, x)
        if not _broadcasts_to(value.shape, x.shape):
            raise tracing_error(
                f"np.piecewise under xla.jit calls each function on the whole array and selects "
                f"its values: {getattr(func, '__name__', func)!s} returned shape {value.shape} "
                f"for x of shape {x.shape}; the functions must be elementwise")
        y = where(mask, convert(value, x.dtype), y)
    return y


# ----- gathering --------------------------------------------------------------------------

@implements(np.take)
def take(a, indices, axis=None, out=None, mode=None):
    check_no_out("take", out)
    a = as_tracer(a)
    if axis is None:
        a, axis = ravel(a), 0
    axis = normalize_axis(axis, a.ndim)
    index = [slice(None)] * axis + [indices]
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
    for i in range(a.ndim):
        if i == axis:
            index.append(idx)
        else:
            dims = [1] * a.ndim
            dims[i] = shape[i] if a.shape[i] != 1 else 1
            index.append(lax.broadcasted_iota(np.int64, tuple(dims), i) if dims[i] > 1
                         else tracing.full(tuple(dims), 0, np.int64))
    return indexing.getitem(a, tuple(index))


# ----- diagonals and triangles ------------------------------------------------------------

def _tri_mask(n, m, k, lower):
    rows = lax.broadcasted_iota(np.int64, (n, m), 0)
    cols = lax.broadcasted_iota(np.int64, (n, m), 1)
    shifted = lax.add(rows, np.int64(k))
    return lax.le(cols, shifted) if lower else lax.gt(cols, shifted)


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
    return indexing.getitem(t, lead + (rows, cols))


@implements(np.diag)
def diag(v, k=0):
    v = as_tracer(v)
    if v.ndim == 2:
        return diagonal(v, k)
    if v.ndim != 1:
        raise ValueError("Input must be 1- or 2-d.")
    n = v.shape[0] + builtins.abs(k)
    rows = lax.broadcasted_iota(np.int64, (n, n), 0)
    cols = lax.broadcasted_iota(np.int64, (n, n), 1)
    on = lax.eq(lax.sub(cols, rows), np.int64(k))
    # On the diagonal, column c holds v[c - k] (k >= 0) or v[c] (k < 0).
    src = pad(v, (builtins.max(k, 0), builtins.max(-k, 0)))
    vals = broadcast_to(reshape(src, (1, n)), (n, n))
    return where(on, vals, zeros_like(vals))


# ----- tiling and padding -----------------------------------------------------------------

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
    out = strong(lax.broadcast_in_dim(a, tuple(inter), tuple(dims)))
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
        out = strong(lax.broadcast_in_dim(a, shape, dims))
        return reshape(out, a.shape[:axis] + (a.shape[axis] * r,) + a.shape[axis + 1:])
    index = np.repeat(np.arange(a.shape[axis]), reps)
    return take(a, index, axis=axis)


@implements(np.pad)
def pad(array, pad_width, mode="constant", **kwargs):
    a = as_tracer(array)
    pw = np.broadcast_to(np.asarray(pad_width, dtype=np.int64), (a.ndim, 2))
    if (pw < 0).any():
        raise ValueError("index can't contain negative values")
    if mode == "constant":
        cv = np.broadcast_to(np.asarray(kwargs.get("constant_values", 0)), (a.ndim, 2))
        out = a
        if np.all(cv == cv.flat[0]):
            value = np.asarray(cv.flat[0]).astype(a.dtype)
            return strong(lax.pad(a, value, [(int(lo), int(hi), 0) for lo, hi in pw]))
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


@implements(np.resize)
def resize(a, new_shape):
    a = ravel(as_tracer(a))
    new_shape = (new_shape,) if isinstance(new_shape, (int, np.integer)) else tuple(new_shape)
    total = int(np.prod(new_shape, dtype=np.int64))
    if total == 0 or a.size == 0:
        return zeros_like(a, shape=new_shape)
    reps = -(-total // a.size)
    return reshape(tile(a, reps)[:total], new_shape)


# ----- index sets of a shape, filling, inserting and deleting -------------------------------

@implements(np.triu_indices_from)
def triu_indices_from(arr, k=0):
    """NumPy's own index arrays: they depend on the shape only."""
    if arr.ndim != 2:
        raise ValueError("input array must be 2-d")
    return np.triu_indices(arr.shape[-2], k=k, m=arr.shape[-1])


@implements(np.tril_indices_from)
def tril_indices_from(arr, k=0):
    if arr.ndim != 2:
        raise ValueError("input array must be 2-d")
    return np.tril_indices(arr.shape[-2], k=k, m=arr.shape[-1])


@implements(np.fill_diagonal)
def fill_diagonal(a, val, wrap=False):
    """Writes ``val`` into ``a``'s diagonal in place, as NumPy's
    ``a.flat[:end:step] = val`` does (a tall 2-D matrix with ``wrap``
    starts again below; ``val`` repeats along the diagonal; cast to ``a``'s
    dtype). ``a`` is updated as any traced array written in place."""
    if not isinstance(a, Tracer):
        raise tracing_error("np.fill_diagonal under xla.jit writes into a traced array; this one "
                            "is a constant")
    if a.ndim < 2:
        raise ValueError("array must be at least 2-d")
    end = None
    if a.ndim == 2:
        step = a.shape[1] + 1
        if not wrap:
            end = a.shape[1] * a.shape[1]
    else:
        if not np.all(np.diff(a.shape) == 0):
            raise ValueError("All dimensions of input must be of equal length")
        step = 1 + int(np.cumprod(a.shape[:-1]).sum())
    flat = np.arange(a.size)[:end:step]
    if flat.size == 0:
        return None
    values = ravel(convert(as_tracer(val), a.dtype))
    if values.size == 0:
        return None
    if values.size != 1:
        values = resize(values, flat.size)
    a[np.unravel_index(flat, a.shape)] = values if values.size != 1 else reshape(values, ())
    return None


def _labels(shape, offset=0, sign=1):
    return sign * (np.arange(int(np.prod(shape, dtype=np.int64))) + offset).reshape(shape)


@implements(np.delete)
def delete(arr, obj, axis=None):
    """NumPy's ``delete`` with constant ``obj`` (an int, slice, or array of
    ints or bools): which elements stay is NumPy's own answer for the
    positions, gathered from the traced array."""
    if isinstance(obj, Tracer):
        raise tracing_error("np.delete with traced indices has an output shape that depends on "
                            "the data; pass obj as a constant")
    arr = as_tracer(arr)
    if axis is None and arr.ndim != 1:
        arr = ravel(arr)
    kept = np.delete(_labels(arr.shape), obj, axis=axis)
    return reshape(take(ravel(arr), ravel(as_tracer(kept))), kept.shape)


@implements(np.insert)
def insert(arr, obj, values, axis=None):
    """NumPy's ``insert`` with constant ``obj``: NumPy's own ``insert`` of
    position labels (``arr``'s non-negative, ``values``' negative, ``values``
    broadcast as NumPy does) says where each element comes from; the traced
    elements are gathered there, ``values`` cast to ``arr``'s dtype."""
    if isinstance(obj, Tracer):
        raise tracing_error("np.insert with traced indices is not supported under xla.jit; pass "
                            "obj as a constant")
    arr = as_tracer(arr)
    values = as_tracer(values)
    if axis is None and arr.ndim != 1:
        arr = ravel(arr)
    labels = np.insert(_labels(arr.shape), obj, _labels(values.shape, 1, -1), axis=axis)
    labels = labels.reshape(-1)
    from_arr = take(ravel(arr), np.maximum(labels, 0)) if arr.size else None
    if values.size and (labels < 0).any():
        from_values = take(ravel(convert(values, arr.dtype)), np.maximum(-labels - 1, 0))
        out = from_values if from_arr is None else where(labels >= 0, from_arr, from_values)
    else:
        out = from_arr if from_arr is not None else zeros_like(arr, shape=labels.shape)
    shape = np.insert(np.zeros(arr.shape, np.int8), obj, np.zeros(values.shape, np.int8), axis=axis).shape
    return reshape(out, shape)


@implements(np.diagflat)
def diagflat(v, k=0):
    return diag(ravel(as_tracer(v)), k)


@implements(np.diag_indices_from)
def diag_indices_from(arr):
    if not arr.ndim >= 2:
        raise ValueError("input array must be at least 2-d")
    if not np.all(np.diff(arr.shape) == 0):
        raise ValueError("All dimensions of input must be of equal length")
    return np.diag_indices(arr.shape[0], arr.ndim)


# ----- flat indices and multi-indices -----------------------------------------------------
# Where NumPy raises on index values (out of bounds with mode='raise'), the
# jitted call raises NumPy's error class after it ran (``xla.lax.checks``).

def _index_array(x, what):
    x = as_tracer(x)
    if x.dtype.kind not in "iub":
        raise TypeError(f"only int indices permitted ({what})")
    return convert(x, np.intp)


@implements(np.unravel_index)
def unravel_index(indices, shape, order="C"):
    """The multi-indices of flat ``indices`` into ``shape``, intp arrays;
    an index outside ``[0, prod(shape))`` raises NumPy's ``ValueError``
    after the call."""
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(int(d) for d in shape)
    if order not in ("C", "F"):
        raise ValueError("only 'C' or 'F' order is permitted")
    i = _index_array(indices, "np.unravel_index")
    size = int(np.prod(shape, dtype=np.int64))
    checks.error_if((i < 0) | (i >= size), ValueError,
                    f"index out of bounds for array with size {size} (np.unravel_index)")
    out = [None] * len(shape)
    dims = range(len(shape) - 1, -1, -1) if order == "C" else range(len(shape))
    for d in dims:
        n = shape[d]
        out[d] = np.remainder(i, n) if n else i
        i = np.floor_divide(i, n) if n else i
    return tuple(out)


@implements(np.ravel_multi_index)
def ravel_multi_index(multi_index, dims, mode="raise", order="C"):
    """Flat intp indices of ``multi_index`` into ``dims``; ``mode`` 'raise'
    (NumPy's ``ValueError`` after the call for a coordinate outside its
    dimension), 'wrap' or 'clip', one mode or one per dimension."""
    dims = tuple(int(d) for d in dims)
    if len(multi_index) != len(dims):
        raise ValueError(f"parameter multi_index must be a sequence of length {len(dims)}")
    modes = [mode] * len(dims) if isinstance(mode, str) else list(mode)
    coords = broadcast_arrays(*[_index_array(c, "np.ravel_multi_index") for c in multi_index])
    fixed = [_in_mode(c, n, m, ValueError, "invalid entry in coordinates array (np.ravel_multi_index)")
             for c, n, m in zip(coords, dims, modes)]
    order_ = range(len(dims)) if order == "C" else range(len(dims) - 1, -1, -1)
    flat = None
    for d in order_:
        flat = fixed[d] if flat is None else flat * dims[d] + fixed[d]
    return flat


def _in_mode(i, n, mode, error, message):
    """Integer indices ``i`` into ``n`` places under NumPy's ``mode``:
    'raise' (``error`` with ``message`` after the call for one outside
    [0, n)), 'wrap' or 'clip'."""
    if mode == "raise":
        checks.error_if((i < 0) | (i >= n), error, message)
        return i
    if mode == "wrap":
        return np.remainder(i, n)
    if mode == "clip":
        return np.clip(i, 0, n - 1)
    raise ValueError(f"clipmode must be one of 'clip', 'raise', or 'wrap', not {mode!r}")


@implements(np.choose)
def choose(a, choices, out=None, mode="raise"):
    """``choices[a[i]][i]``, all broadcast together, in the choices' common
    dtype; ``mode`` 'raise' (NumPy's ``ValueError`` after the call for an
    index outside the choices), 'wrap' or 'clip'."""
    check_no_out("choose", out)
    a = _index_array(a, "np.choose")
    n = len(choices)
    dt = result_type(*choices)
    a = _in_mode(a, n, mode, ValueError, "invalid entry in choice array")
    parts = broadcast_arrays(a, *[convert(as_tracer(c), dt) for c in choices])
    a, choices = parts[0], parts[1:]
    out = choices[0]
    for k in range(1, n):
        out = where(np.equal(a, k), choices[k], out)
    return out


# ----- writing into an array in place -----------------------------------------------------

def _written(a, name):
    if not isinstance(a, Tracer):
        raise tracing_error(f"np.{name} under xla.jit writes into a traced array; this one is a "
                            "constant")
    return a


@implements(np.putmask)
def putmask(a, mask, values):
    """``a.flat[n] = values[n % len(values)]`` where ``mask.flat[n]``, in
    place (the position picks the value, as in NumPy)."""
    a = _written(a, "putmask")
    m = convert(as_tracer(mask), np.bool_)
    if m.size != a.size:
        raise ValueError("putmask: mask and data must be the same size")
    m = reshape(m, a.shape)
    v = ravel(convert(as_tracer(values), a.dtype))
    if v.size == 0:
        return None
    a[...] = where(m, reshape(resize(v, a.size), a.shape), a)
    return None


@implements(np.place)
def place(arr, mask, vals):
    """The k-th True position of ``mask`` gets ``vals[k % len(vals)]``, in
    place; empty ``vals`` with a True in ``mask`` raises NumPy's
    ``ValueError`` after the call."""
    arr = _written(arr, "place")
    m = ravel(convert(as_tracer(mask), np.bool_))
    if m.size != arr.size:
        raise ValueError("place: mask and data must be the same size")
    v = ravel(convert(as_tracer(vals), arr.dtype))
    if v.size == 0:
        checks.error_if(np.any(m), ValueError, "Cannot insert from an empty array!")
        return None
    rank = np.cumsum(m.astype(np.intp)) - 1
    picked = take(v, np.remainder(np.maximum(rank, 0), v.size))
    arr[...] = reshape(where(m, picked, ravel(arr)), arr.shape)
    return None


@implements(np.put)
def put(a, ind, v, mode="raise"):
    """``a.flat[ind] = v`` in place, ``v`` repeated along ``ind``; ``mode``
    'raise' (negative indices count from the end; others raise NumPy's
    ``IndexError`` after the call), 'wrap' or 'clip'. Where an index
    repeats, which value lands is the scatter's (NumPy: the last)."""
    a = _written(a, "put")
    n = a.size
    i = ravel(_index_array(ind, "np.put"))
    if i.size == 0:
        return None
    if mode == "raise":
        i = where(i < 0, i + n, i)   # negative indices count from the end
    i = _in_mode(i, n, mode, IndexError, f"index out of range for array of size {n}")
    values = ravel(convert(as_tracer(v), a.dtype))
    if values.size == 0:
        return None
    values = resize(values, i.size)
    flat = ravel(a)
    flat[i] = values
    a[...] = reshape(flat, a.shape)
    return None


_where_ = where      # (copyto's argument is called where)


@implements(np.copyto)
def copyto(dst, src, casting="same_kind", where=True):
    """``dst[...] = src`` in place where ``where`` holds, ``src`` broadcast
    to ``dst`` and cast under NumPy's ``casting`` rule."""
    dst = _written(dst, "copyto")
    s = as_tracer(src)
    if not (type(src) in tracing.PYTHON_SCALARS or np.can_cast(s.dtype, dst.dtype, casting)):
        raise TypeError(f"Cannot cast array data from {s.dtype!r} to {dst.dtype!r} according to "
                        f"the rule {casting!r}")
    s = broadcast_to(convert(s, dst.dtype), dst.shape)
    if where is True:
        dst[...] = s
    else:
        dst[...] = _where_(broadcast_to(convert(as_tracer(where), np.bool_), dst.shape), s, dst)
    return None

