"""CallInliner: calls become the callee's instructions, callees go."""
from pass_test_util import assert_same_results, opcodes, run_pass
from xla.service.call_inliner import CallInliner

SIMPLE = """HloModule m

%callee (a: f32[4], b: f32[4]) -> f32[4] {
  %a = f32[4] parameter(0)
  %b = f32[4] parameter(1)
  %s = f32[4] add(%a, %b)
  ROOT %e = f32[4] exponential(%s)
}

ENTRY %main (x: f32[4], y: f32[4]) -> f32[4] {
  %x = f32[4] parameter(0)
  %y = f32[4] parameter(1)
  %c = f32[4] call(%x, %y), to_apply=%callee
  ROOT %n = f32[4] negate(%c)
}
"""


def test_inlines_call_and_removes_callee():
    module, changed = run_pass(CallInliner(), SIMPLE)
    assert changed
    assert module.to_text() == """HloModule m

ENTRY %main (x: f32[4], y: f32[4]) -> f32[4] {
  %x = f32[4] parameter(0)
  %y = f32[4] parameter(1)
  %s.1 = f32[4] add(%x, %y)
  %e.2 = f32[4] exponential(%s.1)
  ROOT %n = f32[4] negate(%e.2)
}
"""
    assert_same_results(SIMPLE, module)
    assert not CallInliner().run(module)


def test_nested_calls_and_repeated_callees():
    text = """HloModule m

%leaf (a: f32[4]) -> f32[4] {
  %a = f32[4] parameter(0)
  ROOT %e = f32[4] exponential(%a)
}

%middle (b: f32[4]) -> f32[4] {
  %b = f32[4] parameter(0)
  %c1 = f32[4] call(%b), to_apply=%leaf
  ROOT %n = f32[4] negate(%c1)
}

ENTRY %main (x: f32[4]) -> f32[4] {
  %x = f32[4] parameter(0)
  %m1 = f32[4] call(%x), to_apply=%middle
  %m2 = f32[4] call(%m1), to_apply=%middle
  ROOT %l = f32[4] call(%m2), to_apply=%leaf
}
"""
    module, changed = run_pass(CallInliner(), text)
    assert changed
    assert [c.name for c in module.computations] == ["main"]
    assert sorted(opcodes(module)) == ["exponential"] * 3 + ["negate"] * 2 + ["parameter"]
    assert_same_results(text, module)


def test_callee_still_used_elsewhere_is_kept():
    text = """HloModule m

%add (p: f32[], q: f32[]) -> f32[] {
  %p = f32[] parameter(0)
  %q = f32[] parameter(1)
  ROOT %r = f32[] add(%p, %q)
}

ENTRY %main (x: f32[4], y: f32[]) -> (f32[], f32[]) {
  %x = f32[4] parameter(0)
  %y = f32[] parameter(1)
  %zero = f32[] constant(0)
  %total = f32[] reduce(%x, %zero), dimensions={0}, to_apply=%add
  %twice = f32[] call(%y, %y), to_apply=%add
  ROOT %t = (f32[], f32[]) tuple(%total, %twice)
}
"""
    module, changed = run_pass(CallInliner(), text)
    assert changed
    assert [c.name for c in module.computations] == ["add", "main"]
    assert "call" not in opcodes(module)
    assert_same_results(text, module)


def test_callee_returning_a_parameter():
    text = """HloModule m

%second (a: f32[4], b: f32[4]) -> f32[4] {
  %a = f32[4] parameter(0)
  ROOT %b = f32[4] parameter(1)
}

ENTRY %main (x: f32[4], y: f32[4]) -> f32[4] {
  %x = f32[4] parameter(0)
  %y = f32[4] parameter(1)
  ROOT %c = f32[4] call(%x, %y), to_apply=%second
}
"""
    module, changed = run_pass(CallInliner(), text)
    assert changed
    assert module.entry.root_instruction.name == "y"
    assert_same_results(text, module)


def test_no_calls_returns_false():
    text = """HloModule m

ENTRY %main (x: f32[4]) -> f32[4] {
  %x = f32[4] parameter(0)
  ROOT %n = f32[4] negate(%x)
}
"""
    module, changed = run_pass(CallInliner(), text)
    assert not changed
