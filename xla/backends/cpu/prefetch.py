"""Software prefetch of the rows a row kernel reads next.

A row group (``row_groups``) runs its member kernels block by block of
rows: softmax's first kernel reads a block of rows from memory, the others
then work on it in the core's cache. While they do, no load misses, and the
memory sits idle until the next block's first read: on two cores the
kernels past the cache ran at about half the streaming rate, half memory
time and half compute time, not overlapped. Prefetching the next block all
at once at a block's start (a burst the core waits on) or before each
member made them no faster, or slower (``docs/cpu_performance.md``).

Here every row loop of a kernel that reads a large buffer row by row first
prefetches that buffer's row ``AHEAD_BYTES`` further on (whole rows, at
least a group's block of it, ``row_groups.BLOCK_BYTES``): the lines of the
next block arrive while the current one is computed, each row's requests
spread over the rows before it. A C model of the f32 softmax row group on
f32[16384, 1024] (this VM, two threads, best of 15): blocks of 2 rows 4.0
-> 2.9 ms with a row prefetched 32 KB ahead in the exp pass, blocks of 8
rows 4.0 -> 3.1 ms; 8 KB ahead (less than a block) helped blocks of 8 rows
not at all.

A kernel prefetches (``Kernel.prefetch``, decided by ``wanted`` before it
is emitted) where the target is the JIT's x86-64 host (the compiler's
``prefetch_bytes``: a quarter of its last-level cache), it is a pass of a
row algorithm (it reduces rows, or reads a value per row: the passes row
groups run; a GELU over f32[16384, 1024], alone, ran 16-21% slower
prefetched), and it reads, as an operand, an entry parameter larger than that with rows (the layout-minor
dimension) of ``MIN_ROW_BYTES`` to ``MAX_ROW_BYTES``; its row loops (a
loop kernel's innermost loop, a row reduction's row) then prefetch the
rows of those parameters they read at the loop's own index (through
elementwise ops and fusion parameters; the same dimensions and layout),
where those rows are at most MAX_ROW_BYTES together. A prefetch never
faults and changes no value, but the target row is checked to lie inside
the buffer: past its end there is no row to read.
"""
import contextlib
import contextvars

from llvmlite import ir

from xla.backends.cpu import loop_emitter as le
from xla.backends.cpu.kernels import Slice
from xla.backends.cpu.loop_emitter import i64
from xla.backends.cpu.streaming_stores import LINE_BYTES
from xla.hlo.opcodes import ELEMENTWISE

I8 = ir.IntType(8)
I32 = ir.IntType(32)
# How far ahead a row is prefetched, rounded up to whole rows: at least one
# block of a row group's rows of the buffer (its block is BLOCK_BYTES in
# all, over every buffer it touches).
AHEAD_BYTES = 32 * 1024
# Rows shorter than a line are left to the hardware, and so are a row
# loop's rows where all of its prefetched rows together are longer than
# MAX_ROW_BYTES: one burst of prefetches that long (a 1-D array's loop is
# one row per thread) fills the core's miss queue. (In the C model a 4 KB
# burst per row did as well as one prefetch per line; RMSNorm with a
# residual, two f32 rows of 4 KB read in each pass, ran 4-5% slower
# prefetched, in bf16 4-7% faster.)
MIN_ROW_BYTES = LINE_BYTES
MAX_ROW_BYTES = 4096

_PREFETCH = ir.FunctionType(ir.VoidType(), [ir.PointerType(), I32, I32, I32])

_cache_bytes = contextvars.ContextVar("xla_cpu_prefetch_cache_bytes", default=None)


@contextlib.contextmanager
def prefetching(cache_bytes):
    """While active with ``cache_bytes`` (an int), kernels reading entry
    parameters larger than that row by row prefetch their rows ahead;
    None: never."""
    token = _cache_bytes.set(cache_bytes)
    try:
        yield
    finally:
        _cache_bytes.reset(token)


def _row_bytes(shape):
    if not shape.is_array or shape.rank < 2 or shape.element_type.bits < 8:
        return 0
    return shape.dimensions[le.major_to_minor(shape)[-1]] * shape.element_type.byte_size


def _large(assignment, x, cache_bytes):
    """Whether ``x``'s buffer is an entry parameter's larger than the
    threshold with rows prefetch handles. (Only parameters: a temporary a row group
    keeps in a scratch of one block, ``row_groups.local_temporaries``, has
    no rows ahead to fetch.)"""
    if not assignment.has_buffers(x) or not x.shape.is_array:
        return False
    buffer = assignment.buffer(x, ())
    return buffer.allocation.kind == "parameter" and buffer.size > cache_bytes and \
        MIN_ROW_BYTES <= _row_bytes(x.shape) <= MAX_ROW_BYTES


def _row_pass(h, fusion):
    """Whether the kernel of ``h`` is a pass of a row algorithm: it reduces,
    or reads a value per row (a broadcast that does not vary along the
    layout-minor dimension: a row's maximum, mean or sum)."""
    for x in (fusion.attr("calls").instructions if fusion is not None else [h]):
        if x.opcode == "reduce":
            return True
        if x.opcode == "broadcast" and x.operands[0].shape.rank > 0 and x.shape.rank > 1 and \
                le.major_to_minor(x.shape)[-1] not in x.attr("dimensions", ()):
            return True
    return False


def wanted(assignment, h, fusion, tiny):
    """Whether the kernel of ``h`` (a fusion's operands, or its own)
    prefetches: see the module docstring."""
    cache_bytes = _cache_bytes.get()
    if cache_bytes is None or tiny or not _row_pass(h, fusion):
        return False
    operands = fusion.operands if fusion is not None else h.operands
    return any(_large(assignment, x, cache_bytes) for x in operands)


def row_buffers(g, x, shape):
    """The materialized instructions whose elements the element code of
    ``x`` at an index of ``shape`` reads at that same index (through
    elementwise ops, a root tuple and fusion parameters), each of
    ``shape``'s dimensions and layout and larger than the threshold; none
    where their rows are more than MAX_ROW_BYTES together."""
    cache_bytes = _cache_bytes.get()
    if cache_bytes is None or not g.kernel.prefetch:
        return []
    assignment = g.emitter.assignment
    order = le.major_to_minor(shape)
    found, seen, stack = [], set(), [x]
    while stack:
        v = stack.pop()
        if id(v) in seen:
            continue
        seen.add(id(v))
        if v is not g.kernel.root and assignment.has_buffers(v):
            if (v.shape.is_array and tuple(v.shape.dimensions) == tuple(shape.dimensions)
                    and le.major_to_minor(v.shape) == order
                    and _large(assignment, v, cache_bytes)):
                found.append(v)
            continue
        if v.opcode == "parameter" and g.fusion is not None:
            stack.append(g.fusion.operands[v.parameter_number])
        elif (v.opcode in ELEMENTWISE and v.opcode != "map") or v.opcode in ("copy", "tuple"):
            stack.extend(o for o in v.operands
                         if o.shape.is_array and tuple(o.shape.dimensions) == tuple(shape.dimensions))
    if sum(_row_bytes(v.shape) for v in found) > MAX_ROW_BYTES:
        return []
    return found


def prefetch_rows(g, buffers, index, minor):
    """For each of ``buffers`` (``row_buffers``), the prefetch of the row
    AHEAD_BYTES (whole rows) past the row of ``index`` (its ``minor``
    dimension's value ignored), where that row is inside the buffer."""
    b = g.b
    fn = g.emitter.declare_in(b.module, "llvm.prefetch.p0", _PREFETCH)
    for v in buffers:
        shape = v.shape
        row_bytes = _row_bytes(shape)
        ahead = -(-AHEAD_BYTES // row_bytes) * row_bytes
        buffer = g.emitter.assignment.buffer(v, ())
        at = list(index)
        at[minor] = i64(0)
        # The row's byte offset in the buffer (a prefetching kernel is never
        # shape-generic: its strides are the layout's).
        offset = b.mul(le.linear_index(b, shape, at), i64(shape.element_type.byte_size),
                       flags=("nsw", "nuw"))
        inside = b.icmp_unsigned("<=", b.add(offset, i64(ahead + row_bytes)), i64(buffer.size))
        with b.if_then(inside):
            target = b.gep(g.kernel.pointer(Slice(buffer)), [b.add(offset, i64(ahead))],
                           source_etype=I8)
            # Every line the row touches (it may start inside one). (The
            # same prefetches unrolled, one burst, made softmax 10% slower.)
            lines = (row_bytes + 2 * LINE_BYTES - 2) // LINE_BYTES
            with le.for_loop(b, 0, lines, name="prefetch") as j:
                line = b.gep(target, [b.mul(j, i64(LINE_BYTES))], source_etype=I8)
                b.call(fn, [line, ir.Constant(I32, 0), ir.Constant(I32, 3), ir.Constant(I32, 1)])


class RowPrefetch:
    """The innermost loop of a loop kernel that prefetches (``loop_nest``'s
    ``innermost``): the prefetch of its buffers' rows ahead, then the loop
    as it was (``inner``'s, a streaming kernel's ``BlockedStores``, or a
    plain loop calling ``body``)."""

    def __init__(self, g, buffers, body, inner=None):
        self.g = g
        self.buffers = buffers
        self.body = body
        self.inner = inner

    def __call__(self, lo, hi, index, d, name, interleave):
        prefetch_rows(self.g, self.buffers, index, d)
        if self.inner is not None:
            self.inner(lo, hi, index, d, name, interleave)
            return
        with le.for_loop(self.g.b, lo, hi, name=name, interleave=interleave) as i:
            index[d] = i
            self.body(list(index))
