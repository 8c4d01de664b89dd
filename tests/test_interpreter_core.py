"""Tests of the interpreter's core: the evaluator, elementwise ops, data
movement, control flow and reduce.

Every expected value is written out by hand from XLA's documented semantics
(https://openxla.org/xla/operation_semantics) or from what XLA:CPU computes;
none is computed by the code under test.
"""
import math

import ml_dtypes
import numpy as np
import pytest

from xla.hlo.evaluator import Evaluator, evaluate
from xla.errors import InvalidArgumentError, UnimplementedError
from xla.hlo.ir import HloComputation, HloInstruction, HloModule
from xla.hlo.parser import parse_hlo_module
from xla.hlo.shape import Shape

bf16 = ml_dtypes.bfloat16
NAN = float("nan")
INF = float("inf")


def run(text, *args):
    return evaluate(parse_hlo_module(text), *args)


def binary(op, ty, a, b, dims=None, extra=""):
    """Runs ``op(a, b)`` on arrays of HLO type ``ty``; result type from op."""
    a = np.asarray(a)
    n = a.size
    shape = f"{ty}[{n}]"
    out = f"pred[{n}]" if op == "compare" else shape
    text = f"""
HloModule m
ENTRY e {{
  a = {shape} parameter(0)
  b = {shape} parameter(1)
  ROOT r = {out} {op}(a, b){extra}
}}"""
    return run(text, a, np.asarray(b))


def unary(op, ty, a, out_ty=None, extra=""):
    a = np.asarray(a)
    n = a.size
    text = f"""
HloModule m
ENTRY e {{
  a = {ty}[{n}] parameter(0)
  ROOT r = {out_ty or ty}[{n}] {op}(a){extra}
}}"""
    return run(text, a)


def assert_same(actual, expected):
    """Exact equality including dtype, NaN positions and the sign of zero."""
    expected = np.asarray(expected)
    actual = np.asarray(actual)
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    if actual.dtype.kind == "f" or actual.dtype == bf16:
        a = actual.astype(np.float64)
        e = expected.astype(np.float64)
        assert np.array_equal(np.isnan(a), np.isnan(e)), (actual, expected)
        ok = ~np.isnan(e)
        assert np.array_equal(a[ok], e[ok]), (actual, expected)
        assert np.array_equal(np.signbit(a[ok]), np.signbit(e[ok])), (actual, expected)
    else:
        assert np.array_equal(actual, expected), (actual, expected)


# ----------------------------------------------------------------------------
# integer arithmetic
# ----------------------------------------------------------------------------

def test_integer_add_multiply_wrap_around():
    i32 = np.int32
    assert_same(binary("add", "s32", i32([2147483647, -2147483648]), i32([1, -1])),
                i32([-2147483648, 2147483647]))
    assert_same(binary("multiply", "s32", i32([65536, 3]), i32([65536, -5])), i32([0, -15]))
    assert_same(binary("subtract", "u8", np.uint8([0, 5]), np.uint8([1, 7])), np.uint8([255, 254]))
    assert_same(binary("multiply", "s8", np.int8([16, -128]), np.int8([8, -1])), np.int8([-128, -128]))
    assert_same(unary("negate", "s32", i32([-2147483648, 5])), i32([-2147483648, -5]))
    assert_same(unary("abs", "s8", np.int8([-128, -3])), np.int8([-128, 3]))


def test_signed_division_rounds_toward_zero_and_by_zero():
    a = np.int32([7, -7, 7, -7, 5, -5, -2147483648, -2147483648, 0])
    b = np.int32([2, 2, -2, -2, 0, 0, -1, 0, 3])
    assert_same(binary("divide", "s32", a, b), np.int32([3, -3, -3, 3, -1, -1, -2147483648, -1, 0]))
    assert_same(binary("remainder", "s32", a, b), np.int32([1, -1, 1, -1, 5, -5, 0, -2147483648, 0]))


def test_unsigned_division_by_zero():
    a = np.uint32([7, 9, 4294967295])
    b = np.uint32([2, 0, 0])
    assert_same(binary("divide", "u32", a, b), np.uint32([3, 4294967295, 4294967295]))
    assert_same(binary("remainder", "u32", a, b), np.uint32([1, 9, 4294967295]))


def test_float_remainder_has_sign_of_dividend():
    a = np.float32([5.5, -5.5, 5.5, -5.5, 1.0])
    b = np.float32([2.0, 2.0, -2.0, -2.0, 0.0])
    assert_same(binary("remainder", "f32", a, b), np.float32([1.5, -1.5, 1.5, -1.5, NAN]))


def test_integer_power():
    a = np.int32([2, 3, 1, -1, -1, 2, 0, 0, -2, 2])
    b = np.int32([10, 3, -5, -1, -2, -1, 0, 3, 3, 31])
    # A negative exponent gives 1 for base 1 and 0 otherwise (XLA's emitter);
    # 2**31 wraps to INT_MIN.
    assert_same(binary("power", "s32", a, b),
                np.int32([1024, 27, 1, 0, 0, 0, 1, 0, -8, -2147483648]))


def test_float_power_special_cases():
    a = np.float32([NAN, 1.0, 2.0, 0.0, -8.0])
    b = np.float32([0.0, NAN, -1.0, -1.0, 1.0 / 3.0])
    assert_same(binary("power", "f32", a, b), np.float32([1.0, 1.0, 0.5, INF, NAN]))


def test_shifts_out_of_range():
    a = np.int32([1, 1, -8, -8, -8, -8, -8])
    amt = np.int32([31, 32, 1, 32, 33, -1, 2])
    assert_same(binary("shift-left", "s32", a, amt), np.int32([-2147483648, 0, -16, 0, 0, 0, -32]))
    # Arithmetic: sign fill for amounts >= 32 (a negative amount is a huge unsigned one).
    assert_same(binary("shift-right-arithmetic", "s32", a, amt), np.int32([0, 0, -4, -1, -1, -1, -2]))
    # Logical: zero fill; -8 >>> 1 = 0x7FFFFFFC.
    assert_same(binary("shift-right-logical", "s32", a, amt),
                np.int32([0, 0, 2147483644, 0, 0, 0, 1073741822]))
    assert_same(binary("shift-right-arithmetic", "u8", np.uint8([0x80, 0x80]), np.uint8([1, 9])),
                np.uint8([0xC0, 0xFF]))


def test_bitwise_and_not_popcnt_clz():
    assert_same(binary("and", "s32", np.int32([12, -1]), np.int32([10, 5])), np.int32([8, 5]))
    assert_same(binary("xor", "pred", np.bool_([True, True]), np.bool_([True, False])), np.bool_([False, True]))
    assert_same(unary("not", "s32", np.int32([0, 5])), np.int32([-1, -6]))
    assert_same(unary("not", "pred", np.bool_([True, False])), np.bool_([False, True]))
    assert_same(unary("popcnt", "s32", np.int32([0, 7, -1])), np.int32([0, 3, 32]))
    assert_same(unary("count-leading-zeros", "s32", np.int32([0, 1, -1, 65536])), np.int32([32, 31, 0, 15]))
    assert_same(unary("count-leading-zeros", "u8", np.uint8([0, 1, 255])), np.uint8([8, 7, 0]))


def test_pred_arithmetic():
    t, f = True, False
    a = np.bool_([t, t, f, f])
    b = np.bool_([t, f, t, f])
    assert_same(binary("add", "pred", a, b), np.bool_([t, t, t, f]))
    assert_same(binary("multiply", "pred", a, b), np.bool_([t, f, f, f]))
    assert_same(binary("maximum", "pred", a, b), np.bool_([t, t, t, f]))
    assert_same(binary("minimum", "pred", a, b), np.bool_([t, f, f, f]))


# ----------------------------------------------------------------------------
# floats
# ----------------------------------------------------------------------------

def test_maximum_minimum_propagate_nan():
    a = np.float32([NAN, 1.0, 3.0, -INF])
    b = np.float32([1.0, NAN, 2.0, 5.0])
    assert_same(binary("maximum", "f32", a, b), np.float32([NAN, NAN, 3.0, 5.0]))
    assert_same(binary("minimum", "f32", a, b), np.float32([NAN, NAN, 2.0, -INF]))


def test_compare_float_is_ieee():
    a = np.float32([NAN, NAN, 0.0, 1.0])
    b = np.float32([NAN, 1.0, -0.0, 2.0])
    dirs = {"EQ": [0, 0, 1, 0], "NE": [1, 1, 0, 1], "LT": [0, 0, 0, 1], "LE": [0, 0, 1, 1],
            "GT": [0, 0, 0, 0], "GE": [0, 0, 1, 0]}
    for d, expected in dirs.items():
        got = binary("compare", "f32", a, b, extra=f", direction={d}, type=FLOAT")
        assert_same(got, np.array(expected, bool))


def test_compare_totalorder():
    neg_nan = np.float32(np.frombuffer(np.uint32(0xFFC00000).tobytes(), np.float32)[0])
    order = np.float32([neg_nan, -INF, -1.0, -0.0, 0.0, 1e-45, 1.0, INF, NAN])
    n = len(order)
    a = np.repeat(order, n)
    b = np.tile(order, n)
    i = np.repeat(np.arange(n), n)
    j = np.tile(np.arange(n), n)
    text = f"""
HloModule m
ENTRY e {{
  a = f32[{n * n}] parameter(0)
  b = f32[{n * n}] parameter(1)
  lt = pred[{n * n}] compare(a, b), direction=LT, type=TOTALORDER
  eq = pred[{n * n}] compare(a, b), direction=EQ, type=TOTALORDER
  ROOT t = (pred[{n * n}], pred[{n * n}]) tuple(lt, eq)
}}"""
    lt, eq = run(text, a, b)
    assert_same(lt, i < j)
    assert_same(eq, i == j)


def test_compare_unsigned_type_and_bf16():
    got = binary("compare", "s32", np.int32([-1, 1]), np.int32([1, 2]), extra=", direction=LT, type=UNSIGNED")
    assert_same(got, np.bool_([False, True]))
    got = binary("compare", "bf16", np.array([1, NAN], bf16), np.array([2, NAN], bf16),
                 extra=", direction=LT")
    assert_same(got, np.bool_([True, False]))


def test_round_nearest_even_vs_afz():
    x = np.float32([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999997, 2.4, -0.0, NAN])
    assert_same(unary("round-nearest-even", "f32", x),
                np.float32([0.0, 2.0, 2.0, -0.0, -2.0, -2.0, 0.0, 2.0, -0.0, NAN]))
    assert_same(unary("round-nearest-afz", "f32", x),
                np.float32([1.0, 2.0, 3.0, -1.0, -2.0, -3.0, 0.0, 2.0, -0.0, NAN]))
    assert_same(unary("round-nearest-afz", "f64", np.float64([0.49999999999999994])), np.float64([0.0]))
    assert_same(unary("floor", "f32", np.float32([-1.5, 1.5])), np.float32([-2.0, 1.0]))
    assert_same(unary("ceil", "f32", np.float32([-1.5, 1.5])), np.float32([-1.0, 2.0]))


def test_sign():
    assert_same(unary("sign", "f32", np.float32([NAN, -0.0, 0.0, -3.0, 2.0, -INF])),
                np.float32([NAN, -0.0, 0.0, -1.0, 1.0, -1.0]))
    assert_same(unary("sign", "s32", np.int32([-7, 0, 9])), np.int32([-1, 0, 1]))


def test_transcendentals():
    x = np.float64([0.0, 0.5, -1.0])
    assert_same(unary("erf", "f64", x), np.float64([0.0, math.erf(0.5), math.erf(-1.0)]))
    assert_same(unary("logistic", "f64", np.float64([0.0, -1000.0, 1000.0])), np.float64([0.5, 0.0, 1.0]))
    assert_same(unary("rsqrt", "f32", np.float32([4.0, 0.0])), np.float32([0.5, INF]))
    np.testing.assert_allclose(unary("cbrt", "f64", np.float64([-27.0, 8.0])), [-3.0, 2.0], rtol=1e-15)
    assert_same(unary("is-finite", "f32", np.float32([1.0, INF, NAN]), out_ty="pred"),
                np.bool_([True, False, False]))
    assert_same(unary("exponential-minus-one", "f64", np.float64([0.0])), np.float64([0.0]))


def test_bf16_and_f16_compute_in_f32_and_round_once():
    # bf16 has 8 significant bits: near 1 the spacing is 2**-7, near 256 it is 2.
    a = np.array([1.0, 1.0, 256.0], bf16)
    b = np.array([2.0 ** -8, 3 * 2.0 ** -8, 1.0], bf16)
    # 1 + 2**-8 is halfway between 1 and 1 + 2**-7 -> even (1);
    # 1 + 3*2**-8 is halfway between 1 + 2**-7 and 1 + 2**-6 -> even (1 + 2**-6);
    # 257 is halfway between 256 and 258 -> even (256).
    assert_same(binary("add", "bf16", a, b), np.array([1.0, 1.015625, 256.0], bf16))
    # f16 (11 significant bits): 2049 is halfway between 2048 and 2050 -> 2048;
    # 2048 * 1.0009765625 = 2050 exactly.
    assert_same(binary("add", "f16", np.float16([2048, 2048]), np.float16([1, 3])), np.float16([2048, 2052]))
    assert_same(binary("multiply", "f16", np.float16([2048]), np.float16([1.0009765625])), np.float16([2050]))
    # Computed in f32, not f16: 60000 + 60000 - 60000 in one op chain is
    # per-op rounded: the first add overflows f16 to inf.
    text = """
HloModule m
ENTRY e {
  a = f16[1] parameter(0)
  s = f16[1] add(a, a)
  ROOT d = f16[1] subtract(s, a)
}"""
    assert_same(run(text, np.float16([60000])), np.float16([INF]))


def test_reduce_precision():
    text = """
HloModule m
ENTRY e {
  a = f32[5] parameter(0)
  ROOT r = f32[5] reduce-precision(a), exponent_bits=5, mantissa_bits=10
}"""
    # f16 semantics: 1 + 2**-11 rounds to even (1.0); 1 + 3*2**-11 rounds up
    # to 1 + 2**-9; 70000 overflows to inf; 1e-10 is below f16's range -> 0.
    x = np.float32([1 + 2.0 ** -11, 1 + 3 * 2.0 ** -11, 70000.0, -1e-10, NAN])
    assert_same(run(text, x), np.float32([1.0, 1 + 2.0 ** -9, INF, -0.0, NAN]))


# ----------------------------------------------------------------------------
# conversions
# ----------------------------------------------------------------------------

def test_convert_float_to_int_saturates_and_nan_is_zero():
    x = np.float32([NAN, INF, -INF, 3e9, -3e9, 2.9, -2.9, -0.5])
    assert_same(unary("convert", "f32", x, out_ty="s32"),
                np.int32([0, 2147483647, -2147483648, 2147483647, -2147483648, 2, -2, 0]))
    assert_same(unary("convert", "f32", np.float32([-1.0, 300.0, 255.9, NAN]), out_ty="u8"),
                np.uint8([0, 255, 255, 0]))
    assert_same(unary("convert", "f64", np.float64([1e19, -1e19, 9.2233720368547758e18]), out_ty="s64"),
                np.int64([9223372036854775807, -9223372036854775808, 9223372036854775807]))


def test_convert_rounding_pred_and_complex():
    # f32 -> bf16 rounds to nearest even: 1 + 2**-8 is halfway -> 1.0;
    # 1 + 2**-8 + 2**-20 is above halfway -> 1.0078125.
    x = np.float32([1 + 2.0 ** -8, 1 + 2.0 ** -8 + 2.0 ** -20, 1 + 3 * 2.0 ** -8])
    assert_same(unary("convert", "f32", x, out_ty="bf16"), np.array([1.0, 1.0078125, 1.015625], bf16))
    # f64 -> bf16 rounds once: 1 + 2**-8 + 2**-40 is just above halfway
    # (rounding to f32 first would lose the 2**-40 and round down to 1).
    assert_same(unary("convert", "f64", np.float64([1 + 2.0 ** -8 + 2.0 ** -40, 1 + 2.0 ** -8]), out_ty="bf16"),
                np.array([1.0078125, 1.0], bf16))
    # int -> f32: 16777217 is halfway between 16777216 and 16777218 -> even.
    assert_same(unary("convert", "s32", np.int32([16777217, 16777219]), out_ty="f32"),
                np.float32([16777216.0, 16777220.0]))
    assert_same(unary("convert", "f32", np.float32([0.0, -0.0, 0.5, NAN]), out_ty="pred"),
                np.bool_([False, False, True, True]))
    assert_same(unary("convert", "pred", np.bool_([True, False]), out_ty="f32"), np.float32([1.0, 0.0]))
    assert_same(unary("convert", "c64", np.complex64([1.5 + 2j]), out_ty="f32"), np.float32([1.5]))
    assert_same(unary("convert", "s32", np.int32([300, -1]), out_ty="u8"), np.uint8([44, 255]))


def test_bitcast_convert():
    assert_same(unary("bitcast-convert", "f32", np.float32([1.0, -2.0]), out_ty="s32"),
                np.int32([0x3F800000, -0x40000000]))
    text = """
HloModule m
ENTRY e {
  a = f32[2] parameter(0)
  ROOT r = u8[2,4] bitcast-convert(a)
}"""
    assert_same(run(text, np.float32([1.0, -2.0])), np.uint8([[0, 0, 0x80, 0x3F], [0, 0, 0, 0xC0]]))
    text = """
HloModule m
ENTRY e {
  a = u16[3,2] parameter(0)
  ROOT r = u32[3] bitcast-convert(a)
}"""
    assert_same(run(text, np.uint16([[1, 0], [0, 1], [0xFFFF, 0xFFFF]])), np.uint32([1, 65536, 0xFFFFFFFF]))


# ----------------------------------------------------------------------------
# data movement
# ----------------------------------------------------------------------------

def test_iota_broadcast_transpose_reverse():
    text = """
HloModule m
ENTRY e {
  i = s32[2,3] iota(), iota_dimension=1
  v = f32[2] parameter(0)
  b = f32[3,2] broadcast(v), dimensions={1}
  t = f32[2,3] transpose(b), dimensions={1,0}
  r = f32[2,3] reverse(t), dimensions={1,0}
  ROOT out = (s32[2,3], f32[3,2], f32[2,3]) tuple(i, b, r)
}"""
    i, b, r = run(text, np.float32([1, 2]))
    assert_same(i, np.int32([[0, 1, 2], [0, 1, 2]]))
    assert_same(b, np.float32([[1, 2], [1, 2], [1, 2]]))
    assert_same(r, np.float32([[2, 2, 2], [1, 1, 1]]))


def test_slice_concatenate_reshape():
    text = """
HloModule m
ENTRY e {
  a = s32[2,5] parameter(0)
  s = s32[2,2] slice(a), slice={[0:2], [1:5:2]}
  c = s32[2,7] concatenate(a, s), dimensions={1}
  ROOT r = s32[14] reshape(c)
}"""
    a = np.int32([[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]])
    assert_same(run(text, a), np.int32([0, 1, 2, 3, 4, 1, 3, 5, 6, 7, 8, 9, 6, 8]))


def test_dynamic_slice_clamps_start_indices():
    text = """
HloModule m
ENTRY e {
  a = s32[5] parameter(0)
  i = s32[] parameter(1)
  ROOT r = s32[3] dynamic-slice(a, i), dynamic_slice_sizes={3}
}"""
    a = np.int32([10, 11, 12, 13, 14])
    assert_same(run(text, a, np.int32(1)), np.int32([11, 12, 13]))
    assert_same(run(text, a, np.int32(4)), np.int32([12, 13, 14]))   # clamped to 5 - 3 = 2
    assert_same(run(text, a, np.int32(-7)), np.int32([10, 11, 12]))  # clamped to 0


def test_dynamic_update_slice_clamps_start_indices():
    text = """
HloModule m
ENTRY e {
  a = s32[2,4] parameter(0)
  u = s32[1,2] parameter(1)
  i = s32[] parameter(2)
  j = s32[] parameter(3)
  ROOT r = s32[2,4] dynamic-update-slice(a, u, i, j)
}"""
    a = np.zeros((2, 4), np.int32)
    u = np.int32([[7, 8]])
    assert_same(run(text, a, u, np.int32(5), np.int32(3)), np.int32([[0, 0, 0, 0], [0, 0, 7, 8]]))
    assert_same(run(text, a, u, np.int32(-1), np.int32(1)), np.int32([[0, 7, 8, 0], [0, 0, 0, 0]]))


def test_pad_negative_and_interior():
    text = """
HloModule m
ENTRY e {
  a = s32[3] parameter(0)
  z = s32[] constant(0)
  ROOT r = s32[6] pad(a, z), padding=-1_2_1
}"""
    # interior 1: [1,0,2,0,3]; low -1 crops the 1; high 2 appends two zeros.
    assert_same(run(text, np.int32([1, 2, 3])), np.int32([0, 2, 0, 3, 0, 0]))
    text = """
HloModule m
ENTRY e {
  a = f32[2,2] parameter(0)
  v = f32[] constant(9)
  ROOT r = f32[3,4] pad(a, v), padding=1_0x1_-1_2
}"""
    # dim 0: one row of 9s on top. dim 1: interior 2 gives [x, 9, 9, y];
    # low 1 prepends a 9: [9, x, 9, 9, y]; high -1 crops y: [9, x, 9, 9].
    a = np.float32([[1, 2], [3, 4]])
    assert_same(run(text, a), np.float32([[9, 9, 9, 9], [9, 1, 9, 9], [9, 3, 9, 9]]))


def test_bitcast_with_non_default_layouts():
    # Operand f32[2,3]{0,1} is column-major: physical order a00 a10 a01 a11 a02 a12.
    text = """
HloModule m
ENTRY e {
  a = f32[2,3]{0,1} parameter(0)
  ROOT r = f32[6]{0} bitcast(a)
}"""
    a = np.float32([[0, 1, 2], [3, 4, 5]])
    assert_same(run(text, a), np.float32([0, 3, 1, 4, 2, 5]))
    # The same buffer read back as f32[3,2]{0,1}: physical p0..p5 fills r[0,0], r[1,0], r[2,0], r[0,1]...
    text = """
HloModule m
ENTRY e {
  a = f32[2,3]{0,1} parameter(0)
  ROOT r = f32[3,2]{0,1} bitcast(a)
}"""
    assert_same(run(text, a), np.float32([[0, 4], [3, 2], [1, 5]]))
    # Row-major on both sides: a reshape.
    text = """
HloModule m
ENTRY e {
  a = f32[2,3]{1,0} parameter(0)
  ROOT r = f32[3,2]{1,0} bitcast(a)
}"""
    assert_same(run(text, a), np.float32([[0, 1], [2, 3], [4, 5]]))


def test_copy_with_layout_keeps_values():
    text = """
HloModule m
ENTRY e {
  a = f32[2,3]{1,0} parameter(0)
  ROOT r = f32[2,3]{0,1} copy(a)
}"""
    a = np.float32([[0, 1, 2], [3, 4, 5]])
    assert_same(run(text, a), a)


def test_select_and_clamp():
    text = """
HloModule m
ENTRY e {
  p = pred[3] parameter(0)
  a = f32[3] parameter(1)
  b = f32[3] parameter(2)
  lo = f32[] constant(0)
  hi = f32[] constant(2)
  s = f32[3] select(p, a, b)
  ROOT c = f32[3] clamp(lo, s, hi)
}"""
    got = run(text, np.bool_([True, False, True]), np.float32([-1, 5, 1.5]), np.float32([9, 3, 9]))
    assert_same(got, np.float32([0, 2, 1.5]))


def test_constant_tuple_and_elided_constant():
    text = """
HloModule m
ENTRY e {
  c = s32[2,2] constant({{1, 2}, {3, 4}})
  d = f32[] constant(1.5)
  ROOT t = (s32[2,2], f32[]) tuple(c, d)
}"""
    c, d = run(text)
    assert_same(c, np.int32([[1, 2], [3, 4]]))
    assert_same(d, np.float32(1.5))
    text = """
HloModule m
ENTRY e {
  ROOT c = f32[100] constant({...})
}"""
    with pytest.raises(InvalidArgumentError, match="elided"):
        run(text)


# ----------------------------------------------------------------------------
# control flow and calls
# ----------------------------------------------------------------------------

WHILE = """
HloModule m
cond {
  s = (s32[], s32[]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(5)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  s = (s32[], s32[]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  acc = s32[] get-tuple-element(s), index=1
  one = s32[] constant(1)
  i2 = s32[] add(i, one)
  acc2 = s32[] multiply(acc, i2)
  ROOT t = (s32[], s32[]) tuple(i2, acc2)
}
ENTRY e {
  z = s32[] parameter(0)
  one = s32[] constant(1)
  init = (s32[], s32[]) tuple(z, one)
  ROOT w = (s32[], s32[]) while(init), condition=cond, body=body
}"""


def test_while_loop():
    i, acc = run(WHILE, np.int32(0))
    assert_same(i, np.int32(5))
    assert_same(acc, np.int32(120))  # 5!
    i, acc = run(WHILE, np.int32(7))  # condition false at once
    assert_same(i, np.int32(7))
    assert_same(acc, np.int32(1))


CONDITIONAL_PRED = """
HloModule m
t {
  x = f32[] parameter(0)
  ROOT n = f32[] negate(x)
}
f {
  x = f32[] parameter(0)
  ROOT e = f32[] exponential(x)
}
ENTRY e {
  p = pred[] parameter(0)
  x = f32[] parameter(1)
  ROOT c = f32[] conditional(p, x, x), true_computation=t, false_computation=f
}"""

CONDITIONAL_INDEXED = """
HloModule m
b0 {
  x = s32[] parameter(0)
  ROOT n = s32[] negate(x)
}
b1 {
  x = s32[] parameter(0)
  ROOT a = s32[] add(x, x)
}
b2 {
  x = s32[] parameter(0)
  ROOT m = s32[] multiply(x, x)
}
ENTRY e {
  i = s32[] parameter(0)
  x = s32[] parameter(1)
  ROOT c = s32[] conditional(i, x, x, x), branch_computations={b0, b1, b2}
}"""


def test_conditional_pred_form():
    assert_same(run(CONDITIONAL_PRED, np.bool_(True), np.float32(2)), np.float32(-2))
    assert_same(run(CONDITIONAL_PRED, np.bool_(False), np.float32(0)), np.float32(1))


def test_conditional_indexed_form_out_of_range_runs_last_branch():
    x = np.int32(3)
    assert_same(run(CONDITIONAL_INDEXED, np.int32(0), x), np.int32(-3))
    assert_same(run(CONDITIONAL_INDEXED, np.int32(1), x), np.int32(6))
    assert_same(run(CONDITIONAL_INDEXED, np.int32(2), x), np.int32(9))
    assert_same(run(CONDITIONAL_INDEXED, np.int32(7), x), np.int32(9))
    assert_same(run(CONDITIONAL_INDEXED, np.int32(-1), x), np.int32(9))


def test_call_and_fusion():
    text = """
HloModule m
sq {
  x = f32[2] parameter(0)
  ROOT m = f32[2] multiply(x, x)
}
fused {
  a = f32[2] parameter(0)
  b = f32[2] parameter(1)
  ROOT s = f32[2] subtract(a, b)
}
ENTRY e {
  x = f32[2] parameter(0)
  c = f32[2] call(x), to_apply=sq
  ROOT f = f32[2] fusion(c, x), kind=kLoop, calls=fused
}"""
    assert_same(run(text, np.float32([3, -2])), np.float32([6, 6]))


def test_map():
    text = """
HloModule m
fn {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  two = f32[] constant(2)
  m = f32[] multiply(a, two)
  ROOT s = f32[] add(m, b)
}
ENTRY e {
  x = f32[2,2] parameter(0)
  y = f32[2,2] parameter(1)
  ROOT r = f32[2,2] map(x, y), dimensions={0,1}, to_apply=fn
}"""
    got = run(text, np.float32([[1, 2], [3, 4]]), np.float32([[10, 20], [30, 40]]))
    assert_same(got, np.float32([[12, 24], [36, 48]]))


def test_tokens_barriers_and_ids():
    text = """
HloModule m
ENTRY e {
  x = f32[2] parameter(0)
  tok = token[] after-all()
  b = f32[2] opt-barrier(x)
  d = f32[2] add-dependency(b, tok)
  r = u32[] replica-id()
  ROOT t = (f32[2], u32[], token[]) tuple(d, r, tok)
}"""
    d, r, tok = run(text, np.float32([1, 2]))
    assert_same(d, np.float32([1, 2]))
    assert_same(r, np.uint32(0))
    assert repr(tok) == "TOKEN"


# ----------------------------------------------------------------------------
# reduce
# ----------------------------------------------------------------------------

def test_reduce_add_integers_wrap():
    text = """
HloModule m
add {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT s = s32[] add(a, b)
}
ENTRY e {
  x = s32[2,3] parameter(0)
  z = s32[] constant(10)
  ROOT r = s32[3] reduce(x, z), dimensions={0}, to_apply=add
}"""
    x = np.int32([[2147483647, 1, -5], [1, 2, -2147483648]])
    assert_same(run(text, x), np.int32([-2147483638, 13, 2147483653 - 2 ** 32]))


def test_reduce_general_reducer_is_applied_in_order():
    # A non-commutative reducer: r(acc, x) = 2 * acc + x, i.e. base-2 digits
    # read left to right -- not associative either, so a tree gives another
    # value; we only check a case where both agree: a single element plus init.
    text = """
HloModule m
red {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT s = s32[] subtract(a, b)
}
ENTRY e {
  x = s32[2,1] parameter(0)
  z = s32[] constant(100)
  ROOT r = s32[2] reduce(x, z), dimensions={1}, to_apply=red
}"""
    assert_same(run(text, np.int32([[1], [7]])), np.int32([99, 93]))


def test_reduce_max_nan_and_empty():
    text = """
HloModule m
mx {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] maximum(a, b)
}
ENTRY e {
  x = f32[2,3] parameter(0)
  z = f32[] constant(-inf)
  ROOT r = f32[2] reduce(x, z), dimensions={1}, to_apply=mx
}"""
    assert_same(run(text, np.float32([[1, NAN, 3], [4, 5, -1]])), np.float32([NAN, 5]))
    empty = text.replace("f32[2,3]", "f32[2,0]")
    assert_same(run(empty, np.zeros((2, 0), np.float32)), np.float32([-INF, -INF]))


ARGMAX = """
HloModule m
argmax {
  v0 = f32[] parameter(0)
  i0 = s32[] parameter(1)
  v1 = f32[] parameter(2)
  i1 = s32[] parameter(3)
  gt = pred[] compare(v0, v1), direction=GT
  eq = pred[] compare(v0, v1), direction=EQ
  lt_i = pred[] compare(i0, i1), direction=LT
  tie = pred[] and(eq, lt_i)
  keep = pred[] or(gt, tie)
  v = f32[] select(keep, v0, v1)
  i = s32[] select(keep, i0, i1)
  ROOT t = (f32[], s32[]) tuple(v, i)
}
ENTRY e {
  x = f32[2,5] parameter(0)
  idx = s32[2,5] iota(), iota_dimension=1
  ninf = f32[] constant(-inf)
  zero = s32[] constant(0)
  ROOT r = (f32[2], s32[2]) reduce(x, idx, ninf, zero), dimensions={1}, to_apply=argmax
}"""


def test_variadic_reduce_argmax_breaks_ties_by_smallest_index():
    x = np.float32([[1, 7, 3, 7, 7], [2, 2, 2, 2, 2]])
    v, i = run(ARGMAX, x)
    assert_same(v, np.float32([7, 2]))
    assert_same(i, np.int32([1, 0]))


def test_reduce_bf16_and_pred():
    text = """
HloModule m
add {
  a = pred[] parameter(0)
  b = pred[] parameter(1)
  ROOT s = pred[] or(a, b)
}
ENTRY e {
  x = pred[2,2] parameter(0)
  f = pred[] constant(false)
  ROOT r = pred[2] reduce(x, f), dimensions={1}, to_apply=add
}"""
    assert_same(run(text, np.bool_([[False, True], [False, False]])), np.bool_([True, False]))


# ----------------------------------------------------------------------------
# the evaluator
# ----------------------------------------------------------------------------

NEG = """
HloModule m
ENTRY e {
  a = f32[2,3] parameter(0)
  ROOT r = f32[2,3] negate(a)
}"""


def test_bad_arguments():
    module = parse_hlo_module(NEG)
    with pytest.raises(InvalidArgumentError, match="1 argument"):
        evaluate(module)
    with pytest.raises(InvalidArgumentError, match="1 argument"):
        evaluate(module, np.zeros((2, 3), np.float32), np.zeros((2, 3), np.float32))
    with pytest.raises(InvalidArgumentError, match="shape"):
        evaluate(module, np.zeros((3, 2), np.float32))
    with pytest.raises(InvalidArgumentError, match="element type"):
        evaluate(module, np.zeros((2, 3), np.float64))


def test_unknown_opcode_is_unimplemented():
    s = Shape.array("f32", (2,))
    p = HloInstruction.create_parameter(0, s, "p")
    bogus = HloInstruction("no-such-op", s, [p], name="bogus")
    comp = HloComputation("e", [p, bogus], is_entry=True)
    module = HloModule("m", [comp])
    with pytest.raises(UnimplementedError, match="no-such-op.*interpreter"):
        evaluate(module, np.zeros(2, np.float32))


def test_call_elementwise_variadic_and_scalar_constants():
    module = parse_hlo_module(ARGMAX)
    comp = module.computation("argmax")
    ev = Evaluator()
    v, i = ev.call_elementwise(comp, [np.float32([1, 5, 2]), np.int32([0, 1, 2]),
                                      np.float32([1, 4, 3]), np.int32([3, 4, 5])])
    assert_same(v, np.float32([1, 5, 3]))
    assert_same(i, np.int32([0, 1, 5]))
    # A computation whose root is a constant still yields arrays of the input shape.
    text = """
HloModule m
always {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT t = pred[] constant(true)
}
ENTRY e {
  ROOT c = f32[] constant(0)
}"""
    comp = parse_hlo_module(text).computation("always")
    assert_same(ev.call_elementwise(comp, [np.float32([1, 2]), np.float32([3, 4])]), np.bool_([True, True]))


def test_module_built_in_code():
    s = Shape.array("s32", (3,))
    p = HloInstruction.create_parameter(0, s, "p")
    c = HloInstruction.create_constant(np.int32([1, 2, 3]))
    add = HloInstruction("add", s, [p, c])
    module = HloModule("m", [HloComputation("e", [p, c, add], is_entry=True)])
    assert_same(evaluate(module, np.int32([10, 20, 30])), np.int32([11, 22, 33]))


def test_more_data_movement_corner_cases():
    text = """
HloModule m
ENTRY e {
  a = s32[4] parameter(0)
  i = u32[] parameter(1)
  d = s32[2] dynamic-slice(a, i), dynamic_slice_sizes={2}
  io = bf16[3] iota(), iota_dimension=0
  x = f32[3] parameter(2)
  lo = f32[] constant(-1)
  hi = f32[] constant(1)
  c = f32[3] clamp(lo, x, hi)
  ROOT t = (s32[2], bf16[3], f32[3]) tuple(d, io, c)
}"""
    d, io, c = run(text, np.int32([1, 2, 3, 4]), np.uint32(0xFFFFFFFF), np.float32([-5, 0.5, NAN]))
    assert_same(d, np.int32([3, 4]))  # a huge unsigned start clamps to 4 - 2
    assert_same(io, np.array([0, 1, 2], bf16))
    assert_same(c, np.float32([-1, 0.5, NAN]))


def test_reduce_general_reducer_over_several_dimensions():
    # A reducer NumPy cannot do directly (max of absolute values, as a
    # computation) over dimensions {0, 2}.
    text = """
HloModule m
absmax {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  aa = f32[] abs(a)
  ab = f32[] abs(b)
  ROOT m = f32[] maximum(aa, ab)
}
ENTRY e {
  x = f32[2,2,3] parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[2] reduce(x, z), dimensions={0,2}, to_apply=absmax
}"""
    x = np.float32([[[1, -9, 2], [0, 3, 4]], [[-2, 5, 1], [-7, 1, 1]]])
    assert_same(run(text, x), np.float32([9, 7]))


def test_while_with_dynamic_update_slice_loop():
    # fori_loop(0, 4, lambda i, buf: buf.at[i].set(i * i), zeros(4))
    text = """
HloModule m
cond {
  s = (s32[], s32[4]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(4)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  s = (s32[], s32[4]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  buf = s32[4] get-tuple-element(s), index=1
  sq = s32[] multiply(i, i)
  u = s32[1] reshape(sq)
  nb = s32[4] dynamic-update-slice(buf, u, i)
  one = s32[] constant(1)
  i2 = s32[] add(i, one)
  ROOT t = (s32[], s32[4]) tuple(i2, nb)
}
ENTRY e {
  z = s32[] constant(0)
  buf = s32[4] broadcast(z), dimensions={}
  init = (s32[], s32[4]) tuple(z, buf)
  w = (s32[], s32[4]) while(init), condition=cond, body=body
  ROOT r = s32[4] get-tuple-element(w), index=1
}"""
    assert_same(run(text), np.int32([0, 1, 4, 9]))
