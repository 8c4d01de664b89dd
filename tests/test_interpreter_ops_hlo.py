"""End-to-end tests of the interpreter's ops_*.py handlers from HLO text."""
import numpy as np
import pytest

from xla.hlo.evaluator import evaluate
from xla.errors import UnimplementedError
from xla.hlo.parser import parse_hlo_module


def run(text, *args):
    return evaluate(parse_hlo_module(text), *[np.asarray(a) for a in args])


def test_sort_jax_style_two_keys_and_payload():
    text = """
HloModule sort

%cmp (a: f32[], b: f32[], c: s32[], d: s32[], e: s32[], f: s32[]) -> pred[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  %c = s32[] parameter(2)
  %d = s32[] parameter(3)
  %e = s32[] parameter(4)
  %f = s32[] parameter(5)
  %lt0 = pred[] compare(%a, %b), direction=LT, type=TOTALORDER
  %eq0 = pred[] compare(%a, %b), direction=EQ, type=TOTALORDER
  %lt1 = pred[] compare(%c, %d), direction=LT
  %and = pred[] and(%eq0, %lt1)
  ROOT %or = pred[] or(%lt0, %and)
}

ENTRY %main (x: f32[6], y: s32[6], z: s32[6]) -> (f32[6], s32[6], s32[6]) {
  %x = f32[6] parameter(0)
  %y = s32[6] parameter(1)
  %z = s32[6] parameter(2)
  ROOT %s = (f32[6], s32[6], s32[6]) sort(%x, %y, %z), dimensions={0}, is_stable=true, to_apply=%cmp
}
"""
    x = np.array([2, np.nan, 1, 2, -0.0, 0.0], np.float32)
    y = np.array([5, 0, 0, 1, 0, 0], np.int32)
    z = np.arange(6, dtype=np.int32)
    sx, sy, sz = run(text, x, y, z)
    np.testing.assert_array_equal(sz, [4, 5, 2, 3, 0, 1])
    np.testing.assert_array_equal(sy, [0, 0, 0, 1, 5, 0])
    assert np.isnan(sx[-1])


def test_sort_generic_comparator_descending_by_abs():
    text = """
HloModule sort

%cmp (a: f32[], b: f32[]) -> pred[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  %aa = f32[] abs(%a)
  %ab = f32[] abs(%b)
  ROOT %gt = pred[] compare(%aa, %ab), direction=GT
}

ENTRY %main (x: f32[2,5]) -> f32[2,5] {
  %x = f32[2,5] parameter(0)
  ROOT %s = f32[2,5] sort(%x), dimensions={1}, is_stable=true, to_apply=%cmp
}
"""
    x = np.array([[1, -3, 2, 3, -1], [0, 5, -5, 4, 1]], np.float32)
    out = run(text, x)
    np.testing.assert_array_equal(out, [[-3, 3, 2, 1, -1], [5, -5, 4, 1, 0]])


def test_max_pool_and_its_gradient():
    text = """
HloModule pool

%max (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %m = f32[] maximum(%a, %b)
}

%ge (a: f32[], b: f32[]) -> pred[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %c = pred[] compare(%a, %b), direction=GE
}

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}

ENTRY %main (x: f32[1,4,4,1], g: f32[1,2,2,1]) -> (f32[1,2,2,1], f32[1,4,4,1]) {
  %x = f32[1,4,4,1] parameter(0)
  %g = f32[1,2,2,1] parameter(1)
  %ninf = f32[] constant(-inf)
  %zero = f32[] constant(0)
  %p = f32[1,2,2,1] reduce-window(%x, %ninf), window={size=1x2x2x1 stride=1x2x2x1}, to_apply=%max
  %d = f32[1,4,4,1] select-and-scatter(%x, %g, %zero), window={size=1x2x2x1 stride=1x2x2x1}, select=%ge, scatter=%add
  ROOT %t = (f32[1,2,2,1], f32[1,4,4,1]) tuple(%p, %d)
}
"""
    x = np.array([[1, 2, 0, 0], [4, 3, 0, 7], [5, 5, 1, 1], [5, 1, 1, 1]], np.float32).reshape(1, 4, 4, 1)
    g = np.array([[10, 20], [30, 40]], np.float32).reshape(1, 2, 2, 1)
    p, d = run(text, x, g)
    np.testing.assert_array_equal(p.reshape(2, 2), [[4, 7], [5, 1]])
    ref = np.zeros((4, 4), np.float32)
    ref[1, 0] = 10
    ref[1, 3] = 20
    ref[2, 0] = 30    # first of the tied 5s
    ref[2, 2] = 40    # first of the tied 1s
    np.testing.assert_array_equal(d.reshape(4, 4), ref)


def test_scatter_add_and_gather_from_text():
    text = """
HloModule gs

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}

ENTRY %main (op: f32[4,2], i: s32[3,1], u: f32[3,2]) -> (f32[4,2], f32[3,2]) {
  %op = f32[4,2] parameter(0)
  %i = s32[3,1] parameter(1)
  %u = f32[3,2] parameter(2)
  %sc = f32[4,2] scatter(%op, %i, %u), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=%add
  %ga = f32[3,2] gather(%sc, %i), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,2}
  ROOT %t = (f32[4,2], f32[3,2]) tuple(%sc, %ga)
}
"""
    op = np.zeros((4, 2), np.float32)
    i = np.array([[1], [1], [7]], np.int32)
    u = np.array([[1, 2], [3, 4], [5, 6]], np.float32)
    sc, ga = run(text, op, i, u)
    np.testing.assert_array_equal(sc, [[0, 0], [4, 6], [0, 0], [0, 0]])
    np.testing.assert_array_equal(ga, [[4, 6], [4, 6], [0, 0]])   # index 7 clamps to 3


def test_dot_conv_and_rng_from_text():
    text = """
HloModule m

ENTRY %main (a: s8[2,3], b: s8[3,2], x: f32[1,5,1], w: f32[3,1,1], s: u64[2]) -> (s32[2,2], f32[1,3,1], (u64[2], u32[4])) {
  %a = s8[2,3] parameter(0)
  %b = s8[3,2] parameter(1)
  %x = f32[1,5,1] parameter(2)
  %w = f32[3,1,1] parameter(3)
  %s = u64[2] parameter(4)
  %d = s32[2,2] dot(%a, %b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %c = f32[1,3,1] convolution(%x, %w), window={size=3 stride=2 pad=1_1}, dim_labels=b0f_0io->b0f
  %r = (u64[2], u32[4]) rng-bit-generator(%s), algorithm=rng_three_fry
  ROOT %t = (s32[2,2], f32[1,3,1], (u64[2], u32[4])) tuple(%d, %c, %r)
}
"""
    a = np.full((2, 3), 127, np.int8)
    b = np.full((3, 2), -128, np.int8)
    x = np.arange(1, 6, dtype=np.float32).reshape(1, 5, 1)
    w = np.array([1, 10, 100], np.float32).reshape(3, 1, 1)
    d, c, (state, bits) = run(text, a, b, x, w, np.array([0, 0], np.uint64))
    np.testing.assert_array_equal(d, np.full((2, 2), 3 * 127 * -128))
    # padded x = [0,1,2,3,4,5,0]; windows at 0, 2, 4
    np.testing.assert_array_equal(c.reshape(-1), [0 + 10 + 200, 2 + 30 + 400, 4 + 50 + 0])
    np.testing.assert_array_equal(state, [0, 2])
    assert int(bits[0]) == 0x6B200159 and int(bits[1]) == 0x99BA4EFE


def test_topk_and_unknown_custom_call_from_text():
    text = """
HloModule m

ENTRY %main (x: f32[5]) -> (f32[2], s32[2]) {
  %x = f32[5] parameter(0)
  ROOT %t = (f32[2], s32[2]) topk(%x), k=2, largest=true
}
"""
    v, i = run(text, np.array([3, 9, 1, 9, 2], np.float32))
    np.testing.assert_array_equal(v, [9, 9])
    np.testing.assert_array_equal(i, [1, 3])
    bad = """
HloModule m

ENTRY %main (x: f32[5]) -> f32[5] {
  %x = f32[5] parameter(0)
  ROOT %c = f32[5] custom-call(%x), custom_call_target="no_such_target"
}
"""
    with pytest.raises(UnimplementedError, match="no_such_target"):
        run(bad, np.zeros(5, np.float32))


def test_gather_with_unsigned_start_indices_clamps():
    # u32 start indices: 7 clamps to 3 (= 4 - 1), 4000000000 clamps to 3 too.
    import numpy as np
    from xla.hlo.evaluator import evaluate
    from xla.hlo.parser import parse_hlo_module
    module = parse_hlo_module("""HloModule g
ENTRY %main (x: f32[4], i: u32[3,1]) -> f32[3,1] {
  %x = f32[4] parameter(0)
  %i = u32[3,1] parameter(1)
  ROOT %g = f32[3,1] gather(%x, %i), offset_dims={1}, collapsed_slice_dims={}, start_index_map={0}, index_vector_dim=1, slice_sizes={1}
}
""")
    x = np.array([10, 11, 12, 13], np.float32)
    i = np.array([[1], [7], [4000000000]], np.uint32)
    np.testing.assert_array_equal(evaluate(module, x, i), np.array([[11], [13], [13]], np.float32))


def test_gather_with_a_scalar_result():
    # x[i] as jnp.take lowers it: was a result of shape [1]
    out = run("""HloModule m
ENTRY e {
  x = f32[5] parameter(0)
  i = s32[] parameter(1)
  ROOT g = f32[] gather(x, i), offset_dims={}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=0, slice_sizes={1}
}""", np.arange(5, dtype=np.float32) * 10, np.int32(3))
    assert np.asarray(out).shape == () and float(out) == 30.0


def test_bitcast_convert_of_4_bit_types_packs_like_xla():
    import ml_dtypes
    x = np.array([[1, -2], [3, -4], [5, -6], [7, -8]], dtype=ml_dtypes.int4)
    # Expected values from jax 0.10.2 (jax.lax.bitcast_convert_type under jit, XLA:CPU).
    packed = run("HloModule m\nENTRY e {\n  x = s4[4,2] parameter(0)\n"
                 "  ROOT b = s8[4] bitcast-convert(x)\n}", x)
    assert np.asarray(packed).tolist() == [-31, -61, -91, -121]
    same = run("HloModule m\nENTRY e {\n  x = s4[4,2] parameter(0)\n"
               "  ROOT b = u4[4,2] bitcast-convert(x)\n}", x)
    assert np.asarray(same).astype(int).tolist() == [[1, 14], [3, 12], [5, 10], [7, 8]]
    unpacked = run("HloModule m\nENTRY e {\n  x = s8[4] parameter(0)\n"
                   "  ROOT b = s4[4,2] bitcast-convert(x)\n}", np.array([0x21, -0x6d, 127, -128], np.int8))
    assert np.asarray(unpacked).astype(int).tolist() == [[1, 2], [3, -7], [-1, 7], [0, -8]]


def test_dynamic_reshape_checks_its_sizes():
    from xla.errors import InvalidArgumentError
    text = """HloModule m
ENTRY e {
  x = f32[2,3] parameter(0)
  a = s32[] parameter(1)
  b = s32[] parameter(2)
  ROOT r = f32[<=6,<=3] dynamic-reshape(x, a, b)
}"""
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    assert np.asarray(run(text, x, np.int32(6), np.int32(1))).tolist() == [[0], [1], [2], [3], [4], [5]]
    assert np.asarray(run(text, x, np.int32(3), np.int32(2))).shape == (3, 2)
    with pytest.raises(InvalidArgumentError, match=r"dynamic-reshape r: sizes \[3, 1\] hold 3 "
                                                   r"elements, the operand 6"):
        run(text, x, np.int32(3), np.int32(1))
    with pytest.raises(InvalidArgumentError, match=r"sizes \[-1, 3\] are not within"):
        run(text, x, np.int32(-1), np.int32(3))
    with pytest.raises(InvalidArgumentError, match=r"sizes \[1, 6\] are not within the result's "
                                                   r"bounds \[6, 3\]"):
        run(text, x, np.int32(1), np.int32(6))


@pytest.mark.parametrize("src,rnd,dst", [("f32", "u32", "s32"), ("f32", "u32", "s8"),
                                         ("f16", "u16", "s16")])
def test_stochastic_convert_matches_xla(src, rnd, dst):
    # XLA:CPU's results (tests/service/fixtures/gen_stochastic_convert.py): random
    # values, halves and quarters, NaN, infinities, out-of-range values, -0.
    import os
    fixture = np.load(os.path.join(os.path.dirname(os.path.abspath(__file__)), "service", "fixtures",
                                   "stochastic_convert_xla.npz"))
    key = f"{src}_{dst}"
    x, r = fixture[key + "_x"], fixture[key + "_r"]
    text = (f"HloModule m\nENTRY e {{\n  x = {src}[{x.size}] parameter(0)\n  r = {rnd}[{x.size}] "
            f"parameter(1)\n  ROOT c = {dst}[{x.size}] stochastic-convert(x, r)\n}}")
    np.testing.assert_array_equal(run(text, x, r), fixture[key + "_out"])
