"""Collectives on the GPU: a ``CollectiveThunk`` per all-reduce, all-gather,
reduce-scatter, all-to-all, collective-permute, collective-broadcast,
replica-id and partition-id of a module compiled for several devices
(``xla.compile(..., num_replicas=N, num_partitions=M)``; a one-device
module's collectives are gone before this, ``one-device-collectives``).

The data is staged through the host: the thunk reads its operands back
(which waits for the kernels before it on the device's stream), computes
the result with ``xla.runtime.collectives.run_collective`` (the
evaluator's semantics, as the CPU and the interpreter: the participants
meet at the runtime's rendezvous, threads of one process or MPI ranks),
and uploads the result. Correct on the emulator and on a GPU, one device
per thread; not fast: every collective is a synchronization and two host
copies. XLA's GPU backend calls NCCL instead (device-to-device over NVLink),
which is not written here (NCCL refuses two ranks on one GPU, the only
configuration this project can test).

The async ``-start``/``-done`` pairs become their synchronous op in the
pipeline (``async-to-sync``); a pair it leaves raises here, naming the op.
Operands and results must be row-major arrays (no tokens).
"""
from dataclasses import dataclass

import numpy as np

from xla.backends.cpu.loop_emitter import major_to_minor
from xla.backends.gpu.kernels import unsupported
from xla.runtime.collectives import COLLECTIVE_OPCODES, run_collective

ASYNC_OPCODES = frozenset(["all-reduce-start", "all-reduce-done", "all-gather-start",
                           "all-gather-done", "collective-permute-start",
                           "collective-permute-done"])


@dataclass
class CollectiveThunk:
    """``instruction``'s result from its operands, through the host:
    ``operands``/``results`` are ((allocation index, offset), shape) per
    array leaf."""
    instruction: object
    operands: list
    results: list

    @property
    def name(self):
        return self.instruction.name


def _leaf(h, assignment, instr, index, shape, what):
    if not shape.is_array:
        raise unsupported(h, f"a token or tuple {what}")
    if major_to_minor(shape) != list(range(shape.rank)):
        raise unsupported(h, f"a non-row-major {what} ({shape})")
    buffer = assignment.buffer(instr, index)
    return (buffer.allocation.index, buffer.offset), shape


def collective_thunk(h, assignment):
    """The CollectiveThunk of collective ``h``."""
    if h.opcode in ASYNC_OPCODES:
        raise unsupported(h, "an asynchronous collective whose start is used by more than its "
                             "done (write the synchronous form)")
    if h.opcode not in COLLECTIVE_OPCODES:
        raise unsupported(h, "not a collective")
    if h.opcode == "collective-permute" and len(h.operands) > 1 and not h.shape.is_tuple:
        raise unsupported(h, "in-place collective-permute")
    operands = [_leaf(h, assignment, o, index, shape, "operand")
                for o in h.operands for index, shape in o.shape.leaves()]
    results = [_leaf(h, assignment, h, index, shape, "result")
               for index, shape in h.shape.leaves()]
    return CollectiveThunk(h, operands, results)


def run_collective_thunk(device, thunk, memory):
    """Runs ``thunk`` on ``device`` over ``memory`` (allocation -> memory)."""
    def view(slice_, shape):
        (a, o), n = slice_, shape.byte_size()
        return memory[a].view(o, n)
    operands = [device.download(view(s, shape)).view(shape.dtype).reshape(shape.dimensions)
                if shape.byte_size() else np.zeros(shape.dimensions, shape.dtype)
                for s, shape in thunk.operands]
    outs = [np.empty(shape.dimensions, shape.dtype) for _, shape in thunk.results]
    run_collective(thunk.instruction, operands, outs)
    for (s, shape), out in zip(thunk.results, outs):
        if out.nbytes:
            device.upload(view(s, shape), out)
