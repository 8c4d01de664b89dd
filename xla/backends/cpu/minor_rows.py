"""One kernel over the rows of a result: every dimension but the minor one
is the kernel's loop nest (split over threads like any loop kernel), and
the caller writes each row with loops of its own (``emit_concatenate``:
each narrow piece in turn; ``emit_pad``: the low padding, the operand's
row, the high padding). Inner loops over unclamped consecutive indices
vectorize where one generator loop over the whole result, its index
clamped into each piece, stayed scalar."""
from xla.backends.cpu import loop_emitter as le
from xla.backends.cpu.element_generator import ElementGenerator
from xla.backends.cpu.kernels import Kernel, slice_pattern
from xla.backends.cpu.llvm_types import store_element
from xla.hlo.shape import Shape


def emit_minor_rows(me, h, fusion, slices, out_slice, tag, row):
    """Emits and calls the kernel of ``h`` (a fusion ``fusion`` or an
    instruction) over the rows of its result; ``row(g, index, store)``
    writes the row at ``index`` (the minor dimension's entry unset) with
    ``store(j, value)``, j the minor index. ``tag`` names the kind of
    kernel in its memo key."""
    minor = le.major_to_minor(h.shape)[-1]
    dims = list(h.shape.dimensions)
    dims[minor] = 1
    rows = Shape.array(h.shape.element_type, dims, h.shape.layout.minor_to_major
                       if h.shape.layout is not None else "default")
    memo_key = (me.fingerprints.key(h), tag, slice_pattern(slices))
    name = me.unique(f"kernel.{h.name}.rows")

    def emit():
        kernel = Kernel(me, name, slices)
        kernel.root = h
        g = ElementGenerator(me, kernel, fusion)
        out = kernel.pointer(out_slice)

        def body(index):
            def store(j, value):
                at = list(index)
                at[minor] = j
                store_element(kernel.b, value, g.element_pointer(out, h.shape, at),
                              h.shape.element_type)
            row(g, index, store)

        le.loop_nest(kernel.b, rows, body, kernel.begin, kernel.end)
        kernel.finish()
        return kernel

    # The work is the whole result (the rows' count would keep it on one thread).
    me.call_kernel(me.memoized_kernel(h, memo_key, name, slices, emit), rows,
                   work=h.shape.num_elements())
