"""Kernel gradients in conv2d_filter's order (f01b_i01o->01bf, as JAX writes
a convolution's kernel gradient) whose result is a few vectors of output
features wide: the runtime sums them without im2col (convolution.cc,
FilterDirect: f32, input features in multiples of 8, on AVX-512 variants
16 or 32 output features, on AVX2 8, 16 or 24; elsewhere the GEMM path;
test_conv_direct_variants.py runs these cases on each variant). Expected
values from NumPy: out[ky, kx, ci, co] = sum over images and output
positions of the padded input at the tap times the gradient."""
import numpy as np
import pytest

import xla
from xla.hlo.parser import parse_hlo_module


def _kernel_gradient_hlo(n, h, cin, gh, cout, k, stride, pad):
    lo, hi = pad
    dilate = f" rhs_dilate={stride}x{stride}" if stride > 1 else ""
    return f"""HloModule kgrad
ENTRY %main (x: f32[{n},{h},{h},{cin}], g: f32[{n},{gh},{gh},{cout}]) -> f32[{k},{k},{cin},{cout}] {{
  %x = f32[{n},{h},{h},{cin}] parameter(0)
  %g = f32[{n},{gh},{gh},{cout}] parameter(1)
  ROOT %c = f32[{k},{k},{cin},{cout}] convolution(%x, %g), window={{size={gh}x{gh} pad={lo}_{hi}x{lo}_{hi}{dilate}}}, dim_labels=f01b_i01o->01bf
}}
"""


def _numpy_kernel_gradient(x, g, k, stride, pad):
    lo, hi = pad
    xp = np.pad(x.astype(np.float64), ((0, 0), (lo, hi), (lo, hi), (0, 0)))
    gh = g.shape[1]
    out = np.zeros((k, k, x.shape[3], g.shape[3]))
    for ky in range(k):
        for kx in range(k):
            taps = xp[:, ky:ky + stride * (gh - 1) + 1:stride, kx:kx + stride * (gh - 1) + 1:stride, :]
            out[ky, kx] = np.einsum("nyxc,nyxo->co", taps, g.astype(np.float64))
    return out


# (images, input size, in features, gradient size, out features, kernel size, stride, padding)
CASES = {
    "one_vector_3x3_same": (4, 12, 8, 12, 16, 3, 1, (1, 1)),
    "one_vector_16_in": (3, 10, 16, 10, 16, 3, 1, (1, 1)),
    "two_vectors_stride2": (4, 12, 16, 6, 32, 3, 2, (0, 1)),
    "two_vectors_8_in": (3, 10, 8, 10, 32, 3, 1, (1, 1)),
    "kernel_row_not_a_multiple_of_3": (2, 8, 8, 7, 16, 2, 1, (0, 0)),
    # AVX2's widths (8 lanes), the GEMM path on AVX-512
    "eight_features_3x3": (4, 9, 8, 9, 8, 3, 1, (1, 1)),
    "eight_features_2x2": (3, 8, 16, 7, 8, 2, 1, (0, 0)),
    "eight_features_stride2": (4, 12, 8, 6, 8, 3, 2, (0, 1)),
    "24_features": (2, 8, 8, 8, 24, 3, 1, (1, 1)),
    # no variant's: the GEMM path
    "20_features": (2, 8, 8, 8, 20, 3, 1, (1, 1)),
    "4_input_features": (2, 8, 4, 8, 16, 3, 1, (1, 1)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_kernel_gradient_matches_numpy(case):
    n, h, cin, gh, cout, k, stride, pad = CASES[case]
    rng = np.random.default_rng(len(case))
    x = rng.standard_normal((n, h, h, cin)).astype(np.float32)
    g = rng.standard_normal((n, gh, gh, cout)).astype(np.float32)
    exe = xla.compile(parse_hlo_module(_kernel_gradient_hlo(n, h, cin, gh, cout, k, stride, pad)),
                      "cpu")
    assert 'call void @"__xla_cpu_conv2d_filter_f32"' in exe.ir_text
    out = exe.execute(x, g)
    got = np.asarray(out[0] if isinstance(out, (list, tuple)) else out)
    want = _numpy_kernel_gradient(x, g, k, stride, pad)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())
