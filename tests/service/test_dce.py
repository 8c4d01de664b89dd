"""HloDCE: dead instructions and dead computations go; side effects,
parameters and control predecessors of live instructions stay."""
from pass_test_util import assert_same_results, opcodes, run_pass
from xla.service.dce import HloDCE


def _names(module, computation=None):
    comp = module.entry if computation is None else module.computation(computation)
    return {i.name for i in comp.instructions}

DEAD_CHAIN = """HloModule m

ENTRY %main (x: f32[4], y: f32[4]) -> f32[4] {
  %x = f32[4] parameter(0)
  %y = f32[4] parameter(1)
  %dead0 = f32[4] multiply(%x, %y)
  %dead1 = f32[4] exponential(%dead0)
  ROOT %sum = f32[4] add(%x, %y)
}
"""


def test_removes_dead_chain_but_keeps_parameters():
    module, changed = run_pass(HloDCE(), DEAD_CHAIN)
    assert changed
    assert module.to_text() == """HloModule m

ENTRY %main (x: f32[4], y: f32[4]) -> f32[4] {
  %x = f32[4] parameter(0)
  %y = f32[4] parameter(1)
  ROOT %sum = f32[4] add(%x, %y)
}
"""
    assert_same_results(DEAD_CHAIN, module)
    assert not HloDCE().run(module)


def test_nothing_dead_returns_false():
    text = """HloModule m

ENTRY %main (x: f32[4], unused: f32[4]) -> f32[4] {
  %x = f32[4] parameter(0)
  %unused = f32[4] parameter(1)
  ROOT %neg = f32[4] negate(%x)
}
"""
    module, changed = run_pass(HloDCE(), text)
    assert not changed
    assert sorted(opcodes(module)) == ["negate", "parameter", "parameter"]


def test_keeps_side_effects_and_their_operands():
    text = """HloModule m

ENTRY %main (x: f32[4]) -> f32[4] {
  %x = f32[4] parameter(0)
  %tok = token[] after-all()
  %lo = f32[] constant(0)
  %hi = f32[] constant(1)
  %noise = f32[4] rng(%lo, %hi), distribution=rng_uniform
  %two = f32[4] add(%x, %x)
  %log = f32[4] custom-call(%two), custom_call_target="log_values", custom_call_has_side_effect=true
  %pure = f32[4] custom-call(%x), custom_call_target="pure_thing"
  ROOT %neg = f32[4] negate(%x)
}
"""
    module, changed = run_pass(HloDCE(), text)
    assert changed
    assert _names(module) == {"x", "tok", "lo", "hi", "noise", "two", "log", "neg"}


def test_control_predecessor_of_live_instruction_is_live():
    text = """HloModule m

ENTRY %main (x: f32[4]) -> f32[4] {
  %x = f32[4] parameter(0)
  %first = f32[4] exponential(%x)
  %dead = f32[4] sine(%x)
  ROOT %neg = f32[4] negate(%x), control-predecessors={%first}
}
"""
    module, changed = run_pass(HloDCE(), text)
    assert changed
    assert _names(module) == {"x", "first", "neg"}


CALLS = """HloModule m

%used (a: f32[4]) -> f32[4] {
  %a = f32[4] parameter(0)
  ROOT %n = f32[4] negate(%a)
}

%only_dead_caller (b: f32[4]) -> f32[4] {
  %b = f32[4] parameter(0)
  ROOT %e = f32[4] exponential(%b)
}

%never_called (c: f32[4]) -> f32[4] {
  %c = f32[4] parameter(0)
  ROOT %s = f32[4] sine(%c)
}

%add (p: f32[], q: f32[]) -> f32[] {
  %p = f32[] parameter(0)
  %q = f32[] parameter(1)
  ROOT %r = f32[] add(%p, %q)
}

%inner (d: f32[4]) -> f32[] {
  %d = f32[4] parameter(0)
  %z = f32[] constant(0)
  ROOT %red = f32[] reduce(%d, %z), dimensions={0}, to_apply=%add
}

ENTRY %main (x: f32[4]) -> (f32[4], f32[]) {
  %x = f32[4] parameter(0)
  %live = f32[4] call(%x), to_apply=%used
  %dead = f32[4] call(%x), to_apply=%only_dead_caller
  %total = f32[] call(%x), to_apply=%inner
  ROOT %t = (f32[4], f32[]) tuple(%live, %total)
}
"""


def test_removes_computations_not_called_from_entry():
    module, changed = run_pass(HloDCE(), CALLS)
    assert changed
    assert [c.name for c in module.computations] == ["used", "add", "inner", "main"]
    assert_same_results(CALLS, module)
    assert not HloDCE().run(module)


def test_dead_instructions_in_called_computations_go_too():
    text = """HloModule m

%callee (a: f32[4]) -> f32[4] {
  %a = f32[4] parameter(0)
  %waste = f32[4] exponential(%a)
  ROOT %n = f32[4] negate(%a)
}

ENTRY %main (x: f32[4]) -> f32[4] {
  %x = f32[4] parameter(0)
  ROOT %c = f32[4] call(%x), to_apply=%callee
}
"""
    module, changed = run_pass(HloDCE(), text)
    assert changed
    assert opcodes(module, "callee") == ["parameter", "negate"]


def test_dead_while_with_side_effecting_body_is_kept():
    text = """HloModule m

%body (s: s32[]) -> s32[] {
  %s = s32[] parameter(0)
  %one = s32[] constant(1)
  %log = s32[] custom-call(%s), custom_call_target="print", custom_call_has_side_effect=true
  ROOT %next = s32[] add(%s, %one)
}

%cond (c: s32[]) -> pred[] {
  %c = s32[] parameter(0)
  %n = s32[] constant(3)
  ROOT %lt = pred[] compare(%c, %n), direction=LT
}

%pure_body (s2: s32[]) -> s32[] {
  %s2 = s32[] parameter(0)
  %one2 = s32[] constant(1)
  ROOT %next2 = s32[] add(%s2, %one2)
}

ENTRY %main (x: s32[]) -> s32[] {
  %x = s32[] parameter(0)
  %printing_loop = s32[] while(%x), condition=%cond, body=%body
  %pure_loop = s32[] while(%x), condition=%cond, body=%pure_body
  ROOT %neg = s32[] negate(%x)
}
"""
    module, changed = run_pass(HloDCE(), text)
    assert changed
    assert _names(module) == {"x", "printing_loop", "neg"}
    assert [c.name for c in module.computations] == ["body", "cond", "main"]
