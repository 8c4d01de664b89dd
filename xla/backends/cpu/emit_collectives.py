"""Collectives, replica-id and partition-id on the CPU: one call each to the
runtime's ``__xla_cpu_collective(op, operands, results)`` (``collectives.py``),
with arrays of the operands' and results' buffer addresses.

The values are exchanged between the devices of a replicated execution
(``xla.runtime.collectives``) by the same code the evaluator uses, so the
semantics are the interpreter's. Operands and results must be row-major
(the default layout). Ahead-of-time objects have no such runtime function:
compiling a collective for them names the op as unsupported. The async
``-start``/``-done`` pairs become their synchronous op in the pipeline
(``xla/service/async_to_sync.py``); a pair it cannot convert raises here.
"""
from llvmlite import ir

from xla.backends.cpu import collectives
from xla.backends.cpu import loop_emitter as le
from xla.backends.cpu.ir_emitter import PTR, VOID, Slice, register_instruction, unsupported
from xla.backends.cpu.loop_emitter import I64, i64

RUNTIME_SYMBOL = collectives.SYMBOL


def _pointer_array(me, b, buffers):
    """An alloca'd array of the given buffers' addresses (null when empty)."""
    if not buffers:
        return ir.Constant(PTR, None)
    array = me.alloca_builder.alloca(PTR, size=len(buffers), name=me.unique("collective_ptrs"))
    for k, buffer in enumerate(buffers):
        ptr = me.slice_pointer(b, me.table, Slice(buffer).key)
        b.store(ptr, b.gep(array, [i64(k)], inbounds=True, source_etype=PTR))
    return array


@register_instruction("all-reduce", "all-gather", "reduce-scatter", "all-to-all",
                      "collective-permute", "collective-broadcast", "replica-id", "partition-id")
def emit_collective(me, h):
    if RUNTIME_SYMBOL not in me.runtime_symbols:
        raise unsupported(h, "no collectives in this runtime (ahead-of-time objects)")
    if h.opcode == "collective-permute" and len(h.operands) > 1 and not h.shape.is_tuple:
        raise unsupported(h, "in-place collective-permute")
    operand_leaves, operand_buffers = [], []
    for o in h.operands:
        for index, shape in o.shape.leaves():
            if not shape.is_array:
                raise unsupported(h, "a token or tuple-typed operand")
            operand_leaves.append(shape)
            operand_buffers.append(me.assignment.buffer(o, index))
    result_leaves = h.shape.leaves()
    if any(not s.is_array for _, s in result_leaves):
        raise unsupported(h, "a token result")
    if not all(le.is_row_major(s) for s in operand_leaves + [s for _, s in result_leaves]):
        raise unsupported(h, "non-row-major layout")
    result_buffers = [me.assignment.buffer(h, index) for index, _ in result_leaves]
    op = collectives.register_op(h, operand_leaves, [s for _, s in result_leaves])
    fn = me.declare(RUNTIME_SYMBOL, ir.FunctionType(VOID, [I64, PTR, PTR]))
    b = me.builder
    b.call(fn, [i64(op), _pointer_array(me, b, operand_buffers),
                _pointer_array(me, b, result_buffers)])


@register_instruction("all-reduce-start", "all-reduce-done", "all-gather-start", "all-gather-done",
                      "collective-permute-start", "collective-permute-done")
def emit_async_collective(me, h):
    raise unsupported(h, "an asynchronous collective whose start is used by more than its done "
                         "(write the synchronous form)")
