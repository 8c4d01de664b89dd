"""ConvolutionIm2Col: a convolution becomes strided slices of its padded
input, concatenated (im2col), and one matrix product with its reshaped
kernel. The printed module before and after; the interpreter's numbers
unchanged across strides, padding (negative too), lhs and rhs dilation,
window reversal, feature groups, 1 to 3 spatial dimensions and dimension
orders; what is left alone; the GPU backend's use of it (the product goes
to cuBLAS's thunk)."""
import numpy as np
import pytest

import xla
from pass_test_util import assert_same_results, opcodes, run_pass
from xla.service.convolution_im2col import ConvolutionIm2Col

SMALL = """HloModule m
ENTRY e {
  x = f32[1,4,4,2] parameter(0)
  w = f32[2,2,2,3] parameter(1)
  ROOT c = f32[1,3,3,3] convolution(x, w), window={size=2x2}, dim_labels=b01f_01io->b01f
}"""


def test_a_2x2_convolution_becomes_four_slices_and_a_dot():
    module, changed = run_pass(ConvolutionIm2Col(), SMALL)
    assert changed
    assert module.to_text().strip() == """HloModule m

ENTRY e {
  x = f32[1,4,4,2] parameter(0)
  w = f32[2,2,2,3] parameter(1)
  slice.1 = f32[1,3,3,2]{3,2,1,0} slice(x), slice={[0:1], [0:3], [0:3], [0:2]}
  slice.2 = f32[1,3,3,2]{3,2,1,0} slice(x), slice={[0:1], [0:3], [1:4], [0:2]}
  slice.3 = f32[1,3,3,2]{3,2,1,0} slice(x), slice={[0:1], [1:4], [0:3], [0:2]}
  slice.4 = f32[1,3,3,2]{3,2,1,0} slice(x), slice={[0:1], [1:4], [1:4], [0:2]}
  concatenate.5 = f32[1,3,3,8]{3,2,1,0} concatenate(slice.1, slice.2, slice.3, slice.4), dimensions={3}
  reshape.6 = f32[9,8]{1,0} reshape(concatenate.5)
  reshape.7 = f32[8,3]{1,0} reshape(w)
  dot.8 = f32[9,3]{1,0} dot(reshape.6, reshape.7), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT reshape.9 = f32[1,3,3,3]{3,2,1,0} reshape(dot.8)
}
""".strip()
    assert_same_results(SMALL, module, rtol=1e-5, atol=1e-5)
    assert not ConvolutionIm2Col().run(module)


# (input, kernel, window, dim_labels, feature groups, result)
CASES = [
    ("f32[2,9,9,3]", "f32[3,3,3,4]", "size=3x3 stride=2x2 pad=1_1x1_1", "b01f_01io->b01f", 1,
     "f32[2,5,5,4]"),
    ("f32[2,3,9,9]", "f32[4,3,3,3]", "size=3x3 pad=1_1x1_1", "bf01_oi01->bf01", 1, "f32[2,4,9,9]"),
    ("f64[1,8,8,4]", "f64[2,2,2,6]", "size=2x2 rhs_dilate=2x2 pad=0_1x1_0", "b01f_01io->b01f", 2,
     "f64[1,7,7,6]"),
    ("f32[2,5,5,3]", "f32[3,3,3,2]", "size=3x3 pad=2_2x2_2 lhs_dilate=2x2", "b01f_01io->b01f", 1,
     "f32[2,11,11,2]"),
    ("f32[2,7,3]", "f32[3,3,5]", "size=3 pad=1_1 rhs_reversal=1", "b0f_0io->b0f", 1, "f32[2,7,5]"),
    ("f32[3,6,2]", "f32[2,2,4]", "size=2 stride=3 pad=-1_2", "0bf_0io->b0f", 1, "f32[6,1,4]"),
    ("f32[1,4,4,4,2]", "f32[2,2,2,2,3]", "size=2x2x2", "b012f_012io->b012f", 1,
     "f32[1,3,3,3,3]"),
    ("f32[2,6,6,4]", "f32[3,3,2,6]", "size=3x3 pad=1_1x1_1", "b01f_01io->f01b", 2, "f32[6,6,6,2]"),
]


def _module(x, w, window, labels, groups, out, et=None):
    return f"""HloModule m
ENTRY e {{
  x = {x} parameter(0)
  w = {w} parameter(1)
  ROOT c = {out} convolution(x, w), window={{{window}}}, dim_labels={labels}, feature_group_count={groups}
}}"""


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[2]} {c[3]} g{c[4]}")
def test_the_interpreter_gives_the_same_numbers(case):
    text = _module(*case)
    module, changed = run_pass(ConvolutionIm2Col(), text)
    assert changed and "convolution" not in opcodes(module) and "dot" in opcodes(module)
    assert_same_results(text, module, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("text", [
    # f16: not a GEMM type here
    _module("f16[1,4,4,2]", "f16[2,2,2,3]", "size=2x2", "b01f_01io->b01f", 1, "f16[1,3,3,3]"),
    # depthwise: one input feature per group
    _module("f32[1,4,4,4]", "f32[2,2,1,4]", "size=2x2", "b01f_01io->b01f", 4, "f32[1,3,3,4]"),
    # batch groups
    """HloModule m
ENTRY e {
  x = f32[2,4,4,2] parameter(0)
  w = f32[2,2,2,4] parameter(1)
  ROOT c = f32[1,3,3,4] convolution(x, w), window={size=2x2}, dim_labels=b01f_01io->b01f, batch_group_count=2
}""",
], ids=["f16", "depthwise", "batch groups"])
def test_what_is_left_alone(text):
    _, changed = run_pass(ConvolutionIm2Col(), text)
    assert not changed


def test_an_im2col_matrix_over_the_limit_is_left_alone():
    # 9 rows x 8 columns x 4 bytes = 288 bytes
    assert not run_pass(ConvolutionIm2Col(max_bytes=287), SMALL)[1]
    assert run_pass(ConvolutionIm2Col(max_bytes=288), SMALL)[1]


def test_the_gpu_runs_a_convolution_as_one_kernel_and_a_gemm():
    from xla.backends.gpu.gemm import GemmThunk
    text = _module("f32[2,12,12,8]", "f32[3,3,8,16]", "size=3x3 pad=1_1x1_1", "b01f_01io->b01f",
                   1, "f32[2,12,12,16]")
    exe = xla.compile(text, "gpu_emulator")
    assert [type(t).__name__ for t in exe.thunks] == ["KernelThunk", "GemmThunk"]
    assert isinstance(exe.thunks[1], GemmThunk) and (exe.thunks[1].m, exe.thunks[1].k,
                                                     exe.thunks[1].n) == (288, 72, 16)
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 12, 12, 8)).astype(np.float32)
    w = rng.standard_normal((3, 3, 8, 16)).astype(np.float32)
    want = xla.compile(text, "interpreter").execute(x, w)
    np.testing.assert_allclose(exe.execute(x, w), want, rtol=1e-4, atol=1e-4)


def test_accepts_decides_and_applies_ignores_the_types():
    from xla.hlo.parser import parse_hlo_module
    from xla.hlo.types import PrimitiveType
    from xla.service.convolution_im2col import applies
    seen = []
    refuse = ConvolutionIm2Col(accepts=lambda conv: seen.append(conv.name) or False)
    module, changed = run_pass(refuse, SMALL)
    assert not changed and "convolution" in opcodes(module) and seen == ["c"]
    bf16 = SMALL.replace("f32", "bf16")
    assert not run_pass(ConvolutionIm2Col(), bf16)[1]   # the pass itself: f32/f64 only
    conv = parse_hlo_module(bf16).entry.root_instruction
    # 9 rows x 8 columns: 144 bytes at bf16, 288 at f32
    assert applies(conv, max_bytes=144) and not applies(conv, max_bytes=287,
                                                          element_type=PrimitiveType.F32)


def test_native_s8_products_keep_the_operand_type():
    s8 = SMALL.replace("f32[1,4,4,2]", "s8[1,4,4,2]").replace("f32[2,2,2,3]", "s8[2,2,2,3]") \
        .replace("f32[1,3,3,3]", "s32[1,3,3,3]")
    assert not run_pass(ConvolutionIm2Col(), s8)[1]   # without native: left alone
    module, changed = run_pass(ConvolutionIm2Col(native=(("s8", "s32"),)), s8)
    assert changed and "convolution" not in opcodes(module)
    types = {i.opcode: (i.shape.element_type.text, tuple(o.shape.element_type.text
                                                         for o in i.operands))
             for i in module.entry.instructions if i.opcode in ("slice", "concatenate", "dot")}
    assert types["slice"][0] == types["concatenate"][0] == "s8"
    assert types["dot"] == ("s32", ("s8", "s8"))
    rng = np.random.default_rng(0)
    x = rng.integers(-128, 128, (1, 4, 4, 2)).astype(np.int8)
    w = rng.integers(-128, 128, (2, 2, 2, 3)).astype(np.int8)
    want = np.asarray(xla.compile(s8, "interpreter").execute(x, w))
    got = np.asarray(xla.compile(module.to_text(), "interpreter").execute(x, w))
    np.testing.assert_array_equal(got, want)
    # s8 -> s8 (the product's type differs): not native
    assert not run_pass(ConvolutionIm2Col(native=(("s8", "s32"),)),
                        s8.replace("s32[1,3,3,3]", "s8[1,3,3,3]"))[1]
