"""The fusion ``matrix-vector-pair-fusion`` makes (``matrix_vector_pairs.py``):
``(A x, y A)`` for a row-major ``[M, K]`` matrix A in one pass over A.

The kernel zeroes ``y A`` (K elements), then for each block of ``ROWS``
rows of A (then each remaining row), in one loop over their K columns:
``(A x)[i]`` accumulates ``A[i, j] * x[j]`` for each row (the loop
vectorizer reassociates those sums, asked by an explicit vector width, as
the row reductions do) and ``(y A)[j] += y[i] * A[i, j]`` over the block's
rows in order (the axpy form). x and ``y A`` stay in the cache; A is read
once.

The chain ``(t, t A)`` with ``t = A x`` (the pass's second form) reads A
once too: it zeroes ``t A``, then for each block of ``CHAIN_ROWS`` rows
(then each remaining row) runs one loop over their K columns for their
``t[i]`` (the row sums above), stores them, then a second loop over the
same columns, the block still in the cache, adds ``t[i] * A[i, j]`` to
``(t A)[j]`` over the block's rows in order.

Each splits its rows into up to ``PAIR_CHUNKS`` / ``CHAIN_CHUNKS`` chunks,
by the shape alone, over the thread pool (1: on the calling thread), each
chunk's part of ``y A`` / ``t A`` in a scratch row, summed in chunk order
after (measurements at the constants). Either way the order of every sum
is fixed by the shape (the same bits at any thread count). A fusion of
another form with a tuple root is left to the general loop emitter.
"""
from llvmlite import ir

from xla.backends.cpu import loop_emitter as le
from xla.backends.cpu.ir_emitter import Slice, register_fusion_root
from xla.backends.cpu.kernels import PTR, VOID, Kernel
from xla.backends.cpu.llvm_types import F32, F64
from xla.backends.cpu.loop_emitter import I64, i64
from xla.backends.cpu.matrix_vector_pairs import chain_dot, pair_role

_TYPES = {"f32": (F32, 8), "f64": (F64, 4)}   # register type, lanes of a 256-bit vector
ROWS = 8      # rows of A per pass over y A (1200x1000 f64 here, AVX-512: 4 rows 185-214 us, 8 rows 162-172)
_CONTRACT = ("contract",)   # the chain's multiply and add as one FMA (as elemental_ir_emitter allows)
# Rows of A per block of the chain, read from memory for t, then from the
# cache for t A. 1200x1000 f64, one thread, kernel alone (medians of 5
# rounds, loaded 2-core AVX-512 machine): 2 rows 262 us, 4 241-247, 8
# 218-226, 16 215-218, 32 248 (NumPy's two GEMVs 266); one loop over
# both blocks (t of the next block, t A of the one before) 221-242,
# 512-bit vectors 219-256, two partial sums in t A 213-219: no better.
CHAIN_ROWS = 8
# With CHAIN_CHUNKS > 1, the chain's rows split into at most CHAIN_CHUNKS
# chunks of at least CHAIN_MIN_CHUNK_ROWS rows, run over the thread pool,
# each adding into its own row of a [chunks, K] scratch (at most
# CHAIN_MAX_SCRATCH_BYTES, on the entry function's stack), summed in chunk
# order after: the split depends on the shape only. 1200x1000 f64,
# kernel alone, medians of 5-9 rounds: one thread, 1 chunk 221-224 us, 8 chunks 220-228, 16 228; two
# threads, 1 chunk 221-224, 2 chunks 234, 4 245, 8 148-255 (rounds
# 141-272: the second core is busy), 16 175 (149-307), NumPy's threaded
# OpenBLAS 141-175; numpy_programs' atax at the default thread counts
# (load 3.1-3.2), 8 chunks 0.75-2.6 ms (median 2.5: a worker descheduled
# while it holds a chunk), serial 0.43-0.51 ms (load 2.6), the runtime's
# two GEMVs 0.59-2.8. With nothing else running (2026-11-27 00:57 UTC,
# default threads, two runs each, alternating): serial 0.475 / 0.517 ms
# (0.99x / 0.77x NumPy's threaded OpenBLAS), 8 chunks 0.369 / 0.361 ms
# (1.17x / 1.21x). On: a loaded machine stalls every kernel the pool
# splits, this one no more than the others.
CHAIN_CHUNKS = 8
# The independent pair splits the same way (up to PAIR_CHUNKS chunks, the
# same minimum rows and scratch bound), its y A summed in chunk order.
# bicg's 1200x1000 f64 through xla.jit, two threads, quiet, calls back to
# back (2026-11-27 02:19 UTC): serial 196 us, 8 chunks 111 us; mvt's
# 1000x1000 139 -> 99 us. One thread: level (the combine adds one pass
# over 8 x K).
PAIR_CHUNKS = 8
CHAIN_MIN_CHUNK_ROWS = 64
CHAIN_MAX_SCRATCH_BYTES = 1 << 18


def _pair(fusion, root):
    """(rows dot, cols dot) when ``root`` is the pair's tuple, else None."""
    comp = fusion.attr("calls")
    if len(root.operands) != 2 or len(fusion.operands) != 3:
        return None
    rows, cols = root.operands
    params = {i.parameter_number: i for i in comp.instructions if i.opcode == "parameter"}
    matrix = params.get(0)
    if matrix is None or rows.opcode != "dot" or cols.opcode != "dot" or \
            pair_role(rows, matrix) != "rows" or pair_role(cols, matrix) != "cols" or \
            rows.operands[1] is not params.get(1) or cols.operands[0] is not params.get(2) or \
            len(comp.instructions) != 6:
        return None
    return rows, cols


def _chain(fusion, root):
    """Whether ``root`` is the chain's tuple ``(A x, dot(reshape(A x), A))``
    (the reshape a bitcast after ``reshape-to-bitcast``)."""
    comp = fusion.attr("calls")
    if len(root.operands) != 2 or len(fusion.operands) != 2 or len(comp.instructions) != 6:
        return False
    rows, second = root.operands
    params = {i.parameter_number: i for i in comp.instructions if i.opcode == "parameter"}
    matrix = params.get(0)
    if matrix is None or rows.opcode != "dot" or pair_role(rows, matrix) != "rows" or \
            rows.operands[1] is not params.get(1):
        return False
    t = second.operands[0] if second.operands else None
    return t is not None and t.opcode in ("reshape", "bitcast") and t.operands[0] is rows and \
        tuple(second.shape.dimensions) == (1, matrix.shape.dimensions[1]) and \
        chain_dot(second, matrix, t) and second.operands[1] is matrix


@register_fusion_root("tuple")
def emit_matrix_vector_pair(me, h, root):
    if _chain(h, root):
        a_op, x_op = h.operands
        _emit_split(me, h, "gemv_chain", a_op, [x_op], 2, "chain", _chain_rows)
        return True
    if _pair(h, root) is None:
        return False
    a_op, x_op, y_op = h.operands
    _emit_split(me, h, "gemv_pair", a_op, [x_op, y_op], 2, "pair", _pair_rows)
    return True


def _chunks(me, kind, m, k, itemsize):
    """How many chunks of rows ``kind`` ("pair" or "chain") splits into (by
    the shape only, so the bits do not depend on the thread count); 1:
    serial."""
    if "__xla_cpu_parallel_for" not in me.runtime_symbols:
        return 1
    limit = PAIR_CHUNKS if kind == "pair" else CHAIN_CHUNKS
    return max(1, min(limit, m // CHAIN_MIN_CHUNK_ROWS,
                      CHAIN_MAX_SCRATCH_BYTES // max(1, k * itemsize)))


def _emit_split(me, h, label, a_op, vector_ops, n_outs, kind, rows):
    """The fusion ``h``'s kernel(s): ``rows(kernel, scalar, lanes, k, a,
    vectors, outs, y_out, lo, hi)`` emits rows [lo, hi) of A, writing the
    row outputs ``outs`` (their elements lo..hi-1) and its part of the
    column output (zeroed first) into ``y_out``. The fusion's last output
    is the column output: serial, ``rows`` over all of A writes it in
    place; split, each chunk writes a row of a scratch, summed in chunk
    order after."""
    m, k = a_op.shape.dimensions
    et = a_op.shape.element_type.text
    scalar, lanes = _TYPES[et]
    in_slices = [Slice(me.assignment.buffer(o)) for o in [a_op] + vector_ops]
    out_slices = [Slice(me.assignment.buffer(h, (i,))) for i in range(n_outs)]
    chunks = _chunks(me, kind, m, k, 8 if et == "f64" else 4)
    if chunks == 1:
        kernel = Kernel(me, me.unique(f"kernel.{h.name}.{label}"), in_slices + out_slices)
        kernel.root = h
        ptrs = [kernel.pointer(s) for s in in_slices + out_slices]
        rows(kernel, scalar, lanes, k, ptrs[0], ptrs[1:len(in_slices)],
             ptrs[len(in_slices):-1], ptrs[-1], i64(0), i64(m))
        kernel.finish()
        kernel.call_in_driver(me.builder, me.table, i64(0), i64(1))
        return

    # Chunk c: rows [c m / chunks, (c + 1) m / chunks), its part of the
    # column output in row c of a [chunks, K] scratch on the entry
    # function's stack; then the output is the sum of those rows in chunk
    # order.
    ab = me.alloca_builder
    scratch = ab.alloca(scalar, size=i64(chunks * k), name=me.unique(f"chunks.{h.name}"))
    scratch.align = 64
    ctx = ab.alloca(PTR, size=i64(2), name=me.unique(f"ctx.{h.name}"))
    b = me.builder
    b.store(me.table, ctx)
    b.store(b.bitcast(scratch, PTR), b.gep(ctx, [i64(1)], inbounds=True, source_etype=PTR))
    ctx = b.bitcast(ctx, PTR)

    kernel = Kernel(me, me.unique(f"kernel.{h.name}.{label}_chunks"),
                    in_slices + out_slices[:-1], scratch=True)
    kernel.root = h
    kb = kernel.b
    ptrs = [kernel.pointer(s) for s in in_slices + out_slices[:-1]]
    with le.for_loop(kb, kernel.begin, kernel.end, name="chunk") as c:
        lo = kb.udiv(kb.mul(c, i64(m)), i64(chunks))
        hi = kb.udiv(kb.mul(kb.add(c, i64(1)), i64(m)), i64(chunks))
        part = kb.gep(kernel.scratch, [kb.mul(c, i64(k))], inbounds=True, source_etype=scalar)
        rows(kernel, scalar, lanes, k, ptrs[0], ptrs[1:len(in_slices)], ptrs[len(in_slices):],
             part, lo, hi)
    kernel.finish()
    pf = me.declare("__xla_cpu_parallel_for", ir.FunctionType(VOID, [PTR, PTR, I64, I64]))
    b.call(pf, [kernel.function, ctx, i64(chunks), i64(1)])

    kernel = Kernel(me, me.unique(f"kernel.{h.name}.{label}_combine"), out_slices[-1:], scratch=True)
    kernel.root = h
    kb = kernel.b
    y = kernel.pointer(out_slices[-1])
    with le.for_loop(kb, 0, k, name="j", vectorize=lanes) as j:
        total = kb.load(kb.gep(kernel.scratch, [j], inbounds=True, source_etype=scalar), typ=scalar)
        for c in range(1, chunks):
            total = kb.fadd(total, kb.load(kb.gep(kernel.scratch, [kb.add(j, i64(c * k))], inbounds=True,
                                                  source_etype=scalar), typ=scalar))
        kb.store(total, kb.gep(y, [j], inbounds=True, source_etype=scalar))
    kernel.finish()
    b.call(kernel.function, [ctx, i64(0), i64(1)])


def _pair_rows(kernel, scalar, lanes, k, a, vectors, outs, y_out, lo, hi):
    """The pair over rows [lo, hi) of A: their ``A x`` into ``outs[0]``,
    their part of ``y A`` into ``y_out`` (zeroed first)."""
    (x, y), (rows_out,) = vectors, outs
    b = kernel.b
    zero = ir.Constant(scalar, 0.0)

    def at(base, index):
        return b.gep(base, [index], inbounds=True, source_etype=scalar)

    with le.for_loop(b, 0, k, name="z") as j:
        b.store(zero, at(y_out, j))
    accs = [kernel.alloca(scalar, name=f"acc.{r}") for r in range(ROWS)]

    def rows_from(i, n):
        """Rows i..i+n-1: one loop over their K columns."""
        ys = [b.load(at(y, b.add(i, i64(r))), typ=scalar) for r in range(n)]
        for acc in accs[:n]:
            b.store(zero, acc)
        with le.for_loop(b, 0, k, name="j", vectorize=lanes, interleave=2) as j:
            xj = b.load(at(x, j), typ=scalar)
            out = at(y_out, j)
            total = b.load(out, typ=scalar)
            for r in range(n):
                aij = b.load(at(a, b.add(b.mul(b.add(i, i64(r)), i64(k)), j)), typ=scalar)
                b.store(b.fadd(b.load(accs[r], typ=scalar), b.fmul(aij, xj)), accs[r])
                total = b.fadd(total, b.fmul(ys[r], aij))
            b.store(total, out)
        for r in range(n):
            b.store(b.load(accs[r], typ=scalar), at(rows_out, b.add(i, i64(r))))

    blocks_end = b.sub(hi, b.urem(b.sub(hi, lo), i64(ROWS)))
    with le.for_loop(b, lo, blocks_end, name="i", step=ROWS) as i:
        rows_from(i, ROWS)
    with le.for_loop(b, blocks_end, hi, name="t") as i:
        rows_from(i, 1)


def _chain_rows(kernel, scalar, lanes, k, a, vectors, outs, y_out, lo, hi):
    """The chain over rows [lo, hi) of A: their t into ``outs[0]``, their
    part of t A into ``y_out`` (zeroed first)."""
    (x,), (t_out,) = vectors, outs
    b = kernel.b
    zero = ir.Constant(scalar, 0.0)

    def at(base, index):
        return b.gep(base, [index], inbounds=True, source_etype=scalar)

    def multiply_add(acc, u, v):
        return b.fadd(acc, b.fmul(u, v, flags=_CONTRACT), flags=_CONTRACT)

    # (The loop's name tells tests this kernel ran, not the general loops.)
    with le.for_loop(b, 0, k, name="chain_zero") as j:
        b.store(zero, at(y_out, j))
    accs = [kernel.alloca(scalar, name=f"acc.{r}") for r in range(CHAIN_ROWS)]

    def rows_from(i, n):
        """Rows i..i+n-1: their t, then their part of t A."""
        starts = [b.mul(b.add(i, i64(r)), i64(k)) for r in range(n)]
        for acc in accs[:n]:
            b.store(zero, acc)
        with le.for_loop(b, 0, k, name="j", vectorize=lanes, interleave=2) as j:
            xj = b.load(at(x, j), typ=scalar)
            for r in range(n):
                aij = b.load(at(a, b.add(starts[r], j)), typ=scalar)
                b.store(multiply_add(b.load(accs[r], typ=scalar), aij, xj), accs[r])
        ts = [b.load(accs[r], typ=scalar) for r in range(n)]
        for r in range(n):
            b.store(ts[r], at(t_out, b.add(i, i64(r))))
        with le.for_loop(b, 0, k, name="c", vectorize=lanes, interleave=2) as j:
            out = at(y_out, j)
            total = b.load(out, typ=scalar)
            for r in range(n):
                total = multiply_add(total, ts[r], b.load(at(a, b.add(starts[r], j)), typ=scalar))
            b.store(total, out)

    blocks_end = b.sub(hi, b.urem(b.sub(hi, lo), i64(CHAIN_ROWS)))
    with le.for_loop(b, lo, blocks_end, name="i", step=CHAIN_ROWS) as i:
        rows_from(i, CHAIN_ROWS)
    with le.for_loop(b, blocks_end, hi, name="t") as i:
        rows_from(i, 1)
