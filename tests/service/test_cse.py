"""HloCSE: identical instructions merge; anything that could differ does not."""
from pass_test_util import assert_same_results, opcodes, run_pass
from xla.service.cse import HloCSE


def _count(module, opcode, computation=None):
    return opcodes(module, computation).count(opcode)


SIMPLE = """HloModule m

ENTRY %main (x: f32[4], y: f32[4]) -> f32[4] {
  %x = f32[4] parameter(0)
  %y = f32[4] parameter(1)
  %a = f32[4] add(%x, %y)
  %b = f32[4] add(%x, %y), metadata={op_name="other"}
  %ea = f32[4] exponential(%a)
  %eb = f32[4] exponential(%b)
  ROOT %m = f32[4] multiply(%ea, %eb)
}
"""


def test_merges_identical_chains():
    module, changed = run_pass(HloCSE(), SIMPLE)
    assert changed
    assert module.to_text() == """HloModule m

ENTRY %main (x: f32[4], y: f32[4]) -> f32[4] {
  %x = f32[4] parameter(0)
  %y = f32[4] parameter(1)
  %a = f32[4] add(%x, %y)
  %ea = f32[4] exponential(%a)
  ROOT %m = f32[4] multiply(%ea, %ea)
}
"""
    assert_same_results(SIMPLE, module)
    assert not HloCSE().run(module)


def test_commutative_operands_in_either_order():
    text = """HloModule m

ENTRY %main (x: f32[4], y: f32[4]) -> (f32[4], f32[4], f32[4], f32[4], pred[4], pred[4], pred[4], pred[4]) {
  %x = f32[4] parameter(0)
  %y = f32[4] parameter(1)
  %add0 = f32[4] add(%x, %y)
  %add1 = f32[4] add(%y, %x)
  %sub0 = f32[4] subtract(%x, %y)
  %sub1 = f32[4] subtract(%y, %x)
  %eq0 = pred[4] compare(%x, %y), direction=EQ
  %eq1 = pred[4] compare(%y, %x), direction=EQ
  %lt0 = pred[4] compare(%x, %y), direction=LT
  %lt1 = pred[4] compare(%y, %x), direction=LT
  ROOT %t = (f32[4], f32[4], f32[4], f32[4], pred[4], pred[4], pred[4], pred[4]) tuple(%add0, %add1, %sub0, %sub1, %eq0, %eq1, %lt0, %lt1)
}
"""
    module, changed = run_pass(HloCSE(), text)
    assert changed
    names = [o.name for o in module.entry.root_instruction.operands]
    assert names == ["add0", "add0", "sub0", "sub1", "eq0", "eq0", "lt0", "lt1"]
    assert_same_results(text, module)


def test_constants_by_value_type_and_layout():
    text = """HloModule m

ENTRY %main () -> (f32[2], f32[2], s32[2], f32[2], f32[2,2], f32[2,2], f32[], f32[]) {
  %c0 = f32[2] constant({1, 2})
  %c1 = f32[2] constant({1, 2})
  %i0 = s32[2] constant({1, 2})
  %c2 = f32[2] constant({1, 3})
  %r0 = f32[2,2]{1,0} constant({ { 1, 2 }, { 3, 4 } })
  %r1 = f32[2,2]{0,1} constant({ { 1, 2 }, { 3, 4 } })
  %z = f32[] constant(0)
  %nz = f32[] constant(-0)
  ROOT %t = (f32[2], f32[2], s32[2], f32[2], f32[2,2], f32[2,2], f32[], f32[]) tuple(%c0, %c1, %i0, %c2, %r0, %r1, %z, %nz)
}
"""
    module, changed = run_pass(HloCSE(), text)
    assert changed
    names = [o.name for o in module.entry.root_instruction.operands]
    assert names == ["c0", "c0", "i0", "c2", "r0", "r1", "z", "nz"]
    assert_same_results(text, module)


def test_different_attributes_do_not_merge():
    text = """HloModule m

ENTRY %main (x: f32[2]) -> (f32[2,2], f32[2,2], f32[2,2]) {
  %x = f32[2] parameter(0)
  %b0 = f32[2,2] broadcast(%x), dimensions={0}
  %b1 = f32[2,2] broadcast(%x), dimensions={1}
  %b2 = f32[2,2] broadcast(%x), dimensions={1}
  ROOT %t = (f32[2,2], f32[2,2], f32[2,2]) tuple(%b0, %b1, %b2)
}
"""
    module, changed = run_pass(HloCSE(), text)
    assert changed
    assert [o.name for o in module.entry.root_instruction.operands] == ["b0", "b1", "b1"]


def test_never_merges_side_effects_parameters_or_control_dependencies():
    text = """HloModule m

ENTRY %main (x: f32[4], y: f32[4]) -> (f32[4], f32[4], f32[4], f32[4], f32[4], f32[4], f32[4], f32[4], f32[4], f32[4]) {
  %x = f32[4] parameter(0)
  %y = f32[4] parameter(1)
  %lo = f32[] constant(0)
  %hi = f32[] constant(1)
  %r0 = f32[4] rng(%lo, %hi), distribution=rng_uniform
  %r1 = f32[4] rng(%lo, %hi), distribution=rng_uniform
  %s0 = f32[4] custom-call(%x), custom_call_target="f", custom_call_has_side_effect=true
  %s1 = f32[4] custom-call(%x), custom_call_target="f", custom_call_has_side_effect=true
  %q0 = f32[4] custom-call(%x), custom_call_target="f"
  %q1 = f32[4] custom-call(%x), custom_call_target="f"
  %n0 = f32[4] negate(%x)
  %n1 = f32[4] negate(%x), control-predecessors={%s0}
  %m0 = f32[4] sine(%y)
  %m1 = f32[4] sine(%y)
  %m2 = f32[4] add(%m0, %m1), control-predecessors={%m0}
  ROOT %t = (f32[4], f32[4], f32[4], f32[4], f32[4], f32[4], f32[4], f32[4], f32[4], f32[4]) tuple(%r0, %r1, %s0, %s1, %q0, %q1, %n0, %n1, %m1, %m2)
}
"""
    module, changed = run_pass(HloCSE(), text)
    assert changed
    names = [o.name for o in module.entry.root_instruction.operands]
    # Only the pure custom-calls merge; m0 (a control predecessor) stays
    # apart from its twin m1.
    assert names == ["r0", "r1", "s0", "s1", "q0", "q0", "n0", "n1", "m1", "m2"]
    assert _count(module, "parameter") == 2
    assert _count(module, "sine") == 2


def test_structurally_identical_reducers_merge():
    text = """HloModule m

%add_a (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}

%add_b (c: f32[], d: f32[]) -> f32[] {
  %c = f32[] parameter(0)
  %d = f32[] parameter(1)
  ROOT %s2 = f32[] add(%c, %d), metadata={op_name="x"}
}

%max (e: f32[], f: f32[]) -> f32[] {
  %e = f32[] parameter(0)
  %f = f32[] parameter(1)
  ROOT %m = f32[] maximum(%e, %f)
}

ENTRY %main (x: f32[4,3]) -> (f32[4], f32[4], f32[4]) {
  %x = f32[4,3] parameter(0)
  %zero = f32[] constant(0)
  %zero2 = f32[] constant(0)
  %r0 = f32[4] reduce(%x, %zero), dimensions={1}, to_apply=%add_a
  %r1 = f32[4] reduce(%x, %zero2), dimensions={1}, to_apply=%add_b
  %r2 = f32[4] reduce(%x, %zero), dimensions={1}, to_apply=%max
  ROOT %t = (f32[4], f32[4], f32[4]) tuple(%r0, %r1, %r2)
}
"""
    module, changed = run_pass(HloCSE(), text)
    assert changed
    assert [o.name for o in module.entry.root_instruction.operands] == ["r0", "r0", "r2"]
    assert_same_results(text, module)
    assert not HloCSE().run(module)


def test_nothing_to_merge_returns_false():
    text = """HloModule m

ENTRY %main (x: f32[4], y: f32[4]) -> f32[4] {
  %x = f32[4] parameter(0)
  %y = f32[4] parameter(1)
  %a = f32[4] subtract(%x, %y)
  %b = f32[4] subtract(%y, %x)
  ROOT %m = f32[4] multiply(%a, %b)
}
"""
    module, changed = run_pass(HloCSE(), text)
    assert not changed
    assert _count(module, "subtract") == 2


def test_merges_inside_called_computations():
    text = """HloModule m

%body (s: f32[4]) -> f32[4] {
  %s = f32[4] parameter(0)
  %e0 = f32[4] exponential(%s)
  %e1 = f32[4] exponential(%s)
  ROOT %sum = f32[4] add(%e0, %e1)
}

ENTRY %main (x: f32[4]) -> f32[4] {
  %x = f32[4] parameter(0)
  ROOT %c = f32[4] call(%x), to_apply=%body
}
"""
    module, changed = run_pass(HloCSE(), text)
    assert changed
    assert _count(module, "exponential", "body") == 1
    assert_same_results(text, module)
