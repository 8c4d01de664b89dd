"""Slices at traced offsets, as ``jax.lax``: ``dynamic_slice``,
``dynamic_update_slice`` and their one-axis forms. A negative start counts
from the end (unless ``allow_negative_indices=False``), then the start is
clamped so the slice fits, as XLA does."""
import numpy as np

from xla.errors import ShapeError
from xla.frontend.lax.eager import eager
from xla.frontend.lax.primitives import reshape
from xla.frontend.lax.subcomputation import type_text
from xla.frontend.tracing import Tracer, as_tracer, convert, current_context


def _index_ops(x, indices, sizes, allow_negative_indices, what):
    indices = list(indices)
    if len(indices) != x.ndim:
        raise ShapeError((
            f"{what}: expected {x.ndim} start indices (one per dimension of {x.dtype}"
            f"{list(x.shape)}), got {len(indices)}"))
    out = []
    for d, (i, size) in enumerate(zip(indices, sizes)):
        t = as_tracer(i)
        if t.shape != () or t.dtype.kind not in "iu":
            raise ShapeError((
                f"{what}: start index {d} must be an integer scalar, got {type_text(t)}"))
        if t.weak:
            t = convert(t, np.int64)
        if allow_negative_indices and t.dtype.kind == "i":
            t = np.where(t < 0, t + np.asarray(x.shape[d], t.dtype), t)
        if t.dtype != np.int32:
            # XLA clamps the start into range; doing it before narrowing to
            # s32 keeps wide indices from wrapping.
            t = np.clip(t, np.asarray(0, t.dtype), np.asarray(max(x.shape[d] - size, 0), t.dtype))
        out.append(convert(t, np.int32).op)
    return out


@eager
def dynamic_slice(operand, start_indices, slice_sizes, *, allow_negative_indices=True):
    """XLA's dynamic-slice, as ``jax.lax.dynamic_slice``: a negative start
    counts from the end (unless ``allow_negative_indices=False``), then the
    start is clamped so the slice fits."""
    x = as_tracer(operand)
    slice_sizes = tuple(int(s) for s in slice_sizes)
    b = current_context().builder
    starts = _index_ops(x, start_indices, slice_sizes, allow_negative_indices, "dynamic_slice")
    return Tracer(b.dynamic_slice(x.op, starts, slice_sizes))


@eager
def dynamic_update_slice(operand, update, start_indices, *, allow_negative_indices=True):
    """``operand`` with ``update`` written at ``start_indices`` (negative and
    out-of-range starts as in ``dynamic_slice``)."""
    x = as_tracer(operand)
    u = as_tracer(update)
    if u.dtype != x.dtype:
        if not u.weak:
            raise ShapeError((
                f"dynamic_update_slice: update has dtype {u.dtype}, operand {x.dtype}"))
        u = convert(u, x.dtype)
    if u.ndim != x.ndim:
        raise ShapeError((
            f"dynamic_update_slice: update {type_text(u)} must have the rank of operand "
            f"{type_text(x)}"))
    b = current_context().builder
    starts = _index_ops(x, start_indices, u.shape, allow_negative_indices, "dynamic_update_slice")
    return Tracer(b.dynamic_update_slice(x.op, u.op, starts))


@eager
def dynamic_index_in_dim(operand, index, axis=0, keepdims=True, *, allow_negative_indices=True):
    """``operand[..., index, ...]`` along ``axis`` with a traced ``index``."""
    x = as_tracer(operand)
    axis = axis % x.ndim
    starts = [0] * x.ndim
    starts[axis] = index
    sizes = list(x.shape)
    sizes[axis] = 1
    out = dynamic_slice(x, starts, sizes, allow_negative_indices=allow_negative_indices)
    if not keepdims:
        out = reshape(out, x.shape[:axis] + x.shape[axis + 1:])
    return out


@eager
def dynamic_update_index_in_dim(operand, update, index, axis=0, *, allow_negative_indices=True):
    x = as_tracer(operand)
    u = as_tracer(update)
    axis = axis % x.ndim
    if u.ndim == x.ndim - 1:
        u = reshape(u, u.shape[:axis] + (1,) + u.shape[axis:])
    starts = [0] * x.ndim
    starts[axis] = index
    return dynamic_update_slice(x, u, starts, allow_negative_indices=allow_negative_indices)


