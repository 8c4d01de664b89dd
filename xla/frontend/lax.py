"""``xla.lax``: structured control flow and XLA primitives for traced code.

What NumPy has no words for: loops and branches on traced values
(``while_loop``, ``fori_loop``, ``cond``, ``switch``, ``scan``) and XLA's
own operations (``dot_general``, ``conv_general_dilated``,
``reduce_window``, ``dynamic_slice``, ``sort`` of several operands...). The
names, signatures and semantics are JAX's ``jax.lax``.

Loop bodies, branches and reducers are Python functions traced into
sub-computations, over pytrees (``xla.frontend.pytree``) of arrays. A body
may use traced values of the enclosing function (closures): each such value
is *captured* — passed into the loop or branch as an extra element of its
state tuple and through unchanged — so what the user wrote as a closure
becomes plain HLO data flow. Reducers and sort comparators are scalar
computations and cannot capture.

Dtypes follow JAX's weak typing: a Python scalar in a loop carry is weak, and
when the body turns it into another dtype (``0.0`` plus a float32 value) the
carry takes that dtype and the body is traced again; branches of ``cond`` /
``switch`` that differ only in weak leaves are joined the same way. Any other
difference in structure, shape or dtype is a ShapeError naming the leaf.

Loops whose trip count is known while tracing (``fori_loop`` with Python
bounds, ``scan``) record it on the while instruction as XLA does
(``backend_config={"known_trip_count":{"n":"N"}}``); reverse-mode
differentiation of a loop needs it (``xla.frontend.autodiff``).

Called outside a trace, every function here runs as a small ``xla.jit``
program (on the default platform): NumPy arrays are its arguments, everything else (Python
scalars, shapes, functions) is static.
"""
import functools

import numpy as np

from xla.errors import InvalidArgumentError, ShapeError
from xla.frontend import pytree, tracing
from xla.frontend.builder import element_type
from xla.frontend.tracing import (Tracer, TraceContext, as_tracer, convert, current_context,
                                  tracing_error)
from xla.hlo.attributes import ConvDimensionNumbers, RawAttr, Window, WindowDimension
from xla.hlo.shape import Shape


# ----- outside a trace: run as a small jitted program ----------------------------------

class _Static:
    """A static argument leaf as a jit cache key: by value when hashable,
    else by identity (the leaf is kept alive, so its id is not reused)."""

    __slots__ = ("value", "key")

    def __init__(self, value):
        try:
            hash(value)
            self.key = (type(value), value)
        except TypeError:
            self.key = ("id", id(value))
        self.value = value

    def __eq__(self, other):
        return isinstance(other, _Static) and self.key == other.key

    def __hash__(self):
        return hash(self.key)


_EAGER = {}


def _eager(fn):
    """``fn`` as is inside a trace; outside one, compiled and run with the
    NumPy array leaves of its arguments as the jitted function's arguments."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if current_context(required=False) is not None:
            return fn(*args, **kwargs)
        leaves, treedef = pytree.flatten((args, kwargs))
        dynamic = [isinstance(x, (np.ndarray, np.generic)) for x in leaves]
        arrays = tuple(x for x, d in zip(leaves, dynamic) if d)
        statics = tuple(None if d else _Static(x) for x, d in zip(leaves, dynamic))
        runner = _EAGER.get(fn)
        if runner is None:
            jit = tracing.table("jit")

            def run(arrays, statics, treedef):
                it = iter(arrays)
                a, kw = treedef.unflatten([next(it) if s is None else s.value for s in statics])
                return fn(*a, **kw)
            runner = _EAGER[fn] = jit(run, static_argnums=(1, 2))
        return runner(arrays, statics, treedef)
    return wrapper


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


def _no_capture(what):
    def capture(outer):
        raise tracing_error(f"{what} cannot use traced values of the enclosing function (it is a "
                            "computation on scalars); pass them as operands instead")
    return capture


def _flatten_values(tree, what):
    leaves, treedef = pytree.flatten(tree)
    tracers = []
    for i, leaf in enumerate(leaves):
        try:
            tracers.append(as_tracer(leaf))
        except Exception:
            raise tracing_error(f"{what}: {_leaf_name(treedef, i)} is a {type(leaf).__name__}, "
                                "not an array") from None
    return tracers, treedef


def _leaf_paths(treedef, prefix=""):
    if treedef.kind == "leaf":
        return [prefix]
    out = []
    for i, child in enumerate(treedef.children):
        if treedef.kind == "dict":
            step = f"[{treedef.meta[i]!r}]"
        elif treedef.kind == "namedtuple":
            step = f".{treedef.meta._fields[i]}"
        else:
            step = f"[{i}]"
        out += _leaf_paths(child, prefix + step)
    return out


def _leaf_name(treedef, i):
    """``leaf 1 (['h'])``: the index among the leaves and where it sits."""
    paths = _leaf_paths(treedef)
    path = paths[i] if i < len(paths) else ""
    return f"leaf {i} ({path})" if path else f"leaf {i}"


def _type_text(t):
    return f"{t.dtype}{list(t.shape)}" + (" (weak)" if getattr(t, "weak", False) else "")


def _describe(treedef, tracers):
    return f"{treedef} with " + ", ".join(_type_text(t) for t in tracers)


class _Promote(Exception):
    """A weakly typed carry leaf must change dtype; ``owner`` is the list of
    expected leaves it refers to (nested loops each catch only their own)."""

    def __init__(self, owner, index, dtype, weak):
        super().__init__(f"promote leaf {index} to {dtype}")
        self.owner, self.index, self.dtype, self.weak = owner, index, dtype, weak


def _match(what, expected_treedef, expected, got_tree, promote=False, owner=None):
    """Flattens ``got_tree`` and converts it to the expected leaf types; a
    clear ShapeError names the first difference. With ``promote``, a weak
    expected leaf that the value would promote raises ``_Promote`` for
    ``owner`` (default: ``expected``)."""
    got, treedef = _flatten_values(got_tree, what)
    if treedef != expected_treedef:
        raise ShapeError((
            f"{what} has structure {treedef}, expected {expected_treedef} (the structure of the "
            "initial value)" if promote else
            f"{what} has structure {treedef}, expected {expected_treedef}"))
    out = []
    for i, (e, g) in enumerate(zip(expected, got)):
        name = _leaf_name(treedef, i)
        if g.shape != e.shape:
            raise ShapeError((
                f"{what}: {name} has shape {g.dtype}{list(g.shape)}, expected {e.dtype}{list(e.shape)}"))
        if g.dtype != e.dtype:
            if promote and e.weak:
                target = tracing.result_type(e, g)
                if target != e.dtype:
                    raise _Promote(expected if owner is None else owner, i, target, g.weak)
            if g.weak:
                g = _retyped(g, e.dtype, True)
            else:
                raise ShapeError((
                    f"{what}: {name} has dtype {g.dtype}, expected {e.dtype} (convert it with "
                    ".astype)"))
        out.append(g)
    return out


def _retyped(t, dtype, weak):
    return Tracer(convert(t, dtype).op, weak=weak)


def _set_trip_count(op, n):
    op.instr.attrs["backend_config"] = RawAttr('{"known_trip_count":{"n":"%d"}}' % n)


# ----- loops ------------------------------------------------------------------------------

@_eager
def while_loop(cond_fun, body_fun, init_val, *, _trip_count=None):
    """``while cond_fun(val): val = body_fun(val)``; ``val`` a pytree of arrays
    whose structure, shapes and dtypes the body keeps."""
    ctx = current_context()
    init, treedef = _flatten_values(init_val, "while_loop init_val")
    # Each retry fixes one weak leaf's dtype, so len(init) retries suffice.
    for _ in range(len(init) + 1):
        try:
            return _while(ctx, cond_fun, body_fun, init, treedef, _trip_count)
        except _Promote as p:
            if p.owner is not init:
                raise
            init[p.index] = _retyped(init[p.index], p.dtype, p.weak)
    raise AssertionError("while_loop: carry dtypes did not settle")


def _while(ctx, cond_fun, body_fun, init, treedef, trip_count):
    b = ctx.builder
    shared = _SharedState(ctx, [t.op.shape for t in init])
    cond_b, body_b = b.sub_builder("while_cond"), b.sub_builder("while_body")
    cond_p, body_p = shared.new_param(cond_b), shared.new_param(body_b)

    def carry(sub, param):
        return treedef.unflatten([Tracer(sub.get_tuple_element(param, i), weak=t.weak)
                                  for i, t in enumerate(init)])

    with TraceContext(cond_b, ctx, shared.capture_into(cond_b, cond_p)):
        pred = as_tracer(cond_fun(carry(cond_b, cond_p)))
        if pred.shape != () or pred.dtype != np.bool_:
            raise ShapeError((
                f"while_loop cond_fun must return a boolean scalar, got {pred.dtype}{list(pred.shape)}"))
    with TraceContext(body_b, ctx, shared.capture_into(body_b, body_p)):
        out = body_fun(carry(body_b, body_p))
        new = _match("while_loop body_fun output", treedef, init, out, promote=True)
        weak = [t.weak and n.weak for t, n in zip(init, new)]
        passthrough = [body_b.get_tuple_element(body_p, i)
                       for i in range(shared.n_fixed, len(shared.shapes))]
        body_root = body_b.tuple([t.op for t in new] + passthrough)
    cond_comp = cond_b.build(pred.op)
    body_comp = body_b.build(body_root)
    operands = [t.op for t in init] + [as_tracer(c).op for c in shared.captured]
    loop = b.while_loop(cond_comp, body_comp, b.tuple(operands))
    if trip_count is not None:
        _set_trip_count(loop, trip_count)
    return treedef.unflatten([Tracer(b.get_tuple_element(loop, i), weak=w)
                              for i, w in enumerate(weak)])


@_eager
def fori_loop(lower, upper, body_fun, init_val):
    """``for i in range(lower, upper): val = body_fun(i, val)``; ``i`` is an int32
    scalar (the bounds' dtype if they are traced)."""
    static = all(isinstance(v, (int, np.integer)) for v in (lower, upper))
    if static:
        trip = max(int(upper) - int(lower), 0)
        index_dtype = np.dtype(np.int32)
    else:
        trip = None
        index_dtype = tracing.result_type(lower, upper)
        if index_dtype.kind not in "iu":
            raise tracing_error(f"fori_loop bounds must be integers, got {index_dtype}")
    lo_t = convert(as_tracer(lower if isinstance(lower, Tracer) else np.asarray(lower, index_dtype)),
                   index_dtype)
    hi_t = convert(as_tracer(upper if isinstance(upper, Tracer) else np.asarray(upper, index_dtype)),
                   index_dtype)
    init, treedef = _flatten_values(init_val, "fori_loop init_val")

    def cond(state):
        i, _ = state
        return i < hi_t

    def body(state):
        i, val = state
        # Matched here, not in while_loop, so errors name the user's leaves.
        new = _match("fori_loop body_fun output", treedef, pytree.flatten(val)[0],
                     body_fun(i, val), promote=True, owner=init)
        return i + np.asarray(1, index_dtype), treedef.unflatten(new)

    for _ in range(len(init) + 1):
        try:
            _, out = while_loop(cond, body, (lo_t, treedef.unflatten(init)), _trip_count=trip)
            return out
        except _Promote as p:
            if p.owner is not init:
                raise
            init[p.index] = _retyped(init[p.index], p.dtype, p.weak)
    raise AssertionError("fori_loop: carry dtypes did not settle")


@_eager
def scan(f, init, xs=None, length=None, reverse=False, unroll=1):
    """``carry, y = f(carry, x)`` over the leading axis of ``xs``; returns
    ``(carry, stacked ys)``, as ``jax.lax.scan`` (``unroll`` is accepted and
    ignored: the loop is one while instruction)."""
    x_leaves, x_treedef = pytree.flatten(xs)
    x_ts = [as_tracer(x) for x in x_leaves]
    if any(t.ndim == 0 for t in x_ts):
        raise ShapeError(("scan: every leaf of xs needs a leading axis"))
    lengths = {t.shape[0] for t in x_ts}
    if length is not None:
        lengths.add(int(length))
    if len(lengths) != 1:
        raise ShapeError((
            f"scan: xs leaves and length disagree on the number of steps: {sorted(lengths)}"
            if lengths else "scan: give xs or length"))
    n = lengths.pop()
    init_ts, carry_treedef = _flatten_values(init, "scan init")

    def x_at(i):
        return x_treedef.unflatten([dynamic_index_in_dim(t, i, keepdims=False) for t in x_ts])

    # The carry's dtypes (weak leaves may promote) and y's types: f traced in
    # throwaway computations until the carry settles.
    for _ in range(len(init_ts) + 1):
        try:
            y_specs, y_treedef = _scan_probe(f, init_ts, carry_treedef, x_ts, x_treedef)
            break
        except _Promote as p:
            if p.owner is not init_ts:
                raise
            init_ts[p.index] = _retyped(init_ts[p.index], p.dtype, p.weak)
    ys0 = [tracing.full((n,) + spec.shape, 0, spec.dtype) for spec in y_specs]

    def body(i, state):
        carry, ys = state
        idx = (n - 1 - i) if reverse else i
        new_carry, y = f(carry, x_at(idx))
        new_carry = carry_treedef.unflatten(_match("scan f output carry", carry_treedef, init_ts,
                                                   new_carry))
        y_ts = _match("scan f output y", y_treedef, y_specs, y)
        ys = [dynamic_update_index_in_dim(acc, t, idx) for acc, t in zip(ys, y_ts)]
        return new_carry, ys

    carry, ys = fori_loop(0, n, body, (carry_treedef.unflatten(init_ts), ys0))
    return carry, y_treedef.unflatten(ys)


def _scan_probe(f, init_ts, carry_treedef, x_ts, x_treedef):
    ctx = current_context()
    probe = ctx.builder.sub_builder("scan_probe")
    count = iter(range(1 << 30))

    def param(shape, name):
        return probe.parameter(next(count), shape, name)

    def capture(outer):
        return Tracer(param(outer.op.shape, "c"), weak=outer.weak)

    with TraceContext(probe, ctx, capture):
        carry = [Tracer(param(t.op.shape, "carry"), weak=t.weak) for t in init_ts]
        xs = [Tracer(param(Shape.array(t.op.element_type, t.shape[1:]), "x")) for t in x_ts]
        out = f(carry_treedef.unflatten(carry), x_treedef.unflatten(xs))
        if not (isinstance(out, tuple) and len(out) == 2):
            raise ShapeError((
                f"scan: f must return a pair (carry, y), got {type(out).__name__}"))
        _match("scan f output carry", carry_treedef, init_ts, out[0], promote=True)
        y_leaves, y_treedef = _flatten_values(out[1], "scan f output y")
    return [_Spec(t.shape, t.dtype) for t in y_leaves], y_treedef


class _Spec:
    """The type of an expected leaf (shape, dtype; never weak)."""

    def __init__(self, shape, dtype):
        self.shape, self.dtype, self.weak = tuple(shape), np.dtype(dtype), False


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
            results.append(_flatten_values(fn(*args), f"{what} branch {k} output"))
    first, first_treedef = results[0]
    for k, (leaves, treedef) in enumerate(results[1:], 1):
        if treedef != first_treedef:
            raise ShapeError((
                f"{what} branch {k} output has structure {treedef}, but branch 0 returned "
                f"{first_treedef}"))
        for i, (a, c) in enumerate(zip(first, leaves)):
            if a.shape != c.shape:
                raise ShapeError((
                    f"{what} branch {k} output: {_leaf_name(treedef, i)} has shape "
                    f"{_type_text(c)}, but branch 0 returned {_type_text(a)}"))
    targets = [_join_types(what, first_treedef, i, [r[0][i] for r in results])
               for i in range(len(first))]
    built = []
    for sub, p, (leaves, _) in zip(subs, params, results):
        with TraceContext(sub, ctx, shared.capture_into(sub, p)):
            outs = [t if t.dtype == dt else convert(t, dt) for t, (dt, _) in zip(leaves, targets)]
        built.append(sub.build(sub.tuple([t.op for t in outs])))
    operand = b.tuple([t.op for t in ops] + [as_tracer(c).op for c in shared.captured])
    out = b.conditional(index_op, built, [operand] * len(built))
    return first_treedef.unflatten([Tracer(b.get_tuple_element(out, i), weak=w)
                                    for i, (_, w) in enumerate(targets)])


def _join_types(what, treedef, i, column):
    """The (dtype, weak) of leaf ``i`` of every branch's output: equal dtypes,
    or weak leaves promoted to the one strong dtype (or to each other)."""
    weak = all(t.weak for t in column)
    dtypes = {t.dtype for t in column}
    if len(dtypes) == 1:
        return column[0].dtype, weak
    strong = {t.dtype for t in column if not t.weak}
    target = tracing.result_type(*column)
    if len(strong) > 1 or (strong and target not in strong):
        k = next(k for k, t in enumerate(column) if t.dtype != column[0].dtype)
        raise ShapeError((
            f"{what} branch {k} output: {_leaf_name(treedef, i)} has dtype {_type_text(column[k])}, "
            f"but branch 0 returned {_type_text(column[0])} (convert one with .astype)"))
    return target, weak


@_eager
def cond(pred, true_fun, false_fun, *operands):
    """``true_fun(*operands) if pred else false_fun(*operands)``, both traced;
    ``pred`` a scalar (nonzero is true)."""
    if not isinstance(pred, Tracer):
        return true_fun(*operands) if bool(np.asarray(pred)) else false_fun(*operands)
    if pred.shape != ():
        raise ShapeError((f"cond: pred must be a scalar, got shape {pred.shape}"))
    p = convert(pred, np.bool_)
    return _branches(p.op, [true_fun, false_fun], operands, "cond")


@_eager
def switch(index, branches, *operands):
    """``branches[clamp(index, 0, len-1)](*operands)``, as ``jax.lax.switch``."""
    branches = list(branches)
    if not branches:
        raise InvalidArgumentError("switch needs at least one branch")
    if not isinstance(index, Tracer):
        k = int(np.clip(int(index), 0, len(branches) - 1))
        return branches[k](*operands)
    if index.shape != () or index.dtype.kind not in "iu":
        raise ShapeError((f"switch: index must be an integer scalar, got "
                                         f"{index.dtype}{list(index.shape)}"))
    # Clamped in the index's own dtype: converting a wide index first could wrap.
    i = convert(np.clip(index, 0, len(branches) - 1), np.int32)
    return _branches(i.op, branches, operands, "switch")


# ----- primitives -------------------------------------------------------------------------

@_eager
def dot_general(lhs, rhs, dimension_numbers, precision=None, preferred_element_type=None):
    """``dimension_numbers = ((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch))``;
    the result's dimensions are batch, lhs free, rhs free (``precision`` is ignored)."""
    (lc, rc), (lb, rb) = dimension_numbers
    lhs, rhs = as_tracer(lhs), as_tracer(rhs)
    dt = tracing.result_type(lhs, rhs)
    lhs, rhs = convert(lhs, dt), convert(rhs, dt)
    b = current_context().builder
    pet = None if preferred_element_type is None else np.dtype(preferred_element_type)
    return Tracer(b.dot_general(lhs.op, rhs.op, tuple(lc), tuple(rc), tuple(lb), tuple(rb), pet))


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
        raise InvalidArgumentError(f"unknown padding {padding!r}: use 'SAME', 'SAME_LOWER', "
                                   "'VALID' or (low, high) pairs")
    pads = [tuple(int(v) for v in p) for p in padding]
    if len(pads) != len(in_dims) or any(len(p) != 2 for p in pads):
        raise InvalidArgumentError(f"padding {padding!r} must be {len(in_dims)} (low, high) pairs")
    return pads


@_eager
def conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=None, rhs_dilation=None,
                         dimension_numbers=None, feature_group_count=1, batch_group_count=1,
                         precision=None, preferred_element_type=None):
    """N-d convolution as ``jax.lax.conv_general_dilated``. ``dimension_numbers``
    are spec strings like ``('NHWC', 'HWIO', 'NHWC')`` (spatial dimensions are
    matched by letter, in the kernel spec's order) or JAX's tuples of
    dimension indices ``(lhs_spec, rhs_spec, out_spec)``; the default is
    ``('NCHW', 'OIHW', 'NCHW')`` for the operands' rank. ``window_strides``,
    ``padding`` and the dilations list the spatial dimensions in that order."""
    lhs, rhs = as_tracer(lhs), as_tracer(rhs)
    dt = tracing.result_type(lhs, rhs)
    lhs, rhs = convert(lhs, dt), convert(rhs, dt)
    nsp = lhs.ndim - 2
    if dimension_numbers is None:
        dimension_numbers = tuple(tuple(range(lhs.ndim)) for _ in range(3))
    dnums = _conv_dnums(*dimension_numbers, rank=lhs.ndim)
    if rhs.ndim != lhs.ndim:
        raise ShapeError((
            f"conv_general_dilated: lhs has rank {lhs.ndim} but rhs has rank {rhs.ndim}"))
    strides = list(window_strides)
    lhs_dil = list(lhs_dilation or [1] * nsp)
    rhs_dil = list(rhs_dilation or [1] * nsp)
    for name, v in (("window_strides", strides), ("lhs_dilation", lhs_dil), ("rhs_dilation", rhs_dil)):
        if len(v) != nsp:
            raise ShapeError((
                f"conv_general_dilated: {name} has {len(v)} entries for {nsp} spatial dimensions"))
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
    pet = None if preferred_element_type is None else np.dtype(preferred_element_type)
    return Tracer(b.convolution(lhs.op, rhs.op, window, dnums, feature_group_count,
                                batch_group_count, pet))


def _conv_dnums(lhs_spec, rhs_spec, out_spec, rank):
    if all(isinstance(s, str) for s in (lhs_spec, rhs_spec, out_spec)):
        for s in (lhs_spec, rhs_spec, out_spec):
            if len(s) != rank:
                raise InvalidArgumentError(
                    f"conv_general_dilated: dimension spec {s!r} does not have the operands' rank {rank}")
        rhs_sp = [c for c in rhs_spec if c not in "OI"]
        lhs_sp = [c for c in lhs_spec if c not in "NC"]
        out_sp = [c for c in out_spec if c not in "NC"]
        if sorted(lhs_sp) == sorted(rhs_sp) == sorted(out_sp) and len(set(rhs_sp)) == len(rhs_sp):
            order = rhs_sp          # by letter, in the kernel's order (as JAX)
            lhs_sp, out_sp = order, order
        lhs_spec = (lhs_spec.index("N"), lhs_spec.index("C")) + tuple(lhs_spec.index(c) for c in lhs_sp)
        rhs_spec = (rhs_spec.index("O"), rhs_spec.index("I")) + tuple(rhs_spec.index(c) for c in rhs_sp)
        out_spec = (out_spec.index("N"), out_spec.index("C")) + tuple(out_spec.index(c) for c in out_sp)
    # JAX's ConvDimensionNumbers: (batch, feature, spatial...), (out feature,
    # in feature, spatial...), (batch, feature, spatial...).
    lhs_spec, rhs_spec, out_spec = (tuple(int(d) for d in s) for s in (lhs_spec, rhs_spec, out_spec))
    return ConvDimensionNumbers(
        lhs_spec[0], lhs_spec[1], list(lhs_spec[2:]),
        rhs_spec[1], rhs_spec[0], list(rhs_spec[2:]),
        out_spec[0], out_spec[1], list(out_spec[2:]))


_REDUCERS = {"add": "add", "sum": "add", "max": "maximum", "min": "minimum", "mul": "multiply",
             "maximum": "maximum", "minimum": "minimum", "multiply": "multiply",
             "and": "and", "or": "or",
             np.add: "add", np.maximum: "maximum", np.minimum: "minimum", np.multiply: "multiply"}


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
    with TraceContext(sub, current_context(), _no_capture(f"the {what} computation")):
        accs = [Tracer(p) for p in params[:n]]
        vals = [Tracer(p) for p in params[n:]]
        out = computation(treedef.unflatten(accs), treedef.unflatten(vals))
        outs = _match(f"{what} computation output", treedef, accs, out)
        root = outs[0].op if n == 1 else sub.tuple([o.op for o in outs])
    return sub.build(root)


def _operands_and_inits(operands, init_values, what):
    ops, treedef = _flatten_values(operands, f"{what} operands")
    inits, init_treedef = _flatten_values(init_values, f"{what} init_values")
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


@_eager
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


@_eager
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
        pads = _padding_pairs(padding, dilated, window_dimensions, strides, wd)
    else:
        pads = _padding_pairs(padding, x.shape, window_dimensions, strides)
    window = Window([WindowDimension(size=w, stride=s, padding_low=lo, padding_high=hi,
                                     window_dilation=d2, base_dilation=d1)
                     for w, s, (lo, hi), d1, d2 in zip(window_dimensions, strides, pads, bd, wd)])
    comp = _reducer(computation, ops, treedef, "reduce_window")
    b = current_context().builder
    out = b.reduce_window([o.op for o in ops], [i.op for i in inits], comp, window)
    return _unpack(b, out, len(ops), treedef)


def _index_ops(x, indices, sizes, allow_negative_indices, what):
    indices = list(indices)
    if len(indices) != x.ndim:
        raise ShapeError((
            f"{what}: expected {x.ndim} start indices (one per dimension of {x.dtype}"
            f"{list(x.shape)}), got {len(indices)}"))
    out = []
    for d, (i, size) in enumerate(zip(indices, sizes)):
        t = as_tracer(i)
        if t.shape != () or t.dtype.kind not in "iu":
            raise ShapeError((
                f"{what}: start index {d} must be an integer scalar, got {_type_text(t)}"))
        if t.weak:
            t = convert(t, np.int64)
        if allow_negative_indices and t.dtype.kind == "i":
            t = np.where(t < 0, t + np.asarray(x.shape[d], t.dtype), t)
        if t.dtype != np.int32:
            # XLA clamps the start into range; doing it before narrowing to
            # s32 keeps wide indices from wrapping.
            t = np.clip(t, np.asarray(0, t.dtype), np.asarray(max(x.shape[d] - size, 0), t.dtype))
        out.append(convert(t, np.int32).op)
    return out


@_eager
def dynamic_slice(operand, start_indices, slice_sizes, *, allow_negative_indices=True):
    """XLA's dynamic-slice, as ``jax.lax.dynamic_slice``: a negative start
    counts from the end (unless ``allow_negative_indices=False``), then the
    start is clamped so the slice fits."""
    x = as_tracer(operand)
    slice_sizes = tuple(int(s) for s in slice_sizes)
    b = current_context().builder
    starts = _index_ops(x, start_indices, slice_sizes, allow_negative_indices, "dynamic_slice")
    return Tracer(b.dynamic_slice(x.op, starts, slice_sizes))


@_eager
def dynamic_update_slice(operand, update, start_indices, *, allow_negative_indices=True):
    """``operand`` with ``update`` written at ``start_indices`` (negative and
    out-of-range starts as in ``dynamic_slice``)."""
    x = as_tracer(operand)
    u = as_tracer(update)
    if u.dtype != x.dtype:
        if not u.weak:
            raise ShapeError((
                f"dynamic_update_slice: update has dtype {u.dtype}, operand {x.dtype}"))
        u = convert(u, x.dtype)
    if u.ndim != x.ndim:
        raise ShapeError((
            f"dynamic_update_slice: update {_type_text(u)} must have the rank of operand "
            f"{_type_text(x)}"))
    b = current_context().builder
    starts = _index_ops(x, start_indices, u.shape, allow_negative_indices, "dynamic_update_slice")
    return Tracer(b.dynamic_update_slice(x.op, u.op, starts))


@_eager
def dynamic_index_in_dim(operand, index, axis=0, keepdims=True, *, allow_negative_indices=True):
    """``operand[..., index, ...]`` along ``axis`` with a traced ``index``."""
    x = as_tracer(operand)
    axis = axis % x.ndim
    starts = [0] * x.ndim
    starts[axis] = index
    sizes = list(x.shape)
    sizes[axis] = 1
    out = dynamic_slice(x, starts, sizes, allow_negative_indices=allow_negative_indices)
    if not keepdims:
        out = reshape(out, x.shape[:axis] + x.shape[axis + 1:])
    return out


@_eager
def dynamic_update_index_in_dim(operand, update, index, axis=0, *, allow_negative_indices=True):
    x = as_tracer(operand)
    u = as_tracer(update)
    axis = axis % x.ndim
    if u.ndim == x.ndim - 1:
        u = reshape(u, u.shape[:axis] + (1,) + u.shape[axis:])
    starts = [0] * x.ndim
    starts[axis] = index
    return dynamic_update_slice(x, u, starts, allow_negative_indices=allow_negative_indices)


@_eager
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


@_eager
def top_k(operand, k):
    """The ``k`` largest entries of the last axis, largest first, and their
    indices (ties: the lower index first; NaN counts as the largest)."""
    x = as_tracer(operand)
    if not 0 <= int(k) <= x.shape[-1]:
        raise InvalidArgumentError(f"top_k: k={k} for a last axis of size {x.shape[-1]}")
    idx = broadcasted_iota(np.int32, x.shape, x.ndim - 1)
    vals, ids = _sort((x, idx), -1, True, 1, descending=True)
    return vals[..., :int(k)], ids[..., :int(k)]


@_eager
def select(pred, on_true, on_false):
    """Elementwise ``on_true if pred else on_false``; unlike ``np.where`` the
    three must have one shape (a scalar ``pred`` is allowed, as in JAX)."""
    p = as_tracer(pred)
    t, f = as_tracer(on_true), as_tracer(on_false)
    if t.shape != f.shape or (p.shape != () and p.shape != t.shape):
        raise ShapeError((
            f"select: pred {_type_text(p)}, on_true {_type_text(t)} and on_false {_type_text(f)} "
            "must have one shape"))
    if p.dtype != np.bool_:
        raise ShapeError((f"select: pred must be boolean, got {_type_text(p)}"))
    return np.where(p, t, f)


@_eager
def clamp(min, x, max):
    """``min <= x <= max`` elementwise (``min``/``max`` scalars or x's shape)."""
    return np.clip(x, min, max)


@_eager
def broadcast_in_dim(operand, shape, broadcast_dimensions):
    """Operand dimension i becomes output dimension ``broadcast_dimensions[i]``;
    a size-1 operand dimension may grow, as in JAX."""
    x = as_tracer(operand)
    shape = tuple(int(d) for d in shape)
    bdims = tuple(int(d) for d in broadcast_dimensions)
    if len(bdims) != x.ndim:
        raise ShapeError((
            f"broadcast_in_dim: {len(bdims)} broadcast_dimensions for an operand of rank {x.ndim}"))
    b = current_context().builder
    keep = [i for i, d in enumerate(x.shape) if not (d == 1 and shape[bdims[i]] != 1)]
    op = x.op
    if len(keep) != x.ndim:
        op = b.reshape(op, [x.shape[i] for i in keep])
    return Tracer(b.broadcast_in_dim(op, shape, [bdims[i] for i in keep]), weak=x.weak)


@_eager
def reshape(operand, new_sizes, dimensions=None):
    """Row-major reshape, after transposing by ``dimensions`` if given."""
    x = as_tracer(operand)
    if dimensions is not None:
        x = transpose(x, dimensions)
    new_sizes = tuple(int(d) for d in new_sizes)
    if new_sizes == x.shape:
        return x
    return Tracer(current_context().builder.reshape(x.op, new_sizes), weak=x.weak)


@_eager
def transpose(operand, permutation):
    return np.transpose(as_tracer(operand), tuple(permutation))


@_eager
def iota(dtype, size):
    b = current_context().builder
    return Tracer(b.iota(np.dtype(dtype), (int(size),), 0))


@_eager
def broadcasted_iota(dtype, shape, dimension):
    b = current_context().builder
    return Tracer(b.iota(np.dtype(dtype), tuple(int(d) for d in shape), int(dimension)))


@_eager
def convert_element_type(operand, new_dtype):
    return convert(as_tracer(operand), np.dtype(new_dtype))


# ----- elementwise primitives NumPy has no name for ---------------------------------------

def _unary(opcode, name, doc):
    @_eager
    def op(x):
        t = as_tracer(x)
        if t.dtype.kind not in "fc":
            t = convert(t, np.float64 if t.dtype.itemsize > 4 or t.dtype.kind == "b" else np.float32)
        return Tracer(current_context().builder.unary(opcode, t.op))
    op.__name__ = op.__qualname__ = name
    op.__doc__ = doc
    return op


rsqrt = _unary("rsqrt", "rsqrt", "1 / sqrt(x) (HLO rsqrt).")
logistic = _unary("logistic", "logistic", "1 / (1 + exp(-x)) (HLO logistic).")
erf = _unary("erf", "erf", "The error function (HLO erf).")
