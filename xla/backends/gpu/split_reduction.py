"""Row and column reductions with coalesced loads and enough threads.

A reduce kernel with one thread per output element reads memory badly on a
GPU when the reduced dimension is the minor-most one (a row reduction):
the 32 threads of a warp read 32 different rows, one element of each, at
every step. Here such a reduction runs as:

- **a warp per row** (one kernel), when there are enough rows to fill the
  GPU that way (``lane_count`` gives 32 lanes): lane ``l`` of the warp
  reduces the elements ``l, l + 32...`` of the minor-most reduced dimension
  (and all of the other reduced dimensions), starting from the reducer's
  identity; the warp folds its 32 values by shuffles (``warp.py``: a
  butterfly, no shared memory, no barrier); lane 0 folds the init value in
  and stores. At each step a warp reads 32 adjacent elements.
- **partials and a combine** (two kernels) otherwise: ``lanes`` threads per
  output element (a multiple of 32: more when the rows are few, so that
  the GPU has threads to run; a reduction to a scalar gets 4,096), each
  warp folding its lanes by shuffles into one partial in a scratch array
  ``[outputs, lanes / 32]``; then one thread per output folds the init
  value and its partials, in order, with the reducer.

This reassociates the reduction, as every parallel reduction does (XLA's
too); it applies to reducers ``chunk_identity`` knows an identity for (add,
multiply, maximum, minimum, and, or of f32/f64 and integers). Every lane of
a warp runs the same iterations (the loops cover a multiple of 32 threads'
work, and every launcher's blocks are whole warps), so the lanes meet at
each shuffle.

Column reductions (the minor-most dimension kept) read adjacent elements
from adjacent threads already, but with one thread per output there are
too few threads when the outputs are few and the reduced dimension long.
Then the most major reduced dimension is split into ``chunks``: partial
``c`` of output ``o`` reduces chunk ``c``, at ``scratch[c * outputs + o]``,
and the combine folds the chunks in order (no shuffles).
"""
import contextlib

from llvmlite import ir

from xla.backends.cpu import loop_emitter as le
from xla.backends.cpu.element_generator import ElementGenerator
from xla.backends.cpu.kernels import Slice
from xla.backends.cpu.llvm_types import store_element
from xla.backends.cpu.loop_emitter import i64
from xla.backends.cpu.reduction_emitter import chunk_identity, chunked_dimension
from xla.backends.gpu.kernels import Kernel, KernelThunk, finish_kernel, reads
from xla.backends.gpu.warp import WARP, warp_reduce

MIN_THREADS = 1 << 17     # lanes grow until outputs x lanes reaches this
MAX_LANES = 4096


def _split_reduces(outputs):
    """(kind, [(reduce, identity)], size) when every output is a reduce
    this module can split, all of one kind: "row" (the minor-most input
    dimension reduced; size: its length) or "column" (it is kept; size: the
    length of the most major reduced dimension), the same size for all;
    else None."""
    found, kinds = [], set()
    for _, shape, r in outputs:
        if r.opcode != "reduce" or len(r.operands) != 2 or not shape.is_array:
            return None
        x = r.operands[0].shape
        order = le.major_to_minor(x)
        reduced = r.attr("dimensions", ())
        identity = chunk_identity(r.attr("to_apply"), x.element_type)
        if not order or not reduced or identity is None:
            return None
        if order[-1] in reduced:
            kinds.add(("row", x.dimensions[order[-1]]))
        else:
            kinds.add(("column", x.dimensions[chunked_dimension(r)]))
        found.append((r, identity))
    if len(kinds) != 1:
        return None
    (kind, size), = kinds
    return kind, found, size


def chunk_count(outputs_n, size):
    """Chunks of the major reduced dimension per output: enough for
    MIN_THREADS threads, each chunk at least 8 long; 1: not worth it."""
    chunks = 1
    while outputs_n * chunks < MIN_THREADS and size // (chunks * 2) >= 8:
        chunks *= 2
    return chunks


def lane_count(outputs_n, minor):
    """Lanes per output: a multiple of the warp size, at most the reduced
    dimension's size (rounded up to a warp)."""
    lanes = WARP
    while lanes < MAX_LANES and outputs_n * lanes < MIN_THREADS and lanes * 2 <= minor:
        lanes *= 2
    return lanes


def emit_split_reduction(emitter, h, name, outputs, warp_shuffles=True):
    """The KernelThunks computing ``outputs`` of ``h`` (all of one shape):
    one warp-reduction kernel, or partials and combine; None when they are
    not reductions worth splitting. ``warp_shuffles``: False keeps row
    reductions of 32 lanes in two kernels too."""
    split = _split_reduces(outputs)
    if split is None:
        return None
    kind, reduces, size = split
    shape = outputs[0][1]
    n = shape.num_elements()
    if n == 0:
        return None
    if kind == "row":
        if size < 2 * WARP:
            return None
        lanes = lane_count(n, size)
        if lanes == WARP and warp_shuffles:
            return [_warp_row_reduction(emitter, h, name, outputs, reduces, n)]
        parts = lanes // WARP if warp_shuffles else lanes     # partials per output
    else:
        parts = chunk_count(n, size)
        if parts == 1:
            return None
        chunk_len = -(-size // parts)
    assignment = emitter.assignment
    fusion = h if h.opcode == "fusion" else None
    read_keys = [s.key for s in reads(h, assignment)]
    scratch = ("scratch", name)      # the allocation's key in the executable's memory
    scratch_key = (scratch, 0)       # the slice: offset 0 of it
    offsets, nbytes = [], 0
    for r, _ in reduces:
        offsets.append(nbytes)
        nbytes += -(-n * parts * r.shape.element_type.byte_size // 256) * 256

    # 1. the partials: row: [o * lanes + lane] over the lane's strided
    #    elements; column: [c * n + o] over chunk c.
    shuffled = kind == "row" and warp_shuffles
    keys = list(dict.fromkeys([scratch_key] + read_keys))
    kernel = Kernel(f"{name}_partials", keys, h)
    g = ElementGenerator(emitter, kernel, fusion=fusion)

    def partials(b, i):
        if kind == "row":
            out, lane = b.udiv(i, i64(lanes)), b.urem(i, i64(lanes))
            g.reduce_lanes = {id(r): (lane, lanes, [identity]) for r, identity in reduces}
        else:
            chunk, out = b.udiv(i, i64(n)), b.urem(i, i64(n))
            lo = b.mul(chunk, i64(chunk_len))
            hi = b.add(lo, i64(chunk_len))
            hi = b.select(b.icmp_unsigned("<", hi, i64(size)), hi, i64(size))
            g.reduce_chunks = {id(r): (lo, hi, [identity]) for r, identity in reduces}
        index = le.delinearize(b, out, list(shape.dimensions), le.major_to_minor(shape))
        values = [g.value(r, index) for r, _ in reduces]
        at = i
        if shuffled:   # the warp's 32 lanes folded; its first lane stores partial lane / 32
            values = [warp_reduce(kernel, b, v, lambda b, x, y, c=r.attr("to_apply"):
                                  emitter.emit_scalar_computation(b, c, [x, y]))
                      for v, (r, _) in zip(values, reduces)]
            at = b.add(b.mul(out, i64(parts)), b.udiv(lane, i64(WARP)))
        with b.if_then(b.icmp_unsigned("==", b.urem(i, i64(WARP)), i64(0))) if shuffled \
                else contextlib.nullcontext():
            for v, offset in zip(values, offsets):
                base = b.gep(kernel.ptrs[scratch_key], [i64(offset)], source_etype=ir.IntType(8))
                b.store(v, b.gep(base, [at], inbounds=True, source_etype=v.type))
    threads = n * (lanes if kind == "row" else parts)
    first = KernelThunk(kernel.module.name, finish_kernel(kernel, h, threads, partials), keys,
                        threads, h.name, scratch={scratch: nbytes})

    # 2. out[o] = fold(init, o's partials in order).
    out_slices = [Slice(assignment.buffer(h, index)) for index, _, _ in outputs]
    keys = list(dict.fromkeys([scratch_key] + [s.key for s in out_slices] + read_keys))
    kernel = Kernel(f"{name}_combine", keys, h)
    g = ElementGenerator(emitter, kernel, fusion=fusion)

    def combine(b, i):
        index = le.delinearize(b, i, list(shape.dimensions), le.major_to_minor(shape))
        for (r, identity), offset, (_, out_shape, _), out_slice in zip(reduces, offsets, outputs,
                                                                       out_slices):
            acc = kernel.alloca(identity.type, name="acc")
            b.store(g.value(r.operands[1], []), acc)
            base = b.gep(kernel.ptrs[scratch_key], [i64(offset)], source_etype=ir.IntType(8))
            with le.for_loop(b, 0, parts, name="part") as k:
                at = b.add(b.mul(i, i64(parts)), k) if kind == "row" else b.add(b.mul(k, i64(n)), i)
                part = b.load(b.gep(base, [at], inbounds=True, source_etype=identity.type),
                              typ=identity.type)
                cur = b.load(acc, typ=identity.type)
                b.store(emitter.emit_scalar_computation(b, r.attr("to_apply"), [cur, part]), acc)
            ptr = g.element_pointer(kernel.pointer(out_slice), out_shape, index)
            store_element(b, b.load(acc, typ=identity.type), ptr, out_shape.element_type)
    second = KernelThunk(kernel.module.name, finish_kernel(kernel, h, n, combine), keys, n, h.name)
    return [first, second]


def _warp_row_reduction(emitter, h, name, outputs, reduces, n):
    """One kernel: a warp per output element. Lane ``l`` reduces the
    elements ``l, l + 32...`` of the row from the reducer's identity, the
    warp folds its 32 partials by shuffles (``warp.warp_reduce``), and
    lane 0 folds the init value in and stores. The loop runs over ``n * 32``
    threads' worth of work, a multiple of the warp, and every launcher's
    blocks are whole warps, so the 32 lanes of a warp take the same
    iterations and meet at every shuffle."""
    assignment = emitter.assignment
    fusion = h if h.opcode == "fusion" else None
    shape = outputs[0][1]
    out_slices = [Slice(assignment.buffer(h, index)) for index, _, _ in outputs]
    keys = list(dict.fromkeys([s.key for s in out_slices] + [s.key for s in reads(h, assignment)]))
    kernel = Kernel(name, keys, h)
    g = ElementGenerator(emitter, kernel, fusion=fusion)

    def body(b, i):
        out, lane = b.udiv(i, i64(WARP)), b.urem(i, i64(WARP))
        g.reduce_lanes = {id(r): (lane, WARP, [identity]) for r, identity in reduces}
        index = le.delinearize(b, out, list(shape.dimensions), le.major_to_minor(shape))
        totals = []
        for r, _ in reduces:
            computation = r.attr("to_apply")
            totals.append(warp_reduce(kernel, b, g.value(r, index), lambda b, x, y, c=computation:
                                      emitter.emit_scalar_computation(b, c, [x, y])))
        with b.if_then(b.icmp_unsigned("==", lane, i64(0))):
            for (r, _), total, (_, out_shape, _), out_slice in zip(reduces, totals, outputs,
                                                                  out_slices):
                v = emitter.emit_scalar_computation(b, r.attr("to_apply"),
                                                    [g.value(r.operands[1], []), total])
                ptr = g.element_pointer(kernel.pointer(out_slice), out_shape, index)
                store_element(b, v, ptr, out_shape.element_type)
    return KernelThunk(kernel.module.name, finish_kernel(kernel, h, n * WARP, body), keys,
                       n * WARP, h.name)
