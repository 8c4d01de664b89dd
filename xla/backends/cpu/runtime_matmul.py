"""The runtime's matmul as the IR emitter calls it: a dot the runtime
computes (``emit_runtime_matmul``, called by ``emit_small_gemm``'s dot
emitter where its own kernel does not apply) and ``dot-addend-fusion``'s
kOutput fusions (``emit_dot_addend``: the product and the update that
reads it, ``__xla_cpu_matmul_addend_f32``)."""
import math

from llvmlite import ir

from xla.backends.cpu import dot_addend_fusion
from xla.backends.cpu.dot_operand_layouts import matmul_function, matmul_transposed, runtime_dot
from xla.backends.cpu.element_generator import unsupported
from xla.backends.cpu.kernels import I32, PTR, VOID, Slice
from xla.backends.cpu.llvm_types import F32
from xla.backends.cpu.loop_emitter import I64, i64


def emit_dot_addend(me, h):
    """A kOutput fusion of ``dot-addend-fusion`` (``addend + alpha *
    dot``) as one call to the runtime's ``__xla_cpu_matmul_addend_f32``;
    where the runtime has none (an optimized dump compiled ahead of
    time), the fused computation's loops, each element's dot product
    summed in place (slow, but the module's meaning)."""
    form = dot_addend_fusion.match(h)
    if form is None:
        raise unsupported(h, "kind=kOutput (other than dot-addend-fusion's dot and update)")
    if not emit_runtime_matmul(me, form.dot, fusion=h, addend=form.addend, alpha=form.alpha):
        me.emit_loops(h, h.attr("calls").root_instruction, fusion=h)


def emit_runtime_matmul(me, h, fusion=None, addend=None, alpha=1.0):
    """A canonical f32/f64/s32/c64/c128 dot (or s8 x s8 -> s32, bf16 x
    bf16 -> f32) with row-major operands (or matrices stored transposed,
    the result's too) as a call to the runtime's matmul; False when it
    does not apply. With ``fusion``, ``h`` is the dot of a kOutput
    fusion (its operands the fusion's parameters) that stores ``alpha``
    times the product plus the fusion's operand ``addend`` (a parameter
    number) into the fusion's result: ``__xla_cpu_matmul_addend_f32``."""
    name = matmul_function(h) if len(h.operands) == 2 else None
    if fusion is not None:
        name = dot_addend_fusion.SYMBOL if name == "__xla_cpu_matmul_f32" else None
    if not runtime_dot(h) or name not in me.runtime_symbols:
        return False
    lhs, rhs = h.operands
    nb = len(h.attr("lhs_batch_dims", ()) or ())
    # A result stored transposed has rank nb + 2, so both operands are
    # matrices (runtime_dot): it is written as rhs^T x lhs^T below.
    transposed = [matmul_transposed(s, nb) for s in (lhs.shape, rhs.shape, h.shape)]
    if None in transposed:
        return False
    batch = math.prod(lhs.shape.dimensions[:nb])
    m = lhs.shape.dimensions[nb] if lhs.shape.rank == nb + 2 else 1
    k = lhs.shape.dimensions[-1]
    n = rhs.shape.dimensions[nb + 1] if rhs.shape.rank == nb + 2 else 1
    if h.shape.num_elements() == 0:
        return True
    b = me.builder

    def pointer(x):
        return me.slice_pointer(b, me.table, Slice(me.assignment.buffer(x)).key)

    if fusion is None:
        ptrs = [pointer(x) for x in (lhs, rhs, h)]
        extra_types, extra = [], []
    else:
        ptrs = [pointer(fusion.operands[x.parameter_number]) for x in (lhs, rhs)]
        ptrs.append(pointer(fusion))
        extra_types = [PTR, F32]
        extra = [pointer(fusion.operands[addend]), ir.Constant(F32, float(alpha))]
    fn = me.declare(name, ir.FunctionType(VOID, [PTR, PTR, PTR] + [I64] * 4 + [I32, I32]
                                            + extra_types))
    flags = transposed[:2]
    if transposed[2]:
        # A result stored transposed (dot-result-layouts): its bytes are
        # the row-major product rhs^T x lhs^T, [n, m], each operand read
        # with the other transpose flag.
        ptrs = [ptrs[1], ptrs[0], ptrs[2]]
        m, n = n, m
        flags = [1 - transposed[1], 1 - transposed[0]]
    b.call(fn, ptrs + [i64(batch), i64(m), i64(k), i64(n),
                        ir.Constant(I32, flags[0]), ir.Constant(I32, flags[1])] + extra)
    return True
