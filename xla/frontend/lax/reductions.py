"""Reductions and sorts, as ``jax.lax``: ``reduce`` and ``reduce_window``
over one or several operands, ``sort`` of several operands on the first
``num_keys``, ``top_k``.

A reducer is a name ('add', 'max', ...), a NumPy ufunc, one of ``xla.lax``'s
binary functions (``lax.add``, ``lax.max``...), or a Python function
``(acc, x) -> acc`` of pytrees of scalars shaped like the operands (JAX's
convention), traced into a scalar computation; it cannot capture traced
values of the enclosing function."""
import numpy as np

from xla.errors import InvalidArgumentError, ShapeError
from xla.frontend.builder import element_type
from xla.frontend.lax.convolution import padding_pairs
from xla.frontend.lax.eager import eager
from xla.frontend.lax import primitives
from xla.frontend.lax.primitives import broadcasted_iota
from xla.frontend.lax.subcomputation import flatten_values, match, no_capture
from xla.frontend.trace_context import TraceContext, current_context
from xla.frontend.tracing import Tracer, as_tracer, convert
from xla.hlo.attributes import Window, WindowDimension
from xla.hlo.shape import Shape


_REDUCERS = {"add": "add", "sum": "add", "max": "maximum", "min": "minimum", "mul": "multiply",
             "maximum": "maximum", "minimum": "minimum", "multiply": "multiply",
             "and": "and", "or": "or",
             np.add: "add", np.maximum: "maximum", np.minimum: "minimum", np.multiply: "multiply",
             primitives.add: "add", primitives.max: "maximum", primitives.min: "minimum",
             primitives.mul: "multiply", primitives.bitwise_and: "and", primitives.bitwise_or: "or",
             primitives.bitwise_xor: "xor"}


def _named_reducer(computation):
    try:
        return _REDUCERS.get(computation)
    except TypeError:       # unhashable
        return None


def _reducer(computation, ops, treedef, what):
    """A reducer computation from a name/ufunc, or from a Python function
    ``computation(acc, value)`` of two pytrees of scalars shaped like the
    operands (JAX's convention)."""
    b = current_context().builder
    dtypes = [o.dtype for o in ops]
    named = _named_reducer(computation)
    if named is not None:
        if len(dtypes) != 1:
            raise InvalidArgumentError(f"{what}: a named reducer ({computation!r}) takes one "
                                       "operand; pass a function for several")
        return b.scalar_computation(named, element_type(dtypes[0]))
    if isinstance(computation, str):
        raise InvalidArgumentError(f"{what}: unknown reducer {computation!r}; use one of "
                                   "'add', 'mul', 'max', 'min', 'and', 'or' or a function")
    sub = b.sub_builder("reducer")
    n = len(dtypes)
    params = [sub.parameter(i, Shape.scalar(element_type(dtypes[i % n])), f"p{i}")
              for i in range(2 * n)]
    with TraceContext(sub, current_context(), no_capture(f"the {what} computation")):
        accs = [Tracer(p) for p in params[:n]]
        vals = [Tracer(p) for p in params[n:]]
        out = computation(treedef.unflatten(accs), treedef.unflatten(vals))
        outs = match(f"{what} computation output", treedef, accs, out)
        root = outs[0].op if n == 1 else sub.tuple([o.op for o in outs])
    return sub.build(root)


def _operands_and_inits(operands, init_values, what):
    ops, treedef = flatten_values(operands, f"{what} operands")
    inits, init_treedef = flatten_values(init_values, f"{what} init_values")
    if init_treedef != treedef:
        raise ShapeError((
            f"{what}: init_values have structure {init_treedef}, operands {treedef}"))
    for i, v in enumerate(inits):
        if v.shape != ():
            raise ShapeError((
                f"{what}: init value {i} must be a scalar, has shape {v.shape}"))
    return ops, [convert(v, o.dtype) for v, o in zip(inits, ops)], treedef


def _unpack(b, out, n, treedef):
    if n == 1:
        return treedef.unflatten([Tracer(out)])
    return treedef.unflatten([Tracer(b.get_tuple_element(out, i)) for i in range(n)])


@eager
def reduce(operands, init_values, computation, dimensions):
    """Reduces ``operands`` (an array or a pytree of same-shaped arrays) over
    ``dimensions`` with ``computation``: a name ('add', 'max', ...), a NumPy
    ufunc, or a function ``(acc, x) -> acc`` of pytrees of scalars."""
    ops, inits, treedef = _operands_and_inits(operands, init_values, "reduce")
    comp = _reducer(computation, ops, treedef, "reduce")
    b = current_context().builder
    out = b.reduce([o.op for o in ops], [i.op for i in inits], comp,
                   tuple(d % ops[0].ndim for d in dimensions))
    return _unpack(b, out, len(ops), treedef)


@eager
def reduce_window(operand, init_value, computation, window_dimensions, window_strides=None,
                  padding="VALID", base_dilation=None, window_dilation=None):
    """Reduces each window of ``operand`` (an array or a pytree of arrays):
    pooling. ``padding`` is 'SAME', 'VALID' or one (low, high) pair per dimension."""
    ops, inits, treedef = _operands_and_inits(operand, init_value, "reduce_window")
    x = ops[0]
    nd = x.ndim
    window_dimensions = list(window_dimensions)
    strides = list(window_strides or [1] * nd)
    bd = list(base_dilation or [1] * nd)
    wd = list(window_dilation or [1] * nd)
    for name, v in (("window_dimensions", window_dimensions), ("window_strides", strides),
                    ("base_dilation", bd), ("window_dilation", wd)):
        if len(v) != nd:
            raise ShapeError((
                f"reduce_window: {name} has {len(v)} entries for an operand of rank {nd}"))
    if isinstance(padding, str):
        dilated = [(d - 1) * l + 1 for d, l in zip(x.shape, bd)]
        pads = padding_pairs(padding, dilated, window_dimensions, strides, wd)
    else:
        pads = padding_pairs(padding, x.shape, window_dimensions, strides)
    window = Window([WindowDimension(size=w, stride=s, padding_low=lo, padding_high=hi,
                                     window_dilation=d2, base_dilation=d1)
                     for w, s, (lo, hi), d1, d2 in zip(window_dimensions, strides, pads, bd, wd)])
    comp = _reducer(computation, ops, treedef, "reduce_window")
    b = current_context().builder
    out = b.reduce_window([o.op for o in ops], [i.op for i in inits], comp, window)
    return _unpack(b, out, len(ops), treedef)


@eager
def sort(operand, dimension=-1, is_stable=True, num_keys=1):
    """Sorts one array or a sequence of same-shaped arrays along
    ``dimension``, lexicographically on the first ``num_keys`` (the others
    follow); floats in NumPy's order, NaNs last."""
    return _sort(operand, dimension, is_stable, num_keys, descending=False)


def _sort(operand, dimension, is_stable, num_keys, descending):
    single = not isinstance(operand, (tuple, list))
    ops = [as_tracer(o) for o in ([operand] if single else operand)]
    if not 1 <= num_keys <= len(ops):
        raise InvalidArgumentError(f"sort: num_keys={num_keys} with {len(ops)} operands")
    for i, o in enumerate(ops[1:], 1):
        if o.shape != ops[0].shape:
            raise ShapeError((
                f"sort: operand {i} has shape {o.shape}, operand 0 {ops[0].shape}"))
    nd = ops[0].ndim
    dim = dimension % nd if nd else 0
    b = current_context().builder
    comp = _comparator(b, [o.dtype for o in ops], num_keys, descending)
    out = b.sort([o.op for o in ops], comp, dim, is_stable)
    if single:
        return Tracer(out)
    return tuple(Tracer(b.get_tuple_element(out, i)) for i in range(len(ops)))


def _comparator(b, dtypes, num_keys, descending=False):
    """Lexicographic less-than (greater-than when ``descending``) on the first
    ``num_keys`` operands; floats in NumPy's order (NaNs last, or first when
    descending)."""
    sub = b.sub_builder("compare")
    params = []
    for i, dt in enumerate(dtypes):
        params.append(sub.parameter(2 * i, Shape.scalar(element_type(dt)), f"lhs{i}"))
        params.append(sub.parameter(2 * i + 1, Shape.scalar(element_type(dt)), f"rhs{i}"))
    result = None
    for k in reversed(range(num_keys)):
        lhs, rhs = params[2 * k], params[2 * k + 1]
        if descending:
            lhs, rhs = rhs, lhs
        kind = np.dtype(dtypes[k]).kind
        if kind == "c":
            raise InvalidArgumentError("sort: complex keys are not supported")
        if kind == "f":
            lt = _float_less(sub, lhs, rhs)
            eq = sub.binary("and", sub.unary("not", lt), sub.unary("not", _float_less(sub, rhs, lhs)))
        else:
            ctype = "UNSIGNED" if kind in "ub" else "SIGNED"
            lt = sub.compare(lhs, rhs, "LT", ctype)
            eq = sub.compare(lhs, rhs, "EQ", ctype)
        result = lt if result is None else sub.binary("or", lt, sub.binary("and", eq, result))
    return sub.build(result)


def _float_less(sub, a, b):
    """a < b with NaN greater than everything (and equal to NaN)."""
    a_nan = sub.compare(a, a, "NE")
    b_nan = sub.compare(b, b, "NE")
    lt = sub.compare(a, b, "LT")
    false = sub.compare(a_nan, a_nan, "NE")
    return sub.select(a_nan, false, sub.binary("or", lt, b_nan))


@eager
def top_k(operand, k):
    """The ``k`` largest entries of the last axis, largest first, and their
    indices (ties: the lower index first; NaN counts as the largest)."""
    x = as_tracer(operand)
    if not 0 <= int(k) <= x.shape[-1]:
        raise InvalidArgumentError(f"top_k: k={k} for a last axis of size {x.shape[-1]}")
    idx = broadcasted_iota(np.int32, x.shape, x.ndim - 1)
    vals, ids = _sort((x, idx), -1, True, 1, descending=True)
    return vals[..., :int(k)], ids[..., :int(k)]


