"""ConvolutionIm2Col (``convolution-im2col``): a convolution becomes a matrix
product over the input's windows, so that a backend with a fast GEMM
(cuBLAS on the GPU) runs it there. This project's own pass; XLA's GPU
backend calls cuDNN instead.

For a convolution with input ``x`` (batch N, spatial S1..Sd, features C),
kernel ``w`` (spatial K1..Kd, input features C / G, output features F) and
G feature groups, the rewrite is, in HLO:

1. ``x`` and ``w`` transposed to [N, S1..Sd, C] and [K1..Kd, C/G, F] (no
   transpose where they already are), ``w`` reversed along the dimensions
   of ``rhs_reversal``;
2. ``x`` padded as the window says (``pad`` low and high, ``lhs_dilate``
   as interior padding);
3. for each window offset (k1..kd), row-major: a strided ``slice`` of the
   padded input, [N, O1..Od, C], starting at ``ki * rhs_dilate`` with the
   window's stride: the input element each output position meets at that
   offset;
4. the slices ``concatenate``d along the features, [N, O1..Od, K*C]
   (K = K1 * ... * Kd), reshaped to [M, K*C] (M = N * O1 * ... * Od): the
   "im2col" matrix, whose column (k, c) lines up with row (k, c) of the
   kernel reshaped to [K*C, F];
5. one ``dot`` [M, K*C] x [K*C, F] (G > 1: a dot batched over the groups,
   the group's columns and rows moved to a leading dimension), reshaped
   to [N, O1..Od, F] and transposed to the convolution's output order.

Exactly the convolution's sums, in another order (a GEMM's). It applies to
f32 and f64 convolutions without batch groups whose im2col matrix holds at
most ``max_bytes`` (default 1 GiB; the input is read K times into it), with
at least two input features per group (depthwise convolutions stay as
they are: K-long dots are no work for a GEMM), or, with ``native`` (pairs
of an operand type and a result type, e.g. ``(("s8", "s32"),)``: the
products a backend multiplies in their own type), to convolutions of two
such operands and that result (the slices and the im2col matrix in the
operand type, one byte per element for s8), and where given, that
``accepts(conv)`` says so (the CPU: only convolutions its runtime's conv2d
does not take, ``layout_constraints.im2col_conv``: 3-D ones).
Everything else is left alone. The slices and the concatenate fuse into one kernel; the dot goes
to the backend's GEMM.
"""
import itertools
import math

from xla.hlo.attributes import PaddingDim, SliceDim
from xla.hlo.shape import Shape
from xla.service.pass_utils import OpExpanderPass

DEFAULT_MAX_BYTES = 1 << 30


def _transpose(b, x, perm):
    if list(perm) == list(range(len(perm))):
        return x
    dims = [x.shape.dimensions[p] for p in perm]
    return b.add("transpose", Shape.array(x.shape.element_type, dims), [x], dimensions=tuple(perm))


def _reshape(b, x, dims):
    if list(dims) == list(x.shape.dimensions):
        return x
    return b.add("reshape", Shape.array(x.shape.element_type, list(dims)), [x])


def native_product(conv, native):
    """Whether convolution ``conv`` has two operands of one type that
    ``native`` (pairs of an operand type and a result type) pairs with its
    result type: the rewrite keeps their type (s8 x s8 -> s32)."""
    lhs, rhs = (o.shape.element_type for o in conv.operands)
    return lhs is rhs and dict(native).get(lhs.text) == conv.shape.element_type.text


def applies(conv, max_bytes=DEFAULT_MAX_BYTES, element_type=None):
    """Whether the rewrite takes convolution ``conv`` but for its element
    types (f32 or f64 throughout, or a ``native_product``): no batch
    groups, at least two input features per feature group, positive
    strides and dilations, no empty array, an im2col matrix of at most
    ``max_bytes`` in ``element_type`` (default: the result's)."""
    if conv.opcode != "convolution" or len(conv.operands) != 2 or not conv.shape.is_array:
        return False
    dn, window = conv.attr("dim_labels"), conv.attr("window")
    x, w = conv.operands
    if dn is None or not x.shape.is_array or not w.shape.is_array:
        return False
    if int(conv.attr("batch_group_count", 1) or 1) != 1:
        return False
    groups = int(conv.attr("feature_group_count", 1) or 1)
    per_group = w.shape.dimensions[dn.kernel_input_feature_dimension]
    if groups > 1 and per_group < 2:
        return False
    dims = window.dimensions if window is not None else ()
    if len(dims) != len(dn.input_spatial_dimensions):
        return False
    if any(d.stride < 1 or d.base_dilation < 1 or d.window_dilation < 1 for d in dims):
        return False
    if 0 in conv.shape.dimensions or 0 in x.shape.dimensions or 0 in w.shape.dimensions:
        return False
    out = conv.shape.dimensions
    rows = out[dn.output_batch_dimension] * math.prod(out[o] for o in dn.output_spatial_dimensions)
    columns = math.prod(d.size for d in dims) * x.shape.dimensions[dn.input_feature_dimension]
    size = (element_type or conv.shape.element_type).byte_size
    return rows * columns * size <= max_bytes


class ConvolutionIm2Col(OpExpanderPass):
    name = "convolution-im2col"

    def __init__(self, max_bytes=DEFAULT_MAX_BYTES, accepts=None, native=()):
        super().__init__()
        self.max_bytes = max_bytes
        self.accepts = accepts
        self.native = dict(native)

    def matches(self, conv):
        et = conv.shape.element_type if conv.shape.is_array else None
        if et is None or len(conv.operands) != 2 or not all(o.shape.is_array for o in conv.operands):
            return False
        lhs, rhs = (o.shape.element_type for o in conv.operands)
        if not (et.text in ("f32", "f64") and lhs is et and rhs is et) and not native_product(
                conv, self.native):
            return False
        return (applies(conv, self.max_bytes, element_type=lhs)
                and (self.accepts is None or self.accepts(conv)))

    def expand(self, b, conv):
        x, w = conv.operands
        dn, window = conv.attr("dim_labels"), conv.attr("window")
        dims = window.dimensions if window is not None else ()
        et = conv.shape.element_type
        xet = x.shape.element_type   # the im2col matrix's (s8 for a native s8 product)
        groups = int(conv.attr("feature_group_count", 1) or 1)
        nsp = len(dims)
        # 1. [N, S1..Sd, C] and [K1..Kd, C/G, F], the kernel read backwards where reversed.
        xt = _transpose(b, x, [dn.input_batch_dimension, *dn.input_spatial_dimensions,
                               dn.input_feature_dimension])
        wt = _transpose(b, w, [*dn.kernel_spatial_dimensions, dn.kernel_input_feature_dimension,
                               dn.kernel_output_feature_dimension])
        flipped = tuple(i for i, d in enumerate(dims) if d.window_reversal)
        if flipped:
            wt = b.add("reverse", wt.shape, [wt], dimensions=flipped)
        n, *spatial, c = xt.shape.dimensions
        *ksizes, cg, f = wt.shape.dimensions
        out = [conv.shape.dimensions[o] for o in dn.output_spatial_dimensions]
        # 2. the window's padding and base dilation.
        config = [PaddingDim(0, 0, 0)] + [PaddingDim(d.padding_low, d.padding_high,
                                                     d.base_dilation - 1) for d in dims] + \
            [PaddingDim(0, 0, 0)]
        if any(p != (0, 0, 0) for p in config):
            padded_dims = [n] + [(s - 1) * d.base_dilation + 1 + d.padding_low + d.padding_high
                                 for s, d in zip(spatial, dims)] + [c]
            zero = b.constant(0, xet)
            xt = b.add("pad", Shape.array(xet, padded_dims), [xt, zero], padding=tuple(config))
        # 3-4. one strided slice per window offset, concatenated along the features.
        slices = []
        for offsets in itertools.product(*[range(k) for k in ksizes]):
            box = [SliceDim(0, n, 1)]
            for k, o, d in zip(offsets, out, dims):
                start = k * d.window_dilation
                box.append(SliceDim(start, start + (o - 1) * d.stride + 1, d.stride))
            box.append(SliceDim(0, c, 1))
            trivial = all(s.start == 0 and s.stride == 1 and s.limit == size
                          for s, size in zip(box, xt.shape.dimensions))
            slices.append(xt if trivial else
                          b.add("slice", Shape.array(xet, [n, *out, c]), [xt], slice=tuple(box)))
        taps = len(slices)
        cols = slices[0] if taps == 1 else b.add(
            "concatenate", Shape.array(xet, [n, *out, taps * c]), slices, dimensions=(nsp + 1,))
        m = n * math.prod(out)
        # 5. the product, per group.
        if groups == 1:
            lhs = _reshape(b, cols, [m, taps * c])
            rhs = _reshape(b, wt, [taps * cg, f])
            product = b.add("dot", Shape.array(et, [m, f]), [lhs, rhs], lhs_contracting_dims=(1,),
                            rhs_contracting_dims=(0,), **self._precision(conv))
        else:
            fg = f // groups
            lhs = _reshape(b, cols, [m, taps, groups, cg])
            lhs = _reshape(b, _transpose(b, lhs, [2, 0, 1, 3]), [groups, m, taps * cg])
            rhs = _reshape(b, wt, [taps, cg, groups, fg])
            rhs = _reshape(b, _transpose(b, rhs, [2, 0, 1, 3]), [groups, taps * cg, fg])
            product = b.add("dot", Shape.array(et, [groups, m, fg]), [lhs, rhs],
                            lhs_batch_dims=(0,), rhs_batch_dims=(0,), lhs_contracting_dims=(2,),
                            rhs_contracting_dims=(1,), **self._precision(conv))
            product = _reshape(b, _transpose(b, product, [1, 0, 2]), [m, f])
        result = _reshape(b, product, [n, *out, f])
        order = [0] * conv.shape.rank     # output dimension -> dimension of `result`
        order[dn.output_batch_dimension] = 0
        for i, o in enumerate(dn.output_spatial_dimensions):
            order[o] = 1 + i
        order[dn.output_feature_dimension] = nsp + 1
        return _transpose(b, result, order)

    @staticmethod
    def _precision(conv):
        precision = conv.attr("precision_config")
        return {"precision_config": precision} if precision is not None else {}
