"""The CPU backend's HLO pipeline: ``sub-byte-size-removal`` (s4 and the
other sub-byte types one element per byte, not packed as XLA:CPU's
``E(4)`` layouts say), ``async-to-sync`` (asynchronous start/done pairs
from XLA:GPU/TPU dumps as their synchronous ops), ``custom-fusion-inliner`` (kCustom
fusions, e.g. XLA:CPU's YNNPACK dot fusions, become plain HLO to re-fuse),
``ragged-dot-expander`` (ragged-dot as dots and selects, where it can),
``scaled-dot-expander`` (scaled-dot as multiplies and a dot),
``scan-expander`` (scan as a while loop),
``linalg-composite-rewriter`` just before the call inlining (the composite
calls ``xla.eigh`` and ``xla.svd`` as the LAPACK custom calls the runtime
computes: ``linalg_composite_rewriter.py``),
``dynamic-padder`` after the first call inlining (dynamic dimensions
padded to their bounds, sizes tracked as s32 scalars: ``xla/service/dynamic_padder.py``;
the compiler binds a dynamic entry's parameters and result to sizes first,
``xla/service/dynamic_entry.py``),
the target-independent pipeline (``xla/service/pipelines.py``) with
``dot-scale-motion`` before its ``dot_decomposer`` (``(alpha * A) @ x`` as
``alpha * (A @ x)``: no scaled copy of the matrix; ``xla/service/dot_scale_motion.py``),
``dot-merger`` after the simplification that follows ``dot_decomposer``
(dots sharing an operand as one dot, where the operands it concatenates
are constants: ``constant_weights`` below; ``xla/service/dot_merger.py``),
``convolution-reversal-expander`` (a reversed window as a reverse of the
kernel, which the runtime's conv2d then takes),
``convolution-batch-group-splitter`` (batch groups as one convolution per
group, but a depthwise gradient's, which the runtime takes) and
``dot-type-widening``
just before its layout assignment (bf16/f16/f8 dots
in f32, narrow integer dots in s32: the types Eigen's GEMM runs; s8 x s8
and bf16 x bf16 dots keep their operands for the runtime's low-precision
matmuls, ``__xla_cpu_matmul_s8_s32``/``_bf16_f32``),
``convolution-type-widening`` (bf16/f16/f8 and narrow integer
convolutions in f32 or f64, the same rules, where the runtime's conv2d then
takes them: ``layout_constraints.widened_conv2d``),
``convolution-im2col`` for the convolutions the runtime's conv2d does not
take (3-D ones: a GEMM over their windows instead of a loop per output
element; ``layout_constraints.im2col_conv``) and for s8 x s8 -> s32 ones,
whose product the runtime's s8 matmul computes (``native_im2col``), and a
layout assignment that gives ``fft`` and the collectives row-major operands
and results and convolutions the orders the runtime's conv2d reads (NHWC/HWIO, or
for a kernel gradient the order JAX gives it; copies around them where the module says otherwise: ``layout_constraints.py``),
``strided-dot-layouts`` (the transposes around a batched dot that the tiled
GEMM kernel reads with strides become bitcasts: ``strided_dot_layouts.py``),
``dot-operand-layouts`` (a transpose feeding a matmul becomes a bitcast the
matmul reads transposed: ``dot_operand_layouts.py``), ``dot-operand-copies``
(copies into row-major order for a matmul's operands in layouts nothing
reads, same file), ``dot-result-layouts`` (a matmul writes its result
transposed where a transpose and a layout-changing copy follow it: a
training step's weight update; same file), fusion with
the CPU's policy (``fusion_policy.py``) and ``dynamic-update-slice-fusion``
(a DUS joins the fusion computing its update: one in-place kernel),
``matrix-vector-pair-fusion`` (``A x`` and ``y A`` of one matrix in one
pass over it: ``matrix_vector_pairs.py``), ``dot-addend-fusion`` (a
large f32 matmul and the update ``addend + alpha * product`` that alone
reads it as one kOutput fusion, the runtime's GEMM adding the addend as it
stores the product: a training step's ``w - lr * dW``;
``dot_addend_fusion.py``), ``reshape-to-bitcast`` (a
reshape left between kernels and library calls that moves no byte reads
its operand's buffer instead of copying it), then
copy insertion and the memory scheduler, after which buffer assignment
runs."""
from xla.backends.cpu import layout_constraints, strided_gemm
from xla.backends.cpu.dot_addend_fusion import DotAddendFusion
from xla.backends.cpu.dot_operand_layouts import (MIXED_MATMUL_TYPES, DotOperandCopies,
                                                  DotOperandLayouts, DotResultLayouts)
from xla.backends.cpu.fusion_policy import CPU_FUSION_POLICY
from xla.backends.cpu.linalg_composite_rewriter import LinalgCompositeRewriter
from xla.backends.cpu.matrix_vector_pairs import MatrixVectorPairFusion
from xla.backends.cpu.strided_dot_layouts import StridedDotLayouts
from xla.service.pass_registry import make_pass
from xla.service.pipelines import add_fusion_stage, add_scheduling_stage, target_independent_pipeline


def cpu_pipeline(**options):
    pipeline = target_independent_pipeline(**options)
    pipeline.passes.insert(0, make_pass("sub-byte-size-removal"))
    pipeline.passes.insert(1, make_pass("async-to-sync"))
    pipeline.passes.insert(2, make_pass("custom-fusion-inliner"))
    pipeline.passes.insert(3, make_pass("ragged-dot-expander"))
    pipeline.passes.insert(4, make_pass("scaled-dot-expander"))
    pipeline.passes.insert(5, make_pass("scan-expander"))
    # Composites the runtime implements, before their decompositions are inlined.
    pipeline.passes.insert(_index(pipeline, "call-inliner"), LinalgCompositeRewriter())
    # After call inlining and the dce behind it: one flat entry, no dead ops to refuse.
    inliner = _index(pipeline, "call-inliner")
    assert pipeline.passes[inliner + 1].name == "dce"
    pipeline.passes.insert(inliner + 2, make_pass("dynamic-padder"))
    # Scales move past the dots they feed before dot_decomposer reshapes them.
    pipeline.passes.insert(_index(pipeline, "dot_decomposer"), make_pass("dot-scale-motion"))
    layout = _index(pipeline, "layout-assignment")
    # After dot_decomposer and the simplification that follows it (whose CSE
    # makes the reshapes of a shared x one instruction); constants only
    # (constant_weights).
    pipeline.passes.insert(layout, make_pass("dot-merger", can_merge=constant_weights))
    layout += 1
    # What the runtime's library calls read and write (layout_constraints.py).
    pipeline.passes[layout] = make_pass("layout-assignment",
                                        constraints=layout_constraints.constraints)
    pipeline.passes[layout:layout] = [make_pass("convolution-reversal-expander"),
                                      make_pass("convolution-batch-group-splitter",
                                                keep=layout_constraints.depthwise_filter),
                                      make_pass("dot-type-widening", native=MIXED_MATMUL_TYPES),
                                      make_pass("convolution-type-widening",
                                                accepts=layout_constraints.widened_conv2d),
                                      make_pass("convolution-im2col",
                                                accepts=layout_constraints.im2col_conv,
                                                native=layout_constraints.NATIVE_IM2COL_TYPES)]
    layout = _index(pipeline, "layout-assignment")
    # The dots the tiled kernel reads with strides keep the layouts
    # strided-dot-layouts chose (a transposed bitcast of another operand
    # could take the kernel away, leaving operands the runtime cannot read).
    # Then the dots left with layouts neither reads get copies they read.
    pipeline.passes[layout + 1:layout + 1] = [StridedDotLayouts(),
                                              DotOperandLayouts(skip=strided_gemm.kernel_only),
                                              DotOperandCopies(plan=strided_gemm.plan),
                                              DotResultLayouts(skip=strided_gemm.kernel_only)]
    # Layouts are final: reduces over dimensions next to each other in
    # memory reduce their product (rows of 6272, not 56).
    pipeline.add_pass(make_pass("reduction-dimension-grouper"))
    add_fusion_stage(pipeline, CPU_FUSION_POLICY)
    pipeline.add_pass(make_pass("dynamic-update-slice-fusion"))
    pipeline.add_pass(MatrixVectorPairFusion())
    pipeline.add_pass(DotAddendFusion())
    # Layouts and fusions are final here (x[4,128,256] -> [512,256] into a
    # matmul was a copy of x).
    pipeline.add_pass(make_pass("reshape-to-bitcast"))
    return add_scheduling_stage(pipeline)


def constant_weights(a, b):
    """dot-merger's rule on the CPU: merge dots only where the operands it
    would concatenate are constants (concatenated once, at compile time).

    Merging dots whose other operands are computed or parameters needs a
    concatenate each call, and Eigen's GEMM gains nothing to pay for it:
    measured single-threaded (CPU time, alternating, medians), one
    [512,256] x [256,768] product runs at the rate of three [512,256] x
    [256,256] ones (96 vs 100 GFLOP/s), so merging attention's Q, K, V
    projections cost 3.40 -> 3.63 ms (+7%: the concatenate of the weights)
    where a concatenation made ahead of time gave 3.35 ms (-1.4%); 3 x
    64^3: 25 -> 39 us merged, 25 us pre-concatenated; 3 x 32^3 (the small-GEMM
    kernel): 8 -> 10 us merged, 7 us pre-concatenated. The JAX-lowered
    attention and transformer training steps (weights as parameters) ran
    3-5% slower merged.

    Nor where a result feeds another dot: its slice of the merged result is
    strided, and the runtime's matmul reads contiguous operands, so the
    slice would be a copy kernel (slices read by kernels fuse into them:
    attention's head transposes read them for free)."""
    shared_lhs = a.operands[0] is b.operands[0]
    side = 1 if shared_lhs else 0
    return all(d.operands[side].opcode == "constant" and d.operands[side].literal is not None
               and not _feeds_library_call(d) for d in (a, b))


def _feeds_library_call(instr):
    """Whether ``instr``'s value reaches a library call through reshapes and
    bitcasts only (which move no byte of a contiguous array, but copy a slice)."""
    for user in instr.users:
        if user.opcode in _LIBRARY_CALLS or (
                user.opcode in ("reshape", "bitcast") and _feeds_library_call(user)):
            return True
    return False


# Instructions the CPU runs as runtime library calls on whole buffers.
_LIBRARY_CALLS = frozenset({"dot", "convolution", "fft", "custom-call", "cholesky",
                            "triangular-solve"})


def _index(pipeline, name):
    return next(i for i, p in enumerate(pipeline.passes) if p.name == name)
