"""Shape-generic kernels: kernels whose dimension sizes are an argument.

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

Which kernels (``is_generic``): loop kernels (elementwise, broadcast,
reduce inside the loop) whose buffers hold at most ``MAX_BYTES`` together
(``kernels.SMALL_KERNEL_BYTES``), and kernels whose inner loops already run
to bounds computed at run time, up to ``RUNTIME_BOUNDS_MAX_BYTES``:
transposes walked in tiles, column reductions, the small GEMM. Kernels
inlined into the driver never are, and a loop kernel whose code asked for
no size (a 1-D loop runs from begin to end) is emitted again with constant
sizes, exactly as before. Larger loop kernels keep constant sizes: their
loops run long, where constant trip counts and strides let LLVM drop
remainder loops and checks, and their code stays byte for byte what it
was (every kernel of benchmarks/cpu_workloads.py is unchanged;
docs/compiler.md, "Shape-generic kernels").

Not generic yet: row reductions inside loop kernels (``reduction_emitter``
loops to constant bounds; correct, just not shared), reshapes and bitcasts
that move elements between dimensions, and the other emitters (sort,
convolution, gather, scatter, windows, in-place updates), which keep
constant sizes.
"""
from xla.backends.cpu.kernels import SMALL_KERNEL_BYTES, footprint

# Off switch, for measuring (docs/compiler.md) and for bisecting.
ENABLED = True
# Loop kernels whose buffers hold more bytes together keep constant sizes:
# their innermost loop's trip count would become a value.
MAX_BYTES = SMALL_KERNEL_BYTES
# Kernels whose inner loops already run to bounds computed at run time (a
# transpose's tiles, clipped to the array; a column reduction's run of
# columns, from begin to end; the small GEMM's blocks, clamped to the
# matrix) trade only constant strides for values: generic up to this many
# bytes (None: any size). Measured the same run time both ways up to the
# varied MLP's largest weight update (f32[556,557] transposed, 3.7 MB);
# larger ones were not measured reliably on the loaded 2-core machine.
RUNTIME_BOUNDS_MAX_BYTES = 4 << 20


def is_generic(slices, runtime_bounds=False):
    """Whether a kernel over buffer ``slices`` is emitted shape-generic;
    ``runtime_bounds``: its inner loops' bounds are already values (see
    ``RUNTIME_BOUNDS_MAX_BYTES``)."""
    if not ENABLED:
        return False
    bound = RUNTIME_BOUNDS_MAX_BYTES if runtime_bounds else MAX_BYTES
    return bound is None or footprint(slices) <= bound
