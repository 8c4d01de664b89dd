"""Row reductions in two kernels whose loads are coalesced.

A reduce kernel with one thread per output element reads memory badly on a
GPU when the reduced dimension is the minor-most one (a row reduction):
the 32 threads of a warp read 32 different rows, one element of each, at
every step. Here such a reduction runs as two kernels, with no barrier,
shuffle or shared memory (so the emulator runs them exactly):

1. **partials**: ``lanes`` threads per output element (adjacent threads:
   adjacent lanes of one output). Lane ``l`` reduces the elements
   ``l, l + lanes, l + 2 * lanes...`` of the minor-most reduced dimension
   (and all of the other reduced dimensions), starting from the reducer's
   identity, into a scratch array ``[outputs, lanes]``. At each step a
   warp reads 32 adjacent elements.
2. **combine**: one thread per output element folds the init value and its
   ``lanes`` partials, in lane order, with the reducer.

This reassociates the reduction, as every parallel reduction does (XLA's
too); it applies to reducers ``chunk_identity`` knows an identity for (add,
multiply, maximum, minimum, and, or of f32/f64 and integers). The lane count
is 32, more when there are few outputs (so that the GPU has threads to run:
a reduction to a scalar gets 4,096 lanes), never more than the reduced
dimension allows.
"""
from llvmlite import ir

from xla.backends.cpu import loop_emitter as le
from xla.backends.cpu.element_generator import ElementGenerator
from xla.backends.cpu.kernels import Slice
from xla.backends.cpu.llvm_types import store_element
from xla.backends.cpu.loop_emitter import i64
from xla.backends.cpu.reduction_emitter import chunk_identity

WARP = 32
MIN_THREADS = 1 << 17     # lanes grow until outputs x lanes reaches this
MAX_LANES = 4096


def _row_reduces(outputs):
    """[(reduce, identity)] when every output is a row reduction this
    module can split, with one minor-most reduced dimension size; else None."""
    found, minor_sizes = [], set()
    for _, shape, r in outputs:
        if r.opcode != "reduce" or len(r.operands) != 2 or not shape.is_array:
            return None
        x = r.operands[0].shape
        order = le.major_to_minor(x)
        if not order or order[-1] not in r.attr("dimensions", ()):
            return None
        identity = chunk_identity(r.attr("to_apply"), x.element_type)
        if identity is None:
            return None
        minor_sizes.add(x.dimensions[order[-1]])
        found.append((r, identity))
    return found if len(minor_sizes) == 1 else None


def lane_count(outputs_n, minor):
    """Lanes per output: a multiple of the warp size, at most the reduced
    dimension's size (rounded up to a warp)."""
    lanes = WARP
    while lanes < MAX_LANES and outputs_n * lanes < MIN_THREADS and lanes * 2 <= minor:
        lanes *= 2
    return lanes


def emit_row_reduction(emitter, h, name, outputs):
    """[partials KernelThunk, combine KernelThunk] computing ``outputs`` of
    ``h`` (all of one shape), or None when they are not row reductions
    worth splitting."""
    from xla.backends.gpu.kernel_emitter import (KernelThunk, _Kernel, _reads, finish_kernel)
    reduces = _row_reduces(outputs)
    if reduces is None:
        return None
    shape = outputs[0][1]
    n = shape.num_elements()
    x = reduces[0][0].operands[0].shape
    minor = x.dimensions[le.major_to_minor(x)[-1]]
    if n == 0 or minor < 2 * WARP:
        return None
    lanes = lane_count(n, minor)
    assignment = emitter.assignment
    fusion = h if h.opcode == "fusion" else None
    reads = [s.key for s in _reads(h, assignment)]
    scratch = ("scratch", name)      # the allocation's key in the executable's memory
    scratch_key = (scratch, 0)       # the slice: offset 0 of it
    offsets, nbytes = [], 0
    for r, _ in reduces:
        offsets.append(nbytes)
        nbytes += -(-n * lanes * r.shape.element_type.byte_size // 256) * 256

    # 1. partials[o * lanes + lane] over the lane's strided elements.
    keys = list(dict.fromkeys([scratch_key] + reads))
    kernel = _Kernel(f"{name}_partials", keys, h)
    g = ElementGenerator(emitter, kernel, fusion=fusion)

    def partials(b, i):
        out, lane = b.udiv(i, i64(lanes)), b.urem(i, i64(lanes))
        index = le.delinearize(b, out, list(shape.dimensions), le.major_to_minor(shape))
        g.reduce_lanes = {id(r): (lane, lanes, [identity]) for r, identity in reduces}
        for (r, _), offset in zip(reduces, offsets):
            v = g.value(r, index)
            base = b.gep(kernel.ptrs[scratch_key], [i64(offset)], source_etype=ir.IntType(8))
            b.store(v, b.gep(base, [i], inbounds=True, source_etype=v.type))
    first = KernelThunk(kernel.module.name, finish_kernel(kernel, h, n * lanes, partials), keys,
                        n * lanes, h.name, scratch={scratch: nbytes})

    # 2. out[o] = fold(init, partials[o * lanes : (o + 1) * lanes]).
    out_slices = [Slice(assignment.buffer(h, index)) for index, _, _ in outputs]
    keys = list(dict.fromkeys([scratch_key] + [s.key for s in out_slices] + reads))
    kernel = _Kernel(f"{name}_combine", keys, h)
    g = ElementGenerator(emitter, kernel, fusion=fusion)

    def combine(b, i):
        index = le.delinearize(b, i, list(shape.dimensions), le.major_to_minor(shape))
        for (r, identity), offset, (_, out_shape, _), out_slice in zip(reduces, offsets, outputs,
                                                                       out_slices):
            acc = kernel.alloca(identity.type, name="acc")
            b.store(g.value(r.operands[1], []), acc)
            base = b.gep(kernel.ptrs[scratch_key], [i64(offset)], source_etype=ir.IntType(8))
            first_lane = b.mul(i, i64(lanes))
            with le.for_loop(b, 0, lanes, name="lane") as lane:
                part = b.load(b.gep(base, [b.add(first_lane, lane)], inbounds=True,
                                    source_etype=identity.type), typ=identity.type)
                cur = b.load(acc, typ=identity.type)
                b.store(emitter.emit_scalar_computation(b, r.attr("to_apply"), [cur, part]), acc)
            ptr = g.element_pointer(kernel.pointer(out_slice), out_shape, index)
            store_element(b, b.load(acc, typ=identity.type), ptr, out_shape.element_type)
    second = KernelThunk(kernel.module.name, finish_kernel(kernel, h, n, combine), keys, n, h.name)
    return [first, second]
