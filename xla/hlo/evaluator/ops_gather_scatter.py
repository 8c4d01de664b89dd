"""Interpreter handlers: gather, scatter (full dimension numbers, batching dims).

Out-of-bounds behaviour, as XLA defines it: gather clamps each start index
so that the whole slice fits in the operand; scatter skips an update window
entirely (every element of it) when any part of it would fall outside the
operand. Scatter applies the updates in row-major order of the scatter
indices, combining ``to_apply(current, update)``; repeated indices see
their updates in that order.
"""
import numpy as np

from xla.hlo.evaluator.ops_common import apply_updates_in_order, make_combiner
from xla.hlo.evaluator.registry import register


def _index_array(indices, index_vector_dim):
    """Indices as int64 with the index vector dimension last: (batch..., K)."""
    idx = np.asarray(indices)
    if index_vector_dim >= idx.ndim:
        idx = idx[..., None]
    else:
        idx = np.moveaxis(idx, index_vector_dim, -1)
    if idx.dtype == np.uint64:
        # Values beyond int64 are out of bounds anyway; keep them large.
        idx = np.minimum(idx, np.uint64(np.iinfo(np.int64).max))
    return idx.astype(np.int64)


def _batch_position(indices_dim, index_vector_dim):
    """Position among the batch (non-index-vector) dimensions of an indices dimension."""
    return indices_dim - 1 if indices_dim > index_vector_dim else indices_dim


@register("gather")
def gather(instr, operands, ctx):
    operand, indices = operands
    offset_dims = tuple(instr.attr("offset_dims", ()))
    collapsed = tuple(instr.attr("collapsed_slice_dims", ()))
    start_index_map = tuple(instr.attr("start_index_map", ()))
    ivd = instr.attr("index_vector_dim")
    ivd = indices.ndim if ivd is None else int(ivd)
    slice_sizes = tuple(instr.attr("slice_sizes", ()))
    operand_batching = tuple(instr.attr("operand_batching_dims", ()))
    indices_batching = tuple(instr.attr("start_indices_batching_dims", ()))

    idx = _index_array(indices, ivd)
    bshape = idx.shape[:-1]
    nb = len(bshape)
    rank = operand.ndim
    offset_operand_dims = [d for d in range(rank) if d not in collapsed and d not in operand_batching]
    offset_shape = tuple(slice_sizes[d] for d in offset_operand_dims)
    no = len(offset_shape)

    # Per operand dimension, the (clamped) start over the batch shape.
    starts = [np.zeros(bshape, np.int64) for _ in range(rank)]
    for k, d in enumerate(start_index_map):
        hi = operand.shape[d] - slice_sizes[d]
        starts[d] = np.clip(idx[..., k], 0, max(hi, 0))
    for od, idim in zip(operand_batching, indices_batching):
        pos = _batch_position(idim, ivd)
        shape = [1] * nb
        shape[pos] = bshape[pos]
        starts[od] = np.broadcast_to(np.arange(bshape[pos], dtype=np.int64).reshape(shape), bshape)

    full = []
    for d in range(rank):
        s = starts[d].reshape(bshape + (1,) * no)
        if d in offset_operand_dims:
            j = offset_operand_dims.index(d)
            shape = [1] * no
            shape[j] = offset_shape[j]
            s = s + np.arange(offset_shape[j], dtype=np.int64).reshape((1,) * nb + tuple(shape))
        full.append(s)
    if operand.size == 0:
        result = np.zeros(bshape + offset_shape, operand.dtype)
    else:
        result = operand[tuple(full)] if rank else np.broadcast_to(operand, bshape + offset_shape)
        result = np.broadcast_to(result, bshape + offset_shape)
    # Axes are (batch..., offset...); place offsets at offset_dims.
    out_rank = nb + no
    batch_positions = [p for p in range(out_rank) if p not in offset_dims]
    perm = [0] * out_rank
    for i, p in enumerate(batch_positions):
        perm[p] = i
    for j, p in enumerate(offset_dims):
        perm[p] = nb + j
    # (Not np.ascontiguousarray: it makes a scalar result one-dimensional.)
    return np.array(np.transpose(result, perm), dtype=instr.shape.dtype, order="C")


@register("scatter")
def scatter(instr, operands, ctx):
    n = (len(operands) - 1) // 2
    inputs = operands[:n]
    indices = operands[n]
    updates = operands[n + 1:]
    uwd = tuple(instr.attr("update_window_dims", ()))
    inserted = tuple(instr.attr("inserted_window_dims", ()))
    sd2od = tuple(instr.attr("scatter_dims_to_operand_dims", ()))
    ivd = instr.attr("index_vector_dim")
    ivd = indices.ndim if ivd is None else int(ivd)
    input_batching = tuple(instr.attr("input_batching_dims", ()))
    indices_batching = tuple(instr.attr("scatter_indices_batching_dims", ()))

    shapes = [instr.shape] if not instr.shape.is_tuple else list(instr.shape.tuple_shapes)
    dtypes = [s.dtype for s in shapes]
    outs = [np.array(x, dtype=dt, copy=True) for x, dt in zip(inputs, dtypes)]
    rank = outs[0].ndim
    upd0 = updates[0]
    if upd0.size == 0:
        return outs[0] if not instr.shape.is_tuple else tuple(outs)

    idx = _index_array(indices, ivd)
    bshape = idx.shape[:-1]
    nb = len(bshape)
    update_scatter_dims = [d for d in range(upd0.ndim) if d not in uwd]
    window_operand_dims = [d for d in range(rank) if d not in inserted and d not in input_batching]
    wshape = tuple(upd0.shape[d] for d in uwd)
    nw = len(wshape)

    starts = [np.zeros(bshape, np.int64) for _ in range(rank)]
    for k, d in enumerate(sd2od):
        starts[d] = idx[..., k]
    for od, idim in zip(input_batching, indices_batching):
        pos = _batch_position(idim, ivd)
        shape = [1] * nb
        shape[pos] = bshape[pos]
        starts[od] = np.broadcast_to(np.arange(bshape[pos], dtype=np.int64).reshape(shape), bshape)
    in_bounds = np.ones(bshape, bool)
    for d in range(rank):
        size = wshape[window_operand_dims.index(d)] if d in window_operand_dims else 1
        in_bounds &= (starts[d] >= 0) & (starts[d] <= outs[0].shape[d] - size)

    # Flat operand index of every update element, in (scatter..., window...) order.
    flat = np.zeros(bshape + (1,) * nw, np.int64)
    strides = np.cumprod((outs[0].shape[1:] + (1,))[::-1])[::-1] if rank else ()
    for d in range(rank):
        s = starts[d].reshape(bshape + (1,) * nw)
        if d in window_operand_dims:
            j = window_operand_dims.index(d)
            shape = [1] * nw
            shape[j] = wshape[j]
            s = s + np.arange(wshape[j], dtype=np.int64).reshape((1,) * nb + tuple(shape))
        flat = flat + s * int(strides[d])
    flat = np.broadcast_to(flat, bshape + wshape).reshape(-1)
    mask = np.broadcast_to(in_bounds.reshape(bshape + (1,) * nw), bshape + wshape).reshape(-1)
    perm = update_scatter_dims + list(uwd)
    upd_flat = [np.transpose(np.asarray(u, dt), perm).reshape(-1)[mask] for u, dt in zip(updates, dtypes)]
    targets = [o.reshape(-1) for o in outs]
    combine = make_combiner(ctx, instr.attr("to_apply"), dtypes)
    apply_updates_in_order(targets, flat[mask], upd_flat, combine)
    outs = [t.reshape(o.shape) for t, o in zip(targets, outs)]
    return outs[0] if not instr.shape.is_tuple else tuple(outs)
