"""Interpreter handlers: ops that create or move data without arithmetic.

Semantics (XLA operation semantics):

* broadcast: ``dimensions[i]`` is the result dimension of operand dimension i;
* bitcast: reinterprets the physical buffer. The operand is laid out in
  physical order per its layout (``minor_to_major``; no layout means
  row-major) and read back with the result's layout, which for row-major
  layouts on both sides is a reshape;
* dynamic-slice / dynamic-update-slice: each start index is clamped to
  ``[0, dim - size]`` so the slice stays in bounds;
* pad: negative low/high padding crops; interior padding inserts
  ``interior`` pad values between neighbouring elements.
"""
import numpy as np

from xla.hlo.evaluator.registry import register
from xla.errors import InvalidArgumentError, UnimplementedError


def _dims(instr):
    return instr.shape.dimensions


def _literal_value(literal, shape, instr):
    if shape.is_tuple:
        if not isinstance(literal, (tuple, list)) or len(literal) != len(shape.tuple_shapes):
            raise InvalidArgumentError(f"constant {instr.name}: literal does not match tuple shape {shape}")
        return tuple(_literal_value(v, s, instr) for v, s in zip(literal, shape.tuple_shapes))
    value = np.asarray(literal)
    if value.dtype != shape.dtype:
        value = value.astype(shape.dtype)
    if value.shape != shape.dimensions:
        if value.size == 1 and np.prod(shape.dimensions, dtype=np.int64) != 1:
            value = np.broadcast_to(value.reshape(()), shape.dimensions)
        else:
            value = value.reshape(shape.dimensions)
    return np.array(value)


@register("parameter")
def _parameter(instr, operands, ctx):
    # The evaluator checked the entry arguments against the parameter shapes.
    return ctx.arguments[instr.parameter_number]


@register("constant")
def _constant(instr, operands, ctx):
    if instr.literal is None:
        raise InvalidArgumentError(
            f"constant {instr.name} has an elided value ({{...}} in the HLO text); "
            "the module cannot be evaluated. Dump it with print_large_constants to keep the values.")
    cached = getattr(ctx, "_constant_cache", None)
    if cached is not None and instr in cached:
        return cached[instr]
    value = _literal_value(instr.literal, instr.shape, instr)
    if cached is not None:
        if isinstance(value, np.ndarray):
            value.flags.writeable = False
        cached[instr] = value
    return value


@register("iota")
def _iota(instr, operands, ctx):
    dims = _dims(instr)
    d = instr.attr("iota_dimension", 0)
    n = dims[d] if dims else 1
    line = np.arange(n, dtype=np.int64)
    dtype = instr.shape.dtype
    if dtype == np.bool_:
        line = line != 0
    else:
        line = line.astype(np.float64).astype(dtype) if dtype.kind not in "iu" else line.astype(dtype)
    shape = [1] * len(dims)
    if dims:
        shape[d] = n
    return np.asarray(np.broadcast_to(line.reshape(shape), dims), order="C")


@register("broadcast")
def _broadcast(instr, operands, ctx):
    x = np.asarray(operands[0])
    dims = list(_dims(instr))
    for i, d in enumerate(instr.attr("dimensions", ())):
        if i < x.ndim and instr.shape.dynamic[d]:
            dims[d] = x.shape[i]   # a dynamic operand dimension keeps its size
    mapping = tuple(instr.attr("dimensions", ()))
    if len(mapping) != x.ndim:
        raise InvalidArgumentError(
            f"broadcast {instr.name}: dimensions={list(mapping)} does not match operand rank {x.ndim}")
    # Put the operand's dimensions in increasing result-dimension order.
    order = sorted(range(x.ndim), key=lambda i: mapping[i])
    x = np.transpose(x, order)
    shape = [1] * len(dims)
    for i in order:
        shape[mapping[i]] = dims[mapping[i]]
    return np.asarray(np.broadcast_to(x.reshape(shape), dims), order="C")


@register("reshape")
def _reshape(instr, operands, ctx):
    x = np.asarray(operands[0])
    if x.shape != instr.operands[0].shape.dimensions:
        return np.reshape(x, _dynamic_reshape_sizes(instr, x.shape)).copy()
    return np.reshape(x, _dims(instr)).copy()


def _dynamic_reshape_sizes(instr, held):
    from xla.hlo.shape import reshape_result_sizes
    try:
        return reshape_result_sizes(instr.operands[0].shape.dimensions, held, instr.shape)
    except ValueError as e:
        raise InvalidArgumentError(f"reshape {instr.name}: {e}") from None


def _major_to_minor(shape):
    if shape.layout is None or len(shape.layout.minor_to_major) != shape.rank:
        return tuple(range(shape.rank))
    return tuple(reversed(shape.layout.minor_to_major))


def to_physical(x, shape):
    """The elements of x in the order its layout stores them (1-D)."""
    return np.transpose(x, _major_to_minor(shape)).ravel()


def from_physical(flat, shape):
    """The logical array of ``shape`` whose layout stores ``flat``."""
    order = _major_to_minor(shape)
    physical = flat.reshape([shape.dimensions[d] for d in order])
    return np.asarray(np.transpose(physical, np.argsort(order)), order="C")


@register("bitcast")
def _bitcast(instr, operands, ctx):
    operand_shape = instr.operands[0].shape
    x = np.asarray(operands[0])
    flat = to_physical(x, operand_shape)
    dtype = instr.shape.dtype
    if flat.dtype != dtype:
        if flat.dtype.itemsize != dtype.itemsize:
            raise UnimplementedError(f"interpreter: bitcast {instr.name} changes the element size")
        flat = flat.view(dtype)
    return from_physical(flat, instr.shape)


@register("transpose")
def _transpose(instr, operands, ctx):
    return np.asarray(np.transpose(operands[0], instr.attr("dimensions")), order="C")


@register("copy")
def _copy(instr, operands, ctx):
    value = operands[0]
    return value if isinstance(value, tuple) else np.array(value)


@register("slice")
def _slice(instr, operands, ctx):
    x = np.asarray(operands[0])
    index = tuple(slice(s.start, s.limit, s.stride) for s in instr.attr("slice"))
    return np.asarray(x[index], order="C")


def _start_indices(index_values, rank):
    """Start indices as Python ints from scalar operands (or one 1-D operand)."""
    if len(index_values) == 1 and np.ndim(index_values[0]) == 1:
        values = list(np.asarray(index_values[0]).tolist())
    else:
        values = [np.asarray(v).item() for v in index_values]
    return [int(v) for v in values]


def _clamped_starts(starts, dims, sizes):
    return [min(max(s, 0), max(d - n, 0)) for s, d, n in zip(starts, dims, sizes)]


@register("dynamic-slice")
def _dynamic_slice(instr, operands, ctx):
    x = np.asarray(operands[0])
    sizes = instr.attr("dynamic_slice_sizes") or _dims(instr)
    starts = _clamped_starts(_start_indices(operands[1:], x.ndim), x.shape, sizes)
    index = tuple(slice(s, s + n) for s, n in zip(starts, sizes))
    return np.asarray(x[index], order="C")


@register("dynamic-update-slice")
def _dynamic_update_slice(instr, operands, ctx):
    x = np.array(operands[0])
    update = np.asarray(operands[1])
    starts = _clamped_starts(_start_indices(operands[2:], x.ndim), x.shape, update.shape)
    index = tuple(slice(s, s + n) for s, n in zip(starts, update.shape))
    x[index] = update
    return x


@register("concatenate")
def _concatenate(instr, operands, ctx):
    (axis,) = instr.attr("dimensions")
    return np.concatenate([np.asarray(o) for o in operands], axis=axis)


@register("pad")
def _pad(instr, operands, ctx):
    x = np.asarray(operands[0])
    value = np.asarray(operands[1]).reshape(())
    config = instr.attr("padding")
    dtype = instr.shape.dtype
    # Interior padding first: element i lands at i * (interior + 1).
    dilated_shape = [(n - 1) * (p.interior + 1) + 1 if n > 0 else 0 for n, p in zip(x.shape, config)]
    dilated = np.full(dilated_shape, value, dtype)
    dilated[tuple(slice(None, None, p.interior + 1) for p in config)] = x
    # Then edge padding; a negative amount crops.
    grown_shape = [n + max(p.low, 0) + max(p.high, 0) for n, p in zip(dilated_shape, config)]
    grown = np.full(grown_shape, value, dtype)
    grown[tuple(slice(max(p.low, 0), max(p.low, 0) + n) for n, p in zip(dilated_shape, config))] = dilated
    crop = tuple(slice(max(-p.low, 0), g - max(-p.high, 0)) for g, p in zip(grown_shape, config))
    return np.asarray(grown[crop], order="C")


@register("reverse")
def _reverse(instr, operands, ctx):
    axes = tuple(instr.attr("dimensions", ()))
    return np.asarray(np.flip(operands[0], axis=axes), order="C") if axes else operands[0]


@register("tuple")
def _tuple(instr, operands, ctx):
    return tuple(operands)


@register("get-tuple-element")
def _get_tuple_element(instr, operands, ctx):
    return operands[0][instr.attr("index")]


@register("get-dimension-size")
def _get_dimension_size(instr, operands, ctx):
    (d,) = instr.attr("dimensions")
    return np.asarray(np.shape(operands[0])[d], instr.shape.dtype)


@register("set-dimension-size")
def _set_dimension_size(instr, operands, ctx):
    """The operand with dimension ``d`` at its new size: arrays of a dynamic
    shape are held at their dynamic sizes (as dynamic-reshape makes them),
    so later reductions and elementwise ops see only the valid elements, as
    XLA's dynamic padder arranges. Growing a dimension exposes padding,
    whose values XLA leaves undefined: zeros here."""
    x, size = np.asarray(operands[0]), int(operands[1])
    (d,) = instr.attr("dimensions")
    bound = instr.shape.dimensions[d]
    if not 0 <= size <= bound:
        raise InvalidArgumentError(
            f"set-dimension-size {instr.name}: size {size} is not within the bound {bound} "
            f"of dimension {d}")
    if size <= x.shape[d]:
        return np.array(x[(slice(None),) * d + (slice(0, size),)])
    widths = [(0, 0)] * x.ndim
    widths[d] = (0, size - x.shape[d])
    return np.pad(x, widths)
