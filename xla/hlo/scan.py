"""The ``scan`` opcode's structure and shape rule (newer XLA's HLO scan).

Text form, as XLA's parser reads it::

    %s = (f32[8,6], f32[]) scan(%in0, %init0), dimensions={0}, num_carries=1,
         is_reverse=false, is_associative=true, to_apply=%body

* operands: the ``N - num_carries`` inputs, then the ``num_carries`` initial
  carries (``dimensions`` holds exactly one dimension, the scan dimension, and
  ``num_carries`` is required; ``is_reverse`` and ``is_associative`` default
  to false);
* ``to_apply`` takes one slice of each input (the input without the scan
  dimension) and then the carries, and returns ``(outputs..., carries...)``
  (a tuple; or, with no tuple, its one output when ``num_carries`` is 0 and
  its one carry when it is 1);
* step ``i`` of the ``L`` (the inputs' scan-dimension size) reads the inputs
  at index ``i`` (``L - 1 - i`` when ``is_reverse``) and writes each output
  there; the next step gets the new carries;
* the result is ``(stacked outputs..., final carries...)``: each output's
  shape with a dimension of size ``L`` inserted at the scan dimension; a
  root that is no tuple gives a result that is no tuple.
  ``is_associative`` is a promise about ``to_apply`` a backend may use to
  reorder the steps; the values are those of the sequential scan.

XLA's parser infers the result when it is left out (as ``infer_scan_shape``
does); its verifier checks the called computation against the operands.
"""
from xla.errors import ShapeError
from xla.hlo.shape import Shape


def _s(shape):
    return shape.to_text(print_layout=False)


def _delete_dim(shape, dim):
    dims = shape.dimensions[:dim] + shape.dimensions[dim + 1:]
    dyn = shape.dynamic[:dim] + shape.dynamic[dim + 1:] if shape.dynamic else None
    return Shape(shape.element_type, dims, None, dyn)


def _insert_dim(shape, dim, size):
    dims = shape.dimensions[:dim] + (size,) + shape.dimensions[dim:]
    dyn = (shape.dynamic[:dim] + (False,) + shape.dynamic[dim:]) if shape.dynamic else None
    return Shape(shape.element_type, dims, None, dyn)


def split_operands(num_operands, num_carries):
    """(number of inputs, number of carries), checking the counts."""
    if num_carries is None:
        raise ShapeError("scan needs num_carries=")
    if num_carries < 0 or num_carries > num_operands:
        raise ShapeError(f"scan: num_carries={num_carries} does not fit its {num_operands} "
                         f"operands")
    return num_operands - num_carries, num_carries


def infer_scan_shape(operands, dimensions, num_carries, to_apply):
    """The result shape of a scan over ``operands`` (shapes), ``dimensions``
    (its one scan dimension), ``num_carries`` and ``to_apply`` (a
    ProgramShape-like pair ``parameters, result``)."""
    num_inputs, num_carries = split_operands(len(operands), num_carries)
    dims = tuple(dimensions or ())
    if len(dims) != 1:
        raise ShapeError(f"scan needs exactly one dimension in dimensions, got {dims}")
    dim = dims[0]
    if num_inputs == 0:
        raise ShapeError("scan needs at least one input (operands before the carries)")
    inputs, inits = operands[:num_inputs], operands[num_inputs:]
    length = None
    for i, s in enumerate(inputs):
        if not s.is_array:
            raise ShapeError(f"scan: input {i} must be an array, got {_s(s)}")
        if not 0 <= dim < s.rank:
            raise ShapeError(f"scan: dimension {dim} is out of range for input {i} {_s(s)}")
        if length is None:
            length = s.dimensions[dim]
        elif s.dimensions[dim] != length:
            raise ShapeError(f"scan: input {i} {_s(s)} has {s.dimensions[dim]} elements in "
                             f"dimension {dim}, input 0 has {length}")
    params, root = tuple(to_apply.parameters), to_apply.result
    if len(params) != len(operands):
        raise ShapeError(f"scan: to_apply takes {len(params)} parameters but the scan has "
                         f"{len(operands)} operands ({num_inputs} inputs, {num_carries} carries)")
    for i, s in enumerate(inputs):
        want = _delete_dim(s, dim)
        if not params[i].compatible(want):
            raise ShapeError(f"scan: to_apply parameter {i} has shape {_s(params[i])} but "
                             f"input {i} {_s(s)} gives slices of shape {_s(want)}")
    for j, s in enumerate(inits):
        p = params[num_inputs + j]
        if not p.compatible(s.without_layout()):
            raise ShapeError(f"scan: to_apply parameter {num_inputs + j} has shape {_s(p)} but "
                             f"carry {j} (operand {num_inputs + j}) has shape {_s(s)}")
    if root.is_tuple:
        elements = list(root.tuple_shapes)
        if len(elements) < num_carries:
            raise ShapeError(f"scan: to_apply returns {_s(root)}, fewer elements than the "
                             f"{num_carries} carries")
    elif num_carries > 1:
        raise ShapeError(f"scan: to_apply returns {_s(root)} but the scan has {num_carries} "
                         f"carries (a tuple of outputs then carries is needed)")
    else:
        elements = [root]
    num_outputs = len(elements) - num_carries
    for j in range(num_carries):
        got = elements[num_outputs + j]
        if not got.compatible(inits[j].without_layout()):
            raise ShapeError(f"scan: to_apply returns carry {j} as {_s(got)} but it must keep "
                             f"the carry's shape {_s(inits[j])}")
    result = []
    for k, e in enumerate(elements[:num_outputs]):
        if not e.is_array or dim > e.rank:
            raise ShapeError(f"scan: output {k} of to_apply {_s(e)} cannot be stacked along "
                             f"dimension {dim}")
        result.append(_insert_dim(e, dim, length))
    result.extend(e.without_layout() for e in elements[num_outputs:])
    return Shape.tuple(result) if root.is_tuple else result[0]
