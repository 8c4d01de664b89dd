"""select-and-scatter on the GPU: one thread, in the interpreter's order.

The semantics are the CPU backend's (``xla/backends/cpu/emit_window.py``):
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
from llvmlite import ir

from xla.backends.cpu import loop_emitter as le
from xla.backends.cpu.element_generator import ElementGenerator, convert_register
from xla.backends.cpu.emit_window import all_valid, window_dimensions, window_loops, window_position
from xla.backends.cpu.kernels import Slice
from xla.backends.cpu.llvm_types import constant, load_element, register_type, store_element
from xla.backends.gpu.kernels import Kernel, KernelThunk, finish_kernel, reads, unsupported

I1 = ir.IntType(1)


def emit_select_and_scatter(emitter, h, name):
    operand, source, init = h.operands
    shape = h.shape
    et = shape.element_type
    if not shape.is_array:
        raise unsupported(h, "tuple-shaped")
    assignment = emitter.assignment
    out_slice = Slice(assignment.buffer(h))
    keys = list(dict.fromkeys([out_slice.key] + [s.key for s in reads(h, assignment)]))
    kernel = Kernel(name, keys, h)
    g = ElementGenerator(emitter, kernel)
    rank = operand.shape.rank
    wdims = window_dimensions(h, rank)
    select, scatter = h.attr("select"), h.attr("scatter")
    ot = operand.shape.element_type
    empty = (source.shape.num_elements() == 0 or operand.shape.num_elements() == 0
             or any(wd.size == 0 for wd in wdims))

    def body(b, _):
        out_ptr = kernel.pointer(out_slice)
        init_value = g.load(init, [])
        le.loop_nest(b, shape, lambda idx: store_element(
            b, init_value, g.element_pointer(out_ptr, shape, idx), et), name="fill")
        if empty:
            return
        sel_val = kernel.alloca(register_type(ot), name="sel.val")
        have = kernel.alloca(I1, name="sel.have")
        sel_idx = [kernel.alloca(le.I64, name=f"sel.i{d}") for d in range(rank)]

        def per_source(sidx):
            b.store(ir.Constant(I1, 0), have)
            b.store(constant(ot, 0), sel_val)   # a defined value for the first select call

            def visit(offsets):
                idx, conds = [], []
                for d, wd in enumerate(wdims):
                    valid, pos = window_position(b, sidx[d], offsets[d], wd,
                                                 operand.shape.dimensions[d],
                                                 source.shape.dimensions[d])
                    idx.append(pos)
                    conds.append(valid)
                valid = all_valid(b, conds)

                def consider():
                    v = g.load(operand, idx)
                    cur = b.load(sel_val, typ=v.type)
                    keep = emitter.emit_scalar_computation(b, select, [cur, v])
                    take = b.or_(b.not_(b.load(have, typ=I1)), b.not_(keep))
                    with b.if_then(take):
                        b.store(v, sel_val)
                        for a, x in zip(sel_idx, idx):
                            b.store(x, a)
                        b.store(ir.Constant(I1, 1), have)

                if valid is None:
                    consider()
                else:
                    with b.if_then(valid):
                        consider()

            window_loops(b, [wd.size for wd in wdims], visit)
            with b.if_then(b.load(have, typ=I1)):
                target = [b.load(a, typ=le.I64) for a in sel_idx]
                ptr = g.element_pointer(out_ptr, shape, target)
                cur = load_element(b, ptr, et)
                s = convert_register(b, g.load(source, sidx), source.shape.element_type, et)
                store_element(b, emitter.emit_scalar_computation(b, scatter, [cur, s]), ptr, et)

        window_loops(b, list(source.shape.dimensions), per_source, name="s")

    return KernelThunk(name, finish_kernel(kernel, h, 1, body), keys, 1, h.name)
