"""The CPU runtime's collectives: ``__xla_cpu_collective(op, operands, results)``,
a function the generated code calls (``emit_collectives.py``).

``op`` numbers a registered instruction (``register_op``, at code generation);
``operands``/``results`` are arrays of buffer addresses, one per array leaf
of the operands and of the result. The function views them as NumPy arrays
and computes the result with ``xla.runtime.collectives.run_collective``
(the evaluator's collectives for the device this thread runs; none: a
single device), so the CPU, the GPU and the interpreter share one
definition of every collective. It is
a ctypes callback: it takes the GIL for the exchange, which the other
devices' threads do not hold while their code runs.

Op numbers are process-wide and baked into the generated code, so a module
with collectives is not written to the persistent cache.
"""
import ctypes
import itertools
import threading

import numpy as np

from xla.runtime.collectives import COLLECTIVE_OPCODES, run_collective

SYMBOL = "__xla_cpu_collective"

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
    return any(i.opcode in COLLECTIVE_OPCODES for i in module.all_instructions())


def _view(address, shape):
    nbytes = shape.byte_size()
    if nbytes == 0:
        return np.zeros(shape.dimensions, shape.dtype)
    raw = (ctypes.c_char * nbytes).from_address(address)
    return np.frombuffer(raw, dtype=np.uint8).view(shape.dtype).reshape(shape.dimensions)


def _run(op, operands, results):
    instr, operand_shapes, result_shapes = _ops[op]
    run_collective(instr, [_view(operands[k], s) for k, s in enumerate(operand_shapes)],
                   [_view(results[k], s) for k, s in enumerate(result_shapes)])


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
