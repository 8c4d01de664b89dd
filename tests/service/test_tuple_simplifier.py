"""TupleSimplifier: gte(tuple(...)) and tuple(gte(x, 0..n-1)) fold away."""
from pass_test_util import assert_same_results, opcodes, run_pass
from xla.service.tuple_simplifier import TupleSimplifier

GTE_OF_TUPLE = """HloModule m

ENTRY %main (x: f32[4], y: s32[]) -> (s32[], f32[4]) {
  %x = f32[4] parameter(0)
  %y = s32[] parameter(1)
  %t = (f32[4], s32[]) tuple(%x, %y)
  %g0 = f32[4] get-tuple-element(%t), index=0
  %g1 = s32[] get-tuple-element(%t), index=1
  %n = f32[4] negate(%g0)
  ROOT %r = (s32[], f32[4]) tuple(%g1, %n)
}
"""


def test_gte_of_tuple_becomes_the_element():
    module, changed = run_pass(TupleSimplifier(), GTE_OF_TUPLE)
    assert changed
    assert module.to_text() == """HloModule m

ENTRY %main (x: f32[4], y: s32[]) -> (s32[], f32[4]) {
  %x = f32[4] parameter(0)
  %y = s32[] parameter(1)
  %t = (f32[4], s32[]) tuple(%x, %y)
  %n = f32[4] negate(%x)
  ROOT %r = (s32[], f32[4]) tuple(%y, %n)
}
"""
    assert_same_results(GTE_OF_TUPLE, module)
    assert not TupleSimplifier().run(module)


def test_tuple_of_all_gtes_becomes_the_source():
    text = """HloModule m

ENTRY %main (p: (f32[4], s32[])) -> (f32[4], s32[]) {
  %p = (f32[4], s32[]) parameter(0)
  %g0 = f32[4] get-tuple-element(%p), index=0
  %g1 = s32[] get-tuple-element(%p), index=1
  ROOT %t = (f32[4], s32[]) tuple(%g0, %g1)
}
"""
    module, changed = run_pass(TupleSimplifier(), text)
    assert changed
    assert module.entry.root_instruction.name == "p"
    assert_same_results(text, module)


def test_partial_or_reordered_tuples_stay():
    text = """HloModule m

ENTRY %main (p: (f32[4], f32[4], s32[])) -> ((f32[4], f32[4]), (f32[4], f32[4])) {
  %p = (f32[4], f32[4], s32[]) parameter(0)
  %g0 = f32[4] get-tuple-element(%p), index=0
  %g1 = f32[4] get-tuple-element(%p), index=1
  %prefix = (f32[4], f32[4]) tuple(%g0, %g1)
  %swapped = (f32[4], f32[4]) tuple(%g1, %g0)
  ROOT %t = ((f32[4], f32[4]), (f32[4], f32[4])) tuple(%prefix, %swapped)
}
"""
    module, changed = run_pass(TupleSimplifier(), text)
    assert not changed
    assert opcodes(module).count("tuple") == 3


def test_nested_chains_fold_in_one_run():
    text = """HloModule m

ENTRY %main (a: f32[4], b: f32[4], c: s32[]) -> f32[4] {
  %a = f32[4] parameter(0)
  %b = f32[4] parameter(1)
  %c = s32[] parameter(2)
  %inner = (f32[4], f32[4]) tuple(%a, %b)
  %outer = ((f32[4], f32[4]), s32[]) tuple(%inner, %c)
  %g = (f32[4], f32[4]) get-tuple-element(%outer), index=0
  %g0 = f32[4] get-tuple-element(%g), index=0
  %g1 = f32[4] get-tuple-element(%g), index=1
  %re = (f32[4], f32[4]) tuple(%g0, %g1)
  %h = f32[4] get-tuple-element(%re), index=1
  ROOT %s = f32[4] add(%h, %g0)
}
"""
    module, changed = run_pass(TupleSimplifier(), text)
    assert changed
    root = module.entry.root_instruction
    assert [o.name for o in root.operands] == ["b", "a"]
    assert "get-tuple-element" not in opcodes(module)
    assert_same_results(text, module)
    assert not TupleSimplifier().run(module)


def test_control_dependencies_block_the_rewrite():
    text = """HloModule m

ENTRY %main (x: f32[4]) -> f32[4] {
  %x = f32[4] parameter(0)
  %e = f32[4] exponential(%x)
  %t = (f32[4]) tuple(%x)
  ROOT %g = f32[4] get-tuple-element(%t), index=0, control-predecessors={%e}
}
"""
    module, changed = run_pass(TupleSimplifier(), text)
    assert not changed
