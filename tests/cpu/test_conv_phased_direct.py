"""Lhs-dilated NHWC x HWIO convolutions (the input gradients of strided
layers): the runtime splits the output into phases of equal position modulo
the dilation, each reading only its own taps (convolution.cc,
PhasedConv2D); f32 with one to four vectors of output features (16 to 64,
8 or 24 on the AVX-512 variants, 8 to 24 on AVX2) and no feature groups run each
phase's rows in the direct register tiles (PhasedDirectBody), others
im2col and a GEMM (test_conv_direct_variants.py runs these cases on each
variant). Expected
values from NumPy: the input with (dilation - 1) zeros between elements,
padded (or cropped, for negative padding), convolved with the kernel."""
import numpy as np
import pytest

import xla
from xla.hlo.parser import parse_hlo_module


def _out_size(size, k, stride, pad, lhs, rhs):
    return ((size - 1) * lhs + 1 + sum(pad) - (k - 1) * rhs - 1) // stride + 1


def _conv_hlo(x_shape, k_shape, stride, pad, lhs, rhs, groups):
    n, h, w, _ = x_shape
    kh, kw, _, cout = k_shape
    oh = _out_size(h, kh, stride[0], pad[0], lhs[0], rhs[0])
    ow = _out_size(w, kw, stride[1], pad[1], lhs[1], rhs[1])
    window = (f"size={kh}x{kw} stride={stride[0]}x{stride[1]} "
              f"pad={pad[0][0]}_{pad[0][1]}x{pad[1][0]}_{pad[1][1]} "
              f"lhs_dilate={lhs[0]}x{lhs[1]} rhs_dilate={rhs[0]}x{rhs[1]}")
    xs, ks = ",".join(map(str, x_shape)), ",".join(map(str, k_shape))
    groups_attr = f", feature_group_count={groups}" if groups > 1 else ""
    return f"""HloModule conv
ENTRY %main (x: f32[{xs}], k: f32[{ks}]) -> f32[{n},{oh},{ow},{cout}] {{
  %x = f32[{xs}] parameter(0)
  %k = f32[{ks}] parameter(1)
  ROOT %c = f32[{n},{oh},{ow},{cout}] convolution(%x, %k), window={{{window}}}, dim_labels=b01f_01io->b01f{groups_attr}
}}
"""


def _pad_axis(a, axis, lo, hi):
    # Negative padding crops.
    if lo < 0:
        a = np.take(a, range(-lo, a.shape[axis]), axis=axis)
        lo = 0
    if hi < 0:
        a = np.take(a, range(0, a.shape[axis] + hi), axis=axis)
        hi = 0
    widths = [(0, 0)] * a.ndim
    widths[axis] = (lo, hi)
    return np.pad(a, widths)


def _numpy_conv(x, kern, stride, pad, lhs, rhs, groups):
    n, h, w, cin = x.shape
    kh, kw, cg, cout = kern.shape
    dilated = np.zeros((n, (h - 1) * lhs[0] + 1, (w - 1) * lhs[1] + 1, cin))
    dilated[:, ::lhs[0], ::lhs[1]] = x
    xp = _pad_axis(_pad_axis(dilated, 1, *pad[0]), 2, *pad[1])
    oh = (xp.shape[1] - (kh - 1) * rhs[0] - 1) // stride[0] + 1
    ow = (xp.shape[2] - (kw - 1) * rhs[1] - 1) // stride[1] + 1
    og = cout // groups
    out = np.zeros((n, oh, ow, cout))
    for ky in range(kh):
        for kx in range(kw):
            y0, x0 = ky * rhs[0], kx * rhs[1]
            taps = xp[:, y0:y0 + stride[0] * (oh - 1) + 1:stride[0],
                      x0:x0 + stride[1] * (ow - 1) + 1:stride[1]]
            for g in range(groups):
                out[..., g * og:(g + 1) * og] += np.einsum(
                    "nyxc,co->nyxo", taps[..., g * cg:(g + 1) * cg],
                    kern[ky, kx, :, g * og:(g + 1) * og].astype(np.float64))
    return out


# (input NHWC, kernel HWIO, stride, ((pad_lo, pad_hi) per axis), lhs dilation,
#  rhs dilation, feature groups)
CASES = {
    # cnn_train's input gradient in small: 3x3, 32 -> 16, lhs 2, pad 2_1
    "one_vector_input_gradient": ((2, 8, 8, 32), (3, 3, 32, 16), (1, 1), ((2, 1), (2, 1)),
                                  (2, 2), (1, 1), 1),
    "two_vectors_pad_1": ((2, 5, 7, 5), (3, 3, 5, 32), (1, 1), ((1, 1), (1, 1)), (2, 2), (1, 1), 1),
    # phases of 12 and 13 output columns: a full tile and a partial one
    "one_vector_wide_rows": ((1, 4, 13, 8), (3, 3, 8, 16), (1, 1), ((1, 1), (2, 2)),
                             (2, 2), (1, 1), 1),
    # phases of 24 columns: whole tiles on every variant, the last at the padding
    "whole_tiles": ((1, 3, 24, 4), (3, 3, 4, 16), (1, 1), ((1, 1), (1, 1)), (2, 2), (1, 1), 1),
    "lhs_3_stride_2": ((2, 6, 7, 4), (3, 3, 4, 16), (2, 2), ((2, 2), (1, 2)), (3, 3), (1, 1), 1),
    "lhs_and_rhs_dilation": ((1, 6, 9, 6), (3, 3, 6, 32), (1, 1), ((2, 2), (3, 1)), (2, 2),
                             (2, 2), 1),
    "uneven_dilation_2x3_kernel_3x2": ((2, 5, 6, 7), (3, 2, 7, 16), (1, 2), ((1, 2), (0, 1)),
                                       (2, 3), (1, 1), 1),
    "negative_padding": ((1, 7, 8, 3), (3, 3, 3, 32), (1, 1), ((-1, 2), (2, -2)), (2, 2), (1, 1), 1),
    # odd output positions fall on holes only: their phases have no taps
    "phases_without_taps": ((2, 5, 6, 9), (1, 1, 9, 16), (1, 1), ((0, 0), (0, 0)), (2, 2), (1, 1), 1),
    "three_vectors": ((2, 5, 6, 8), (3, 3, 8, 48), (1, 1), ((2, 1), (2, 1)), (2, 2), (1, 1), 1),
    "four_vectors": ((1, 4, 7, 16), (3, 3, 16, 64), (1, 1), ((1, 2), (2, 1)), (2, 2), (1, 1), 1),
    # 8-lane vectors (AVX2's, and AVX-512's half-width tiles)
    "eight_features": ((2, 5, 7, 6), (3, 3, 6, 8), (1, 1), ((2, 1), (1, 1)), (2, 2), (1, 1), 1),
    "24_features": ((2, 5, 6, 8), (3, 3, 8, 24), (1, 1), ((2, 1), (2, 1)), (2, 2), (1, 1), 1),
    # no variant's width, or feature groups: im2col per phase and the GEMM
    "20_features": ((2, 5, 6, 8), (3, 3, 8, 20), (1, 1), ((2, 1), (2, 1)), (2, 2), (1, 1), 1),
    "feature_groups": ((2, 5, 6, 8), (3, 3, 4, 32), (1, 1), ((2, 1), (2, 1)), (2, 2), (1, 1), 2),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_lhs_dilated_convolution_matches_numpy(case):
    x_shape, k_shape, stride, pad, lhs, rhs, groups = CASES[case]
    rng = np.random.default_rng(len(case))
    x = rng.standard_normal(x_shape).astype(np.float32)
    kern = rng.standard_normal(k_shape).astype(np.float32)
    exe = xla.compile(parse_hlo_module(_conv_hlo(x_shape, k_shape, stride, pad, lhs, rhs, groups)),
                      "cpu")
    assert 'call void @"__xla_cpu_conv2d_f32"' in exe.ir_text
    out = exe.execute(x, kern)
    got = np.asarray(out[0] if isinstance(out, (list, tuple)) else out)
    want = _numpy_conv(x, kern, stride, pad, lhs, rhs, groups)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())
