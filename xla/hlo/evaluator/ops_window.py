"""Interpreter handlers: reduce-window, select-and-scatter.

Both iterate over the window offsets (a small loop) and, for each offset,
process every output position at once. Window semantics per dimension:
output position o covers position ``o*stride + k*window_dilation`` of the
input dilated by base_dilation (lhs_dilate) and padded by padding_low/high
(negative padding crops); positions in padding or dilation holes are
skipped, exactly as XLA's evaluator does.
"""
import numpy as np

from xla.hlo.evaluator.ops_common import make_combiner, apply_updates_in_order, window_indices
from xla.hlo.evaluator.elementwise import _is_narrow_float
from xla.hlo.evaluator.registry import register


def _window_dims(instr, rank):
    window = instr.attr("window")
    dims = list(window.dimensions) if window is not None else []
    if len(dims) != rank:
        from xla.hlo.attributes import WindowDimension
        dims = dims + [WindowDimension(size=1)] * (rank - len(dims))
    return dims


def _offset_tables(in_shape, wdims, out_shape):
    """Per dimension, per window offset: (input index, valid) arrays over output positions."""
    return [[window_indices(in_shape[d], wd, out_shape[d], k) for k in range(wd.size)]
            for d, wd in enumerate(wdims)]


def _gather_offset(x, tables, koff):
    """x at window offset koff for every output position, and the validity mask."""
    idxs = [tables[d][k][0] for d, k in enumerate(koff)]
    valid = None
    for d, k in enumerate(koff):
        v = tables[d][k][1]
        if v.all():
            continue
        shape = [1] * len(koff)
        shape[d] = -1
        v = v.reshape(shape)
        valid = v if valid is None else (valid & v)
    vals = x[np.ix_(*idxs)] if koff else x
    return vals, valid


@register("reduce-window")
def reduce_window(instr, operands, ctx):
    """Variadic reduce-window: acc starts at init; acc = to_apply(acc, x) per in-window element.

    Elements are visited in row-major order of the window offsets;
    padding and base-dilation holes contribute nothing (they are skipped,
    not combined with the init value).
    """
    n = len(operands) // 2
    inputs, inits = operands[:n], operands[n:]
    shapes = [instr.shape] if n == 1 and not instr.shape.is_tuple else list(instr.shape.tuple_shapes)
    out_shape = shapes[0].dimensions
    dtypes = [s.dtype for s in shapes]
    rank = inputs[0].ndim
    wdims = _window_dims(instr, rank)
    result_dtypes = dtypes
    wide = _narrow_float_accumulation(instr.attr("to_apply"), dtypes)
    if wide is not None:
        # f16/bf16/f8 sums and products accumulate in f32 and round once, as
        # reduces do (and XLA).
        dtypes = [np.dtype(np.float32)]
        combine = lambda cur, upd: [wide(cur[0], np.asarray(upd[0], np.float32))]  # noqa: E731
    else:
        combine = make_combiner(ctx, instr.attr("to_apply"), dtypes)
    acc = [np.full(out_shape, np.asarray(init, dt), dtype=dt) for init, dt in zip(inits, dtypes)]
    if int(np.prod(out_shape, dtype=np.int64)) > 0 and inputs[0].size > 0:
        tables = _offset_tables(inputs[0].shape, wdims, out_shape)
        for koff in np.ndindex(*[wd.size for wd in wdims]):
            if any(not tables[d][k][1].any() for d, k in enumerate(koff)):
                continue
            vals, valid = [], None
            for x in inputs:
                v, valid = _gather_offset(x, tables, koff)
                vals.append(v)
            new = combine(acc, vals)
            if valid is None:
                acc = [np.asarray(a, dt) for a, dt in zip(new, dtypes)]
            else:
                acc = [np.where(valid, a_new, a_old).astype(dt) for a_new, a_old, dt in zip(new, acc, dtypes)]
    acc = [np.asarray(a).astype(dt) for a, dt in zip(acc, result_dtypes)]
    if n == 1 and not instr.shape.is_tuple:
        return acc[0]
    return tuple(acc)


def _narrow_float_accumulation(comp, dtypes):
    """np.add or np.multiply when a one-input reduce-window of a narrow float
    (f16, bf16, f8) sums or multiplies, else None."""
    from xla.hlo.evaluator.control_flow import simple_reducer
    if len(dtypes) != 1 or not _is_narrow_float(dtypes[0]):
        return None
    return {"add": np.add, "multiply": np.multiply}.get(simple_reducer(comp))


@register("select-and-scatter")
def select_and_scatter(instr, operands, ctx):
    """For each window (one per source element) select an operand element, then scatter.

    Selection visits the window's non-padding elements in row-major order:
    the first is selected, and each later element e replaces the selected
    s when select(s, e) is false (so with GE, ties keep the first). The
    output starts as init_value everywhere and each source value is
    combined into the output at its selected position with
    scatter(output, source), in row-major order of the source. Windows
    with no non-padding element select nothing.
    """
    operand, source, init = operands
    dtype = instr.shape.dtype
    out = np.full(operand.shape, np.asarray(init, dtype), dtype=dtype)
    if source.size == 0 or operand.size == 0:
        return out
    wdims = _window_dims(instr, operand.ndim)
    select = instr.attr("select")
    tables = _offset_tables(operand.shape, wdims, source.shape)
    flat_index_of = np.arange(operand.size, dtype=np.int64).reshape(operand.shape)
    sel_val = None
    sel_idx = np.zeros(source.shape, np.int64)
    have = np.zeros(source.shape, bool)
    from xla.hlo.evaluator.ops_common import call_elementwise
    for koff in np.ndindex(*[wd.size for wd in wdims]):
        if any(not tables[d][k][1].any() for d, k in enumerate(koff)):
            continue
        vals, valid = _gather_offset(operand, tables, koff)
        idx, _ = _gather_offset(flat_index_of, tables, koff)
        valid = np.ones(source.shape, bool) if valid is None else np.broadcast_to(valid, source.shape)
        if sel_val is None:
            sel_val = np.array(vals, copy=True)
            sel_idx = np.array(idx, copy=True)
            have = valid.copy()
            continue
        keep = call_elementwise(ctx, select, [sel_val, vals])[0].astype(bool)
        take = valid & (~have | ~keep)
        sel_val = np.where(take, vals, sel_val)
        sel_idx = np.where(take, idx, sel_idx)
        have = have | valid
    if sel_val is None:
        return out
    combine = make_combiner(ctx, instr.attr("scatter"), [dtype])
    m = have.reshape(-1)
    flat = out.reshape(-1)
    apply_updates_in_order([flat], sel_idx.reshape(-1)[m], [source.astype(dtype).reshape(-1)[m]], combine)
    return flat.reshape(operand.shape)
