"""VJP rules of called computations: conditional (re-traced branches),
call (inlined) and while with a known trip count (stored states, reversed
loop)."""

import numpy as np

from xla.frontend.tracing import tracing_error
from xla.hlo.shape import Shape
from xla.frontend.autodiff.backward import backward_pass
from xla.frontend.autodiff.table import G, inline, vjp_rule


# ----- called computations: inlining and their VJPs -----------------------------------

def _tuple_elements(b, op):
    return [b.get_tuple_element(op, i) for i in range(len(op.shape.tuple_shapes))]


def _zeros_like_shape(g, shape):
    if shape.is_tuple:
        return g.b.tuple([_zeros_like_shape(g, s) for s in shape.tuple_shapes])
    return g.zeros(shape)


def _vjp_computation(parent, comp, name):
    """A computation (params: comp's params..., the cotangent of its root)
    returning a tuple of the cotangents of comp's params (zeros where none)."""
    sub = parent.sub_builder(name)
    params = [sub.parameter(i, p.shape, f"p{i}") for i, p in enumerate(comp.parameters)]
    ct = sub.parameter(len(params), comp.root_instruction.shape, "ct")
    root = inline(sub, comp, params)
    g = G(sub)
    ct_value = _tuple_elements(sub, ct) if ct.shape.is_tuple else ct
    # A fresh instruction per parameter, so uses outside the inlined body
    # (there are none) can't be confused with it.
    cts = backward_pass(sub, [p.instr for p in params], [root.instr], [ct_value])
    outs = []
    for p, c in zip(params, cts):
        if c is None:
            outs.append(_zeros_like_shape(g, p.shape))
        elif isinstance(c, list):
            outs.append(sub.tuple([ci if ci is not None else g.zeros(s)
                                   for ci, s in zip(c, p.shape.tuple_shapes)]))
        else:
            outs.append(c)
    return sub.build(sub.tuple(outs))


def _ct_value(g, shape, ct):
    """The cotangent ``ct`` (XlaOp, list or None) as one XlaOp of ``shape``."""
    if shape.is_tuple:
        cts = ct if isinstance(ct, list) else [None] * len(shape.tuple_shapes)
        return g.b.tuple([_ct_value(g, s, c) for s, c in zip(shape.tuple_shapes, cts)])
    return ct if ct is not None else g.zeros(shape)


@vjp_rule("conditional")
def _conditional(g, instr, ct):
    """Each branch k becomes a backward branch taking (operand_k, ct) and
    returning the cotangents of every branch operand (zeros but slot k)."""
    b = g.b
    if instr.has_attr("branch_computations"):
        branches = list(instr.attr("branch_computations"))
    else:
        branches = [instr.attr("true_computation"), instr.attr("false_computation")]
    operands = [g.op(o) for o in instr.operands[1:]]
    ct_op = _ct_value(g, instr.shape, ct)
    backward = []
    for k, comp in enumerate(branches):
        sub = b.sub_builder(f"{comp.name}_bwd")
        p = sub.parameter(0, Shape.tuple([operands[k].shape, ct_op.shape]), "arg")
        operand = sub.get_tuple_element(p, 0)
        ct_k = sub.get_tuple_element(p, 1)
        ct_k = _tuple_elements(sub, ct_k) if ct_k.shape.is_tuple else ct_k
        (c,) = backward_through_inlined(G(sub), comp, [operand], ct_k)
        slots = [_zeros_like_shape(G(sub), o.shape) for o in operands]
        slots[k] = _ct_value(G(sub), operands[k].shape, c)
        backward.append(sub.build(sub.tuple(slots)))
    args = [b.tuple([operands[k], ct_op]) for k in range(len(branches))]
    combined = b.conditional(g.op(instr.operands[0]), backward, args)
    return [None] + [_split_ct(b, b.get_tuple_element(combined, j)) for j in range(len(operands))]


def _split_ct(b, op):
    if op.shape.is_tuple:
        return [b.get_tuple_element(op, i) for i in range(len(op.shape.tuple_shapes))]
    return op


@vjp_rule("call")
def _call(g, instr, ct):
    return backward_through_inlined(g, instr.attr("to_apply"), [g.op(o) for o in instr.operands], ct)


def backward_through_inlined(g, comp, operands, ct):
    """Inlines ``comp`` on stand-ins of ``operands`` (so the walk stops at
    them) and returns the stand-ins' cotangents."""
    stand_ins = [g.b.add_instruction("copy", (o,)) if o.shape.is_array else
                 g.b.tuple(_tuple_elements(g.b, o)) for o in operands]
    root = inline(g.b, comp, stand_ins)
    return backward_pass(g.b, [s.instr for s in stand_ins], [root.instr], [ct])


@vjp_rule("while")
def _while(g, instr, ct):
    trip = known_trip_count(instr)
    if trip is None:
        raise tracing_error(
            "xla.grad: reverse-mode differentiation of a while loop needs its trip count; use "
            "xla.lax.fori_loop with static bounds or xla.lax.scan")
    b = g.b
    body = instr.attr("body")
    state_shape = instr.shape
    init = g.op(instr.operands[0])
    # Forward again, stacking each iteration's input state.
    leaves = list(state_shape.tuple_shapes) if state_shape.is_tuple else [state_shape]
    stacks = [g.zeros(Shape.array(s.element_type, (trip,) + s.dimensions)) for s in leaves]
    fwd = _stacking_loop(b, body, init, stacks, trip, state_shape)
    stacked = [b.get_tuple_element(fwd, 1 + i) for i in range(len(leaves))]
    vjp_body = _vjp_computation(b, body, f"{body.name}_vjp")
    ct_state = _ct_value(g, state_shape, ct)
    bwd = _reverse_loop(b, vjp_body, stacked, ct_state, trip, state_shape)
    return [_split_ct(b, bwd)]


def known_trip_count(instr):
    value = instr.attrs.get("backend_config")
    text = getattr(value, "text", None) or (value if isinstance(value, str) else None)
    if not text:
        return None
    import re
    m = re.search(r'"known_trip_count"\s*:\s*\{\s*"n"\s*:\s*"(\d+)"', text)
    return int(m.group(1)) if m else None


def _counter_loop(b, name, carry_shapes, step_fn, trip, init_ops):
    """while i < trip: state = step_fn(sub, i, [state...]); returns the while op
    (a tuple (i, state...))."""
    from xla.hlo.types import PrimitiveType
    s32 = PrimitiveType.S32
    tuple_shape = Shape.tuple([Shape.scalar(s32)] + list(carry_shapes))
    cond = b.sub_builder(f"{name}_cond")
    p = cond.parameter(0, tuple_shape, "state")
    i = cond.get_tuple_element(p, 0)
    cond.build(cond.compare(i, cond.constant(np.int32(trip)), "LT"))
    body = b.sub_builder(f"{name}_body")
    p = body.parameter(0, tuple_shape, "state")
    i = body.get_tuple_element(p, 0)
    state = [body.get_tuple_element(p, k + 1) for k in range(len(carry_shapes))]
    new_state = step_fn(body, i, state)
    nxt = body.binary("add", i, body.constant(np.int32(1)))
    body_comp = body.build(body.tuple([nxt] + new_state))
    init = b.tuple([b.constant(np.int32(0))] + list(init_ops))
    return b.while_loop(cond._built, body_comp, init)


def _stacking_loop(b, body_comp, init, stacks, trip, state_shape):
    is_tuple = state_shape.is_tuple
    carry_shapes = [state_shape] + [s.shape for s in stacks]

    def step(sub, i, carry):
        state, stk = carry[0], carry[1:]
        leaves = _tuple_elements(sub, state) if is_tuple else [state]
        zero = sub.constant(np.int32(0))
        new_stk = []
        for leaf, s in zip(leaves, stk):
            upd = sub.reshape(leaf, (1,) + leaf.dims)
            new_stk.append(sub.dynamic_update_slice(s, upd, [i] + [zero] * len(leaf.dims)))
        nxt = sub.call(body_comp, [state])
        return [nxt] + new_stk

    loop = _counter_loop(b, f"{body_comp.name}_fwd", carry_shapes, step, trip, [init] + stacks)
    state = b.get_tuple_element(loop, 1)
    return b.tuple([state] + [b.get_tuple_element(loop, 2 + k) for k in range(len(stacks))])


def _reverse_loop(b, vjp_body, stacked, ct_state, trip, state_shape):
    is_tuple = state_shape.is_tuple
    carry_shapes = [ct_state.shape] + [s.shape for s in stacked]

    def step(sub, i, carry):
        ct, stk = carry[0], carry[1:]
        k = sub.binary("subtract", sub.constant(np.int32(trip - 1)), i)
        zero = sub.constant(np.int32(0))
        leaves = []
        for s in stk:
            dims = s.dims[1:]
            sl = sub.dynamic_slice(s, [k] + [zero] * len(dims), (1,) + dims)
            leaves.append(sub.reshape(sl, dims))
        state = sub.tuple(leaves) if is_tuple else leaves[0]
        out = sub.call(vjp_body, [state, ct])
        return [sub.get_tuple_element(out, 0)] + list(stk)

    loop = _counter_loop(b, "while_bwd", carry_shapes, step, trip, [ct_state] + list(stacked))
    return b.get_tuple_element(loop, 1)


