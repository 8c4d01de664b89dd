"""Shape inference: one positive case (or more) per opcode with the expected
shape written by hand, and negative cases checked by message."""
import re

import numpy as np
import pytest

from xla.errors import ShapeError
from xla.hlo import opcodes
from xla.hlo import shape_inference as si
from xla.hlo.attributes import (ConvDimensionNumbers, PaddingDim, RawAttr, SliceDim, Window,
                                WindowDimension)
from xla.hlo.ir import HloComputation, HloInstruction
from xla.hlo.shape import Layout, Shape


# ----- tiny helpers: shapes from text, instructions over parameters ------------

def S(text):
    """A shape from its HLO text (arrays, bounded dims, tuples, token), no layout."""
    text = text.strip()
    if text.startswith("("):
        inner = text[1:-1].strip()
        parts, depth, cur = [], 0, ""
        for ch in inner:
            if ch == "," and depth == 0:
                parts.append(cur)
                cur = ""
                continue
            depth += ch in "([{"
            depth -= ch in ")]}"
            cur += ch
        if cur.strip():
            parts.append(cur)
        return Shape.tuple([S(p) for p in parts])
    if text == "token[]":
        return Shape.token()
    m = re.fullmatch(r"(\w+)\[([^\]]*)\]", text)
    dims, dyn = [], []
    for d in filter(None, m.group(2).split(",")):
        dyn.append(d.startswith("<="))
        dims.append(int(d.lstrip("<=")))
    return Shape(m.group(1), dims, None, dyn)


def params(*shape_texts):
    return [HloInstruction.create_parameter(i, S(t) if isinstance(t, str) else t)
            for i, t in enumerate(shape_texts)]


def comp(name, param_texts, root_opcode_or_shape):
    """A computation with parameters of the given shapes whose root has the given shape."""
    ps = params(*param_texts)
    root_shape = S(root_opcode_or_shape)
    if root_shape.is_tuple:
        root = HloInstruction("tuple", root_shape, ps[:len(root_shape.tuple_shapes)])
    else:
        root = HloInstruction("constant", root_shape, literal=np.zeros(root_shape.dimensions,
                                                                        root_shape.dtype))
    return HloComputation(name, ps + [root], root=root)


def infer(opcode, declared, operand_texts, **attrs):
    instr = HloInstruction(opcode, S(declared) if isinstance(declared, str) else declared,
                           params(*operand_texts), attrs=attrs)
    return si.infer_shape(instr)


def check(opcode, declared, operand_texts, expected, **attrs):
    got = infer(opcode, declared, operand_texts, **attrs)
    assert got.to_text() == expected, f"{opcode}: got {got.to_text()}, want {expected}"
    assert got.layout is None


def fails(opcode, declared, operand_texts, pattern, **attrs):
    with pytest.raises(ShapeError, match=pattern):
        infer(opcode, declared, operand_texts, **attrs)


ADD = comp("add", ["f32[]", "f32[]"], "f32[]")
ADD_S32 = comp("add_s32", ["s32[]", "s32[]"], "s32[]")
LT = comp("lt", ["f32[]", "f32[]"], "pred[]")


def W(*dims):
    return Window([WindowDimension(*d) if isinstance(d, tuple) else WindowDimension(d) for d in dims])


# ----- every opcode has a rule -------------------------------------------------

def test_every_opcode_has_a_rule():
    assert opcodes.ALL_OPCODES <= set(si.RULES)


# ----- elementwise ----------------------------------------------------------------

@pytest.mark.parametrize("opcode", sorted(opcodes.BINARY_ELEMENTWISE - {
    "compare", "complex", "and", "or", "xor", "shift-left", "shift-right-arithmetic",
    "shift-right-logical", "mulhi"}))
def test_binary_float(opcode):
    check(opcode, "f32[2,3]", ["f32[2,3]", "f32[2,3]"], "f32[2,3]")


@pytest.mark.parametrize("opcode", ["and", "or", "xor", "shift-left", "shift-right-arithmetic",
                                    "shift-right-logical", "mulhi"])
def test_binary_integer(opcode):
    check(opcode, "s32[4]", ["s32[4]", "s32[4]"], "s32[4]")


def test_binary_logical_on_pred():
    check("and", "pred[4]", ["pred[4]", "pred[4]"], "pred[4]")


def test_compare_gives_pred():
    check("compare", "pred[2]", ["f32[2]", "f32[2]"], "pred[2]", direction="LT")


def test_complex_gives_c64_and_c128():
    check("complex", "c64[3]", ["f32[3]", "f32[3]"], "c64[3]")
    check("complex", "c128[]", ["f64[]", "f64[]"], "c128[]")


@pytest.mark.parametrize("opcode", sorted(opcodes.UNARY_ELEMENTWISE - {
    "is-finite", "not", "popcnt", "count-leading-zeros", "convert", "bitcast-convert",
    "reduce-precision"}))
def test_unary_float(opcode):
    check(opcode, "f32[5]", ["f32[5]"], "f32[5]")


def test_unary_integer_ops():
    check("not", "s8[3]", ["s8[3]"], "s8[3]")
    check("not", "pred[3]", ["pred[3]"], "pred[3]")
    check("popcnt", "u32[3]", ["u32[3]"], "u32[3]")
    check("count-leading-zeros", "s64[]", ["s64[]"], "s64[]")


def test_is_finite_gives_pred():
    check("is-finite", "pred[2,2]", ["bf16[2,2]"], "pred[2,2]")


def test_real_imag_abs_of_complex_give_component_type():
    check("real", "f32[4]", ["c64[4]"], "f32[4]")
    check("imag", "f64[4]", ["c128[4]"], "f64[4]")
    check("abs", "f32[4]", ["c64[4]"], "f32[4]")
    check("real", "f32[4]", ["f32[4]"], "f32[4]")
    check("negate", "c64[4]", ["c64[4]"], "c64[4]")


def test_bounded_dynamic_dims_are_kept():
    got = infer("add", "f32[<=8,3]", ["f32[<=8,3]", "f32[<=8,3]"])
    assert got.dimensions == (8, 3) and got.dynamic == (True, False)


def test_select_with_array_and_scalar_pred():
    check("select", "f32[2,3]", ["pred[2,3]", "f32[2,3]", "f32[2,3]"], "f32[2,3]")
    check("select", "f32[2,3]", ["pred[]", "f32[2,3]", "f32[2,3]"], "f32[2,3]")


def test_clamp_with_scalar_and_array_bounds():
    check("clamp", "f32[4]", ["f32[]", "f32[4]", "f32[]"], "f32[4]")
    check("clamp", "f32[4]", ["f32[4]", "f32[4]", "f32[4]"], "f32[4]")


def test_convert_takes_declared_type():
    check("convert", "s32[2,2]", ["f32[2,2]"], "s32[2,2]")
    check("convert", "c64[2]", ["f32[2]"], "c64[2]")


def test_stochastic_convert():
    check("stochastic-convert", "bf16[4]", ["f32[4]", "u32[4]"], "bf16[4]")


def test_bitcast_convert_same_width():
    check("bitcast-convert", "s32[2,3]", ["f32[2,3]"], "s32[2,3]")


def test_bitcast_convert_wide_to_narrow_adds_minor_dim():
    check("bitcast-convert", "u8[2,4]", ["f32[2]"], "u8[2,4]")
    check("bitcast-convert", "f32[3,2]", ["f64[3]"], "f32[3,2]")


def test_bitcast_convert_narrow_to_wide_removes_minor_dim():
    check("bitcast-convert", "f32[2]", ["u8[2,4]"], "f32[2]")


def test_reduce_precision():
    check("reduce-precision", "f32[3]", ["f32[3]"], "f32[3]", exponent_bits=5, mantissa_bits=10)


def test_map():
    mul = comp("mul", ["f32[]", "f32[]"], "f32[]")
    check("map", "f32[4]", ["f32[4]", "f32[4]"], "f32[4]", dimensions=(0,), to_apply=mul)
    to_int = comp("to_int", ["f32[]"], "s32[]")
    check("map", "s32[2,2]", ["f32[2,2]"], "s32[2,2]", dimensions=(0, 1), to_apply=to_int)


# ----- shape changes -----------------------------------------------------------------

def test_iota():
    check("iota", "s32[4,5]", [], "s32[4,5]", iota_dimension=1)


def test_broadcast():
    check("broadcast", "f32[2,3,4]", ["f32[3]"], "f32[2,3,4]", dimensions=(1,))
    check("broadcast", "f32[2,3]", ["f32[]"], "f32[2,3]", dimensions=())
    check("broadcast", "f32[4,3]", ["f32[3,4]"], "f32[4,3]", dimensions=(1, 0))


def test_reshape():
    check("reshape", "f32[6]", ["f32[2,3]"], "f32[6]")
    check("reshape", "f32[1,2,1,3]", ["f32[6]"], "f32[1,2,1,3]")
    check("reshape", "f32[]", ["f32[1,1]"], "f32[]")


def test_bitcast_keeps_declared_shape():
    check("bitcast", "f32[3,2]", ["f32[2,3]"], "f32[3,2]")
    check("bitcast", "s32[6]", ["f32[2,3]"], "s32[6]")
    check("bitcast", "u8[24]", ["f32[6]"], "u8[24]")


def test_transpose():
    check("transpose", "f32[4,2,3]", ["f32[2,3,4]"], "f32[4,2,3]", dimensions=(2, 0, 1))


def test_copy_of_array_and_tuple():
    check("copy", "f32[2]", ["f32[2]"], "f32[2]")
    check("copy", "(f32[2], s32[])", ["(f32[2], s32[])"], "(f32[2], s32[])")


def test_slice():
    check("slice", "f32[2,2]", ["f32[10,4]"], "f32[2,2]",
          slice=(SliceDim(2, 4), SliceDim(0, 4, 2)))
    check("slice", "f32[3]", ["f32[10]"], "f32[3]", slice=(SliceDim(1, 10, 3),))  # 1, 4, 7


def test_dynamic_slice_scalar_and_array_indices():
    check("dynamic-slice", "f32[2,2]", ["f32[8,4]", "s32[]", "s32[]"], "f32[2,2]",
          dynamic_slice_sizes=(2, 2))
    check("dynamic-slice", "f32[2,2]", ["f32[8,4]", "s32[2]"], "f32[2,2]",
          dynamic_slice_sizes=(2, 2))


def test_dynamic_update_slice():
    check("dynamic-update-slice", "f32[8,4]", ["f32[8,4]", "f32[2,4]", "s32[]", "s32[]"], "f32[8,4]")


def test_concatenate():
    check("concatenate", "f32[2,7]", ["f32[2,3]", "f32[2,4]"], "f32[2,7]", dimensions=(1,))
    check("concatenate", "f32[6]", ["f32[1]", "f32[2]", "f32[3]"], "f32[6]", dimensions=(0,))


def test_pad_low_high_interior_and_negative():
    check("pad", "f32[10]", ["f32[4]", "f32[]"], "f32[10]", padding=(PaddingDim(1, 2, 1),))
    check("pad", "f32[2,5]", ["f32[4,3]", "f32[]"], "f32[2,5]",
          padding=(PaddingDim(-1, -1), PaddingDim(0, 2)))
    check("pad", "f32[1]", ["f32[0]", "f32[]"], "f32[1]", padding=(PaddingDim(1, 0, 3),))


def test_reverse():
    check("reverse", "f32[2,3]", ["f32[2,3]"], "f32[2,3]", dimensions=(0, 1))


def test_gather_embedding_lookup():
    # operand [vocab=10, emb=4], indices [5] -> [5,4]
    check("gather", "f32[5,4]", ["f32[10,4]", "s32[5]"], "f32[5,4]",
          offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,), index_vector_dim=1,
          slice_sizes=(1, 4))


def test_gather_with_offset_dims_first_and_explicit_index_vector():
    # operand [3,4,5], indices [2,6,2] (index_vector_dim 2); slices 1x2x5 with dim 0 collapsed:
    # batch dims 2 and 6 fill the output dims that are not offset dims
    check("gather", "f32[2,2,6,5]", ["f32[3,4,5]", "s64[2,6,2]"], "f32[2,2,6,5]",
          offset_dims=(1, 3), collapsed_slice_dims=(0,), start_index_map=(0, 1),
          index_vector_dim=2, slice_sizes=(1, 2, 5))


def test_gather_with_batching_dims():
    check("gather", "f32[3,7,4]", ["f32[3,10,4]", "s32[3,7,1]"], "f32[3,7,4]",
          offset_dims=(2,), collapsed_slice_dims=(1,), start_index_map=(1,), index_vector_dim=2,
          slice_sizes=(1, 1, 4), operand_batching_dims=(0,), start_indices_batching_dims=(0,))


def test_scatter_single_and_variadic():
    check("scatter", "f32[10,4]", ["f32[10,4]", "s32[5,1]", "f32[5,4]"], "f32[10,4]",
          update_window_dims=(1,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,),
          index_vector_dim=1, to_apply=ADD)
    add2 = comp("add2", ["f32[]", "s32[]", "f32[]", "s32[]"], "(f32[], s32[])")
    check("scatter", "(f32[10], s32[10])", ["f32[10]", "s32[10]", "s32[3]", "f32[3]", "s32[3]"],
          "(f32[10], s32[10])", update_window_dims=(), inserted_window_dims=(0,),
          scatter_dims_to_operand_dims=(0,), index_vector_dim=1, to_apply=add2)


# ----- reductions -----------------------------------------------------------------------

def test_reduce_single_and_variadic():
    check("reduce", "f32[3]", ["f32[2,3]", "f32[]"], "f32[3]", dimensions=(0,), to_apply=ADD)
    check("reduce", "f32[]", ["f32[2,3]", "f32[]"], "f32[]", dimensions=(0, 1), to_apply=ADD)
    argmax = comp("argmax", ["f32[]", "s32[]", "f32[]", "s32[]"], "(f32[], s32[])")
    check("reduce", "(f32[2], s32[2])", ["f32[2,5]", "s32[2,5]", "f32[]", "s32[]"],
          "(f32[2], s32[2])", dimensions=(1,), to_apply=argmax)


def test_reduce_window():
    # 2x2 max pool, stride 2, on [1,4,4,1]
    check("reduce-window", "f32[1,2,2,1]", ["f32[1,4,4,1]", "f32[]"], "f32[1,2,2,1]",
          window=W(1, (2, 2), (2, 2), 1), to_apply=ADD)
    # padding and dilations: base 5 dilated by 2 -> 9, pad 1_1 -> 11, window 3 dilated by 2 -> 5
    check("reduce-window", "f32[7]", ["f32[5]", "f32[]"], "f32[7]",
          window=W((3, 1, 1, 1, 2, 2)), to_apply=ADD)
    check("reduce-window", "f32[]", ["f32[]", "f32[]"], "f32[]", window=Window(()), to_apply=ADD)


def test_select_and_scatter():
    ge = comp("ge", ["f32[]", "f32[]"], "pred[]")
    check("select-and-scatter", "f32[4,4]", ["f32[4,4]", "f32[2,2]", "f32[]"], "f32[4,4]",
          window=W((2, 2), (2, 2)), select=ge, scatter=ADD)


# ----- dot and convolution ---------------------------------------------------------------

def test_dot_matmul_and_batched():
    check("dot", "f32[2,5]", ["f32[2,3]", "f32[3,5]"], "f32[2,5]",
          lhs_contracting_dims=(1,), rhs_contracting_dims=(0,))
    check("dot", "f32[7,2,5]", ["f32[7,2,3]", "f32[7,3,5]"], "f32[7,2,5]",
          lhs_batch_dims=(0,), rhs_batch_dims=(0,), lhs_contracting_dims=(2,), rhs_contracting_dims=(1,))
    check("dot", "f32[]", ["f32[3]", "f32[3]"], "f32[]",
          lhs_contracting_dims=(0,), rhs_contracting_dims=(0,))
    check("dot", "f32[2,4]", ["f32[2]", "f32[4]"], "f32[2,4]")  # outer product


def test_dot_result_type_is_the_declared_one():
    check("dot", "f32[2,5]", ["bf16[2,3]", "bf16[3,5]"], "f32[2,5]",
          lhs_contracting_dims=(1,), rhs_contracting_dims=(0,))
    check("dot", "s32[2,5]", ["s8[2,3]", "s8[3,5]"], "s32[2,5]",
          lhs_contracting_dims=(1,), rhs_contracting_dims=(0,))
    fails("dot", "s32[2,5]", ["f32[2,3]", "f32[3,5]"], "cannot produce element type s32",
          lhs_contracting_dims=(1,), rhs_contracting_dims=(0,))


def test_dot_low_level_without_preferred_type():
    assert si.infer_dot_shape(S("f32[2,3]"), S("f32[3,4]"), (1,), (0,)).to_text() == "f32[2,4]"
    with pytest.raises(ShapeError, match="different element types"):
        si.infer_dot_shape(S("f32[2,3]"), S("f16[3,4]"), (1,), (0,))


def conv(labels):
    return ConvDimensionNumbers.from_text(labels)


def test_convolution_nhwc():
    # [1,5,5,3] * [3,3,3,8] (01io), stride 1, no padding -> [1,3,3,8]
    check("convolution", "f32[1,3,3,8]", ["f32[1,5,5,3]", "f32[3,3,3,8]"], "f32[1,3,3,8]",
          window=W(3, 3), dim_labels=conv("b01f_01io->b01f"))


def test_convolution_padding_stride_dilation():
    # input 7, lhs_dilate 2 -> 13, pad 1_1 -> 15, window 3 rhs_dilate 2 -> 5, stride 2 -> 6
    check("convolution", "f32[2,4,6]", ["f32[2,3,7]", "f32[4,3,3]"], "f32[2,4,6]",
          window=W((3, 2, 1, 1, 2, 2)), dim_labels=conv("bf0_oi0->bf0"))


def test_convolution_feature_and_batch_groups():
    # depthwise: 6 input features in 3 groups -> kernel input features 2
    check("convolution", "f32[1,4,6]", ["f32[1,4,6]", "f32[1,2,6]"], "f32[1,4,6]",
          window=W(1), dim_labels=conv("b0f_0io->b0f"), feature_group_count=3)
    # batch groups: batch 4 / 2 groups -> output batch 2
    check("convolution", "f32[2,3,6]", ["f32[4,3,5]", "f32[1,5,6]"], "f32[2,3,6]",
          window=W(1), dim_labels=conv("b0f_0io->b0f"), batch_group_count=2)


# ----- sort, topk ---------------------------------------------------------------------------

def test_sort_single_and_variadic():
    check("sort", "f32[3,4]", ["f32[3,4]"], "f32[3,4]", dimensions=(1,), to_apply=LT)
    cmp2 = comp("cmp2", ["f32[]", "f32[]", "s32[]", "s32[]"], "pred[]")
    check("sort", "(f32[4], s32[4])", ["f32[4]", "s32[4]"], "(f32[4], s32[4])",
          dimensions=(0,), to_apply=cmp2)


def test_topk():
    check("topk", "(f32[3,2], s32[3,2])", ["f32[3,10]"], "(f32[3,2], s32[3,2])", k=2, largest=True)


# ----- tuples and control flow ----------------------------------------------------------------

def test_tuple_and_get_tuple_element():
    check("tuple", "(f32[2], (s32[]))", ["f32[2]", "(s32[])"], "(f32[2], (s32[]))")
    check("tuple", "()", [], "()")
    check("get-tuple-element", "s32[]", ["(f32[2], s32[])"], "s32[]", index=1)


def test_call_and_fusion_use_the_computation_result():
    body = comp("body", ["f32[2]", "s32[]"], "(f32[2])")
    check("call", "(f32[2])", ["f32[2]", "s32[]"], "(f32[2])", to_apply=body)
    fused = comp("fused", ["f32[2]"], "f32[3]")
    check("fusion", "f32[3]", ["f32[2]"], "f32[3]", kind="kLoop", calls=fused)


def test_while():
    cond = comp("cond", ["(s32[], f32[2])"], "pred[]")
    body = comp("body", ["(s32[], f32[2])"], "(s32[], f32[2])")
    check("while", "(s32[], f32[2])", ["(s32[], f32[2])"], "(s32[], f32[2])",
          condition=cond, body=body)


def test_conditional_pred_and_indexed_forms():
    t = comp("t", ["f32[2]"], "f32[]")
    f = comp("f", ["s32[]"], "f32[]")
    check("conditional", "f32[]", ["pred[]", "f32[2]", "s32[]"], "f32[]",
          true_computation=t, false_computation=f)
    b0 = comp("b0", ["f32[2]"], "f32[]")
    b1 = comp("b1", ["s32[]"], "f32[]")
    b2 = comp("b2", ["()"], "f32[]")
    check("conditional", "f32[]", ["s32[]", "f32[2]", "s32[]", "()"], "f32[]",
          branch_computations=(b0, b1, b2))


def test_declared_shape_ops():
    check("parameter", Shape.array("f32", (2,)), [], "f32[2]")
    check("custom-call", "(f32[2], u8[16])", ["f32[3]"], "(f32[2], u8[16])",
          custom_call_target="foo")
    instr = HloInstruction.create_constant(np.arange(6, dtype=np.float32).reshape(2, 3))
    assert si.infer_shape(instr).to_text() == "f32[2,3]"


def test_optimization_barrier_and_after_all():
    check("opt-barrier", "(f32[2], s32[])", ["(f32[2], s32[])"], "(f32[2], s32[])")
    check("after-all", "token[]", ["token[]", "token[]"], "token[]")
    check("after-all", "token[]", [], "token[]")
    # As XLA's verifier (HandleAfterAll): any operand orders, the result is a token.
    check("after-all", "token[]", ["f32[4]", "token[]", "(s32[], pred[2])"], "token[]")
    check("add-dependency", "f32[2]", ["f32[2]", "token[]"], "f32[2]")


# ----- RNG, linear algebra, FFT ----------------------------------------------------------------

def test_rng_family():
    check("rng", "f32[3,4]", ["f32[]", "f32[]"], "f32[3,4]", distribution="rng_uniform")
    check("rng-bit-generator", "(u64[2], u32[4,4])", ["u64[2]"], "(u64[2], u32[4,4])",
          algorithm="rng_default")
    check("rng-get-and-update-state", "u64[2]", [], "u64[2]")


def test_cholesky_and_triangular_solve():
    check("cholesky", "f32[2,4,4]", ["f32[2,4,4]"], "f32[2,4,4]", lower=True)
    check("triangular-solve", "f32[4,3]", ["f32[4,4]", "f32[4,3]"], "f32[4,3]",
          left_side=True, lower=True, transpose_a="NO_TRANSPOSE")
    check("triangular-solve", "f32[3,4]", ["f32[4,4]", "f32[3,4]"], "f32[3,4]",
          left_side=False, lower=True, transpose_a="NO_TRANSPOSE")


def test_fft_types():
    check("fft", "c64[2,8]", ["c64[2,8]"], "c64[2,8]", fft_type="FFT", fft_length=(8,))
    check("fft", "c64[2,5]", ["f32[2,8]"], "c64[2,5]", fft_type="RFFT", fft_length=(8,))
    check("fft", "f32[2,8]", ["c64[2,5]"], "f32[2,8]", fft_type="IRFFT", fft_length=(8,))


def test_fft_2d_rfft():
    check("fft", "c128[4,4]", ["f64[4,6]"], "c128[4,4]", fft_type="RFFT", fft_length=(4, 6))


# ----- collectives and ids ------------------------------------------------------------------------

def test_all_reduce():
    check("all-reduce", "f32[4]", ["f32[4]"], "f32[4]", to_apply=ADD, replica_groups=RawAttr("{}"))
    check("all-reduce", "(f32[4], f32[])", ["f32[4]", "f32[]"], "(f32[4], f32[])", to_apply=ADD)


def test_all_gather_with_and_without_known_group_size():
    check("all-gather", "f32[8,3]", ["f32[2,3]"], "f32[8,3]", dimensions=(0,),
          replica_groups=RawAttr("{{0,1,2,3}}"))
    check("all-gather", "f32[2,6]", ["f32[2,3]"], "f32[2,6]", dimensions=(1,),
          replica_groups=RawAttr("[2,2]<=[4]"))
    check("all-gather", "f32[6,3]", ["f32[2,3]"], "f32[6,3]", dimensions=(0,),
          replica_groups=RawAttr("{}"))


def test_group_of_replicas_with_all_their_partitions():
    # channel_id without use_global_device_ids: a group of replica ids brings
    # every partition of those replicas (the module's count), so {{0},{1}}
    # on 2 partitions scatters in 2; the declared size is checked to fit.
    check("reduce-scatter", "f32[4,3]", ["f32[8,3]"], "f32[4,3]", dimensions=(0,),
          channel_id=1, replica_groups=RawAttr("{{0},{1}}"), to_apply=ADD)
    check("all-gather", "f32[8,3]", ["f32[2,3]"], "f32[8,3]", dimensions=(0,),
          channel_id=1, replica_groups=RawAttr("{{0,1}}"))
    # Global device ids, or no channel: the group lists every participant.
    check("reduce-scatter", "f32[8,3]", ["f32[8,3]"], "f32[8,3]", dimensions=(0,),
          replica_groups=RawAttr("{{0},{1}}"), to_apply=ADD)
    check("all-gather", "f32[4,3]", ["f32[2,3]"], "f32[4,3]", dimensions=(0,), channel_id=1,
          use_global_device_ids=True, replica_groups=RawAttr("{{0,1}}"))
    fails("reduce-scatter", "f32[3,3]", ["f32[8,3]"], "does not fit", dimensions=(0,),
          channel_id=1, replica_groups=RawAttr("{{0},{1}}"), to_apply=ADD)
    fails("all-gather", "f32[7,3]", ["f32[2,3]"], "does not fit", dimensions=(0,),
          channel_id=1, replica_groups=RawAttr("{{0,1}}"))


def test_reduce_scatter_all_to_all_collective_permute():
    check("reduce-scatter", "f32[2,3]", ["f32[8,3]"], "f32[2,3]", dimensions=(0,),
          replica_groups=RawAttr("{{0,1,2,3}}"), to_apply=ADD)
    check("all-to-all", "f32[4,3]", ["f32[4,3]"], "f32[4,3]", dimensions=(0,),
          replica_groups=RawAttr("{{0,1}}"))
    check("all-to-all", "(f32[2], f32[2])", ["f32[2]", "f32[2]"], "(f32[2], f32[2])")
    check("collective-permute", "f32[4]", ["f32[4]"], "f32[4]",
          source_target_pairs=RawAttr("{{0,1},{1,0}}"))


def test_replica_and_partition_id():
    check("replica-id", "u32[]", [], "u32[]")
    check("partition-id", "u32[]", [], "u32[]")


def test_dynamic_dimension_ops():
    check("get-dimension-size", "s32[]", ["f32[<=8]"], "s32[]", dimensions=(0,))
    got = infer("set-dimension-size", "f32[<=8]", ["f32[8]", "s32[]"], dimensions=(0,))
    assert got.dimensions == (8,) and got.dynamic == (True,)


def test_batch_norm():
    check("batch-norm-training", "(f32[2,3], f32[3], f32[3])", ["f32[2,3]", "f32[3]", "f32[3]"],
          "(f32[2,3], f32[3], f32[3])", feature_index=1, epsilon=RawAttr("0.001"))


# ----- shapes_match ------------------------------------------------------------------------------

def test_shapes_match_ignores_layout_and_dynamic_flags():
    a = Shape.array("f32", (2, 3), layout=Layout((0, 1)))
    assert si.shapes_match(a, S("f32[2,3]"))
    assert si.shapes_match(S("f32[<=4]"), S("f32[4]"))
    assert not si.shapes_match(S("f32[<=4]"), S("f32[5]"))
    assert not si.shapes_match(S("f32[4]"), S("s32[4]"))


# ----- negative cases --------------------------------------------------------------------------------

def test_binary_dimension_mismatch_message():
    with pytest.raises(ShapeError) as e:
        infer("add", "f32[4]", ["f32[4]", "f32[3]"])
    assert "operand 1 has shape f32[3] but add needs f32[4]" in str(e.value)


def test_binary_type_mismatch_and_no_implicit_broadcast():
    fails("multiply", "f32[4]", ["f32[4]", "s32[4]"], "operand 1 has shape s32\\[4\\]")
    fails("add", "f32[4]", ["f32[4]", "f32[]"], "operand 1 has shape f32\\[\\]")


def test_elementwise_type_classes():
    fails("and", "f32[2]", ["f32[2]", "f32[2]"], "and does not accept element type f32")
    fails("shift-left", "f32[2]", ["f32[2]", "f32[2]"], "does not accept element type f32")
    fails("exponential", "s32[2]", ["s32[2]"], "exponential does not accept element type s32")
    fails("popcnt", "f32[2]", ["f32[2]"], "popcnt does not accept")
    fails("complex", "c64[2]", ["s32[2]", "s32[2]"], "complex does not accept")


def test_select_and_clamp_errors():
    fails("select", "f32[2]", ["pred[3]", "f32[2]", "f32[2]"], "predicate pred\\[3\\] must be a scalar")
    fails("select", "f32[2]", ["s32[2]", "f32[2]", "f32[2]"], "element type pred")
    fails("select", "f32[2]", ["pred[2]", "f32[2]", "f32[3]"], "operand 2 has shape f32\\[3\\]")
    fails("clamp", "f32[4]", ["f32[2]", "f32[4]", "f32[]"], "operand 0 has shape f32\\[2\\]")


def test_convert_errors():
    fails("convert", "f32[2]", ["c64[2]"], "convert from complex c64 to f32")
    fails("bitcast-convert", "f32[2]", ["u8[2,3]"], "needs a minor dimension of size 4")


def test_shape_change_errors():
    fails("reshape", "f32[7]", ["f32[2,3]"], "changes the element count")
    fails("broadcast", "f32[2,3]", ["f32[2]"], "operand dimension 0 has size 2 but output dimension 1 "
          "has size 3", dimensions=(1,))
    fails("broadcast", "f32[2,3]", ["f32[2]"], "needs 1 dimensions", dimensions=(0, 1))
    fails("transpose", "f32[2,3]", ["f32[2,3]"], "not a permutation", dimensions=(0, 0))
    fails("bitcast", "f32[5]", ["f32[2,3]"], "changes the size in bits")
    fails("iota", "s32[4]", [], "iota_dimension 1 is out of range", iota_dimension=1)


def test_slice_and_dynamic_slice_errors():
    fails("slice", "f32[4]", ["f32[3]"], "out of bounds", slice=(SliceDim(0, 4),))
    fails("slice", "f32[4]", ["f32[4]"], "stride 0", slice=(SliceDim(0, 4, 0),))
    fails("dynamic-slice", "f32[5]", ["f32[4]", "s32[]"], "slice size 5", dynamic_slice_sizes=(5,))
    fails("dynamic-slice", "f32[2,2]", ["f32[4,4]", "s32[]"], "needs 2 start indices",
          dynamic_slice_sizes=(2, 2))
    fails("dynamic-slice", "f32[2]", ["f32[4]", "f32[]"], "must be an integer scalar",
          dynamic_slice_sizes=(2,))
    fails("dynamic-update-slice", "f32[4]", ["f32[4]", "f32[5]", "s32[]"], "larger than operand")


def test_concatenate_and_pad_errors():
    fails("concatenate", "f32[2,7]", ["f32[2,3]", "f32[3,4]"], "operand 1 has shape f32\\[3,4\\]",
          dimensions=(1,))
    fails("concatenate", "f32[2,7]", ["f32[2,3]"], "dimension 2 is out of range", dimensions=(2,))
    fails("pad", "f32[4]", ["f32[4]", "s32[]"], "padding value", padding=(PaddingDim(0, 0),))
    fails("pad", "f32[4]", ["f32[4]", "f32[]"], "negative size", padding=(PaddingDim(-3, -3),))
    fails("pad", "f32[4]", ["f32[4]", "f32[]"], "interior padding -1", padding=(PaddingDim(0, 0, -1),))


def test_gather_scatter_errors():
    fails("gather", "f32[5,4]", ["f32[10,4]", "s32[5]"], "slice size 5 of dimension 1 does not fit",
          offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,), index_vector_dim=1,
          slice_sizes=(1, 5))
    fails("gather", "f32[5,4]", ["f32[10,4]", "s32[5]"], "collapsed or batching, so its slice size "
          "must be <= 1, got 2",
          offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,), index_vector_dim=1,
          slice_sizes=(2, 4))
    fails("gather", "f32[5,4]", ["f32[10,4]", "s32[5]"], "start_index_map has 2 entries",
          offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0, 1), index_vector_dim=1,
          slice_sizes=(1, 4))
    fails("scatter", "f32[10,4]", ["f32[10,4]", "s32[5,1]", "f32[5,5]"], "larger than operand",
          update_window_dims=(1,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,),
          index_vector_dim=1, to_apply=ADD)
    fails("scatter", "f32[10,4]", ["f32[10,4]", "s32[5,1]", "f32[5,4]"], "reducer parameter 0",
          update_window_dims=(1,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,),
          index_vector_dim=1, to_apply=ADD_S32)


def test_reduce_errors():
    fails("reduce", "f32[3]", ["f32[2,3]", "f32[]"], "dimension 2 is out of range", dimensions=(2,),
          to_apply=ADD)
    fails("reduce", "f32[3]", ["f32[2,3]", "f32[2]"], "init value", dimensions=(0,), to_apply=ADD)
    three = comp("three", ["f32[]", "f32[]", "f32[]"], "f32[]")
    fails("reduce", "f32[3]", ["f32[2,3]", "f32[]"], "must take 2 parameters", dimensions=(0,),
          to_apply=three)
    fails("reduce", "f32[3]", ["f32[2,3]", "f32[]", "f32[]"], "2N operands", dimensions=(0,),
          to_apply=ADD)


def test_window_errors():
    fails("reduce-window", "f32[2]", ["f32[4,4]", "f32[]"], "window has 1 dimensions",
          window=W(2), to_apply=ADD)
    ge = comp("ge", ["f32[]", "f32[]"], "pred[]")
    fails("select-and-scatter", "f32[4,4]", ["f32[4,4]", "f32[3,3]", "f32[]"],
          "operand 1 \\(source\\) has shape f32\\[3,3\\]", window=W((2, 2), (2, 2)), select=ge,
          scatter=ADD)
    fails("select-and-scatter", "f32[4,4]", ["f32[4,4]", "f32[2,2]", "f32[]"],
          "select computation .* must return pred", window=W((2, 2), (2, 2)), select=ADD, scatter=ADD)


def test_dot_errors():
    fails("dot", "f32[2,5]", ["f32[2,3]", "f32[4,5]"], "contracting dimension 1 of lhs f32\\[2,3\\]",
          lhs_contracting_dims=(1,), rhs_contracting_dims=(0,))
    fails("dot", "f32[2,5]", ["f32[2,3]", "f32[3,5]"], "out of range",
          lhs_contracting_dims=(2,), rhs_contracting_dims=(0,))
    fails("dot", "f32[2,3,5]", ["f32[2,3]", "f32[3,3,5]"], "batch dimension",
          lhs_batch_dims=(0,), rhs_batch_dims=(0,), lhs_contracting_dims=(1,), rhs_contracting_dims=(1,))


def test_convolution_errors():
    fails("convolution", "f32[1,3,3,8]", ["f32[1,5,5,4]", "f32[3,3,3,8]"],
          "kernel input feature size 3", window=W(3, 3), dim_labels=conv("b01f_01io->b01f"))
    fails("convolution", "f32[1,3,3,8]", ["f32[1,5,5,3]", "f32[3,3,3,8]"], "window size 2",
          window=W(2, 3), dim_labels=conv("b01f_01io->b01f"))
    fails("convolution", "f32[1,4,6]", ["f32[1,4,6]", "f32[1,2,6]"], "not a multiple of "
          "feature_group_count 4", window=W(1), dim_labels=conv("b0f_0io->b0f"), feature_group_count=4)


def test_sort_and_topk_errors():
    fails("sort", "(f32[4], s32[5])", ["f32[4]", "s32[5]"], "operand 1 has shape s32\\[5\\]",
          dimensions=(0,), to_apply=LT)
    fails("sort", "(f32[4], s32[4])", ["f32[4]", "s32[4]"], "comparator .* must take 4 parameters",
          dimensions=(0,), to_apply=LT)
    bad = comp("bad", ["f32[]", "f32[]"], "f32[]")
    fails("sort", "f32[4]", ["f32[4]"], "comparator must return pred", dimensions=(0,), to_apply=bad)
    fails("topk", "(f32[3,20], s32[3,20])", ["f32[3,10]"], "k=20 does not fit", k=20)


def test_control_flow_errors():
    cond = comp("cond", ["s32[]"], "pred[]")
    body = comp("body", ["s32[]"], "f32[]")
    fails("while", "s32[]", ["s32[]"], "body returns f32\\[\\] but must return s32\\[\\]",
          condition=cond, body=body)
    bad_cond = comp("bad_cond", ["s32[]"], "s32[]")
    fails("while", "s32[]", ["s32[]"], "condition must return pred", condition=bad_cond,
          body=comp("b", ["s32[]"], "s32[]"))
    b0 = comp("b0", ["f32[2]"], "f32[]")
    b1 = comp("b1", ["f32[2]"], "s32[]")
    fails("conditional", "f32[]", ["s32[]", "f32[2]", "f32[2]"], "branch 1 returns s32",
          branch_computations=(b0, b1))
    fails("conditional", "f32[]", ["f32[]", "f32[2]", "f32[2]"], "branch index",
          branch_computations=(b0, b0))
    fails("get-tuple-element", "f32[]", ["(f32[], s32[])"], "index 2 is out of range", index=2)
    fails("get-tuple-element", "f32[]", ["f32[]"], "needs a tuple operand", index=0)
    fails("call", "f32[]", ["s32[]"], "operand 0 has shape s32\\[\\] but call's computation parameter 0",
          to_apply=comp("c", ["f32[]"], "f32[]"))
    fails("map", "f32[4]", ["f32[4]"], "must take|takes 2 parameters",
          to_apply=ADD, dimensions=(0,))


def test_operand_count_errors():
    fails("add", "f32[]", ["f32[]"], "add takes 2 operands, got 1")
    fails("negate", "f32[]", ["f32[]", "f32[]"], "negate takes 1 operand, got 2")
    fails("dynamic-slice", "f32[]", ["f32[4]"], "dynamic-slice takes at least 2 operands")
    with pytest.raises(ShapeError, match="unknown opcode frobnicate"):
        infer("frobnicate", "f32[]", [])


def test_misc_errors():
    fails("cholesky", "f32[2,3]", ["f32[2,3]"], "square")
    fails("triangular-solve", "f32[3,4]", ["f32[4,4]", "f32[3,4]"], "needs size 4 in dimension 0",
          left_side=True)
    fails("fft", "c64[8]", ["f32[8]"], "needs a complex operand", fft_type="FFT", fft_length=(8,))
    with pytest.raises(ShapeError, match="after-all needs token"):
        si.infer_after_all_shape([S("token[]"), S("f32[]")])
    fails("rng", "f32[2]", ["f32[]", "s32[]"], "operand 1 has shape s32")
    fails("all-gather", "f32[8,3]", ["f32[2,3]"], "dimension 2 is out of range", dimensions=(2,),
          replica_groups=RawAttr("{}"))
    fails("reduce-scatter", "f32[2,3]", ["f32[7,3]"], "not divisible by the group size 4",
          dimensions=(0,), replica_groups=RawAttr("{{0,1,2,3}}"), to_apply=ADD)


def test_replica_group_size():
    assert si.replica_group_size(RawAttr("{{0,1},{2,3}}")) == 2
    assert si.replica_group_size(RawAttr("[4,2]<=[8]")) == 2
    assert si.replica_group_size(RawAttr("[2,4]<=[4,2]T(1,0)")) == 4
    assert si.replica_group_size(RawAttr("{}")) is None
