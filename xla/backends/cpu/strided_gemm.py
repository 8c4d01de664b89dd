"""Batched dots the tiled GEMM kernel (``emit_small_gemm``) computes on
operands and results in any layout, reading and writing them in place.

Attention as JAX lowers it multiplies heads sliced out of projections:
``q[b, s, h, d]`` by ``k[b, s, h, d]`` over ``d`` for every ``(b, h)``,
then the probabilities by ``v[b, s, h, d]``, the result going back to
``[b, s, h, d]``. ``dot_decomposer`` makes such dots canonical (lhs
``[batch..., M, K]``, rhs ``[batch..., K, N]``) with transposes, and the
runtime's matmul reads dense row-major matrices only (or with their two
matrix dimensions swapped), so each transpose was a copy kernel (and the
result's way back another). The tiled kernel reads ``lhs[i, p]`` as
scalars and ``rhs[p, j:j+NR]`` as vectors, and stores ``out[i, j:j+NR]``
as vectors: it needs stride 1 along N in the rhs and the result only, any
strides elsewhere. Or, computing ``out^T = rhs^T lhs^T`` (``swapped``),
stride 1 along M in the lhs and the result. ``dot-operand-layouts`` gives
the operands (transposes of other arrays) and the result (a transpose
feeding reshapes) the layouts that make them bitcasts where the plan below
still applies.

``plan(dot)`` returns the kernel's view of a dot: the batch sizes, M, K and
N as the kernel walks them (swapped: N, K, M), and for each of the scalar
operand, the vector operand and the result, its element stride along each
batch dimension, its rows and its columns (the vector operand's and the
result's columns have stride 1, but for a blocked walk's vector operand,
which may instead be stored transposed). None where it does not apply: unbatched
dots (``emit_small_gemm``'s own rules), element types other than f32/f64,
a matrix dimension missing, fewer than ``MR`` rows or ``MIN_COLUMNS``
columns in the kernel's orientation, and layouts with stride 1 along
neither N (in rhs and result) nor M (in lhs and result).

Products of more than ``MAX_TILED_MACS`` multiply-adds or whose vector
operand takes more than ``MAX_SPLIT_RHS_BYTES`` are where a blocked, packed
GEMM wins over the kernel. Where the runtime computes them
(``runtime_context.symbols()``: the JIT, whose ``__xla_cpu_tiled_gemm_*`` runs
such a walk, marked ``blocked``, as its blocked GEMM per product on the
operands in place), the plan takes them too if the scalar operand has
stride 1 along its rows or its columns; elsewhere (objects compiled ahead
of time: the LLVM kernel) they are left to the runtime's matmul, with
transposes copied. Attention at 512 tokens (2 x 8 heads of 64, 2-core
Zen 5, alternated with the build before): the head transposes of q, v and
the result had been 0.3 ms of the 9.2 ms module, and its probabilities x
values ran as 64 x 512 x 512 products reading the probabilities
transposed; read in place, 512 x 512 x 64 with the probabilities
row-major, the module took 8.7 ms. A blocked walk also reads its vector
operand stored transposed (k's head as k^T: its tokens are not minor in
k's bytes), so k's copy goes too: attention S = 512 8.83-8.85 -> 8.65-8.82
ms, the transformer block's training step 53.3-53.6 -> 52.0-52.6 ms.
"""
from xla.backends.cpu import runtime_context
from xla.backends.cpu.dot_operand_layouts import matmul_function, matmul_transposed, runtime_dot
from xla.backends.cpu.loop_emitter import physical_strides

# A block of MR rows of the result (see emit_small_gemm).
MR = 4
# Narrower products (matrix-vector-like) are left to the runtime, whose
# GEMV and row dot products suit them; from 4 columns a masked vector does.
MIN_COLUMNS = 4
# Up to this many multiply-adds (one product of a batch) the kernel computes
# products of at least MAX_MACS with a larger rhs than
# MAX_SPLIT_RHS_BYTES too, where the pool has one thread (100x100x100 f64,
# one thread, this host: ~37 us where Eigen's packed GEMM took ~42).
MAX_TILED_MACS = 128 * 128 * 128
# A product of MAX_MACS or more whose rhs takes at most this many bytes runs
# the kernel at any size, split over the pool (emit_small_gemm). One
# thread, this host (Zen 4, loaded; medians of 5 rounds, f64 M x K x N):
# kernel / Eigen 512x256x128 (rhs 256 KB) 0.86, 2048x64x64 0.83, 1024x256x128
# 0.96; with larger rhs 256x256x256 0.95, 128x512x128 1.03, 200x300x400
# 1.09, 512x512x512 1.24 (Eigen's packed panels win once the rhs leaves L2).
MAX_SPLIT_RHS_BYTES = 256 << 10
TYPES = ("f32", "f64")
# The runtime's walk takes at most this many batch dimensions.
MAX_RUNTIME_BATCH_RANK = 8
MAX_MACS = 64 * 64 * 64   # the runtime's kMinParallelMacs: larger products may use threads
PARALLEL_FOR = "__xla_cpu_parallel_for"
NUM_THREADS = "__xla_cpu_runtime_num_threads"
_ELEMENT_BYTES = {"f32": 4, "f64": 8}


def small_gemm_shape(h, runtime_symbols=()):
    """(M, K, N) when ``h`` is a dot emit_small_gemm's tiled kernel
    computes, else None (the rules: emit_small_gemm's docstring). Products
    of MAX_MACS or more need the runtime (``runtime_symbols``): its thread
    count and its matmul. Shape-level, so that passes (dot-addend-fusion)
    can tell which dots the runtime's matmul computes."""
    if not runtime_dot(h) or h.attr("lhs_batch_dims", ()):
        return None
    lhs, rhs = h.operands
    et = h.shape.element_type.text
    if et not in TYPES or lhs.shape.rank != 2 or rhs.shape.rank != 2:
        return None
    if lhs.shape.element_type.text != et or rhs.shape.element_type.text != et:
        return None     # a bf16 x bf16 -> f32 dot: the runtime's low-precision matmul
    if any(matmul_transposed(s, 0) != 0 for s in (lhs.shape, rhs.shape, h.shape)):
        return None
    m, k = lhs.shape.dimensions
    n = rhs.shape.dimensions[1]
    if m < MR or n < MIN_COLUMNS or k < 1:
        return None
    if m * k * n < MAX_MACS or split_over_pool(m, k, n, et, runtime_symbols):
        return m, k, n
    if m * k * n > MAX_TILED_MACS or \
            not ({NUM_THREADS, matmul_function(h)} <= set(runtime_symbols)):
        return None
    return m, k, n


def split_over_pool(m, k, n, et, runtime_symbols):
    """Whether a product of MAX_MACS or more runs the tiled kernel split
    over the pool (emit_small_gemm's docstring)."""
    return m * k * n >= MAX_MACS and k * n * _ELEMENT_BYTES[et] <= MAX_SPLIT_RHS_BYTES \
        and PARALLEL_FOR in runtime_symbols


def runs_blocked_products(symbols):
    """Whether a runtime with ``symbols`` (names) computes blocked walks."""
    return all(f"__xla_cpu_tiled_gemm_{t}" in symbols for t in TYPES)


def _blocked_allowed():
    """Whether plans may be ``blocked`` (module docstring): where the
    runtime the code may call (``runtime_context``) computes such walks."""
    return runs_blocked_products(runtime_context.symbols())


class StridedGemm:
    """The kernel's walk over one batched dot (module docstring)."""

    def __init__(self, swapped, batch, m, k, n, scalar, vector, out, blocked=False):
        self.swapped = swapped      # out^T = rhs^T lhs^T: the lhs is the vector operand
        self.blocked = blocked      # the runtime's blocked GEMM per product, not the tiles
        self.batch = batch          # sizes of the batch dimensions, major first
        self.m, self.k, self.n = m, k, n
        # (batch strides, row stride, column stride) in elements; the
        # result's column stride is 1, and the vector operand's but in a
        # blocked walk, whose vector operand may be stored transposed (row
        # stride 1).
        self.scalar, self.vector, self.out = scalar, vector, out

    @property
    def products(self):
        count = 1
        for size in self.batch:
            count *= size
        return count


def plan(dot, lhs=None, rhs=None, out=None):
    """``dot``'s StridedGemm, or None (module docstring); ``lhs``, ``rhs``,
    ``out``: shapes (with layouts) to plan for instead of the dot's own."""
    lhs = lhs or dot.operands[0].shape
    rhs = rhs or dot.operands[1].shape
    out = out or dot.shape
    nb = len(dot.attr("lhs_batch_dims", ()) or ())
    if nb == 0 or not runtime_dot(dot) or lhs.rank != nb + 2 or rhs.rank != nb + 2:
        return None
    et = out.element_type.text
    if et not in TYPES or lhs.element_type.text != et or rhs.element_type.text != et:
        return None
    m, k = lhs.dimensions[nb:]
    n = rhs.dimensions[nb + 1]
    ls, rs, os = (physical_strides(s) for s in (lhs, rhs, out))
    if rs[nb + 1] == 1 and os[nb + 1] == 1:
        swapped, rows, cols = False, m, n
        scalar = (ls[:nb], ls[nb], ls[nb + 1])
        vector = (rs[:nb], rs[nb], 1)
        result = (os[:nb], os[nb], 1)
    elif ls[nb] == 1 and os[nb] == 1:
        swapped, rows, cols = True, n, m
        scalar = (rs[:nb], rs[nb + 1], rs[nb])
        vector = (ls[:nb], ls[nb + 1], 1)
        result = (os[:nb], os[nb + 1], 1)
    elif rs[nb] == 1 and os[nb + 1] == 1:
        # The vector operand stored transposed (attention's k^T read from
        # k): only a blocked walk reads it, packing it as it reads.
        swapped, rows, cols = False, m, n
        scalar = (ls[:nb], ls[nb], ls[nb + 1])
        vector = (rs[:nb], 1, rs[nb + 1])
        result = (os[:nb], os[nb], 1)
    else:
        return None
    itemsize = 4 if et == "f32" else 8
    if rows < MR or cols < MIN_COLUMNS or k < 1:
        return None
    blocked = m * k * n > MAX_TILED_MACS or k * cols * itemsize > MAX_SPLIT_RHS_BYTES
    if vector[2] != 1 and not blocked:
        return None
    if blocked and not (1 in scalar[1:] and _blocked_allowed()
                        and nb <= MAX_RUNTIME_BATCH_RANK):
        return None
    return StridedGemm(swapped, list(out.dimensions[:nb]), rows, k, cols, scalar, vector, result,
                       blocked)


def kernel_only(dot):
    """Whether ``dot`` reads an operand or writes its result in a layout
    that the runtime's matmul cannot take and the kernel can (what
    strided-dot-layouts chose): ``dot-operand-layouts`` leaves it alone."""
    if plan(dot) is None:
        return False
    nb = len(dot.attr("lhs_batch_dims", ()) or ())
    return matmul_transposed(dot.shape, nb) != 0 or any(
        matmul_transposed(o.shape, nb) is None for o in dot.operands)
