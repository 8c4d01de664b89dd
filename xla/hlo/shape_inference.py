"""Shape inference: the result shape of an HLO instruction from its operands.

One table, ``RULES``, keyed by opcode (see shared/GUIDE.md, "One opcode, one
row per layer"). A row knows how many operands the opcode takes and how to
compute its result shape::

    infer_shape(instr) -> Shape

reads the instruction's opcode, its operands' shapes, its attributes (typed as
``xla.hlo.attributes`` describes) and the signatures of the computations it
calls. The lower-level functions (``infer_binary_shape``, ``infer_dot_shape``,
``infer_convolution_shape``, ..., in ``shape_functions.py`` and
``shape_functions_compute.py``) take plain shapes and attribute values, so a
builder can use them before any instruction exists. Every failure raises
``xla.errors.ShapeError`` with a message saying what does not fit; the
verifier prefixes it with the instruction and computation.

Contracts:

* Floating-point precisions may mix where XLA's shape inference lets them
  (binary elementwise ops and compare, select, clamp, pad, concatenate): the result has
  the higher precision (``higher_precision_type``); a dynamic-update-slice's
  update may differ from its operand (the result is the operand's); the
  inputs and init values of reduce and reduce-window may differ from their
  reducer's parameters (``check_reducer``; the result has the reducer's types). Whether a module may
  mix them is the verifier's ``allow_mixed_precision``.
* Inferred shapes carry no layout. Compare them with declared shapes with
  ``shapes_match`` (layout and dynamic flags ignored; for a bounded dynamic
  dimension the bound is compared; an unbounded ``?`` matches any size).
* Where the result cannot be inferred from operands alone the declared shape
  of the instruction is part of the input, and the rule says which part:

  - parameter, constant, custom-call, rng-bit-generator's output, async and
    infeed/recv-style ops: the declared shape is the result (constant checks
    its literal's dimensions);
  - iota, broadcast, reshape, rng, dynamic-reshape: the declared dimensions
    (checked against the operands: element count, broadcast mapping...);
    the element type is the operand's (iota: declared);
  - convert, bitcast-convert, stochastic-convert: the declared element type;
  - bitcast: the declared shape, provided element count × bit width agree
    with the operand's (a bitcast may also change the element type);
  - dot and convolution: dimensions are inferred; the element type is the
    declared one (XLA's preferred_element_type) provided it is reachable from
    the operand types: a floating-point operand needs a floating-point or
    complex result, a complex operand a complex result, an integer or pred
    operand any non-pred numeric result (or pred if both operands are pred).
    The low-level functions take ``preferred_element_type``; when it is
    None, both operands must share a type and the result has it.
  - all-gather / reduce-scatter: the group size comes from
    ``replica_groups`` when it lists groups (``{{0,1},{2,3}}`` or the iota
    form ``[2,2]<=[4]``); when it is empty (all replicas, count unknown),
    or with a ``channel_id`` and no ``use_global_device_ids`` (each replica
    of a group brings all its partitions, a count the module holds), the
    declared size of the gathered/scattered dimension is only checked
    to be a multiple/divisor of the operand's.
"""
from typing import NamedTuple

from xla.errors import ShapeError
from xla.hlo import opcodes
from xla.hlo.attributes import RawAttr, Window
from xla.hlo.scan import infer_scan_shape
from xla.hlo.shape import Shape
from xla.hlo.shape_functions import (
    _array, _require_array, _s, _same_dims, infer_binary_shape, infer_bitcast_convert_shape,
    infer_bitcast_shape, infer_broadcast_shape, infer_clamp_shape, infer_concatenate_shape,
    infer_convert_shape, infer_dynamic_slice_shape, infer_dynamic_update_slice_shape,
    infer_gather_shape, infer_iota_shape, infer_pad_shape, infer_reduce_precision_shape,
    infer_reshape_shape, infer_reverse_shape, infer_scatter_shape, infer_select_shape,
    infer_slice_shape, infer_transpose_shape, infer_unary_shape, program_shape, shapes_match)
from xla.hlo.shape_functions_compute import (
    _operand_list_result, check_call_parameters, infer_all_gather_shape, infer_all_reduce_shape,
    infer_cholesky_shape, infer_conditional_shape, infer_convolution_shape, infer_dot_shape,
    infer_fft_shape, infer_get_tuple_element_shape, infer_map_shape, infer_ragged_dot_shape,
    infer_reduce_scatter_shape, infer_reduce_shape, infer_reduce_window_shape,
    infer_scaled_dot_shape, infer_select_and_scatter_shape, infer_sort_shape, infer_topk_shape,
    infer_triangular_solve_shape, infer_while_shape, replica_group_size)
from xla.hlo.types import PrimitiveType

P = PrimitiveType


# ---------------------------------------------------------------------------
# The table
# ---------------------------------------------------------------------------

class Rule(NamedTuple):
    infer: object           # fn(instr, operand_shapes) -> Shape
    min_operands: int
    max_operands: object    # int, or None for no limit


RULES = opcodes.OpcodeTable("shape inference")


def rule(*ops, operands=None, min_operands=None, max_operands=None):
    """Registers an inference rule. ``operands=n``: exactly n operands."""
    if operands is not None:
        min_operands = max_operands = operands
    lo = 0 if min_operands is None else min_operands

    def wrap(fn):
        for op in ops:
            if op in RULES:
                raise ValueError(f"shape inference rule for {op} registered twice")
            RULES[op] = Rule(fn, lo, max_operands)
        return fn
    return wrap


def _sig(instr, attr):
    comp = instr.attrs.get(attr)
    if comp is None:
        raise ShapeError(f"{instr.opcode} needs a {attr}= computation")
    return program_shape(comp)


def _attr(instr, name, default=None):
    return instr.attrs.get(name, default)


def _single_dim(instr, *names):
    for name in names:
        v = instr.attrs.get(name)
        if v is None:
            continue
        if isinstance(v, int):
            return v
        v = tuple(v)
        if len(v) != 1:
            raise ShapeError(f"{instr.opcode} needs exactly one dimension in {name}, got {v}")
        return v[0]
    return None


def _participant_count(instr):
    """How many devices a group of all-gather/reduce-scatter ``instr`` has,
    or None when the instruction alone does not say: with a ``channel_id``
    and without ``use_global_device_ids`` a group of replica ids takes in
    every partition of those replicas (``xla.hlo.replica_groups``), whose
    count is the module's."""
    flag = instr.attrs.get("use_global_device_ids")
    global_ids = str(getattr(flag, "text", flag)).lower() == "true"
    if instr.attrs.get("channel_id") is not None and not global_ids:
        return None
    return replica_group_size(_attr(instr, "replica_groups"))


_ASYNC_SUFFIXES = ("-start", "-update", "-done")
_DECLARED_ASYNC = Rule(lambda instr, shapes: instr.shape.without_layout(), 0, None)


def rule_for(opcode):
    """The Rule of ``opcode``. XLA's async sugar (``custom-call-start``,
    ``add-done``...) for an opcode without its own row keeps the declared
    shape (the async wrapper's context shapes are backend-specific)."""
    r = RULES.get(opcode)
    if r is not None:
        return r
    for suffix in _ASYNC_SUFFIXES:
        if opcode.endswith(suffix) and opcode[:-len(suffix)] in RULES:
            return _DECLARED_ASYNC
    raise ShapeError(f"unknown opcode {opcode}")


def check_operand_count(opcode, count):
    r = rule_for(opcode)
    if count < r.min_operands or (r.max_operands is not None and count > r.max_operands):
        if r.max_operands == r.min_operands:
            want = f"{r.min_operands}"
        elif r.max_operands is None:
            want = f"at least {r.min_operands}"
        else:
            want = f"{r.min_operands} to {r.max_operands}"
        raise ShapeError(f"{opcode} takes {want} operand{'s' if want != '1' else ''}, got {count}")


def infer_shape(instr):
    """The result shape of ``instr`` (no layout); raises ShapeError."""
    shapes = [o.shape for o in instr.operands]
    check_operand_count(instr.opcode, len(shapes))
    return rule_for(instr.opcode).infer(instr, shapes)


# --- declared-shape ops -------------------------------------------------------

@rule("parameter", "custom-call", "infeed", "recv", "recv-done", "send", "send-done", "outfeed",
      "async-start", "async-update", "async-done", "dynamic-reshape",
      min_operands=0)
def _declared(instr, shapes):
    return instr.shape.without_layout()


@rule("constant", operands=0)
def _constant(instr, shapes):
    lit = instr.literal
    shape = instr.shape
    if shape.is_array and lit is not None and hasattr(lit, "shape"):
        if tuple(lit.shape) != shape.dimensions and lit.size != shape.num_elements():
            raise ShapeError(f"constant literal has dimensions {list(lit.shape)} but the declared "
                             f"shape is {_s(shape)}")
    return shape.without_layout()


# --- elementwise -----------------------------------------------------------------

for _op in sorted(opcodes.UNARY_ELEMENTWISE - {"copy", "convert", "bitcast-convert", "reduce-precision"}):
    rule(_op, operands=1)(lambda instr, shapes: infer_unary_shape(instr.opcode, shapes[0]))

for _op in sorted(opcodes.BINARY_ELEMENTWISE):
    rule(_op, operands=2)(lambda instr, shapes: infer_binary_shape(instr.opcode, shapes[0], shapes[1]))


@rule("copy", operands=1)
def _copy(instr, shapes):
    return shapes[0].without_layout()


@rule("convert", operands=1)
def _convert(instr, shapes):
    return infer_convert_shape(shapes[0], instr.shape.element_type)


@rule("stochastic-convert", operands=2)
def _stochastic_convert(instr, shapes):
    operand, random = shapes
    if not _same_dims(operand, random) or not random.element_type.is_unsigned_integer:
        raise ShapeError(f"operand 1 has shape {_s(random)} but stochastic-convert needs an unsigned "
                         f"array with the dimensions of {_s(operand)}")
    return infer_convert_shape(operand, instr.shape.element_type)


@rule("bitcast-convert", operands=1)
def _bitcast_convert(instr, shapes):
    return infer_bitcast_convert_shape(shapes[0], instr.shape.element_type)


@rule("reduce-precision", operands=1)
def _reduce_precision(instr, shapes):
    return infer_reduce_precision_shape(shapes[0], _attr(instr, "exponent_bits"),
                                        _attr(instr, "mantissa_bits"))


@rule("select", operands=3)
def _select(instr, shapes):
    return infer_select_shape(*shapes)


@rule("clamp", operands=3)
def _clamp(instr, shapes):
    return infer_clamp_shape(*shapes)


@rule("map", min_operands=1)
def _map(instr, shapes):
    return infer_map_shape(shapes, _sig(instr, "to_apply"), _attr(instr, "dimensions"))


# --- shape changes ---------------------------------------------------------------

@rule("iota", operands=0)
def _iota(instr, shapes):
    return infer_iota_shape(instr.shape, _attr(instr, "iota_dimension"))


@rule("broadcast", operands=1)
def _broadcast(instr, shapes):
    return infer_broadcast_shape(shapes[0], instr.shape.dimensions, tuple(_attr(instr, "dimensions", ())))


@rule("reshape", operands=1)
def _reshape(instr, shapes):
    return infer_reshape_shape(shapes[0], instr.shape.dimensions, instr.shape.dynamic)


@rule("bitcast", operands=1)
def _bitcast(instr, shapes):
    return infer_bitcast_shape(shapes[0], instr.shape)


@rule("transpose", operands=1)
def _transpose(instr, shapes):
    return infer_transpose_shape(shapes[0], tuple(_attr(instr, "dimensions", ())))


@rule("slice", operands=1)
def _slice(instr, shapes):
    return infer_slice_shape(shapes[0], _attr(instr, "slice", ()))


@rule("dynamic-slice", min_operands=2)
def _dynamic_slice(instr, shapes):
    return infer_dynamic_slice_shape(shapes[0], shapes[1:], _attr(instr, "dynamic_slice_sizes"))


@rule("dynamic-update-slice", min_operands=3)
def _dynamic_update_slice(instr, shapes):
    return infer_dynamic_update_slice_shape(shapes[0], shapes[1], shapes[2:])


@rule("concatenate", min_operands=1)
def _concatenate(instr, shapes):
    return infer_concatenate_shape(shapes, _single_dim(instr, "dimensions"))


@rule("pad", operands=2)
def _pad(instr, shapes):
    return infer_pad_shape(shapes[0], shapes[1], _attr(instr, "padding"))


@rule("reverse", operands=1)
def _reverse(instr, shapes):
    return infer_reverse_shape(shapes[0], tuple(_attr(instr, "dimensions", ())))


@rule("gather", operands=2)
def _gather(instr, shapes):
    a = instr.attrs
    return infer_gather_shape(shapes[0], shapes[1], a.get("offset_dims"), a.get("collapsed_slice_dims"),
                              a.get("start_index_map"), a.get("index_vector_dim"), a.get("slice_sizes"),
                              a.get("operand_batching_dims"), a.get("start_indices_batching_dims"))


@rule("scatter", min_operands=3)
def _scatter(instr, shapes):
    if len(shapes) % 2 == 0:
        raise ShapeError(f"scatter takes 2N+1 operands (N operands, indices, N updates), got {len(shapes)}")
    n = (len(shapes) - 1) // 2
    a = instr.attrs
    return infer_scatter_shape(shapes[:n], shapes[n], shapes[n + 1:], a.get("update_window_dims"),
                               a.get("inserted_window_dims"), a.get("scatter_dims_to_operand_dims"),
                               a.get("index_vector_dim"), a.get("input_batching_dims"),
                               a.get("scatter_indices_batching_dims"), _sig(instr, "to_apply"))


# --- reductions -------------------------------------------------------------------

def _split_half(instr, shapes):
    if len(shapes) % 2:
        raise ShapeError(f"{instr.opcode} takes 2N operands (N inputs, N init values), got {len(shapes)}")
    n = len(shapes) // 2
    return shapes[:n], shapes[n:]


@rule("reduce", min_operands=2)
def _reduce(instr, shapes):
    inputs, inits = _split_half(instr, shapes)
    return infer_reduce_shape(inputs, inits, _attr(instr, "dimensions", ()), _sig(instr, "to_apply"))


@rule("reduce-window", min_operands=2)
def _reduce_window(instr, shapes):
    inputs, inits = _split_half(instr, shapes)
    return infer_reduce_window_shape(inputs, inits, _attr(instr, "window", Window(())),
                                     _sig(instr, "to_apply"))


@rule("select-and-scatter", operands=3)
def _select_and_scatter(instr, shapes):
    return infer_select_and_scatter_shape(shapes[0], shapes[1], shapes[2],
                                          _attr(instr, "window", Window(())),
                                          _sig(instr, "select"), _sig(instr, "scatter"))


# --- dot, convolution -------------------------------------------------------------

@rule("dot", min_operands=2, max_operands=4)
def _dot(instr, shapes):
    a = instr.attrs
    if len(shapes) > 2 and "sparsity" not in a:
        raise ShapeError(f"dot takes 2 operands (more only for sparse dot), got {len(shapes)}")
    if len(shapes) > 2:  # Sparse dot: the declared dimensions are kept.
        return instr.shape.without_layout()
    return infer_dot_shape(shapes[0], shapes[1], a.get("lhs_contracting_dims"),
                           a.get("rhs_contracting_dims"), a.get("lhs_batch_dims"),
                           a.get("rhs_batch_dims"), instr.shape.element_type)


@rule("ragged-dot", operands=3)
def _ragged_dot(instr, shapes):
    a = instr.attrs
    return infer_ragged_dot_shape(shapes[0], shapes[1], shapes[2], a.get("lhs_contracting_dims"),
                                  a.get("rhs_contracting_dims"), a.get("lhs_batch_dims"),
                                  a.get("rhs_batch_dims"), a.get("lhs_ragged_dims"),
                                  a.get("rhs_group_dims"), instr.shape.element_type)


@rule("scaled-dot", operands=4)
def _scaled_dot(instr, shapes):
    a = instr.attrs
    return infer_scaled_dot_shape(*shapes, a.get("lhs_contracting_dims"), a.get("rhs_contracting_dims"),
                                  a.get("lhs_batch_dims"), a.get("rhs_batch_dims"),
                                  instr.shape.element_type)


@rule("convolution", operands=2)
def _convolution(instr, shapes):
    a = instr.attrs
    return infer_convolution_shape(shapes[0], shapes[1], a.get("window", Window(())), a.get("dim_labels"),
                                   a.get("feature_group_count", 1), a.get("batch_group_count", 1),
                                   instr.shape.element_type)


# --- sort, topk ---------------------------------------------------------------------

@rule("sort", min_operands=1)
def _sort(instr, shapes):
    return infer_sort_shape(shapes, _single_dim(instr, "dimensions"), _sig(instr, "to_apply"))


@rule("topk", operands=1)
def _topk(instr, shapes):
    return infer_topk_shape(shapes[0], _attr(instr, "k"))


# --- tuples and control flow -------------------------------------------------------

@rule("tuple", min_operands=0)
def _tuple(instr, shapes):
    return Shape.tuple([s.without_layout() for s in shapes])


@rule("get-tuple-element", operands=1)
def _gte(instr, shapes):
    return infer_get_tuple_element_shape(shapes[0], _attr(instr, "index"))


@rule("call", min_operands=0)
def _call(instr, shapes):
    sig = _sig(instr, "to_apply")
    check_call_parameters(sig, shapes, "call")
    return sig.result.without_layout()


@rule("fusion", min_operands=0)
def _fusion(instr, shapes):
    sig = _sig(instr, "calls")
    check_call_parameters(sig, shapes, "fusion", "fused computation")
    return sig.result.without_layout()


@rule("scan", min_operands=1)
def _scan(instr, shapes):
    return infer_scan_shape(shapes, _attr(instr, "dimensions"), _attr(instr, "num_carries"),
                            _sig(instr, "to_apply"))


@rule("while", operands=1)
def _while(instr, shapes):
    return infer_while_shape(shapes[0], _sig(instr, "condition"), _sig(instr, "body"))


@rule("conditional", min_operands=1)
def _conditional(instr, shapes):
    if "branch_computations" in instr.attrs:
        branches = [program_shape(c) for c in instr.attrs["branch_computations"]]
    elif "true_computation" in instr.attrs or "false_computation" in instr.attrs:
        branches = [_sig(instr, "true_computation"), _sig(instr, "false_computation")]
    else:
        raise ShapeError("conditional needs branch_computations or true_computation/false_computation")
    return infer_conditional_shape(shapes[0], branches, shapes[1:])


@rule("opt-barrier", operands=1)
def _optimization_barrier(instr, shapes):
    return shapes[0].without_layout()


@rule("domain", operands=1)
def _domain(instr, shapes):
    return shapes[0].without_layout()


@rule("add-dependency", operands=2)
def _add_dependency(instr, shapes):
    if not shapes[1].is_token:
        raise ShapeError(f"add-dependency: operand 1 must be a token, got {_s(shapes[1])}")
    return shapes[0].without_layout()


def infer_after_all_shape(shapes):
    """XLA's ShapeInference::InferAfterAllShape, for builders: every operand a token."""
    for i, s in enumerate(shapes):
        if not s.is_token:
            raise ShapeError(f"operand {i} has shape {_s(s)} but after-all needs token[]")
    return Shape.token()


@rule("after-all", min_operands=0)
def _after_all(instr, shapes):
    # As XLA's verifier (ShapeVerifier::HandleAfterAll): the result is a
    # token whatever the operands are; only builders insist on tokens
    # (infer_after_all_shape). An operand is an ordering edge, nothing more.
    return Shape.token()


# --- RNG -------------------------------------------------------------------------------

@rule("rng", operands=2)
def _rng(instr, shapes):
    a, b = shapes
    for i, s in enumerate(shapes):
        if not (s.is_array and s.is_scalar):
            raise ShapeError(f"operand {i} of rng must be a scalar, got {_s(s)}")
    if a.element_type is not b.element_type:
        raise ShapeError(f"operand 1 has shape {_s(b)} but rng needs {_s(a)}")
    dist = _attr(instr, "distribution")
    if dist == "rng_normal" and not a.element_type.is_float:
        raise ShapeError(f"rng_normal needs floating-point parameters, got {_s(a)}")
    return _array(a.element_type, instr.shape.dimensions)


@rule("rng-bit-generator", operands=1)
def _rng_bit_generator(instr, shapes):
    state = shapes[0]
    declared = instr.shape
    if not declared.is_tuple or len(declared.tuple_shapes) != 2:
        raise ShapeError(f"rng-bit-generator returns (state, output), declared {_s(declared)}")
    _require_array(state, "operand (state)", "rng-bit-generator")
    if state.rank != 1 or not state.element_type.is_unsigned_integer:
        raise ShapeError(f"rng-bit-generator state must be a rank-1 unsigned array, got {_s(state)}")
    return Shape.tuple([state.without_layout(), declared.tuple_shapes[1].without_layout()])


@rule("rng-get-and-update-state", operands=0)
def _rng_get_and_update_state(instr, shapes):
    return _array(P.U64, (2,))


# --- linear algebra, fft -----------------------------------------------------------------

@rule("cholesky", operands=1)
def _cholesky(instr, shapes):
    return infer_cholesky_shape(shapes[0])


@rule("triangular-solve", operands=2)
def _triangular_solve(instr, shapes):
    return infer_triangular_solve_shape(shapes[0], shapes[1], _attr(instr, "left_side", False))


@rule("fft", operands=1)
def _fft(instr, shapes):
    return infer_fft_shape(shapes[0], _attr(instr, "fft_type"), _attr(instr, "fft_length"))


# --- dynamic shapes --------------------------------------------------------------------

@rule("get-dimension-size", operands=1)
def _get_dimension_size(instr, shapes):
    d = _single_dim(instr, "dimensions")
    if d is None or not 0 <= d < shapes[0].rank:
        raise ShapeError(f"get-dimension-size: dimension {d} is out of range for {_s(shapes[0])}")
    return _array(P.S32, ())


@rule("set-dimension-size", operands=2)
def _set_dimension_size(instr, shapes):
    operand, size = shapes
    d = _single_dim(instr, "dimensions")
    if d is None or not 0 <= d < operand.rank:
        raise ShapeError(f"set-dimension-size: dimension {d} is out of range for {_s(operand)}")
    if not (size.is_scalar and size.element_type is P.S32):
        raise ShapeError(f"operand 1 has shape {_s(size)} but set-dimension-size needs s32[]")
    dyn = list(operand.dynamic)
    dyn[d] = True
    return _array(operand.element_type, operand.dimensions, dyn)


# --- batch norm ---------------------------------------------------------------------------

def _feature_vector(operand, instr, what_index, shape):
    fi = _attr(instr, "feature_index")
    fi = int(fi.text) if isinstance(fi, RawAttr) else fi
    if fi is None or not 0 <= fi < operand.rank:
        raise ShapeError(f"{instr.opcode}: feature_index {fi} is out of range for {_s(operand)}")
    want = _array(operand.element_type, (operand.dimensions[fi],))
    if shape is not None and not shapes_match(shape, want):
        raise ShapeError(f"operand {what_index} has shape {_s(shape)} but {instr.opcode} needs {_s(want)}")
    return want


@rule("batch-norm-training", operands=3)
def _bn_training(instr, shapes):
    x = shapes[0]
    f = _feature_vector(x, instr, 1, shapes[1])
    _feature_vector(x, instr, 2, shapes[2])
    return Shape.tuple([x.without_layout(), f, f])


@rule("batch-norm-inference", operands=5)
def _bn_inference(instr, shapes):
    x = shapes[0]
    for i in range(1, 5):
        _feature_vector(x, instr, i, shapes[i])
    return x.without_layout()


@rule("batch-norm-grad", operands=5)
def _bn_grad(instr, shapes):
    x = shapes[0]
    f = _feature_vector(x, instr, 1, shapes[1])
    for i in (2, 3):
        _feature_vector(x, instr, i, shapes[i])
    if not shapes_match(shapes[4], x):
        raise ShapeError(f"operand 4 has shape {_s(shapes[4])} but batch-norm-grad needs {_s(x)}")
    return Shape.tuple([x.without_layout(), f, f])


# --- copies across memory spaces -------------------------------------------------------------

@rule("copy-start", operands=1)
def _copy_start(instr, shapes):
    s = shapes[0].without_layout()
    return Shape.tuple([s, s, _array(P.U32, ())])


@rule("copy-done", operands=1)
def _copy_done(instr, shapes):
    s = shapes[0]
    if not s.is_tuple or len(s.tuple_shapes) < 2:
        raise ShapeError(f"copy-done needs the tuple of a copy-start, got {_s(s)}")
    return s.tuple_shapes[1].without_layout()


# --- collectives --------------------------------------------------------------------------------

def _optional_sig(instr, attr):
    comp = instr.attrs.get(attr)
    return program_shape(comp) if comp is not None else None


@rule("all-reduce", "all-reduce-start", min_operands=1)
def _all_reduce(instr, shapes):
    return infer_all_reduce_shape(shapes, _optional_sig(instr, "to_apply"))


@rule("all-reduce-done", operands=1)
def _all_reduce_done(instr, shapes):
    return shapes[0].without_layout()


@rule("all-gather", min_operands=1)
def _all_gather(instr, shapes):
    dim = _single_dim(instr, "dimensions", "all_gather_dimension")
    return infer_all_gather_shape(shapes, dim, _participant_count(instr), instr.shape)


@rule("all-gather-start", min_operands=1)
def _all_gather_start(instr, shapes):
    dim = _single_dim(instr, "dimensions", "all_gather_dimension")
    declared = instr.shape
    gathered_declared = declared.tuple_shapes[1] if declared.is_tuple and len(declared.tuple_shapes) == 2 else None
    result = infer_all_gather_shape(shapes, dim, _participant_count(instr), gathered_declared)
    return Shape.tuple([_operand_list_result(shapes), result])


@rule("all-gather-done", "collective-permute-done", operands=1)
def _async_collective_done(instr, shapes):
    s = shapes[0]
    if not s.is_tuple or len(s.tuple_shapes) < 2:
        raise ShapeError(f"{instr.opcode} needs the tuple of its -start op, got {_s(s)}")
    return s.tuple_shapes[1].without_layout()


@rule("reduce-scatter", min_operands=1)
def _reduce_scatter(instr, shapes):
    dim = _single_dim(instr, "dimensions", "scatter_dimension")
    return infer_reduce_scatter_shape(shapes, dim, _participant_count(instr), instr.shape,
                                      _optional_sig(instr, "to_apply"))


@rule("all-to-all", min_operands=1)
def _all_to_all(instr, shapes):
    for i, s in enumerate(shapes):
        _require_array(s, f"operand {i}", "all-to-all")
    split = _single_dim(instr, "dimensions", "split_dimension")
    if split is not None:
        if len(shapes) != 1:
            raise ShapeError("all-to-all with a split dimension takes one operand")
        if not 0 <= split < shapes[0].rank:
            raise ShapeError(f"all-to-all: split dimension {split} is out of range for {_s(shapes[0])}")
        size = replica_group_size(_attr(instr, "replica_groups"))
        if size and shapes[0].dimensions[split] % size:
            raise ShapeError(f"all-to-all: dimension {split} of {_s(shapes[0])} is not divisible by "
                             f"the group size {size}")
        return shapes[0].without_layout()
    return Shape.tuple([s.without_layout() for s in shapes])


@rule("collective-permute", min_operands=1, max_operands=4)
def _collective_permute(instr, shapes):
    if len(shapes) == 1:
        return shapes[0].without_layout()
    # In-place form: (input, output buffer, input offsets, output offsets).
    return shapes[1].without_layout()


@rule("collective-permute-start", min_operands=1, max_operands=4)
def _collective_permute_start(instr, shapes):
    # (operand, result, context...): the context shapes are backend-specific.
    declared = instr.shape
    if not declared.is_tuple or len(declared.tuple_shapes) < 2:
        raise ShapeError(f"collective-permute-start returns a tuple, declared {_s(declared)}")
    s = shapes[0].without_layout()
    rest = [t.without_layout() for t in declared.tuple_shapes[2:]]
    return Shape.tuple([s, s] + rest)


@rule("collective-broadcast", min_operands=1)
def _collective_broadcast(instr, shapes):
    return _operand_list_result(shapes)


@rule("ragged-all-to-all", operands=6)
def _ragged_all_to_all(instr, shapes):
    # (input, output, input_offsets, send_sizes, output_offsets, recv_sizes): the result is
    # the output buffer.
    return shapes[1].without_layout()


@rule("replica-id", "partition-id", operands=0)
def _replica_id(instr, shapes):
    return _array(P.U32, ())
