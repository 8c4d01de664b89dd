"""NHWC x HWIO convolutions whose output is one to four vectors of features
wide: the runtime computes them in register tiles of output pixels straight
from the input (convolution.cc, ConvDirect, f32 on the AVX-512 variants,
16 to 64 features and 8 or 24, and the AVX2 variant, 8 to 24; elsewhere im2col and a
GEMM; test_conv_direct_variants.py runs these cases on each variant).
Expected values from NumPy: out[n, y, x, o] = sum over (ky, kx, c) of the
padded input at (y * stride + ky * dilation, x * stride + kx * dilation)
times the kernel."""
import numpy as np
import pytest

import xla
from xla.hlo.parser import parse_hlo_module


def _conv_hlo(n, h, w, cin, k, cout, stride, pad, dilation):
    oh = (h + sum(pad) - dilation * (k - 1) - 1) // stride + 1
    ow = (w + sum(pad) - dilation * (k - 1) - 1) // stride + 1
    window = f"size={k}x{k} pad={pad[0]}_{pad[1]}x{pad[0]}_{pad[1]}"
    if stride > 1:
        window += f" stride={stride}x{stride}"
    if dilation > 1:
        window += f" rhs_dilate={dilation}x{dilation}"
    return f"""HloModule conv
ENTRY %main (x: f32[{n},{h},{w},{cin}], k: f32[{k},{k},{cin},{cout}]) -> f32[{n},{oh},{ow},{cout}] {{
  %x = f32[{n},{h},{w},{cin}] parameter(0)
  %k = f32[{k},{k},{cin},{cout}] parameter(1)
  ROOT %c = f32[{n},{oh},{ow},{cout}] convolution(%x, %k), window={{{window}}}, dim_labels=b01f_01io->b01f
}}
""", (oh, ow)


def _numpy_conv(x, kern, stride, pad, dilation, out_hw):
    xp = np.pad(x.astype(np.float64), ((0, 0), pad, pad, (0, 0)))
    k = kern.shape[0]
    oh, ow = out_hw
    out = np.zeros((x.shape[0], oh, ow, kern.shape[3]))
    for ky in range(k):
        for kx in range(k):
            y0, x0 = ky * dilation, kx * dilation
            taps = xp[:, y0:y0 + stride * (oh - 1) + 1:stride, x0:x0 + stride * (ow - 1) + 1:stride, :]
            out += np.einsum("nyxc,co->nyxo", taps, kern[ky, kx].astype(np.float64))
    return out


# (images, height, width, in features, kernel size, out features, stride, padding, dilation)
CASES = {
    "one_vector_same": (2, 9, 11, 8, 3, 16, 1, (1, 1), 1),
    "one_vector_3_in_width_under_a_tile": (3, 6, 5, 3, 3, 16, 1, (1, 1), 1),
    "two_vectors_stride2_uneven_pad": (2, 12, 13, 16, 3, 32, 2, (0, 1), 1),
    "two_vectors_dilated": (1, 10, 19, 5, 3, 32, 1, (2, 2), 2),
    "one_vector_5x5_valid": (2, 12, 12, 7, 5, 16, 1, (0, 0), 1),
    "three_vectors": (2, 7, 10, 6, 3, 48, 1, (1, 1), 1),
    # 24 pixels: rows of whole tiles on every variant (8, 6 or 4 pixels),
    # the last tile's taps at the padding on the right
    "one_vector_whole_tiles": (1, 4, 24, 8, 3, 16, 1, (1, 1), 1),
    "two_vectors_whole_tiles": (1, 4, 24, 3, 3, 32, 1, (1, 1), 1),
    "four_vectors_whole_tiles": (1, 3, 24, 2, 3, 64, 1, (1, 1), 1),
    "four_vectors_stride2": (2, 9, 13, 12, 3, 64, 2, (1, 1), 1),
    # 8-lane vectors (AVX2's, and AVX-512's half-width tiles)
    "eight_features": (2, 8, 9, 5, 3, 8, 1, (1, 1), 1),
    "24_features": (2, 8, 8, 8, 3, 24, 1, (1, 1), 1),
    # no variant's width: im2col and the GEMM
    "20_features": (2, 8, 8, 8, 3, 20, 1, (1, 1), 1),
    "80_features": (1, 6, 7, 4, 3, 80, 1, (1, 1), 1),
    # at most 1024 output pixels and 2^23 multiply-adds or more: every im2col
    # row, then one product of the runtime's matmul (AVX-512; FewPixelsProduct)
    "few_pixels_batch1": (1, 14, 14, 256, 3, 256, 1, (1, 1), 1),
    "few_pixels_dilated": (2, 12, 11, 160, 3, 160, 1, (2, 2), 2),
    "few_pixels_strided": (1, 30, 33, 96, 3, 256, 2, (0, 1), 1),
    "few_pixels_784": (1, 28, 28, 128, 3, 128, 1, (1, 1), 1),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_convolution_matches_numpy(case):
    n, h, w, cin, k, cout, stride, pad, dilation = CASES[case]
    text, out_hw = _conv_hlo(n, h, w, cin, k, cout, stride, pad, dilation)
    rng = np.random.default_rng(len(case))
    x = rng.standard_normal((n, h, w, cin)).astype(np.float32)
    kern = rng.standard_normal((k, k, cin, cout)).astype(np.float32)
    exe = xla.compile(parse_hlo_module(text), "cpu")
    assert 'call void @"__xla_cpu_conv2d_f32"' in exe.ir_text
    out = exe.execute(x, kern)
    got = np.asarray(out[0] if isinstance(out, (list, tuple)) else out)
    want = _numpy_conv(x, kern, stride, pad, dilation, out_hw)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


def test_few_pixels_product_has_the_same_bits_at_any_thread_count():
    # One matmul split along the output features by the pool's thread count
    # (FewPixelsProduct): every element is the same sum whatever the split.
    from xla import _core
    text, _ = _conv_hlo(*CASES["few_pixels_batch1"])
    n, h, w, cin, k, cout = CASES["few_pixels_batch1"][:6]
    rng = np.random.default_rng(3)
    x = rng.standard_normal((n, h, w, cin)).astype(np.float32)
    kern = rng.standard_normal((k, k, cin, cout)).astype(np.float32)
    exe = xla.compile(parse_hlo_module(text), "cpu")
    bits = []
    try:
        for threads in (1, 2, 3):
            _core.set_cpu_runtime_num_threads(threads)
            bits.append(np.asarray(exe.execute(x, kern)).tobytes())
    finally:
        _core.set_cpu_runtime_num_threads(0)
    assert bits[0] == bits[1] == bits[2]
