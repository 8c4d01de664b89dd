"""while, conditional and call on the CPU backend, checked against the
interpreter (emit_control_flow.py)."""
import re

import numpy as np
import pytest

import test_cpu_backend


def unique_names(text):
    """Suffixes the instruction names of each computation with its number
    (HLO names are module-wide; the tests reuse short ones)."""
    out = []
    for k, block in enumerate(re.split(r"(?m)^(?=%|ENTRY)", text)):
        names = set(re.findall(r"(?m)^\s*(?:ROOT\s+)?%([\w.]+)\s*=", block))
        out.append(re.sub(r"%([\w.]+)\b(?!\s*\()",
                          lambda m: f"%{m.group(1)}_{k}" if m.group(1) in names else m.group(0), block))
    return "".join(out)


def check(text, **kw):
    return test_cpu_backend.check(unique_names(text), **kw)

COUNTED = """
HloModule counted
%cond (s: (s32[], f32[8])) -> pred[] {
  %s = (s32[], f32[8]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %n = s32[] constant(10)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}
%body (s: (s32[], f32[8])) -> (s32[], f32[8]) {
  %s = (s32[], f32[8]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %x = f32[8] get-tuple-element(%s), index=1
  %one = s32[] constant(1)
  %i1 = s32[] add(%i, %one)
  %h = f32[] constant(0.5)
  %hb = f32[8] broadcast(%h), dimensions={}
  %y = f32[8] multiply(%x, %hb)
  %z = f32[8] add(%y, %hb)
  ROOT %t = (s32[], f32[8]) tuple(%i1, %z)
}
ENTRY %main (x: f32[8]) -> (s32[], f32[8]) {
  %x = f32[8] parameter(0)
  %zero = s32[] constant(0)
  %init = (s32[], f32[8]) tuple(%zero, %x)
  ROOT %w = (s32[], f32[8]) while(%init), condition=%cond, body=%body
}
"""


def test_counted_while_and_parameter_init_not_written():
    x = np.arange(8, dtype=np.float32)
    exe = check(COUNTED, args=[x])
    np.testing.assert_array_equal(x, np.arange(8, dtype=np.float32))
    i, _ = exe.execute(x)
    assert i == 10
    # The parameter's allocation is never the loop state.
    a = exe.assignment
    w = exe.module.entry.root_instruction
    param = exe.module.entry.parameters[0]
    assert a.buffer(w, (1,)).allocation is not a.buffer(param).allocation


def test_while_zero_trips():
    check(COUNTED.replace("constant(10)", "constant(0)"))


def test_while_tuple_state_of_several_dtypes():
    check("""
HloModule several
%cond (s: (s32[], f64[3], u8[5], pred[], bf16[4])) -> pred[] {
  %s = (s32[], f64[3], u8[5], pred[], bf16[4]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %n = s32[] constant(7)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}
%body (s: (s32[], f64[3], u8[5], pred[], bf16[4])) -> (s32[], f64[3], u8[5], pred[], bf16[4]) {
  %s = (s32[], f64[3], u8[5], pred[], bf16[4]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %d = f64[3] get-tuple-element(%s), index=1
  %u = u8[5] get-tuple-element(%s), index=2
  %p = pred[] get-tuple-element(%s), index=3
  %h = bf16[4] get-tuple-element(%s), index=4
  %one = s32[] constant(1)
  %i1 = s32[] add(%i, %one)
  %dd = f64[3] multiply(%d, %d)
  %c = u8[] constant(37)
  %cb = u8[5] broadcast(%c), dimensions={}
  %uu = u8[5] multiply(%u, %cb)
  %np = pred[] not(%p)
  %hh = bf16[4] add(%h, %h)
  ROOT %t = (s32[], f64[3], u8[5], pred[], bf16[4]) tuple(%i1, %dd, %uu, %np, %hh)
}
ENTRY %main (d: f64[3], u: u8[5], h: bf16[4]) -> (s32[], f64[3], u8[5], pred[], bf16[4]) {
  %d = f64[3] parameter(0)
  %u = u8[5] parameter(1)
  %h = bf16[4] parameter(2)
  %zero = s32[] constant(0)
  %f = pred[] constant(false)
  %init = (s32[], f64[3], u8[5], pred[], bf16[4]) tuple(%zero, %d, %u, %f, %h)
  ROOT %w = (s32[], f64[3], u8[5], pred[], bf16[4]) while(%init), condition=%cond, body=%body
}
""", args=[np.array([1.01, 0.99, -1.0]), np.arange(5, dtype=np.uint8),
           np.array([1, -2, 0.5, 3], dtype="bfloat16")], rtol=1e-12, atol=0)


def test_while_body_with_fusions_and_temporaries():
    check("""
HloModule temps
%cond (s: (s32[], f32[16,32], f32[32])) -> pred[] {
  %s = (s32[], f32[16,32], f32[32]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %n = s32[] constant(5)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
%body (s: (s32[], f32[16,32], f32[32])) -> (s32[], f32[16,32], f32[32]) {
  %s = (s32[], f32[16,32], f32[32]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %m = f32[16,32] get-tuple-element(%s), index=1
  %v = f32[32] get-tuple-element(%s), index=2
  %one = s32[] constant(1)
  %i1 = s32[] add(%i, %one)
  %t = f32[16,32] tanh(%m)
  %vb = f32[16,32] broadcast(%v), dimensions={1}
  %e = f32[16,32] add(%t, %vb)
  %z = f32[] constant(0)
  %r = f32[32] reduce(%e, %z), dimensions={0}, to_apply=%add
  %k = f32[] constant(0.0625)
  %kb = f32[32] broadcast(%k), dimensions={}
  %v1 = f32[32] multiply(%r, %kb)
  %tr = f32[32,16] transpose(%e), dimensions={1,0}
  %m1 = f32[16,32] reshape(%tr)
  ROOT %out = (s32[], f32[16,32], f32[32]) tuple(%i1, %m1, %v1)
}
ENTRY %main (m: f32[16,32], v: f32[32]) -> (s32[], f32[16,32], f32[32]) {
  %m = f32[16,32] parameter(0)
  %v = f32[32] parameter(1)
  %zero = s32[] constant(0)
  %init = (s32[], f32[16,32], f32[32]) tuple(%zero, %m, %v)
  ROOT %w = (s32[], f32[16,32], f32[32]) while(%init), condition=%cond, body=%body
}
""", rtol=1e-5, atol=1e-5)


NESTED = """
HloModule nested
%icond (s: (s32[], s32[])) -> pred[] {
  %s = (s32[], s32[]) parameter(0)
  %j = s32[] get-tuple-element(%s), index=0
  %n = s32[] constant(4)
  ROOT %lt = pred[] compare(%j, %n), direction=LT
}
%ibody (s: (s32[], s32[])) -> (s32[], s32[]) {
  %s = (s32[], s32[]) parameter(0)
  %j = s32[] get-tuple-element(%s), index=0
  %a = s32[] get-tuple-element(%s), index=1
  %one = s32[] constant(1)
  %j1 = s32[] add(%j, %one)
  %three = s32[] constant(3)
  %a3 = s32[] multiply(%a, %three)
  %a4 = s32[] add(%a3, %j)
  ROOT %t = (s32[], s32[]) tuple(%j1, %a4)
}
%ocond (s: (s32[], s32[4])) -> pred[] {
  %s = (s32[], s32[4]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %n = s32[] constant(3)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}
%obody (s: (s32[], s32[4])) -> (s32[], s32[4]) {
  %s = (s32[], s32[4]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %v = s32[4] get-tuple-element(%s), index=1
  %zero = s32[] constant(0)
  %init = (s32[], s32[]) tuple(%zero, %i)
  %inner = (s32[], s32[]) while(%init), condition=%icond, body=%ibody
  %a = s32[] get-tuple-element(%inner), index=1
  %ab = s32[4] broadcast(%a), dimensions={}
  %v1 = s32[4] add(%v, %ab)
  %one = s32[] constant(1)
  %i1 = s32[] add(%i, %one)
  ROOT %t = (s32[], s32[4]) tuple(%i1, %v1)
}
ENTRY %main (v: s32[4]) -> (s32[], s32[4]) {
  %v = s32[4] parameter(0)
  %zero = s32[] constant(0)
  %init = (s32[], s32[4]) tuple(%zero, %v)
  ROOT %w = (s32[], s32[4]) while(%init), condition=%ocond, body=%obody
}
"""


def test_nested_while():
    check(NESTED)


def test_while_body_swapping_state():
    check("""
HloModule swap
%cond (s: (s32[], f32[4], f32[4])) -> pred[] {
  %s = (s32[], f32[4], f32[4]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %n = s32[] constant(3)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}
%body (s: (s32[], f32[4], f32[4])) -> (s32[], f32[4], f32[4]) {
  %s = (s32[], f32[4], f32[4]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %a = f32[4] get-tuple-element(%s), index=1
  %b = f32[4] get-tuple-element(%s), index=2
  %one = s32[] constant(1)
  %i1 = s32[] add(%i, %one)
  ROOT %t = (s32[], f32[4], f32[4]) tuple(%i1, %b, %a)
}
ENTRY %main (a: f32[4], b: f32[4]) -> (s32[], f32[4], f32[4]) {
  %a = f32[4] parameter(0)
  %b = f32[4] parameter(1)
  %zero = s32[] constant(0)
  %init = (s32[], f32[4], f32[4]) tuple(%zero, %a, %b)
  ROOT %w = (s32[], f32[4], f32[4]) while(%init), condition=%cond, body=%body
}
""")


def test_two_whiles_sharing_a_body_keep_their_results_apart():
    check("""
HloModule shared
%cond (s: (s32[], f32[4])) -> pred[] {
  %s = (s32[], f32[4]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %n = s32[] constant(3)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}
%body (s: (s32[], f32[4])) -> (s32[], f32[4]) {
  %s = (s32[], f32[4]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %x = f32[4] get-tuple-element(%s), index=1
  %one = s32[] constant(1)
  %i1 = s32[] add(%i, %one)
  %y = f32[4] add(%x, %x)
  ROOT %t = (s32[], f32[4]) tuple(%i1, %y)
}
ENTRY %main (a: f32[4], b: f32[4]) -> f32[4] {
  %a = f32[4] parameter(0)
  %b = f32[4] parameter(1)
  %zero = s32[] constant(0)
  %i1 = (s32[], f32[4]) tuple(%zero, %a)
  %w1 = (s32[], f32[4]) while(%i1), condition=%cond, body=%body
  %i2 = (s32[], f32[4]) tuple(%zero, %b)
  %w2 = (s32[], f32[4]) while(%i2), condition=%cond, body=%body
  %x1 = f32[4] get-tuple-element(%w1), index=1
  %x2 = f32[4] get-tuple-element(%w2), index=1
  ROOT %r = f32[4] subtract(%x1, %x2)
}
""")


PRED_COND = """
HloModule condp
%t (x: f32[5]) -> f32[5] {
  %x = f32[5] parameter(0)
  ROOT %e = f32[5] exponential(%x)
}
%f (x: f32[5]) -> f32[5] {
  %x = f32[5] parameter(0)
  ROOT %n = f32[5] negate(%x)
}
ENTRY %main (p: pred[], x: f32[5]) -> f32[5] {
  %p = pred[] parameter(0)
  %x = f32[5] parameter(1)
  ROOT %c = f32[5] conditional(%p, %x, %x), true_computation=%t, false_computation=%f
}
"""


@pytest.mark.parametrize("p", [True, False])
def test_conditional_pred(p):
    x = np.linspace(-1, 1, 5).astype(np.float32)
    check(PRED_COND, args=[np.array(p), x])
    np.testing.assert_array_equal(x, np.linspace(-1, 1, 5).astype(np.float32))


INDEXED = """
HloModule condi
%b0 (x: (s32[3], f32[])) -> (s32[3], f32[]) {
  %x = (s32[3], f32[]) parameter(0)
  %a = s32[3] get-tuple-element(%x), index=0
  %f = f32[] get-tuple-element(%x), index=1
  %n = s32[3] negate(%a)
  ROOT %t = (s32[3], f32[]) tuple(%n, %f)
}
%b1 (y: s32[3]) -> (s32[3], f32[]) {
  %y = s32[3] parameter(0)
  %c = f32[] constant(1.5)
  ROOT %t = (s32[3], f32[]) tuple(%y, %c)
}
%b2 (z: f32[]) -> (s32[3], f32[]) {
  %z = f32[] parameter(0)
  %i = s32[3] iota(), iota_dimension=0
  %zz = f32[] multiply(%z, %z)
  ROOT %t = (s32[3], f32[]) tuple(%i, %zz)
}
ENTRY %main (k: s32[], a: s32[3], f: f32[]) -> (s32[3], f32[]) {
  %k = s32[] parameter(0)
  %a = s32[3] parameter(1)
  %f = f32[] parameter(2)
  %x = (s32[3], f32[]) tuple(%a, %f)
  ROOT %c = (s32[3], f32[]) conditional(%k, %x, %a, %f), branch_computations={%b0, %b1, %b2}
}
"""


@pytest.mark.parametrize("k", [0, 1, 2, 3, -1, 1000])
def test_conditional_indexed_out_of_range_runs_last(k):
    exe = check(INDEXED, args=[np.int32(k), np.array([1, -2, 3], np.int32), np.float32(3.0)])
    if k not in (0, 1):
        a, f = exe.execute(np.int32(k), np.array([1, -2, 3], np.int32), np.float32(3.0))
        np.testing.assert_array_equal(a, [0, 1, 2])
        assert f == 9.0


def test_conditional_inside_while():
    check("""
HloModule cw
%even (x: s32[]) -> s32[] {
  %x = s32[] parameter(0)
  %two = s32[] constant(2)
  ROOT %d = s32[] divide(%x, %two)
}
%odd (x: s32[]) -> s32[] {
  %x = s32[] parameter(0)
  %three = s32[] constant(3)
  %one = s32[] constant(1)
  %m = s32[] multiply(%x, %three)
  ROOT %a = s32[] add(%m, %one)
}
%cond (s: (s32[], s32[])) -> pred[] {
  %s = (s32[], s32[]) parameter(0)
  %x = s32[] get-tuple-element(%s), index=1
  %one = s32[] constant(1)
  ROOT %ne = pred[] compare(%x, %one), direction=NE
}
%body (s: (s32[], s32[])) -> (s32[], s32[]) {
  %s = (s32[], s32[]) parameter(0)
  %n = s32[] get-tuple-element(%s), index=0
  %x = s32[] get-tuple-element(%s), index=1
  %two = s32[] constant(2)
  %r = s32[] remainder(%x, %two)
  %k = s32[] constant(0)
  %isodd = pred[] compare(%r, %k), direction=NE
  %y = s32[] conditional(%isodd, %x, %x), true_computation=%odd, false_computation=%even
  %one = s32[] constant(1)
  %n1 = s32[] add(%n, %one)
  ROOT %t = (s32[], s32[]) tuple(%n1, %y)
}
ENTRY %main (x: s32[]) -> (s32[], s32[]) {
  %x = s32[] parameter(0)
  %zero = s32[] constant(0)
  %init = (s32[], s32[]) tuple(%zero, %x)
  ROOT %w = (s32[], s32[]) while(%init), condition=%cond, body=%body
}
""", args=[np.int32(27)])


def test_call():
    check("""
HloModule callm
%callee (a: f32[6], b: f32[]) -> (f32[6], f32[]) {
  %a = f32[6] parameter(0)
  %b = f32[] parameter(1)
  %bb = f32[6] broadcast(%b), dimensions={}
  %m = f32[6] multiply(%a, %bb)
  %s = f32[] add(%b, %b)
  ROOT %t = (f32[6], f32[]) tuple(%m, %s)
}
ENTRY %main (x: f32[6], y: f32[]) -> (f32[6], f32[]) {
  %x = f32[6] parameter(0)
  %y = f32[] parameter(1)
  ROOT %c = (f32[6], f32[]) call(%x, %y), to_apply=%callee
}
""")
