"""Who takes part in a collective: XLA's replica groups, read from an instruction.

A program runs on ``num_replicas x num_partitions`` devices; device
``(replica, partition)`` has the flattened id ``replica * num_partitions +
partition``. How a collective's ``replica_groups`` are read depends on its
group mode, decided (as in XLA's ``GetCollectiveOpGroupMode``) by
``channel_id`` and ``use_global_device_ids``:

- no ``channel_id`` (``use_global_device_ids`` must be unset): cross-replica:
  groups of replica ids, each within the device's own partition;
- all-reduce, all-gather and reduce-scatter, which carry
  ``use_global_device_ids`` (false when not written), with a ``channel_id``:
  cross-replica-and-partition when it is false (groups of replica ids, with
  every partition of those replicas taking part), flattened ids when true;
- all-to-all, collective-permute and collective-broadcast, which carry none,
  with a ``channel_id``: cross-partition (ids are partition ids within the
  device's replica).

An empty ``replica_groups`` is one group of every id of the mode's kind.
Groups are written ``{{0,1},{2,3}}``, in iota form ``[2,2]<=[4]`` (the
ids 0..3 reshaped to 2 groups of 2) and ``[2,2]<=[2,2]T(1,0)`` (reshaped to
the second shape, transposed, then regrouped): ``{{0,2},{1,3}}``, or over a
device mesh, ``mesh['x'=2,'y'=2] {'y'}``: the devices that differ only in
their ``y`` coordinate, ``{{0,1},{2,3}}``.

The participants of a group are listed in group order (for
cross-replica-and-partition: each replica of the group with all its
partitions, replica-major), which is the order all-gather concatenates in
and all-to-all and reduce-scatter split in.
"""
import re

import numpy as np

from xla.errors import InvalidArgumentError

CROSS_REPLICA = "cross_replica"
CROSS_PARTITION = "cross_partition"
CROSS_REPLICA_AND_PARTITION = "cross_replica_and_partition"
FLATTENED_ID = "flattened_id"

# Ops that carry use_global_device_ids (false when not written); the others
# (all-to-all, collective-permute, collective-broadcast) have none, and
# with a channel_id they are cross-partition.
_GLOBAL_ID_OPS = frozenset(["all-reduce", "all-reduce-start", "all-gather", "all-gather-start",
                            "reduce-scatter"])

_MESH = re.compile(r"^mesh\[(.*?)\]\s*\{(.*?)\}$")
_IOTA = re.compile(r"^\[([\d,\s]*)\]<=\[([\d,\s]*)\](?:T\(([\d,\s]*)\))?$")


def _ints(text):
    return [int(v) for v in text.replace(" ", "").split(",") if v]


def parse_replica_groups(value):
    """A list of groups (lists of ids) from the attribute's value: None,
    ``{}``, ``{{0,1},{2,3}}``, iota form, or an already parsed list."""
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return [list(int(v) for v in g) for g in value]
    text = getattr(value, "text", str(value)).strip()
    m = _IOTA.match(text)
    if m:
        shape, reshape = _ints(m.group(1)), _ints(m.group(2))
        ids = np.arange(int(np.prod(reshape, dtype=np.int64)))
        if int(np.prod(shape, dtype=np.int64)) != ids.size or len(shape) != 2:
            raise InvalidArgumentError(f"replica_groups {text}: the group shape {shape} must be "
                                       f"2-D and hold the {ids.size} ids")
        ids = ids.reshape(reshape)
        if m.group(3) is not None:
            perm = _ints(m.group(3))
            if sorted(perm) != list(range(len(reshape))):
                raise InvalidArgumentError(f"replica_groups {text}: T{tuple(perm)} is not a "
                                           "permutation")
            ids = ids.transpose(perm)
        return ids.reshape(shape).tolist()
    m = _MESH.match(text)
    if m:
        return _mesh_groups(text, m.group(1), m.group(2))
    inner = text.strip()
    if not (inner.startswith("{") and inner.endswith("}")):
        raise InvalidArgumentError(f"replica_groups {text!r} is neither {{{{...}},...}} nor "
                                   "iota form [g,n]<=[...]")
    inner = inner[1:-1].strip()
    if not inner:
        return []
    groups = re.findall(r"\{([^{}]*)\}", inner)
    return [_ints(g) for g in groups]


def _mesh_groups(text, axes_text, chosen_text):
    """``mesh['a'=2,'b'=4] {'b'}``: the device ids 0..7 laid out on the mesh
    row-major; a group is the devices that differ only along the chosen
    axes, ordered by those axes' coordinates in the order listed."""
    axes = re.findall(r"'([^']*)'\s*=\s*(\d+)", axes_text)
    chosen = re.findall(r"'([^']*)'", chosen_text)
    names = [a for a, _ in axes]
    if not axes or any(c not in names for c in chosen) or len(set(chosen)) != len(chosen):
        raise InvalidArgumentError(f"replica_groups {text!r}: the axes {chosen} are not axes "
                                   f"of the mesh {names}")
    sizes = [int(n) for _, n in axes]
    ids = np.arange(int(np.prod(sizes, dtype=np.int64))).reshape(sizes)
    order = [i for i, a in enumerate(names) if a not in chosen] + [names.index(c) for c in chosen]
    group_size = int(np.prod([sizes[names.index(c)] for c in chosen], dtype=np.int64))
    return ids.transpose(order).reshape(-1, group_size).tolist()


def group_mode(instr):
    """The group mode of a collective instruction (see the module docstring)."""
    has_channel = instr.attrs.get("channel_id") is not None
    global_ids = str(getattr(instr.attrs.get("use_global_device_ids"), "text",
                             instr.attrs.get("use_global_device_ids"))).lower() == "true"
    if not has_channel:
        if global_ids:
            raise InvalidArgumentError(f"{instr.name}: use_global_device_ids needs a channel_id")
        return CROSS_REPLICA
    if instr.opcode not in _GLOBAL_ID_OPS:
        return CROSS_PARTITION
    if global_ids:
        return FLATTENED_ID
    return CROSS_REPLICA_AND_PARTITION


def participants(instr, replica, partition, num_replicas, num_partitions):
    """The devices ``(replica, partition)`` of the group the given device is
    in, in group order."""
    mode = group_mode(instr)
    groups = parse_replica_groups(instr.attrs.get("replica_groups"))
    size = {CROSS_REPLICA: num_replicas, CROSS_PARTITION: num_partitions,
            CROSS_REPLICA_AND_PARTITION: num_replicas,
            FLATTENED_ID: num_replicas * num_partitions}[mode]
    if not groups:
        groups = [list(range(size))]
    mine = {CROSS_REPLICA: replica, CROSS_PARTITION: partition,
            CROSS_REPLICA_AND_PARTITION: replica,
            FLATTENED_ID: replica * num_partitions + partition}[mode]
    found = [g for g in groups if mine in g]
    seen = [i for g in groups for i in g]
    if len(found) != 1 or len(seen) != len(set(seen)) or any(not 0 <= i < size for i in seen):
        raise InvalidArgumentError(
            f"{instr.opcode} {instr.name}: replica_groups {groups} do not place device "
            f"(replica {replica}, partition {partition}) in exactly one group of ids below {size} "
            f"({mode.replace('_', '-')}, {num_replicas} replicas x {num_partitions} partitions)")
    group = found[0]
    if mode == CROSS_REPLICA:
        return [(r, partition) for r in group]
    if mode == CROSS_PARTITION:
        return [(replica, p) for p in group]
    if mode == CROSS_REPLICA_AND_PARTITION:
        return [(r, p) for r in group for p in range(num_partitions)]
    return [divmod(i, num_partitions) for i in group]


def source_target_pairs(instr):
    """collective-permute's ``source_target_pairs={{0,1},{1,2}}`` as [(source, target)]."""
    value = instr.attrs.get("source_target_pairs")
    if value is None:
        return []
    text = getattr(value, "text", str(value))
    return [(int(a), int(b)) for a, b in re.findall(r"\{\s*(\d+)\s*,\s*(\d+)\s*\}", text)]
