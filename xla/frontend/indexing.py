"""Indexing traced arrays: ``t[...]`` and ``t.at[...].set(v)``.

Basic indices (ints, slices, ``None``, ``...``) become static slices and
reshapes; a traced integer scalar becomes a dynamic-slice (clamped into
range as XLA specifies, where NumPy would raise); integer arrays become a
gather. A boolean mask selects a number of elements that depends on the
data, so it is an error under ``xla.jit`` (use ``np.where``).
"""
import operator

import numpy as np

from xla.errors import ShapeError
from xla.frontend.tracing import Tracer, as_tracer, current_builder, tracing_error


def _expand(index, ndim):
    """``index`` as a tuple with Ellipsis expanded into full slices."""
    if not isinstance(index, tuple):
        index = (index,)
    n_ellipsis = sum(1 for i in index if i is Ellipsis)
    if n_ellipsis > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    used = sum(1 for i in index if i is not None and i is not Ellipsis)
    if used > ndim:
        raise IndexError(f"too many indices for array: array is {ndim}-dimensional, "
                         f"but {used} were indexed")
    out = []
    for i in index:
        if i is Ellipsis:
            out.extend([slice(None)] * (ndim - used))
        else:
            out.append(i)
    if n_ellipsis == 0:
        out.extend([slice(None)] * (ndim - used))
    return out


def getitem(t, index):
    idx = _expand(index, t.ndim)
    for i in idx:
        if isinstance(i, Tracer) and i.dtype.kind == "b" or \
                isinstance(i, np.ndarray) and i.dtype.kind == "b" and isinstance(t, Tracer) and False:
            raise tracing_error(
                "boolean mask indexing selects a number of elements that depends on the data, so it "
                "cannot be compiled; use np.where(mask, x, fill) to keep the shape")
        if isinstance(i, (Tracer, np.ndarray, list)) and not (isinstance(i, Tracer) and i.ndim == 0
                                                              and i.dtype.kind in "iu"):
            return advanced_getitem(t, idx)
    b = current_builder()
    starts, limits, strides, out_shape, reverse_dims = [], [], [], [], []
    dynamic = {}
    dim = 0
    for i in idx:
        if i is None:
            out_shape.append(("new",))
            continue
        size = t.shape[dim]
        if isinstance(i, slice):
            start, stop, step = i.indices(size)
            if step > 0:
                n = max(0, (stop - start + step - 1) // step)
                starts.append(start)
                limits.append(start + (n - 1) * step + 1 if n else start)
                strides.append(step)
            else:
                n = max(0, (start - stop - step - 1) // -step)
                # Reverse the dimension, then slice forward.
                reverse_dims.append(dim)
                fstart = size - 1 - start
                starts.append(fstart)
                limits.append(fstart + (n - 1) * -step + 1 if n else fstart)
                strides.append(-step)
            out_shape.append(("keep", n))
        elif isinstance(i, Tracer):
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
    op = t.op
    if reverse_dims:
        op = b.reverse(op, reverse_dims)
    if dynamic:
        zero = b.constant(np.int32(0))
        start_ops = []
        for d in range(t.ndim):
            if d in dynamic:
                start_ops.append(b.convert(dynamic[d].op, np.int32) if dynamic[d].dtype != np.int32
                                 else dynamic[d].op)
            else:
                start_ops.append(b.constant(np.int32(starts[d])))
        sizes = [1 if d in dynamic else limits[d] - starts[d] for d in range(t.ndim)]
        # NumPy wraps negative indices; do the same before XLA clamps.
        fixed = []
        for d, s in enumerate(start_ops):
            if d in dynamic:
                size_c = b.constant(np.int32(t.shape[d]))
                neg = b.compare(s, zero, "LT")
                s = b.select(neg, b.binary("add", s, size_c), s)
            fixed.append(s)
        op = b.dynamic_slice(op, fixed, sizes)
        starts = [0 if d in dynamic else 0 for d in range(t.ndim)]
        limits = sizes
        if any(st != 1 for st in strides):
            op = b.slice(op, starts, limits, strides)
    elif any(s != 0 for s in starts) or list(limits) != list(t.shape) or any(st != 1 for st in strides):
        op = b.slice(op, starts, limits, strides)
    shape = []
    for entry in out_shape:
        shape.append(1 if entry[0] == "new" else entry[1])
    if tuple(shape) != tuple(op.dims):
        op = b.reshape(op, shape)
    return Tracer(op, weak=t.weak)


def advanced_getitem(t, idx):
    raise tracing_error("indexing with integer arrays is not supported under xla.jit yet")


class AtIndexer:
    """``x.at[idx].set(v)``: functional updates, as in JAX."""

    def __init__(self, t):
        self._t = t

    def __getitem__(self, index):
        return _AtRef(self._t, index)


class _AtRef:
    def __init__(self, t, index):
        self.t = t
        self.index = index

    def set(self, value):
        raise tracing_error("x.at[...].set is not supported under xla.jit yet")
