"""concatenate (or a fusion whose root is one) as one loop per operand.

As an element generator (element_generator.py) a concatenate computes
every operand's value at each output index, clamped into that operand, and
selects one: a concatenate along the minor dimension of four f32[1024,1024]
arrays streamed at 3.8 GB/s where NumPy copies at 22 GB/s, and a fused
producer of each piece ran for every piece. Here each operand (with its
fused producers) gets a kernel of its own over its own shape that stores
at the operand's offset along the concatenated dimension: each element is
computed and written once, and the inner loop is a plain vectorizable
copy (XLA:CPU also emits a concatenate operand by operand). Kernels of a
few elements stay one generator loop (a kernel call per piece costs more),
and so does a concatenate of contiguous blocks (along the layout's major
dimension, or one with only size-1 dimensions above it): there the
operand a row reads is the same for the whole row, the select is hoisted
out of the inner loop, and one kernel streams as fast as several. Pieces
along the minor dimension at most ``ROW_PIECE_MAX`` wide are one kernel of
rows, each row's pieces in turn (RoPE's halves, computed from the same row
of x: a kernel per half read that row twice in short loops).
"""
from xla.backends.cpu import loop_emitter as le
from xla.backends.cpu.ir_emitter import (ElementGenerator, Kernel, Slice, register_root_kernel,
                                         slice_pattern)
from xla.backends.cpu.llvm_types import store_element
from xla.backends.cpu.loop_emitter import i64
from xla.backends.cpu.minor_rows import emit_minor_rows

# A concatenate with fewer output elements than this is one generator loop.
PER_OPERAND_MIN_ELEMENTS = 1 << 12
# Along the minor dimension, pieces at most this wide are emitted as one
# kernel of rows (``_emit_rows``); wider ones keep a kernel each (a row of
# 512- or 2043-element pieces measured 15% slower as one kernel of rows:
# jnp.tile of f32[512, 512] 0.116 -> 0.13-0.14 ms, a 2-D roll of
# f32[2048, 2048] 1.9-2.3 -> 2.2-2.7).
ROW_PIECE_MAX = 128


def per_operand(h, root):
    """Whether concatenate ``root`` (``h`` itself or the root of fusion ``h``)
    is emitted operand by operand."""
    if not (h.shape.is_array and root.shape.num_elements() >= PER_OPERAND_MIN_ELEMENTS
            and len(root.operands) > 1):
        return False
    (axis,) = root.attr("dimensions")
    shape = root.shape
    order = shape.layout.minor_to_major if shape.layout is not None else range(shape.rank)[::-1]
    major = list(order)[list(order).index(axis) + 1:]
    return any(shape.dimensions[d] > 1 for d in major)


def emit_per_operand(me, h, root, fusion=None):
    """One kernel per non-empty operand ``op``: out[..., offset + j, ...] =
    op[..., j, ...]; narrow pieces along the minor dimension, one kernel of
    rows (``_emit_rows``)."""
    (axis,) = root.attr("dimensions")
    in_slices = me.operand_slices(h)
    out_slice = Slice(me.assignment.buffer(h, ()))
    slices = in_slices + [out_slice]
    if le.major_to_minor(h.shape)[-1] == axis and \
            max(op.shape.dimensions[axis] for op in root.operands) <= ROW_PIECE_MAX:
        _emit_rows(me, h, root, fusion, axis, slices, out_slice)
        return
    offset = 0
    for k, op in enumerate(root.operands):
        start, offset = offset, offset + op.shape.dimensions[axis]
        if op.shape.num_elements() == 0:
            continue
        memo_key = (me.fingerprints.key(h), "concatenate", k, slice_pattern(slices))
        name = me.unique(f"kernel.{h.name}.{k}")

        def emit(name=name, op=op, start=start):
            kernel = Kernel(me, name, slices)
            kernel.root = h
            g = ElementGenerator(me, kernel, fusion)

            def body(index):
                value = g.value(op, index)
                target = list(index)
                if start:
                    target[axis] = g.b.add(index[axis], i64(start), flags=("nsw", "nuw"))
                ptr = g.element_pointer(kernel.pointer(out_slice), h.shape, target)
                store_element(kernel.b, value, ptr, h.shape.element_type)

            le.loop_nest(kernel.b, op.shape, body, kernel.begin, kernel.end)
            kernel.finish()
            return kernel

        me.call_kernel(me.memoized_kernel(h, memo_key, name, slices, emit), op.shape)


register_root_kernel("concatenate", lambda me, h, root: per_operand(h, root), emit_per_operand)


def _emit_rows(me, h, root, fusion, axis, slices, out_slice):
    """A concatenate along the minor dimension: one kernel over the rows
    (every dimension but ``axis``), each row one inner loop per operand
    storing at its offset. A kernel per operand walked every row once per
    operand, its short inner loops (RoPE's halves of 32) each with the
    row's index arithmetic, and read a row of the producers' shared inputs
    again in each: RoPE (``concatenate([x1 * c - x2 * s, x2 * c + x1 *
    s], -1)``) of f32[8, 512, 16, 64] 1.9-2.1 ms (XLA:CPU 0.6)."""
    def row(g, index, store):
        b = g.b
        start = 0
        for k, op in enumerate(root.operands):
            n = op.shape.dimensions[axis]
            if n:
                with le.for_loop(b, 0, n, name=f"piece{k}") as j:
                    scope = g.push_scope()
                    at = list(index)
                    at[axis] = j
                    store(b.add(j, i64(start), flags=("nsw", "nuw")) if start else j,
                          g.value(op, at))
                    g.pop_scope(scope)
            start += n

    emit_minor_rows(me, h, fusion, slices, out_slice, "concatenate-rows", row)
