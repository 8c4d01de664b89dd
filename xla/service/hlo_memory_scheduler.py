"""HloMemoryScheduler: orders every computation to keep live memory low.

For each computation the pass flattens the instructions into arrays (operand
CSR, bytes each instruction defines, alias flags, ordering edges) and asks
the C++ core (``xla._core.list_schedule``, csrc/scheduler.h) for a
sequence: XLA's ListScheduler, which greedily runs, among the instructions
whose operands have run, the one that frees the most bytes net of the bytes
it defines, ties going to the earlier instruction. ``comp.instructions`` is
then reordered to that sequence and the module is marked scheduled
(``is_scheduled=true`` in the header); buffer assignment reads the schedule
from the instruction lists.

The memory model: an instruction defines the buffers of every array leaf of
its shape plus a tuple's index table, except that parameters and constants
define nothing the computation frees (their memory is not the schedule's),
and bitcast, get-tuple-element, tuple, opt-barrier and add-dependency define
no new buffer but forward their operands' buffers (so a buffer is freed when
the last user of any of its aliases has run). The root's buffers are live out
and never freed.

What the order keeps: operands before users, control predecessors before
their successors, and side-effecting instructions (rng, infeed, outfeed,
send/recv, collectives, custom-call) in their original relative order.
Computations inside fusions are reordered too (their order is irrelevant to
memory but stays a valid post order).
"""
import numpy as np

from xla import _core
from xla.hlo.opcodes import SIDE_EFFECTING
from xla.service.hlo_pass import HloPass
from xla.service.pass_utils import fusion_computations

# Opcodes whose result is (part of) an operand's buffers: no new memory.
ALIAS_OPCODES = frozenset(["bitcast", "get-tuple-element", "tuple", "opt-barrier", "add-dependency"])

# Kept in their original relative order.
ORDERED_OPCODES = SIDE_EFFECTING | frozenset(["custom-call", "rng-bit-generator"])


def shape_buffer_bytes(shape):
    """Bytes of the buffers a value of ``shape`` defines: every array leaf and
    every tuple index table (8 bytes per element), tokens none."""
    if shape.is_tuple:
        return shape.byte_size() + sum(shape_buffer_bytes(s) for s in shape.tuple_shapes)
    return shape.byte_size() if shape.is_array else 0


def flatten_for_scheduling(comp):
    """The arrays ``_core.list_schedule`` takes, for ``comp``'s instructions in list order."""
    instrs = comp.instructions
    index = {id(instr): i for i, instr in enumerate(instrs)}
    offsets = [0]
    indices = []
    ord_offsets = [0]
    ord_indices = []
    bytes_defined = []
    is_alias = []
    last_ordered = None
    for i, instr in enumerate(instrs):
        indices.extend(index[id(o)] for o in instr.operands)
        offsets.append(len(indices))
        ord_indices.extend(index[id(p)] for p in instr.control_predecessors if id(p) in index)
        if instr.opcode in ORDERED_OPCODES:
            if last_ordered is not None:
                ord_indices.append(last_ordered)
            last_ordered = i
        ord_offsets.append(len(ord_indices))
        alias = instr.opcode in ALIAS_OPCODES
        is_alias.append(alias)
        if alias or instr.opcode in ("parameter", "constant"):
            bytes_defined.append(0)
        else:
            bytes_defined.append(shape_buffer_bytes(instr.shape))
    root = index.get(id(comp.root_instruction), -1) if comp.root_instruction is not None else -1
    return dict(
        offsets=np.asarray(offsets, dtype=np.int64),
        indices=np.asarray(indices, dtype=np.int64),
        bytes_defined=np.asarray(bytes_defined, dtype=np.int64),
        is_alias=np.asarray(is_alias, dtype=np.uint8),
        root=root,
        ordering_offsets=np.asarray(ord_offsets, dtype=np.int64),
        ordering_indices=np.asarray(ord_indices, dtype=np.int64),
    )


def _is_valid_order(arrays):
    """Whether list order already puts operands and ordering predecessors first."""
    n = len(arrays["bytes_defined"])
    for offsets, indices in ((arrays["offsets"], arrays["indices"]),
                             (arrays["ordering_offsets"], arrays["ordering_indices"])):
        users = np.repeat(np.arange(n, dtype=np.int64), np.diff(offsets))
        if np.any(indices >= users):
            return False
    return True


def schedule_computation(comp):
    """The schedule of ``comp`` as a list of its instructions: the list
    schedule, or the current order when that is valid and its estimated peak
    is lower (a greedy schedule can lose to a given order, so XLA's default
    scheduler also tries other orders and keeps the best)."""
    if not comp.instructions:
        return []
    arrays = flatten_for_scheduling(comp)
    sequence = _core.list_schedule(**arrays)
    if _is_valid_order(arrays):
        memory = {k: arrays[k] for k in ("offsets", "indices", "bytes_defined", "is_alias", "root")}
        current = np.arange(len(comp.instructions), dtype=np.int64)
        if (_core.sequence_peak_memory(sequence=current, **memory)
                <= _core.sequence_peak_memory(sequence=sequence, **memory)):
            sequence = current
    return [comp.instructions[i] for i in sequence]


def peak_memory(comp, sequence=None):
    """The scheduler's peak-memory estimate for ``comp`` in ``sequence``
    (default: its current order)."""
    arrays = flatten_for_scheduling(comp)
    if sequence is None:
        order = np.arange(len(comp.instructions), dtype=np.int64)
    else:
        index = {id(instr): i for i, instr in enumerate(comp.instructions)}
        order = np.asarray([index[id(i)] for i in sequence], dtype=np.int64)
    del arrays["ordering_offsets"], arrays["ordering_indices"]
    return _core.sequence_peak_memory(sequence=order, **arrays)


class HloMemoryScheduler(HloPass):
    """Schedules every computation (see the module docstring)."""

    name = "hlo-memory-scheduler"

    def run(self, module):
        changed = not module.is_scheduled
        # A fused computation is not a sequence of buffers but one loop nest;
        # XLA leaves its order alone, and so does this pass.
        fused = fusion_computations(module)
        for comp in module.computations:
            if id(comp) in fused:
                continue
            sequence = schedule_computation(comp)
            if any(a is not b for a, b in zip(sequence, comp.instructions)):
                changed = True
            comp.instructions = sequence
        module.header_attrs["is_scheduled"] = True
        return changed
