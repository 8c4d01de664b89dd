"""Depthwise convolutions (feature_group_count == input features == output
features) and their kernel gradients (batch groups of one entry and one
output feature, as JAX writes them): the runtime sums each output element
over the taps in the image, vectors of features at a time
(convolution_depthwise.cc, DepthwiseRows and DepthwiseFilterChunks: blocks
of four vectors, then single vectors, then single features;
test_conv_direct_variants.py runs these cases on each ISA variant).
Expected values from NumPy: out[n, y, x, c] = sum over (ky, kx) of the
padded, lhs-dilated input at (y * stride + ky * dilation, x * stride + kx *
dilation) times kernel[ky, kx, 0, c]; a kernel gradient's out[ky, kx, 0, c]
the sum over images and gradient pixels of input times gradient."""
import numpy as np
import pytest

import xla
from xla.hlo.parser import parse_hlo_module


def _out_size(size, k, stride, pad, dilation, lhs_dilation):
    return (lhs_dilation * (size - 1) + 1 + sum(pad) - dilation * (k - 1) - 1) // stride + 1


def _window(kh, kw, stride, pad, dilation, lhs_dilation):
    """The window attribute: the same stride, padding and dilations along both dimensions."""
    window = f"size={kh}x{kw} pad={pad[0]}_{pad[1]}x{pad[0]}_{pad[1]}"
    if stride > 1:
        window += f" stride={stride}x{stride}"
    if lhs_dilation > 1:
        window += f" lhs_dilate={lhs_dilation}x{lhs_dilation}"
    if dilation > 1:
        window += f" rhs_dilate={dilation}x{dilation}"
    return window


def _hlo(dtype, n, h, w, c, k, stride, pad, dilation, lhs_dilation, labels):
    oh = _out_size(h, k, stride, pad, dilation, lhs_dilation)
    ow = _out_size(w, k, stride, pad, dilation, lhs_dilation)
    window = _window(k, k, stride, pad, dilation, lhs_dilation)
    if labels == "nchw":
        xs, ks, os_ = (n, c, h, w), (c, 1, k, k), (n, c, oh, ow)
        dl = "bf01_oi01->bf01"
    else:
        xs, ks, os_ = (n, h, w, c), (k, k, 1, c), (n, oh, ow, c)
        dl = "b01f_01io->b01f"
    s = lambda d: ",".join(map(str, d))  # noqa: E731
    return (f"HloModule dw\nENTRY e {{\n  x = {dtype}[{s(xs)}] parameter(0)\n"
            f"  k = {dtype}[{s(ks)}] parameter(1)\n"
            f"  ROOT c = {dtype}[{s(os_)}] convolution(x, k), window={{{window}}}, "
            f"dim_labels={dl}, feature_group_count={c}\n}}\n"), xs, ks, (oh, ow)


def _numpy(x, kern, stride, pad, dilation, lhs_dilation, out_hw):
    """x NHWC, kern [k, k, c] in float64."""
    n, h, w, c = x.shape
    dil = np.zeros((n, lhs_dilation * (h - 1) + 1, lhs_dilation * (w - 1) + 1, c))
    dil[:, ::lhs_dilation, ::lhs_dilation, :] = x
    xp = np.pad(dil, ((0, 0), pad, pad, (0, 0)))
    oh, ow = out_hw
    out = np.zeros((n, oh, ow, c))
    k = kern.shape[0]
    for ky in range(k):
        for kx in range(k):
            y0, x0 = ky * dilation, kx * dilation
            out += xp[:, y0:y0 + stride * (oh - 1) + 1:stride,
                      x0:x0 + stride * (ow - 1) + 1:stride, :] * kern[ky, kx]
    return out


# (type, images, height, width, features, kernel, stride, padding, rhs dilation, lhs dilation, layout)
CASES = {
    "128_features_same": ("f32", 2, 9, 11, 128, 3, 1, (1, 1), 1, 1, "nhwc"),
    "80_features_block_and_vector": ("f32", 2, 7, 6, 80, 3, 1, (1, 1), 1, 1, "nhwc"),
    "70_features_scalar_tail": ("f32", 1, 6, 7, 70, 3, 1, (1, 1), 1, 1, "nhwc"),
    "3_features": ("f32", 2, 5, 5, 3, 3, 1, (1, 1), 1, 1, "nhwc"),
    "stride2_uneven_pad": ("f32", 2, 12, 13, 32, 3, 2, (0, 1), 1, 1, "nhwc"),
    "7x7_convnext": ("f32", 1, 10, 9, 96, 7, 1, (3, 3), 1, 1, "nhwc"),
    "rhs_dilated": ("f32", 1, 11, 12, 48, 3, 1, (2, 2), 2, 1, "nhwc"),
    # a strided depthwise layer's input gradient: lhs dilation, reversed kernel's padding
    "lhs_dilated": ("f32", 2, 5, 6, 40, 3, 1, (2, 1), 1, 2, "nhwc"),
    # padding wider than the kernel: output pixels with no tap in the image
    "all_padding_pixels": ("f32", 1, 3, 3, 20, 2, 1, (3, 3), 1, 1, "nhwc"),
    "f64": ("f64", 2, 6, 7, 37, 3, 1, (1, 1), 1, 1, "nhwc"),
    "nchw": ("f32", 2, 16, 7, 24, 3, 2, (1, 1), 1, 1, "nchw"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_depthwise_convolution_matches_numpy(case):
    dtype, n, h, w, c, k, stride, pad, dilation, lhs_dilation, labels = CASES[case]
    text, xs, ks, out_hw = _hlo(dtype, n, h, w, c, k, stride, pad, dilation, lhs_dilation,
                                labels)
    npt = np.float32 if dtype == "f32" else np.float64
    rng = np.random.default_rng(len(case))
    x = rng.standard_normal(xs).astype(npt)
    kern = rng.standard_normal(ks).astype(npt)
    exe = xla.compile(parse_hlo_module(text), "cpu")
    assert f'call void @"__xla_cpu_conv2d_{dtype}"' in exe.ir_text
    got = np.asarray(exe.execute(x, kern))
    if labels == "nchw":
        want = _numpy(x.transpose(0, 2, 3, 1), kern[:, 0].transpose(1, 2, 0), stride, pad,
                      dilation, lhs_dilation, out_hw).transpose(0, 3, 1, 2)
    else:
        want = _numpy(x, kern[:, :, 0, :], stride, pad, dilation, lhs_dilation, out_hw)
    assert got.dtype == npt and got.shape == want.shape
    tol = 1e-5 if dtype == "f32" else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * k * k)


def _filter_hlo(dtype, n, h, w, c, gh, gw, stride, pad, dilation, lhs_dilation, kh, kw):
    """A depthwise layer's kernel gradient as JAX writes it: the images as
    input features (f01b), the output gradient as the kernel (i01o), the
    layer's features as batch groups of one entry."""
    s = lambda d: ",".join(map(str, d))  # noqa: E731
    window = _window(gh, gw, stride, pad, dilation, lhs_dilation)
    return (f"HloModule dwf\nENTRY e {{\n  x = {dtype}[{s((n, h, w, c))}] parameter(0)\n"
            f"  g = {dtype}[{s((n, gh, gw, c))}] parameter(1)\n"
            f"  ROOT c = {dtype}[{s((kh, kw, 1, c))}] convolution(x, g), window={{{window}}}, "
            f"dim_labels=f01b_i01o->01bf, batch_group_count={c}\n}}\n")


# (type, images, height, width, features, gradient height, width, stride,
#  padding, rhs dilation (the layer's stride), lhs dilation)
FILTER_CASES = {
    "128_features": ("f32", 3, 9, 10, 128, 9, 10, 1, (1, 1), 1, 1),
    "80_features_block_and_vector": ("f32", 2, 7, 6, 80, 7, 6, 1, (1, 1), 1, 1),
    "70_features_scalar_tail": ("f32", 2, 6, 7, 70, 6, 7, 1, (1, 1), 1, 1),
    "3_features": ("f32", 2, 5, 5, 3, 5, 5, 1, (1, 1), 1, 1),
    # a stride-2 layer's: the gradient's pixels 2 apart, uneven padding
    "layer_stride2": ("f32", 2, 12, 13, 32, 6, 7, 1, (0, 1), 2, 1),
    "strided_window": ("f32", 1, 11, 12, 48, 4, 4, 2, (1, 1), 1, 1),
    "lhs_dilated": ("f32", 2, 5, 6, 20, 8, 9, 1, (1, 1), 1, 2),
    "one_image": ("f32", 1, 8, 8, 64, 8, 8, 1, (3, 3), 1, 1),
    "f64": ("f64", 3, 6, 7, 37, 6, 7, 1, (1, 1), 1, 1),
}


def _filter_numpy(x, g, stride, pad, dilation, lhs_dilation, out_hw):
    n, h, w, c = x.shape
    dil = np.zeros((n, lhs_dilation * (h - 1) + 1, lhs_dilation * (w - 1) + 1, c))
    dil[:, ::lhs_dilation, ::lhs_dilation, :] = x
    xp = np.pad(dil, ((0, 0), pad, pad, (0, 0)))
    gh, gw = g.shape[1:3]
    out = np.zeros(out_hw + (1, c))
    for ty in range(out_hw[0]):
        for tx in range(out_hw[1]):
            y0, x0 = ty * stride, tx * stride
            taps = xp[:, y0:y0 + dilation * (gh - 1) + 1:dilation,
                      x0:x0 + dilation * (gw - 1) + 1:dilation, :]
            out[ty, tx, 0] = np.einsum("nyxc,nyxc->c", taps, g)
    return out


@pytest.mark.parametrize("case", sorted(FILTER_CASES))
def test_depthwise_kernel_gradient_matches_numpy(case):
    dtype, n, h, w, c, gh, gw, stride, pad, dilation, lhs_dilation = FILTER_CASES[case]
    kh = _out_size(h, gh, stride, pad, dilation, lhs_dilation)
    kw = _out_size(w, gw, stride, pad, dilation, lhs_dilation)
    text = _filter_hlo(dtype, n, h, w, c, gh, gw, stride, pad, dilation, lhs_dilation, kh, kw)
    npt = np.float32 if dtype == "f32" else np.float64
    rng = np.random.default_rng(len(case))
    x = rng.standard_normal((n, h, w, c)).astype(npt)
    g = rng.standard_normal((n, gh, gw, c)).astype(npt)
    exe = xla.compile(parse_hlo_module(text), "cpu")
    assert f'call void @"__xla_cpu_conv2d_depthwise_filter_{dtype}"' in exe.ir_text
    got = np.asarray(exe.execute(x, g))
    want = _filter_numpy(x, g, stride, pad, dilation, lhs_dilation, (kh, kw))
    assert got.dtype == npt and got.shape == want.shape
    tol = 1e-5 if dtype == "f32" else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.sqrt(n * gh * gw))
    # the interpreter (the reference semantics of batch groups) agrees
    ref = np.asarray(xla.compile(parse_hlo_module(text), "interpreter").execute(x, g))
    np.testing.assert_allclose(got, ref, rtol=tol, atol=tol * np.sqrt(n * gh * gw))


def test_same_bits_at_any_thread_count():
    # A layer and its kernel gradient large enough to split over the pool
    # (the gradient's images in chunks, summed in chunk order).
    from xla import _core
    layer, xs, ks, _ = _hlo("f32", 4, 20, 20, 96, 3, 1, (1, 1), 1, 1, "nhwc")
    grad = _filter_hlo("f32", 16, 20, 20, 96, 20, 20, 1, (1, 1), 1, 1, 3, 3)
    rng = np.random.default_rng(7)
    cases = [(layer, [rng.standard_normal(xs), rng.standard_normal(ks)]),
             (grad, [rng.standard_normal((16, 20, 20, 96)), rng.standard_normal((16, 20, 20, 96))])]
    for text, args in cases:
        args = [a.astype(np.float32) for a in args]
        exe = xla.compile(parse_hlo_module(text), "cpu")
        bits = []
        try:
            for threads in (1, 2, 3):
                _core.set_cpu_runtime_num_threads(threads)
                bits.append(np.asarray(exe.execute(*args)).tobytes())
        finally:
            _core.set_cpu_runtime_num_threads(0)
        assert bits[0] == bits[1] == bits[2]
