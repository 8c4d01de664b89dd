"""VJP rules of shape ops, reductions, dot, convolution, windows, gather,
scatter and sort."""

import numpy as np

from xla.errors import UnimplementedError
from xla.frontend.autodiff.table import inline, vjp_rule
from xla.frontend.tracing import tracing_error


# ----- shape ops --------------------------------------------------------------------

@vjp_rule("broadcast")
def _broadcast(g, instr, ct):
    dims = tuple(instr.attr("dimensions", ()))
    out_rank = len(instr.shape.dimensions)
    summed = [d for d in range(out_rank) if d not in dims]
    r = g.sum_to(ct, summed)
    kept = sorted(dims)
    perm = [kept.index(d) for d in dims]
    if perm != list(range(len(perm))):
        r = g.b.transpose(r, perm)
    return [r]


@vjp_rule("reshape", "bitcast")
def _reshape(g, instr, ct):
    return [g.b.reshape(ct, instr.operands[0].shape.dimensions)]


@vjp_rule("transpose")
def _transpose(g, instr, ct):
    perm = list(instr.attr("dimensions"))
    inverse = [perm.index(i) for i in range(len(perm))]
    return [g.b.transpose(ct, inverse)]


@vjp_rule("reverse")
def _reverse(g, instr, ct):
    return [g.b.reverse(ct, instr.attr("dimensions"))]


@vjp_rule("slice")
def _slice(g, instr, ct):
    operand = instr.operands[0].shape
    padding = []
    for sd, size, n in zip(instr.attr("slice"), operand.dimensions, instr.shape.dimensions):
        last = sd.start + (n - 1) * sd.stride + 1 if n else sd.start
        padding.append((sd.start, size - last, sd.stride - 1 if n > 1 else 0))
    zero = g.b.constant(np.zeros((), ct.dtype))
    return [g.b.pad(ct, zero, padding)]


@vjp_rule("pad")
def _pad(g, instr, ct):
    pads = instr.attr("padding")
    if any(p.low < 0 or p.high < 0 for p in pads):
        raise UnimplementedError("gradient of pad with negative padding is not supported")
    operand = instr.operands[0].shape
    starts = [p.low for p in pads]
    limits = [p.low + (d - 1) * (p.interior + 1) + 1 if d else p.low
              for p, d in zip(pads, operand.dimensions)]
    strides = [p.interior + 1 for p in pads]
    c_operand = g.b.slice(ct, starts, limits, strides)
    total = g.sum_to(ct, range(len(ct.dims)))
    inner = g.sum_to(c_operand, range(len(c_operand.dims)))
    return [c_operand, g.sub(total, inner)]


@vjp_rule("concatenate")
def _concatenate(g, instr, ct):
    axis = instr.attr("dimensions")[0]
    out, offset = [], 0
    for o in instr.operands:
        dims = o.shape.dimensions
        starts = [0] * len(dims)
        limits = list(ct.dims)
        starts[axis] = offset
        limits[axis] = offset + dims[axis]
        out.append(g.b.slice(ct, starts, limits))
        offset += dims[axis]
    return out


@vjp_rule("dynamic-slice")
def _dynamic_slice(g, instr, ct):
    operand = instr.operands[0]
    idx = [g.op(i) for i in instr.operands[1:]]
    return [g.b.dynamic_update_slice(g.zeros(operand.shape), ct, idx)] + [None] * len(idx)


@vjp_rule("dynamic-update-slice")
def _dynamic_update_slice(g, instr, ct):
    update = instr.operands[1]
    idx = [g.op(i) for i in instr.operands[2:]]
    c_operand = g.b.dynamic_update_slice(ct, g.zeros(update.shape), idx)
    c_update = g.b.dynamic_slice(ct, idx, update.shape.dimensions)
    return [c_operand, c_update] + [None] * len(idx)


# ----- reductions -------------------------------------------------------------------

def reducer_opcode(comp):
    """The binary opcode a scalar reducer applies to its two parameters, or None."""
    root = comp.root_instruction
    params = comp.parameters
    if len(params) == 2 and len(comp.instructions) == 3 and len(root.operands) == 2 and \
            set(map(id, root.operands)) == set(map(id, params)):
        return root.opcode
    return None


@vjp_rule("reduce")
def _reduce(g, instr, ct):
    if len(instr.operands) != 2:
        raise UnimplementedError("gradient of a variadic reduce (e.g. argmax values) is not supported")
    operand, init = instr.operands
    op = reducer_opcode(instr.attr("to_apply"))
    dims = tuple(instr.attr("dimensions"))
    kept = [d for d in range(len(operand.shape.dimensions)) if d not in dims]
    spread = g.b.broadcast_in_dim(ct, operand.shape.dimensions, kept)
    if op == "add":
        return [spread, g.sum_to(ct, range(len(ct.dims)))]
    if op in ("maximum", "minimum"):
        x = g.op(operand)
        out = g.b.broadcast_in_dim(g.op(instr), operand.shape.dimensions, kept)
        hit = g.cmp(x, out, "EQ")
        ones = g.b.convert(hit, x.element_type)
        counts = g.b.broadcast_in_dim(g.sum_to(ones, dims), operand.shape.dimensions, kept)
        c_operand = g.div(g.mul(spread, ones), counts)
        # The init value wins only where no element reached it.
        init_wins = g.cmp(g.sum_to(ones, dims), g.zeros(ct.shape), "EQ")
        c_init = g.sum_to(g.select(init_wins, ct, g.zeros(ct.shape)), range(len(ct.dims)))
        return [c_operand, c_init]
    if op == "multiply":
        x = g.op(operand)
        out = g.b.broadcast_in_dim(g.op(instr), operand.shape.dimensions, kept)
        init_v = g.op(init)
        return [g.div(g.mul(spread, out), x),
                g.sum_to(g.div(g.mul(ct, g.op(instr)), g.b.broadcast_in_dim(init_v, ct.dims, ())
                               if ct.dims else init_v), range(len(ct.dims)))]
    raise UnimplementedError(f"gradient of reduce with reducer {op or 'computation'} is not supported")


@vjp_rule("dot")
def _dot(g, instr, ct):
    lhs, rhs = instr.operands
    a = instr.attrs
    lc, rc = list(a.get("lhs_contracting_dims", ())), list(a.get("rhs_contracting_dims", ()))
    lb, rb = list(a.get("lhs_batch_dims", ())), list(a.get("rhs_batch_dims", ()))
    lr, rr = len(lhs.shape.dimensions), len(rhs.shape.dimensions)
    lf = [d for d in range(lr) if d not in lc and d not in lb]
    rf = [d for d in range(rr) if d not in rc and d not in rb]
    nb = len(lb)
    ct_batch = list(range(nb))
    ct_lf = list(range(nb, nb + len(lf)))
    ct_rf = list(range(nb + len(lf), nb + len(lf) + len(rf)))
    x, y = g.op(lhs), g.op(rhs)
    # d lhs: contract ct's rhs-free dims with rhs's free dims.
    d_lhs = g.b.dot_general(ct, y, ct_rf, rf, ct_batch, rb)
    # d_lhs dims: batch, lhs free, rhs contracting (in rc order) -> lhs order.
    order = lb + lf + [lc[rc.index(d)] for d in sorted(rc, key=rc.index)]
    d_lhs = _permute_to(g, d_lhs, order)
    d_rhs = g.b.dot_general(x, ct, lf, ct_lf, lb, ct_batch)
    # d_rhs dims: batch, lhs contracting (lc order), rhs free -> rhs order.
    order_r = rb + [rc[i] for i in range(len(lc))] + rf
    d_rhs = _permute_to(g, d_rhs, order_r)
    if d_lhs.element_type != lhs.shape.element_type:
        d_lhs = g.b.convert(d_lhs, lhs.shape.element_type)
    if d_rhs.element_type != rhs.shape.element_type:
        d_rhs = g.b.convert(d_rhs, rhs.shape.element_type)
    return [d_lhs, d_rhs]


def _permute_to(g, x, order):
    """``x``'s dim i is operand dim ``order[i]``; transpose into operand order."""
    perm = [order.index(d) for d in range(len(order))]
    if perm == list(range(len(perm))):
        return x
    return g.b.transpose(x, perm)


# ----- convolution (JAX's transpose rules, re-derived for HLO dimension numbers) --------

def _dilate(n, d):
    return 0 if n == 0 else 1 + d * (n - 1)


def _conv_parts(instr):
    dn = instr.attr("dim_labels")
    window = instr.attr("window").dimensions
    lhs, rhs = instr.operands
    lhs_sp = [lhs.shape.dimensions[d] for d in dn.input_spatial_dimensions]
    rhs_sp = [rhs.shape.dimensions[d] for d in dn.kernel_spatial_dimensions]
    out_sp = [instr.shape.dimensions[d] for d in dn.output_spatial_dimensions]
    return dn, window, lhs_sp, rhs_sp, out_sp


def _window(sizes, strides, pads, lhs_dil, rhs_dil):
    from xla.hlo.attributes import Window, WindowDimension
    return Window([WindowDimension(size=k, stride=s, padding_low=lo, padding_high=hi,
                                   window_dilation=rd, base_dilation=ld)
                   for k, s, (lo, hi), ld, rd in zip(sizes, strides, pads, lhs_dil, rhs_dil)])


def _conv_lhs_padding(lhs_sp, rhs_sp, window, out_sp):
    pads = []
    for n, k, w, o in zip(lhs_sp, rhs_sp, window, out_sp):
        lhs_d = _dilate(n, w.base_dilation)
        rhs_d = _dilate(k, w.window_dilation)
        out_d = _dilate(o, w.stride)
        before = rhs_d - w.padding_low - 1
        after = lhs_d + rhs_d - 1 - out_d - before
        pads.append((before, after))
    return pads


def _conv_rhs_padding(lhs_sp, rhs_sp, window, out_sp):
    pads = []
    for n, k, w, o in zip(lhs_sp, rhs_sp, window, out_sp):
        lhs_d = _dilate(n, w.base_dilation)
        rhs_d = _dilate(k, w.window_dilation)
        out_d = _dilate(o, w.stride)
        lo = w.padding_low
        hi = (out_d - lhs_d) + (rhs_d - lo - 1)
        pads.append((lo, hi))
    return pads


@vjp_rule("convolution")
def _convolution(g, instr, ct):
    from xla.hlo.attributes import ConvDimensionNumbers
    b = g.b
    dn, window, lhs_sp, rhs_sp, out_sp = _conv_parts(instr)
    fgc = instr.attr("feature_group_count", 1)
    bgc = instr.attr("batch_group_count", 1)
    if bgc != 1:
        raise UnimplementedError("gradient of a convolution with batch_group_count > 1")
    if any(w.window_reversal for w in window):
        raise UnimplementedError("gradient of a convolution with window reversal")
    lhs, rhs = instr.operands
    x, w = g.op(lhs), g.op(rhs)
    # d lhs: ct convolved with the reversed kernel, in/out features swapped.
    kern = w
    ko, ki = dn.kernel_output_feature_dimension, dn.kernel_input_feature_dimension
    if fgc > 1:
        dims = list(kern.dims)
        split = dims[:ko] + [fgc, dims[ko] // fgc] + dims[ko + 1:]
        kern = b.reshape(kern, split)
        # Move the group axis (at ko) next to (before) the input feature axis and merge.
        rank = len(split)
        perm = [i for i in range(rank) if i != ko]
        dst = ki  # in the numbering without the group axis
        perm.insert(dst, ko)
        moved = b.transpose(kern, perm)
        merged = [d for i, d in enumerate(split) if i != ko]
        merged[dst] *= fgc
        kern = b.reshape(moved, merged)
    kern = b.reverse(kern, list(dn.kernel_spatial_dimensions))
    t_dn = ConvDimensionNumbers(dn.output_batch_dimension, dn.output_feature_dimension,
                                dn.output_spatial_dimensions, ko, ki, dn.kernel_spatial_dimensions,
                                dn.input_batch_dimension, dn.input_feature_dimension,
                                dn.input_spatial_dimensions)
    pads = _conv_lhs_padding(lhs_sp, rhs_sp, window, out_sp)
    win = _window(rhs_sp, [w_.base_dilation for w_ in window], pads, [w_.stride for w_ in window],
                  [w_.window_dilation for w_ in window])
    d_lhs = b.convolution(ct, kern, win, t_dn, fgc, 1, lhs.shape.element_type)
    # d rhs: lhs convolved with ct, batch acting as the contracted feature.
    r_dn = ConvDimensionNumbers(dn.input_feature_dimension, dn.input_batch_dimension,
                                dn.input_spatial_dimensions, dn.output_batch_dimension,
                                dn.output_feature_dimension, dn.output_spatial_dimensions,
                                ki, ko, dn.kernel_spatial_dimensions)
    pads = _conv_rhs_padding(lhs_sp, rhs_sp, window, out_sp)
    win = _window(out_sp, [w_.window_dilation for w_ in window], pads, [w_.base_dilation for w_ in window],
                  [w_.stride for w_ in window])
    d_rhs = b.convolution(x, ct, win, r_dn, 1, fgc, rhs.shape.element_type)
    return [d_lhs, d_rhs]


# ----- windows: pooling ----------------------------------------------------------------

@vjp_rule("reduce-window")
def _reduce_window(g, instr, ct):
    if len(instr.operands) != 2:
        raise UnimplementedError("gradient of a variadic reduce-window is not supported")
    operand, init = instr.operands
    op = reducer_opcode(instr.attr("to_apply"))
    window = instr.attr("window").dimensions
    b = g.b
    dims = operand.shape.dimensions
    if op == "add":
        pads = _conv_lhs_padding(dims, [w.size for w in window], window, instr.shape.dimensions)
        padded = b.pad(ct, b.constant(np.zeros((), ct.dtype)),
                       [(lo, hi, w.stride - 1) for (lo, hi), w in zip(pads, window)])
        win = _window([w.size for w in window], [w.base_dilation for w in window],
                      [(0, 0)] * len(dims), [1] * len(dims), [w.window_dilation for w in window])
        out = b.reduce_window(padded, b.constant(np.zeros((), ct.dtype)),
                              b.scalar_computation("add", ct.element_type), win)
        return [out, None]
    if op in ("maximum", "minimum"):
        if any(w.base_dilation != 1 or w.window_dilation != 1 for w in window):
            raise UnimplementedError("gradient of a dilated max/min reduce-window is not supported")
        et = ct.element_type
        from xla.hlo.shape import Shape as _S
        sel = b.sub_builder("select_ge" if op == "maximum" else "select_le")
        a_ = sel.parameter(0, _S.scalar(et), "a")
        c_ = sel.parameter(1, _S.scalar(et), "b")
        sel_comp = sel.build(sel.compare(a_, c_, "GE" if op == "maximum" else "LE"))
        out = b.select_and_scatter(g.op(operand), ct, b.constant(np.zeros((), ct.dtype)),
                                   instr.attr("window"), sel_comp, b.scalar_computation("add", et))
        return [out, None]
    raise UnimplementedError(f"gradient of reduce-window with reducer {op or 'computation'}")


# ----- gather, scatter, sort ---------------------------------------------------------------

def _clamped_indices(g, instr):
    """Gather's start indices clamped as gather clamps them, so that the
    scatter of the gradient lands where the values came from."""
    b = g.b
    operand, indices = instr.operands
    ivd = instr.attr("index_vector_dim")
    start_map = instr.attr("start_index_map")
    sizes = instr.attr("slice_sizes")
    idx = g.op(indices)
    dims = idx.dims
    hi = np.array([operand.shape.dimensions[d] - sizes[d] for d in start_map], dtype=idx.dtype)
    if ivd == len(dims):
        upper = b.broadcast_in_dim(b.constant(hi.reshape(())), dims, ()) if dims else b.constant(hi.reshape(()))
    else:
        upper = b.broadcast_in_dim(b.constant(hi), dims, (ivd,))
    zero = b.broadcast_in_dim(b.constant(np.zeros((), idx.dtype)), dims, ()) if dims else \
        b.constant(np.zeros((), idx.dtype))
    return b.binary("minimum", b.binary("maximum", idx, zero), upper)


@vjp_rule("gather")
def _gather(g, instr, ct):
    operand = instr.operands[0]
    a = instr.attrs
    b = g.b
    idx = _clamped_indices(g, instr)
    et = operand.shape.element_type
    out = b.scatter(g.zeros(operand.shape), idx, ct, b.scalar_computation("add", et),
                    update_window_dims=a["offset_dims"], inserted_window_dims=a["collapsed_slice_dims"],
                    scatter_dims_to_operand_dims=a["start_index_map"], index_vector_dim=a["index_vector_dim"],
                    input_batching_dims=a.get("operand_batching_dims", ()),
                    scatter_indices_batching_dims=a.get("start_indices_batching_dims", ()))
    return [out, None]


@vjp_rule("scatter")
def _scatter(g, instr, ct):
    if len(instr.operands) != 3:
        raise UnimplementedError("gradient of a variadic scatter is not supported")
    operand, indices, updates = instr.operands
    a = instr.attrs
    b = g.b
    comp = a["to_apply"]
    root = comp.root_instruction
    is_set = root.opcode == "parameter" and root.parameter_number == 1
    op = reducer_opcode(comp)
    window_dims = list(a["update_window_dims"])
    inserted = set(a["inserted_window_dims"]) | set(a.get("input_batching_dims", ()))
    win_sizes = iter(updates.shape.dimensions[d] for d in window_dims)
    slice_sizes = [1 if d in inserted else next(win_sizes) for d in range(len(operand.shape.dimensions))]
    gathered = b.gather(ct, g.op(indices), offset_dims=window_dims,
                        collapsed_slice_dims=a["inserted_window_dims"],
                        start_index_map=a["scatter_dims_to_operand_dims"],
                        index_vector_dim=a["index_vector_dim"], slice_sizes=slice_sizes,
                        operand_batching_dims=a.get("input_batching_dims", ()),
                        start_indices_batching_dims=a.get("scatter_indices_batching_dims", ()))
    if op == "add":
        return [ct, None, gathered]
    if is_set:
        zeros = g.zeros(updates.shape)
        set_comp = comp
        c_operand = b.scatter(ct, g.op(indices), zeros, set_comp,
                              update_window_dims=window_dims, inserted_window_dims=a["inserted_window_dims"],
                              scatter_dims_to_operand_dims=a["scatter_dims_to_operand_dims"],
                              index_vector_dim=a["index_vector_dim"],
                              input_batching_dims=a.get("input_batching_dims", ()),
                              scatter_indices_batching_dims=a.get("scatter_indices_batching_dims", ()))
        return [c_operand, None, gathered]
    raise UnimplementedError(f"gradient of scatter with combiner {op or 'computation'} is not supported")


@vjp_rule("sort")
def _sort(g, instr, ct):
    from xla.hlo.shape import Shape as _S
    from xla.hlo.types import PrimitiveType
    b = g.b
    ops = [g.op(o) for o in instr.operands]
    dim = instr.attr("dimensions")[0]
    comp = instr.attr("to_apply")
    n = len(ops)
    # The permutation: sort again with an iota riding along.
    ext = b.sub_builder(f"{comp.name}_with_iota")
    params = [ext.parameter(i, p.shape, f"p{i}") for i, p in enumerate(comp.parameters)]
    ext.parameter(2 * n, _S.scalar(PrimitiveType.S32), "i_lhs")
    ext.parameter(2 * n + 1, _S.scalar(PrimitiveType.S32), "i_rhs")
    ext_comp = ext.build(inline(ext, comp, params))
    iota = b.iota(PrimitiveType.S32, ops[0].dims, dim)
    sorted_all = b.sort(ops + [iota], ext_comp, dim, bool(instr.attr("is_stable", False)))
    perm = b.get_tuple_element(sorted_all, n)
    by_perm = b.sub_builder("by_permutation")
    pl = by_perm.parameter(0, _S.scalar(PrimitiveType.S32), "a")
    pr = by_perm.parameter(1, _S.scalar(PrimitiveType.S32), "b")
    cts = ct if isinstance(ct, list) else [ct]
    for k, o in enumerate(ops):
        by_perm.parameter(2 + 2 * k, _S.scalar(o.element_type), f"x{k}")
        by_perm.parameter(3 + 2 * k, _S.scalar(o.element_type), f"y{k}")
    by_perm_comp = by_perm.build(by_perm.compare(pl, pr, "LT"))
    filled = [c if c is not None else g.zeros(o.shape) for c, o in zip(cts, ops)]
    # Sorting (perm, ct...) by perm puts each cotangent back in operand order.
    back = b.sort([perm] + filled, by_perm_comp, dim, False)
    out = [b.get_tuple_element(back, 1 + k) for k in range(n)]
    return out if n > 1 else out


@vjp_rule("custom-call")
def _custom_call(g, instr, ct):
    """Only XLA's ``Sharding`` annotation (with_sharding_constraint): the
    cotangent is cut as the value was, as JAX transposes it."""
    if str(instr.attr("custom_call_target", "")) != "Sharding" or len(instr.operands) != 1:
        raise tracing_error(f"xla.grad: no differentiation rule for custom-call "
                            f"{instr.attr('custom_call_target')!s} ({instr.name})")
    return [g.b.custom_call("Sharding", (ct,), instr.shape, sharding=instr.attrs["sharding"])]
