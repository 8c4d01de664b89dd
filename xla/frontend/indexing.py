"""Indexing traced arrays: ``t[...]`` and ``t.at[...].set(v)``.

Written with ``xla.lax``, as ``jax.numpy``'s indexing is: basic indices
(ints, slices, ``None``, ``...``) become ``lax.slice``, ``lax.rev`` and
``lax.reshape``; a traced integer scalar becomes a ``lax.dynamic_slice``.
Integer arrays (NumPy or traced; ints count as arrays when arrays are
present) follow NumPy's advanced-indexing rules and become one ``lax.gather``:
the index arrays broadcast together, and the broadcast dimensions take the
place of the indexed ones when those are adjacent, else they come first.

Out-of-range indices: a concrete (NumPy) index is checked while tracing and
raises IndexError as NumPy does. A traced index can't be checked, so it is
clamped into range, as XLA's gather and dynamic-slice specify (negative
indices wrap first, as in NumPy): ``x[i]`` with a traced ``i = 7`` on 5
elements reads ``x[4]`` where NumPy would raise. ``np.take``'s ``mode``
('raise', the default, 'wrap', 'clip') is honoured for concrete indices;
for traced ones 'wrap' wraps and the others clamp. Generated code never
reads outside the array either way.

A boolean mask selects a number of elements that depends on the data: a
traced mask is a must-compile error (use ``np.where``); a NumPy boolean
array is known while tracing and becomes integer indices.

``x.at[idx].set(v)`` (also ``add``, ``multiply``, ``min``, ``max``, ``get``)
is JAX's functional update: a ``lax.dynamic_update_slice`` for basic
indices, a ``lax.scatter`` (``scatter_add``, ...) for integer arrays.
"""
import operator
import sys

import numpy as np

from xla.frontend import lax
from xla.frontend.tracing import (Tracer, as_tracer, broadcast_shapes, broadcast_to, convert,
                                  install_table, table, tracing_error)


def _expand(index, ndim):
    """``index`` as a list with Ellipsis expanded into full slices and
    concrete boolean arrays turned into integer arrays."""
    if not isinstance(index, tuple):
        index = (index,)
    out = []
    for i in index:
        if isinstance(i, Tracer) and i.dtype == np.bool_:
            raise tracing_error(
                "boolean mask indexing selects a number of elements that depends on the data, so it "
                "cannot be compiled (must-compile); use np.where(mask, x, fill) to keep the shape")
        if isinstance(i, (list, np.ndarray)) and np.asarray(i).dtype == np.bool_:
            out.extend(np.nonzero(np.asarray(i)))   # static: known while tracing
            continue
        if isinstance(i, list):
            i = np.asarray(i)
            if i.dtype.kind not in "iu" and i.size:
                raise IndexError("arrays used as indices must be of integer (or boolean) type")
            i = i.astype(np.int64)
        out.append(i)
    n_ellipsis = sum(1 for i in out if i is Ellipsis)
    if n_ellipsis > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    used = sum(1 for i in out if i is not None and i is not Ellipsis)
    if used > ndim:
        raise IndexError(f"too many indices for array: array is {ndim}-dimensional, "
                         f"but {used} were indexed")
    full = []
    for i in out:
        if i is Ellipsis:
            full.extend([slice(None)] * (ndim - used))
        else:
            full.append(i)
    if n_ellipsis == 0:
        full.extend([slice(None)] * (ndim - used))
    return full


def _is_array_index(i):
    return isinstance(i, np.ndarray) or isinstance(i, Tracer) and i.ndim > 0


def _captured(idx):
    """Index Tracers of an enclosing trace (a loop's index used in an inner
    loop) captured into the current one."""
    if isinstance(idx, Tracer):
        return as_tracer(idx)
    if isinstance(idx, tuple):
        return tuple(as_tracer(i) if isinstance(i, Tracer) else i for i in idx)
    return idx


def getitem(t, index, mode=None):
    t = as_tracer(t)   # captured if it belongs to an enclosing trace
    idx = _expand(_captured(index), t.ndim)
    if any(_is_array_index(i) for i in idx):
        return _advanced(t, idx, mode)
    masked = table("masked_slice").masked_getitem(t, idx)   # x[:i] in a converted loop
    if masked is not None:
        return masked
    return _basic(t, idx)


def _basic(t, idx):
    starts, limits, strides, reverse_dims, out_shape, dynamic = [], [], [], [], [], {}
    dynamic_sizes = {}   # dim -> size of a slice with traced bounds
    dim = 0
    for i in idx:
        if i is None:
            out_shape.append(1)
            continue
        size = t.shape[dim]
        traced = _traced_slice(i, size, dim)
        if traced is not None:
            dynamic[dim], n = traced
            dynamic_sizes[dim] = n
            starts.append(0)
            limits.append(n)
            strides.append(1)
            out_shape.append(n)
        elif isinstance(i, slice):
            start, stop, step = i.indices(size)
            if step < 0:
                # Reverse the dimension, then slice forward.
                reverse_dims.append(dim)
                start, stop, step = size - 1 - start, size - 1 - stop, -step
            n = max(0, (stop - start + step - 1) // step)
            starts.append(start if n else 0)
            limits.append(start + (n - 1) * step + 1 if n else 0)
            strides.append(step)
            out_shape.append(n)
        elif isinstance(i, Tracer):
            if i.dtype.kind not in "iu":
                raise IndexError(f"only integer scalar arrays can be used as an index, got {i.dtype}")
            _check_index_range(i, size, dim)
            dynamic[dim] = i
            starts.append(0)
            limits.append(1)
            strides.append(1)
        else:
            try:
                k = operator.index(i)
            except TypeError:
                raise IndexError(f"only integers, slices (`:`), ellipsis (`...`), None and integer or "
                                 f"boolean arrays are valid indices, got {type(i).__name__}") from None
            if not -size <= k < size:
                raise IndexError(f"index {k} is out of bounds for axis {dim} with size {size}")
            k %= size
            starts.append(k)
            limits.append(k + 1)
            strides.append(1)
        dim += 1
    x = lax.rev(t, reverse_dims)
    if dynamic:
        sizes = [max(limits[d] - starts[d] if d not in dynamic else dynamic_sizes.get(d, 1), 0)
                 for d in range(t.ndim)]
        start_ts = [_wrapped_start(dynamic[d], t.shape[d]) if d in dynamic
                    else as_tracer(np.int64(starts[d])) for d in range(t.ndim)]
        # s64 starts, wrapped as NumPy wraps; dynamic-slice clamps them so the slice fits.
        x = lax.dynamic_slice(x, start_ts, sizes, allow_negative_indices=False)
        if any(st != 1 for st in strides):
            x = lax.slice(x, [0] * t.ndim, sizes, strides)
    elif any(starts) or list(limits) != list(t.shape) or any(st != 1 for st in strides):
        x = lax.slice(x, starts, limits, strides)
    return Tracer(lax.reshape(x, out_shape).op, weak=t.weak)


def _check_index_range(i, size, dim):
    """A loop index (or an offset of one) whose range reaches past the
    dimension: NumPy raises IndexError there, where a dynamic-slice would
    clamp; a TracingError, so the loop unrolls and the index is a Python
    int that raises as NumPy does."""
    if i._affine is None:
        return
    _, offset, lo, hi = i._affine
    if lo + offset < -size or hi + offset >= size:
        raise tracing_error(f"the index along axis {dim} reaches {lo + offset}..{hi + offset}, "
                            f"outside a dimension of size {size} (NumPy raises IndexError there)")


def _traced_slice(i, size, dim):
    """``(start Tracer, static size)`` of a slice ``x[a:b]`` whose bounds are
    traced offsets of one loop index (``x[i:i + 3]``, ``x[i - 1:i + 2]``)
    that stay inside the dimension for every value the index takes, so
    NumPy's clipping and negative wrap-around never apply; None for other
    indices. Other slices with traced bounds have a data-dependent size: a
    TracingError (a converted loop then unrolls)."""
    if not isinstance(i, slice) or not (isinstance(i.start, Tracer) or isinstance(i.stop, Tracer)):
        return None
    a, b_ = i.start, i.stop
    ok = (i.step is None or (not isinstance(i.step, Tracer) and operator.index(i.step) == 1)) and \
        isinstance(a, Tracer) and isinstance(b_, Tracer) and a._affine is not None and \
        b_._affine is not None and a._affine[0] is b_._affine[0]
    if ok:
        _, a_off, lo, hi = a._affine
        b_off = b_._affine[1]
        n = max(b_off - a_off, 0)
        # Never negative (NumPy would wrap x[i:i - 1] at i = 0 around to
        # x[0:-1], most of x); never clipped when non-empty.
        ok = lo + a_off >= 0 and lo + b_off >= 0 and (n == 0 or hi + b_off <= size)
        if ok:
            return a, n
    raise tracing_error(f"a slice with traced bounds along axis {dim} has a size that depends on "
                        "the data, or may leave the array (where NumPy would clip it); "
                        "x[i:i + k] with a loop index i that keeps it inside compiles")


def _wrapped_start(index, size):
    """A traced index with NumPy's negative wrap-around, as int64."""
    i = lax.convert_element_type(index, np.int64)
    zero = lax.full_like(i, 0)
    n = lax.full_like(i, size)
    return lax.select(lax.lt(i, zero), lax.add(i, n), i)


def _prepare_advanced(t, idx, mode):
    """Applies None and slices, then returns (operand Tracer, advanced
    positions, broadcast index Tracer of shape B + (len(adv),), B, the
    positions' contiguity)."""
    # None becomes a size-1 axis indexed by ':'.
    shape, full_idx, dim = [], [], 0
    for i in idx:
        if i is None:
            shape.append(1)
            full_idx.append(slice(None))
        else:
            shape.append(t.shape[dim])
            full_idx.append(i)
            dim += 1
    t = lax.reshape(t, shape)
    # Slices first (static), leaving full slices.
    basic = [i if isinstance(i, slice) else slice(None) for i in full_idx]
    t = _basic(t, basic)
    adv = [k for k, i in enumerate(full_idx) if not isinstance(i, slice)]
    arrays = []
    for k in adv:
        i = full_idx[k]
        size = t.shape[k]
        if isinstance(i, Tracer):
            if i.dtype.kind not in "iu":
                raise IndexError(f"arrays used as indices must be of integer type, got {i.dtype}")
            if mode == "clip":     # np.take's clip: no wrap-around, gather clamps
                arrays.append(convert(i, np.int64))
            elif mode == "wrap":
                arrays.append(np.remainder(convert(i, np.int64), max(size, 1)))
            else:
                arrays.append(_wrapped_start(i, size))
        else:
            a = np.asarray(i)
            if a.dtype.kind not in "iu" and a.size:
                raise IndexError(f"arrays used as indices must be of integer type, got {a.dtype}")
            a = a.astype(np.int64)
            if mode == "clip":
                a = np.clip(a, 0, max(size - 1, 0))
            elif mode == "wrap":
                a = a % size if size else a
            else:
                bad = (a < -size) | (a >= size)
                if bad.any():
                    raise IndexError(f"index {int(a[bad].flat[0])} is out of bounds for axis {k} with "
                                     f"size {size}")
                a = np.where(a < 0, a + size, a)
            arrays.append(as_tracer(a))
    bshape = broadcast_shapes(*(a.shape for a in arrays))
    stacked = [broadcast_to(a, bshape) for a in arrays]
    index = lax.concatenate([lax.reshape(s, bshape + (1,)) for s in stacked], len(bshape))
    contiguous = adv == list(range(adv[0], adv[0] + len(adv)))
    return t, adv, index, bshape, contiguous


def _advanced(t, idx, mode):
    t, adv, index, bshape, contiguous = _prepare_advanced(t, idx, mode)
    rest = [d for d in range(t.ndim) if d not in adv]
    nb = len(bshape)
    first = adv[0] if contiguous else 0
    # Output: rest dims before `first`, then B, then the other rest dims.
    offset_dims = [j if j < first else j + nb for j in range(len(rest))]
    slice_sizes = [1 if d in adv else t.shape[d] for d in range(t.ndim)]
    # Indices are in range or clamped (see the module docstring): XLA's own gather.
    dnums = lax.GatherDimensionNumbers(offset_dims=tuple(offset_dims), collapsed_slice_dims=tuple(adv),
                                       start_index_map=tuple(adv))
    return lax.gather(t, index, dnums, slice_sizes, mode=lax.GatherScatterMode.PROMISE_IN_BOUNDS)


class AtIndexer:
    """``x.at[idx]``: functional updates, as in JAX."""

    def __init__(self, t):
        self._t = t

    def __getitem__(self, index):
        return _AtRef(self._t, index)


# x.at[idx].<how>(v): the lax combination of the old and new values, and the
# scatter that applies it.
_COMBINERS = {"set": None, "add": lax.add, "multiply": lax.mul, "min": lax.min, "max": lax.max}
_BOOL_COMBINERS = {"add": lax.bitwise_or, "multiply": lax.bitwise_and}
_SCATTERS = {"set": lax.scatter, "add": lax.scatter_add, "multiply": lax.scatter_mul,
             "min": lax.scatter_min, "max": lax.scatter_max}


class _AtRef:
    def __init__(self, t, index):
        self.t = t
        self.index = index

    def get(self, mode=None):
        return getitem(self.t, self.index, mode)

    def set(self, values):
        return self._update(values, "set")

    def add(self, values):
        return self._update(values, "add")

    def multiply(self, values):
        return self._update(values, "multiply")

    def min(self, values):
        return self._update(values, "min")

    def max(self, values):
        return self._update(values, "max")

    def _update(self, values, how):
        t = as_tracer(self.t)
        idx = _expand(_captured(self.index), t.ndim)
        if any(_is_array_index(i) for i in idx):
            return _scatter(t, idx, values, how)
        masked = table("masked_slice").masked_update(t, idx, values, how)
        if masked is not None:
            return masked
        return _update_basic(t, idx, values, how)


def _update_basic(t, idx, values, how):
    """Basic indices: read the slab, combine, write it back with a
    dynamic-update-slice (steps other than 1 go through scatter)."""
    if any(isinstance(i, slice) and (i.step or 1) != 1 for i in idx if i is not None):
        return _scatter_elements(t, idx, values, how)
    slab = _basic(t, idx)
    v = convert(as_tracer(values), t.dtype)
    v = broadcast_to(v, slab.shape)
    if how != "set":
        # NumPy's + and * on booleans are 'or' and 'and'.
        combine = _BOOL_COMBINERS.get(how) if t.dtype == np.bool_ else None
        v = (combine or _COMBINERS[how])(slab, v)
    # Dims of the slab, without the None axes and int positions.
    starts, sizes, dim = [], [], 0
    for i in idx:
        if i is None:
            continue
        traced = _traced_slice(i, t.shape[dim], dim)
        if traced is not None:
            starts.append(_wrapped_start(traced[0], t.shape[dim]))
            sizes.append(traced[1])
        elif isinstance(i, slice):
            start, stop, _ = i.indices(t.shape[dim])
            starts.append(as_tracer(np.int64(start)))
            sizes.append(max(stop - start, 0))
        elif isinstance(i, Tracer):
            _check_index_range(i, t.shape[dim], dim)
            starts.append(_wrapped_start(i, t.shape[dim]))
            sizes.append(1)
        else:
            k = operator.index(i)
            if not -t.shape[dim] <= k < t.shape[dim]:
                raise IndexError(f"index {k} is out of bounds for axis {dim} with size {t.shape[dim]}")
            starts.append(as_tracer(np.int64(k % t.shape[dim])))
            sizes.append(1)
        dim += 1
    return lax.dynamic_update_slice(t, lax.reshape(v, sizes), starts, allow_negative_indices=False)


def _scatter_elements(t, idx, values, how):
    """Any index, one element at a time: indexing the iota of each dimension
    with ``idx`` gives the coordinates of every selected element (NumPy's
    rules, bounds checks and clamping included, by construction), and one
    scatter with scalar windows writes them."""
    coords = [getitem(lax.broadcasted_iota(np.int64, t.shape, d), tuple(idx)) for d in range(t.ndim)]
    rshape = coords[0].shape
    index = lax.concatenate([lax.reshape(c, rshape + (1,)) for c in coords], len(rshape))
    v = broadcast_to(convert(as_tracer(values), t.dtype), rshape)
    dims = tuple(range(t.ndim))
    dnums = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=dims,
                                        scatter_dims_to_operand_dims=dims)
    return _SCATTERS[how](t, index, v, dnums, mode=lax.GatherScatterMode.FILL_OR_DROP)


def _scatter(t, idx, values, how):
    if any(isinstance(i, slice) and i != slice(None) for i in idx) or any(i is None for i in idx):
        return _scatter_elements(t, idx, values, how)
    _, adv, index, bshape, contiguous = _prepare_advanced(t, idx, None)
    rest = [d for d in range(t.ndim) if d not in adv]
    nb = len(bshape)
    first = adv[0] if contiguous else 0
    update_window_dims = [j if j < first else j + nb for j in range(len(rest))]
    upd_shape = [0] * (len(rest) + nb)
    for j, d in zip(update_window_dims, rest):
        upd_shape[j] = t.shape[d]
    bpos = [p for p in range(len(upd_shape)) if p not in update_window_dims]
    for p, s in zip(bpos, bshape):
        upd_shape[p] = s
    v = broadcast_to(convert(as_tracer(values), t.dtype), tuple(upd_shape))
    dnums = lax.ScatterDimensionNumbers(update_window_dims=tuple(update_window_dims),
                                        inserted_window_dims=tuple(adv),
                                        scatter_dims_to_operand_dims=tuple(adv))
    return _SCATTERS[how](t, index, v, dnums, mode=lax.GatherScatterMode.FILL_OR_DROP)


install_table("indexing", sys.modules[__name__])
