"""WhileLoopSimplifier: loops that provably run zero times vanish, loops that
run exactly once are inlined, everything else stays."""
from pass_test_util import assert_same_results, opcodes, run_pass
from xla.service.while_loop_simplifier import WhileLoopSimplifier

# A counted loop: i from START while i < LIMIT, acc = acc * 2 + x.
COUNTED = """HloModule m

%body (s: (s32[], f32[4], f32[4])) -> (s32[], f32[4], f32[4]) {
  %s = (s32[], f32[4], f32[4]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %one = s32[] constant(1)
  %next = s32[] add(%i, %one)
  %bx = f32[4] get-tuple-element(%s), index=1
  %acc = f32[4] get-tuple-element(%s), index=2
  %twice = f32[4] add(%acc, %acc)
  %sum = f32[4] add(%twice, %bx)
  ROOT %t = (s32[], f32[4], f32[4]) tuple(%next, %bx, %sum)
}

%cond (c: (s32[], f32[4], f32[4])) -> pred[] {
  %c = (s32[], f32[4], f32[4]) parameter(0)
  %ci = s32[] get-tuple-element(%c), index=0
  %n = s32[] constant(LIMIT)
  ROOT %lt = pred[] compare(%ci, %n), direction=LT
}

ENTRY %main (x: f32[4], a: f32[4]) -> (s32[], f32[4], f32[4]) {
  %x = f32[4] parameter(0)
  %a = f32[4] parameter(1)
  %start = s32[] constant(START)
  %init = (s32[], f32[4], f32[4]) tuple(%start, %x, %a)
  ROOT %loop = (s32[], f32[4], f32[4]) while(%init), condition=%cond, body=%body
}
"""


def counted(start, limit):
    return COUNTED.replace("START", str(start)).replace("LIMIT", str(limit))


def test_zero_trip_loop_becomes_its_init():
    text = counted(5, 3)
    module, changed = run_pass(WhileLoopSimplifier(), text)
    assert changed
    assert module.to_text() == """HloModule m

ENTRY %main (x: f32[4], a: f32[4]) -> (s32[], f32[4], f32[4]) {
  %x = f32[4] parameter(0)
  %a = f32[4] parameter(1)
  %start = s32[] constant(5)
  ROOT %init = (s32[], f32[4], f32[4]) tuple(%start, %x, %a)
}
"""
    assert_same_results(text, module)
    assert not WhileLoopSimplifier().run(module)


def test_one_trip_loop_is_inlined():
    text = counted(7, 8)
    module, changed = run_pass(WhileLoopSimplifier(), text)
    assert changed
    assert [c.name for c in module.computations] == ["main"]
    assert "while" not in opcodes(module)
    assert opcodes(module).count("add") == 3
    assert_same_results(text, module)
    assert not WhileLoopSimplifier().run(module)


def test_two_trips_stay():
    module, changed = run_pass(WhileLoopSimplifier(), counted(0, 2))
    assert not changed
    assert "while" in opcodes(module)


def test_unknown_induction_variable_stays():
    text = counted(0, 1).replace("%start = s32[] constant(0)", "%start = s32[] parameter(2)") \
        .replace("(x: f32[4], a: f32[4])", "(x: f32[4], a: f32[4], start: s32[])")
    module, changed = run_pass(WhileLoopSimplifier(), text)
    assert not changed


def test_condition_on_a_value_computed_from_unknowns_stays():
    # The condition looks at the accumulator, which starts from a parameter.
    text = counted(0, 1).replace(
        """  %ci = s32[] get-tuple-element(%c), index=0
  %n = s32[] constant(1)
  ROOT %lt = pred[] compare(%ci, %n), direction=LT""",
        """  %cacc = f32[4] get-tuple-element(%c), index=2
  %zero = f32[] constant(0)
  %first = f32[1] slice(%cacc), slice={[0:1]}
  %firsts = f32[] reshape(%first)
  ROOT %lt = pred[] compare(%firsts, %zero), direction=LT""")
    module, changed = run_pass(WhileLoopSimplifier(), text)
    assert not changed


def test_limit_carried_in_the_state():
    # JAX style: the bound is a loop-state element that the body passes through.
    text = """HloModule m

%body (s: (s32[], s32[], f32[4])) -> (s32[], s32[], f32[4]) {
  %s = (s32[], s32[], f32[4]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %one = s32[] constant(1)
  %next = s32[] add(%one, %i)
  %limit = s32[] get-tuple-element(%s), index=1
  %v = f32[4] get-tuple-element(%s), index=2
  %e = f32[4] exponential(%v)
  ROOT %t = (s32[], s32[], f32[4]) tuple(%next, %limit, %e)
}

%cond (c: (s32[], s32[], f32[4])) -> pred[] {
  %c = (s32[], s32[], f32[4]) parameter(0)
  %ci = s32[] get-tuple-element(%c), index=0
  %cl = s32[] get-tuple-element(%c), index=1
  ROOT %gt = pred[] compare(%cl, %ci), direction=GT
}

ENTRY %main (x: f32[4]) -> f32[4] {
  %x = f32[4] parameter(0)
  %zero = s32[] constant(0)
  %lim = s32[] constant(1)
  %init = (s32[], s32[], f32[4]) tuple(%zero, %lim, %x)
  %loop = (s32[], s32[], f32[4]) while(%init), condition=%cond, body=%body
  ROOT %r = f32[4] get-tuple-element(%loop), index=2
}
"""
    module, changed = run_pass(WhileLoopSimplifier(), text)
    assert changed
    assert "while" not in opcodes(module)
    assert_same_results(text, module)
    module, changed = run_pass(WhileLoopSimplifier(), text.replace("constant(1)\n  %init", "constant(2)\n  %init"))
    assert not changed


def test_scalar_state_and_side_effecting_condition():
    text = """HloModule m

%body (s: s32[]) -> s32[] {
  %s = s32[] parameter(0)
  %two = s32[] constant(2)
  ROOT %m = s32[] multiply(%s, %two)
}

%cond (c: s32[]) -> pred[] {
  %c = s32[] parameter(0)
  %n = s32[] constant(10)
  ROOT %lt = pred[] compare(%c, %n), direction=LT
}

%noisy_cond (d: s32[]) -> pred[] {
  %d = s32[] parameter(0)
  %log = s32[] custom-call(%d), custom_call_target="print", custom_call_has_side_effect=true
  %n2 = s32[] constant(10)
  ROOT %lt2 = pred[] compare(%d, %n2), direction=LT
}

ENTRY %main () -> (s32[], s32[]) {
  %six = s32[] constant(6)
  %once = s32[] while(%six), condition=%cond, body=%body
  %noisy = s32[] while(%six), condition=%noisy_cond, body=%body
  ROOT %t = (s32[], s32[]) tuple(%once, %noisy)
}
"""
    module, changed = run_pass(WhileLoopSimplifier(), text)
    assert changed
    assert opcodes(module).count("while") == 1
    assert [c.name for c in module.computations] == ["body", "noisy_cond", "main"]
    assert_same_results(text, module)
