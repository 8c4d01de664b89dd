"""SPMD partitioning of control flow (``spmd_partitioner.py`` calls these):
the computations a while, call or conditional runs are partitioned too, so
that values carried through them stay cut.

- while: the carried tuple's sharding is the one written on the while
  (``ShardingPropagation`` gives the while, its operand, the body's
  parameter and root and the condition's parameter one sharding, to a fixed
  point), replicated where none is known. The operand is resharded to it;
  body and condition are partitioned with their parameter in it, and the
  body's root is resharded to it, so that every iteration hands the next
  the tiles it expects. The while runs on the tiles: collectives appear in
  the body only where its own instructions need them.
- call: the callee is partitioned with its parameters in the shardings the
  operands have; the call's result has the callee root's sharding.
- conditional: each branch is partitioned with its parameter in its
  operand's sharding and its root resharded to the conditional's sharding
  (written, or propagated from the branches; replicated where none is
  known), so that every branch gives the same tiles. The branch index is a
  scalar, whole on every device.

Each call site gets its own partitioned copy of the computations it runs
(their parameter shardings may differ). Not done: XLA's while-loop
optimizations (loop-invariant code motion of collectives, windowed einsum
inside loops); a value carried as a tuple of tuples keeps the shardings of
its nested elements only as XLA's flattened tuple sharding lists them.
"""
from xla.hlo.ir import HloComputation
from xla.hlo.sharding import REPLICATED, HloSharding


def carried_sharding(shape, written):
    """The sharding of a value of ``shape`` a control-flow op carries:
    ``written`` (XLA's flattened tuple sharding, or one for every leaf)
    nested as the shape is; replicated where it is not tiled or replicated
    (scalars, unknown)."""
    leaves = [leaf for _, leaf in shape.leaves()]
    if written is not None and written.kind == "tuple" and len(written.elements) == len(leaves):
        flat = list(written.elements)
    else:
        flat = [written] * len(leaves)
    flat = [s if s is not None and s.kind in ("tiled", "replicated") and leaf.is_array
            and leaf.rank > 0 else REPLICATED for s, leaf in zip(flat, leaves)]
    return _nest(shape, iter(flat))


def _nest(shape, flat):
    if not shape.is_tuple:
        return next(flat)
    return HloSharding("tuple", elements=tuple(_nest(e, flat) for e in shape.tuple_shapes))


def _partition_called(p, comp, param_shardings, root_sharding):
    """``comp`` partitioned with its parameters in ``param_shardings`` and,
    when ``root_sharding`` is given, its result resharded to it: (the new
    computation, its result's sharding)."""
    new, shardings = p.computation(comp, p.computation_name(comp), param_shardings)
    have = shardings[id(comp.root_instruction)]
    if root_sharding is None:
        p.computations.append(new)
        return new, have
    saved, p.instructions = p.instructions, list(new.instructions)
    saved_pid, p._pid = p._pid, None
    try:
        root = p.reshard_value(new.root_instruction, have, root_sharding, comp.root_instruction.shape)
        if root is not new.root_instruction:
            # The resharding needs its own partition-id when it cuts locally.
            new = HloComputation(new.name, p.instructions, root=root)
    finally:
        p.instructions, p._pid = saved, saved_pid
    p.computations.append(new)
    return new, root_sharding


def while_loop(p, h, operands, have, attrs, written):
    shape = h.shape
    carried = carried_sharding(shape, written)
    init = p.reshard_value(operands[0], have[0], carried, h.operands[0].shape)
    body, _ = _partition_called(p, h.attr("body"), [carried], carried)
    condition, _ = _partition_called(p, h.attr("condition"), [carried], REPLICATED)
    attrs = {**attrs, "body": body, "condition": condition}
    return p.add("while", p.local_shape(shape, carried), [init], attrs=attrs), carried


def call(p, h, operands, have, attrs, written):
    comp, result = _partition_called(p, h.attr("to_apply"), list(have), None)
    return p.add("call", comp.root_instruction.shape, operands,
                 attrs={**attrs, "to_apply": comp}), result


def conditional(p, h, operands, have, attrs, written):
    out = carried_sharding(h.shape, written)
    index = p.reshard_value(operands[0], have[0], REPLICATED, h.operands[0].shape)
    attrs = dict(attrs)
    if "branch_computations" in attrs:
        branches = attrs["branch_computations"]
        attrs["branch_computations"] = tuple(
            _partition_called(p, c, [have[1 + k]], out)[0] for k, c in enumerate(branches))
    else:
        for k, role in enumerate(("true_computation", "false_computation")):
            attrs[role] = _partition_called(p, attrs[role], [have[1 + k]], out)[0]
    shape = p.local_shape(h.shape, out)
    return p.add("conditional", shape, [index] + list(operands[1:]), attrs=attrs), out


HANDLERS = {"while": while_loop, "call": call, "conditional": conditional}
