"""Shape-generic kernels: small kernels whose dimension sizes are arguments.

Kernels are deduplicated by their IR text (``kernels.KernelSet``), and a
kernel's loop bounds and strides are constants, so the same fused
computation over f32[8,25] and f32[8,31] compiles twice. A network whose
layers all differ in width (the varied MLP of benchmarks/compile_time.py)
then compiles every layer's kernels, and LLVM is most of its compile time.

A shape-generic kernel takes one more pointer argument, after its buffers
(and scratch): an array of i64 dimension sizes. Its code asks the kernel
for each size it uses (``Kernel.dim``, ``Kernel.dims``, ``Kernel.strides``)
and gets a value loaded from that array, one slot per distinct size in the
order the code first asks for it; the driver passes a constant array of
the sizes, in slot order, for that call (``ModuleEmitter.dims_global``).
So the text, and with it the fingerprint, holds no size, and kernels that
differ only in sizes compile once. What stays in the text, so in the key:

- a size of 1 (emitters drop such dimensions from loops and indexing),
  and which slots are equal (two dimensions of the same size share one);
- every decision the emitter makes from sizes: a transposed kernel's
  tiling, a reshape or bitcast's index arithmetic (a bitcast that keeps
  the sizes in storage order maps the index directly; any other still
  divides by constant sizes), pad and slice offsets, constants' values;
- anything an emitter still computes from ``shape.dimensions`` directly.

None of these can make a wrong kernel: the code is a function of its text
and its arguments only, and each call passes the sizes its own emission
asked for, so two calls sharing a text compute what each one's constant
version would (a size that stays a constant only keeps kernels apart).

Which kernels: loop kernels (elementwise, broadcast, transpose, reduce
inside the loop) and column reductions whose buffers hold at most
``kernels.SMALL_KERNEL_BYTES`` together, and which are not inlined into
the driver. Larger kernels keep constant sizes: their loops run long,
where constant trip counts and strides let LLVM drop remainder loops and
checks, and their code stays byte for byte what it was
(docs/compiler.md, "Shape-generic kernels").
"""
from xla.backends.cpu.kernels import SMALL_KERNEL_BYTES, footprint

# Off switch, for measuring (docs/compiler.md) and for bisecting.
ENABLED = True


def is_generic(emitter, slices):
    """Whether a kernel over buffer ``slices`` is emitted shape-generic."""
    return ENABLED and footprint(slices) <= SMALL_KERNEL_BYTES
