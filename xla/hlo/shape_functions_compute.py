"""Shape functions over plain shapes, part two: reductions and windows,
dot (ragged, scaled) and convolution, sort / top-k / map / control flow,
linear algebra and FFT, collectives. Part one (``shape_functions.py``)
has the shared helpers, elementwise ops and data movement;
``shape_inference.py`` binds both to HLO instructions.
"""
import re
from typing import NamedTuple

from xla.errors import ShapeError
from xla.hlo.attributes import RawAttr, Window
from xla.hlo.shape import Shape
from xla.hlo.shape_functions import (
    _FLOAT_OR_COMPLEX, _array, _check_dims_in_range, _dims_match, _dyn, _kind_ok, _require_array,
    _s, _same_dims, check_reducer, shapes_match)
from xla.hlo.types import PrimitiveType

P = PrimitiveType


# ---------------------------------------------------------------------------
# Reductions and windows
# ---------------------------------------------------------------------------


def reducer_result_types(sig, inits):
    """The element types a reduce or reduce-window produces: the reducer's
    results (its init values' types but for floating-point precision)."""
    if sig is None:
        return [s.element_type for s in inits]
    results = list(sig.result.tuple_shapes) if sig.result.is_tuple else [sig.result]
    return [r.element_type for r in results]


def infer_reduce_shape(inputs, inits, dimensions, to_apply=None):
    """Variadic reduce: N inputs, N scalar inits; a tuple result when N > 1."""
    n = len(inputs)
    if n == 0 or len(inits) != n:
        raise ShapeError(f"reduce needs N inputs and N init values, got {n} and {len(inits)}")
    first = inputs[0]
    for i, s in enumerate(inputs):
        _require_array(s, f"operand {i}", "reduce")
        if not _same_dims(s, first):
            raise ShapeError(f"operand {i} has shape {_s(s)} but reduce needs the dimensions of {_s(first)}")
    for i, s in enumerate(inits):
        if not (s.is_array and s.is_scalar):
            raise ShapeError(f"operand {n + i} (init value) has shape {_s(s)} but must be a scalar")
    dimensions = tuple(dimensions or ())
    _check_dims_in_range(dimensions, first.rank, "dimension", "reduce")
    if to_apply is not None:
        check_reducer(to_apply, [s.element_type for s in inits], [s.element_type for s in inputs],
                      "reduce", ignore_fp_precision=True)
    keep = [i for i in range(first.rank) if i not in dimensions]
    shapes = [_array(et, [first.dimensions[i] for i in keep], [_dyn(first, i) for i in keep])
              for et in reducer_result_types(to_apply, inits)]
    return shapes[0] if n == 1 else Shape.tuple(shapes)


def infer_window_output_dims(base_dims, window, op):
    """Output sizes of a window (with dilations, padding, stride) over base_dims."""
    wdims = window.dimensions if isinstance(window, Window) else tuple(window or ())
    if len(wdims) != len(base_dims):
        raise ShapeError(f"{op}: window has {len(wdims)} dimensions but the operand has rank {len(base_dims)}")
    out = []
    for i, (w, d) in enumerate(zip(wdims, base_dims)):
        if w.size < 0 or w.stride < 1 or w.window_dilation < 1 or w.base_dilation < 1:
            raise ShapeError(f"{op}: window dimension {i} is malformed (size {w.size}, stride "
                             f"{w.stride}, dilations {w.base_dilation}/{w.window_dilation})")
        dilated_base = 0 if d == 0 else (d - 1) * w.base_dilation + 1
        padded = dilated_base + w.padding_low + w.padding_high
        dilated_window = 0 if w.size == 0 else (w.size - 1) * w.window_dilation + 1
        out.append(0 if padded < dilated_window else (padded - dilated_window) // w.stride + 1)
    return out


def infer_reduce_window_shape(inputs, inits, window, to_apply=None):
    n = len(inputs)
    if n == 0 or len(inits) != n:
        raise ShapeError(f"reduce-window needs N inputs and N init values, got {n} and {len(inits)}")
    first = inputs[0]
    for i, s in enumerate(inputs):
        _require_array(s, f"operand {i}", "reduce-window")
        if not _same_dims(s, first):
            raise ShapeError(f"operand {i} has shape {_s(s)} but reduce-window needs the dimensions "
                             f"of {_s(first)}")
    for i, s in enumerate(inits):
        if not (s.is_array and s.is_scalar):
            raise ShapeError(f"operand {n + i} (init value) has shape {_s(s)} but must be a scalar")
    if to_apply is not None:
        check_reducer(to_apply, [s.element_type for s in inits], [s.element_type for s in inputs],
                      "reduce-window", ignore_fp_precision=True)
    dims = infer_window_output_dims(first.dimensions, window, "reduce-window")
    shapes = [_array(et, dims) for et in reducer_result_types(to_apply, inits)]
    return shapes[0] if n == 1 else Shape.tuple(shapes)


def infer_select_and_scatter_shape(operand, source, init_value, window, select=None, scatter=None):
    op = "select-and-scatter"
    _require_array(operand, "operand 0", op)
    _require_array(source, "operand 1 (source)", op)
    if not (init_value.is_array and init_value.is_scalar and
            init_value.element_type is source.element_type):
        raise ShapeError(f"operand 2 (init value) has shape {_s(init_value)} but {op} needs "
                         f"{source.element_type.text}[]")
    dims = infer_window_output_dims(operand.dimensions, window, op)
    if not _dims_match(source.dimensions, dims) or source.element_type is not operand.element_type:
        raise ShapeError(f"operand 1 (source) has shape {_s(source)} but {op} needs "
                         f"{_s(_array(operand.element_type, dims))} (the window's output shape)")
    et = operand.element_type
    if select is not None:
        if len(select.parameters) != 2 or any(
                not (p.is_scalar and p.element_type is et) for p in select.parameters):
            raise ShapeError(f"{op}: select computation {select} must take two {et.text}[] parameters")
        if not (select.result.is_scalar and select.result.element_type is P.PRED):
            raise ShapeError(f"{op}: select computation {select} must return pred[]")
    if scatter is not None:
        check_reducer(scatter, [et], [et], f"{op} scatter computation")
    return operand.without_layout()


# ---------------------------------------------------------------------------
# Dot and convolution
# ---------------------------------------------------------------------------

def check_preferred_element_type(operand_types, preferred, op):
    """The declared result type of dot/convolution must be reachable from the
    operand types (see the module docstring)."""
    if not preferred.is_array_type:
        raise ShapeError(f"{op} cannot produce element type {preferred.text}")
    for t in operand_types:
        if t is preferred:
            continue
        if t.is_complex and not preferred.is_complex:
            ok = False
        elif t.is_float:
            ok = preferred.is_float or preferred.is_complex
        elif t.is_pred:
            ok = preferred.kind != "pred" or all(u.is_pred for u in operand_types)
        else:  # integer
            ok = not preferred.is_pred
        if not ok:
            raise ShapeError(f"{op} of {'/'.join(u.text for u in operand_types)} operands cannot "
                             f"produce element type {preferred.text}")


def _result_type(lhs, rhs, preferred, op):
    if preferred is None:
        if lhs.element_type is not rhs.element_type:
            raise ShapeError(f"{op} operands have different element types ({_s(lhs)} and {_s(rhs)})")
        return lhs.element_type
    check_preferred_element_type([lhs.element_type, rhs.element_type], preferred, op)
    return preferred


def infer_dot_shape(lhs, rhs, lhs_contracting_dims=(), rhs_contracting_dims=(), lhs_batch_dims=(),
                    rhs_batch_dims=(), preferred_element_type=None):
    """dot with general dimension numbers: batch dims, then lhs free dims,
    then rhs free dims."""
    _require_array(lhs, "operand 0", "dot")
    _require_array(rhs, "operand 1", "dot")
    lc, rc = tuple(lhs_contracting_dims or ()), tuple(rhs_contracting_dims or ())
    lb, rb = tuple(lhs_batch_dims or ()), tuple(rhs_batch_dims or ())
    _check_dims_in_range(lc + lb, lhs.rank, "lhs contracting/batch dimension", "dot")
    _check_dims_in_range(rc + rb, rhs.rank, "rhs contracting/batch dimension", "dot")
    if len(lc) != len(rc):
        raise ShapeError(f"dot: {len(lc)} lhs contracting dimensions but {len(rc)} rhs ones")
    if len(lb) != len(rb):
        raise ShapeError(f"dot: {len(lb)} lhs batch dimensions but {len(rb)} rhs ones")
    for a, b in zip(lc, rc):
        if not _dims_match([lhs.dimensions[a]], [rhs.dimensions[b]]):
            raise ShapeError(f"dot: contracting dimension {a} of lhs {_s(lhs)} (size {lhs.dimensions[a]}) "
                             f"does not match dimension {b} of rhs {_s(rhs)} (size {rhs.dimensions[b]})")
    for a, b in zip(lb, rb):
        if not _dims_match([lhs.dimensions[a]], [rhs.dimensions[b]]):
            raise ShapeError(f"dot: batch dimension {a} of lhs {_s(lhs)} does not match "
                             f"dimension {b} of rhs {_s(rhs)}")
    et = _result_type(lhs, rhs, preferred_element_type, "dot")
    dims, dyn = [], []
    for i in lb:
        dims.append(lhs.dimensions[i])
        dyn.append(_dyn(lhs, i))
    for i in range(lhs.rank):
        if i not in lc and i not in lb:
            dims.append(lhs.dimensions[i])
            dyn.append(_dyn(lhs, i))
    for i in range(rhs.rank):
        if i not in rc and i not in rb:
            dims.append(rhs.dimensions[i])
            dyn.append(_dyn(rhs, i))
    return _array(et, dims, dyn)


class RaggedDotMode(NamedTuple):
    """How a ragged-dot's lhs ragged dimension splits the computation.

    ``kind`` is "noncontracting" (rows of lhs pick their group's rhs slice
    along the rhs group dimension), "contracting" (each group contracts its
    part of the ragged dimension: a leading result dimension of size g) or
    "batch" (a batch dimension, ragged). ``group_prefix`` lists the lhs
    dimensions group_sizes may have in front of its last (group) dimension,
    in order: all lhs batch dimensions, then the lhs non-contracting
    dimensions before the ragged one (noncontracting), or the lhs
    contracting dimensions listed before it (contracting); for a ragged
    batch dimension, the batch dimensions listed before it. A rank-1
    group_sizes applies to every position of those dimensions."""
    kind: str
    ragged: int
    group_dim: int  # rhs group dimension, -1 when there is none
    group_prefix: tuple


def ragged_dot_mode(lhs_rank, lhs_contracting_dims, lhs_batch_dims, lhs_ragged_dims,
                    rhs_group_dims):
    lc, lb = tuple(lhs_contracting_dims or ()), tuple(lhs_batch_dims or ())
    if len(lhs_ragged_dims or ()) != 1:
        raise ShapeError(f"ragged-dot needs exactly one lhs ragged dimension, got "
                         f"{len(lhs_ragged_dims or ())}")
    r = lhs_ragged_dims[0]
    if not 0 <= r < lhs_rank:
        raise ShapeError(f"ragged-dot: lhs ragged dimension {r} is out of range for rank {lhs_rank}")
    if r in lb:
        kind, prefix = "batch", lb[:lb.index(r)]
    elif r in lc:
        kind, prefix = "contracting", lb + lc[:lc.index(r)]
    else:
        kind = "noncontracting"
        prefix = lb + tuple(d for d in range(r) if d not in lb and d not in lc)
    groups = tuple(rhs_group_dims or ())
    if kind == "noncontracting" and len(groups) != 1:
        raise ShapeError(f"ragged-dot: a non-contracting lhs ragged dimension needs exactly one "
                         f"rhs group dimension, got {len(groups)}")
    if kind != "noncontracting" and groups:
        raise ShapeError(f"ragged-dot: a {kind} lhs ragged dimension takes no rhs group dimension")
    return RaggedDotMode(kind, r, groups[0] if groups else -1, prefix)


def infer_ragged_dot_shape(lhs, rhs, group_sizes, lhs_contracting_dims=(), rhs_contracting_dims=(),
                           lhs_batch_dims=(), rhs_batch_dims=(), lhs_ragged_dims=(),
                           rhs_group_dims=(), preferred_element_type=None):
    """XLA's RaggedDot: a dot whose lhs ragged dimension is split into
    consecutive groups of the sizes group_sizes gives (see RaggedDotMode).
    The result is the dot's, without the rhs group dimension, with a
    leading dimension of size g when the ragged dimension is contracting."""
    op = "ragged-dot"
    _require_array(lhs, "operand 0", op)
    _require_array(rhs, "operand 1", op)
    _require_array(group_sizes, "operand 2 (group sizes)", op)
    lc, rc = tuple(lhs_contracting_dims or ()), tuple(rhs_contracting_dims or ())
    lb, rb = tuple(lhs_batch_dims or ()), tuple(rhs_batch_dims or ())
    mode = ragged_dot_mode(lhs.rank, lc, lb, lhs_ragged_dims, rhs_group_dims)
    gd = mode.group_dim
    if gd >= 0:
        if not 0 <= gd < rhs.rank:
            raise ShapeError(f"ragged-dot: rhs group dimension {gd} is out of range for rank "
                             f"{rhs.rank}")
        if gd in rb or gd in rc:
            raise ShapeError(f"ragged-dot: rhs group dimension {gd} is also a batch or "
                             f"contracting dimension")
    if group_sizes.rank == 0:
        raise ShapeError(f"ragged-dot: group sizes {_s(group_sizes)} need a group dimension")
    full = [lhs.dimensions[d] for d in mode.group_prefix] + [group_sizes.dimensions[-1]]
    if group_sizes.rank not in (1, len(full)):
        raise ShapeError(f"ragged-dot: group sizes {_s(group_sizes)} must have rank 1 or "
                         f"{len(full)}")
    if group_sizes.rank > 1 and list(group_sizes.dimensions) != full:
        raise ShapeError(f"ragged-dot: group sizes {_s(group_sizes)} must have dimensions "
                         f"[{','.join(map(str, full))}]")
    g = group_sizes.dimensions[-1]
    if gd >= 0 and rhs.dimensions[gd] != g:
        raise ShapeError(f"ragged-dot: rhs group dimension {gd} of {_s(rhs)} has size "
                         f"{rhs.dimensions[gd]} but group sizes {_s(group_sizes)} give {g} groups")
    if gd >= 0:   # the dot of lhs with one group's slice of rhs
        keep = [d for d in range(rhs.rank) if d != gd]
        rhs = _array(rhs.element_type, [rhs.dimensions[d] for d in keep],
                     [_dyn(rhs, d) for d in keep])
        rc = tuple(d - (d > gd) for d in rc)
        rb = tuple(d - (d > gd) for d in rb)
    result = infer_dot_shape(lhs, rhs, lc, rc, lb, rb, preferred_element_type)
    if mode.kind == "contracting":
        result = _array(result.element_type, (g,) + result.dimensions, (False,) + result.dynamic)
    return result


def infer_scaled_dot_shape(lhs, lhs_scale, rhs, rhs_scale, lhs_contracting_dims=(),
                           rhs_contracting_dims=(), lhs_batch_dims=(), rhs_batch_dims=(),
                           preferred_element_type=None):
    """XLA's ScaledDot, with jaxlib 0.10.2's operand order (lhs, lhs_scale,
    rhs, rhs_scale): the dot of lhs and rhs, each first multiplied by its
    scale. A scale is a scalar, or has its operand's rank with each
    dimension dividing the operand's: one scale element covers a block of
    operand/scale consecutive elements (along a contracting dimension, the
    subchannel). XLA's shape inference reads only lhs and rhs; the blocks
    are checked here because without them the op has no meaning."""
    op = "scaled-dot"
    for shape, what in ((lhs, "operand 0 (lhs)"), (lhs_scale, "operand 1 (lhs scale)"),
                        (rhs, "operand 2 (rhs)"), (rhs_scale, "operand 3 (rhs scale)")):
        _require_array(shape, what, op)
    for operand, scale, side in ((lhs, lhs_scale, "lhs"), (rhs, rhs_scale, "rhs")):
        if scale.rank == 0:
            continue
        if scale.rank != operand.rank or any(
                s == 0 or d % s for d, s in zip(operand.dimensions, scale.dimensions)):
            raise ShapeError(f"scaled-dot: the {side} scale {_s(scale)} must be a scalar or have "
                             f"the rank of {_s(operand)} with dimensions dividing its dimensions")
    return infer_dot_shape(lhs, rhs, lhs_contracting_dims, rhs_contracting_dims, lhs_batch_dims,
                           rhs_batch_dims, preferred_element_type)


def infer_convolution_shape(lhs, rhs, window, dnums, feature_group_count=1, batch_group_count=1,
                            preferred_element_type=None):
    op = "convolution"
    _require_array(lhs, "operand 0", op)
    _require_array(rhs, "operand 1", op)
    if dnums is None:
        raise ShapeError("convolution needs dim_labels")
    fgc = feature_group_count or 1
    bgc = batch_group_count or 1
    nsp = len(dnums.input_spatial_dimensions)
    if lhs.rank != nsp + 2 or rhs.rank != nsp + 2:
        raise ShapeError(f"convolution with {nsp} spatial dimensions needs rank-{nsp + 2} operands, "
                         f"got {_s(lhs)} and {_s(rhs)}")
    d = dnums
    for what, dims in (("input", (d.input_batch_dimension, d.input_feature_dimension)
                        + d.input_spatial_dimensions),
                       ("kernel", (d.kernel_input_feature_dimension,
                                   d.kernel_output_feature_dimension) + d.kernel_spatial_dimensions),
                       ("output", (d.output_batch_dimension, d.output_feature_dimension)
                        + d.output_spatial_dimensions)):
        # (dim_labels with '?' may name a dimension past the rank.)
        if sorted(dims) != list(range(nsp + 2)):
            raise ShapeError(f"convolution: the {what} dimensions of dim_labels {d.to_text()} are "
                             f"not each of 0..{nsp + 1} once")
    if fgc < 1 or bgc < 1 or (fgc > 1 and bgc > 1):
        raise ShapeError(f"convolution: feature_group_count {fgc} and batch_group_count {bgc} must "
                         f"be positive and not both above 1")
    in_batch = lhs.dimensions[dnums.input_batch_dimension]
    in_feat = lhs.dimensions[dnums.input_feature_dimension]
    k_in = rhs.dimensions[dnums.kernel_input_feature_dimension]
    k_out = rhs.dimensions[dnums.kernel_output_feature_dimension]
    if in_feat % fgc:
        raise ShapeError(f"convolution: input feature size {in_feat} is not a multiple of "
                         f"feature_group_count {fgc}")
    if in_feat // fgc != k_in:
        raise ShapeError(f"convolution: input feature size {in_feat} / feature_group_count {fgc} "
                         f"must equal the kernel input feature size {k_in} ({_s(lhs)}, {_s(rhs)})")
    if k_out % fgc:
        raise ShapeError(f"convolution: kernel output feature size {k_out} is not a multiple of "
                         f"feature_group_count {fgc}")
    if k_out % bgc or in_batch % bgc:
        raise ShapeError(f"convolution: kernel output features {k_out} and input batch {in_batch} "
                         f"must be multiples of batch_group_count {bgc}")
    wdims = window.dimensions if isinstance(window, Window) else tuple(window or ())
    if len(wdims) != nsp:
        raise ShapeError(f"convolution: window has {len(wdims)} dimensions, expected {nsp}")
    for i, (w, kd) in enumerate(zip(wdims, dnums.kernel_spatial_dimensions)):
        if w.size != rhs.dimensions[kd]:
            raise ShapeError(f"convolution: window size {w.size} of spatial dimension {i} does not "
                             f"match kernel dimension {kd} of {_s(rhs)}")
    spatial = infer_window_output_dims([lhs.dimensions[d] for d in dnums.input_spatial_dimensions],
                                       window, op)
    et = _result_type(lhs, rhs, preferred_element_type, op)
    dims = [0] * (nsp + 2)
    dims[dnums.output_batch_dimension] = in_batch // bgc
    dims[dnums.output_feature_dimension] = k_out
    for d, size in zip(dnums.output_spatial_dimensions, spatial):
        dims[d] = size
    return _array(et, dims)


# ---------------------------------------------------------------------------
# Sort, top-k, map, control flow
# ---------------------------------------------------------------------------

def check_comparator(sig, operand_types, op="sort"):
    """A comparator: 2N scalar params (lhs_i, rhs_i for operand i), pred[] result."""
    if len(sig.parameters) != 2 * len(operand_types):
        raise ShapeError(f"{op}: comparator {sig} must take {2 * len(operand_types)} parameters, "
                         f"takes {len(sig.parameters)}")
    for i, p in enumerate(sig.parameters):
        want = operand_types[i // 2]
        if not (p.is_array and p.is_scalar and p.element_type is want):
            raise ShapeError(f"{op}: comparator parameter {i} has shape {_s(p)} but must be {want.text}[]")
    if not (sig.result.is_array and sig.result.is_scalar and sig.result.element_type is P.PRED):
        raise ShapeError(f"{op}: comparator must return pred[], returns {_s(sig.result)}")


def infer_sort_shape(operands, dimension, comparator=None):
    if not operands:
        raise ShapeError("sort needs at least one operand")
    first = operands[0]
    for i, s in enumerate(operands):
        _require_array(s, f"operand {i}", "sort")
        if not _same_dims(s, first):
            raise ShapeError(f"operand {i} has shape {_s(s)} but sort needs the dimensions of {_s(first)}")
    if dimension is None or not 0 <= dimension < max(first.rank, 1):
        raise ShapeError(f"sort dimension {dimension} is out of range for {_s(first)}")
    if comparator is not None:
        check_comparator(comparator, [s.element_type for s in operands])
    shapes = [s.without_layout() for s in operands]
    return shapes[0] if len(shapes) == 1 else Shape.tuple(shapes)


def infer_topk_shape(operand, k):
    _require_array(operand, "operand", "topk")
    if operand.rank < 1:
        raise ShapeError("topk needs an operand of rank >= 1")
    if k is None or k < 0 or k > operand.dimensions[-1] >= 0:
        raise ShapeError(f"topk: k={k} does not fit in the last dimension of {_s(operand)}")
    dims = operand.dimensions[:-1] + (k,)
    return Shape.tuple([_array(operand.element_type, dims), _array(P.S32, dims)])


def check_call_parameters(sig, operands, op, what="computation"):
    if len(sig.parameters) != len(operands):
        raise ShapeError(f"{op}: {what} {sig} takes {len(sig.parameters)} parameters but "
                         f"{len(operands)} operands are given")
    for i, (p, o) in enumerate(zip(sig.parameters, operands)):
        if not shapes_match(p, o):
            raise ShapeError(f"operand {i} has shape {_s(o)} but {op}'s {what} parameter {i} "
                             f"has shape {_s(p)}")


def infer_map_shape(operands, sig, dimensions=None):
    if not operands:
        raise ShapeError("map needs at least one operand")
    first = operands[0]
    for i, s in enumerate(operands):
        _require_array(s, f"operand {i}", "map")
        if not _same_dims(s, first):
            raise ShapeError(f"operand {i} has shape {_s(s)} but map needs the dimensions of {_s(first)}")
    if dimensions is not None and tuple(dimensions) != tuple(range(first.rank)):
        raise ShapeError(f"map dimensions must be {{{','.join(map(str, range(first.rank)))}}}")
    if len(sig.parameters) != len(operands):
        raise ShapeError(f"map: computation {sig} takes {len(sig.parameters)} parameters but "
                         f"{len(operands)} operands are given")
    for i, (p, o) in enumerate(zip(sig.parameters, operands)):
        if not (p.is_scalar and p.element_type is o.element_type):
            raise ShapeError(f"map: computation parameter {i} has shape {_s(p)} but must be "
                             f"{o.element_type.text}[]")
    if not sig.result.is_scalar:
        raise ShapeError(f"map: computation must return a scalar, returns {_s(sig.result)}")
    return _array(sig.result.element_type, first.dimensions, first.dynamic)


def infer_get_tuple_element_shape(operand, index):
    if not operand.is_tuple:
        raise ShapeError(f"get-tuple-element needs a tuple operand, got {_s(operand)}")
    if index is None or not 0 <= index < len(operand.tuple_shapes):
        raise ShapeError(f"get-tuple-element index {index} is out of range for {_s(operand)}")
    return operand.tuple_shapes[index].without_layout()


def infer_while_shape(init, condition, body):
    if len(condition.parameters) != 1 or not shapes_match(condition.parameters[0], init):
        raise ShapeError(f"while: condition {condition} must take one parameter of shape {_s(init)}")
    if not (condition.result.is_scalar and condition.result.element_type is P.PRED):
        raise ShapeError(f"while: condition must return pred[], returns {_s(condition.result)}")
    if len(body.parameters) != 1 or not shapes_match(body.parameters[0], init):
        raise ShapeError(f"while: body {body} must take one parameter of shape {_s(init)}")
    if not shapes_match(body.result, init):
        raise ShapeError(f"while: body returns {_s(body.result)} but must return {_s(init)} "
                         f"(the shape of the loop state)")
    return init.without_layout()


def infer_conditional_shape(branch_index, branches, branch_operands):
    """branch_index: pred[] (two branches: true, false) or s32[] (N branches)."""
    if not (branch_index.is_scalar and branch_index.element_type in (P.PRED, P.S32)):
        raise ShapeError(f"conditional: operand 0 (branch index) has shape {_s(branch_index)} but "
                         f"must be pred[] or s32[]")
    if branch_index.element_type is P.PRED and len(branches) != 2:
        raise ShapeError(f"conditional with a pred[] selector needs 2 branches, has {len(branches)}")
    if not branches:
        raise ShapeError("conditional needs at least one branch")
    if len(branch_operands) != len(branches):
        raise ShapeError(f"conditional has {len(branches)} branches but {len(branch_operands)} "
                         f"branch operands")
    result = branches[0].result
    for j, (sig, operand) in enumerate(zip(branches, branch_operands)):
        if len(sig.parameters) != 1 or not shapes_match(sig.parameters[0], operand):
            raise ShapeError(f"conditional: branch {j} {sig} must take one parameter of shape "
                             f"{_s(operand)} (operand {j + 1})")
        if not shapes_match(sig.result, result):
            raise ShapeError(f"conditional: branch {j} returns {_s(sig.result)} but branch 0 "
                             f"returns {_s(result)}")
    return result.without_layout()


# ---------------------------------------------------------------------------
# Linear algebra, FFT, RNG
# ---------------------------------------------------------------------------

def infer_cholesky_shape(a):
    _require_array(a, "operand", "cholesky")
    if a.rank < 2 or a.dimensions[-1] != a.dimensions[-2]:
        raise ShapeError(f"cholesky needs square matrices in the two minor dimensions, got {_s(a)}")
    if not _kind_ok(a.element_type, _FLOAT_OR_COMPLEX):
        raise ShapeError(f"cholesky needs a floating-point or complex operand, got {_s(a)}")
    return a.without_layout()


def infer_triangular_solve_shape(a, b, left_side):
    op = "triangular-solve"
    _require_array(a, "operand 0 (a)", op)
    _require_array(b, "operand 1 (b)", op)
    if a.element_type is not b.element_type:
        raise ShapeError(f"{op}: a {_s(a)} and b {_s(b)} have different element types")
    if a.rank < 2 or a.dimensions[-1] != a.dimensions[-2]:
        raise ShapeError(f"{op}: a must be square in its two minor dimensions, got {_s(a)}")
    if b.rank != a.rank or a.dimensions[:-2] != b.dimensions[:-2]:
        raise ShapeError(f"{op}: a {_s(a)} and b {_s(b)} must have the same rank and batch dimensions")
    k = a.dimensions[-1]
    needed = b.dimensions[-2] if left_side else b.dimensions[-1]
    if needed != k:
        raise ShapeError(f"{op}: b {_s(b)} needs size {k} in dimension "
                         f"{b.rank - 2 if left_side else b.rank - 1} (left_side={bool(left_side)})")
    return b.without_layout()


def infer_fft_shape(operand, fft_type, fft_length):
    _require_array(operand, "operand", "fft")
    fft_length = tuple(fft_length or ())
    n = len(fft_length)
    if not 1 <= n <= 3 or operand.rank < n:
        raise ShapeError(f"fft: fft_length {{{','.join(map(str, fft_length))}}} does not fit {_s(operand)}")
    et = operand.element_type
    minor = operand.dimensions[-n:]
    if fft_type in ("FFT", "IFFT"):
        if not et.is_complex:
            raise ShapeError(f"fft {fft_type} needs a complex operand, got {_s(operand)}")
        if tuple(minor) != fft_length:
            raise ShapeError(f"fft {fft_type}: minor dimensions of {_s(operand)} must equal fft_length")
        return operand.without_layout()
    if fft_type == "RFFT":
        if et not in (P.F32, P.F64):
            raise ShapeError(f"fft RFFT needs an f32 or f64 operand, got {_s(operand)}")
        if tuple(minor) != fft_length:
            raise ShapeError(f"fft RFFT: minor dimensions of {_s(operand)} must equal fft_length")
        dims = operand.dimensions[:-1] + (fft_length[-1] // 2 + 1,)
        return _array(P.C64 if et is P.F32 else P.C128, dims)
    if fft_type == "IRFFT":
        if not et.is_complex:
            raise ShapeError(f"fft IRFFT needs a complex operand, got {_s(operand)}")
        want = fft_length[:-1] + (fft_length[-1] // 2 + 1,)
        if tuple(minor) != want:
            raise ShapeError(f"fft IRFFT: minor dimensions of {_s(operand)} must be "
                             f"[{','.join(map(str, want))}]")
        return _array(et.complex_component_type, operand.dimensions[:-n] + fft_length)
    raise ShapeError(f"fft: unknown fft_type {fft_type}")


# ---------------------------------------------------------------------------
# Collectives
# ---------------------------------------------------------------------------

def replica_group_size(replica_groups):
    """Size of each replica group from the ``replica_groups`` attribute
    (RawAttr or text), or None when unknown (empty: all replicas)."""
    if replica_groups is None:
        return None
    text = replica_groups.text if isinstance(replica_groups, RawAttr) else str(replica_groups)
    text = text.strip()
    m = re.match(r"\[([\d,\s]+)\]\s*<=", text)
    if m:
        return int(m.group(1).split(",")[-1])
    m = re.match(r"\{\s*\{([^}]*)\}", text)
    if m:
        return len([x for x in m.group(1).split(",") if x.strip()])
    return None


def _operand_list_result(shapes):
    shapes = [s.without_layout() for s in shapes]
    return shapes[0] if len(shapes) == 1 else Shape.tuple(shapes)


def infer_all_reduce_shape(operands, to_apply=None):
    if not operands:
        raise ShapeError("all-reduce needs at least one operand")
    for i, s in enumerate(operands):
        _require_array(s, f"operand {i}", "all-reduce")
    if to_apply is not None:
        types = [s.element_type for s in operands]
        for t in sorted(set(types), key=lambda t: t.text):
            # XLA reduces each operand with the same scalar reducer.
            check_reducer(to_apply, [t], [t], "all-reduce")
    return _operand_list_result(operands)


def _collective_dim_shapes(operands, declared, dimension, group_size, op, gather):
    declared_list = list(declared.tuple_shapes) if declared is not None and declared.is_tuple else [declared]
    out = []
    for i, s in enumerate(operands):
        _require_array(s, f"operand {i}", op)
        if dimension is None or not 0 <= dimension < s.rank:
            raise ShapeError(f"{op}: dimension {dimension} is out of range for {_s(s)}")
        dims = list(s.dimensions)
        if group_size is not None:
            if gather:
                dims[dimension] *= group_size
            else:
                if dims[dimension] % group_size:
                    raise ShapeError(f"{op}: dimension {dimension} of {_s(s)} is not divisible by "
                                     f"the group size {group_size}")
                dims[dimension] //= group_size
        else:
            d = declared_list[i] if i < len(declared_list) and declared_list[i] is not None else None
            if d is None or not d.is_array or d.rank != s.rank:
                raise ShapeError(f"{op}: cannot infer the result of operand {i} {_s(s)}")
            a, b = (d.dimensions[dimension], dims[dimension]) if gather else (
                dims[dimension], d.dimensions[dimension])
            if b == 0 or a % b:
                raise ShapeError(f"{op}: size {d.dimensions[dimension]} of dimension {dimension} does "
                                 f"not fit operand {_s(s)}")
            dims[dimension] = d.dimensions[dimension]
        out.append(_array(s.element_type, dims))
    return out[0] if len(out) == 1 else Shape.tuple(out)


def infer_all_gather_shape(operands, dimension, group_size, declared=None):
    return _collective_dim_shapes(operands, declared, dimension, group_size, "all-gather", True)


def infer_reduce_scatter_shape(operands, dimension, group_size, declared=None, to_apply=None):
    if to_apply is not None:
        for t in {s.element_type for s in operands}:
            check_reducer(to_apply, [t], [t], "reduce-scatter")
    return _collective_dim_shapes(operands, declared, dimension, group_size, "reduce-scatter", False)
