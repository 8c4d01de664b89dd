"""Dots and convolutions, as ``jax.lax``: ``dot_general`` and
``conv_general_dilated``, and the window padding they and ``reduce_window``
share."""
import numpy as np

from xla.errors import InvalidArgumentError, ShapeError
from xla.frontend import tracing
from xla.frontend.lax.eager import eager
from xla.frontend.tracing import Tracer, as_tracer, convert, current_context
from xla.hlo.attributes import ConvDimensionNumbers, Window, WindowDimension


@eager
def dot_general(lhs, rhs, dimension_numbers, precision=None, preferred_element_type=None):
    """``dimension_numbers = ((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch))``;
    the result's dimensions are batch, lhs free, rhs free (``precision`` is ignored)."""
    (lc, rc), (lb, rb) = dimension_numbers
    lhs, rhs = as_tracer(lhs), as_tracer(rhs)
    dt = tracing.result_type(lhs, rhs)
    lhs, rhs = convert(lhs, dt), convert(rhs, dt)
    b = current_context().builder
    pet = None if preferred_element_type is None else np.dtype(preferred_element_type)
    return Tracer(b.dot_general(lhs.op, rhs.op, tuple(lc), tuple(rc), tuple(lb), tuple(rb), pet))


def padding_pairs(padding, in_dims, window, strides, dilation=None):
    if isinstance(padding, str):
        mode = padding.upper()
        if mode == "VALID":
            return [(0, 0)] * len(in_dims)
        if mode in ("SAME", "SAME_LOWER"):
            out = []
            for d, w, s, dl in zip(in_dims, window, strides, dilation or [1] * len(window)):
                eff = (w - 1) * dl + 1
                o = -(-d // s)
                total = max((o - 1) * s + eff - d, 0)
                lo = total // 2 if mode == "SAME" else total - total // 2
                out.append((lo, total - lo))
            return out
        raise InvalidArgumentError(f"unknown padding {padding!r}: use 'SAME', 'SAME_LOWER', "
                                   "'VALID' or (low, high) pairs")
    pads = [tuple(int(v) for v in p) for p in padding]
    if len(pads) != len(in_dims) or any(len(p) != 2 for p in pads):
        raise InvalidArgumentError(f"padding {padding!r} must be {len(in_dims)} (low, high) pairs")
    return pads


@eager
def conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=None, rhs_dilation=None,
                         dimension_numbers=None, feature_group_count=1, batch_group_count=1,
                         precision=None, preferred_element_type=None):
    """N-d convolution as ``jax.lax.conv_general_dilated``. ``dimension_numbers``
    are spec strings like ``('NHWC', 'HWIO', 'NHWC')`` (spatial dimensions are
    matched by letter, in the kernel spec's order) or JAX's tuples of
    dimension indices ``(lhs_spec, rhs_spec, out_spec)``; the default is
    ``('NCHW', 'OIHW', 'NCHW')`` for the operands' rank. ``window_strides``,
    ``padding`` and the dilations list the spatial dimensions in that order."""
    lhs, rhs = as_tracer(lhs), as_tracer(rhs)
    dt = tracing.result_type(lhs, rhs)
    lhs, rhs = convert(lhs, dt), convert(rhs, dt)
    nsp = lhs.ndim - 2
    if dimension_numbers is None:
        dimension_numbers = tuple(tuple(range(lhs.ndim)) for _ in range(3))
    dnums = _conv_dnums(*dimension_numbers, rank=lhs.ndim)
    if rhs.ndim != lhs.ndim:
        raise ShapeError((
            f"conv_general_dilated: lhs has rank {lhs.ndim} but rhs has rank {rhs.ndim}"))
    strides = list(window_strides)
    lhs_dil = list(lhs_dilation or [1] * nsp)
    rhs_dil = list(rhs_dilation or [1] * nsp)
    for name, v in (("window_strides", strides), ("lhs_dilation", lhs_dil), ("rhs_dilation", rhs_dil)):
        if len(v) != nsp:
            raise ShapeError((
                f"conv_general_dilated: {name} has {len(v)} entries for {nsp} spatial dimensions"))
    in_sp = [lhs.shape[d] for d in dnums.input_spatial_dimensions]
    k_sp = [rhs.shape[d] for d in dnums.kernel_spatial_dimensions]
    if isinstance(padding, str):
        dilated_in = [(d - 1) * l + 1 for d, l in zip(in_sp, lhs_dil)]
        pads = padding_pairs(padding, dilated_in, k_sp, strides, rhs_dil)
    else:
        pads = padding_pairs(padding, in_sp, k_sp, strides)
    window = Window([WindowDimension(size=k, stride=s, padding_low=lo, padding_high=hi,
                                     window_dilation=rd, base_dilation=ld)
                     for k, s, (lo, hi), rd, ld in zip(k_sp, strides, pads, rhs_dil, lhs_dil)])
    b = current_context().builder
    pet = None if preferred_element_type is None else np.dtype(preferred_element_type)
    return Tracer(b.convolution(lhs.op, rhs.op, window, dnums, feature_group_count,
                                batch_group_count, pet))


def _conv_dnums(lhs_spec, rhs_spec, out_spec, rank):
    if all(isinstance(s, str) for s in (lhs_spec, rhs_spec, out_spec)):
        for s in (lhs_spec, rhs_spec, out_spec):
            if len(s) != rank:
                raise InvalidArgumentError(
                    f"conv_general_dilated: dimension spec {s!r} does not have the operands' rank {rank}")
        rhs_sp = [c for c in rhs_spec if c not in "OI"]
        lhs_sp = [c for c in lhs_spec if c not in "NC"]
        out_sp = [c for c in out_spec if c not in "NC"]
        if sorted(lhs_sp) == sorted(rhs_sp) == sorted(out_sp) and len(set(rhs_sp)) == len(rhs_sp):
            order = rhs_sp          # by letter, in the kernel's order (as JAX)
            lhs_sp, out_sp = order, order
        lhs_spec = (lhs_spec.index("N"), lhs_spec.index("C")) + tuple(lhs_spec.index(c) for c in lhs_sp)
        rhs_spec = (rhs_spec.index("O"), rhs_spec.index("I")) + tuple(rhs_spec.index(c) for c in rhs_sp)
        out_spec = (out_spec.index("N"), out_spec.index("C")) + tuple(out_spec.index(c) for c in out_sp)
    # JAX's ConvDimensionNumbers: (batch, feature, spatial...), (out feature,
    # in feature, spatial...), (batch, feature, spatial...).
    lhs_spec, rhs_spec, out_spec = (tuple(int(d) for d in s) for s in (lhs_spec, rhs_spec, out_spec))
    return ConvDimensionNumbers(
        lhs_spec[0], lhs_spec[1], list(lhs_spec[2:]),
        rhs_spec[1], rhs_spec[0], list(rhs_spec[2:]),
        out_spec[0], out_spec[1], list(out_spec[2:]))


