"""Interpreter handlers: calls, control flow, reduce, and the small
bookkeeping ops (tokens, barriers, replica/partition ids).

* while: evaluates ``condition`` on the state, then ``body``, until false;
* scan: the sequential scan of ``xla/hlo/scan.py`` (is_associative changes
  nothing here);
* conditional: pred form (true_computation / false_computation) or indexed
  form (branch_computations; an out-of-range index runs the last branch);
* reduce (variadic: N inputs then N init values): the reducer is applied
  as a pairwise tree over the reduced dimensions, each step evaluating the
  reducer on whole arrays (Evaluator.call_elementwise), left operand before
  right, so reducers that break ties by position (argmax) see elements in
  order; the init value is combined last (``reducer(init, tree)``). A
  reducer that is one add/multiply/maximum/minimum/and/or/xor of its two
  parameters uses the NumPy reduction directly (integers wrap exactly the
  same; narrow floats accumulate in f32 and round once).
"""
import numpy as np

from xla.hlo.evaluator.elementwise import _is_narrow_float, is_int_dtype
from xla.hlo.evaluator.registry import TOKEN, register
from xla.errors import InvalidArgumentError


@register("call")
def _call(instr, operands, ctx):
    return ctx.call(instr.attr("to_apply"), operands)


@register("fusion")
def _fusion(instr, operands, ctx):
    return ctx.call(instr.attr("calls"), operands)


@register("map")
def _map(instr, operands, ctx):
    out = ctx.call_elementwise(instr.attr("to_apply"), [np.asarray(o) for o in operands])
    return np.asarray(np.broadcast_to(np.asarray(out, instr.shape.dtype), instr.shape.dimensions), order="C")


def _truth(value, instr):
    value = np.asarray(value)
    if value.size != 1:
        raise InvalidArgumentError(f"{instr.name}: condition value is not a scalar")
    return bool(value.reshape(()))


@register("while")
def _while(instr, operands, ctx):
    condition, body = instr.attr("condition"), instr.attr("body")
    state = operands[0]
    while _truth(ctx.call(condition, [state]), instr):
        state = ctx.call(body, [state])
    return state


@register("scan")
def _scan(instr, operands, ctx):
    """Step i of L reads the inputs at i (L-1-i when is_reverse) and writes
    the outputs there; the carries thread through (xla/hlo/scan.py)."""
    comp = instr.attr("to_apply")
    num_carries = instr.attr("num_carries")
    dim = tuple(instr.attr("dimensions"))[0]
    num_inputs = len(operands) - num_carries
    inputs = [np.asarray(x) for x in operands[:num_inputs]]
    carries = list(operands[num_inputs:])
    root_is_tuple = comp.root_instruction.shape.is_tuple
    if instr.shape.is_tuple:
        out_shapes = instr.shape.tuple_shapes[:len(instr.shape.tuple_shapes) - num_carries]
    else:
        out_shapes = [instr.shape] if num_carries == 0 else []
    outputs = [np.zeros(s.dimensions, s.dtype) for s in out_shapes]
    length = inputs[0].shape[dim]
    reverse = bool(instr.attr("is_reverse", False))
    for step in range(length):
        i = length - 1 - step if reverse else step
        values = ctx.call(comp, [np.take(x, i, axis=dim) for x in inputs] + carries)
        values = list(values) if root_is_tuple else [values]
        at = (slice(None),) * dim + (i,)
        for out, value in zip(outputs, values):
            out[at] = value
        carries = values[len(outputs):]
    result = outputs + carries
    return tuple(result) if root_is_tuple else result[0]


@register("conditional")
def _conditional(instr, operands, ctx):
    selector = np.asarray(operands[0])
    branches = instr.attr("branch_computations")
    if branches is None:
        true_c, false_c = instr.attr("true_computation"), instr.attr("false_computation")
        if true_c is None or false_c is None:
            raise InvalidArgumentError(f"conditional {instr.name} has no branch computations")
        if selector.dtype == np.bool_:
            return ctx.call(true_c if bool(selector.reshape(())) else false_c, [operands[1]])
        branches = (true_c, false_c)
    if selector.dtype == np.bool_:
        # pred selector with branch_computations={true, false}
        index = 0 if bool(selector.reshape(())) else 1
    else:
        index = int(selector.reshape(()))
        if index < 0 or index >= len(branches):
            index = len(branches) - 1
    return ctx.call(branches[index], [operands[1 + index]])


@register("after-all")
def _after_all(instr, operands, ctx):
    return TOKEN


@register("opt-barrier", "domain")
def _identity(instr, operands, ctx):
    return operands[0]


@register("add-dependency")
def _add_dependency(instr, operands, ctx):
    return operands[0]


@register("replica-id", "partition-id")
def _replica_id(instr, operands, ctx):
    """This device's replica or partition number (0 on one device)."""
    device = ctx.device
    value = 0 if device is None else (device.replica if instr.opcode == "replica-id"
                                      else device.partition)
    return np.asarray(value, instr.shape.dtype)


# ----------------------------------------------------------------------------
# reduce
# ----------------------------------------------------------------------------

_SIMPLE_REDUCERS = {
    "add": np.add, "multiply": np.multiply, "maximum": np.maximum, "minimum": np.minimum,
    "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor,
}
_PRED_REDUCERS = {
    "add": np.logical_or, "multiply": np.logical_and, "maximum": np.logical_or,
    "minimum": np.logical_and, "and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor,
}


def simple_reducer(comp):
    """The opcode when ``comp`` is ``op(p0, p1)`` (either order) of a
    commutative op NumPy reduces directly, else None."""
    if comp is None or comp.num_parameters != 2:
        return None
    root = comp.root_instruction
    if root.opcode not in _SIMPLE_REDUCERS or len(root.operands) != 2:
        return None
    if not root.shape.is_array or root.shape.rank != 0:
        return None
    nums = sorted(o.parameter_number if o.opcode == "parameter" else -1 for o in root.operands)
    return root.opcode if nums == [0, 1] else None


def _fast_reduce(op, x, init, axes, dtype):
    if x.dtype == np.bool_:
        ufunc = _PRED_REDUCERS[op]
        return ufunc(ufunc.reduce(x, axis=axes), init)
    ufunc = _SIMPLE_REDUCERS[op]
    if is_int_dtype(dtype) and np.dtype(dtype).kind == "V":  # int1..uint4: in int64, wrapped
        acc = ufunc.reduce(x.astype(np.int64), axis=axes)
        return ufunc(acc, np.asarray(init).astype(np.int64)).astype(dtype)
    if _is_narrow_float(dtype):
        acc = ufunc.reduce(x.astype(np.float32), axis=axes)
        return ufunc(acc, init.astype(np.float32)).astype(dtype)
    return ufunc(ufunc.reduce(x, axis=axes, dtype=dtype), init).astype(dtype)


@register("reduce")
def _reduce(instr, operands, ctx):
    n = len(operands) // 2
    inputs = [np.asarray(o) for o in operands[:n]]
    inits = [np.asarray(o).reshape(()) for o in operands[n:]]
    axes = tuple(sorted(instr.attr("dimensions", ())))
    comp = instr.attr("to_apply")
    shape = inputs[0].shape
    kept = [d for d in range(len(shape)) if d not in axes]
    out_dims = tuple(shape[d] for d in kept)
    dtypes = [i.dtype for i in inits]
    reduced = int(np.prod([shape[d] for d in axes], dtype=np.int64))

    if reduced == 0:
        outs = [np.full(out_dims, init, dt) for init, dt in zip(inits, dtypes)]
        return outs[0] if n == 1 else tuple(outs)

    op = simple_reducer(comp) if n == 1 else None
    if op is not None:
        out = np.asarray(_fast_reduce(op, inputs[0], inits[0], axes, dtypes[0]))
        return np.asarray(out.reshape(out_dims), order="C")

    # Move the reduced dimensions last and flatten them: (kept..., K).
    values = [np.transpose(x, kept + list(axes)).reshape(out_dims + (reduced,)) for x in inputs]
    while values[0].shape[-1] > 1:
        k = values[0].shape[-1]
        lhs = [v[..., 0:k - 1:2] for v in values]
        rhs = [v[..., 1:k:2] for v in values]
        combined = _as_list(ctx.call_elementwise(comp, lhs + rhs))
        combined = [np.asarray(c, dt) for c, dt in zip(combined, dtypes)]
        if k % 2:
            combined = [np.concatenate([c, v[..., k - 1:]], axis=-1) for c, v in zip(combined, values)]
        values = combined
    values = [v[..., 0] for v in values]
    init_arrays = [np.broadcast_to(i, out_dims) for i in inits]
    outs = _as_list(ctx.call_elementwise(comp, init_arrays + values))
    outs = [np.asarray(np.broadcast_to(np.asarray(o, dt), out_dims), order="C") for o, dt in zip(outs, dtypes)]
    return outs[0] if n == 1 else tuple(outs)


def _as_list(value):
    if isinstance(value, (tuple, list)):
        return list(value)
    return [value]


def _zeros_like_shape(shape):
    if shape.is_tuple:
        return tuple(_zeros_like_shape(s) for s in shape.tuple_shapes)
    if shape.is_array:
        return np.zeros(shape.dimensions, shape.dtype)
    return TOKEN


@register("async-start")
def _async_start(instr, operands, ctx):
    # ((operands...), result, context...): the call runs at once.
    result = ctx.call(instr.attr("calls"), operands)
    rest = [_zeros_like_shape(s) for s in instr.shape.tuple_shapes[2:]]
    return (tuple(operands), result, *rest)


@register("async-update")
def _async_update(instr, operands, ctx):
    return operands[0]


@register("async-done")
def _async_done(instr, operands, ctx):
    return operands[0][1]


@register("copy-start")
def _copy_start(instr, operands, ctx):
    # (destination, source, context)
    rest = [_zeros_like_shape(s) for s in instr.shape.tuple_shapes[2:]]
    return (operands[0], operands[0], *rest)


@register("copy-done")
def _copy_done(instr, operands, ctx):
    return operands[0][0]
