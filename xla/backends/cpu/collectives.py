"""The CPU runtime's collectives: ``__xla_cpu_collective(op, operands, results)``,
a function the generated code calls (``emit_collectives.py``).

``op`` numbers a registered instruction (``register_op``, at code generation);
``operands``/``results`` are arrays of buffer addresses, one per array leaf
of the operands and of the result. The function views them as NumPy arrays
and computes the result with the evaluator's collectives
(``xla.hlo.evaluator.ops_collectives``) for the device this thread runs
(``xla.runtime.collectives.current_device()``; none: a single device), so
the CPU and the interpreter share one definition of every collective. It is
a ctypes callback: it takes the GIL for the exchange, which the other
devices' threads do not hold while their code runs.

Op numbers are process-wide and baked into the generated code, so a module
with collectives is not written to the persistent cache.
"""
import ctypes
import itertools
import threading

import numpy as np

from xla.hlo.evaluator import Evaluator
from xla.hlo.evaluator.ops_collectives import all_reduce_into
from xla.hlo.evaluator.registry import HANDLERS

SYMBOL = "__xla_cpu_collective"
OPCODES = frozenset(["all-reduce", "all-gather", "reduce-scatter", "all-to-all",
                     "collective-permute", "collective-broadcast", "replica-id", "partition-id"])

_ops = {}
_ids = itertools.count(1)
_lock = threading.Lock()
_local = threading.local()


def register_op(instr, operand_shapes, result_shapes):
    with _lock:
        op = next(_ids)
        _ops[op] = (instr, operand_shapes, result_shapes)
    return op


def has_collectives(module):
    return any(i.opcode in OPCODES for i in module.all_instructions())


def _view(address, shape):
    nbytes = shape.byte_size()
    if nbytes == 0:
        return np.zeros(shape.dimensions, shape.dtype)
    raw = (ctypes.c_char * nbytes).from_address(address)
    return np.frombuffer(raw, dtype=np.uint8).view(shape.dtype).reshape(shape.dimensions)


def _evaluator():
    """The evaluator state of this thread's current execution (its
    collective counters key the rendezvous)."""
    from xla.runtime.collectives import current_device
    device = current_device()
    state = getattr(_local, "state", None)
    if state is None or state[0] is not device:
        state = _local.state = (device, Evaluator(device=device))
    return state[1]


def _run(op, operands, results):
    instr, operand_shapes, result_shapes = _ops[op]
    if instr.opcode == "all-reduce":
        views = [_view(operands[k], s) for k, s in enumerate(operand_shapes)]
        outs = [_view(results[k], s) for k, s in enumerate(result_shapes)]
        if all_reduce_into(instr, _evaluator(), views, outs):
            return
    args = [np.array(_view(operands[k], s)) for k, s in enumerate(operand_shapes)]
    value = HANDLERS[instr.opcode](instr, args, _evaluator())
    leaves = list(value) if instr.shape.is_tuple else [value]
    for k, (leaf, shape) in enumerate(zip(leaves, result_shapes)):
        np.copyto(_view(results[k], shape), np.asarray(leaf, shape.dtype).reshape(shape.dimensions))


_CALLBACK_TYPE = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.POINTER(ctypes.c_void_p),
                                  ctypes.POINTER(ctypes.c_void_p))


def _callback(op, operands, results):
    try:
        _run(op, operands, results)
    except BaseException as e:   # noqa: BLE001 - no exception may cross into generated code
        if getattr(_local, "error", None) is None:
            _local.error = e


_CALLBACK = _CALLBACK_TYPE(_callback)


def address():
    return ctypes.cast(_CALLBACK, ctypes.c_void_p).value


def take_error():
    """The error a collective on this thread raised during the last
    execution (raised again by the executable), or None."""
    error = getattr(_local, "error", None)
    _local.error = None
    return error
