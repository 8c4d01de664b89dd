"""Test-only harness: one-op HLO modules as JIT-compiled elementwise loops.

``add_kernel(module, name, instr)`` adds to an llvmlite module a function
``void name(i8* out, i8* in0, i8* in1, i8* in2, i64 n)`` that applies
``emit_elementwise`` to element i of each input, for i in [0, n). The real
loop emitter lives elsewhere; this one exists to test the elemental emitter.
"""
import ctypes

import numpy as np
from llvmlite import ir

from xla.backends.cpu import llvm_types
from xla.backends.cpu.elemental_ir_emitter import emit_elementwise
from xla.backends.cpu.jit import JitModule

I8P = ir.IntType(8).as_pointer()
I64 = ir.IntType(64)
MAX_OPERANDS = 3


def add_kernel(module, name, instr):
    fnty = ir.FunctionType(ir.VoidType(), [I8P] * (MAX_OPERANDS + 1) + [I64])
    fn = ir.Function(module, fnty, name)
    for arg in fn.args[:MAX_OPERANDS + 1]:
        arg.add_attribute("noalias")
    out_arg, in_args, n = fn.args[0], fn.args[1:MAX_OPERANDS + 1], fn.args[-1]
    entry = fn.append_basic_block("entry")
    loop = fn.append_basic_block("loop")
    done = fn.append_basic_block("done")
    b = ir.IRBuilder(entry)
    out_et = instr.shape.element_type
    out_ptr = b.bitcast(out_arg, llvm_types.memory_type(out_et).as_pointer())
    in_ptrs = []
    for i, op in enumerate(instr.operands):
        et = op.shape.element_type
        in_ptrs.append((b.bitcast(in_args[i], llvm_types.memory_type(et).as_pointer()), et))
    b.cbranch(b.icmp_signed(">", n, ir.Constant(I64, 0)), loop, done)

    b.position_at_end(loop)
    index = b.phi(I64, "i")
    index.add_incoming(ir.Constant(I64, 0), entry)
    values = [llvm_types.load_element(b, b.gep(ptr, [index]), et) for ptr, et in in_ptrs]
    result = emit_elementwise(b, instr, values)
    llvm_types.store_element(b, result, b.gep(out_ptr, [index]), out_et)
    nxt = b.add(index, ir.Constant(I64, 1))
    index.add_incoming(nxt, b.block)
    b.cbranch(b.icmp_signed("<", nxt, n), loop, done)

    b.position_at_end(done)
    b.ret_void()
    return fn


class KernelLibrary:
    """Kernels added by name, compiled together on first call."""

    def __init__(self, name="kernels"):
        self.module = ir.Module(name=name)
        self._jit = None
        self._functions = {}

    def add(self, name, instr):
        add_kernel(self.module, name, instr)

    def compile(self, opt_level=3):
        if self._jit is None:
            self._jit = JitModule(self.module, opt_level=opt_level)
        return self._jit

    def run(self, name, out_shape_dtype, *inputs):
        jit = self.compile()
        fn = self._functions.get(name)
        if fn is None:
            fn = jit.function(name, None, *([ctypes.c_void_p] * (MAX_OPERANDS + 1)), ctypes.c_int64)
            self._functions[name] = fn
        shape, dtype = out_shape_dtype
        out = np.zeros(shape, dtype)
        arrays = [np.ascontiguousarray(x) for x in inputs]
        ptrs = [a.ctypes.data for a in arrays] + [None] * (MAX_OPERANDS - len(arrays))
        fn(out.ctypes.data, *ptrs, out.size)
        return out
