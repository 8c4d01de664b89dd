"""select-and-scatter on the GPU: one thread, in the interpreter's order.

The loops are the CPU backend's (``xla/backends/cpu/emit_window.py``,
``select_and_scatter_loops``), with its semantics:
the output is filled with the init value; then for each source element in
row-major order, the window's valid operand elements are visited in
row-major order (the first is selected; a later ``e`` replaces the
selected ``s`` when ``select(s, e)`` is false), and the source value is
combined into the output at the selected position with ``scatter``. The
kernel runs that loop on a single thread, so floating-point results are
the interpreter's bit for bit and no two threads ever update one element;
it is correct, not fast (max-pooling gradients of small images). A parallel
form (one thread per output element, visiting the windows that contain it
in the same order) is what would make it fast.
"""
from xla.backends.cpu.element_generator import ElementGenerator
from xla.backends.cpu.emit_window import select_and_scatter_loops
from xla.backends.cpu.kernels import Slice
from xla.backends.gpu.kernels import Kernel, KernelThunk, finish_kernel, reads, unsupported


def emit_select_and_scatter(emitter, h, name):
    if not h.shape.is_array:
        raise unsupported(h, "tuple-shaped")
    assignment = emitter.assignment
    out_slice = Slice(assignment.buffer(h))
    keys = list(dict.fromkeys([out_slice.key] + [s.key for s in reads(h, assignment)]))
    kernel = Kernel(name, keys, h)
    g = ElementGenerator(emitter, kernel)

    def body(b, _):
        select_and_scatter_loops(b, h, g, lambda typ, slot: kernel.alloca(typ, name=slot),
                                 emitter.emit_scalar_computation, kernel.pointer(out_slice))
    return KernelThunk(name, finish_kernel(kernel, h, 1, body), keys, 1, h.name)
