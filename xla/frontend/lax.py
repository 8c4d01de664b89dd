"""``xla.lax``: structured control flow and XLA primitives for traced code.

What NumPy has no words for: loops and branches on traced values
(``while_loop``, ``fori_loop``, ``cond``, ``switch``, ``scan``) and XLA's
own operations (``dot_general``, ``conv_general_dilated``,
``reduce_window``, ``dynamic_slice``, ``sort`` of several operands...). The
names, signatures and semantics are JAX's ``jax.lax``.

Loop bodies, branches and reducers are Python functions traced into
sub-computations. A body may use traced values of the enclosing function
(closures): each such value is *captured* — passed into the loop or branch
as an extra element of its state tuple and through unchanged — so what the
user wrote as a closure becomes plain HLO data flow.

Loops whose trip count is known while tracing (``fori_loop`` with Python
bounds, ``scan``) record it on the while instruction as XLA does
(``backend_config={"known_trip_count":{"n":"N"}}``); reverse-mode
differentiation of a loop needs it (``xla.frontend.autodiff``).
"""
import numpy as np

from xla.errors import InvalidArgumentError, ShapeError
from xla.frontend import pytree, tracing
from xla.frontend.builder import element_type
from xla.frontend.tracing import (Tracer, TraceContext, as_tracer, convert, current_context,
                                  tracing_error)
from xla.hlo.attributes import ConvDimensionNumbers, RawAttr, Window, WindowDimension
from xla.hlo.shape import Shape


# ----- tracing a Python function into a sub-computation ------------------------------

class _SharedState:
    """The state tuple of a loop (or the operand tuple of branches) shared by
    several sub-computations: fixed leading elements, then captured values,
    appended as tracing finds them (every sub-computation's parameter grows)."""

    def __init__(self, outer_ctx, fixed_shapes):
        self.outer = outer_ctx
        self.shapes = list(fixed_shapes)
        self.n_fixed = len(fixed_shapes)
        self.captured = []          # outer Tracers, in state order
        self.index_of = {}          # id(outer instr) -> state index
        self.params = []            # parameter XlaOps of every sub-computation

    def tuple_shape(self):
        return Shape.tuple(self.shapes)

    def new_param(self, sub):
        p = sub.parameter(0, self.tuple_shape(), "state")
        self.params.append(p)
        return p

    def capture_into(self, sub, param):
        def capture(outer):
            key = id(outer.op.instr)
            if key not in self.index_of:
                self.index_of[key] = len(self.shapes)
                self.shapes.append(outer.op.shape)
                self.captured.append(outer)
                for p in self.params:
                    p.instr.shape = self.tuple_shape()
            return Tracer(sub.get_tuple_element(param, self.index_of[key]), weak=outer.weak)
        return capture


def _leaf_tracers(sub, param, shared, treedef, weak_flags):
    leaves = [Tracer(sub.get_tuple_element(param, i), weak=w) for i, w in
              zip(range(shared.n_fixed), weak_flags)]
    return treedef.unflatten(leaves)


def _flatten_values(tree, what):
    leaves, treedef = pytree.flatten(tree)
    tracers = []
    for i, leaf in enumerate(leaves):
        try:
            tracers.append(as_tracer(leaf))
        except Exception:
            raise tracing_error(f"{what}: leaf {i} is a {type(leaf).__name__}, not an array") from None
    return tracers, treedef


def _describe(treedef, tracers):
    return f"{treedef} with " + ", ".join(f"{t.dtype}{list(t.shape)}" for t in tracers)


def _match(what, expected_treedef, expected, got_tree):
    """Flattens ``got_tree`` and converts it to the expected leaf types; a
    clear ShapeError names the first difference."""
    got, treedef = _flatten_values(got_tree, what)
    if treedef != expected_treedef:
        raise ShapeError(tracing.located(
            f"{what} has structure {treedef}, expected {expected_treedef}"))
    out = []
    for i, (e, g) in enumerate(zip(expected, got)):
        if g.shape != e.shape:
            raise ShapeError(tracing.located(
                f"{what}: leaf {i} has shape {g.dtype}{list(g.shape)}, expected {e.dtype}{list(e.shape)}"))
        if g.dtype != e.dtype:
            if g.weak:
                g = convert(g, e.dtype)
            else:
                raise ShapeError(tracing.located(
                    f"{what}: leaf {i} has dtype {g.dtype}, expected {e.dtype} (convert it with "
                    ".astype)"))
        out.append(g)
    return out


def _set_trip_count(op, n):
    op.instr.attrs["backend_config"] = RawAttr('{"known_trip_count":{"n":"%d"}}' % n)


# ----- loops ------------------------------------------------------------------------------

def while_loop(cond_fun, body_fun, init_val, *, _trip_count=None):
    """``while cond_fun(val): val = body_fun(val)``; ``val`` a pytree of arrays."""
    ctx = current_context()
    b = ctx.builder
    init, treedef = _flatten_values(init_val, "while_loop init_val")
    # The carry has concrete types: a weak Python scalar becomes its default dtype.
    weak_flags = [False] * len(init)
    shared = _SharedState(ctx, [t.op.shape for t in init])
    cond_b, body_b = b.sub_builder("while_cond"), b.sub_builder("while_body")
    cond_p, body_p = shared.new_param(cond_b), shared.new_param(body_b)

    with TraceContext(cond_b, ctx, shared.capture_into(cond_b, cond_p)):
        pred = cond_fun(_leaf_tracers(cond_b, cond_p, shared, treedef, weak_flags))
        pred = as_tracer(pred)
        if pred.shape != () or pred.dtype != np.bool_:
            raise ShapeError(tracing.located(
                f"while_loop cond_fun must return a boolean scalar, got {pred.dtype}{list(pred.shape)}"))
    with TraceContext(body_b, ctx, shared.capture_into(body_b, body_p)):
        new = body_fun(_leaf_tracers(body_b, body_p, shared, treedef, weak_flags))
        new = _match("while_loop body_fun output", treedef, init, new)
        passthrough = [body_b.get_tuple_element(body_p, i)
                       for i in range(shared.n_fixed, len(shared.shapes))]
        body_root = body_b.tuple([t.op for t in new] + passthrough)
    cond_comp = cond_b.build(pred.op)
    body_comp = body_b.build(body_root)
    operands = [t.op for t in init] + [as_tracer(c).op for c in shared.captured]
    loop = b.while_loop(cond_comp, body_comp, b.tuple(operands))
    if _trip_count is not None:
        _set_trip_count(loop, _trip_count)
    return treedef.unflatten([Tracer(b.get_tuple_element(loop, i)) for i in range(len(init))])


def fori_loop(lower, upper, body_fun, init_val):
    """``for i in range(lower, upper): val = body_fun(i, val)``; ``i`` is an int32
    scalar (the bounds' dtype if they are traced)."""
    static = all(isinstance(v, (int, np.integer)) for v in (lower, upper))
    if static:
        lo, hi = int(lower), int(upper)
        trip = max(hi - lo, 0)
        index_dtype = np.int32
    else:
        trip = None
        index_dtype = tracing.result_type(lower, upper)
        if index_dtype.kind not in "iu":
            raise tracing_error(f"fori_loop bounds must be integers, got {index_dtype}")
    lo_t = as_tracer(np.asarray(lower, index_dtype) if not isinstance(lower, Tracer) else lower)
    hi_t = as_tracer(np.asarray(upper, index_dtype) if not isinstance(upper, Tracer) else upper)
    lo_t, hi_t = convert(lo_t, index_dtype), convert(hi_t, index_dtype)

    def cond(state):
        i, _ = state
        return i < hi_t

    def body(state):
        i, val = state
        return (i + np.asarray(1, index_dtype), body_fun(i, val))

    _, out = while_loop(cond, body, (lo_t, init_val), _trip_count=trip)
    return out


def scan(f, init, xs=None, length=None, reverse=False, unroll=1):
    """``carry, y = f(carry, x)`` over the leading axis of ``xs``; returns
    ``(carry, stacked ys)``, as ``jax.lax.scan``."""
    x_leaves, x_treedef = pytree.flatten(xs)
    x_ts = [as_tracer(x) for x in x_leaves]
    lengths = {t.shape[0] for t in x_ts if t.ndim}
    if any(t.ndim == 0 for t in x_ts):
        raise ShapeError(tracing.located("scan: every leaf of xs needs a leading axis"))
    if length is not None:
        lengths.add(int(length))
    if len(lengths) != 1:
        raise ShapeError(tracing.located(
            f"scan: xs leaves and length disagree on the number of steps: {sorted(lengths)}"
            if lengths else "scan: give xs or length"))
    n = lengths.pop()
    init_ts, carry_treedef = _flatten_values(init, "scan init")

    def x_at(i):
        return x_treedef.unflatten([dynamic_index_in_dim(t, i, keepdims=False) for t in x_ts])

    # The shapes of y: trace f once in a throwaway computation.
    ctx = current_context()
    probe = ctx.builder.sub_builder("scan_probe")

    def probe_capture(outer):
        return Tracer(probe.parameter(len(probe._parameters), outer.op.shape, "c"), weak=outer.weak)

    with TraceContext(probe, ctx, probe_capture):
        carry_p = [Tracer(probe.parameter(len(probe._parameters), t.op.shape, "carry")) for t in init_ts]
        x_p = [Tracer(probe.parameter(len(probe._parameters),
                                      Shape.array(t.op.element_type, t.shape[1:]), "x")) for t in x_ts]
        _, y_probe = f(carry_treedef.unflatten(carry_p), x_treedef.unflatten(x_p))
        y_leaves, y_treedef = _flatten_values(y_probe, "scan f output y")
        y_specs = [(t.shape, t.dtype) for t in y_leaves]
    ys0 = [tracing.full((n,) + shape, 0, dtype) for shape, dtype in y_specs]

    def body(i, state):
        carry, ys = state
        idx = (n - 1 - i) if reverse else i
        new_carry, y = f(carry, x_at(idx))
        new_carry = carry_treedef.unflatten(_match("scan f output carry", carry_treedef, init_ts,
                                                   new_carry))
        y_ts = _match("scan f output y", y_treedef, [_Spec(s, d) for s, d in y_specs], y)
        ys = [dynamic_update_index_in_dim(acc, t, idx) for acc, t in zip(ys, y_ts)]
        return new_carry, ys

    carry, ys = fori_loop(0, n, body, (carry_treedef.unflatten(init_ts), ys0))
    return carry, y_treedef.unflatten(ys)


class _Spec:
    def __init__(self, shape, dtype):
        self.shape, self.dtype, self.weak = shape, np.dtype(dtype), False


# ----- branches -----------------------------------------------------------------------

def _branches(index_op, branch_funs, operands, what):
    ctx = current_context()
    b = ctx.builder
    ops, op_treedef = _flatten_values(tuple(operands), f"{what} operands")
    shared = _SharedState(ctx, [t.op.shape for t in ops])
    subs = [b.sub_builder(f"{what}_branch{k}") for k in range(len(branch_funs))]
    params = [shared.new_param(s) for s in subs]
    results = []
    for k, (fn, sub, p) in enumerate(zip(branch_funs, subs, params)):
        with TraceContext(sub, ctx, shared.capture_into(sub, p)):
            args = op_treedef.unflatten([Tracer(sub.get_tuple_element(p, i), weak=t.weak)
                                         for i, t in enumerate(ops)])
            out = fn(*args)
            leaves, treedef = _flatten_values(out, f"{what} branch {k} output")
            results.append((sub, leaves, treedef))
    first_treedef, first = results[0][2], results[0][1]
    comps = []
    for k, (sub, leaves, treedef) in enumerate(results):
        if k:
            with TraceContext(sub, ctx, shared.capture_into(sub, params[k])):
                leaves = _match(f"{what} branch {k} output (branch 0 returned "
                                f"{_describe(first_treedef, first)})", first_treedef, first,
                                treedef.unflatten(leaves))
        else:
            with TraceContext(sub, ctx, shared.capture_into(sub, params[k])):
                leaves = [convert(t, t.dtype) for t in leaves]
        comps.append((sub, leaves))
    built = [sub.build(sub.tuple([t.op for t in leaves])) for sub, leaves in comps]
    operand = b.tuple([t.op for t in ops] + [as_tracer(c).op for c in shared.captured])
    out = b.conditional(index_op, built, [operand] * len(built))
    return first_treedef.unflatten([Tracer(b.get_tuple_element(out, i)) for i in range(len(first))])


def cond(pred, true_fun, false_fun, *operands):
    """``true_fun(*operands) if pred else false_fun(*operands)``, both traced."""
    if not isinstance(pred, Tracer):
        return true_fun(*operands) if bool(np.asarray(pred)) else false_fun(*operands)
    if pred.shape != ():
        raise ShapeError(tracing.located(f"cond: pred must be a scalar, got shape {pred.shape}"))
    p = convert(pred, np.bool_)
    return _branches(p.op, [true_fun, false_fun], operands, "cond")


def switch(index, branches, *operands):
    """``branches[clamp(index, 0, len-1)](*operands)``, as ``jax.lax.switch``."""
    branches = list(branches)
    if not branches:
        raise InvalidArgumentError("switch needs at least one branch")
    if not isinstance(index, Tracer):
        k = int(np.clip(int(index), 0, len(branches) - 1))
        return branches[k](*operands)
    if index.shape != () or index.dtype.kind not in "iu":
        raise ShapeError(tracing.located(f"switch: index must be an integer scalar, got "
                                         f"{index.dtype}{list(index.shape)}"))
    i = convert(index, np.int32)
    i = np.clip(i, 0, len(branches) - 1)
    return _branches(i.op, branches, operands, "switch")


# ----- primitives -------------------------------------------------------------------------

def dot_general(lhs, rhs, dimension_numbers, precision=None, preferred_element_type=None):
    """``dimension_numbers = ((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch))``."""
    (lc, rc), (lb, rb) = dimension_numbers
    lhs, rhs = as_tracer(lhs), as_tracer(rhs)
    dt = tracing.result_type(lhs, rhs)
    lhs, rhs = convert(lhs, dt), convert(rhs, dt)
    b = current_context().builder
    return Tracer(b.dot_general(lhs.op, rhs.op, tuple(lc), tuple(rc), tuple(lb), tuple(rb),
                                preferred_element_type))


def _padding_pairs(padding, in_dims, window, strides, dilation=None):
    if isinstance(padding, str):
        mode = padding.upper()
        if mode == "VALID":
            return [(0, 0)] * len(in_dims)
        if mode in ("SAME", "SAME_LOWER"):
            out = []
            for d, w, s, dl in zip(in_dims, window, strides, dilation or [1] * len(window)):
                eff = (w - 1) * dl + 1
                o = -(-d // s)
                total = max((o - 1) * s + eff - d, 0)
                lo = total // 2 if mode == "SAME" else total - total // 2
                out.append((lo, total - lo))
            return out
        raise InvalidArgumentError(f"unknown padding {padding!r}: use 'SAME', 'VALID' or pairs")
    return [tuple(int(v) for v in p) for p in padding]


def conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=None, rhs_dilation=None,
                         dimension_numbers=None, feature_group_count=1, batch_group_count=1,
                         precision=None, preferred_element_type=None):
    """N-d convolution as ``jax.lax.conv_general_dilated``;
    ``dimension_numbers`` like ``('NCHW', 'OIHW', 'NCHW')`` (the default)."""
    lhs, rhs = as_tracer(lhs), as_tracer(rhs)
    dt = tracing.result_type(lhs, rhs)
    lhs, rhs = convert(lhs, dt), convert(rhs, dt)
    nsp = lhs.ndim - 2
    if dimension_numbers is None:
        spatial = "".join("DHW"[-nsp:]) if nsp <= 3 else None
        dimension_numbers = ("NC" + spatial, "OI" + spatial, "NC" + spatial)
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    dnums = _conv_dnums(lhs_spec, rhs_spec, out_spec)
    strides = list(window_strides)
    lhs_dil = list(lhs_dilation or [1] * nsp)
    rhs_dil = list(rhs_dilation or [1] * nsp)
    in_sp = [lhs.shape[d] for d in dnums.input_spatial_dimensions]
    k_sp = [rhs.shape[d] for d in dnums.kernel_spatial_dimensions]
    if isinstance(padding, str):
        dilated_in = [(d - 1) * l + 1 for d, l in zip(in_sp, lhs_dil)]
        pads = _padding_pairs(padding, dilated_in, k_sp, strides, rhs_dil)
    else:
        pads = _padding_pairs(padding, in_sp, k_sp, strides)
    window = Window([WindowDimension(size=k, stride=s, padding_low=lo, padding_high=hi,
                                     window_dilation=rd, base_dilation=ld)
                     for k, s, (lo, hi), rd, ld in zip(k_sp, strides, pads, rhs_dil, lhs_dil)])
    b = current_context().builder
    return Tracer(b.convolution(lhs.op, rhs.op, window, dnums, feature_group_count,
                                batch_group_count, preferred_element_type))


def _conv_dnums(lhs_spec, rhs_spec, out_spec):
    def spatial(spec, skip):
        return [i for i, c in enumerate(spec) if c not in skip]
    # Spatial dims are matched by their order in the spec strings.
    return ConvDimensionNumbers(
        lhs_spec.index("N"), lhs_spec.index("C"), spatial(lhs_spec, "NC"),
        rhs_spec.index("I"), rhs_spec.index("O"), spatial(rhs_spec, "IO"),
        out_spec.index("N"), out_spec.index("C"), spatial(out_spec, "NC"))


_REDUCERS = {"add": "add", "sum": "add", "max": "maximum", "min": "minimum", "mul": "multiply",
             "maximum": "maximum", "minimum": "minimum", "multiply": "multiply",
             "and": "and", "or": "or",
             np.add: "add", np.maximum: "maximum", np.minimum: "minimum", np.multiply: "multiply"}


def _reducer(computation, dtypes):
    """A reducer computation from a name/ufunc or a Python function of
    (accumulators..., values...)."""
    b = current_context().builder
    if isinstance(computation, str) or computation in _REDUCERS:
        if len(dtypes) != 1:
            raise InvalidArgumentError("a named reducer takes one operand")
        return b.scalar_computation(_REDUCERS[computation], element_type(dtypes[0]))
    sub = b.sub_builder("reducer")
    n = len(dtypes)
    params = [sub.parameter(i, Shape.scalar(element_type(dtypes[i % n])), f"p{i}")
              for i in range(2 * n)]
    ctx = current_context()
    with TraceContext(sub, ctx, None):
        accs = [Tracer(p) for p in params[:n]]
        vals = [Tracer(p) for p in params[n:]]
        out = computation(*accs, *vals) if n > 1 else computation(accs[0], vals[0])
        outs = list(out) if isinstance(out, (tuple, list)) else [out]
        outs = [convert(as_tracer(o), dt) for o, dt in zip(outs, dtypes)]
        root = outs[0].op if n == 1 else sub.tuple([o.op for o in outs])
    return sub.build(root)


def reduce(operands, init_values, computation, dimensions):
    """Variadic reduce with a Python (or named) reducer."""
    single = not isinstance(operands, (tuple, list))
    ops = [as_tracer(o) for o in ([operands] if single else operands)]
    inits = [convert(as_tracer(v), o.dtype) for v, o in
             zip([init_values] if single else init_values, ops)]
    comp = _reducer(computation, [o.dtype for o in ops])
    b = current_context().builder
    out = b.reduce([o.op for o in ops], [i.op for i in inits], comp, tuple(dimensions))
    if single:
        return Tracer(out)
    return tuple(Tracer(b.get_tuple_element(out, i)) for i in range(len(ops)))


def reduce_window(operand, init_value, computation, window_dimensions, window_strides=None,
                  padding="VALID", base_dilation=None, window_dilation=None):
    x = as_tracer(operand)
    init = convert(as_tracer(init_value), x.dtype)
    nd = x.ndim
    strides = list(window_strides or [1] * nd)
    bd = list(base_dilation or [1] * nd)
    wd = list(window_dilation or [1] * nd)
    if isinstance(padding, str):
        dilated = [(d - 1) * l + 1 for d, l in zip(x.shape, bd)]
        pads = _padding_pairs(padding, dilated, window_dimensions, strides, wd)
    else:
        pads = _padding_pairs(padding, x.shape, window_dimensions, strides)
    window = Window([WindowDimension(size=w, stride=s, padding_low=lo, padding_high=hi,
                                     window_dilation=d2, base_dilation=d1)
                     for w, s, (lo, hi), d1, d2 in zip(window_dimensions, strides, pads, bd, wd)])
    comp = _reducer(computation, [x.dtype])
    b = current_context().builder
    return Tracer(b.reduce_window(x.op, init.op, comp, window))


def _index_ops(b, indices, n):
    indices = list(indices)
    if len(indices) != n:
        raise ShapeError(tracing.located(f"expected {n} start indices, got {len(indices)}"))
    ts = [as_tracer(i) for i in indices]
    dt = np.result_type(*[t.dtype for t in ts]) if ts else np.int32
    if dt.kind not in "iu":
        raise ShapeError(tracing.located(f"start indices must be integers, got {dt}"))
    return [convert(t, np.int32).op for t in ts]


def dynamic_slice(operand, start_indices, slice_sizes):
    """XLA dynamic-slice: start indices are clamped so the slice fits."""
    x = as_tracer(operand)
    b = current_context().builder
    return Tracer(b.dynamic_slice(x.op, _index_ops(b, start_indices, x.ndim), tuple(slice_sizes)))


def dynamic_update_slice(operand, update, start_indices):
    x = as_tracer(operand)
    u = convert(as_tracer(update), x.dtype)
    b = current_context().builder
    return Tracer(b.dynamic_update_slice(x.op, u.op, _index_ops(b, start_indices, x.ndim)))


def dynamic_index_in_dim(operand, index, axis=0, keepdims=True):
    x = as_tracer(operand)
    starts = [0] * x.ndim
    starts[axis] = index
    sizes = list(x.shape)
    sizes[axis] = 1
    out = dynamic_slice(x, starts, sizes)
    if not keepdims:
        out = reshape(out, x.shape[:axis] + x.shape[axis + 1:])
    return out


def dynamic_update_index_in_dim(operand, update, index, axis=0):
    x = as_tracer(operand)
    u = as_tracer(update)
    if u.ndim == x.ndim - 1:
        u = reshape(u, u.shape[:axis] + (1,) + u.shape[axis:])
    starts = [0] * x.ndim
    starts[axis] = index
    return dynamic_update_slice(x, u, starts)


def sort(operand, dimension=-1, is_stable=True, num_keys=1):
    """Sorts one array or a sequence of arrays (lexicographically on the
    first ``num_keys``; the others follow) along ``dimension``."""
    single = not isinstance(operand, (tuple, list))
    ops = [as_tracer(o) for o in ([operand] if single else operand)]
    nd = ops[0].ndim
    dim = dimension % nd if nd else 0
    b = current_context().builder
    comp = _comparator(b, [o.dtype for o in ops], num_keys)
    out = b.sort([o.op for o in ops], comp, dim, is_stable)
    if single:
        return Tracer(out)
    return tuple(Tracer(b.get_tuple_element(out, i)) for i in range(len(ops)))


def _comparator(b, dtypes, num_keys):
    """Lexicographic less-than on the first ``num_keys`` operands; floats in
    NumPy's order (NaNs last)."""
    sub = b.sub_builder("compare")
    params = []
    for i, dt in enumerate(dtypes):
        params.append(sub.parameter(2 * i, Shape.scalar(element_type(dt)), f"lhs{i}"))
        params.append(sub.parameter(2 * i + 1, Shape.scalar(element_type(dt)), f"rhs{i}"))
    result = None
    for k in reversed(range(num_keys)):
        lhs, rhs = params[2 * k], params[2 * k + 1]
        kind = np.dtype(dtypes[k]).kind
        ctype = "TOTALORDER" if kind == "f" else ("UNSIGNED" if kind in "ub" else "SIGNED")
        if kind == "f":
            # NaN sorts after everything (NumPy), else the ordinary order.
            lt = _float_less(sub, lhs, rhs)
            eq = sub.binary("and", sub.unary("not", _float_less(sub, lhs, rhs)),
                            sub.unary("not", _float_less(sub, rhs, lhs)))
        else:
            lt = sub.compare(lhs, rhs, "LT", ctype)
            eq = sub.compare(lhs, rhs, "EQ", ctype)
        result = lt if result is None else sub.binary("or", lt, sub.binary("and", eq, result))
    return sub.build(result)


def _float_less(sub, a, b):
    a_nan = sub.compare(a, a, "NE")
    b_nan = sub.compare(b, b, "NE")
    lt = sub.compare(a, b, "LT")
    return sub.select(a_nan, sub.compare(a_nan, a_nan, "NE"), sub.binary("or", lt, b_nan))


def select(pred, on_true, on_false):
    return np.where(pred, on_true, on_false)


def clamp(min, x, max):
    return np.clip(x, min, max)


def broadcast_in_dim(operand, shape, broadcast_dimensions):
    x = as_tracer(operand)
    b = current_context().builder
    return Tracer(b.broadcast_in_dim(x.op, tuple(shape), tuple(broadcast_dimensions)))


def reshape(operand, new_sizes):
    x = as_tracer(operand)
    if tuple(new_sizes) == x.shape:
        return x
    return Tracer(current_context().builder.reshape(x.op, tuple(new_sizes)))


def transpose(operand, permutation):
    return np.transpose(as_tracer(operand), permutation)


def iota(dtype, size):
    b = current_context().builder
    return Tracer(b.iota(np.dtype(dtype), (int(size),), 0))


def convert_element_type(operand, new_dtype):
    return convert(as_tracer(operand), np.dtype(new_dtype))


def top_k(operand, k):
    """The ``k`` largest entries of the last axis and their indices."""
    x = as_tracer(operand)
    idx = broadcasted_iota(np.int32, x.shape, x.ndim - 1)
    neg = np.negative(x) if x.dtype.kind == "f" else x
    if x.dtype.kind == "f":
        vals, ids = sort((neg, idx), dimension=-1, num_keys=1)
        vals = np.negative(vals)
    else:
        vals, ids = sort((x, idx), dimension=-1, num_keys=1)
        vals, ids = vals[..., ::-1], ids[..., ::-1]
    return vals[..., :k], ids[..., :k]


def broadcasted_iota(dtype, shape, dimension):
    b = current_context().builder
    return Tracer(b.iota(np.dtype(dtype), tuple(shape), dimension))
