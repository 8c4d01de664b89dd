"""The CPU backend: LLVM IR through llvmlite, JIT-compiled for the host.

Layout of this folder, and the contracts between its parts:

``llvm_types.py``
    The LLVM type of each element type, in memory and in registers:
    pred -> i8 in memory, i1 in registers; sN/uN -> iN; f16/bf16 -> i16 in
    memory and float (f32) in registers, converted on load and rounded to
    nearest even on store; f32 -> float; f64 -> double; c64/c128 -> a
    ``{float, float}`` / ``{double, double}`` literal struct (real, imag).
    ``load_element(b, ptr, element_type)`` and
    ``store_element(b, value, ptr, element_type)`` do the conversions.

``elemental_ir_emitter.py``
    One row per elementwise opcode (GUIDE: one opcode, one row per layer):
    ``emit_elementwise(b, instr, operands) -> ir.Value`` computes one element
    of ``instr`` from the register values of its operands' elements, with
    exactly the interpreter's semantics (integer wraparound, division by zero
    and INT_MIN/-1, shift amounts out of range, NaN propagation of
    maximum/minimum, TOTALORDER compares, round-nearest-even and -afz,
    float-to-int saturation, ...). Math functions with no LLVM intrinsic are
    emitted as IR (or as calls to runtime functions registered by name) so
    the JIT needs no libm beyond what the process has.

``ir_emitter.py`` / ``loop_emitter.py`` / ``reduction_emitter.py``
    Turn the scheduled, buffer-assigned entry computation into one LLVM
    function ``void NAME(i8** buffer_table)`` whose table holds one pointer
    per buffer allocation (parameters read in place, results written in
    place, temporaries at offsets in one arena).

``compiler.py`` / ``executable.py``
    ``CpuCompiler.compile(module) -> CpuExecutable``; ``execute(*arrays)``
    returns NumPy arrays (a tuple for a tuple result).
"""
