"""Loops and index arithmetic for the CPU emitters.

Every loop is canonical (an i64 induction variable from ``start`` to ``end``
step 1, tested at the top), the shape LLVM's loop passes and vectorizer
expect. A loop nest over an array shape runs its dimensions from the most
major to the most minor *in the layout*, so that the innermost loop walks
contiguous memory.
"""
import contextlib

from llvmlite import ir

from xla.hlo.types import PrimitiveType as PT

I64 = ir.IntType(64)

# Ops whose element code is a long chain of dependent instructions (a
# polynomial, a range reduction): a loop computing one needs independent
# vector iterations interleaved to keep the FMA units busy
# (``long_chain_interleave``).
LONG_CHAIN_OPS = frozenset([
    "exponential", "exponential-minus-one", "log", "log-plus-one", "tanh", "logistic", "erf",
    "sine", "cosine", "tan", "power", "atan2", "cbrt"])
# Vector iterations such a loop interleaves where one of those ops has a
# bf16 or f16 result, or the kernel loads or stores bf16/f16 arrays (its
# loads and stores move half a vector register per iteration, the
# conversions lengthen the chain). Measured on the 2-core
# Zen 5 (AVX-512; [4096, 1024] arrays, best of 30 calls, alternated):
# elementwise (4 before): bf16 GELU 0.68 -> 0.58 ms, x * logistic(x) 0.58
# -> 0.48, exp 0.43 -> 0.39, tanh 0.45 -> 0.43; f16 GELU 0.50 -> 0.47, x *
# logistic(x) 0.42 -> 0.38 (f32 is slower at 8: tanh 0.33 -> 0.43, GELU on
# 16 M elements 2.8 -> 4.0 ms); softmax's exp and row sum (2 before): bf16
# 0.80 -> 0.63 ms, f16 0.59 -> 0.52. LLVM's time grows by 4-8 ms per such
# kernel (bf16 GELU module 31 -> 37 ms, bf16 softmax 37-40 -> 45 ms). Chains
# computed in f32 between bf16 loads and stores (medians of 30, in-process,
# alternated; 2026-11-28): JAX's exact (erf) GELU on bf16[4096, 1024],
# whose erfc JAX expands in f32, 1.24 -> 1.09 ms; convert(log1p(exp(x)))
# from and to bf16 1.30 -> 1.16; f32 in, tanh, bf16 out 0.44 -> 0.42;
# bf16 in, tanh, f32 out level; the bf16 MLP and transformer training
# steps, RMSNorm and layernorm level.
HALF_LONG_CHAIN_INTERLEAVE = 8


def _half(shape):
    return shape.is_array and shape.element_type in (PT.BF16, PT.F16)


def long_chain_interleave(instructions, default, moved_shapes=()):
    """The interleave count of a loop whose element code is ``instructions``
    and that loads and stores arrays of ``moved_shapes``:
    ``HALF_LONG_CHAIN_INTERLEAVE`` where one of them is a long-chain op with
    a bf16/f16 result or one of ``moved_shapes`` is bf16/f16 and there is a
    long-chain op, ``default`` where there is a long-chain op, else None
    (LLVM's cost model decides)."""
    chains = [x for x in instructions if x.opcode in LONG_CHAIN_OPS]
    if not chains:
        return None
    if any(_half(x.shape) for x in chains) or any(_half(s) for s in moved_shapes):
        return HALF_LONG_CHAIN_INTERLEAVE
    return default


def i64(n):
    return ir.Constant(I64, int(n))


class _LoopID(ir.values.MDValue):
    """A loop's ``!llvm.loop`` node: distinct and naming itself first, as
    LLVM requires, then the hints."""

    def descr(self, buf):
        ops = [self.get_reference()] + [op.get_reference() for op in self.operands]
        buf += ("distinct !{{ {0} }}".format(", ".join(ops)), "\n")


def loop_hints(module, interleave, vectorize=None):
    """An ``!llvm.loop`` node asking the vectorizer to interleave
    ``interleave`` vector iterations (independent dependency chains, which
    long elementwise expressions such as tanh need to keep the FMA units
    busy; LLVM's cost model picks 1 for them), and, with ``vectorize``, to
    vectorize it that many lanes wide: an explicit width also lets the
    vectorizer reassociate a floating-point reduction in the loop."""
    hints = []
    if interleave:
        hints.append(module.add_metadata([ir.MetaDataString(module, "llvm.loop.interleave.count"),
                                          ir.Constant(ir.IntType(32), interleave)]))
    if vectorize:
        # The width alone: with "llvm.loop.vectorize.enable" as well, a loop
        # the vectorizer cannot vectorize also gets a warning on stderr.
        hints.append(module.add_metadata([ir.MetaDataString(module, "llvm.loop.vectorize.width"),
                                          ir.Constant(ir.IntType(32), vectorize)]))
    return _LoopID(module, hints, name=str(len(module.metadata)))


@contextlib.contextmanager
def for_loop(b, start, end, name="i", interleave=None, step=1, vectorize=None):
    """``for (i = start; i < end; i += step) { body }``: yields ``i``; the
    builder is left after the loop when the block ends. ``interleave`` and
    ``vectorize``: see ``loop_hints``."""
    start = start if isinstance(start, ir.Value) else i64(start)
    end = end if isinstance(end, ir.Value) else i64(end)
    pre = b.block
    header = b.append_basic_block(f"{name}.header")
    body = b.append_basic_block(f"{name}.body")
    exit_ = b.append_basic_block(f"{name}.exit")
    b.branch(header)
    b.position_at_end(header)
    iv = b.phi(I64, name=name)
    iv.add_incoming(start, pre)
    b.cbranch(b.icmp_signed("<", iv, end), body, exit_)
    b.position_at_end(body)
    yield iv
    nxt = b.add(iv, i64(step), name=f"{name}.next", flags=("nsw", "nuw"))
    iv.add_incoming(nxt, b.block)
    latch = b.branch(header)
    if interleave or vectorize:
        latch.set_metadata("llvm.loop", loop_hints(b.module, interleave, vectorize))
    b.position_at_end(exit_)


def major_to_minor(shape):
    """Dimension numbers from the most major to the most minor in the layout."""
    return list(reversed(shape.physical_minor_to_major()))


def is_row_major(shape):
    """Whether the shape's layout (or its absence) is row-major."""
    return shape.is_row_major()


def is_column_major_matrices(shape):
    """Whether the last two dimensions of ``shape`` are column-major
    matrices with the batch dimensions outermost in order (the layout
    jaxlib's LAPACK custom calls declare)."""
    r = shape.rank
    return r >= 2 and major_to_minor(shape) == list(range(r - 2)) + [r - 1, r - 2]


def reshape_groups(sizes, other_sizes):
    """The groups of positions of two size sequences of the same element
    count that a reshape between them maps onto each other, in order:
    ``[(positions in sizes, positions in other_sizes)]``, each pair of
    equal element count (a merge, a split, or one to one; size-1 entries
    join the group they sit in); None when the counts differ."""
    groups, i, j = [], 0, 0
    while i < len(sizes) or j < len(other_sizes):
        group, other, count, other_count = [], [], 1, 1
        while not (count == other_count and group and other):
            if count <= other_count and i < len(sizes):
                group.append(i)
                count *= sizes[i]
                i += 1
            elif j < len(other_sizes):
                other.append(j)
                other_count *= other_sizes[j]
                j += 1
            elif i < len(sizes):
                group.append(i)
                count *= sizes[i]
                i += 1
            else:
                break
        if count != other_count:
            return None
        groups.append((group, other))
    return groups


def physical_strides(shape):
    """Element stride of each logical dimension in the layout's storage order."""
    strides = [0] * shape.rank
    s = 1
    for d in reversed(major_to_minor(shape)):
        strides[d] = s
        s *= shape.dimensions[d]
    return strides


def linear_index(b, shape, index, strides=None):
    """The element offset of ``index`` (i64 values, logical dims) in a buffer
    stored with ``shape``'s layout; ``strides`` (default
    ``physical_strides(shape)``) may hold i64 values (a shape-generic
    kernel's, ``kernels.Kernel.strides``)."""
    acc = None
    for d, s in enumerate(physical_strides(shape) if strides is None else strides):
        if shape.dimensions[d] == 1:
            continue
        if isinstance(s, int):
            term = index[d] if s == 1 else b.mul(index[d], i64(s), flags=("nsw", "nuw"))
        else:
            term = b.mul(index[d], s, flags=("nsw", "nuw"))
        acc = term if acc is None else b.add(acc, term, flags=("nsw", "nuw"))
    return acc if acc is not None else i64(0)


def row_major_linear(b, dims, index):
    acc = None
    stride = 1
    for d in reversed(range(len(dims))):
        if dims[d] != 1:
            term = index[d] if stride == 1 else b.mul(index[d], i64(stride), flags=("nsw", "nuw"))
            acc = term if acc is None else b.add(acc, term, flags=("nsw", "nuw"))
        stride *= dims[d]
    return acc if acc is not None else i64(0)


def delinearize(b, linear, dims, order=None):
    """Logical index into ``dims`` of a linear offset, dimensions laid out
    from major to minor in ``order`` (default row-major)."""
    order = list(range(len(dims))) if order is None else order
    index = [i64(0)] * len(dims)
    stride = 1
    for d in reversed(order):
        n = dims[d]
        if n != 1:
            q = linear if stride == 1 else b.udiv(linear, i64(stride))
            index[d] = q if d == order[0] else b.urem(q, i64(n))
        stride *= n
    return index


def clamp(b, v, lo, hi):
    """min(max(v, lo), hi) for signed i64 values (hi >= lo assumed)."""
    lo = lo if isinstance(lo, ir.Value) else i64(lo)
    hi = hi if isinstance(hi, ir.Value) else i64(hi)
    v = b.select(b.icmp_signed("<", v, lo), lo, v)
    return b.select(b.icmp_signed(">", v, hi), hi, v)


# A parallel loop nest over a shape whose most major dimension is shorter
# than this splits the linear index of its leading dimensions instead
# (``split_dimensions``): attention's [batch, heads, queries, keys] scores
# have 2 batches but 8192 rows, and a row group (row_groups.py) over 2 rows
# is a group over whole 8 MB batches, which keeps nothing in cache.
MIN_SPLIT_ROWS = 256


def split_dimensions(shape, limit):
    """How many of ``shape``'s most major dimensions (layout order), at most
    ``limit``, ``loop_nest(split=...)`` walks as one loop over their linear
    index: the fewest whose element count reaches ``MIN_SPLIT_ROWS`` (1 for a
    longer major dimension, 0 for a scalar)."""
    order = major_to_minor(shape)
    if not order:
        return 0
    count, rows = 1, shape.dimensions[order[0]]
    while count < min(limit, len(order)) and rows < MIN_SPLIT_ROWS:
        rows *= shape.dimensions[order[count]]
        count += 1
    return count


def loop_nest(b, shape, body, begin=None, end=None, name="d", interleave=None, dims=None,
              split=1, innermost=None):
    """Emits loops over every index of ``shape`` (layout order, the most
    major loop optionally restricted to ``[begin, end)``) and calls
    ``body(index)`` in the innermost one (with the ``interleave`` hint).
    ``dims``: the loops' trip counts (default ``shape.dimensions``; i64
    values in a shape-generic kernel). ``split`` > 1 (int ``dims`` only):
    the outermost loop runs over the linear (row-major in the layout) index
    of the ``split`` most major dimensions, ``[begin, end)`` of
    ``outer_extent(shape, split)``, and divides it back into their indices.
    ``innermost(lo, hi, index, d, name, interleave)``, where given, emits
    the loop over the layout-minor dimension ``d`` itself (setting
    ``index[d]`` and calling the body its own way:
    ``streaming_stores.BlockedStores``)."""
    dims = shape.dimensions if dims is None else dims
    order = [d for d in major_to_minor(shape)]
    index = [i64(0)] * shape.rank
    split = max(1, min(split, len(order)))

    def emit(level):
        if level == len(order):
            body(list(index))
            return
        d = order[level]
        lo, hi = (begin, end) if level == 0 and begin is not None else (0, dims[d])
        if level != 0 and shape.dimensions[d] == 1:
            index[d] = i64(0)
            emit(level + 1)
            return
        inner = all(shape.dimensions[e] == 1 for e in order[level + 1:])
        if innermost is not None and level == len(order) - 1:
            innermost(lo, hi, index, d, f"{name}{d}", interleave)
            return
        with for_loop(b, lo, hi, name=f"{name}{d}", interleave=interleave if inner else None) as iv:
            index[d] = iv
            emit(level + 1)

    if split == 1:
        emit(0)
        return
    lead = order[:split]
    lo, hi = (begin, end) if begin is not None else (0, outer_extent(shape, split))
    inner = all(shape.dimensions[e] == 1 for e in order[split:])
    with for_loop(b, lo, hi, name=f"{name}.rows", interleave=interleave if inner else None) as row:
        rest = row
        sized = [d for d in lead if dims[d] != 1]
        for d in lead:
            index[d] = i64(0)
        for k, d in enumerate(reversed(sized)):
            if k == len(sized) - 1:   # the most major: what is left (< its size)
                index[d] = rest
            else:
                index[d] = b.urem(rest, i64(dims[d]))
                rest = b.udiv(rest, i64(dims[d]))
        emit(split)


def outer_extent(shape, split=1):
    """Trip count of the outermost loop of ``loop_nest(shape, split=split)``
    (1 for scalars)."""
    order = major_to_minor(shape)
    n = 1
    for d in order[:max(1, split)]:
        n *= shape.dimensions[d]
    return n


def tiled_loop_nest(b, shape, body, tile_dim, begin=None, end=None, tile=32, name="t", dims=None):
    """Like ``loop_nest``, but the layout-minor dimension of ``shape`` and
    ``tile_dim`` (another dimension) are walked in ``tile`` x ``tile``
    tiles: a transpose then reads whole cache lines of its operand along
    ``tile_dim`` while it writes whole lines of the output along the minor
    dimension, and the tile's lines stay in L1 between the two (without
    tiling, each output row touches a line and a page of the operand per
    element). Every index is still visited exactly once. ``dims`` as in
    ``loop_nest``."""
    dims = shape.dimensions if dims is None else dims
    order = major_to_minor(shape)
    minor = order[-1]
    index = [i64(0)] * shape.rank
    tiles = {}

    def tile_loop(lo, hi, label, inner):
        lo = lo if isinstance(lo, ir.Value) else i64(lo)
        hi = hi if isinstance(hi, ir.Value) else i64(hi)
        count = b.udiv(b.add(b.sub(hi, lo), i64(tile - 1)), i64(tile))
        with for_loop(b, 0, count, name=label) as k:
            t0 = b.add(lo, b.mul(k, i64(tile), flags=("nsw", "nuw")), flags=("nsw", "nuw"))
            t1 = b.add(t0, i64(tile), flags=("nsw", "nuw"))
            inner(t0, b.select(b.icmp_signed("<", t1, hi), t1, hi))

    def outer(level):
        if level == len(order) - 1:
            def minor_tiles(a0, a1):
                b0, b1 = tiles[tile_dim]
                with for_loop(b, b0, b1, name=f"{name}{tile_dim}") as bi:
                    index[tile_dim] = bi
                    with for_loop(b, a0, a1, name=f"{name}{minor}") as ai:
                        index[minor] = ai
                        body(list(index))
            tile_loop(0, dims[minor], f"{name}{minor}.tile", minor_tiles)
            return
        d = order[level]
        lo, hi = (begin, end) if level == 0 and begin is not None else (0, dims[d])
        if d == tile_dim:
            def keep(t0, t1):
                tiles[d] = (t0, t1)
                outer(level + 1)
            tile_loop(lo, hi, f"{name}{d}.tile", keep)
            return
        with for_loop(b, lo, hi, name=f"{name}{d}") as iv:
            index[d] = iv
            outer(level + 1)

    outer(0)
