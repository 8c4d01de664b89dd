"""Shape inference: the result shape of an HLO instruction from its operands.

One table, ``RULES``, keyed by opcode (see shared/GUIDE.md, "One opcode, one
row per layer"). A row knows how many operands the opcode takes and how to
compute its result shape::

    infer_shape(instr) -> Shape

reads the instruction's opcode, its operands' shapes, its attributes (typed as
``xla.hlo.attributes`` describes) and the signatures of the computations it
calls. The lower-level functions (``infer_binary_shape``, ``infer_dot_shape``,
``infer_convolution_shape``, ...) take plain shapes and attribute values, so a
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
import math
import re
from typing import NamedTuple

from xla.errors import ShapeError
from xla.hlo import opcodes
from xla.hlo.attributes import RawAttr, Window
from xla.hlo.scan import infer_scan_shape
from xla.hlo.shape import Shape
from xla.hlo.types import PrimitiveType

P = PrimitiveType


# ---------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------

class ProgramShape(NamedTuple):
    """The signature of a computation: parameter shapes and result shape."""
    parameters: tuple
    result: Shape

    def __str__(self):
        return "(" + ", ".join(_s(p) for p in self.parameters) + ") -> " + _s(self.result)


def program_shape(computation):
    """The ProgramShape of an HloComputation (parameters in number order)."""
    params = tuple(p.shape for p in computation.parameters)
    root = computation.root_instruction
    if root is None:
        raise ShapeError(f"computation %{computation.name} has no root instruction")
    return ProgramShape(params, root.shape)


def _s(shape):
    """A shape as text without layout, for messages."""
    return shape.to_text(print_layout=False) if isinstance(shape, Shape) else str(shape)


def _array(element_type, dims, dynamic=None):
    return Shape(element_type, dims, None, dynamic)


def _dims_match(a, b):
    """Dimension sizes equal; an unbounded dynamic size (-1) matches anything."""
    return len(a) == len(b) and all(x == y or x < 0 or y < 0 for x, y in zip(a, b))


def shapes_match(declared, inferred):
    """Equal ignoring layouts and dynamic flags (bounds are compared)."""
    if declared.element_type is not inferred.element_type:
        return False
    if declared.is_tuple:
        return (len(declared.tuple_shapes) == len(inferred.tuple_shapes) and
                all(shapes_match(a, b) for a, b in zip(declared.tuple_shapes, inferred.tuple_shapes)))
    return _dims_match(declared.dimensions, inferred.dimensions)


def _same_dims(a, b):
    return _dims_match(a.dimensions, b.dimensions)


# ----- mixed floating-point precision (XLA: ShapeInference accepts it; the
# verifier refuses it unless allow_mixed_precision) ----------------------------

_PRECISION_KEYS = {}


def _precision_key(et):
    """XLA's primitive_util::HigherPrecisionType order: complex first, then
    exponent range, significand width, bit width, signedness."""
    key = _PRECISION_KEYS.get(et)
    if key is None:
        key = _PRECISION_KEYS[et] = _compute_precision_key(et)
    return key


def _compute_precision_key(et):
    component = et.complex_component_type if et.is_complex else et
    if component.is_float:
        import ml_dtypes
        info = ml_dtypes.finfo(component.dtype)
        exponent_range, significand = info.maxexp - info.minexp, info.nmant + 1
    else:
        exponent_range = significand = -1
    return (et.is_complex, exponent_range, significand, component.bits,
            component.is_signed_integer)


def higher_precision_type(a, b):
    """The element type of an op mixing ``a`` and ``b`` (the first on a tie)."""
    if a is b:
        return a
    return b if _precision_key(a) < _precision_key(b) else a


def same_type_ignoring_fp_precision(a, b):
    """XLA's ShapeUtil::SameElementTypeIgnoringFpPrecision on element types."""
    return a is b or (a.is_float and b.is_float)


def shapes_match_ignoring_fp_precision(declared, inferred):
    """``shapes_match`` where two floating-point types count as equal
    (XLA's ShapeUtil::CompatibleIgnoringFpPrecision)."""
    if declared.is_tuple or inferred.is_tuple:
        return (declared.is_tuple and inferred.is_tuple and
                len(declared.tuple_shapes) == len(inferred.tuple_shapes) and
                all(shapes_match_ignoring_fp_precision(a, b)
                    for a, b in zip(declared.tuple_shapes, inferred.tuple_shapes)))
    if not same_type_ignoring_fp_precision(declared.element_type, inferred.element_type):
        return False
    return declared.is_token or _dims_match(declared.dimensions, inferred.dimensions)


def _require_array(shape, what, op):
    if not isinstance(shape, Shape) or not shape.is_array:
        raise ShapeError(f"{what} of {op} must be an array, got {_s(shape)}")


def _require_scalar(shape, what, op):
    if not isinstance(shape, Shape) or not shape.is_scalar:
        raise ShapeError(f"{what} of {op} must be a scalar, got {_s(shape)}")


def _check_dims_in_range(dims, rank, what, op, unique=True):
    for d in dims:
        if not 0 <= d < rank:
            raise ShapeError(f"{op}: {what} {d} is out of range for rank {rank}")
    if unique and len(set(dims)) != len(dims):
        raise ShapeError(f"{op}: {what} {{{','.join(map(str, dims))}}} has duplicates")


def _check_sorted(dims, what, op):
    if list(dims) != sorted(dims):
        raise ShapeError(f"{op}: {what} {{{','.join(map(str, dims))}}} must be sorted")


def _with_dims(shape, dims, dynamic=None):
    return _array(shape.element_type, dims, dynamic)


def _dyn(shape, i):
    return shape.dynamic[i] if shape.dynamic else False


# ---------------------------------------------------------------------------
# Element-type classes of the elementwise ops
# ---------------------------------------------------------------------------

def _kind_ok(element_type, kinds):
    return element_type.kind in kinds


_FLOAT_OR_COMPLEX = ("f", "c")
_FLOAT = ("f",)
_INT = ("s", "u")
_INT_OR_PRED = ("s", "u", "pred")
_NUMERIC = ("s", "u", "f", "c")
_ANY_ARRAY = ("pred", "s", "u", "f", "c")
_SIGNED = ("s", "f", "c")

# Opcode -> element kinds its operands may have.
_UNARY_TYPES = {
    **{op: _FLOAT_OR_COMPLEX for op in """exponential exponential-minus-one log
       log-plus-one sqrt rsqrt tanh logistic sine cosine tan real imag
       acos acosh asin asinh atanh cosh sinh""".split()},
    **{op: _FLOAT for op in "cbrt erf floor ceil round-nearest-afz round-nearest-even is-finite reduce-precision".split()},
    "not": _INT_OR_PRED,
    "popcnt": _INT,
    "count-leading-zeros": _INT,
    "negate": _NUMERIC,
    # XLA: "signed or complex" (an unsigned abs or sign is refused).
    "abs": _SIGNED,
    "sign": _SIGNED,
}

_BINARY_TYPES = {
    # As XLA's shape inference: add and multiply are defined on pred (as or
    # and and), subtract, divide, remainder and power are not ("expected
    # element type in shape to be arithmetic type").
    **{op: _NUMERIC for op in "subtract divide remainder power".split()},
    **{op: _ANY_ARRAY for op in "add multiply maximum minimum compare".split()},
    **{op: _INT_OR_PRED for op in ("and", "or", "xor")},
    **{op: _INT for op in ("shift-left", "shift-right-arithmetic", "shift-right-logical", "mulhi")},
    "atan2": _FLOAT_OR_COMPLEX,
    "complex": ("f",),
}


def infer_unary_shape(opcode, operand):
    """Shape of a unary elementwise op (not convert/bitcast-convert)."""
    _require_array(operand, "operand", opcode)
    et = operand.element_type
    kinds = _UNARY_TYPES.get(opcode)
    if kinds is not None and not _kind_ok(et, kinds):
        raise ShapeError(f"{opcode} does not accept element type {et.text} (operand {_s(operand)})")
    if opcode == "is-finite":
        et = P.PRED
    elif opcode in ("real", "imag") or (opcode == "abs" and et.is_complex):
        if et.is_complex:
            et = et.complex_component_type
    return _array(et, operand.dimensions, operand.dynamic)


def infer_binary_shape(opcode, lhs, rhs):
    """Shape of a binary elementwise op; operands need the same dimensions.

    HLO has no implicit broadcasting: the operands' dimensions must be
    equal. compare gives pred; complex(f32, f32) gives c64.
    """
    _require_array(lhs, "operand 0", opcode)
    _require_array(rhs, "operand 1", opcode)
    mixed_ok = opcode != "complex"
    if not _same_dims(lhs, rhs) or not (
            lhs.element_type is rhs.element_type or
            (mixed_ok and same_type_ignoring_fp_precision(lhs.element_type, rhs.element_type))):
        raise ShapeError(f"operand 1 has shape {_s(rhs)} but {opcode} needs "
                         f"{_s(_array(lhs.element_type, lhs.dimensions))} (the shape of operand 0)")
    et = higher_precision_type(lhs.element_type, rhs.element_type)
    kinds = _BINARY_TYPES.get(opcode)
    if kinds is not None and not _kind_ok(et, kinds):
        raise ShapeError(f"{opcode} does not accept element type {et.text}")
    if opcode == "compare":
        et = P.PRED
    elif opcode == "complex":
        if et not in (P.F32, P.F64):
            raise ShapeError(f"complex needs f32 or f64 operands, got {et.text}")
        et = P.C64 if et is P.F32 else P.C128
    dynamic = tuple(a or b for a, b in zip(lhs.dynamic, rhs.dynamic))
    return _array(et, lhs.dimensions, dynamic)


def infer_select_shape(pred, on_true, on_false):
    """select(pred, on_true, on_false): pred is pred[] or has on_true's dims."""
    _require_array(pred, "operand 0 (predicate)", "select")
    if pred.element_type is not P.PRED:
        raise ShapeError(f"select's predicate must have element type pred, got {_s(pred)}")
    _require_array(on_true, "operand 1", "select")
    if not shapes_match_ignoring_fp_precision(on_true, on_false):
        raise ShapeError(f"operand 2 has shape {_s(on_false)} but select needs {_s(on_true)} "
                         f"(the shape of operand 1)")
    if not pred.is_scalar and not _same_dims(pred, on_true):
        raise ShapeError(f"select's predicate {_s(pred)} must be a scalar or have the "
                         f"dimensions of {_s(on_true)}")
    return on_true.without_layout().with_element_type(
        higher_precision_type(on_true.element_type, on_false.element_type))


def infer_clamp_shape(min_, operand, max_):
    """clamp(min, operand, max): min and max are scalars or operand-shaped."""
    _require_array(operand, "operand 1", "clamp")
    for i, bound in ((0, min_), (2, max_)):
        _require_array(bound, f"operand {i}", "clamp")
        if not same_type_ignoring_fp_precision(bound.element_type, operand.element_type) or not (
                bound.is_scalar or _same_dims(bound, operand)):
            raise ShapeError(f"operand {i} has shape {_s(bound)} but clamp needs "
                             f"{operand.element_type.text}[] or {_s(operand)}")
    return operand.without_layout()


def infer_convert_shape(operand, new_type):
    """convert: same dimensions, element type ``new_type``."""
    _require_array(operand, "operand", "convert")
    if not new_type.is_array_type:
        raise ShapeError(f"convert to {new_type.text} is not allowed")
    if operand.element_type.is_complex and not new_type.is_complex:
        raise ShapeError(f"convert from complex {operand.element_type.text} to "
                         f"{new_type.text} is not allowed (use real/imag)")
    return _array(new_type, operand.dimensions, operand.dynamic)


def infer_bitcast_convert_shape(operand, new_type):
    """bitcast-convert: reinterpret bits. Between widths a minor dim is added
    (wide -> narrow, size in_bits/out_bits) or removed (narrow -> wide, the
    operand's minor dim must be out_bits/in_bits)."""
    _require_array(operand, "operand", "bitcast-convert")
    if not new_type.is_array_type:
        raise ShapeError(f"bitcast-convert to {new_type.text} is not allowed")
    src = operand.element_type.bits
    dst = new_type.bits
    dims = operand.dimensions
    dyn = operand.dynamic
    if src == dst:
        return _array(new_type, dims, dyn)
    if src > dst:
        if src % dst:
            raise ShapeError(f"bitcast-convert from {operand.element_type.text} to {new_type.text}: "
                             f"bit widths do not divide")
        return _array(new_type, dims + (src // dst,), dyn + (False,))
    if dst % src or not dims or dims[-1] != dst // src:
        raise ShapeError(f"bitcast-convert from {_s(operand)} to {new_type.text} needs a minor "
                         f"dimension of size {dst // src if dst % src == 0 else '?'}")
    return _array(new_type, dims[:-1], dyn[:-1])


def infer_reduce_precision_shape(operand, exponent_bits, mantissa_bits):
    shape = infer_unary_shape("reduce-precision", operand)
    if exponent_bits is None or exponent_bits < 1:
        raise ShapeError(f"reduce-precision needs exponent_bits >= 1, got {exponent_bits}")
    if mantissa_bits is None or mantissa_bits < 0:
        raise ShapeError(f"reduce-precision needs mantissa_bits >= 0, got {mantissa_bits}")
    return shape


# ---------------------------------------------------------------------------
# Shape-changing ops
# ---------------------------------------------------------------------------

def infer_iota_shape(shape, iota_dimension):
    _require_array(shape, "result", "iota")
    if shape.rank == 0:
        raise ShapeError("iota needs a result of rank >= 1")
    if iota_dimension is None or not 0 <= iota_dimension < shape.rank:
        raise ShapeError(f"iota_dimension {iota_dimension} is out of range for {_s(shape)}")
    return shape.without_layout()


def infer_broadcast_shape(operand, output_dims, dimensions):
    """broadcast: operand dim i becomes output dim ``dimensions[i]``."""
    _require_array(operand, "operand", "broadcast")
    if len(dimensions) != operand.rank:
        raise ShapeError(f"broadcast of {_s(operand)} needs {operand.rank} dimensions, "
                         f"got {{{','.join(map(str, dimensions))}}}")
    _check_dims_in_range(dimensions, len(output_dims), "dimension", "broadcast")
    for i, d in enumerate(dimensions):
        if operand.dimensions[i] != output_dims[d] and operand.dimensions[i] >= 0 and output_dims[d] >= 0:
            raise ShapeError(f"broadcast: operand dimension {i} has size {operand.dimensions[i]} "
                             f"but output dimension {d} has size {output_dims[d]}")
    dyn = [False] * len(output_dims)
    for i, d in enumerate(dimensions):
        dyn[d] = _dyn(operand, i)
    return _array(operand.element_type, output_dims, dyn)


def infer_reshape_shape(operand, output_dims, output_dynamic=None):
    _require_array(operand, "operand", "reshape")
    if all(d >= 0 for d in operand.dimensions) and all(d >= 0 for d in output_dims):
        if math.prod(operand.dimensions) != math.prod(output_dims):
            raise ShapeError(f"reshape from {_s(operand)} to [{','.join(map(str, output_dims))}] "
                             f"changes the element count ({math.prod(operand.dimensions)} vs "
                             f"{math.prod(output_dims)})")
    return _array(operand.element_type, output_dims, output_dynamic)


def infer_bitcast_shape(operand, declared):
    """bitcast keeps the declared shape; element count × bit width must agree."""
    if operand.is_tuple or declared.is_tuple:
        if not shapes_match(operand, declared):
            raise ShapeError(f"bitcast of tuple {_s(operand)} to {_s(declared)} changes the shape")
        return declared.without_layout()
    _require_array(operand, "operand", "bitcast")
    _require_array(declared, "result", "bitcast")
    a = operand.num_elements() * operand.element_type.bits
    b = declared.num_elements() * declared.element_type.bits
    if a != b and not (operand.is_dynamic or declared.is_dynamic):
        raise ShapeError(f"bitcast from {_s(operand)} to {_s(declared)} changes the size in bits "
                         f"({a} vs {b})")
    return declared.without_layout()


def infer_transpose_shape(operand, permutation):
    _require_array(operand, "operand", "transpose")
    if sorted(permutation) != list(range(operand.rank)):
        raise ShapeError(f"transpose dimensions {{{','.join(map(str, permutation))}}} are not a "
                         f"permutation of 0..{operand.rank - 1} for {_s(operand)}")
    return _array(operand.element_type, [operand.dimensions[p] for p in permutation],
                  [_dyn(operand, p) for p in permutation])


def infer_slice_shape(operand, slice_dims):
    _require_array(operand, "operand", "slice")
    if len(slice_dims) != operand.rank:
        raise ShapeError(f"slice of {_s(operand)} needs {operand.rank} ranges, got {len(slice_dims)}")
    out = []
    for i, sd in enumerate(slice_dims):
        start, limit, stride = sd
        size = operand.dimensions[i]
        if stride < 1:
            raise ShapeError(f"slice dimension {i}: stride {stride} must be positive")
        if not 0 <= start <= limit or (size >= 0 and limit > size):
            raise ShapeError(f"slice dimension {i}: [{start}:{limit}] is out of bounds for "
                             f"size {size} of {_s(operand)}")
        out.append((limit - start + stride - 1) // stride)
    return _array(operand.element_type, out, operand.dynamic)


def _check_start_indices(index_shapes, rank, op, first):
    if len(index_shapes) == 1 and index_shapes[0].rank == 1 and rank != 1:
        idx = index_shapes[0]  # The old form: one rank-1 index array.
        if idx.dimensions[0] != rank or not idx.element_type.is_integer:
            raise ShapeError(f"{op}: start index array {_s(idx)} needs {rank} integer elements")
        return
    if len(index_shapes) != rank:
        raise ShapeError(f"{op} of a rank-{rank} operand needs {rank} start indices, "
                         f"got {len(index_shapes)}")
    for i, s in enumerate(index_shapes):
        if not (s.is_array and s.is_scalar and s.element_type.is_integer):
            raise ShapeError(f"{op}: operand {first + i} (start index) has shape {_s(s)} but "
                             f"must be an integer scalar")
    if len({s.element_type for s in index_shapes}) > 1:
        raise ShapeError(f"{op}: start indices must all have the same element type")


def infer_dynamic_slice_shape(operand, index_shapes, slice_sizes):
    _require_array(operand, "operand 0", "dynamic-slice")
    _check_start_indices(index_shapes, operand.rank, "dynamic-slice", 1)
    if slice_sizes is None or len(slice_sizes) != operand.rank:
        raise ShapeError(f"dynamic-slice of {_s(operand)} needs {operand.rank} "
                         f"dynamic_slice_sizes, got {slice_sizes}")
    for i, (size, dim) in enumerate(zip(slice_sizes, operand.dimensions)):
        if size < 0 or (dim >= 0 and size > dim):
            raise ShapeError(f"dynamic-slice: slice size {size} of dimension {i} does not fit "
                             f"in {_s(operand)}")
    return _array(operand.element_type, slice_sizes)


def infer_dynamic_update_slice_shape(operand, update, index_shapes):
    _require_array(operand, "operand 0", "dynamic-update-slice")
    _require_array(update, "operand 1 (update)", "dynamic-update-slice")
    if not same_type_ignoring_fp_precision(update.element_type, operand.element_type) or \
            update.rank != operand.rank:
        raise ShapeError(f"operand 1 (update) has shape {_s(update)} but dynamic-update-slice "
                         f"needs a rank-{operand.rank} {operand.element_type.text} array")
    for i, (u, d) in enumerate(zip(update.dimensions, operand.dimensions)):
        if u > d >= 0:
            raise ShapeError(f"dynamic-update-slice: update {_s(update)} is larger than operand "
                             f"{_s(operand)} in dimension {i}")
    _check_start_indices(index_shapes, operand.rank, "dynamic-update-slice", 2)
    return operand.without_layout()


def infer_concatenate_shape(shapes, dimension):
    if not shapes:
        raise ShapeError("concatenate needs at least one operand")
    first = shapes[0]
    _require_array(first, "operand 0", "concatenate")
    if dimension is None or not 0 <= dimension < first.rank:
        raise ShapeError(f"concatenate dimension {dimension} is out of range for {_s(first)}")
    total = 0
    et = first.element_type
    for i, s in enumerate(shapes):
        _require_array(s, f"operand {i}", "concatenate")
        ok = (same_type_ignoring_fp_precision(s.element_type, first.element_type) and
              s.rank == first.rank and
              all(a == b for j, (a, b) in enumerate(zip(s.dimensions, first.dimensions)) if j != dimension))
        if not ok:
            raise ShapeError(f"operand {i} has shape {_s(s)} but concatenate along dimension "
                             f"{dimension} needs the other dimensions and type of {_s(first)}")
        total += s.dimensions[dimension]
        et = higher_precision_type(et, s.element_type)
    dims = list(first.dimensions)
    dims[dimension] = total
    dyn = [any(_dyn(s, j) for s in shapes) for j in range(first.rank)]
    return _array(et, dims, dyn)


def infer_pad_shape(operand, padding_value, padding):
    _require_array(operand, "operand 0", "pad")
    if not (padding_value.is_array and padding_value.is_scalar and
            same_type_ignoring_fp_precision(padding_value.element_type, operand.element_type)):
        raise ShapeError(f"operand 1 (padding value) has shape {_s(padding_value)} but pad needs "
                         f"{operand.element_type.text}[]")
    if padding is None or len(padding) != operand.rank:
        raise ShapeError(f"pad of {_s(operand)} needs {operand.rank} padding dimensions, got "
                         f"{0 if padding is None else len(padding)}")
    out = []
    for i, (pd, d) in enumerate(zip(padding, operand.dimensions)):
        low, high, interior = pd
        if interior < 0:
            raise ShapeError(f"pad dimension {i}: interior padding {interior} must be >= 0")
        size = low + high + d + max(d - 1, 0) * interior
        if size < 0:
            raise ShapeError(f"pad dimension {i}: padding {low}_{high}_{interior} of size {d} "
                             f"gives a negative size")
        out.append(size)
    return _array(higher_precision_type(operand.element_type, padding_value.element_type), out,
                  operand.dynamic)


def infer_reverse_shape(operand, dimensions):
    _require_array(operand, "operand", "reverse")
    _check_dims_in_range(dimensions, operand.rank, "dimension", "reverse")
    return operand.without_layout()


# ---------------------------------------------------------------------------
# Gather / scatter
# ---------------------------------------------------------------------------

def infer_gather_shape(operand, start_indices, offset_dims, collapsed_slice_dims, start_index_map,
                       index_vector_dim, slice_sizes, operand_batching_dims=(),
                       start_indices_batching_dims=()):
    op = "gather"
    _require_array(operand, "operand 0", op)
    _require_array(start_indices, "operand 1 (start indices)", op)
    if not start_indices.element_type.is_integer:
        raise ShapeError(f"gather start indices must be integers, got {_s(start_indices)}")
    offset_dims = tuple(offset_dims or ())
    collapsed = tuple(collapsed_slice_dims or ())
    start_index_map = tuple(start_index_map or ())
    obatch = tuple(operand_batching_dims or ())
    ibatch = tuple(start_indices_batching_dims or ())
    slice_sizes = tuple(slice_sizes or ())
    if index_vector_dim is None or not 0 <= index_vector_dim <= start_indices.rank:
        raise ShapeError(f"gather index_vector_dim {index_vector_dim} is out of range for "
                         f"start indices {_s(start_indices)}")
    idx_dims = list(start_indices.dimensions)
    if index_vector_dim == start_indices.rank:
        idx_dims.append(1)
    index_vector_size = idx_dims[index_vector_dim]
    batch_sizes = [d for i, d in enumerate(idx_dims) if i != index_vector_dim]
    if len(start_index_map) != index_vector_size:
        raise ShapeError(f"gather: start_index_map has {len(start_index_map)} entries but the index "
                         f"vector has size {index_vector_size}")
    _check_dims_in_range(start_index_map, operand.rank, "start_index_map entry", op)
    if len(slice_sizes) != operand.rank:
        raise ShapeError(f"gather: slice_sizes has {len(slice_sizes)} entries, operand "
                         f"{_s(operand)} has rank {operand.rank}")
    for i, (s, d) in enumerate(zip(slice_sizes, operand.dimensions)):
        if s < 0 or (d >= 0 and s > d):
            raise ShapeError(f"gather: slice size {s} of dimension {i} does not fit in {_s(operand)}")
    _check_sorted(offset_dims, "offset_dims", op)
    _check_sorted(collapsed, "collapsed_slice_dims", op)
    _check_sorted(obatch, "operand_batching_dims", op)
    _check_dims_in_range(collapsed, operand.rank, "collapsed_slice_dims entry", op)
    _check_dims_in_range(obatch, operand.rank, "operand_batching_dims entry", op)
    for d in collapsed + obatch:
        if slice_sizes[d] > 1:
            raise ShapeError(f"gather: dimension {d} is collapsed or batching, so its slice size "
                             f"must be <= 1, got {slice_sizes[d]}")
    if set(collapsed) & set(obatch):
        raise ShapeError("gather: collapsed_slice_dims and operand_batching_dims overlap")
    if len(obatch) != len(ibatch):
        raise ShapeError("gather: operand_batching_dims and start_indices_batching_dims differ in size")
    _check_dims_in_range(ibatch, len(idx_dims), "start_indices_batching_dims entry", op)
    if index_vector_dim in ibatch:
        raise ShapeError("gather: start_indices_batching_dims contains index_vector_dim")
    kept = [s for i, s in enumerate(slice_sizes) if i not in collapsed and i not in obatch]
    if len(kept) != len(offset_dims):
        raise ShapeError(f"gather: offset_dims has {len(offset_dims)} entries but {len(kept)} slice "
                         f"dimensions are not collapsed")
    out_rank = len(offset_dims) + len(batch_sizes)
    _check_dims_in_range(offset_dims, out_rank, "offset_dims entry", op)
    out = []
    k = b = 0
    for i in range(out_rank):
        if i in offset_dims:
            out.append(kept[k])
            k += 1
        else:
            out.append(batch_sizes[b])
            b += 1
    return _array(operand.element_type, out)


def infer_scatter_shape(operands, scatter_indices, updates, update_window_dims,
                        inserted_window_dims, scatter_dims_to_operand_dims, index_vector_dim,
                        input_batching_dims=(), scatter_indices_batching_dims=(), to_apply=None):
    """Variadic scatter: N operands, indices, N updates; result N operand shapes."""
    op = "scatter"
    n = len(operands)
    if n == 0 or len(updates) != n:
        raise ShapeError(f"scatter needs N operands and N updates, got {n} and {len(updates)}")
    first = operands[0]
    for i, s in enumerate(operands):
        _require_array(s, f"operand {i}", op)
        if not _same_dims(s, first):
            raise ShapeError(f"operand {i} has shape {_s(s)} but scatter needs the dimensions of {_s(first)}")
    _require_array(scatter_indices, f"operand {n} (scatter indices)", op)
    if not scatter_indices.element_type.is_integer:
        raise ShapeError(f"scatter indices must be integers, got {_s(scatter_indices)}")
    uwd = tuple(update_window_dims or ())
    iwd = tuple(inserted_window_dims or ())
    sdod = tuple(scatter_dims_to_operand_dims or ())
    ibatch = tuple(input_batching_dims or ())
    sbatch = tuple(scatter_indices_batching_dims or ())
    if index_vector_dim is None or not 0 <= index_vector_dim <= scatter_indices.rank:
        raise ShapeError(f"scatter index_vector_dim {index_vector_dim} is out of range for "
                         f"{_s(scatter_indices)}")
    idx_dims = list(scatter_indices.dimensions)
    if index_vector_dim == scatter_indices.rank:
        idx_dims.append(1)
    scatter_batch = [d for i, d in enumerate(idx_dims) if i != index_vector_dim]
    _check_sorted(uwd, "update_window_dims", op)
    _check_sorted(iwd, "inserted_window_dims", op)
    _check_sorted(ibatch, "input_batching_dims", op)
    _check_dims_in_range(iwd, first.rank, "inserted_window_dims entry", op)
    _check_dims_in_range(ibatch, first.rank, "input_batching_dims entry", op)
    if len(uwd) + len(iwd) + len(ibatch) != first.rank:
        raise ShapeError(f"scatter: update_window_dims ({len(uwd)}) + inserted_window_dims "
                         f"({len(iwd)}) + input_batching_dims ({len(ibatch)}) must equal the "
                         f"operand rank {first.rank}")
    if len(sdod) != idx_dims[index_vector_dim]:
        raise ShapeError(f"scatter: scatter_dims_to_operand_dims has {len(sdod)} entries but the "
                         f"index vector has size {idx_dims[index_vector_dim]}")
    _check_dims_in_range(sdod, first.rank, "scatter_dims_to_operand_dims entry", op)
    if len(ibatch) != len(sbatch):
        raise ShapeError("scatter: input_batching_dims and scatter_indices_batching_dims differ in size")
    window_operand_dims = [i for i in range(first.rank) if i not in iwd and i not in ibatch]
    for j, u in enumerate(updates):
        _require_array(u, f"operand {n + 1 + j} (updates)", op)
        if u.element_type is not operands[j].element_type:
            raise ShapeError(f"operand {n + 1 + j} (updates) has shape {_s(u)} but scatter needs "
                             f"element type {operands[j].element_type.text}")
        if u.rank != len(uwd) + len(scatter_batch):
            raise ShapeError(f"operand {n + 1 + j} (updates) has shape {_s(u)} but scatter needs "
                             f"rank {len(uwd) + len(scatter_batch)}")
        _check_dims_in_range(uwd, u.rank, "update_window_dims entry", op)
        for w, ud in enumerate(uwd):
            od = window_operand_dims[w]
            if u.dimensions[ud] > first.dimensions[od] >= 0:
                raise ShapeError(f"scatter: update window dimension {ud} of {_s(u)} is larger than "
                                 f"operand dimension {od} of {_s(first)}")
        sd = [u.dimensions[i] for i in range(u.rank) if i not in uwd]
        if not _dims_match(sd, scatter_batch):
            raise ShapeError(f"scatter: scatter dimensions of updates {_s(u)} must be "
                             f"[{','.join(map(str, scatter_batch))}] (from the indices)")
    if to_apply is not None:
        check_reducer(to_apply, [o.element_type for o in operands],
                      [o.element_type for o in operands], "scatter")
    shapes = [o.without_layout() for o in operands]
    return shapes[0] if n == 1 else Shape.tuple(shapes)


# ---------------------------------------------------------------------------
# Reductions and windows
# ---------------------------------------------------------------------------

def check_reducer(sig, init_types, input_types, op, ignore_fp_precision=False):
    """A reducer of N values: 2N scalar params (N accumulators of the init
    types, then N inputs of the input types), result N scalars (one array
    for N == 1, or a tuple of N). ``ignore_fp_precision`` (XLA's
    VerifyReducerShape, for reduce and reduce-window): the accumulators are
    the result's types exactly, while the init values and inputs may differ
    from them in floating-point precision."""
    n = len(init_types)
    if len(sig.parameters) != 2 * n:
        raise ShapeError(f"{op}: reducer {sig} must take {2 * n} parameters, takes {len(sig.parameters)}")
    res = sig.result
    results = list(res.tuple_shapes) if res.is_tuple else [res]
    if len(results) != n:
        raise ShapeError(f"{op}: reducer {sig} must return {n} value(s)")

    def same(a, b):
        return a is b or (ignore_fp_precision and same_type_ignoring_fp_precision(a, b))

    for i, p in enumerate(sig.parameters):
        if i >= n:      # an input (relaxed: which must also fit the accumulator)
            want = input_types[i - n]
            ok = same(p.element_type, want) and (
                not ignore_fp_precision or not results[i - n].is_array or
                same(p.element_type, results[i - n].element_type))
        elif ignore_fp_precision and same(p.element_type, init_types[i]):
            # An accumulator: exactly the reducer's result there.
            want = results[i].element_type
            ok = p.element_type is want
        else:
            want = init_types[i]
            ok = p.element_type is want
        if not (p.is_array and p.is_scalar and ok):
            raise ShapeError(f"{op}: reducer parameter {i} has shape {_s(p)} but must be {want.text}[]")
    for i, r in enumerate(results):
        if not (r.is_array and r.is_scalar and same(r.element_type, init_types[i])):
            raise ShapeError(f"{op}: reducer result {i} has shape {_s(r)} but must be "
                             f"{init_types[i].text}[]")


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
