"""Tests of the HLO text parser (xla/hlo/parser.py).

Inputs are written in the two styles XLA produces: the unoptimized text JAX
hands to XLA (no '%', bare operands, ``} // name``) and XLA:CPU's optimized
dumps ('%' names, operands with shapes, signatures, stack-frame tables).
"""
import math
import random
import re
import sys

import ml_dtypes
import numpy as np
import pytest

from xla.errors import HloParseError
from xla.hlo.attributes import (ConvDimensionNumbers, PaddingDim, RawAttr, SliceDim, Window)
from xla.hlo.parser import parse_hlo_module, parse_literal, parse_shape
from xla.hlo.printer import module_to_text
from xla.hlo.shape import Layout, Shape
from xla.hlo.types import PrimitiveType

JAX_STYLE = """\
HloModule jit_f, entry_computation_layout={(f32[4]{0}, f32[])->f32[4]{0}}

region_0.4 {
  Arg_0.5 = f32[] parameter(0)
  Arg_1.6 = f32[] parameter(1)
  ROOT add.7 = f32[] add(Arg_0.5, Arg_1.6), metadata={op_name="jit(f)/jit(main)/reduce_sum" source_file="/tmp/f.py" source_line=7}
} // region_0.4

ENTRY main.10 {
  Arg_0.1 = f32[4]{0} parameter(0)
  Arg_1.2 = f32[] parameter(1)
  sine.3 = f32[4]{0} sine(Arg_0.1), metadata={op_name="jit(f)/jit(main)/sin" source_file="/tmp/f.py" source_line=5}
  constant.8 = f32[] constant(0)
  reduce.9 = f32[] reduce(sine.3, constant.8), dimensions={0}, to_apply=region_0.4
  broadcast.10 = f32[4]{0} broadcast(reduce.9), dimensions={}
  ROOT multiply.11 = f32[4]{0} multiply(broadcast.10, Arg_1.2)
} // main.10

"""

XLA_STYLE = """\
HloModule jit_f, is_scheduled=true, entry_computation_layout={(f32[8,128]{1,0}, s32[])->(f32[8,128]{1,0}, f32[])}, allow_spmd_sharding_propagation_to_output={true}, input_output_alias={ {0}: (0, {}, may-alias) }, num_partitions=1

FileNames
1 "/tmp/f.py"

FunctionNames
1 "<module>"
2 "f"

FileLocations
1 {file_name_id=1 function_name_id=1 line=10 end_line=10 column=2 end_column=9}

StackFrames
1 {file_location_id=1 parent_frame_id=1}


%fused_computation (param_0.1: f32[8,128], param_1.2: f32[]) -> f32[8,128] {
  %param_0.1 = f32[8,128]{1,0} parameter(0)
  %param_1.2 = f32[] parameter(1)
  %broadcast.3 = f32[8,128]{1,0} broadcast(f32[] %param_1.2), dimensions={}
  ROOT %add.4 = f32[8,128]{1,0} add(f32[8,128]{1,0} %param_0.1, f32[8,128]{1,0} %broadcast.3), metadata={op_name="jit(f)/add" source_file="/tmp/f.py" source_line=3 stack_frame_id=1}
}

%region_0.5 (Arg_0.6: f32[], Arg_1.7: f32[]) -> f32[] {
  %Arg_0.6 = f32[] parameter(0)
  %Arg_1.7 = f32[] parameter(1)
  ROOT %add.8 = f32[] add(f32[] %Arg_0.6, f32[] %Arg_1.7)
}, execution_thread="main"

ENTRY %main.20 (Arg_0.1: f32[8,128], Arg_1.2: s32[]) -> (f32[8,128], f32[]) {
  %Arg_0.1 = f32[8,128]{1,0} parameter(0), sharding={replicated}
  %Arg_1.2 = s32[] parameter(1), sharding={maximal device=0}
  %constant.3 = f32[] constant(0.5)
  %constant.4 = f32[] constant(-inf)
  %fusion = f32[8,128]{1,0} fusion(f32[8,128]{1,0} %Arg_0.1, f32[] %constant.3), kind=kLoop, calls=%fused_computation, backend_config={"outer_dimension_partitions":["2"]}
  %reduce.9 = f32[] reduce(f32[8,128]{1,0} %fusion, f32[] %constant.4), dimensions={0,1}, to_apply=%region_0.5
  %custom-call.1 = f32[8,128]{1,0} custom-call(f32[8,128]{1,0} %fusion), custom_call_target="my_target", api_version=API_VERSION_TYPED_FFI, operand_layout_constraints={f32[8,128]{1,0}}, custom_call_has_side_effect=true, backend_config="opaque \\"text\\""
  %all-reduce = f32[8,128]{1,0} all-reduce(f32[8,128]{1,0} %custom-call.1), channel_id=1, replica_groups=[2,4]<=[8], use_global_device_ids=true, to_apply=%region_0.5, sharding={{replicated}, {manual}}
  %slice.1 = f32[4,64]{1,0} slice(f32[8,128]{1,0} %all-reduce), slice={[0:8:2], [0:64:1]}, control-predecessors={%reduce.9}
  ROOT %tuple.19 = (f32[8,128]{1,0}, f32[]) tuple(f32[8,128]{1,0} %fusion, f32[] %reduce.9), frontend_attributes={_xla_compute_type="host"}
}

"""


# Recent XLA dumps: '%' names but bare operands.
NEW_XLA_STYLE = """\
HloModule jit_f, is_scheduled=true, entry_computation_layout={(f32[2]{0})->f32[2]{0}}, allow_spmd_sharding_propagation_to_parameters={true}, allow_spmd_sharding_propagation_to_output={true}

%fused_computation (param_0.1: f32[2]) -> f32[2] {
  %param_0.1 = f32[2]{0} parameter(0)
  %constant.0 = f32[]{:T(128)} constant(0.693147182)
  %broadcast.0 = f32[2]{0} broadcast(%constant.0), dimensions={}
  %add.0 = f32[2]{0} add(%param_0.1, %broadcast.0), metadata={op_name="jit(f)/add" source_file="/tmp/f.py" source_line=3 source_end_line=3 source_column=19 source_end_column=39}
  ROOT %sin.0 = f32[2]{0} sine(%add.0)
}

ENTRY %main.1 (x.1: f32[2]) -> f32[2] {
  %x.1 = f32[2]{0} parameter(0), metadata={op_name="x"}
  ROOT %add_sine_fusion = f32[2]{0} fusion(%x.1), kind=kLoop, calls=%fused_computation, backend_config=" \\000\\004\\361h"
}

"""

def parse(text):
    return parse_hlo_module(text)


def entry_module(body, params="", result="f32[]", header="HloModule m"):
    """A one-computation module in XLA's dump style around ``body`` lines."""
    lines = "\n".join("  " + line for line in body.strip().splitlines())
    return f"{header}\n\nENTRY %main ({params}) -> {result} {{\n{lines}\n}}\n\n"


def parse_error(text):
    with pytest.raises(HloParseError) as info:
        parse_hlo_module(text, filename="bad.hlo")
    return info.value


# ----- shapes ------------------------------------------------------------------
@pytest.mark.parametrize("text, element_type, dims, dynamic, layout", [
    ("f32[]", PrimitiveType.F32, (), (), None),
    ("f32[]{}", PrimitiveType.F32, (), (), Layout(())),
    ("s32[2,3]", PrimitiveType.S32, (2, 3), (False, False), None),
    ("f32[2,3]{1,0}", PrimitiveType.F32, (2, 3), (False, False), Layout((1, 0))),
    ("bf16[4,8]{0,1}", PrimitiveType.BF16, (4, 8), (False, False), Layout((0, 1))),
    ("f32[<=8,3]{1,0}", PrimitiveType.F32, (8, 3), (True, False), Layout((1, 0))),
    ("f32[?,3]", PrimitiveType.F32, (-1, 3), (True, False), None),
    ("u8[1024]{0:T(1024)(128)(4,1)S(1)}", PrimitiveType.U8, (1024,), (False,), Layout((0,), "T(1024)(128)(4,1)S(1)")),
    ("pred[0]{0}", PrimitiveType.PRED, (0,), (False,), Layout((0,))),
    ("f8e4m3fn[2]", PrimitiveType.F8E4M3FN, (2,), (False,), None),
    ("c64[3]", PrimitiveType.C64, (3,), (False,), None),
])
def test_array_shapes(text, element_type, dims, dynamic, layout):
    shape = parse_shape(text)
    assert shape.element_type is element_type
    assert shape.dimensions == dims
    assert shape.dynamic == dynamic
    assert shape.layout == layout


def test_tiled_layout_kept_verbatim_and_printed_back():
    shape = parse_shape("f32[8,128]{1,0:T(8,128)(2,1)S(1)}")
    assert shape.layout.minor_to_major == (1, 0)
    assert shape.layout.extra == "T(8,128)(2,1)S(1)"
    assert shape.to_text() == "f32[8,128]{1,0:T(8,128)(2,1)S(1)}"


def test_tuple_token_and_nested_shapes():
    shape = parse_shape("(f32[2]{0}, (s32[], token[]), /*index=2*/())")
    assert shape.is_tuple and len(shape.tuple_shapes) == 3
    assert shape.tuple_shapes[1].tuple_shapes[1].is_token
    assert shape.tuple_shapes[2] == Shape.tuple([])
    assert parse_shape("token[]").is_token


@pytest.mark.parametrize("text, message", [
    ("f33[2]", "unknown element type 'f33'"),
    ("f32[2", "expected ',' or ']'"),
    ("f32[2]{0,1}", "layout {0,1} has 2 dimensions but the shape has rank 1"),
    ("f32[2,2]{0,0}", "not a permutation"),
    ("(f32[], s32[]", "expected ',' or ')'"),
    ("f32[x]", "expected a dimension size"),
    ("f32[2] junk", "expected end of the shape"),
    ("token[2]", "token shapes have no dimensions"),
])
def test_bad_shapes(text, message):
    with pytest.raises(HloParseError, match=re.escape(message)):
        parse_shape(text)


# ----- literals ---------------------------------------------------------------
def test_scalar_literals():
    assert parse_literal("42", "s32[]") == np.int32(42)
    assert parse_literal("-42", "s8[]").dtype == np.int8
    assert parse_literal("0.5", "f32[]") == np.float32(0.5)
    assert parse_literal("1e-05", "f32[]") == np.float32(1e-05)
    assert parse_literal("3.14159274", "f32[]") == np.float32(np.pi)
    assert parse_literal("true", "pred[]") == np.True_
    assert parse_literal("false", "pred[]") == np.False_
    assert parse_literal("inf", "f32[]") == np.inf
    assert parse_literal("-inf", "f64[]") == -np.inf
    value = parse_literal("18446744073709551615", "u64[]")
    assert value.dtype == np.uint64 and int(value) == 2**64 - 1
    assert int(parse_literal("-9223372036854775808", "s64[]")) == -2**63
    assert int(parse_literal("0x10", "s32[]")) == 16
    assert parse_literal("0x1.8p1", "f64[]") == 3.0


def test_nan_literals_keep_their_sign():
    nan = parse_literal("nan", "f32[]")
    neg = parse_literal("-nan", "f32[]")
    assert np.isnan(nan) and not np.signbit(nan)
    assert np.isnan(neg) and np.signbit(neg)
    assert np.isnan(parse_literal("nan(0x7fc00001)", "f32[]"))


def test_narrow_float_literals_use_ml_dtypes():
    v = parse_literal("{0.1001, 500, -inf}", "bf16[3]")
    assert v.dtype == ml_dtypes.bfloat16
    assert float(v[0]) == float(ml_dtypes.bfloat16(0.1001)) and float(v[1]) == 500
    assert parse_literal("0.5", "f16[]").dtype == np.float16
    assert parse_literal("{1, 448}", "f8e4m3fn[2]").dtype == ml_dtypes.float8_e4m3fn


def test_complex_literals():
    assert parse_literal("(1, -2)", "c64[]") == np.complex64(1 - 2j)
    v = parse_literal("{(1, 2), (3.5, -inf)}", "c128[2]")
    assert v.dtype == np.complex128 and v[1] == complex(3.5, -math.inf)


def test_array_literals_all_nestings():
    np.testing.assert_array_equal(parse_literal("{1, 2, 3}", "s32[3]"), [1, 2, 3])
    np.testing.assert_array_equal(parse_literal("{ { 1, 2 }, { 3, 4 } }", "s32[2,2]"), [[1, 2], [3, 4]])
    np.testing.assert_array_equal(parse_literal("{ {1, 2}, {3, 4} }", "s32[2,2]"), [[1, 2], [3, 4]])
    np.testing.assert_array_equal(parse_literal("{ { {1} }, { {2} } }", "s32[2,1,1]"), [[[1]], [[2]]])
    rank4 = parse_literal("{ { /*i0=0*/ { /*i1=0*/ { 1, 2 } }, { /*i1=1*/ { 3, 4 } } } }", "f32[1,2,1,2]")
    assert rank4.shape == (1, 2, 1, 2) and rank4[0, 1, 0, 1] == 4


def test_pred_arrays_accept_both_spellings():
    np.testing.assert_array_equal(parse_literal("{ { 0, 1, 0 }, { 1, 0, 1 } }", "pred[2,3]"),
                                  [[False, True, False], [True, False, True]])
    np.testing.assert_array_equal(parse_literal("{true, false}", "pred[2]"), [True, False])


def test_empty_and_tuple_literals():
    empty = parse_literal("{}", "f32[0]")
    assert empty.shape == (0,) and empty.dtype == np.float32
    empty4 = parse_literal("{ { /*i0=0*/ }, { /*i0=1*/ } }", "f32[2,0,4,3]")
    assert empty4.shape == (2, 0, 4, 3)
    tup = parse_literal("( { {1}, {2} }, {2, 42} )", "(f32[2,1], f32[2])")
    assert isinstance(tup, tuple) and tup[0].shape == (2, 1)
    np.testing.assert_array_equal(tup[1], [2, 42])


def test_elided_constant_is_none_and_marked():
    module = parse(entry_module("ROOT %c = f32[3,4]{1,0} constant({...})", result="f32[3,4]"))
    c = module.entry.root_instruction
    assert c.literal is None and c.is_elided_constant
    assert "constant({...})" in module_to_text(module)


@pytest.mark.parametrize("literal, shape, message", [
    ("{1, 2, 3}", "s32[2]", "too many elements in dimension 0"),
    ("{1}", "s32[2]", "dimension 0 of the constant has 1 elements but the shape says 2"),
    ("{ {1, 2}, {3} }", "s32[2,2]", "dimension 1 of the constant has 1 elements"),
    ("{1, 2}", "s32[2,1]", "expected '{' for dimension 1"),
    ("256", "u8[]", "out of range for u8"),
    ("-2147483649", "u32[]", "out of range for u32"),   # -1 wraps, as in XLA
    ("1.5", "s32[]", "expected an integer value"),
    ("maybe", "pred[]", "expected 'true' or 'false'"),
    ("abc", "f32[]", "expected a floating-point value"),
    ("(1, 2)", "(f32[], f32[], f32[])", "tuple elements"),
    ("1", "c64[]", "expected a complex value"),
])
def test_bad_literals(literal, shape, message):
    with pytest.raises(HloParseError, match=re.escape(message)):
        parse_literal(literal, shape)


# ----- attributes of each kind ------------------------------------------------------
ATTRS_MODULE = """\
HloModule attrs

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %a, f32[] %b)
}

%gt (a.1: f32[], b.1: f32[]) -> pred[] {
  %a.1 = f32[] parameter(0)
  %b.1 = f32[] parameter(1)
  ROOT %c = pred[] compare(f32[] %a.1, f32[] %b.1), direction=GT, type=TOTALORDER
}

ENTRY %main (p: f32[8,8,4,4]) -> f32[] {
  %p = f32[8,8,4,4]{3,2,1,0} parameter(0)
  %zero = f32[] constant(0)
  %t = f32[8,8,4,4]{3,2,1,0} transpose(f32[8,8,4,4]{3,2,1,0} %p), dimensions={1,0,2,3}
  %sl = f32[4,8,4,4]{3,2,1,0} slice(f32[8,8,4,4]{3,2,1,0} %t), slice={[0:8:2], [0:8:1], [0:4:1], [0:4:1]}
  %pd = f32[10,8,4,5]{3,2,1,0} pad(f32[8,8,4,4]{3,2,1,0} %p, f32[] %zero), padding=1_1x0_0x0_0x0_-1_2
  %cv = f32[8,8,4,4]{3,2,1,0} convolution(f32[8,8,4,4]{3,2,1,0} %p, f32[8,8,4,4]{3,2,1,0} %p), window={size=3x3 stride=1x2 pad=1_1x0_1 lhs_dilate=1x2 rhs_dilate=2x1 rhs_reversal=0x1}, dim_labels=bf01_oi01->bf01, feature_group_count=1
  %gte = f32[] get-tuple-element((f32[], f32[]) %tup), index=1
  %sort = f32[8,8,4,4]{3,2,1,0} sort(f32[8,8,4,4]{3,2,1,0} %p), dimensions={0}, is_stable=true, to_apply=%gt
  %cc = f32[] custom-call(f32[] %zero), custom_call_target="a\\"b\\\\c\\n", called_computations={%add, %gt}, api_version=API_VERSION_TYPED_FFI
  %tup = (f32[], f32[]) tuple(f32[] %zero, f32[] %zero)
  ROOT %r = f32[] reduce(f32[8,8,4,4]{3,2,1,0} %p, f32[] %gte), dimensions={0,1,2,3}, to_apply=%add, control-predecessors={%sort, %cc}, metadata={op_name="r" source_line=3}
}
"""


def test_attributes_are_typed_by_kind():
    module = parse(ATTRS_MODULE)
    e = module.entry
    add, gt = module.computation("add"), module.computation("gt")
    assert e.instruction("t").attrs["dimensions"] == (1, 0, 2, 3)
    assert e.instruction("sl").attrs["slice"] == (SliceDim(0, 8, 2), SliceDim(0, 8, 1),
                                                  SliceDim(0, 4, 1), SliceDim(0, 4, 1))
    assert e.instruction("pd").attrs["padding"] == (PaddingDim(1, 1, 0), PaddingDim(0, 0, 0),
                                                    PaddingDim(0, 0, 0), PaddingDim(0, -1, 2))
    window = e.instruction("cv").attrs["window"]
    assert isinstance(window, Window)
    assert [d.size for d in window.dimensions] == [3, 3]
    assert [d.stride for d in window.dimensions] == [1, 2]
    assert [(d.padding_low, d.padding_high) for d in window.dimensions] == [(1, 1), (0, 1)]
    assert [d.base_dilation for d in window.dimensions] == [1, 2]
    assert [d.window_dilation for d in window.dimensions] == [2, 1]
    assert [d.window_reversal for d in window.dimensions] == [False, True]
    dnums = e.instruction("cv").attrs["dim_labels"]
    assert isinstance(dnums, ConvDimensionNumbers)
    assert (dnums.input_batch_dimension, dnums.input_feature_dimension) == (0, 1)
    assert (dnums.kernel_output_feature_dimension, dnums.kernel_input_feature_dimension) == (0, 1)
    assert e.instruction("cv").attrs["feature_group_count"] == 1
    assert e.instruction("gte").attrs["index"] == 1
    assert e.instruction("sort").attrs["is_stable"] is True
    assert e.instruction("sort").attrs["to_apply"] is gt
    assert gt.root_instruction.attrs["direction"] == "GT"
    assert gt.root_instruction.attrs["type"] == "TOTALORDER"
    cc = e.instruction("cc")
    assert cc.attrs["custom_call_target"] == 'a"b\\c\n'
    assert cc.attrs["called_computations"] == (add, gt)
    assert cc.attrs["api_version"] == "API_VERSION_TYPED_FFI"
    root = e.root_instruction
    assert root.attrs["to_apply"] is add
    assert root.control_predecessors == (e.instruction("sort"), cc)
    assert root.attrs["metadata"] == RawAttr('{op_name="r" source_line=3}')
    assert list(root.attrs) == ["dimensions", "to_apply", "control-predecessors", "metadata"]


def test_operands_defined_later_are_resolved_and_ordered():
    module = parse(ATTRS_MODULE)
    e = module.entry
    gte, tup = e.instruction("gte"), e.instruction("tup")
    assert gte.operands == [tup]
    order = e.instructions
    assert order.index(tup) < order.index(gte)
    assert order[-1] is e.root_instruction


def test_attribute_text_is_printed_back_exactly():
    module = parse(ATTRS_MODULE)
    text = module_to_text(module)
    for line in ('custom_call_target="a\\"b\\\\c\\n"', "dim_labels=bf01_oi01->bf01",
                 "window={size=3x3 stride=1x2 pad=1_1x0_1 lhs_dilate=1x2 rhs_dilate=2x1 rhs_reversal=0x1}",
                 "padding=1_1_0x0_0_0x0_0_0x0_-1_2", "slice={[0:8:2], [0:8:1], [0:4:1], [0:4:1]}",
                 "control-predecessors={%sort, %cc}", 'metadata={op_name="r" source_line=3}',
                 "called_computations={%add, %gt}"):
        assert line in text


@pytest.mark.parametrize("raw", [
    'sharding={replicated}', 'sharding={maximal device=0}', 'sharding={{replicated}, {manual}}',
    'sharding={ {replicated}, {manual} }', 'sharding={devices=[2,1]0,1}',
    'frontend_attributes={_xla_compute_type="host",b="c"}', 'replica_groups={}',
    'replica_groups={{0,1},{2,3}}', 'replica_groups=[2,4]<=[8]', 'replica_groups=[4,2]<=[2,4]T(1,0)',
    'operand_precision={default,highest}', 'origin={{"constant__ovp0"}}',
    'backend_config={"known_trip_count":{"n":"10"},"a":[1,2]}', 'backend_config="x, y=\\"z\\""',
    'metadata={op_name="jit(f)/while/body/add" source_file="/a b/c.py" source_line=3}',
    'literal=( s32[4]{0} {4, 128, 128, 3}, pred[4]{0} {1, 0, 0, 0} )', 'literal=f32[] 0.1',
    'statistics={visualizing_index=1,stat-0=0.5}', 'is_host_transfer=true',
    'output_to_operand_aliasing={{0}: (0, {})}', 'epsilon=0.001',
])
def test_unknown_and_raw_attributes_kept_verbatim(raw):
    text = entry_module(f"""
%p = f32[] parameter(0)
ROOT %r = f32[] negate(f32[] %p), {raw}, sharding_extra={{x}}
""".replace("sharding_extra", "zz_after" if not raw.startswith("sharding") else "zz_after"),
                        params="p: f32[]")
    module = parse(text)
    root = module.entry.root_instruction
    name, value = raw.split("=", 1)
    assert root.attrs[name] == RawAttr(value)
    assert list(root.attrs) == [name, "zz_after"]
    assert module_to_text(module) == text


def test_forward_reference_to_computation():
    text = """\
HloModule fwd

ENTRY %main (p: f32[4]) -> f32[] {
  %p = f32[4]{0} parameter(0)
  %z = f32[] constant(0)
  ROOT %r = f32[] reduce(f32[4]{0} %p, f32[] %z), dimensions={0}, to_apply=%add
}

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %a, f32[] %b)
}

"""
    module = parse(text)
    assert module.entry.root_instruction.attrs["to_apply"] is module.computation("add")
    assert module.entry.name == "main"
    assert module_to_text(module) == text


# ----- both styles -------------------------------------------------------------------
def test_jax_style_module():
    module = parse(JAX_STYLE)
    assert module.name == "jit_f"
    assert module.entry.name == "main.10" and module.entry.is_entry
    assert [c.name for c in module.computations] == ["region_0.4", "main.10"]
    e = module.entry
    assert e.root_instruction.name == "multiply.11"
    assert [p.name for p in e.parameters] == ["Arg_0.1", "Arg_1.2"]
    assert e.instruction("reduce.9").attrs["to_apply"] is module.computation("region_0.4")
    assert e.instruction("sine.3").attrs["metadata"].text.startswith('{op_name="jit(f)/jit(main)/sin"')
    assert module.header_attrs["entry_computation_layout"] == RawAttr("{(f32[4]{0}, f32[])->f32[4]{0}}")
    opts = module.print_options
    assert opts["percent"] is False and opts["operand_shapes"] is False
    assert opts["signature"] is False and opts["closing_comment"] is True
    assert module_to_text(module) == JAX_STYLE


def test_xla_dump_style_module():
    module = parse(XLA_STYLE)
    assert module.is_scheduled and module.header_attrs["is_scheduled"] is True
    assert module.header_attrs["num_partitions"] == 1
    assert module.header_attrs["input_output_alias"] == RawAttr("{ {0}: (0, {}, may-alias) }")
    assert [name for name, _ in module.extra_sections] == ["FileNames", "FunctionNames",
                                                           "FileLocations", "StackFrames"]
    assert module.extra_sections[1][1] == ['1 "<module>"', '2 "f"']
    region = module.computation("region_0.5")
    assert region.extra_attrs == {"execution_thread": RawAttr('"main"')}
    e = module.entry
    fusion = e.instruction("fusion")
    assert fusion.attrs["kind"] == "kLoop"
    assert fusion.attrs["calls"] is module.computation("fused_computation")
    assert fusion.attrs["backend_config"] == RawAttr('{"outer_dimension_partitions":["2"]}')
    assert e.instruction("slice.1").control_predecessors == (e.instruction("reduce.9"),)
    assert e.instruction("Arg_0.1").attrs["sharding"] == RawAttr("{replicated}")
    assert float(e.instruction("constant.4").literal) == -math.inf
    opts = module.print_options
    assert opts["percent"] and opts["operand_shapes"] and opts["signature"]
    assert module_to_text(module) == XLA_STYLE


def test_recent_xla_style_module():
    module = parse(NEW_XLA_STYLE)
    opts = module.print_options
    assert opts["percent"] is True and opts["operand_shapes"] is False
    fused = module.computation("fused_computation")
    assert fused.instruction("constant.0").shape.layout.extra == "T(128)"
    assert module.entry.root_instruction.attrs["backend_config"].text == '" \\000\\004\\361h"'
    assert module_to_text(module) == NEW_XLA_STYLE


def test_no_root_means_last_instruction_and_no_entry_means_last_computation():
    text = "HloModule m\n\nc {\n  p = f32[] parameter(0)\n  n = f32[] negate(p)\n}\n"
    module = parse(text)
    assert module.entry.name == "c"
    assert module.entry.root_instruction.name == "n"


def test_comments_and_crlf_are_tolerated():
    text = JAX_STYLE.replace("\n", "\r\n").replace("ENTRY main.10 {", "/* entry */ ENTRY main.10 { // go")
    module = parse(text)
    assert module.entry.root_instruction.name == "multiply.11"


def test_async_sugar_and_extra_opcodes_are_accepted():
    module = parse(entry_module("""
%p = f32[4]{0} parameter(0)
%o = f32[4]{0} opt-barrier(f32[4]{0} %p)
%s = ((f32[4]{0}), f32[4]{0}, s32[]) custom-call-start(f32[4]{0} %o), custom_call_target="foo"
ROOT %d = f32[4]{0} custom-call-done(((f32[4]{0}), f32[4]{0}, s32[]) %s)
""", params="p: f32[4]", result="f32[4]"))
    assert module.entry.root_instruction.opcode == "custom-call-done"


# ----- errors -------------------------------------------------------------------------
ERROR_CASES = [
    # (name, text, expected message fragment, line, column)
    ("truncated module", XLA_STYLE[:XLA_STYLE.index("%fusion =")], "expected '}' to close computation",
     30, 77),
    ("truncated in attribute", JAX_STYLE[:JAX_STYLE.index("source_line=5") + 5],
     "expected '}' to close this '{'", 12, 46),
    ("empty file", "", "expected 'HloModule' or a computation but found end of file", 1, 1),
    ("no computations", "HloModule m\n", "expected a computation but found end of file", 2, 1),
    ("bad element type", JAX_STYLE.replace("Arg_1.2 = f32[]", "Arg_1.2 = f33[]"),
     "unknown element type 'f33'", 11, 13),
    ("bad dimensions", JAX_STYLE.replace("sine.3 = f32[4]{0}", "sine.3 = f32[4,]{0}"),
     "expected a dimension size but found ']'", 12, 18),
    ("unknown opcode", JAX_STYLE.replace("sine(Arg_0.1)", "sinee(Arg_0.1)"), "unknown opcode 'sinee'", 12, 22),
    ("unknown operand", JAX_STYLE.replace("multiply(broadcast.10, Arg_1.2)", "multiply(broadcast.10, Arg_7.2)"),
     "unknown instruction '%Arg_7.2' used as operand", 16, 55),
    ("duplicate name", JAX_STYLE.replace("constant.8 = f32[]", "sine.3 = f32[]"),
     "duplicate instruction name 'sine.3'", 13, 3),
    ("duplicate computation", JAX_STYLE.replace("ENTRY main.10", "ENTRY region_0.4"),
     "duplicate computation name 'region_0.4'", 9, 7),
    ("unbalanced braces", JAX_STYLE.replace("metadata={op_name=\"jit(f)/jit(main)/sin\"", "metadata={{op_name=\"x\""),
     "expected '}' to close this '{' before the next instruction", 12, 46),
    ("missing close paren", JAX_STYLE.replace("sine(Arg_0.1)", "sine(Arg_0.1"),
     "expected ',' or ')' after an operand but found '='", 12, 44),
    ("bad int attribute", XLA_STYLE.replace("channel_id=1", "channel_id=one"),
     "expected an integer value for 'channel_id' but found 'one'", 38, 88),
    ("bad bool attribute", XLA_STYLE.replace("custom_call_has_side_effect=true", "custom_call_has_side_effect=1"),
     "expected 'true' or 'false' for 'custom_call_has_side_effect' but found '1'", 37, 215),
    ("bad dims attribute", JAX_STYLE.replace("dimensions={0}", "dimensions={0,x}"),
     "expected an integer but found 'x'", 14, 62),
    ("bad dim_labels", ATTRS_MODULE.replace("dim_labels=bf01_oi01->bf01", "dim_labels=bf01_oi01->bx01"),
     "bad dim_labels 'bf01_oi01->bx01'", 21, 196),
    ("bad window", ATTRS_MODULE.replace("stride=1x2 pad", "stride=1x2x1 pad"),
     "window field 'stride' has 3 dimensions but size has 2", 21, 120),
    ("unknown window field", ATTRS_MODULE.replace("stride=1x2 pad", "strid=1x2 pad"),
     "unknown window field 'strid'", 21, 113),
    ("bad padding", ATTRS_MODULE.replace("padding=1_1x0_0x0_0x0_-1_2", "padding=1_1x0x0_0x0_0"),
     "malformed padding '1_1x0x0_0x0_0'", 20, 84),
    ("literal count", JAX_STYLE.replace("f32[] constant(0)", "f32[2]{0} constant({1, 2, 3})"),
     "too many elements in dimension 0 of the constant: the shape says 2", 13, 40),
    ("literal too short", JAX_STYLE.replace("f32[] constant(0)", "f32[3]{0} constant({1, 2})"),
     "dimension 0 of the constant has 2 elements but the shape says 3", 13, 35),
    ("unknown computation", JAX_STYLE.replace("to_apply=region_0.4", "to_apply=region_9"),
     "unknown computation '%region_9'", 14, 73),
    ("two roots", JAX_STYLE.replace("  constant.8", "  ROOT constant.8"),
     "computation 'main.10' has more than one ROOT instruction", 16, 3),
    # (A missing shape before a known opcode is inferred, as in XLA.)
    ("missing shape", JAX_STYLE.replace("sine.3 = f32[4]{0} sine", "sine.3 = sinus"),
     "expected the instruction's result shape but found 'sinus'", 12, 12),
    ("missing equals", JAX_STYLE.replace("sine.3 = f32[4]{0}", "sine.3 f32[4]{0}"),
     "expected '=' but found 'f32[4]{0}'", 12, 10),
    ("bad module header", JAX_STYLE.replace("HloModule", "HloModle"),
     "expected 'HloModule' or a computation but found 'HloModle'", 1, 1),
    ("garbage after instruction", JAX_STYLE.replace("dimensions={}\n", "dimensions={} junk\n"),
     "expected ',' or a new line after the instruction but found 'junk'", 15, 63),
    ("duplicate parameter", JAX_STYLE.replace("parameter(1)\n  sine", "parameter(0)\n  sine"),
     "parameter number 0 is used by both 'Arg_0.1' and 'Arg_1.2'", 11, 3),
    ("bad layout", JAX_STYLE.replace("sine.3 = f32[4]{0}", "sine.3 = f32[4]{1}"),
     "not a permutation", 12, 18),
    ("duplicate attribute", JAX_STYLE.replace("dimensions={}", "dimensions={}, dimensions={}"),
     "duplicate attribute 'dimensions'", 15, 64),
    ("cycle", JAX_STYLE.replace("sine(Arg_0.1)", "sine(multiply.11)"),
     "instruction 'sine.3' depends on itself", 12, 3),
    ("unknown control predecessor", JAX_STYLE.replace("dimensions={}\n", "dimensions={}, control-predecessors={nope}\n"),
     "unknown instruction '%nope' used as control predecessor", 15, 86),
    ("unterminated computation", JAX_STYLE.replace("} // main.10", ""),
     "expected '}' to close computation 'main.10' but found end of file", 9, 15),
]


@pytest.mark.parametrize("name, text, message, line, column", ERROR_CASES, ids=[c[0] for c in ERROR_CASES])
def test_errors_have_message_line_and_column(name, text, message, line, column):
    err = parse_error(text)
    assert message in err.message
    assert (err.line, err.column) == (line, column), str(err)
    assert err.filename == "bad.hlo"
    assert str(err).startswith(f"bad.hlo:{line}:{column}: error: ")
    assert err.source_line == text.split("\n")[line - 1]


def test_error_text_points_at_the_column():
    err = parse_error(JAX_STYLE.replace("sine(Arg_0.1)", "sinee(Arg_0.1)"))
    lines = str(err).splitlines()
    assert lines[1] == "  sine.3 = f32[4]{0} sinee(Arg_0.1), " + lines[1].split("sinee(Arg_0.1), ")[1]
    assert lines[2] == " " * 21 + "^"


def _mutations(text, rng, count):
    junk = ["{", "}", "(", ")", "[", "]", ",", "=", "%", '"', "->", "<=", "f32", "f33[", "ROOT",
            "ENTRY", "\n", "{...}", "/*", "*/", "//", ":", "?", "nan", "-", "0", "1e999",
            "99999999999999999999", "constant(", "parameter(", "}\n", "T(", "\\", "\x00", "é"]
    for _ in range(count):
        s = text
        op = rng.randrange(5)
        i = rng.randrange(len(s))
        if op == 0:
            s = s[:i]
        elif op == 1:
            s = s[:i] + rng.choice(junk) + s[i:]
        elif op == 2:
            s = s[:i] + s[i + rng.randrange(1, 30):]
        elif op == 3:
            s = s[:i] + chr(rng.randrange(32, 127)) + s[i + 1:]
        else:
            for _ in range(4):
                i = rng.randrange(len(s))
                s = s[:i] + rng.choice(junk) + s[i:]
        yield s


@pytest.mark.parametrize("source", [JAX_STYLE, XLA_STYLE, NEW_XLA_STYLE, ATTRS_MODULE],
                         ids=["jax", "xla", "new_xla", "attrs"])
def test_fuzzed_inputs_raise_only_parse_errors(source):
    rng = random.Random(1234)
    for text in _mutations(source, rng, 1500):
        try:
            parse_hlo_module(text)
        except HloParseError as e:
            assert e.line >= 1 and e.column >= 1
    for cut in range(0, len(source), 7):  # every truncation point, roughly
        try:
            parse_hlo_module(source[:cut])
        except HloParseError:
            pass


def _chain_module(n):
    lines = ["HloModule big", "", "ENTRY %main (p: f32[128,256]) -> f32[128,256] {",
             "  %p = f32[128,256]{1,0} parameter(0)"]
    prev = "p"
    for i in range(n):
        lines.append(f"  %add.{i} = f32[128,256]{{1,0}} add(f32[128,256]{{1,0}} %{prev}, "
                     f"f32[128,256]{{1,0}} %p), metadata={{op_name=\"jit(f)/add\" "
                     f"source_file=\"/tmp/x.py\" source_line={i}}}")
        prev = f"add.{i}"
    lines += [f"  ROOT %r = f32[128,256]{{1,0}} copy(f32[128,256]{{1,0}} %{prev})", "}", "", ""]
    return "\n".join(lines)


def _work_during(fn):
    """How many Python lines and C function calls ``fn()`` executes: a
    measure of work that, unlike a time, does not depend on the machine's
    load (an O(n) scan inside one C call, such as ``list.index``, is one)."""
    count = 0

    def trace(frame, event, arg):
        nonlocal count
        count += 1
        return trace

    def profile(frame, event, arg):
        nonlocal count
        if event == "c_call":
            count += 1
    sys.settrace(trace)
    sys.setprofile(profile)
    try:
        fn()
    finally:
        sys.setprofile(None)
        sys.settrace(None)
    return count


def test_parsing_work_grows_linearly_with_the_module():
    # Twice the instructions, twice the work: a parser that rescans what it
    # has already parsed for each instruction (quadratic) does about 4x.
    small, large = (_work_during(lambda n=n: parse_hlo_module(_chain_module(n)))
                    for n in (500, 1000))
    assert large < 2.2 * small, (small, large)
    text = _chain_module(5000)
    module = parse_hlo_module(text)
    assert len(module.entry.instructions) == 5002
    assert module_to_text(module) == text


def test_modules_without_a_header_parse_as_in_xla():
    # XLA's own tests write modules as bare computations; the module is
    # named after its entry computation.
    m = parse_hlo_module("""add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}

ENTRY main {
  p = f32[4] parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[] reduce(p, z), dimensions={0}, to_apply=add
}""")
    assert m.name == "main" and m.entry.name == "main" and len(m.computations) == 2
    assert m.to_text().startswith("HloModule main")
    assert parse_hlo_module("ENTRY e {\n  ROOT p = s32[] parameter(0)\n}").entry.root_instruction.opcode \
        == "parameter"


def test_the_old_header_form_with_a_colon():
    m = parse_hlo_module("HloModule fusion_test:\n\nENTRY e {\n  p = f32[2] parameter(0)\n"
                         "  ROOT n = f32[2] negate(p)\n}")
    assert m.name == "fusion_test" and m.entry.root_instruction.opcode == "negate"


def test_an_unterminated_comment_is_an_error_where_it_starts():
    # Each later '/*' used to rescan to the end of the text: quadratic time
    # (0.2, 0.8, 3.2 s for 4k, 8k, 16k of them); now the first one stops the lexer.
    with pytest.raises(HloParseError, match=r"2:2: error: unterminated comment: '/\*' without a "
                                            r"closing '\*/'"):
        parse_hlo_module("HloModule m\n" + " /*" * 16000)
    text = "HloModule m\nENTRY e {\n" + "  /* note */\n" * 2000 + \
        "  ROOT p = f32[] parameter(0) /*index=0*/\n}"
    assert parse_hlo_module(text).entry.root_instruction.opcode == "parameter"


def test_result_shapes_left_out_are_inferred_as_in_xla():
    m = parse_hlo_module("""HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = add(a, b)
}
ENTRY e {
  x = f32[4,3] parameter(0)
  y = f32[3,2] parameter(1)
  d = dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  z = f32[] constant(0)
  ROOT r = reduce(n, z), dimensions={1}, to_apply=add
  n = negate(d)
}""")
    shapes = {i.name: i.shape.to_text(False) for i in m.entry.instructions}
    assert shapes["d"] == "f32[4,2]" and shapes["n"] == "f32[4,2]" and shapes["r"] == "f32[4]"
    assert m.computations[0].root_instruction.shape.to_text(False) == "f32[]"
    with pytest.raises(HloParseError, match="expected the instruction's result shape but found "
                                            "'broadcast'"):
        parse_hlo_module("HloModule m\nENTRY e {\n  x = f32[2] parameter(0)\n"
                         "  ROOT b = broadcast(x), dimensions={0}\n}")
    with pytest.raises(HloParseError, match=r"4:8: error: cannot infer the result shape of add"):
        parse_hlo_module("HloModule m\nENTRY e {\n  x = f32[2] parameter(0)\n"
                         "  ROOT b = add(x, y)\n  y = s32[2] parameter(1)\n}")


@pytest.mark.parametrize("text", [
    # an attribute value across lines (a JSON backend_config)
    "HloModule m\nENTRY e {\n  x = f32[4] parameter(0)\n  ROOT y = f32[4] custom-call(x), "
    "custom_call_target=\"foo\", backend_config={\n    \"a\": 1,\n    \"b\": {\"c\": 2}\n  }\n}",
    # two instructions on one line
    "HloModule m\nENTRY e {\n  x = f32[4] parameter(0)  y = f32[4] negate(x)\n"
    "  ROOT z = f32[4] add(x, y)\n}",
    # a header attribute across lines
    "HloModule m, entry_computation_layout={(f32[4]{0})\n  ->f32[4]{0}}\nENTRY e {\n"
    "  x = f32[4] parameter(0)\n  ROOT z = f32[4] add(x, x)\n}",
    # a string with a new line in it
    "HloModule m\nENTRY e {\n  x = f32[4] parameter(0), metadata={op_name=\"a\nb\"}\n"
    "  ROOT z = f32[4] add(x, x)\n}",
], ids=["multiline value", "two per line", "multiline header", "newline in string"])
def test_new_lines_are_white_space_as_in_xlas_lexer(text):
    from xla.hlo.verifier import verify_module
    m = parse_hlo_module(text)
    verify_module(m)
    assert parse_hlo_module(m.to_text()).to_text() == m.to_text()


def test_scalar_values_for_array_constants_and_unsigned_wrap_as_in_xla():
    m = parse_hlo_module("HloModule m\nENTRY e {\n  ROOT c = f32[2,3] constant(1.5)\n}")
    assert m.entry.root_instruction.literal.tolist() == [[1.5] * 3] * 2
    m = parse_hlo_module("HloModule m\nENTRY e {\n  ROOT c = u64[] constant(-1)\n}")
    assert int(m.entry.root_instruction.literal) == 2**64 - 1
    with pytest.raises(HloParseError, match="value -300 is out of range for u8"):
        parse_hlo_module("HloModule m\nENTRY e {\n  ROOT c = u8[] constant(-300)\n}")


def test_instructions_written_as_operands_as_in_xla():
    from xla.hlo.evaluator import evaluate
    m = parse_hlo_module("""HloModule m
ENTRY e {
  constant.0 = s32[] constant(7)
  ROOT y = s32[] add(s32[] parameter(0), s32[] multiply(s32[] constant(3), s32[] parameter(1)))
  z = s32[] add(constant.0, constant.0)
}""")
    names = [i.name for i in m.entry.instructions]
    # Operands come first, under names of their own that clash with none.
    assert names.index("y") > max(names.index("parameter.0"), names.index("multiply.0"))
    assert len(set(names)) == len(names) and "constant.1" in names
    assert int(evaluate(m, np.int32(2), np.int32(5))) == 2 + 3 * 5
    reparsed = parse_hlo_module(m.to_text())
    assert reparsed.to_text() == m.to_text()
    with pytest.raises(HloParseError, match=r"3:47: error: unknown opcode 'bogus'"):
        parse_hlo_module("HloModule m\nENTRY e {\n  ROOT y = s32[] add(s32[] constant(1), s32[] "
                         "bogus(2))\n}")
    with pytest.raises(HloParseError, match="parameter number 0 is used by both"):
        parse_hlo_module("HloModule m\nENTRY e {\n  p = s32[] parameter(0)\n"
                         "  ROOT y = s32[] add(p, s32[] parameter(0))\n}")


def test_collective_permute_slice_sizes_one_list_per_pair():
    text = ("HloModule m\n\nENTRY e {\n  p = f32[128,64] parameter(0)\n  ROOT c = f32[128,64] "
            "collective-permute(p), source_target_pairs={{0,1},{1,0}}, slice_sizes={{128,32}}\n}\n")
    m = parse_hlo_module(text)
    assert m.to_text() == text
    # gather's flat form is unchanged
    g = parse_hlo_module("HloModule m\nENTRY e {\n  x = f32[5,4] parameter(0)\n  i = s32[2,1] "
                         "parameter(1)\n  ROOT g = f32[2,4] gather(x, i), offset_dims={1}, "
                         "collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, "
                         "slice_sizes={1,4}\n}")
    assert tuple(g.entry.root_instruction.attrs["slice_sizes"]) == (1, 4)


def test_called_computations_written_inline_as_in_xla():
    from xla.hlo.evaluator import evaluate
    from xla.hlo.verifier import verify_module
    m = parse_hlo_module("""HloModule m
ENTRY e {
  x = f32[4] parameter(0)
  c = f32[] constant(0)
  s = f32[] reduce(x, c), dimensions={0}, to_apply={
    a = f32[] parameter(0)
    b = f32[] parameter(1)
    ROOT t = f32[] add(a, b)
  }
  ROOT p = f32[] reduce(x, f32[] constant(1)), dimensions={0}, to_apply={ROOT m = f32[] multiply(f32[] parameter(0), f32[] parameter(1))}
}
reduce.to_apply.0 {
  ROOT z = f32[] parameter(0)
}""")
    verify_module(m)
    assert m.entry.root_instruction.attrs["to_apply"].root_instruction.opcode == "multiply"
    names = [c.name for c in m.computations]
    # Inline ones come before their caller, under names that clash with none.
    assert names == ["reduce.to_apply.1", "reduce.to_apply.2", "e", "reduce.to_apply.0"]
    assert m.computations[-1].root_instruction.name == "z"
    assert float(evaluate(m, np.array([1, 2, 3, 4], np.float32))) == 24.0
    assert parse_hlo_module(m.to_text()).to_text() == m.to_text()
    with pytest.raises(HloParseError, match=r"4:77: error: unknown instruction '%y' used as operand"):
        parse_hlo_module("HloModule m\nENTRY e {\n  x = f32[4] parameter(0)\n  ROOT r = f32[] "
                         "reduce(x, x), dimensions={0}, to_apply={ROOT a = f32[] add(y, y)}\n}")


def test_instruction_names_are_scoped_to_their_computation_as_in_xla():
    from xla.hlo.evaluator import evaluate
    from xla.hlo.verifier import verify_module
    m = parse_hlo_module("""HloModule m
add {
  p0 = f32[] parameter(0)
  p1 = f32[] parameter(1)
  ROOT r = f32[] add(p0, p1)
}
ENTRY e {
  p0 = f32[4] parameter(0)
  p0.1 = f32[] constant(0)
  ROOT r = f32[] reduce(p0, p0.1), dimensions={0}, to_apply=add
}""")
    verify_module(m)   # was: "name %p0 is not unique in the module"
    # The first computation keeps its names; later ones are renamed on insertion.
    assert [i.name for i in m.computations[0].instructions] == ["p0", "p1", "r"]
    assert [i.name for i in m.entry.instructions] == ["p0.2", "p0.1", "r.1"]
    assert float(evaluate(m, np.array([1, 2, 3, 4], np.float32))) == 10.0
    with pytest.raises(HloParseError, match="duplicate instruction name 'p0' in computation 'e'"):
        parse_hlo_module("HloModule m\nENTRY e {\n  p0 = f32[] parameter(0)\n"
                         "  ROOT p0 = f32[] negate(p0)\n}")


@pytest.mark.parametrize("text,message", [
    # Both found by the 45-minute fuzz run: a raw ValueError and a raw OverflowError.
    ("HloModule m\nENTRY e {\n  ROOT c = f32[0,9223372036854775807] constant({  })\n}",
     r"3:52: error: bad constant: array is too big"),
    ("HloModule m\nENTRY e {\n  x = f32[8] parameter(0)\n  z = f32[] constant(0)\n  ROOT r = f32[1] "
     "reduce-window(x, z), window={size=2 stride=99999999999999999999}, to_apply=a\n}",
     r"5:62: error: window stride value 99999999999999999999 is out of range for s64"),
])
def test_fuzz_findings_are_located_errors(text, message):
    with pytest.raises(HloParseError, match=message):
        parse_hlo_module(text)


def test_parse_errors_are_three_lines_whatever_the_text_holds():
    # A quoted token spanning lines (the fuzzer's finding: a stray quote in
    # a header attribute) and line breaks other than \n inside the source
    # line: the message is escaped, the source line keeps its columns.
    for gap in ("", " padding the token past forty characters " * 2):
        text = f'HloModule m, allow_x={{true}}, al"low_y={{true}}{gap}\n\nENTRY e {{\n  a = "q"\n}}\n'
        with pytest.raises(HloParseError) as e:
            parse_hlo_module(text)
        lines = str(e.value).splitlines()
        assert len(lines) == 3 and lines[2].strip() == "^", lines
        assert lines[1][lines[2].index("^")] == '"'
    text = "HloModule m\nENTRY e {\n  p = f32[2]\x0c parameter(0) junk\r more\n}\n"
    with pytest.raises(HloParseError) as e:
        parse_hlo_module(text)
    lines = str(e.value).splitlines()
    assert len(lines) == 3 and lines[2].strip() == "^"


@pytest.mark.parametrize("text", [
    "f32[8,17]{1,0}", "f32[]", "f32[]{}", "pred[3]{0}", "s4[2]{0}", "bf16[1,2,3]{2,1,0}",
    "f32[2,3]{0,1}", "f32[2,3]{0,0}", "f32[2,3]{0}", "f32[01]{0}", "u8[0]{0}", "f32[4]",
    "f32[2]{0:T(128)}", "f32[<=3]{0}", "f32[?,2]{1,0}", "token[]", "f32[2, 3]{1,0}"])
def test_plain_array_shapes_read_as_the_parser_reads_them(monkeypatch, text):
    # The lexer's shape tokens of static sizes and plain layouts skip the
    # child parser (value_parser._plain_array_shape); every other text, errors
    # included, goes through it. Both ways give equal shapes, or the same error.
    from xla.hlo import value_parser

    def read():
        value_parser._SHAPE_CACHE.clear()   # noqa: SLF001
        try:
            shape = parse_shape(text)
        except HloParseError as e:
            return None, str(e)
        return shape, (shape.to_text(), shape.layout, shape.dynamic)

    fast = read()
    monkeypatch.setattr(value_parser, "_plain_array_shape", lambda text: None)
    slow = read()
    assert fast == slow
