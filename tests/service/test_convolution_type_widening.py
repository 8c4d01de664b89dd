"""ConvolutionTypeWidening: narrow float and integer convolutions computed
in f32/f64/s32 between converts.

Expected values are NumPy's: integer sums in int64 reduced modulo 2^bits of
the result type (XLA's wraparound), float sums in float64.
"""
import ml_dtypes
import numpy as np
import pytest

from pass_test_util import run_pass

import xla
from xla.hlo.parser import parse_hlo_module
from xla.service.convolution_type_widening import ConvolutionTypeWidening

NP = {"s8": np.int8, "u8": np.uint8, "s16": np.int16, "s32": np.int32, "u32": np.uint32,
      "bf16": ml_dtypes.bfloat16, "f16": np.float16, "f32": np.float32, "f64": np.float64}


def conv_module(lt, rt, ot, n=2, hw=5, c=4, o=3, k=3, labels="b01f_01io->b01f"):
    """An NHWC x HWIO convolution, no padding."""
    out = hw - k + 1
    return (f"HloModule m\n\nENTRY e {{\n  x = {lt}[{n},{hw},{hw},{c}] parameter(0)\n"
            f"  w = {rt}[{k},{k},{c},{o}] parameter(1)\n"
            f"  ROOT y = {ot}[{n},{out},{out},{o}] convolution(x, w), window={{size={k}x{k}}}, "
            f"dim_labels={labels}\n}}\n")


def conv_types(module):
    return [(i.shape.element_type.text, tuple(o.shape.element_type.text for o in i.operands))
            for i in module.all_instructions() if i.opcode == "convolution"]


def reference(x, w):
    """NHWC x HWIO, no padding, in int64 or float64."""
    wide = np.int64 if x.dtype.kind in "iu" else np.float64
    x, w = x.astype(wide), w.astype(wide)
    k = w.shape[0]
    out = x.shape[1] - k + 1
    y = np.zeros((x.shape[0], out, out, w.shape[3]), wide)
    for i in range(k):
        for j in range(k):
            y += np.einsum("nhwc,co->nhwo", x[:, i:i + out, j:j + out, :], w[i, j])
    return y


def wrapped(x, dtype):
    bits = np.iinfo(dtype).bits
    return (x.astype(np.uint64) & np.uint64(2 ** bits - 1)).astype(
        np.dtype(f"u{bits // 8}")).view(dtype)


@pytest.mark.parametrize("lt,rt,ot,c,k,wide", [
    ("bf16", "bf16", "bf16", 4, 3, "f32"),
    ("f16", "f16", "f32", 4, 3, "f32"),
    ("bf16", "f32", "f32", 4, 3, "f32"),
    ("s8", "s8", "s32", 113, 3, "f32"),   # 1017 terms of at most 2^14: below 2^24
    ("s8", "s8", "s32", 114, 3, "f64"),   # 1026 terms: past 2^24
    ("s8", "s8", "s8", 4, 3, "f32"),      # wraps in the s8 result
    ("s16", "s16", "s32", 4, 3, "s32"),   # 36 terms of 2^30: wraps in s32
    ("f32", "f32", "f32", 4, 3, None),
    ("f64", "f64", "f64", 4, 3, None),
    ("s32", "s32", "s32", 4, 3, None),
    ("bf16", "bf16", "f64", 4, 3, None),
])
def test_types(lt, rt, ot, c, k, wide):
    module, changed = run_pass(ConvolutionTypeWidening(), conv_module(lt, rt, ot, c=c, k=k))
    assert changed is (wide is not None)
    assert conv_types(module) == [(wide, (wide, wide)) if wide else (ot, (lt, rt))]
    assert module.entry.root_instruction.shape.element_type.text == ot


def test_contraction_length_is_the_kernels_input_features_and_window():
    # A kernel gradient's form: the "kernel" is the output gradient, its
    # input feature dimension the batch (130 images of a 3x3 window: 1170
    # terms, past 2^24 for s8 in f32).
    text = ("HloModule m\n\nENTRY e {\n  x = s8[130,5,5,2] parameter(0)\n"
            "  g = s8[130,3,3,2] parameter(1)\n"
            "  ROOT y = s32[3,3,2,2] convolution(x, g), window={size=3x3}, "
            "dim_labels=f01b_i01o->01bf\n}\n")
    module, changed = run_pass(ConvolutionTypeWidening(), text)
    assert changed and conv_types(module) == [("f64", ("f64", "f64"))]
    text = text.replace("130", "110")   # 990 terms
    module, changed = run_pass(ConvolutionTypeWidening(), text)
    assert changed and conv_types(module) == [("f32", ("f32", "f32"))]


def test_accepts_decides():
    seen = []

    def accepts(instr, wide):
        seen.append((instr.opcode, wide.text))
        return False
    module, changed = run_pass(ConvolutionTypeWidening(accepts=accepts),
                               conv_module("bf16", "bf16", "bf16"))
    assert not changed and conv_types(module) == [("bf16", ("bf16", "bf16"))]
    assert seen == [("convolution", "f32")]


def test_hlo_before_and_after():
    module, changed = run_pass(ConvolutionTypeWidening(), conv_module("s8", "s8", "s8", n=1,
                                                                     hw=3, c=2, o=2, k=2))
    assert changed
    assert module.to_text() == """HloModule m

ENTRY e {
  x = s8[1,3,3,2] parameter(0)
  w = s8[2,2,2,2] parameter(1)
  convert.1 = f32[1,3,3,2]{3,2,1,0} convert(x)
  convert.2 = f32[2,2,2,2]{3,2,1,0} convert(w)
  convolution.3 = f32[1,2,2,2]{3,2,1,0} convolution(convert.1, convert.2), window={size=2x2}, dim_labels=b01f_01io->b01f
  convert.4 = s32[1,2,2,2]{3,2,1,0} convert(convolution.3)
  ROOT convert.5 = s8[1,2,2,2]{3,2,1,0} convert(convert.4)
}
"""


@pytest.mark.parametrize("lt,ot,c", [("s8", "s8", 4), ("s8", "s32", 114), ("u8", "s32", 40),
                                     ("s16", "s32", 4)])
def test_integer_convolutions_are_exact_on_the_cpu(lt, ot, c):
    text = conv_module(lt, lt, ot, c=c)
    rng = np.random.default_rng(c)
    info = np.iinfo(NP[lt])
    x = rng.integers(info.min, int(info.max) + 1, (2, 5, 5, c)).astype(NP[lt])
    w = rng.integers(info.min, int(info.max) + 1, (3, 3, c, 3)).astype(NP[lt])
    x.flat[::2], w.flat[::2] = info.min, info.min   # the largest partial sums
    expected = wrapped(reference(x, w), NP[ot])
    for backend in ("cpu", "interpreter"):
        out = np.asarray(xla.compile(parse_hlo_module(text), backend).execute(x, w))
        assert out.dtype == NP[ot]
        np.testing.assert_array_equal(out, expected, err_msg=backend)


def test_cpu_pipeline_widens_convolutions_its_runtime_takes():
    from xla.backends.cpu.pipeline import cpu_pipeline
    names = [p.name for p in cpu_pipeline().passes]
    assert names.index("dot-type-widening") < names.index("convolution-type-widening") \
        < names.index("convolution-im2col") < names.index("layout-assignment")
    bf16 = conv_module("bf16", "bf16", "bf16")
    three_d = ("HloModule m\n\nENTRY e {\n  x = bf16[1,4,4,4,2] parameter(0)\n"
               "  w = bf16[2,2,2,2,3] parameter(1)\n"
               "  ROOT y = bf16[1,3,3,3,3] convolution(x, w), window={size=2x2x2}, "
               "dim_labels=b012f_012io->b012f\n}\n")
    grouped_batch = ("HloModule m\n\nENTRY e {\n  x = bf16[4,5,5,2] parameter(0)\n"
                     "  w = bf16[3,3,2,4] parameter(1)\n"
                     "  ROOT y = bf16[2,3,3,4] convolution(x, w), window={size=3x3}, "
                     "dim_labels=b01f_01io->b01f, batch_group_count=2\n}\n")
    # (module, the runtime's conv2d call, the convolutions left, the dots' type)
    for text, runtime, convs, dots in ((bf16, True, {"f32"}, set()),
                                       (three_d, False, set(), {"f32"}),   # im2col: a GEMM
                                       # one convolution per batch group, widened
                                       (grouped_batch, True, {"f32"}, set())):
        exe = xla.compile(parse_hlo_module(text), "cpu")
        assert ('__xla_cpu_conv2d_f32' in exe.ir_text) is runtime
        want = xla.compile(parse_hlo_module(text), "interpreter")
        args = [np.asarray(np.random.default_rng(0).standard_normal(p.shape.dimensions),
                           ml_dtypes.bfloat16) for p in exe.module.entry.parameters]
        np.testing.assert_allclose(np.asarray(exe.execute(*args), np.float64),
                                   np.asarray(want.execute(*args), np.float64), rtol=1e-2,
                                   atol=1e-2)
        assert {t for t, _ in conv_types(exe.module)} == convs
        assert {i.shape.element_type.text for i in exe.module.all_instructions()
                if i.opcode == "dot"} == dots
