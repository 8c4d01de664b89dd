"""Streaming (non-temporal) stores for loop kernels whose output is larger
than the last-level cache.

A plain store to a line that is not in the cache first reads the line
(read for ownership), so an elementwise kernel writing an N-byte result
that will not stay in the cache moves 2N bytes for it where N would do.
Non-temporal stores write whole lines without reading them. The loop
vectorizer emits none (it declines a loop whose store is marked
``!nontemporal`` unless the scalar store is aligned to the vector's size,
which an element store is not), so the innermost loop of such a kernel is
cut into blocks of ``BLOCK_BYTES``: each block's elements are computed,
vectorized as before, into a scratch block on the stack (it stays in L1),
then copied out, the 64-byte-aligned lines of the destination with
non-temporal vector stores and the partial lines at either end (shared
with the neighbouring block, maybe another thread's) with ordinary ones.
An ``sfence`` at the kernel's end orders the streamed lines before
whatever the caller stores next (the thread pool's completion count).

Measured on the 2-core Zen 5 VM (a C loop, f32, both cores): writing a
64 MB result 51.7 -> 62.7 GB/s of reads and writes, 256 MB 44.5 -> 58.9;
a 16 MB result, which fits the 32 MB L3, 122-150 -> 87 GB/s: hence only
results larger than the last-level cache. (JAX's RMSNorm with a residual,
two 32 MB results, ran 2.96 -> 3.09-3.11 ms streamed; f32 [16384, 1024]
results, 64 MB, in-process alternation: layernorm 2.85-3.42 -> 2.54-3.11
ms, softmax 3.74-3.89 -> 3.55-3.63, GELU 2.95-2.96 -> 2.82-2.88; a
64 M-element f32 axpy 17.2 -> 14.5 ms.)

Used where the target is the JIT's x86-64 host (``sfence`` is an x86
instruction; objects compiled ahead of time keep plain stores), for loop
kernels whose outputs are entry results read by nothing after them (never
a buffer a row group keeps in a scratch of its own,
``row_groups.local_temporaries``), walked in the outputs' own layout,
with rows of at least ``MIN_ROW_BYTES``.
"""
import contextlib
import contextvars

from llvmlite import ir

from xla.backends.cpu import loop_emitter as le
from xla.backends.cpu.llvm_types import store_element
from xla.backends.cpu.loop_emitter import i64

I8 = ir.IntType(8)
LINE = ir.VectorType(ir.IntType(64), 8)   # one 64-byte cache line
LINE_BYTES = 64
# Bytes of one block of the innermost loop: computed into a stack scratch
# of this size (per output, for the widest element type), then copied out.
BLOCK_BYTES = 4096
# The least bytes of a row (the layout-minor dimension) of a streamed
# output of rank 2 or more: each row is copied out on its own, with up to
# two partial lines.
MIN_ROW_BYTES = 1024

# The size of the target's last-level cache: outputs larger than it are
# streamed; None where the target gets no streaming stores (the compiler
# sets it: ``streaming``).
_cache_bytes = contextvars.ContextVar("xla_cpu_streaming_store_cache_bytes", default=None)


@contextlib.contextmanager
def streaming(cache_bytes):
    """While active with ``cache_bytes`` (an int: the last-level cache's
    size), loop kernels whose entry results are each larger than that
    stream their stores; None: never."""
    token = _cache_bytes.set(cache_bytes)
    try:
        yield
    finally:
        _cache_bytes.reset(token)


def streams(assignment, h, out, loop_shape, split, tile_dim, tiny):
    """Whether the loop kernel of instruction ``h`` with outputs ``out``
    ([(slice, shape, get)]) over ``loop_shape`` streams its stores (see the
    module docstring)."""
    cache_bytes = _cache_bytes.get()
    if cache_bytes is None or not out or tiny or tile_dim is not None:
        return False
    # Read by nothing after it: a later kernel would find the streamed lines
    # gone from the cache.
    users = [g for u in h.users for g in (u.users if u.opcode == "get-tuple-element" else [u])]
    if not all(u.opcode == "tuple" and u.is_root for u in users):
        return False
    order = le.major_to_minor(loop_shape)
    if split > 1 and len(order) == split:
        return False   # the innermost loop is the split rows' (see loop_nest)
    for s, shape, _ in out:
        size = shape.element_type.byte_size if shape.is_array else 0
        if not (1 <= size <= LINE_BYTES and size & (size - 1) == 0) or \
                shape.element_type.bits < 8:
            return False
        if (tuple(shape.dimensions) != tuple(loop_shape.dimensions)
                or le.major_to_minor(shape) != order):
            return False
        if shape.rank > 1 and shape.dimensions[order[-1]] * size < MIN_ROW_BYTES:
            return False
        if not assignment.allocations[s.allocation].maybe_live_out or s.size <= cache_bytes:
            return False
    return True


class BlockedStores:
    """The innermost loop of a streaming loop kernel (``loop_nest``'s
    ``innermost``): the elements of each block computed into a scratch per
    output, then copied to the outputs with ``copy_out``."""

    def __init__(self, kernel, outputs):
        """``outputs``: [(value, pointer, shape)] with ``value(index)`` the
        register value and ``pointer(index)`` the address of the output's
        element at ``index``."""
        self.kernel = kernel
        self.outputs = outputs
        widest = max(shape.element_type.byte_size for _, _, shape in outputs)
        self.per_block = BLOCK_BYTES // widest
        self.scratch = []
        for _, _, shape in outputs:
            block = kernel.alloca(ir.ArrayType(I8, self.per_block * shape.element_type.byte_size),
                                  name="stream.block")
            block.align = LINE_BYTES
            self.scratch.append(block)
        self.used = False

    def __call__(self, lo, hi, index, d, name, interleave):
        b = self.kernel.b
        self.used = True
        lo = lo if isinstance(lo, ir.Value) else i64(lo)
        hi = hi if isinstance(hi, ir.Value) else i64(hi)
        per_block = self.per_block
        blocks = b.udiv(b.add(b.sub(hi, lo), i64(per_block - 1)), i64(per_block))
        with le.for_loop(b, 0, blocks, name=f"{name}.block") as k:
            start = b.add(lo, b.mul(k, i64(per_block), flags=("nsw", "nuw")), flags=("nsw", "nuw"))
            stop = b.add(start, i64(per_block), flags=("nsw", "nuw"))
            stop = b.select(b.icmp_signed("<", stop, hi), stop, hi)
            with le.for_loop(b, start, stop, name=name, interleave=interleave) as i:
                index[d] = i
                at = b.sub(i, start, flags=("nsw", "nuw"))
                for (value, _, shape), block in zip(self.outputs, self.scratch):
                    size = shape.element_type.byte_size
                    offset = at if size == 1 else b.mul(at, i64(size), flags=("nsw", "nuw"))
                    store_element(b, value(list(index)),
                                  b.gep(block, [offset], inbounds=True, source_etype=I8),
                                  shape.element_type)
            index[d] = start
            count = b.sub(stop, start, flags=("nsw", "nuw"))
            for (_, pointer, shape), block in zip(self.outputs, self.scratch):
                size = shape.element_type.byte_size
                nbytes = count if size == 1 else b.mul(count, i64(size), flags=("nsw", "nuw"))
                copy_out(self.kernel, pointer(list(index)), block, nbytes)

    def finish(self):
        """After the loop nest: the fence, where a block was streamed."""
        if self.used:
            b = self.kernel.b
            b.call(self.kernel.emitter.declare_in(b.module, "llvm.x86.sse.sfence",
                                                  ir.FunctionType(ir.VoidType(), [])), [])


_MEMCPY = ir.FunctionType(ir.VoidType(), [ir.PointerType(), ir.PointerType(), ir.IntType(64),
                                          ir.IntType(1)])


def _memcpy(kernel, dest, src, nbytes):
    fn = kernel.emitter.declare_in(kernel.b.module, "llvm.memcpy.p0.p0.i64", _MEMCPY)
    kernel.b.call(fn, [dest, src, nbytes, ir.Constant(ir.IntType(1), 0)])


def copy_out(kernel, dest, src, nbytes):
    """Copies ``nbytes`` from ``src`` (the scratch) to ``dest``: the whole
    64-byte lines of the destination with non-temporal stores, the bytes
    before the first and after the last with ``memcpy``."""
    b = kernel.b
    address = b.ptrtoint(dest, ir.IntType(64))
    head = b.and_(b.sub(i64(0), address), i64(LINE_BYTES - 1))
    head = b.select(b.icmp_unsigned("<", head, nbytes), head, nbytes)
    _memcpy(kernel, dest, src, head)
    lines = b.lshr(b.sub(nbytes, head), i64(6))
    with le.for_loop(b, 0, lines, name="stream.line") as j:
        at = b.add(head, b.shl(j, i64(6)), flags=("nsw", "nuw"))
        line = b.load(b.gep(src, [at], inbounds=True, source_etype=I8), typ=LINE, align=1)
        store = b.store(line, b.gep(dest, [at], inbounds=True, source_etype=I8), align=LINE_BYTES)
        store.set_metadata("nontemporal", b.module.add_metadata([ir.Constant(ir.IntType(32), 1)]))
    done = b.add(head, b.shl(lines, i64(6)), flags=("nsw", "nuw"))
    _memcpy(kernel, b.gep(dest, [done], inbounds=True, source_etype=I8),
            b.gep(src, [done], inbounds=True, source_etype=I8), b.sub(nbytes, done))
