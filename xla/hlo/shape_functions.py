"""Shape functions over plain shapes, part one: the helpers every shape
function shares, elementwise ops (with their element-type classes),
shape-changing ops (iota to reverse), the check of a reducer computation
(scatter's and the reductions') and gather/scatter.

``shape_inference.py`` binds these to HLO instructions (its ``RULES``
table); a builder calls them before any instruction exists. Part two,
``shape_functions_compute.py``, has the ops that reduce, contract, call
computations or span devices. Every failure raises ``ShapeError``; the
contracts (mixed precisions, layouts, declared shapes) are in
``shape_inference``'s docstring.
"""
import math
from typing import NamedTuple

from xla.errors import ShapeError
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
