"""Small matrix products as a tiled LLVM IR GEMM (XLA:CPU's "tiled LLVM IR
GEMM" strategy for small dots), instead of a call to the runtime's Eigen
matmul.

Batched f32/f64 dots run the same kernel over every row block of every
product, reading the operands and writing the result with the strides
their layouts give (``strided_gemm.plan``: which ones, and the
orientation); products too large for it (``blocked`` walks, the JIT only)
go to the runtime's blocked GEMM through the same call, unless the
runtime's matmul reads their layouts as they are. The rest of this
docstring is about unbatched dots.

Where the target's runtime has it (the JIT: ``__xla_cpu_tiled_gemm_f32``
and ``_f64``, ``runtime/tiled_gemm.cc``), the driver calls that instead of
emitting the kernel: the same walk and the same bits, compiled ahead of
time per ISA variant, its sizes, strides and batch walk passed as a
constant array, so a module's products compile no LLVM kernel (11-24 ms
of LLVM each; docs/cpu_backend.md). The choices below (which products,
serial or split, the thread-count branch) are the same either way; the
kernel is what objects compiled ahead of time run.

Applies to an f32/f64 ``dot`` the runtime's matmul would compute
(``runtime_dot``) with no batch dimensions, both operands and the result
row-major and not transposed (lhs ``[M, K]``, rhs ``[K, N]``), at least
``MR`` rows and ``MIN_COLUMNS`` columns, and fewer than ``MAX_MACS`` multiply-adds
(below the runtime's threshold for using threads, so the product was
serial anyway), or more with a small rhs (see the end). For such sizes
Eigen's blocked GEMM spends much of its time packing both operands into
panels (60x50 by 50x70 in f64: 12 us here, OpenBLAS 8 us); this kernel
reads them in place.

The kernel: for each block of ``MR`` rows and ``NR`` columns of the
result, ``MR x NV`` vector accumulators (NV vectors of 256 bits per row)
start at zero; for p = 0..K-1 it loads the NV vectors of rhs row p once
and adds ``lhs[i, p] * rhs[p, j:j+NR]`` to each row's accumulators (a
broadcast and ``llvm.fmuladd``), then stores the block. The last row block
starts at M - MR and the last column block at N - NR, overlapping the one
before: the overlapped elements are computed again by the same
instructions in the same order, so they are stored with the same values
and no masked or scalar remainder code is needed. Each element is the sum
over p in increasing order, one rounding per multiply-add where the target
fuses them (as XLA:CPU allows), which differs from Eigen's summation order
in the last bits, as two BLAS libraries differ.

The row blocks are the kernel's range (``begin``/``end``), called from the
driver on the calling thread. Columns past the last whole block of ``NR``
take a block of as many vectors as they need, placed at N minus that width
(it overlaps the block before by less than a vector, with the same values);
a product of fewer than ``NR`` columns takes one block of as many vectors
as it needs, the last one loaded and stored masked to the columns that
exist.
A shape-generic kernel (``shape_generic``: one kernel for the products of
one module that differ in sizes only) reads M, K and N at run time and
places a whole last block at N - NR instead, or, for N under NR, runs one
block whose vectors are all masked (masks computed from N).

Products of ``MAX_MACS`` multiply-adds or more, which the runtime may
spread over threads, whose rhs takes at most ``MAX_SPLIT_RHS_BYTES`` (it
stays in the core's L2 cache while every row block reads it), run this
kernel at any size and thread count: from ``MIN_SPLIT_MACS`` their row
blocks spread over the thread pool through ``__xla_cpu_parallel_for``
(chunks claimed as threads come free, each of at least
``MIN_CHUNK_MACS``), smaller ones on the calling thread. Each element is
computed by the same instructions whichever thread runs its block, so the
bits do not depend on the thread count. With one thread the pool runs all the
blocks on the calling thread: the serial kernel. Other products of
``MAX_MACS`` up to ``MAX_TILED_MACS`` multiply-adds run this kernel only
when the runtime's pool has one thread (the runtime would compute them
serially too, with Eigen's packing): the driver branches on
``__xla_cpu_runtime_num_threads`` between the kernel and the runtime's
matmul.
"""
import functools
import math

from llvmlite import ir

from xla.backends.cpu import loop_emitter as le
from xla.backends.cpu.kernels import PTR, VOID, Kernel, slice_pattern
from xla.backends.cpu.ir_emitter import Slice, register_instruction
from xla.backends.cpu.llvm_types import F32, F64, I32, vector_lanes
from xla.backends.cpu.shape_generic import is_generic
from xla.backends.cpu.strided_gemm import (MAX_MACS, MR, NUM_THREADS, PARALLEL_FOR,
                                           small_gemm_shape, split_over_pool)
from xla.backends.cpu import runtime_matmul, strided_gemm
from xla.errors import InternalError
from xla.backends.cpu.loop_emitter import I64, i64

# A block of MR rows (strided_gemm.MR) and NV 256-bit vectors per row: 12
# accumulators, which with the NV loaded vectors and a broadcast fit AVX2's
# 16 registers (tiles of 6 x 2 512-bit vectors, 8 x 3 or 6 x 4 256-bit ones
# measured the same here on 60x50 by 50x70 f64, AVX-512).
NV = 3
# Such products of at least MIN_SPLIT_MACS spread their row blocks over the
# pool, in chunks of at least MIN_CHUNK_MACS; smaller ones run on the
# calling thread. Waking the pool's sleeping worker costs tens to hundreds
# of microseconds on this VM, and the caller then waits for the chunk it
# took: 512x128 @ 128x10 f64 (655K multiply-adds, ~30 us serial) took ~140
# us at two threads split into chunks of 131K.
MIN_SPLIT_MACS = 1 << 22
MIN_CHUNK_MACS = 1 << 20
_LANES = {"f32": 8, "f64": 4}          # 256-bit vectors
_WIDE_LANES = {"f32": 16, "f64": 8}    # 512-bit vectors, on a host with AVX-512
_TYPES = {"f32": F32, "f64": F64}
def _lanes(et, n):
    """Elements per vector for a product with ``n`` columns: 512-bit vectors
    where the target has them (``llvm_types.vector_width``: the JIT's host
    with AVX-512; 32 vector registers hold the tile's 12 accumulators, 3 rhs
    vectors and a broadcast, and a core with two 512-bit FMA pipes runs
    twice the 256-bit rate) and one full column block fits; else 256-bit
    ones (objects compiled ahead of time for other CPUs too)."""
    wide = vector_lanes(64 if et == "f64" else 32)
    if wide >= _WIDE_LANES[et] and n >= NV * _WIDE_LANES[et]:
        return _WIDE_LANES[et]
    return _LANES[et]


# Batch dimensions the runtime's tiled GEMM takes (cpu_runtime.h).
MAX_RUNTIME_BATCH_RANK = strided_gemm.MAX_RUNTIME_BATCH_RANK


@register_instruction("dot")
def emit_dot(me, h):
    """A dot: the tiled kernel when it applies, else the runtime's matmul,
    else the generator's loops (reduction_emitter.generate_dot)."""
    if tiny_products(h):
        me.emit_loops(h, h)
        return
    if not emit_small_gemm(me, h) and not runtime_matmul.emit_runtime_matmul(me, h):
        me.emit_loops(h, h)


# Batched products of at most this many result columns, contraction size
# and result elements each run as the element generator's loop
# (``tiny_products``).
TINY_COLUMNS = 3
TINY_CONTRACTION = 16
TINY_RESULT = 64


def tiny_products(h):
    """Whether ``h`` is a batch of products too narrow for the tiled kernel:
    at most ``TINY_COLUMNS`` result columns (3x3 rotations, matrix-vector
    products), ``TINY_CONTRACTION`` contracted and ``TINY_RESULT`` result
    elements each. The element generator's loop over the whole result
    (``reduction_emitter.generate_dot``: each element its short sum, the
    loop over the batch vectorized) beats one tiled product per batch
    element, which vectorizes over the columns (2-16 ns a product):
    einsum('nij,nj->ni') over 1M 4x4 matrices 12.8 -> 2.8 ms (XLA:CPU
    4.8), 256K 3x3 products 4.0 -> 1.2 ms (1.8-5.3). With 4 or more columns
    the tiled kernel is faster (4x4x4: 0.35 against 0.56 ms)."""
    if not h.attr("lhs_batch_dims", ()) or not h.shape.is_array or len(h.operands) != 2:
        return False
    lhs, rhs = h.operands
    contracted = set(h.attr("rhs_contracting_dims", ())) | set(h.attr("rhs_batch_dims", ()))
    columns = math.prod(d for i, d in enumerate(rhs.shape.dimensions) if i not in contracted)
    k = math.prod(lhs.shape.dimensions[d] for d in h.attr("lhs_contracting_dims", ()))
    batch = math.prod(lhs.shape.dimensions[d] for d in h.attr("lhs_batch_dims", ()))
    return (columns <= TINY_COLUMNS and k <= TINY_CONTRACTION
            and h.shape.num_elements() <= TINY_RESULT * batch)


def emit_small_gemm(me, h):
    """Emits ``h`` as the tiled kernel (or the runtime's tiled GEMM) and its
    call; False when it does not apply."""
    walk = strided_gemm.plan(h)
    if walk is not None:
        # Products beyond the tiled walk's limits in layouts the runtime's
        # matmul reads as they are: the matmul, with its own split of
        # such products over the pool.
        if walk.blocked and runtime_matmul.emit_runtime_matmul(me, h):
            return True
        return _emit_strided(me, h, walk)
    shape = small_gemm_shape(h, me.runtime_symbols)
    if shape is None:
        return False
    m, k, n = shape
    if _runtime_gemm(me, h) is not None:
        walk = strided_gemm.StridedGemm(False, [], m, k, n, ((), k, 1), ((), n, 1), ((), n, 1))
        run = functools.partial(_call_runtime_gemm, me, h, walk)
    else:
        lanes = _lanes(h.shape.element_type.text, n)
        slices = [Slice(me.assignment.buffer(x)) for x in (h.operands[0], h.operands[1], h)]
        name = me.unique(f"kernel.{h.name}.gemm")
        # Products split over the pool keep constant sizes: mlp_forward's
        # 512x256x128 and 512x128x10 (size variants of each other), one
        # thread, 646-690 us a call with constant sizes, 720-775 us
        # shape-generic.
        generic = m * k * n < MIN_SPLIT_MACS and is_generic(me, h, slices, runtime_bounds=True)

        def emit():
            return _emit_kernel(me, h, name, slices, shape, lanes, generic)

        if generic:   # the vector width is the one choice made from a size
            kernel = me.size_free_kernels.emit(h, name, slices,
                                               ("gemm", slice_pattern(slices), lanes), emit)
        else:
            kernel = me.memoized_kernel(h, (me.fingerprints.key(h), "gemm", slice_pattern(slices)),
                                        name, slices, emit)
        run = functools.partial(_call_kernel, me, kernel, math.ceil(m / MR))
    et = h.shape.element_type.text
    split = split_over_pool(m, k, n, et, me.runtime_symbols)
    if m * k * n < MAX_MACS or (split and m * k * n < MIN_SPLIT_MACS):
        run(0)
    elif split:
        run(_min_chunk(k, n))
    else:
        # A product the runtime would spread over threads: the tiled GEMM
        # where the pool has one thread (the runtime computes it serially
        # there too), the runtime's matmul otherwise.
        d = me.builder
        threads = d.call(me.declare(NUM_THREADS, ir.FunctionType(I32, [])), [])
        with d.if_else(d.icmp_signed("<=", threads, ir.Constant(I32, 1))) as (serial, parallel):
            with serial:
                run(0)
            with parallel:
                emitted = runtime_matmul.emit_runtime_matmul(me, h)
        assert emitted, h
    return True


def _emit_strided(me, h, walk):
    """A batched dot (``strided_gemm.plan``): one kernel (or runtime call)
    over every row block of every product, split over the pool like the
    products above with a small rhs, on the calling thread below
    MIN_SPLIT_MACS."""
    if _runtime_gemm(me, h) is not None and len(walk.batch) <= MAX_RUNTIME_BATCH_RANK:
        run = functools.partial(_call_runtime_gemm, me, h, walk)
    elif walk.blocked:
        raise InternalError(f"{h.name}: a blocked strided product without the runtime's GEMM "
                            "(runtime_context.symbols() had a runtime with it)")
    else:
        et = h.shape.element_type.text
        wide = vector_lanes(64 if et == "f64" else 32)
        # 512-bit vectors also where the columns are whole vectors of them
        # (attention's 32 columns per head: one block of two).
        lanes = _lanes(et, walk.n)
        if wide >= _WIDE_LANES[et] and walk.n % _WIDE_LANES[et] == 0:
            lanes = _WIDE_LANES[et]
        slices = [Slice(me.assignment.buffer(x)) for x in (h.operands[0], h.operands[1], h)]
        name = me.unique(f"kernel.{h.name}.gemm")

        def emit():
            return _emit_kernel(me, h, name, slices, (walk.m, walk.k, walk.n), lanes, False, walk)

        kernel = me.memoized_kernel(h, (me.fingerprints.key(h), "gemm", slice_pattern(slices)),
                                    name, slices, emit)
        run = functools.partial(_call_kernel, me, kernel, walk.products * math.ceil(walk.m / MR))
    split = walk.products * walk.m * walk.k * walk.n >= MIN_SPLIT_MACS \
        and PARALLEL_FOR in me.runtime_symbols
    run(_min_chunk(walk.k, walk.n) if split else 0)
    return True


def _runtime_gemm(me, h):
    """The runtime's tiled GEMM for ``h``'s element type where the target
    has it (the JIT), else None (objects compiled ahead of time, whose C
    runtime has none: the kernel below)."""
    name = f"__xla_cpu_tiled_gemm_{h.shape.element_type.text}"
    return name if name in me.runtime_symbols else None


def _min_chunk(k, n):
    """Row blocks per chunk of a product split over the pool."""
    return max(1, -(-MIN_CHUNK_MACS // (MR * k * n)))


def _call_kernel(me, kernel, blocks, min_chunk):
    """The driver's call of the tiled ``kernel`` over its ``blocks`` row
    blocks: on the calling thread (``min_chunk`` 0), else split over the
    pool in chunks of at least ``min_chunk`` blocks."""
    if not min_chunk:
        kernel.call_in_driver(me.builder, me.table, i64(0), i64(blocks))
        return
    pf = me.declare(PARALLEL_FOR, ir.FunctionType(VOID, [PTR, PTR, I64, I64]))
    me.builder.call(pf, [kernel.function, me.table, i64(blocks), i64(min_chunk)])


def _call_runtime_gemm(me, h, walk, min_chunk):
    """A call to the runtime's tiled GEMM computing ``h`` as ``walk`` (a
    ``strided_gemm.StridedGemm``) reads it; ``min_chunk`` > 0: split over
    the pool (``__xla_cpu_tiled_gemm_*`` in cpu_runtime.h)."""
    d = me.builder
    fn = me.declare(_runtime_gemm(me, h), ir.FunctionType(VOID, [PTR, PTR, PTR, PTR, I64]))
    a, b, c = (me.slice_pointer(d, me.table, Slice(me.assignment.buffer(x)).key)
               for x in (h.operands[0], h.operands[1], h))
    if walk.swapped:
        a, b = b, a
    (a_batch, a_row, a_col), (b_batch, b_row, b_col), (c_batch, c_row, _) = \
        walk.scalar, walk.vector, walk.out
    params = [walk.m, walk.k, walk.n, a_row, a_col, b_row, c_row, len(walk.batch),
              *walk.batch, *a_batch, *b_batch, *c_batch, int(walk.blocked)]
    if walk.blocked:
        params.append(b_col)
    d.call(fn, [a, b, c, me.dims_global(params), i64(min_chunk)])


def _emit_kernel(me, h, name, slices, shape, lanes, generic, walk=None):
    """The tiled kernel of dot ``h`` (``shape``: M, K, N), emitted and
    finished; with ``walk`` (a ``strided_gemm.StridedGemm``), its range is
    every row block of every product and the operands are read with its
    strides."""
    m, k, n = shape
    et = h.shape.element_type.text
    scalar = _TYPES[et]
    align = 4 if et == "f32" else 8
    vec = ir.VectorType(scalar, lanes)
    nr = NV * lanes
    kernel = Kernel(me, name, slices, generic=generic)
    kernel.root = h
    b = kernel.b
    ab = kernel.alloca_builder
    # The sizes and what the loops derive from them: constants, or in a
    # shape-generic kernel values computed once in the first block.
    m_v, k_v, n_v = kernel.dim(m), kernel.dim(k), kernel.dim(n)
    if kernel.generic:
        last_row, last_col = ab.sub(m_v, i64(MR)), ab.sub(n_v, i64(nr))
        col_blocks = ab.udiv(ab.add(n_v, i64(nr - 1)), i64(nr))
        narrow = ab.icmp_signed("<", n_v, i64(nr))
        # Vector v's lanes j < N - v * lanes (the narrow case's masks).
        lane = ir.Constant(ir.VectorType(I64, lanes), [i64(i) for i in range(lanes)])
        masks = []
        for v in range(NV):
            left = ab.sub(n_v, i64(v * lanes))
            left = ab.shuffle_vector(ab.insert_element(ir.Constant(ir.VectorType(I64, lanes), ir.Undefined),
                                                       left, ir.Constant(I32, 0)),
                                     ir.Constant(ir.VectorType(I64, lanes), ir.Undefined),
                                     ir.Constant(ir.VectorType(I32, lanes), [ir.Constant(I32, 0)] * lanes))
            masks.append(ab.icmp_signed("<", lane, left))
    else:
        last_row, last_col, col_blocks = i64(m - MR), i64(n - nr), math.ceil(n / nr)
    a_ptr, b_ptr, c_ptr = (kernel.pointer(s) for s in slices)
    # Row strides of the scalar operand, the vector operand and the result,
    # and the scalar operand's column stride (None: 1).
    a_rows, a_cols, b_rows, c_rows = k_v, None, n_v, n_v
    if walk is not None:
        if walk.swapped:
            a_ptr, b_ptr = b_ptr, a_ptr
        a_rows, b_rows, c_rows = (i64(s[1]) for s in (walk.scalar, walk.vector, walk.out))
        a_cols = None if walk.scalar[2] == 1 else i64(walk.scalar[2])
    fmuladd = _declare(kernel.module, f"llvm.fmuladd.v{lanes}{et}", vec, [vec, vec, vec])
    zero = ir.Constant(vec, [ir.Constant(scalar, 0.0)] * lanes)
    splat_mask = ir.Constant(ir.VectorType(I32, lanes), [ir.Constant(I32, 0)] * lanes)
    accs = [[kernel.alloca(vec, name=f"acc.{r}.{v}") for v in range(NV)] for r in range(MR)]

    def element(base, row, col, row_stride, col_stride=None, offset=None):
        index = b.add(b.mul(row, row_stride), col if col_stride is None else b.mul(col, col_stride))
        if offset is not None:
            index = b.add(index, offset)
        return b.gep(base, [index], inbounds=True, source_etype=scalar)

    def load(ptr, masked):
        if masked is None:
            return b.load(ptr, typ=vec, align=align)
        return b.call(masked[0], [ptr, ir.Constant(I32, align), masked[2], zero])

    def store(value, ptr, masked):
        if masked is None:
            b.store(value, ptr, align=align)
        else:
            b.call(masked[1], [value, ptr, ir.Constant(I32, align), masked[2]])

    mask_type = ir.VectorType(ir.IntType(1), lanes)

    def masked_ops(mask):
        return (_declare(kernel.module, f"llvm.masked.load.v{lanes}{et}.p0", vec,
                         [PTR, I32, mask_type, vec]),
                _declare(kernel.module, f"llvm.masked.store.v{lanes}{et}.p0", VOID,
                         [vec, PTR, I32, mask_type]), mask)

    def block(i0, j0, nv, tail=None, masks=None, offsets=(None, None, None)):
        """Rows i0..i0+MR-1, columns j0..j0+nv*lanes-1 of the result; with
        ``tail``, only the first ``tail`` lanes of the last vector exist,
        with ``masks`` (run-time values), those of each vector's mask
        (masked loads and stores); ``offsets``: of the product's scalar
        operand, vector operand and result (a batch's), or None."""
        a_off, b_off, c_off = offsets
        masked = [None] * nv
        if tail is not None:
            masked[-1] = masked_ops(ir.Constant(mask_type, [ir.Constant(ir.IntType(1), int(i < tail))
                                                            for i in range(lanes)]))
        if masks is not None:
            masked = [masked_ops(mask) for mask in masks[:nv]]
        for row in accs:
            for acc in row[:nv]:
                b.store(zero, acc)
        with le.for_loop(b, 0, k_v, name="p") as p:
            bs = [load(element(b_ptr, p, b.add(j0, i64(v * lanes)), b_rows, None, b_off),
                       masked[v])
                  for v in range(nv)]
            for r in range(MR):
                a = b.load(element(a_ptr, b.add(i0, i64(r)), p, a_rows, a_cols, a_off),
                           typ=scalar)
                a = b.shuffle_vector(b.insert_element(ir.Constant(vec, ir.Undefined), a,
                                                      ir.Constant(I32, 0)),
                                     ir.Constant(vec, ir.Undefined), splat_mask)
                for v in range(nv):
                    acc = accs[r][v]
                    b.store(b.call(fmuladd, [a, bs[v], b.load(acc, typ=vec)]), acc)
        for r in range(MR):
            for v in range(nv):
                ptr = element(c_ptr, b.add(i0, i64(r)), b.add(j0, i64(v * lanes)), c_rows,
                              None, c_off)
                store(b.load(accs[r][v], typ=vec), ptr, masked[v])

    def batch_offsets(index):
        """Offsets of product ``index`` (row-major over the batch dimensions)
        in the scalar operand, the vector operand and the result."""
        offsets = [i64(0)] * 3
        for d in reversed(range(len(walk.batch))):
            position = b.urem(index, i64(walk.batch[d])) if d else index
            index = b.udiv(index, i64(walk.batch[d]))
            for t, strides in enumerate((walk.scalar[0], walk.vector[0], walk.out[0])):
                offsets[t] = b.add(offsets[t], b.mul(position, i64(strides[d])))
        return tuple(offsets)

    with le.for_loop(b, kernel.begin, kernel.end, name="ib") as ib:
        offsets = (None, None, None)
        if walk is not None:
            row_blocks = math.ceil(m / MR)
            offsets = batch_offsets(b.udiv(ib, i64(row_blocks)))
            ib = b.urem(ib, i64(row_blocks))
        i0 = b.select(b.icmp_signed("<", b.mul(ib, i64(MR)), last_row),
                      b.mul(ib, i64(MR)), last_row)
        if kernel.generic:
            # N known at run time only: whole blocks, the last one placed at
            # N - NR (overlapping the one before, with the same values); N
            # under NR: one block, each vector masked to the columns that
            # exist.
            with b.if_else(narrow) as (then, otherwise):
                with then:
                    block(i0, i64(0), NV, masks=masks)
                with otherwise:
                    with le.for_loop(b, 0, col_blocks, name="jb") as jb:
                        j0 = b.select(b.icmp_signed("<", b.mul(jb, i64(nr)), last_col),
                                      b.mul(jb, i64(nr)), last_col)
                        block(i0, j0, NV)
        else:
            full_blocks, rest = divmod(n, nr)
            rest_vectors = math.ceil(rest / lanes)
            with le.for_loop(b, 0, full_blocks, name="jb") as jb:
                block(i0, b.mul(jb, i64(nr)), NV, offsets=offsets)
            if full_blocks == 0:
                # Fewer columns than a block: one block, its last vector
                # masked to the columns that exist.
                block(i0, i64(0), rest_vectors, tail=(n % lanes) or None, offsets=offsets)
            elif rest_vectors:
                block(i0, i64(n - rest_vectors * lanes), rest_vectors, offsets=offsets)
    kernel.finish()
    return kernel


def _declare(module, name, ret, args):
    fn = module.globals.get(name)
    if fn is None:
        fn = ir.Function(module, ir.FunctionType(ret, args), name)
    return fn
