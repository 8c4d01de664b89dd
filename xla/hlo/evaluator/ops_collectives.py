"""Evaluator handlers: collectives, on one device or many, and the
dynamic-shape ops on static shapes.

On one device (``ctx.device`` None) every group has one member, itself:
all-reduce and reduce-scatter return their operand, all-gather and
all-to-all too, and collective-permute returns its operand where a pair
``{0,0}`` says so and zeros otherwise (XLA's value for a device that
receives nothing). A module compiled for more participants (e.g. an
all-gather growing a dimension) raises UnimplementedError naming the
instruction.

On several devices ``ctx.device`` is a ``DeviceContext``: this device's
replica and partition, the device counts, and ``exchange(key, participants,
value)``, which hands ``value`` to the other participants and returns every
participant's value in group order (the runtime's communicator provides it:
threads in one process, or MPI). The participants and their order come
from ``xla.hlo.replica_groups``; the semantics are XLA's:

* all-reduce: ``to_apply`` folded over the participants' operands in group
  order (through ``call_elementwise``, so any reducer and every dtype);
* all-gather: the operands concatenated along ``dimensions`` in group order;
* reduce-scatter: the all-reduce split along ``dimensions`` into one block
  per participant, this device's block by its position in the group;
* all-to-all: with ``dimensions={d}`` the operand is split along d into one
  block per participant, block j goes to participant j, and the received
  blocks are concatenated along d; without, operand j goes to participant j;
* collective-permute: a device receives the operand of the device whose
  ``source_target_pairs`` entry targets it, zeros when none does;
* collective-broadcast: the first participant's operand;
* the -start/-done forms run the collective at the start.

Each execution of a collective instruction is one rendezvous, keyed by the
instruction's name, how many times this device has executed it (loops), and
the participants.
"""
from dataclasses import dataclass
from typing import Callable

import numpy as np

from xla.hlo import replica_groups
from xla.hlo.evaluator.registry import register
from xla.errors import InvalidArgumentError, UnimplementedError


@dataclass(frozen=True)
class DeviceContext:
    """Which device an execution is, and how it reaches the others."""
    replica: int
    partition: int
    num_replicas: int
    num_partitions: int
    exchange: Callable   # exchange(key, participants, value) -> [value per participant]
    # all_reduce(key, participants, arrays, reducer opcode) -> arrays, or None
    # when the transport has no such reduction (MPI's Allreduce; optional).
    all_reduce: Callable = None

    @property
    def id(self):
        return self.replica * self.num_partitions + self.partition


def _leaf_shapes(shape):
    return list(shape.tuple_shapes) if shape.is_tuple else [shape]


def _identity(instr, operands, shape=None):
    shape = instr.shape if shape is None else shape
    shapes = _leaf_shapes(shape)
    if len(shapes) != len(operands):
        raise UnimplementedError(f"{instr.opcode} {instr.name}: unexpected operand count on the interpreter")
    out = []
    for x, s in zip(operands, shapes):
        if tuple(np.shape(x)) != tuple(s.dimensions):
            raise UnimplementedError(
                f"{instr.opcode} {instr.name} needs more than one participant "
                f"({tuple(np.shape(x))} -> {s}); it runs on one device here (compile with "
                "num_replicas/num_partitions to run it on several)")
        out.append(np.asarray(x).astype(s.dtype, copy=False))
    return tuple(out) if shape.is_tuple else out[0]


def _group(instr, ctx):
    """(participants, this device's position, the exchange for this execution)."""
    d = ctx.device
    members = replica_groups.participants(instr, d.replica, d.partition, d.num_replicas,
                                          d.num_partitions)
    me = members.index((d.replica, d.partition))
    count = ctx.collective_counts.get(instr.name, 0)
    ctx.collective_counts[instr.name] = count + 1
    key = (instr.name, count, tuple(members))

    def exchange(value):
        return d.exchange(key, members, value)
    return members, me, exchange


def _fold(instr, ctx, values, shapes):
    """to_apply over the participants' values (lists of leaves), in order."""
    comp = instr.attrs["to_apply"]
    acc = [np.asarray(v) for v in values[0]]
    for later in values[1:]:
        acc = [np.asarray(ctx.call_elementwise(comp, [a, np.asarray(b)])) for a, b in zip(acc, later)]
    return [a.astype(s.dtype, copy=False).reshape(s.dimensions) if s.is_array else a
            for a, s in zip(acc, shapes)]


def _dimension(instr):
    dims = instr.attr("dimensions", ())
    dims = list(dims) if isinstance(dims, (list, tuple)) else [dims]
    if len(dims) != 1:
        raise InvalidArgumentError(f"{instr.opcode} {instr.name} needs one dimension, has {dims}")
    return int(dims[0])


def _pack(instr, shape, out):
    return tuple(out) if shape.is_tuple else out[0]


def _reducer_opcode(comp):
    """The binary opcode a reducer applies to its two parameters, or None."""
    root = comp.root_instruction
    params = [i for i in comp.instructions if i.opcode == "parameter"]
    if len(params) == 2 and len(root.operands) == 2 and \
            {id(o) for o in root.operands} == {id(p) for p in params}:
        return root.opcode
    return None


def all_reduce_into(instr, ctx, operands, outs):
    """all-reduce of ``operands`` written into the arrays ``outs`` by the
    transport's own reduction (``DeviceContext.all_reduce``), without
    copies; False (nothing done) where it has none for this reducer or type."""
    device = ctx.device
    if device is None or device.all_reduce is None or len(operands) != len(outs):
        return False
    reducer = _reducer_opcode(instr.attrs["to_apply"])
    if reducer is None or any(np.asarray(o).dtype != r.dtype for o, r in zip(operands, outs)):
        return False
    members = replica_groups.participants(instr, device.replica, device.partition,
                                          device.num_replicas, device.num_partitions)
    count = ctx.collective_counts.get(instr.name, 0)
    key = (instr.name, count, tuple(members))
    if device.all_reduce(key, members, list(operands), reducer, outs) is None:
        return False
    ctx.collective_counts[instr.name] = count + 1
    return True


def all_reduce_values(instr, ctx, operands, shape):
    if ctx.device is None:
        return _identity(instr, operands, shape)
    members, _, exchange = _group(instr, ctx)
    arrays = [np.asarray(x) for x in operands]
    if ctx.device.all_reduce is not None:
        reducer = _reducer_opcode(instr.attrs["to_apply"])
        key = (instr.name, ctx.collective_counts[instr.name] - 1, tuple(members))
        reduced = ctx.device.all_reduce(key, members, arrays, reducer) if reducer else None
        if reduced is not None:
            return _pack(instr, shape, [r.astype(s.dtype, copy=False)
                                        for r, s in zip(reduced, _leaf_shapes(shape))])
    values = exchange(arrays)
    return _pack(instr, shape, _fold(instr, ctx, values, _leaf_shapes(shape)))


def all_gather_values(instr, ctx, operands, shape):
    if ctx.device is None:
        return _identity(instr, operands, shape)
    _, _, exchange = _group(instr, ctx)
    values = exchange([np.asarray(x) for x in operands])
    d = _dimension(instr)
    out = [np.concatenate([v[k] for v in values], axis=d).astype(s.dtype, copy=False)
           for k, s in enumerate(_leaf_shapes(shape))]
    return _pack(instr, shape, out)


@register("all-reduce", "all-reduce-start")
def all_reduce(instr, operands, ctx):
    return all_reduce_values(instr, ctx, operands, instr.shape)


@register("all-reduce-done")
def all_reduce_done(instr, operands, ctx):
    return operands[0]


@register("all-gather")
def all_gather(instr, operands, ctx):
    return all_gather_values(instr, ctx, operands, instr.shape)


@register("reduce-scatter")
def reduce_scatter(instr, operands, ctx):
    if ctx.device is None:
        return _identity(instr, operands)
    members, me, exchange = _group(instr, ctx)
    values = exchange([np.asarray(x) for x in operands])
    shapes = _leaf_shapes(instr.shape)
    operand_shapes = [o.shape for o in instr.operands]
    reduced = _fold(instr, ctx, values, operand_shapes)
    d = _dimension(instr)
    out = [np.array_split(r, len(members), axis=d)[me].astype(s.dtype, copy=False)
           for r, s in zip(reduced, shapes)]
    return _pack(instr, instr.shape, out)


@register("all-to-all")
def all_to_all(instr, operands, ctx):
    if ctx.device is None:
        return _identity(instr, operands)
    members, me, exchange = _group(instr, ctx)
    n = len(members)
    if instr.attrs.get("dimensions") is not None:
        d = _dimension(instr)
        x = np.asarray(operands[0])
        if x.shape[d] % n:
            raise InvalidArgumentError(f"all-to-all {instr.name}: dimension {d} of size "
                                       f"{x.shape[d]} does not split into {n} blocks")
        values = exchange(np.split(x, n, axis=d))
        return np.concatenate([v[me] for v in values], axis=d).astype(instr.shape.dtype, copy=False)
    if len(operands) != n:
        raise InvalidArgumentError(f"all-to-all {instr.name}: {len(operands)} operands for "
                                   f"{n} participants")
    values = exchange([np.asarray(x) for x in operands])
    return tuple(np.asarray(v[me]).astype(s.dtype, copy=False)
                 for v, s in zip(values, _leaf_shapes(instr.shape)))


@register("all-gather-start")
def all_gather_start(instr, operands, ctx):
    # Shape (operand(s), result(s)).
    shapes = instr.shape.tuple_shapes
    results = all_gather_values(instr, ctx, operands, shapes[1])
    ops = tuple(operands) if shapes[0].is_tuple else operands[0]
    return (ops, results)


@register("all-gather-done", "collective-permute-done")
def async_pair_done(instr, operands, ctx):
    return operands[0][1]


def _permute(instr, ctx, x, shape):
    pairs = replica_groups.source_target_pairs(instr)
    if ctx.device is None:
        if (0, 0) in pairs:
            return np.asarray(x).astype(shape.dtype, copy=False)
        if any(t == 0 for _, t in pairs):
            raise UnimplementedError(
                f"collective-permute {instr.name} receives from another device; it runs on one "
                "device here (compile with num_replicas/num_partitions)")
        return np.zeros(shape.dimensions, shape.dtype)
    members, me, exchange = _group(instr, ctx)
    mode = replica_groups.group_mode(instr)
    ids = [p if mode == replica_groups.CROSS_PARTITION else
           (r * ctx.device.num_partitions + p if mode == replica_groups.FLATTENED_ID else r)
           for r, p in members]
    values = exchange(np.asarray(x))
    sources = [s for s, t in pairs if t == ids[me]]
    if len(sources) > 1:
        raise InvalidArgumentError(f"collective-permute {instr.name}: device {ids[me]} is the "
                                   f"target of {len(sources)} pairs")
    if not sources:
        return np.zeros(shape.dimensions, shape.dtype)
    return np.asarray(values[ids.index(sources[0])]).astype(shape.dtype, copy=False)


@register("collective-permute")
def collective_permute(instr, operands, ctx):
    shapes = _leaf_shapes(instr.shape)
    if len(operands) >= 2 and not instr.shape.is_tuple:
        # In-place form (input, output, input_start_indices, output_start_indices).
        raise UnimplementedError("in-place collective-permute on the interpreter")
    out = [_permute(instr, ctx, x, s) for x, s in zip(operands, shapes)]
    return tuple(out) if instr.shape.is_tuple else out[0]


@register("collective-permute-start")
def collective_permute_start(instr, operands, ctx):
    shapes = instr.shape.tuple_shapes
    result = _permute(instr, ctx, operands[0], shapes[1])
    rest = tuple(np.zeros(s.dimensions, s.dtype) if s.is_array else None for s in shapes[2:])
    return (operands[0], result) + rest


@register("collective-broadcast")
def collective_broadcast(instr, operands, ctx):
    if ctx.device is None:
        return _identity(instr, operands)
    _, _, exchange = _group(instr, ctx)
    values = exchange([np.asarray(x) for x in operands])
    out = [np.asarray(v).astype(s.dtype, copy=False) for v, s in zip(values[0], _leaf_shapes(instr.shape))]
    return _pack(instr, instr.shape, out)


@register("dynamic-reshape")
def dynamic_reshape(instr, operands, ctx):
    x = np.asarray(operands[0])
    sizes = [int(s) for s in operands[1:]]
    if not sizes:
        sizes = list(instr.shape.dimensions)
    bounds = list(instr.shape.dimensions)
    if len(sizes) != len(bounds) or any(not 0 <= s <= b for s, b in zip(sizes, bounds)):
        raise InvalidArgumentError(
            f"dynamic-reshape {instr.name}: sizes {sizes} are not within the result's bounds "
            f"{bounds}")
    if int(np.prod(sizes)) != x.size:
        raise InvalidArgumentError(
            f"dynamic-reshape {instr.name}: sizes {sizes} hold {int(np.prod(sizes))} elements, "
            f"the operand {x.size}")
    return x.reshape(sizes).astype(instr.shape.dtype, copy=False)
