"""DotTypeWidening: narrow float and integer dots computed in f32/f64/s32.

Expected values are NumPy's: integer sums in int64 reduced modulo 2^bits
of the result type (XLA's wraparound), float sums in float64 rounded once.
"""
import ml_dtypes
import numpy as np
import pytest

from pass_test_util import run_pass

import xla
from xla.hlo.parser import parse_hlo_module
from xla.service.dot_type_widening import DotTypeWidening

NP = {"s8": np.int8, "u8": np.uint8, "s16": np.int16, "u16": np.uint16, "s32": np.int32,
      "u32": np.uint32, "bf16": ml_dtypes.bfloat16, "f16": np.float16, "f32": np.float32,
      "f8e4m3fn": ml_dtypes.float8_e4m3fn}


def dot_module(lt, rt, ot, m, k, n):
    return (f"HloModule m\n\nENTRY e {{\n  a = {lt}[{m},{k}] parameter(0)\n"
            f"  b = {rt}[{k},{n}] parameter(1)\n"
            f"  ROOT d = {ot}[{m},{n}] dot(a, b), lhs_contracting_dims={{1}}, "
            f"rhs_contracting_dims={{0}}\n}}\n")


def dot_types(module):
    return [(i.shape.element_type.text, tuple(o.shape.element_type.text for o in i.operands))
            for i in module.all_instructions() if i.opcode == "dot"]


def extreme_ints(dtype, shape, rng):
    """Random values of ``dtype`` with its minimum and maximum over-represented."""
    info = np.iinfo(dtype)
    x = rng.integers(info.min, int(info.max) + 1, shape, dtype=np.int64)
    x.flat[::3] = info.min
    x.flat[1::5] = info.max
    return x.astype(dtype)


def wrapped(x, dtype):
    """int64 ``x`` modulo 2^bits of integer ``dtype``, as ``dtype``."""
    bits = np.iinfo(dtype).bits
    return (x.astype(np.uint64) & np.uint64(2 ** bits - 1)).astype(
        np.dtype(f"u{bits // 8}")).view(dtype)


@pytest.mark.parametrize("lt,rt,ot,k,wide", [
    ("s8", "s8", "s32", 1024, "f32"),    # 1024 * 2^14 = 2^24: exact in f32
    ("s8", "s8", "s32", 1025, "f64"),
    ("u8", "s8", "s32", 600, "f64"),     # 600 * 255 * 128 > 2^24
    ("s8", "s8", "s8", 64, "f32"),       # the sums wrap in the s8 result
    ("u8", "u8", "u8", 40, "f32"),
    ("s16", "s16", "s32", 33, "s32"),    # 33 * 2^30 >= 2^31: wraps in s32
    ("s32", "s32", "s32", 17, None),     # already s32: left alone
    ("u32", "u32", "u32", 9, "s32"),
    ("s8", "s8", "s16", 2, "f32"),
])
def test_integer_dots_are_exact_on_the_cpu(lt, rt, ot, k, wide):
    text = dot_module(lt, rt, ot, 5, k, 3)
    module, changed = run_pass(DotTypeWidening(), text)
    assert changed is (wide is not None)
    if wide is not None:
        assert dot_types(module) == [(wide, (wide, wide))]
    rng = np.random.default_rng(k)
    a, b = extreme_ints(NP[lt], (5, k), rng), extreme_ints(NP[rt], (k, 3), rng)
    expected = wrapped(a.astype(np.int64) @ b.astype(np.int64), NP[ot])
    for backend in ("cpu", "interpreter"):
        out = np.asarray(xla.compile(parse_hlo_module(text), backend).execute(a, b))
        assert out.dtype == NP[ot]
        np.testing.assert_array_equal(out, expected, err_msg=backend)


def test_s32_dot_wraps_in_the_runtime_gemm():
    # Large enough for the Eigen GEMM with threads; sums far beyond 2^31.
    text = dot_module("s32", "s32", "s32", 70, 80, 90)
    rng = np.random.default_rng(1)
    a, b = extreme_ints(np.int32, (70, 80), rng), extreme_ints(np.int32, (80, 90), rng)
    out = np.asarray(xla.compile(parse_hlo_module(text), "cpu").execute(a, b))
    np.testing.assert_array_equal(out, wrapped(a.astype(np.int64) @ b.astype(np.int64), np.int32))


@pytest.mark.parametrize("lt,rt,ot", [("bf16", "bf16", "bf16"), ("f16", "f16", "f16"),
                                      ("bf16", "bf16", "f32"), ("f8e4m3fn", "f8e4m3fn", "bf16"),
                                      ("f16", "f32", "f32")])
def test_narrow_float_dots_run_in_f32(lt, rt, ot):
    text = dot_module(lt, rt, ot, 6, 200, 7)
    module, changed = run_pass(DotTypeWidening(), text)
    assert changed and dot_types(module) == [("f32", ("f32", "f32"))]
    rng = np.random.default_rng(2)
    a = rng.uniform(-2, 2, (6, 200)).astype(NP[lt])
    b = rng.uniform(-2, 2, (200, 7)).astype(NP[rt])
    exact = a.astype(np.float64) @ b.astype(np.float64)
    out = np.asarray(xla.compile(parse_hlo_module(text), "cpu").execute(a, b))
    assert out.dtype == NP[ot]
    # f32 sums of exact products, rounded once to the result type: within
    # one unit in the last place of the result (accumulating in a 16-bit
    # type would be off by far more over 200 terms).
    eps = float(ml_dtypes.finfo(NP[ot]).eps)
    np.testing.assert_allclose(out.astype(np.float64), exact, rtol=eps, atol=1e-4)


def test_f32_f64_and_mixed_kinds_are_left_alone():
    for lt, rt, ot in (("f32", "f32", "f32"), ("f64", "f64", "f64"), ("s8", "s8", "f32"),
                       ("s64", "s64", "s64"), ("bf16", "bf16", "f64")):
        _, changed = run_pass(DotTypeWidening(), dot_module(lt, rt, ot, 2, 3, 4))
        assert changed is False, (lt, rt, ot)


def test_cpu_pipeline_widens_before_layout_assignment():
    from xla.backends.cpu.pipeline import cpu_pipeline
    names = [p.name for p in cpu_pipeline().passes]
    # the convolutions' widening and im2col between them (test_convolution_type_widening.py)
    between = names[names.index("dot-type-widening") + 1:names.index("layout-assignment")]
    assert between == ["convolution-type-widening", "convolution-im2col"]


NATIVE = (("s8", "s32"), ("bf16", "f32"))


@pytest.mark.parametrize("lt,rt,ot,after", [
    ("s8", "s8", "s32", None),                     # already the native form: left alone
    ("s8", "s8", "s8", ("s32", ("s8", "s8"))),     # the s32 dot's low bits
    ("s8", "s8", "u16", ("s32", ("s8", "s8"))),
    ("bf16", "bf16", "bf16", ("f32", ("bf16", "bf16"))),  # the f32 sum rounded once
    ("bf16", "bf16", "f32", None),
    ("bf16", "bf16", "f16", ("f32", ("bf16", "bf16"))),
    ("u8", "u8", "s32", ("f32", ("f32", "f32"))),  # not native: widened as before
    ("s8", "u8", "s32", ("f32", ("f32", "f32"))),
    ("f16", "f16", "f16", ("f32", ("f32", "f32"))),
])
def test_native_dots_keep_their_operands(lt, rt, ot, after):
    module, changed = run_pass(DotTypeWidening(native=NATIVE), dot_module(lt, rt, ot, 2, 3, 4))
    assert changed is (after is not None)
    assert dot_types(module) == [after or (ot, (lt, rt))]
    if after is not None and after[1] == (lt, rt):
        root = module.entry.root_instruction
        assert root.opcode == "convert" and root.shape.element_type.text == ot
        assert root.operands[0].opcode == "dot"


def test_native_dot_hlo_before_and_after():
    module, changed = run_pass(DotTypeWidening(native=NATIVE), dot_module("bf16", "bf16", "bf16",
                                                                          2, 3, 4))
    assert changed
    assert module.to_text() == """HloModule m

ENTRY e {
  a = bf16[2,3] parameter(0)
  b = bf16[3,4] parameter(1)
  dot.1 = f32[2,4]{1,0} dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT convert.2 = bf16[2,4]{1,0} convert(dot.1)
}
"""


def test_cpu_pipeline_leaves_s8_and_bf16_dots_native():
    from xla.backends.cpu.pipeline import cpu_pipeline
    widening = [p for p in cpu_pipeline().passes if p.name == "dot-type-widening"]
    assert len(widening) == 1 and widening[0].native == dict(NATIVE)
