"""fft (FFT, IFFT, RFFT, IRFFT over the last len(fft_length) dimensions)
as one call to the runtime's ``__xla_cpu_fft_f32/_f64``
(xla/backends/cpu/runtime/fft.cc: power-of-two lengths as a Stockham
transform vectorized across 16 or 8 lines, others through Eigen's FFT
module), for c64/f32 and c128/f64 operands stored row-major (the default
layout). Transforms of 1 to 3 dimensions; every line of each axis, batch
included, is spread over the runtime's threads.
Ahead-of-time objects have no FFT in their C runtime: compiling one for
them names the op as unsupported.
"""
import math

from llvmlite import ir

from xla.backends.cpu import loop_emitter as le
from xla.backends.cpu.ir_emitter import PTR, VOID, Slice, register_instruction, unsupported
from xla.backends.cpu.llvm_types import I32
from xla.backends.cpu.loop_emitter import I64, i64

KINDS = {"FFT": 0, "IFFT": 1, "RFFT": 2, "IRFFT": 3}
# The real element type each complex side goes with.
_REAL = {"c64": "f32", "c128": "f64", "f32": "f32", "f64": "f64"}


@register_instruction("fft")
def emit_fft(me, h):
    operand = h.operands[0]
    kind_name = str(h.attr("fft_type", "FFT"))
    kind = KINDS.get(kind_name)
    lengths = [int(v) for v in h.attr("fft_length", ())]
    if kind is None:
        raise unsupported(h, f"fft_type {kind_name}")
    if not 1 <= len(lengths) <= 3:
        raise unsupported(h, f"{len(lengths)}-dimensional transform")
    if not (le.is_row_major(operand.shape) and le.is_row_major(h.shape)):
        raise unsupported(h, "non-row-major layout")
    in_et, out_et = operand.shape.element_type.text, h.shape.element_type.text
    real = _REAL.get(in_et)
    if real is None or _REAL.get(out_et) != real:
        raise unsupported(h, f"element types {in_et} -> {out_et}")
    name = f"__xla_cpu_fft_{real}"
    if name not in me.runtime_symbols:
        raise unsupported(h, "no FFT in this runtime (ahead-of-time objects)")
    rank = len(lengths)
    batch = math.prod(h.shape.dimensions[:h.shape.rank - rank])
    if batch == 0 or math.prod(lengths) == 0:
        return
    typ = ir.ArrayType(I64, rank)
    gv = ir.GlobalVariable(me.llmod, typ, name=me.unique(f"fft_length.{h.name}"))
    gv.initializer = ir.Constant(typ, [ir.Constant(I64, n) for n in lengths])
    gv.global_constant = True
    gv.linkage = "internal"
    fn = me.declare(name, ir.FunctionType(VOID, [PTR, PTR, I64, I32, PTR, I32]))
    b = me.builder
    src = me.slice_pointer(b, me.table, Slice(me.assignment.buffer(operand)).key)
    dst = me.slice_pointer(b, me.table, Slice(me.assignment.buffer(h)).key)
    b.call(fn, [src, dst, i64(batch), ir.Constant(I32, rank), b.bitcast(gv, PTR),
                ir.Constant(I32, kind)])
