"""Convolution, reduce-window and select-and-scatter on the CPU backend,
checked against the interpreter (emit_convolution.py, emit_window.py)."""
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_cpu_backend import check  # noqa: E402


def conv_module(ty, lhs, rhs, out, attrs):
    return f"""
HloModule conv
ENTRY %e (x: {ty}[{lhs}], w: {ty}[{rhs}]) -> {ty}[{out}] {{
  %x = {ty}[{lhs}] parameter(0)
  %w = {ty}[{rhs}] parameter(1)
  ROOT %c = {ty}[{out}] convolution(%x, %w), {attrs}
}}
"""


# (lhs dims, rhs dims, out dims, attributes)
CONVS = {
    "nhwc_same": ("2,6,6,3", "3,3,3,4", "2,6,6,4", "window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f"),
    "nchw": ("2,3,5,5", "4,3,3,3", "2,4,3,3", "window={size=3x3}, dim_labels=bf01_oi01->bf01"),
    "strided_padded": ("1,3,7,6", "3,3,3,2", "1,3,4,3",
                       "window={size=3x2 stride=2x2 pad=1_2x0_1}, dim_labels=bf01_oi01->bf01"),
    "negative_padding": ("1,7,7,2", "3,3,2,3", "1,4,2,3",
                         "window={size=3x3 pad=-1_0x-2_1 stride=1x2}, dim_labels=b01f_01io->b01f"),
    "nhwc_negative_padding": ("1,8,7,2", "2,3,2,3", "1,5,5,3",
                              "window={size=2x3 pad=-1_-1x0_0}, dim_labels=b01f_01io->b01f"),
    "lhs_rhs_dilated": ("1,2,5,6", "3,2,3,3", "1,3,9,6",
                        "window={size=3x3 pad=1_1x2_2 lhs_dilate=2x1 rhs_dilate=1x2}, dim_labels=bf01_oi01->bf01"),
    "nhwc_dilated": ("2,5,6,2", "3,2,2,4", "2,9,4,4",
                     "window={size=3x2 pad=1_1x0_0 lhs_dilate=2x1 rhs_dilate=1x2}, dim_labels=b01f_01io->b01f"),
    "grouped": ("1,4,5,5", "6,2,3,3", "1,6,3,3", "window={size=3x3}, dim_labels=bf01_oi01->bf01, feature_group_count=2"),
    "nhwc_grouped": ("2,5,5,6", "3,3,2,9", "2,5,5,9",
                     "window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f, feature_group_count=3"),
    "batch_grouped": ("4,3,5,5", "4,3,3,3", "2,4,2,4",
                      "window={size=3x3 pad=1_0x0_1 rhs_dilate=2x1}, dim_labels=bf01_oi01->bf01, batch_group_count=2"),
    "reversed": ("1,2,5,5", "3,2,3,2", "1,3,5,4",
                 "window={size=3x2 pad=1_1x0_0 rhs_reversal=1x0}, dim_labels=bf01_oi01->bf01"),
    "conv1d": ("2,9,3", "3,3,2", "2,5,2", "window={size=3 stride=2 pad=2_1}, dim_labels=b0f_0io->b0f"),
    "conv3d": ("1,2,4,4,4", "3,2,2,2,2", "1,3,3,3,3", "window={size=2x2x2}, dim_labels=bf012_oi012->bf012"),
    "fb01": ("3,2,6,5", "3,3,2,4", "4,2,4,2",
             "window={size=3x2 stride=1x2}, dim_labels=fb01_i01o->fb01"),
}


@pytest.mark.parametrize("ty", ["f32", "f64", "s32"])
@pytest.mark.parametrize("name", sorted(CONVS))
def test_convolution(name, ty):
    lhs, rhs, out, attrs = CONVS[name]
    text = conv_module(ty, lhs, rhs, out, attrs)
    args = None
    if ty == "s32":
        rng = np.random.default_rng(1)
        args = [rng.integers(-2**31, 2**31, size=[int(d) for d in s.split(",")], dtype=np.int32)
                for s in (lhs, rhs)]  # wraps around
    check(text, args=args, rtol=1e-4 if ty == "f32" else 1e-10, atol=1e-4 if ty == "f32" else 1e-10)


@pytest.mark.parametrize("name,fast", [("nhwc_same", True), ("nhwc_negative_padding", True),
                                       ("nhwc_dilated", True), ("nhwc_grouped", True), ("conv1d", True),
                                       ("nchw", True), ("fb01", True), ("reversed", True),
                                       ("batch_grouped", False)])
def test_runtime_conv2d_fast_path(name, fast):
    # Other dim_labels (NCHW, fb01) reach the runtime through layout
    # assignment's copies, reversal through a reverse of the kernel; batch
    # groups stay loops.
    lhs, rhs, out, attrs = CONVS[name]
    exe = check(conv_module("f32", lhs, rhs, out, attrs), rtol=1e-4, atol=1e-4)
    assert ("__xla_cpu_conv2d_f32" in exe.ir_text) == fast


def test_convolution_bf16_and_mixed_s8():
    check(conv_module("bf16", "1,4,4,3", "2,2,3,2", "1,3,3,2", "window={size=2x2}, dim_labels=b01f_01io->b01f"),
          rtol=1e-2, atol=1e-2)
    check("""
HloModule mixed
ENTRY %e (x: s8[1,5,5,2], w: s8[3,3,2,3]) -> s32[1,3,3,3] {
  %x = s8[1,5,5,2] parameter(0)
  %w = s8[3,3,2,3] parameter(1)
  ROOT %c = s32[1,3,3,3] convolution(%x, %w), window={size=3x3}, dim_labels=b01f_01io->b01f
}
""")


def test_large_conv_matches():
    lhs, rhs, out = "4,20,20,16", "3,3,16,32", "4,20,20,32"
    check(conv_module("f32", lhs, rhs, out, "window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f"),
          rtol=1e-4, atol=1e-3)


# ----- reduce-window -------------------------------------------------------------------
def reduce_window_module(ty, op, init, in_dims, out_dims, window):
    return f"""
HloModule rw
%r (a: {ty}[], b: {ty}[]) -> {ty}[] {{
  %a = {ty}[] parameter(0)
  %b = {ty}[] parameter(1)
  ROOT %o = {ty}[] {op}(%a, %b)
}}
ENTRY %e (x: {ty}[{in_dims}]) -> {ty}[{out_dims}] {{
  %x = {ty}[{in_dims}] parameter(0)
  %i = {ty}[] constant({init})
  ROOT %w = {ty}[{out_dims}] reduce-window(%x, %i), window={{{window}}}, to_apply=%r
}}
"""


WINDOWS = [
    ("1,6,6,2", "1,3,3,2", "size=1x3x3x1 stride=1x2x2x1 pad=0_0x0_1x0_1x0_0"),
    ("1,6,6,2", "1,3,3,2", "size=1x2x2x1 stride=1x2x2x1"),
    ("1,6,6,2", "1,11,5,2", "size=1x2x2x1 pad=0_0x1_0x0_1x0_0 lhs_dilate=1x2x1x1 rhs_dilate=1x1x2x1"),
    ("4,6", "4,6", "size=1x6 pad=0_0x5_0"),
    ("4,6", "4,6", "size=4x1 pad=3_0x0_0"),
    ("7,8", "2,3", "size=3x3 stride=2x2 pad=-1_-1x0_-1"),
    ("5,5", "5,3", "size=3x3 pad=2_2x1_1 rhs_dilate=2x2 lhs_dilate=1x2 stride=1x3"),
]


@pytest.mark.parametrize("ty,op,init", [("f32", "maximum", "-inf"), ("f32", "add", "0"),
                                        ("f64", "add", "0.5"), ("s32", "add", "0"),
                                        ("s32", "minimum", "2147483647")])
@pytest.mark.parametrize("window", WINDOWS, ids=[w[2] for w in WINDOWS])
def test_reduce_window(ty, op, init, window):
    in_dims, out_dims, win = window
    check(reduce_window_module(ty, op, init, in_dims, out_dims, win))


def test_variadic_reduce_window_argmax():
    check("""
HloModule argmax_window
%r (a: f32[], ai: s32[], b: f32[], bi: s32[]) -> (f32[], s32[]) {
  %a = f32[] parameter(0)
  %ai = s32[] parameter(1)
  %b = f32[] parameter(2)
  %bi = s32[] parameter(3)
  %ge = pred[] compare(%a, %b), direction=GE
  %v = f32[] select(%ge, %a, %b)
  %i = s32[] select(%ge, %ai, %bi)
  ROOT %t = (f32[], s32[]) tuple(%v, %i)
}
ENTRY %e (x: f32[6,7], ix: s32[6,7]) -> (f32[3,3], s32[3,3]) {
  %x = f32[6,7] parameter(0)
  %ix = s32[6,7] parameter(1)
  %ninf = f32[] constant(-inf)
  %m1 = s32[] constant(-1)
  ROOT %w = (f32[3,3], s32[3,3]) reduce-window(%x, %ix, %ninf, %m1), window={size=2x3 stride=2x2 pad=0_0x0_1}, to_apply=%r
}
""")


# ----- select-and-scatter --------------------------------------------------------------
MAXPOOL_GRAD = """
HloModule maxpool_grad
%ge (a: {ty}[], b: {ty}[]) -> pred[] {{
  %a = {ty}[] parameter(0)
  %b = {ty}[] parameter(1)
  ROOT %c = pred[] compare(%a, %b), direction={direction}
}}
%add (p: {ty}[], q: {ty}[]) -> {ty}[] {{
  %p = {ty}[] parameter(0)
  %q = {ty}[] parameter(1)
  ROOT %sum = {ty}[] add(%p, %q)
}}
ENTRY %e (x: {ty}[{in_dims}], g: {ty}[{src_dims}]) -> {ty}[{in_dims}] {{
  %x = {ty}[{in_dims}] parameter(0)
  %g = {ty}[{src_dims}] parameter(1)
  %z = {ty}[] constant(0)
  ROOT %s = {ty}[{in_dims}] select-and-scatter(%x, %g, %z), window={{{window}}}, select=%ge, scatter=%add
}}
"""

SAS_CASES = [
    ("1,6,6,2", "1,3,3,2", "size=1x2x2x1 stride=1x2x2x1"),
    ("1,5,5,2", "1,3,3,2", "size=1x3x3x1 stride=1x2x2x1 pad=0_0x1_1x1_1x0_0"),  # overlapping windows
    ("6,7", "6,7", "size=3x3 pad=1_1x1_1"),
    ("7,5", "3,2", "size=3x3 stride=2x2 pad=-1_1x0_0"),
]


@pytest.mark.parametrize("direction", ["GE", "GT"])
@pytest.mark.parametrize("case", SAS_CASES, ids=[c[2] for c in SAS_CASES])
def test_select_and_scatter_ties(case, direction):
    in_dims, src_dims, window = case
    text = MAXPOOL_GRAD.format(ty="f32", direction=direction, in_dims=in_dims, src_dims=src_dims, window=window)
    rng = np.random.default_rng(3)
    shape = [int(d) for d in in_dims.split(",")]
    x = rng.integers(0, 3, size=shape).astype(np.float32)  # many ties
    g = rng.standard_normal([int(d) for d in src_dims.split(",")]).astype(np.float32)
    check(text, args=[x, g])


def test_select_and_scatter_s32():
    text = MAXPOOL_GRAD.format(ty="s32", direction="LE", in_dims="6,6", src_dims="3,3",
                               window="size=3x3 stride=2x2 pad=1_0x1_0")
    rng = np.random.default_rng(4)
    check(text, args=[rng.integers(0, 4, (6, 6), dtype=np.int32), rng.integers(-9, 9, (3, 3), dtype=np.int32)])


def test_convolution_of_preds_is_an_or_of_ands():
    # Was: "the cpu backend does not support convolution (element type pred)".
    import xla
    text = """HloModule m
ENTRY e {
  x = pred[1,6,6,2] parameter(0)
  k = pred[3,3,2,4] parameter(1)
  ROOT c = pred[1,4,4,4] convolution(x, k), window={size=3x3}, dim_labels=b01f_01io->b01f
}"""
    rng = np.random.default_rng(0)
    x, k = rng.random((1, 6, 6, 2)) > 0.85, rng.random((3, 3, 2, 4)) > 0.8
    want = np.zeros((1, 4, 4, 4), bool)
    for i in range(4):
        for j in range(4):
            for o in range(4):
                want[0, i, j, o] = np.any(x[0, i:i + 3, j:j + 3, :] & k[:, :, :, o])
    assert 0.2 < want.mean() < 0.8
    np.testing.assert_array_equal(xla.compile(text, "cpu").execute(x, k), want)


@pytest.mark.parametrize("ty,dtype,tol", [("c64", np.complex64, 1e-5), ("c128", np.complex128, 1e-12)])
def test_complex_convolution(ty, dtype, tol):
    # Was: "the cpu backend does not support convolution (element type c64)".
    import xla
    text = f"""HloModule m
ENTRY e {{
  x = {ty}[2,6,5,3] parameter(0)
  k = {ty}[3,2,3,4] parameter(1)
  ROOT c = {ty}[2,4,4,4] convolution(x, k), window={{size=3x2}}, dim_labels=b01f_01io->b01f
}}"""
    rng = np.random.default_rng(0)
    x = (rng.normal(size=(2, 6, 5, 3)) + 1j * rng.normal(size=(2, 6, 5, 3))).astype(dtype)
    k = (rng.normal(size=(3, 2, 3, 4)) + 1j * rng.normal(size=(3, 2, 3, 4))).astype(dtype)
    want = np.zeros((2, 4, 4, 4), np.complex128)
    for n in range(2):
        for i in range(4):
            for j in range(4):
                want[n, i, j] = np.einsum("abc,abco->o", x[n, i:i + 3, j:j + 2].astype(np.complex128),
                                          k.astype(np.complex128))
    got = xla.compile(text, "cpu").execute(x, k)
    assert got.dtype == dtype
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
