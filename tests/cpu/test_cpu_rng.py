"""rng-bit-generator, rng and rng-get-and-update-state on the CPU backend
(emit_rng.py): rng-bit-generator bit-exact with the interpreter; rng
(implementation-defined) checked for range, distribution, and determinism
per executable; the 128-bit state counter as the interpreter keeps it."""
import numpy as np
import pytest

from test_cpu_backend import check, compile_cpu

KEYS = [
    np.array([0x0123456789ABCDEF, 0xFEDCBA9876543210, 0xFFFFFFFFFFFFFFF0], np.uint64),
    np.array([42, 0xFFFFFFFFFFFFFFFE, 7], np.uint64),  # counter low word carries into the high
    np.array([0, 0, 0], np.uint64),
]


def rbg_module(algorithm, state_n, out):
    return f"""HloModule rbg
ENTRY %main (s: u64[{state_n}]) -> (u64[{state_n}], {out.split('{')[0]}) {{
  %s = u64[{state_n}] parameter(0)
  ROOT %r = (u64[{state_n}], {out}) rng-bit-generator(%s), algorithm={algorithm}
}}
"""


@pytest.mark.parametrize("algorithm", ["rng_three_fry", "rng_philox", "rng_default"])
@pytest.mark.parametrize("out", ["u32[2,3]", "u32[7]", "u32[3,5]", "u32[]", "u32[3,1,5]", "u64[5]",
                                 "u64[2,3]", "u8[5]", "u16[3,3]", "s32[4,4]", "f32[6]", "s64[3]",
                                 "f64[3,2]", "u32[5,3]{0,1}", "u64[3,2]{0,1}", "u32[0]"])
@pytest.mark.parametrize("state_n", [2, 3])
def test_rng_bit_generator_matches_interpreter(algorithm, out, state_n):
    text = rbg_module(algorithm, state_n, out)
    for key in KEYS:
        check(text, args=[key[:state_n].copy()])


@pytest.mark.parametrize("algorithm", ["rng_three_fry", "rng_philox"])
@pytest.mark.parametrize("out", ["u32[300,301]", "u64[257,256]", "u32[301,301]"])
def test_rng_bit_generator_large_parallel(algorithm, out):
    check(rbg_module(algorithm, 2, out), args=[KEYS[1][:2].copy()])


def test_rng_bit_generator_state_in_place():
    # The state output fed back: two generations in a row, as JAX splits keys.
    text = """HloModule rbg2
ENTRY %main (s: u64[2]) -> (u64[2], u32[4], u32[3]) {
  %s = u64[2] parameter(0)
  %r1 = (u64[2], u32[4]) rng-bit-generator(%s), algorithm=rng_philox
  %s1 = u64[2] get-tuple-element(%r1), index=0
  %b1 = u32[4] get-tuple-element(%r1), index=1
  %r2 = (u64[2], u32[3]) rng-bit-generator(%s1), algorithm=rng_three_fry
  %s2 = u64[2] get-tuple-element(%r2), index=0
  %b2 = u32[3] get-tuple-element(%r2), index=1
  ROOT %t = (u64[2], u32[4], u32[3]) tuple(%s2, %b1, %b2)
}
"""
    for key in KEYS:
        check(text, args=[key[:2].copy()])


# ----- rng ------------------------------------------------------------------------------
def rng_module(ty, n, dist="rng_uniform"):
    return f"""HloModule rng
ENTRY %main (a: {ty}[], b: {ty}[]) -> {ty}[{n}] {{
  %a = {ty}[] parameter(0)
  %b = {ty}[] parameter(1)
  ROOT %r = {ty}[{n}] rng(%a, %b), distribution={dist}
}}
"""


def run_rng(ty, n, lo, hi, dist="rng_uniform"):
    exe = compile_cpu(rng_module(ty, n, dist))
    dtype = exe.parameter_shapes[0].dtype
    return exe, exe.execute(np.asarray(lo, dtype), np.asarray(hi, dtype))


@pytest.mark.parametrize("ty", ["f32", "f64", "f16", "bf16"])
def test_rng_uniform_float(ty):
    _, x = run_rng(ty, 200000, -2.0, 3.0)
    assert x.shape == (200000,) and x.dtype == compile_cpu(rng_module(ty, 1)).result_shape.dtype
    v = x.astype(np.float64)
    assert v.min() >= -2.0 and v.max() < 3.0
    assert abs(v.mean() - 0.5) < 0.02
    assert abs(v.std() - 5 / np.sqrt(12)) < 0.02
    assert len(np.unique(v)) > 100


def test_rng_uniform_float_never_reaches_b():
    # Rounding a + (b - a) * u to f16 would often give b here.
    _, x = run_rng("f16", 100000, 1.0, 1.0009765625)
    assert (x.astype(np.float32) == 1.0).all()


@pytest.mark.parametrize("ty,lo,hi", [("s32", 0, 10), ("s32", -5, 3), ("u8", 10, 250), ("s64", -(1 << 40), 1 << 40),
                                      ("u32", 0, 4000000000), ("s8", -128, 127), ("u64", 0, 3)])
def test_rng_uniform_int(ty, lo, hi):
    _, x = run_rng(ty, 100000, lo, hi)
    v = x.astype(np.float64)
    assert x.min() >= lo and x.max() < hi
    assert abs(v.mean() - (lo + hi - 1) / 2) < 0.02 * (hi - lo)
    if hi - lo <= 256:
        assert len(np.unique(x)) == hi - lo


def test_rng_uniform_int_empty_range_gives_a():
    _, x = run_rng("s32", 100, 7, 7)
    assert (x == 7).all()
    _, x = run_rng("s32", 100, 7, 3)
    assert (x == 7).all()


def test_rng_uniform_pred():
    exe = compile_cpu(rng_module("pred", 10000))
    x = exe.execute(np.asarray(False), np.asarray(True))
    assert x.dtype == np.bool_ and 0.45 < x.mean() < 0.55


@pytest.mark.parametrize("ty", ["f32", "f64", "bf16"])
def test_rng_normal(ty):
    _, x = run_rng(ty, 200000, 1.5, 2.0, "rng_normal")
    v = x.astype(np.float64)
    assert np.isfinite(v).all()
    assert abs(v.mean() - 1.5) < 0.03 and abs(v.std() - 2.0) < 0.03
    # Standardized third and fourth moments of a normal: 0 and 3.
    z = (v - v.mean()) / v.std()
    assert abs((z ** 3).mean()) < 0.05 and abs((z ** 4).mean() - 3) < 0.1


def test_rng_deterministic_per_executable_and_advancing():
    text = rng_module("f32", 64)
    a, b = np.float32(0), np.float32(1)
    e1, e2 = compile_cpu(text), compile_cpu(text)
    first = [e1.execute(a, b) for _ in range(3)]
    second = [e2.execute(a, b) for _ in range(3)]
    for x, y in zip(first, second):
        np.testing.assert_array_equal(x, y)  # a fresh executable repeats the sequence
    assert not np.array_equal(first[0], first[1]) and not np.array_equal(first[1], first[2])


def test_rng_two_instructions_differ():
    text = """HloModule rng2
ENTRY %main (a: f32[], b: f32[]) -> (f32[16], f32[16]) {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  %r1 = f32[16] rng(%a, %b), distribution=rng_uniform
  %r2 = f32[16] rng(%a, %b), distribution=rng_uniform
  ROOT %t = (f32[16], f32[16]) tuple(%r1, %r2)
}
"""
    x, y = compile_cpu(text).execute(np.float32(0), np.float32(1))
    assert not np.array_equal(x, y)


# ----- rng-get-and-update-state --------------------------------------------------------
STATE = """HloModule state
ENTRY %main () -> u64[2] {
  ROOT %s = u64[2] rng-get-and-update-state(), delta=DELTA
}
"""


@pytest.mark.parametrize("delta", [1, 5, (1 << 64) - 1])
def test_rng_get_and_update_state(delta):
    text = STATE.replace("DELTA", str(delta))
    exe = check(text, args=[])  # the first call, as the interpreter's fresh Evaluator
    for k in range(1, 4):
        v = k * delta
        np.testing.assert_array_equal(exe.execute(), np.array([v % (1 << 64), v >> 64], np.uint64))
    np.testing.assert_array_equal(compile_cpu(text).execute(), np.zeros(2, np.uint64))


def test_rng_get_and_update_state_twice_in_a_module():
    text = """HloModule state2
ENTRY %main () -> (u64[2], u64[2]) {
  %s1 = u64[2] rng-get-and-update-state(), delta=3
  %s2 = u64[2] rng-get-and-update-state(), delta=10
  ROOT %t = (u64[2], u64[2]) tuple(%s1, %s2)
}
"""
    exe = check(text, args=[])
    x, y = exe.execute()
    assert list(x) == [13, 0] and list(y) == [16, 0]


def test_rng_in_a_while_loop_advances_per_iteration():
    text = """HloModule w
%cond (cp: (s32[], f32[4], f32[4])) -> pred[] {
  %cp = (s32[], f32[4], f32[4]) parameter(0)
  %ci = s32[] get-tuple-element(%cp), index=0
  %n = s32[] constant(2)
  ROOT %c = pred[] compare(%ci, %n), direction=LT
}
%body (p: (s32[], f32[4], f32[4])) -> (s32[], f32[4], f32[4]) {
  %p = (s32[], f32[4], f32[4]) parameter(0)
  %i = s32[] get-tuple-element(%p), index=0
  %prev = f32[4] get-tuple-element(%p), index=2
  %one = s32[] constant(1)
  %i1 = s32[] add(%i, %one)
  %z = f32[] constant(0)
  %o = f32[] constant(1)
  %r = f32[4] rng(%z, %o), distribution=rng_uniform
  ROOT %t = (s32[], f32[4], f32[4]) tuple(%i1, %prev, %r)
}
ENTRY %main (x: f32[4]) -> (s32[], f32[4], f32[4]) {
  %x = f32[4] parameter(0)
  %zero = s32[] constant(0)
  %t0 = (s32[], f32[4], f32[4]) tuple(%zero, %x, %x)
  ROOT %w = (s32[], f32[4], f32[4]) while(%t0), condition=%cond, body=%body
}
"""
    exe = compile_cpu(text)
    _, first, second = exe.execute(np.full(4, 5, np.float32))
    assert ((first >= 0) & (first < 1)).all() and ((second >= 0) & (second < 1)).all()
    assert not np.array_equal(first, second)
    _, third, _ = exe.execute(np.full(4, 5, np.float32))
    assert not np.array_equal(third, first) and not np.array_equal(third, second)
