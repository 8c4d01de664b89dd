"""Loops and branches on traced values, as ``jax.lax``: ``while_loop``,
``fori_loop``, ``scan``, ``cond``, ``switch``.

Loop bodies and branches are Python functions traced into
sub-computations, over pytrees (``xla.frontend.pytree``) of arrays. A body
may use traced values of the enclosing function (closures): each such value
is *captured* — passed into the loop or branch as an extra element of its
state tuple and through unchanged — so what the user wrote as a closure
becomes plain HLO data flow.

Dtypes follow JAX's weak typing: a Python scalar in a loop carry is weak, and
when the body turns it into another dtype (``0.0`` plus a float32 value) the
carry takes that dtype and the body is traced again; branches of ``cond`` /
``switch`` that differ only in weak leaves are joined the same way. Any other
difference in structure, shape or dtype is a ShapeError naming the leaf.

Loops whose trip count is known while tracing (``fori_loop`` with Python
bounds, ``scan``) record it on the while instruction as XLA does
(``backend_config={"known_trip_count":{"n":"N"}}``); reverse-mode
differentiation of a loop needs it (``xla.frontend.autodiff``).
"""
import numpy as np

from xla.errors import InvalidArgumentError, ShapeError
from xla.frontend import pytree, tracing
from xla.frontend.lax import checks
from xla.frontend.lax.eager import eager
from xla.frontend.lax.slicing import dynamic_index_in_dim, dynamic_update_index_in_dim
from xla.frontend.lax.subcomputation import (Promote, SharedState, Spec, flatten_values, leaf_name,
                                             match, retyped, type_text)
from xla.frontend.trace_context import TraceContext, current_context, tracing_error
from xla.frontend.tracing import Tracer, alias, as_tracer, convert
from xla.hlo.attributes import RawAttr
from xla.hlo.shape import Shape


def _set_trip_count(op, n):
    op.instr.attrs["backend_config"] = RawAttr('{"known_trip_count":{"n":"%d"}}' % n)


# ----- loops ------------------------------------------------------------------------------

class _Rebound(Exception):
    """Carry leaves ``indices`` of the loop over ``owner`` (its init leaves)
    were read by a view through their parameters and are rebound by the
    body: the loop is traced again without that (``_views_follow``)."""

    def __init__(self, owner, indices):
        super().__init__(f"views read rebound carry leaves {sorted(indices)}")
        self.owner, self.indices = owner, indices


def _views_follow(body_ctx, init, params, out):
    """A view taken before the loop and read in its body through a carried
    array's parameter (TraceContext.current_array) sees that array as the
    previous iteration left it: right when the body returns the parameter
    itself (updated in place, or not at all), but not when it returns a new
    array in its place (``x = x + 1``: NumPy's view keeps the array the loop
    started from, which the loop does not change). Those leaves raise
    ``_Rebound``: traced again, the view reads the array from before the
    loop."""
    if not body_ctx.view_reads:
        return
    rebound = {k for k, (p, o) in enumerate(zip(params, pytree.tree_leaves(out)))
               if id(p) in body_ctx.view_reads and o is not p}
    if rebound:
        raise _Rebound(init, rebound)


@eager
def while_loop(cond_fun, body_fun, init_val, *, _trip_count=None):
    """``while cond_fun(val): val = body_fun(val)``; ``val`` a pytree of arrays
    whose structure, shapes and dtypes the body keeps."""
    ctx = current_context()
    init, treedef = flatten_values(init_val, "while_loop init_val")
    rebound = set()
    error = ctx.error
    # Each retry fixes one weak leaf's dtype or stops a view from following
    # one leaf, so 2 * len(init) retries suffice.
    for _ in range(2 * len(init) + 1):
        try:
            return _while(ctx, cond_fun, body_fun, init, treedef, _trip_count, rebound)
        except Promote as p:
            if p.owner is not init:
                raise
            init[p.index] = retyped(init[p.index], p.dtype, p.weak)
        except _Rebound as r:
            if r.owner is not init:
                raise
            rebound |= r.indices
        ctx.error = error       # the abandoned trace's check of the condition (_checked_cond)
    raise AssertionError("while_loop: carry dtypes did not settle")


def _while(ctx, cond_fun, body_fun, init, treedef, trip_count, rebound):
    b = ctx.builder
    shared = SharedState(ctx, [t.op.shape for t in init])
    cond_b, body_b = b.sub_builder("while_cond"), b.sub_builder("while_body")
    cond_p, body_p = shared.new_param(cond_b), shared.new_param(body_b)

    def carry(sub, param, sub_ctx):
        leaves = [Tracer(sub.get_tuple_element(param, i), weak=t.weak) for i, t in enumerate(init)]
        alias(sub_ctx, init, leaves, rebound, carried=True)
        return leaves

    with checks.inherit(TraceContext(cond_b, ctx, shared.capture_into(cond_b, cond_p))) as cond_ctx:
        pred = _predicate(cond_fun(treedef.unflatten(carry(cond_b, cond_p, cond_ctx))))
    checked_cond = cond_ctx.error is not None
    if checked_cond:
        # The condition raises on values (lax/checks.py), and a condition
        # computation has no result to carry a code out in: it is evaluated
        # where its code can be kept, on ``init`` before the loop and at the
        # end of the body on the new state, and the loop state carries the
        # predicate (its element ``carried_pred``) to a condition that only
        # reads it. NumPy raises there, at the test, after the body ran.
        pred = _predicate(cond_fun(treedef.unflatten(init)))
        carried_pred = shared.append(pred)
    with checks.inherit(TraceContext(body_b, ctx, shared.capture_into(body_b, body_p))) as body_ctx:
        params = carry(body_b, body_p, body_ctx)
        out = body_fun(treedef.unflatten(params))
        new = match("while_loop body_fun output", treedef, init, out, promote=True)
        _views_follow(body_ctx, init, params, out)
        weak = [t.weak and n.weak for t, n in zip(init, new)]
        replaced = {}
        if checked_cond:
            replaced[carried_pred] = _predicate(cond_fun(treedef.unflatten(new))).op
        error = _carry_error(ctx, body_ctx, shared, body_b, body_p)
        if error is not None:
            replaced[error[0]] = error[1].op
        passthrough = [replaced[i] if i in replaced else body_b.get_tuple_element(body_p, i)
                       for i in range(shared.n_fixed, len(shared.shapes))]
        body_root = body_b.tuple([t.op for t in new] + passthrough)
    if checked_cond:
        # A condition that reads the predicate the body computed (the one
        # traced first, whose code had nowhere to go, is dropped).
        cond_b = b.sub_builder("while_cond")
        cond_p = shared.new_param(cond_b)
        pred = Tracer(cond_b.get_tuple_element(cond_p, carried_pred))
    if error is not None and trip_count is None:
        # Stop once a check failed, as NumPy would have raised there (a loop
        # of known trip count ends anyway, and keeps its trip count).
        with TraceContext(cond_b, ctx):
            pred = pred & (Tracer(cond_b.get_tuple_element(cond_p, error[0])) == 0)
    cond_comp = cond_b.build(pred.op)
    body_comp = body_b.build(body_root)
    operands = [t.op for t in init] + [as_tracer(c).op for c in shared.captured]
    loop = b.while_loop(cond_comp, body_comp, b.tuple(operands))
    if trip_count is not None:
        _set_trip_count(loop, trip_count)
    if error is not None:
        ctx.error = Tracer(b.get_tuple_element(loop, error[0]))
    return treedef.unflatten([Tracer(b.get_tuple_element(loop, i), weak=w)
                              for i, w in enumerate(weak)])


def _predicate(value):
    pred = as_tracer(value)
    if pred.shape != () or pred.dtype != np.bool_:
        raise ShapeError((
            f"while_loop cond_fun must return a boolean scalar, got {pred.dtype}{list(pred.shape)}"))
    return pred


def _carry_error(ctx, body_ctx, shared, body_b, body_p):
    """Where the body registered checks (lax/checks.py): (state index, the
    body's code) of a new int32 state element that starts as ``ctx``'s
    code and keeps the first nonzero one; None where it registered none."""
    if body_ctx.error is None:
        return None
    start = ctx.error if ctx.error is not None else \
        Tracer(ctx.builder.constant(np.zeros((), np.int32)))
    carried = shared.capture_into(body_b, body_p)(start)
    index = shared.index_of[id(start.op.instr)]
    return index, np.where(carried != 0, carried, body_ctx.error)


@eager
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
    init, treedef = flatten_values(init_val, "fori_loop init_val")

    def cond(state):
        i, _ = state
        return i < hi_t

    def body(state):
        i, val = state
        # Matched here, not in while_loop, so errors name the user's leaves.
        new = match("fori_loop body_fun output", treedef, pytree.flatten(val)[0],
                     body_fun(i, val), promote=True, owner=init)
        return i + np.asarray(1, index_dtype), treedef.unflatten(new)

    for _ in range(len(init) + 1):
        try:
            _, out = while_loop(cond, body, (lo_t, treedef.unflatten(init)), _trip_count=trip)
            return out
        except Promote as p:
            if p.owner is not init:
                raise
            init[p.index] = retyped(init[p.index], p.dtype, p.weak)
    raise AssertionError("fori_loop: carry dtypes did not settle")


@eager
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
    init_ts, carry_treedef = flatten_values(init, "scan init")

    def x_at(i):
        return x_treedef.unflatten([dynamic_index_in_dim(t, i, keepdims=False) for t in x_ts])

    # The carry's dtypes (weak leaves may promote) and y's types: f traced in
    # throwaway computations until the carry settles.
    for _ in range(len(init_ts) + 1):
        try:
            y_specs, y_treedef = _scan_probe(f, init_ts, carry_treedef, x_ts, x_treedef)
            break
        except Promote as p:
            if p.owner is not init_ts:
                raise
            init_ts[p.index] = retyped(init_ts[p.index], p.dtype, p.weak)
    ys0 = [tracing.full((n,) + spec.shape, 0, spec.dtype) for spec in y_specs]

    def body(i, state):
        carry, ys = state
        idx = (n - 1 - i) if reverse else i
        new_carry, y = f(carry, x_at(idx))
        new_carry = carry_treedef.unflatten(match("scan f output carry", carry_treedef, init_ts,
                                                   new_carry))
        y_ts = match("scan f output y", y_treedef, y_specs, y)
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
        match("scan f output carry", carry_treedef, init_ts, out[0], promote=True)
        y_leaves, y_treedef = flatten_values(out[1], "scan f output y")
    return [Spec(t.shape, t.dtype) for t in y_leaves], y_treedef



# ----- branches -----------------------------------------------------------------------

def _branches(index_op, branch_funs, operands, what):
    ctx = current_context()
    b = ctx.builder
    ops, op_treedef = flatten_values(tuple(operands), f"{what} operands")
    shared = SharedState(ctx, [t.op.shape for t in ops])
    subs = [b.sub_builder(f"{what}_branch{k}") for k in range(len(branch_funs))]
    params = [shared.new_param(s) for s in subs]
    results, errors = [], []
    for k, (fn, sub, p) in enumerate(zip(branch_funs, subs, params)):
        with checks.inherit(TraceContext(sub, ctx, shared.capture_into(sub, p))) as sub_ctx:
            leaves = [Tracer(sub.get_tuple_element(p, i), weak=t.weak) for i, t in enumerate(ops)]
            alias(sub_ctx, ops, leaves)
            args = op_treedef.unflatten(leaves)
            results.append(flatten_values(fn(*args), f"{what} branch {k} output"))
        errors.append(sub_ctx.error)
    # Where a branch registered checks (lax/checks.py), each branch's code
    # is a hidden last result (0 in those that registered none).
    checked = any(e is not None for e in errors)
    first, first_treedef = results[0]
    for k, (leaves, treedef) in enumerate(results[1:], 1):
        if treedef != first_treedef:
            raise ShapeError((
                f"{what} branch {k} output has structure {treedef}, but branch 0 returned "
                f"{first_treedef}"))
        for i, (a, c) in enumerate(zip(first, leaves)):
            if a.shape != c.shape:
                raise ShapeError((
                    f"{what} branch {k} output: {leaf_name(treedef, i)} has shape "
                    f"{type_text(c)}, but branch 0 returned {type_text(a)}"))
    targets = [_join_types(what, first_treedef, i, [r[0][i] for r in results])
               for i in range(len(first))]
    built = []
    for sub, p, (leaves, _), error in zip(subs, params, results, errors):
        with TraceContext(sub, ctx, shared.capture_into(sub, p)):
            outs = [t if t.dtype == dt else convert(t, dt) for t, (dt, _) in zip(leaves, targets)]
            if checked:
                outs.append(error if error is not None else as_tracer(np.int32(0)))
        built.append(sub.build(sub.tuple([t.op for t in outs])))
    operand = b.tuple([t.op for t in ops] + [as_tracer(c).op for c in shared.captured])
    out = b.conditional(index_op, built, [operand] * len(built))
    if checked:
        checks.merge(ctx, Tracer(b.get_tuple_element(out, len(first))))
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
            f"{what} branch {k} output: {leaf_name(treedef, i)} has dtype {type_text(column[k])}, "
            f"but branch 0 returned {type_text(column[0])} (convert one with .astype)"))
    return target, weak


@eager
def cond(pred, true_fun, false_fun, *operands):
    """``true_fun(*operands) if pred else false_fun(*operands)``, both traced;
    ``pred`` a scalar (nonzero is true)."""
    if not isinstance(pred, Tracer):
        return true_fun(*operands) if bool(np.asarray(pred)) else false_fun(*operands)
    if pred.shape != ():
        raise ShapeError((f"cond: pred must be a scalar, got shape {pred.shape}"))
    p = convert(pred, np.bool_)
    return _branches(p.op, [true_fun, false_fun], operands, "cond")


@eager
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

