"""The layouts the CPU runtime's library calls read and write, for layout
assignment to arrange (copies where the module says otherwise, as XLA:CPU's
layout assignment constrains its Eigen calls):

* ``ROW_MAJOR_OPCODES``: FFT and the collectives take dense row-major
  arrays;
* the LAPACK eigendecomposition (symmetric and general), SVD, LU and QR custom calls (``emit_spectral.py``)
  and its triangular solve and Cholesky (trsm, potrf: ``emit_linalg.py``)
  get the operand layouts their ``operand_layout_constraints`` declare
  (jaxlib's lowering asks for column-major matrices, and the runtime
  reads the operand in the layout of the results; a trsm whose
  right-hand sides were left row-major under a column-major result fell
  back to the substitution loops: jnp.linalg.inv of f64[512, 512] 70 ms);
* ``constraints(instr)``: a convolution the runtime's conv2d can compute
  (``conv2d_candidate``) gets the physical orders of one of its two forms
  (``conv2d_form``), whatever its dim_labels:

  - ``conv2d``: input NHWC, kernel HWIO, result NHWC (an input gradient
    such as ``b01f_01oi->b01f`` included);
  - ``conv2d_filter``, for a window larger than the result (a kernel
    gradient, JAX's ``f01b_i01o->01bf``) without feature groups: input
    [feature, spatial, batch], kernel [input feature, spatial, output
    feature], result [spatial, batch, feature]. These are the orders JAX's
    row-major arrays already have, so the kernel gradients of a training
    step run as a GEMM over its operands without transposed copies.
  - ``conv2d_depthwise_filter``, a depthwise layer's kernel gradient (batch
    groups of one batch entry and one output feature: ``depthwise_filter``),
    in conv2d_filter's orders.

  Both run as im2col + GEMM instead of a loop per output element. Where the
  module's layouts differ, the copies move each array once; the
  convolution reads its operands many times.
"""
import math
import re

from xla.hlo.parser import parse_shape
from xla.hlo.shape import Layout
from xla.service import convolution_im2col

ROW_MAJOR_OPCODES = ("fft", "all-reduce", "all-gather", "reduce-scatter", "all-to-all",
                     "collective-permute", "collective-broadcast")


def conv2d_candidate(h):
    """Whether the runtime's conv2d computes convolution ``h`` once its
    buffers are in the order it reads (``emit_convolution`` checks that
    too): f32/f64 throughout, no batch groups (but a depthwise kernel
    gradient's: ``depthwise_filter``), one or two spatial
    dimensions, no window reversal, positive strides and dilations,
    feature groups that divide the features."""
    lhs, rhs = h.operands
    et = h.shape.element_type
    if et.text not in ("f32", "f64") or lhs.shape.element_type is not et or \
            rhs.shape.element_type is not et:
        return False
    return _conv2d_geometry(h)


def widened_conv2d(h, wide):
    """``convolution-type-widening``'s rule on the CPU: widen convolution
    ``h`` (bf16, f16, f8, narrow integers) to type ``wide`` where the
    runtime's conv2d or ``convolution-im2col`` then computes it (the loop
    the generator emits per output element ran a bf16 [8, 56, 56, 64] 3x3
    convolution to 64 features in ~460 ms, the runtime's f32 one takes
    ~4)."""
    if native_im2col(h):
        return False
    return wide.text in ("f32", "f64") and (
        _conv2d_geometry(h) or convolution_im2col.applies(h, element_type=wide))


# Operand and result types of convolutions that ``convolution-im2col`` turns
# into a product the runtime multiplies in the operands' own type (s8 x s8
# -> s32: __xla_cpu_matmul_s8_s32, VPDPBUSD on the avx512_vnni variants).
NATIVE_IM2COL_TYPES = (("s8", "s32"),)


def native_im2col(h):
    """Whether convolution ``h`` (s8 x s8 -> s32) goes to
    ``convolution-im2col`` in its own types rather than widened to f32:
    its im2col matrix in s8 and one s8 product (JAX's 3x3 conv of [8, 56,
    56, 64] to 64 features, two threads, alternated: 4.5-4.75 ms as an f32
    conv2d, 2.4-3.3 so)."""
    return (convolution_im2col.native_product(h, NATIVE_IM2COL_TYPES)
            and convolution_im2col.applies(h, element_type=h.operands[0].shape.element_type))


def im2col_conv(h):
    """``convolution-im2col``'s rule on the CPU: the (f32/f64) convolutions
    the runtime's conv2d does not take (three or more spatial dimensions,
    batch groups the rewrite refuses anyway) become a GEMM over their
    windows; without it the generator's loop per output element computed
    them (JAX's 3-D conv of [2, 16, 32, 32, 16] 3x3x3 to 32 features: ~104
    ms, XLA:CPU ~16)."""
    return not conv2d_candidate(h)


def _conv2d_geometry(h):
    """``conv2d_candidate`` but for the element types."""
    lhs, rhs = h.operands
    dn = h.attr("dim_labels")
    if dn is None:
        return False
    if int(h.attr("batch_group_count", 1) or 1) != 1 and not depthwise_filter(h):
        return False
    nsp = len(dn.input_spatial_dimensions)
    if nsp not in (1, 2):
        return False
    window = h.attr("window")
    for wd in window.dimensions if window is not None else ():
        if wd.window_reversal or wd.stride < 1 or wd.base_dilation < 1 or wd.window_dilation < 1:
            return False
    G = int(h.attr("feature_group_count", 1) or 1)
    ld, rd = lhs.shape.dimensions, rhs.shape.dimensions
    in_c, out_c = ld[dn.input_feature_dimension], rd[dn.kernel_output_feature_dimension]
    return G >= 1 and in_c % G == 0 and out_c % G == 0 and \
        rd[dn.kernel_input_feature_dimension] * G == in_c


def depthwise_filter(h):
    """Whether convolution ``h`` is a depthwise layer's kernel gradient as
    JAX writes it: batch groups, each of one input batch entry (a feature
    of the layer) and one output feature, no feature groups. The runtime's
    conv2d_depthwise_filter computes it in conv2d_filter's orders."""
    groups = int(h.attr("batch_group_count", 1) or 1)
    dn = h.attr("dim_labels")
    if groups <= 1 or dn is None or int(h.attr("feature_group_count", 1) or 1) != 1:
        return False
    ld, rd = h.operands[0].shape.dimensions, h.operands[1].shape.dimensions
    return (ld[dn.input_batch_dimension] == groups
            and rd[dn.kernel_output_feature_dimension] == groups
            and rd[dn.kernel_input_feature_dimension] == ld[dn.input_feature_dimension])


def conv2d_orders(dn):
    """(input, kernel, output) physical orders, major to minor, that the
    runtime's conv2d reads and writes: NHWC, HWIO, NHWC."""
    return ([dn.input_batch_dimension] + list(dn.input_spatial_dimensions)
            + [dn.input_feature_dimension],
            list(dn.kernel_spatial_dimensions) + [dn.kernel_input_feature_dimension,
                                                  dn.kernel_output_feature_dimension],
            [dn.output_batch_dimension] + list(dn.output_spatial_dimensions)
            + [dn.output_feature_dimension])


def conv2d_filter_orders(dn):
    """(input, kernel, output) physical orders, major to minor, that the
    runtime's conv2d_filter reads and writes: [feature, spatial, batch],
    [input feature, spatial, output feature], [spatial, batch, feature]."""
    return ([dn.input_feature_dimension] + list(dn.input_spatial_dimensions)
            + [dn.input_batch_dimension],
            [dn.kernel_input_feature_dimension] + list(dn.kernel_spatial_dimensions)
            + [dn.kernel_output_feature_dimension],
            list(dn.output_spatial_dimensions) + [dn.output_batch_dimension,
                                                  dn.output_feature_dimension])


def conv2d_form(h):
    """("conv2d", "conv2d_filter" or "conv2d_depthwise_filter", its (input,
    kernel, output) orders) for a ``conv2d_candidate``:
    conv2d_depthwise_filter for a depthwise layer's kernel gradient
    (``depthwise_filter``), conv2d_filter where there are no feature groups
    and the window has more positions than the result (a kernel gradient:
    the contraction runs over whole images), else conv2d."""
    dn = h.attr("dim_labels")
    if depthwise_filter(h):
        return "conv2d_depthwise_filter", conv2d_filter_orders(dn)
    rd, od = h.operands[1].shape.dimensions, h.shape.dimensions
    window = math.prod(rd[d] for d in dn.kernel_spatial_dimensions)
    result = math.prod(od[d] for d in dn.output_spatial_dimensions)
    if int(h.attr("feature_group_count", 1) or 1) == 1 and window > result:
        return "conv2d_filter", conv2d_filter_orders(dn)
    return "conv2d", conv2d_orders(dn)


def _row_major(shape):
    return Layout.row_major(shape.rank) if shape.is_array else None


# Custom-call targets whose operand_layout_constraints are honoured.
_DECLARED_LAYOUT_TARGETS = re.compile(r"lapack_[sdcz](syevd|heevd|gesdd|geev|getrf|geqrf|orgqr|ungqr|potrf|trsm)(_ffi)?$")


def _declared_operand_layouts(instr):
    """The operand layouts ``operand_layout_constraints`` declares, or None."""
    raw = instr.attr("operand_layout_constraints")
    if raw is None:
        return None
    text = str(getattr(raw, "text", raw))
    shapes = [parse_shape(m) for m in re.findall(r"\w+\[[^\]]*\]\{[^}]*\}", text)]
    if len(shapes) != len(instr.operands):
        return None
    return [s.layout if s.is_array and s.rank == o.shape.rank else None
            for s, o in zip(shapes, instr.operands)]


def constraints(instr):
    """(operand layouts, result layout) ``instr`` needs, or None."""
    if instr.opcode in ROW_MAJOR_OPCODES:
        return [_row_major(o.shape) for o in instr.operands], _row_major(instr.shape)
    if instr.opcode == "custom-call" and \
            _DECLARED_LAYOUT_TARGETS.match(str(instr.attr("custom_call_target"))):
        declared = _declared_operand_layouts(instr)
        return None if declared is None else (declared, None)
    if instr.opcode != "convolution" or not instr.shape.is_array or not conv2d_candidate(instr):
        return None
    lhs, rhs, out = (Layout(tuple(reversed(order))) for order in conv2d_form(instr)[1])
    return [lhs, rhs], out
