"""Slicing, as ``jax.lax``: static ``slice``; ``dynamic_slice``,
``dynamic_update_slice`` and their one-axis forms, whose negative start
counts from the end (unless ``allow_negative_indices=False``) and is then
clamped so the slice fits, as XLA does; ``gather`` and the ``scatter``
family with JAX's dimension numbers and modes."""
import dataclasses
import enum

import numpy as np

from xla.errors import InvalidArgumentError, ShapeError
from xla.frontend.builder import element_type
from xla.frontend.lax.eager import eager
from xla.frontend.lax.primitives import (_kind, bitwise_and, broadcast_in_dim, clamp, full_like, ge,
                                         le, reshape, select)
from xla.frontend.lax.reductions import reduce
from xla.frontend.lax.subcomputation import type_text
from xla.frontend.tracing import Tracer, as_tracer, convert, current_context
from xla.hlo.shape import Shape


@eager
def slice(operand, start_indices, limit_indices, strides=None):
    """``operand[start:limit:stride]`` in every dimension (HLO slice)."""
    x = as_tracer(operand)
    starts = tuple(int(i) for i in start_indices)
    limits = tuple(int(i) for i in limit_indices)
    strides = (1,) * x.ndim if strides is None else tuple(int(i) for i in strides)
    if not len(starts) == len(limits) == len(strides) == x.ndim:
        raise ShapeError(f"slice: start_indices {starts}, limit_indices {limits} and strides "
                         f"{strides} need one entry per dimension of {type_text(x)}")
    for d, (a, b, st) in enumerate(zip(starts, limits, strides)):
        if not 0 <= a <= b <= x.shape[d] or st < 1:
            raise ShapeError(f"slice: [{a}:{b}:{st}] is not a slice of dimension {d} of "
                             f"{type_text(x)} (0 <= start <= limit <= size, stride >= 1)")
    return Tracer(current_context().builder.slice(x.op, starts, limits, strides), weak=x.weak)


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
        out.append(t)
    if len({t.dtype for t in out}) == 1 and out and out[0].dtype in (np.int32, np.int64):
        return [t.op for t in out]   # one index type, as HLO requires; XLA clamps
    # Indices of several types (or narrow or unsigned ones) become s32:
    # clamped first, as XLA would, so that wide indices do not wrap.
    return [convert(np.clip(t, np.asarray(0, t.dtype), np.asarray(max(x.shape[d] - size, 0), t.dtype))
                    if t.dtype != np.int32 else t, np.int32).op
            for d, (t, size) in enumerate(zip(out, sizes))]


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



# ----- gather and scatter ---------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class GatherDimensionNumbers:
    """XLA's gather dimension numbers, as JAX names them (the index vector
    is the last dimension of ``start_indices``)."""
    offset_dims: tuple
    collapsed_slice_dims: tuple
    start_index_map: tuple
    operand_batching_dims: tuple = ()
    start_indices_batching_dims: tuple = ()


@dataclasses.dataclass(frozen=True)
class ScatterDimensionNumbers:
    """XLA's scatter dimension numbers, as JAX names them (the index vector
    is the last dimension of ``scatter_indices``)."""
    update_window_dims: tuple
    inserted_window_dims: tuple
    scatter_dims_to_operand_dims: tuple
    operand_batching_dims: tuple = ()
    scatter_indices_batching_dims: tuple = ()


class GatherScatterMode(enum.Enum):
    """Out-of-bounds indices, as in JAX: CLIP clamps them so the window
    fits; FILL_OR_DROP gives ``fill_value`` for a gathered window that does
    not fit and drops a scattered one (XLA's own scatter semantics);
    PROMISE_IN_BOUNDS is the bare XLA operation (a gather clamps, a
    scatter drops). ONE_HOT is not supported."""
    CLIP = enum.auto()
    FILL_OR_DROP = enum.auto()
    PROMISE_IN_BOUNDS = enum.auto()

    @staticmethod
    def from_any(s):
        if isinstance(s, GatherScatterMode):
            return s
        modes = {"clip": GatherScatterMode.CLIP, None: GatherScatterMode.FILL_OR_DROP,
                 "fill": GatherScatterMode.FILL_OR_DROP, "drop": GatherScatterMode.FILL_OR_DROP,
                 "promise_in_bounds": GatherScatterMode.PROMISE_IN_BOUNDS}
        if s not in modes:
            raise InvalidArgumentError(f"unknown gather/scatter mode {s!r} (clip, fill, drop, "
                                       "promise_in_bounds)")
        return modes[s]


def _indices(what, indices):
    i = as_tracer(indices)
    if i.dtype.kind not in "iu" or i.ndim < 1:
        raise ShapeError(f"{what}: indices must be an integer array with the index vector as its "
                         f"last dimension, got {type_text(i)}")
    return convert(i, np.int64) if i.weak else i


def _window_bounds(operand, dims, window):
    """Per index vector entry k, the largest start of ``operand``'s
    dimension ``dims[k]`` at which a window of ``window[k]`` fits."""
    return [max(operand.shape[d] - w, 0) for d, w in zip(dims, window)]


def _clamp_indices(operand, indices, dims, window):
    """Each index vector entry clamped into [0, bound] (CLIP)."""
    bounds = np.asarray(_window_bounds(operand, dims, window), indices.dtype)
    hi = broadcast_in_dim(as_tracer(bounds), indices.shape, (indices.ndim - 1,))
    return clamp(full_like(indices, 0), indices, hi)


def _in_bounds(operand, indices, dims, window):
    """The batch-shaped mask of index vectors whose window fits."""
    bounds = np.asarray(_window_bounds(operand, dims, window), indices.dtype)
    hi = broadcast_in_dim(as_tracer(bounds), indices.shape, (indices.ndim - 1,))
    ok = bitwise_and(ge(indices, full_like(indices, 0)), le(indices, hi))
    return reduce(ok, np.bool_(True), bitwise_and, (indices.ndim - 1,))


@eager
def gather(operand, start_indices, dimension_numbers, slice_sizes, *, unique_indices=False,
           indices_are_sorted=False, mode=None, fill_value=None):
    """XLA's gather: for each index vector (the last dimension of
    ``start_indices``), the window of ``slice_sizes`` at that start, its
    ``collapsed_slice_dims`` dropped; window dimensions go to the output's
    ``offset_dims``, the batch dimensions of the indices fill the rest in
    order. ``mode`` as ``GatherScatterMode`` (default FILL_OR_DROP, with
    NaN, the dtype's minimum or True as the default ``fill_value``, as in
    JAX)."""
    x = as_tracer(operand)
    i = _indices("gather", start_indices)
    dn = dimension_numbers
    if not isinstance(dn, GatherDimensionNumbers):
        raise InvalidArgumentError(f"lax.gather takes GatherDimensionNumbers, got {dn!r}")
    slice_sizes = tuple(int(s) for s in slice_sizes)
    if len(slice_sizes) != x.ndim or len(dn.start_index_map) != i.shape[-1]:
        raise ShapeError(f"gather: slice_sizes {slice_sizes} needs one size per dimension of "
                         f"{type_text(x)}, start_index_map {dn.start_index_map} one entry per index "
                         f"vector entry of {type_text(i)}")
    parsed = GatherScatterMode.from_any(mode)
    window = [slice_sizes[d] for d in dn.start_index_map]
    mask = None
    if parsed is GatherScatterMode.CLIP:
        i = _clamp_indices(x, i, dn.start_index_map, window)
    elif parsed is GatherScatterMode.FILL_OR_DROP:
        mask = _in_bounds(x, i, dn.start_index_map, window)
    b = current_context().builder
    out = Tracer(b.gather(x.op, i.op, offset_dims=dn.offset_dims,
                          collapsed_slice_dims=dn.collapsed_slice_dims,
                          start_index_map=dn.start_index_map, index_vector_dim=i.ndim - 1,
                          slice_sizes=slice_sizes, operand_batching_dims=dn.operand_batching_dims,
                          start_indices_batching_dims=dn.start_indices_batching_dims,
                          indices_are_sorted=indices_are_sorted), weak=x.weak)
    if mask is None:
        return out
    if fill_value is None:
        kind = _kind(x.dtype)
        fill_value = (np.nan if kind in "fc" else True if kind == "b" else np.iinfo(x.dtype).min)
    batch = [d for d in range(out.ndim) if d not in dn.offset_dims]
    keep = broadcast_in_dim(mask, out.shape, batch)
    return select(keep, out, full_like(out, fill_value))


_COMBINERS = {"scatter_set": None, "scatter_add": "add", "scatter_multiply": "multiply",
              "scatter_min": "minimum", "scatter_max": "maximum"}


def _scatter(name, operand, scatter_indices, updates, dimension_numbers, indices_are_sorted,
             unique_indices, mode):
    x, u = as_tracer(operand), as_tracer(updates)
    i = _indices(name, scatter_indices)
    dn = dimension_numbers
    if not isinstance(dn, ScatterDimensionNumbers):
        raise InvalidArgumentError(f"lax.{name} takes ScatterDimensionNumbers, got {dn!r}")
    if u.dtype != x.dtype:
        if not u.weak:
            raise ShapeError(f"{name}: updates {type_text(u)} must have the operand's dtype {x.dtype}")
        u = convert(u, x.dtype)
    if len(dn.scatter_dims_to_operand_dims) != i.shape[-1]:
        raise ShapeError(f"{name}: scatter_dims_to_operand_dims {dn.scatter_dims_to_operand_dims} needs "
                         f"one entry per index vector entry of {type_text(i)}")
    if GatherScatterMode.from_any(mode) is GatherScatterMode.CLIP:
        window_sizes = [u.shape[d] for d in dn.update_window_dims]
        full_window = [1 if d in dn.inserted_window_dims or d in dn.operand_batching_dims else None
                       for d in range(x.ndim)]
        it = iter(window_sizes)
        full_window = [w if w is not None else next(it) for w in full_window]
        i = _clamp_indices(x, i, dn.scatter_dims_to_operand_dims,
                           [full_window[d] for d in dn.scatter_dims_to_operand_dims])
    b = current_context().builder
    sub = b.sub_builder(name)
    et = element_type(x.dtype)
    old = sub.parameter(0, Shape.scalar(et), "old")
    new = sub.parameter(1, Shape.scalar(et), "new")
    combine = sub.build(new if _COMBINERS[name] is None else sub.binary(_COMBINERS[name], old, new))
    out = b.scatter(x.op, i.op, u.op, combine, update_window_dims=dn.update_window_dims,
                    inserted_window_dims=dn.inserted_window_dims,
                    scatter_dims_to_operand_dims=dn.scatter_dims_to_operand_dims,
                    index_vector_dim=i.ndim - 1, input_batching_dims=dn.operand_batching_dims,
                    scatter_indices_batching_dims=dn.scatter_indices_batching_dims,
                    indices_are_sorted=indices_are_sorted, unique_indices=unique_indices)
    return Tracer(out)


def _scatter_fn(name, doc):
    @eager
    def fn(operand, scatter_indices, updates, dimension_numbers, *, indices_are_sorted=False,
           unique_indices=False, mode=None):
        return _scatter(name, operand, scatter_indices, updates, dimension_numbers,
                        indices_are_sorted, unique_indices, mode)
    fn.__doc__ = doc
    return fn


_SCATTER_DOC = """XLA's scatter: each window of ``updates`` (its ``update_window_dims``)
{how} the operand at the start its index vector (the last dimension of
``scatter_indices``) gives, ``inserted_window_dims`` being size-1 operand
dimensions the window lacks. ``mode`` as ``GatherScatterMode`` (default
FILL_OR_DROP: a window that does not fit is dropped)."""
scatter = _scatter_fn("scatter_set", _SCATTER_DOC.format(how="replaces"))
scatter_add = _scatter_fn("scatter_add", _SCATTER_DOC.format(how="is added to"))
scatter_mul = _scatter_fn("scatter_multiply", _SCATTER_DOC.format(how="multiplies"))
scatter_min = _scatter_fn("scatter_min", _SCATTER_DOC.format(how="takes the minimum with"))
scatter_max = _scatter_fn("scatter_max", _SCATTER_DOC.format(how="takes the maximum with"))
for _f, _n in ((scatter, "scatter"), (scatter_add, "scatter_add"), (scatter_mul, "scatter_mul"),
               (scatter_min, "scatter_min"), (scatter_max, "scatter_max")):
    _f.__name__ = _f.__qualname__ = _n
