"""Tests of the HLO text printer (xla/hlo/printer.py)."""
import ml_dtypes
import numpy as np
import pytest

from xla.hlo.attributes import (ConvDimensionNumbers, PaddingDim, RawAttr, SliceDim, Window,
                                WindowDimension)
from xla.hlo.ir import HloComputation, HloInstruction, HloModule
from xla.hlo.parser import parse_hlo_module, parse_literal, parse_shape
from xla.hlo.printer import (computation_to_text, format_float, instruction_to_text,
                             literal_to_text, module_to_text, shape_to_text)
from xla.hlo.shape import Shape
from xla.hlo.types import PrimitiveType as PT

from test_parser import ATTRS_MODULE, JAX_STYLE, NEW_XLA_STYLE, XLA_STYLE


# ----- floats and literals ----------------------------------------------------------
@pytest.mark.parametrize("value, et, text", [
    (0.5, PT.F32, "0.5"),
    (1e-05, PT.F32, "1e-05"),
    (0.1, PT.F32, "0.1"),
    (np.pi, PT.F32, "3.14159274"),
    (1 / 3, PT.F32, "0.333333343"),
    (1e6, PT.F32, "1e+06"),
    (123456, PT.F32, "123456"),
    (-0.0, PT.F32, "-0"),
    (float("inf"), PT.F32, "inf"),
    (float("-inf"), PT.F64, "-inf"),
    (float("nan"), PT.F32, "nan"),
    (-float("nan"), PT.F32, "-nan"),
    (3.4028234663852886e38, PT.F32, "3.40282347e+38"),
    (0.1, PT.F64, "0.1"),
    (1 / 3, PT.F64, "0.33333333333333331"),
    (500, PT.F16, "500"),
    (0.1, PT.BF16, "0.1001"),
    (1.0, PT.BF16, "1"),
    (448, PT.F8E4M3FN, "448"),
])
def test_float_format(value, et, text):
    assert format_float(et.dtype.type(value), et) == text


def lit(text, shape):
    return literal_to_text(parse_literal(text, shape), parse_shape(shape))


@pytest.mark.parametrize("text, shape", [
    ("42", "s32[]"),
    ("-128", "s8[]"),
    ("18446744073709551615", "u64[]"),
    ("-9223372036854775808", "s64[]"),
    ("true", "pred[]"),
    ("false", "pred[]"),
    ("0.5", "f32[]"),
    ("-nan", "f32[]"),
    ("(1, -2.5)", "c64[]"),
    ("{1, 2, 3}", "s32[3]"),
    ("{}", "f32[0]"),
    ("{1, 0, 1}", "pred[3]"),
    ("{ { 0, 1, 0 }, { 1, 0, 1 } }", "pred[2,3]"),
    ("{ { 1, 2 }, { 3, 4 } }", "f32[2,2]"),
    ("{ {1}, {2} }", "f32[2,1]"),
    ("{ { { 1, -2, 1 } } }", "f32[1,1,3]"),
    ("{ { /*i0=0*/ { /*i1=0*/ {1}, {2} }, { /*i1=1*/ {3}, {4} } } }", "f32[1,2,2,1]"),
    ("{ { /*i0=0*/  }, { /*i0=1*/  } }", "f32[2,0,4,3]"),
    ("{  }", "f32[0,3]"),
    ("{ {}, {} }", "f32[2,0]"),
    ("{(1, 2), (3, 4)}", "c128[2]"),
    ("( { {1}, {2} }, {2, 42} )", "(f32[2,1], f32[2])"),
    ("( 1, ( true, {1, 2} ) )", "(s32[], (pred[], u8[2]))"),
    ("{nan, 7, -nan, -1, inf, -inf}", "f32[6]"),
    ("{0.1001, 500}", "bf16[2]"),
    ("{...}", "f32[100,100]"),
])
def test_literal_text_round_trips(text, shape):
    assert lit(text, shape) == text


def test_literal_from_numpy_values():
    assert literal_to_text(np.arange(6, dtype=np.int32).reshape(2, 3), parse_shape("s32[2,3]")) \
        == "{ { 0, 1, 2 }, { 3, 4, 5 } }"
    assert literal_to_text(np.float32(2.5), parse_shape("f32[]")) == "2.5"
    assert literal_to_text(np.array([True, False]), parse_shape("pred[2]")) == "{1, 0}"
    assert literal_to_text(None, parse_shape("f32[4]")) == "{...}"


@pytest.mark.parametrize("dtype, et", [
    (np.float32, PT.F32), (np.float64, PT.F64), (np.float16, PT.F16),
    (ml_dtypes.bfloat16, PT.BF16), (ml_dtypes.float8_e4m3fn, PT.F8E4M3FN),
    (ml_dtypes.float8_e5m2, PT.F8E5M2),
])
def test_every_float_value_round_trips_bit_exactly(dtype, et):
    rng = np.random.default_rng(0)
    bits = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[np.dtype(dtype).itemsize]
    raw = rng.integers(0, np.iinfo(bits).max, size=2000, dtype=bits, endpoint=True)
    values = raw.view(dtype)
    with np.errstate(invalid="ignore"):
        values = values[~np.isnan(values.astype(np.float64))]  # NaN payloads are not kept
    shape = Shape.array(et, values.shape)
    back = parse_literal(literal_to_text(values, shape), shape)
    np.testing.assert_array_equal(back.view(bits), values.view(bits))


def test_integer_extremes_round_trip():
    for et in (PT.S8, PT.S16, PT.S32, PT.S64, PT.U8, PT.U16, PT.U32, PT.U64):
        info = np.iinfo(et.dtype)
        arr = np.array([info.min, info.max, 0], dtype=et.dtype)
        shape = Shape.array(et, (3,))
        np.testing.assert_array_equal(parse_literal(literal_to_text(arr, shape), shape), arr)


# ----- shapes and attributes ---------------------------------------------------------
def test_tuple_shapes_get_index_comments():
    shape = Shape.tuple([Shape.scalar(PT.F32)] * 7)
    assert shape_to_text(shape) == "(f32[], f32[], f32[], f32[], f32[], /*index=5*/f32[], f32[])"
    assert shape_to_text(shape, index_comments=False) == "(" + ", ".join(["f32[]"] * 7) + ")"
    assert shape_to_text(parse_shape("f32[2,3]{1,0}"), print_layout=False) == "f32[2,3]"


def build_module():
    """A module built in code (no source style): prints in XLA's default style."""
    f32 = Shape.scalar(PT.F32)
    vec = Shape.array(PT.F32, (4,))
    a = HloInstruction.create_parameter(0, f32, name="a")
    b = HloInstruction.create_parameter(1, f32, name="b")
    s = HloInstruction("add", f32, [a, b], name="sum")
    add = HloComputation("add_f32", [a, b, s])
    x = HloInstruction.create_parameter(0, vec, name="x")
    zero = HloInstruction.create_constant(np.float32(0), name="zero")
    c = HloInstruction.create_constant(np.array([1, 2.5, -np.inf, 1e-05], np.float32), name="c")
    m = HloInstruction("multiply", vec, [x, c], name="m")
    r = HloInstruction("reduce", f32, [m, zero], name="r",
                       attrs={"dimensions": (0,), "to_apply": add})
    sl = HloInstruction("slice", Shape.array(PT.F32, (2,)), [m], name="sl",
                        attrs={"slice": (SliceDim(0, 4, 2),)})
    pad = HloInstruction("pad", Shape.array(PT.F32, (7,)), [m, zero], name="pad",
                         attrs={"padding": (PaddingDim(1, 2),)})
    t = HloInstruction("tuple", Shape.tuple([f32, Shape.array(PT.F32, (2,)), Shape.array(PT.F32, (7,))]),
                       [r, sl, pad], name="t",
                       attrs={"control-predecessors": (zero,), "metadata": RawAttr('{op_name="t"}')})
    main = HloComputation("main", [x, zero, c, m, r, sl, pad, t], is_entry=True)
    module = HloModule("built", [add, main])
    module.header_attrs["entry_computation_layout"] = RawAttr("{(f32[4]{0})->(f32[], f32[2]{0}, f32[7]{0})}")
    return module


BUILT_TEXT = """\
HloModule built, entry_computation_layout={(f32[4]{0})->(f32[], f32[2]{0}, f32[7]{0})}

%add_f32 (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %sum = f32[] add(%a, %b)
}

ENTRY %main (x: f32[4]) -> (f32[], f32[2], f32[7]) {
  %x = f32[4]{0} parameter(0)
  %zero = f32[] constant(0)
  %c = f32[4]{0} constant({1, 2.5, -inf, 1e-05})
  %m = f32[4]{0} multiply(%x, %c)
  %r = f32[] reduce(%m, %zero), dimensions={0}, to_apply=%add_f32
  %sl = f32[2]{0} slice(%m), slice={[0:4:2]}
  %pad = f32[7]{0} pad(%m, %zero), padding=1_2
  ROOT %t = (f32[], f32[2]{0}, f32[7]{0}) tuple(%r, %sl, %pad), control-predecessors={%zero}, metadata={op_name="t"}
}

"""


def test_module_built_in_code_prints_in_xla_default_style():
    module = build_module()
    assert module.print_options == {}
    assert module_to_text(module) == BUILT_TEXT
    assert str(module) == BUILT_TEXT
    reparsed = parse_hlo_module(BUILT_TEXT)
    assert module_to_text(reparsed) == BUILT_TEXT


def test_instruction_and_computation_text():
    module = build_module()
    main = module.entry
    assert instruction_to_text(main.instruction("r")) == \
        "%r = f32[] reduce(%m, %zero), dimensions={0}, to_apply=%add_f32"
    assert str(main.instruction("zero")) == "%zero = f32[] constant(0)"
    assert main.instruction("x").to_text() == "%x = f32[4]{0} parameter(0)"
    assert computation_to_text(module.computation("add_f32")).startswith("%add_f32 (a: f32[], b: f32[]) -> f32[] {\n")
    jax = parse_hlo_module(JAX_STYLE)
    assert str(jax.entry.instruction("sine.3")).startswith("sine.3 = f32[4]{0} sine(Arg_0.1), metadata=")


def test_typed_attributes_print_in_xla_form():
    window = Window([WindowDimension(3, 2, 1, 1, 1, 2), WindowDimension(1)])
    dnums = ConvDimensionNumbers(0, 3, (1, 2), 2, 3, (0, 1), 0, 3, (1, 2))
    p = HloInstruction.create_parameter(0, parse_shape("f32[1,4,4,1]{3,2,1,0}"), name="p")
    k = HloInstruction.create_parameter(1, parse_shape("f32[3,3,1,1]{3,2,1,0}"), name="k")
    conv = HloInstruction("convolution", parse_shape("f32[1,2,4,1]{3,2,1,0}"), [p, k], name="conv",
                          attrs={"window": window, "dim_labels": dnums, "feature_group_count": 1,
                                 "custom_call_target": 'say "hi"\n', "is_stable": False,
                                 "lhs_ragged_dims": ()})
    text = instruction_to_text(conv)
    assert ("window={size=3x1 stride=2x1 pad=1_1x0_0 lhs_dilate=2x1}, dim_labels=b01f_01io->b01f, "
            "feature_group_count=1, custom_call_target=\"say \\\"hi\\\"\\n\", is_stable=false, "
            "lhs_ragged_dims={}") in text


def test_long_operand_lists_get_index_comments():
    p = HloInstruction.create_parameter(0, Shape.scalar(PT.F32), name="p")
    t = HloInstruction("tuple", Shape.tuple([Shape.scalar(PT.F32)] * 6), [p] * 6, name="t")
    assert instruction_to_text(t) == ("%t = (f32[], f32[], f32[], f32[], f32[], /*index=5*/f32[]) tuple("
                                      "%p, %p, %p, %p, %p, /*index=5*/%p)")


# ----- style preservation and fixed points ----------------------------------------------
@pytest.mark.parametrize("text", [JAX_STYLE, XLA_STYLE, NEW_XLA_STYLE], ids=["jax", "xla", "new_xla"])
def test_source_style_is_reproduced_exactly(text):
    assert module_to_text(parse_hlo_module(text)) == text


def test_style_can_be_switched_to_xla_default():
    module = parse_hlo_module(JAX_STYLE)
    module.print_options = {}
    text = module_to_text(module)
    assert "ENTRY %main.10 (Arg_0.1: f32[4], Arg_1.2: f32[]) -> f32[4] {" in text
    assert "ROOT %multiply.11 = f32[4]{0} multiply(%broadcast.10, %Arg_1.2)" in text
    assert "// main.10" not in text
    again = parse_hlo_module(text)
    assert module_to_text(again) == text
    assert [i.name for i in again.entry.instructions] == [i.name for i in module.entry.instructions]


NON_CANONICAL = """\
HloModule m
c {
  p = f32[3,4] parameter(0)
  s = f32[2,4] slice(p), slice={[0:2:1], [0:4:1]}
  q = f32[5,4] pad(s, s), padding=1_2_0x0_0_0
  z = f32[] constant(1.000)
  w = f32[2,2] constant({{1,2},{3,4}})
  ROOT t = (f32[5,4], f32[], f32[2,2], f32[2,4], f32[3,4], f32[], f32[]) tuple(q, z, w, s, p, z, z)
}
"""


@pytest.mark.parametrize("text", [JAX_STYLE, XLA_STYLE, NEW_XLA_STYLE, ATTRS_MODULE, NON_CANONICAL,
                                  BUILT_TEXT])
def test_print_parse_print_is_a_fixed_point(text):
    once = module_to_text(parse_hlo_module(text))
    twice = module_to_text(parse_hlo_module(once))
    assert once == twice


def test_non_canonical_input_is_canonicalized():
    text = module_to_text(parse_hlo_module(NON_CANONICAL))
    assert "slice={[0:2], [0:4]}" in text
    assert "padding=1_2x0_0" in text
    assert "z = f32[] constant(1)" in text
    assert "w = f32[2,2] constant({ { 1, 2 }, { 3, 4 } })" in text
    assert "ROOT t = (f32[5,4], f32[], f32[2,2], f32[2,4], f32[3,4], /*index=5*/f32[], f32[]) " \
           "tuple(q, z, w, s, p, /*index=5*/z, z)" not in text  # source had no index comments
    assert "tuple(q, z, w, s, p, z, z)" in text
