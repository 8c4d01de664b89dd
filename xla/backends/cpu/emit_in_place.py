"""dynamic-update-slice in place: when buffer assignment gives a DUS (or a
fusion whose root is one) the buffer of the array it updates
(``buffer_assignment.in_place_update_operand``), the kernel writes only the
update's elements, at the clamped start indices, and leaves the rest of the
buffer as it is; so ``x[i] = v`` in a loop costs the update, not a copy of
``x`` (XLA's in-place dynamic-update-slice). Otherwise the DUS is an
element generator like any other (element_generator.py): every output
element selects the update or the operand.
"""
from xla.backends.cpu import loop_emitter as le
from xla.backends.cpu.element_generator import _dynamic_starts
from xla.backends.cpu.ir_emitter import (TINY_KERNEL_ELEMENTS, ElementGenerator, Kernel, Slice,
                                         register_root_kernel, slice_pattern)
from xla.backends.cpu.llvm_types import store_element
from xla.service.buffer_assignment import in_place_update_operand


def _same_slice(a, b):
    return a.allocation is b.allocation and a.offset == b.offset


def in_place(me, h):
    """Whether ``h`` (a DUS or a fusion with a DUS root) writes over the
    buffer of the operand it updates."""
    target = in_place_update_operand(h)
    if target is None or not h.shape.is_array:
        return False
    out = me.assignment.buffer(h, ())
    if not _same_slice(out, me.assignment.buffer(target, ())):
        return False
    # No other operand may be the same buffer (an alias of the array): the
    # kernel would read what it has already overwritten.
    return not any(o is not target and o.shape.is_array and
                   _same_slice(me.assignment.buffer(o, ()), out)
                   for o in h.operands)


def emit_update_in_place(me, h, root, fusion=None):
    """One kernel over the update's elements: out[start + j] = update[j]."""
    update = root.operands[1]
    loop_shape = update.shape
    if loop_shape.num_elements() == 0:
        return
    in_slices = me.operand_slices(h)
    out_slice = Slice(me.assignment.buffer(h, ()))
    slices = in_slices + [out_slice]
    memo_key = (me.fingerprints.key(h), "in-place", slice_pattern(slices))
    name = me.unique(f"kernel.{h.name}")

    def emit():
        kernel = Kernel(me, name, slices,
                        in_driver=loop_shape.num_elements() <= TINY_KERNEL_ELEMENTS)
        kernel.root = h
        g = ElementGenerator(me, kernel, fusion)
        data_shape = root.operands[0].shape

        def body(index):
            starts = _dynamic_starts(g, root, 2, data_shape, loop_shape.dimensions)
            value = g.value(update, index)
            target = [g.b.add(s, j) for s, j in zip(starts, index)]
            ptr = g.element_pointer(kernel.pointer(out_slice), h.shape, target)
            store_element(kernel.b, value, ptr, h.shape.element_type)

        le.loop_nest(kernel.b, loop_shape, body, kernel.begin, kernel.end)
        kernel.finish()
        return kernel

    me.call_kernel(me.memoized_kernel(h, memo_key, name, slices, emit), loop_shape)


register_root_kernel("dynamic-update-slice", lambda me, h, root: in_place(me, h),
                     emit_update_in_place)
