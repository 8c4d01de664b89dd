"""WhileLoopInvariantCodeMotion: work on loop-invariant values moves in front
of the loop and reaches the body as a new loop-state element."""
import numpy as np

from pass_test_util import assert_same_results, opcodes, run_pass
from xla.service.while_loop_invariant_code_motion import WhileLoopInvariantCodeMotion

LOOP = """HloModule m

%body (s: (s32[], f32[4], f32[4])) -> (s32[], f32[4], f32[4]) {
  %s = (s32[], f32[4], f32[4]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %one = s32[] constant(1)
  %next = s32[] add(%i, %one)
  %w = f32[4] get-tuple-element(%s), index=1
  %acc = f32[4] get-tuple-element(%s), index=2
  %half = f32[] constant(0.5)
  %halves = f32[4] broadcast(%half), dimensions={}
  %scaled = f32[4] multiply(%w, %halves)
  %e = f32[4] exponential(%scaled)
  %sum = f32[4] add(%acc, %e)
  ROOT %t = (s32[], f32[4], f32[4]) tuple(%next, %w, %sum)
}

%cond (c: (s32[], f32[4], f32[4])) -> pred[] {
  %c = (s32[], f32[4], f32[4]) parameter(0)
  %ci = s32[] get-tuple-element(%c), index=0
  %n = s32[] constant(3)
  ROOT %lt = pred[] compare(%ci, %n), direction=LT
}

ENTRY %main (x: f32[4], a: f32[4]) -> (s32[], f32[4], f32[4]) {
  %x = f32[4] parameter(0)
  %a = f32[4] parameter(1)
  %zero = s32[] constant(0)
  %init = (s32[], f32[4], f32[4]) tuple(%zero, %x, %a)
  ROOT %loop = (s32[], f32[4], f32[4]) while(%init), condition=%cond, body=%body
}
"""


def test_hoists_invariant_work_into_a_new_state_element():
    module, changed = run_pass(WhileLoopInvariantCodeMotion(), LOOP)
    assert changed
    assert module.computation("body").to_text() == """\
%body (s: (s32[], f32[4], f32[4], f32[4])) -> (s32[], f32[4], f32[4], f32[4]) {
  %s = (s32[], f32[4], f32[4], f32[4]) parameter(0)
  %get-tuple-element.10 = f32[4] get-tuple-element(%s), index=3
  %i = s32[] get-tuple-element(%s), index=0
  %one = s32[] constant(1)
  %next = s32[] add(%i, %one)
  %w = f32[4] get-tuple-element(%s), index=1
  %acc = f32[4] get-tuple-element(%s), index=2
  %sum = f32[4] add(%acc, %get-tuple-element.10)
  ROOT %tuple.11 = (s32[], f32[4], f32[4], f32[4]) tuple(%next, %w, %sum, %get-tuple-element.10)
}"""
    entry = opcodes(module)
    assert {"multiply", "exponential", "broadcast"} <= set(entry)
    loop = next(i for i in module.entry.instructions if i.opcode == "while")
    assert len(loop.shape.tuple_shapes) == 4
    # The entry still returns the original three elements.
    assert module.entry.root_instruction.opcode == "tuple"
    assert len(module.entry.root_instruction.shape.tuple_shapes) == 3
    assert_same_results(LOOP, module)
    assert not WhileLoopInvariantCodeMotion().run(module)


def test_cheap_invariant_instructions_alone_stay():
    text = LOOP.replace("""  %e = f32[4] exponential(%scaled)
  %sum = f32[4] add(%acc, %e)""", """  %r = f32[2,2] reshape(%scaled)
  %rr = f32[4] reshape(%r)
  %sum = f32[4] add(%acc, %rr)""")
    module, changed = run_pass(WhileLoopInvariantCodeMotion(), text)
    # The multiply does work: it moves, the reshapes of it stay.
    assert changed
    assert "multiply" not in opcodes(module, "body")
    assert opcodes(module, "body").count("reshape") == 2
    assert_same_results(text, module)

    text = LOOP.replace("""  %scaled = f32[4] multiply(%w, %halves)
  %e = f32[4] exponential(%scaled)
  %sum = f32[4] add(%acc, %e)""", """  %r = f32[2,2] reshape(%w)
  %rr = f32[4] reshape(%r)
  %mixed = f32[4] add(%acc, %halves)
  %sum = f32[4] add(%mixed, %rr)""")
    module, changed = run_pass(WhileLoopInvariantCodeMotion(), text)
    assert not changed


def test_variant_and_side_effecting_work_stays():
    text = LOOP.replace("""  %e = f32[4] exponential(%scaled)""",
                        """  %e0 = f32[4] custom-call(%scaled), custom_call_target="log", custom_call_has_side_effect=true
  %e = f32[4] exponential(%acc)""")
    module, changed = run_pass(WhileLoopInvariantCodeMotion(), text)
    # Only the multiply (pure, invariant) moves; the side-effecting
    # custom-call and the exponential of the accumulator stay.
    assert changed
    body = opcodes(module, "body")
    assert "custom-call" in body and "exponential" in body and "multiply" not in body
    assert_same_results(text, module)


def test_loop_used_through_get_tuple_element_keeps_its_users():
    text = LOOP.replace("""  ROOT %loop = (s32[], f32[4], f32[4]) while(%init), condition=%cond, body=%body""",
                        """  %loop = (s32[], f32[4], f32[4]) while(%init), condition=%cond, body=%body
  ROOT %res = f32[4] get-tuple-element(%loop), index=2""")
    text = text.replace("-> (s32[], f32[4], f32[4]) {\n  %x", "-> f32[4] {\n  %x")
    module, changed = run_pass(WhileLoopInvariantCodeMotion(), text)
    assert changed
    root = module.entry.root_instruction
    assert root.opcode == "get-tuple-element" and root.operands[0].opcode == "while"
    assert_same_results(text, module)


def test_nothing_invariant_returns_false():
    text = LOOP.replace("%scaled = f32[4] multiply(%w, %halves)", "%scaled = f32[4] multiply(%acc, %halves)")
    module, changed = run_pass(WhileLoopInvariantCodeMotion(), text)
    assert not changed


def test_init_that_is_not_a_tuple_instruction():
    text = """HloModule m

%body (s: (s32[], f32[4], f32[4])) -> (s32[], f32[4], f32[4]) {
  %s = (s32[], f32[4], f32[4]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %one = s32[] constant(1)
  %next = s32[] add(%i, %one)
  %w = f32[4] get-tuple-element(%s), index=1
  %acc = f32[4] get-tuple-element(%s), index=2
  %sq = f32[4] multiply(%w, %w)
  %sum = f32[4] add(%acc, %sq)
  ROOT %t = (s32[], f32[4], f32[4]) tuple(%next, %w, %sum)
}

%cond (c: (s32[], f32[4], f32[4])) -> pred[] {
  %c = (s32[], f32[4], f32[4]) parameter(0)
  %ci = s32[] get-tuple-element(%c), index=0
  %n = s32[] constant(4)
  ROOT %lt = pred[] compare(%ci, %n), direction=LT
}

ENTRY %main (p: (s32[], f32[4], f32[4])) -> (s32[], f32[4], f32[4]) {
  %p = (s32[], f32[4], f32[4]) parameter(0)
  ROOT %loop = (s32[], f32[4], f32[4]) while(%p), condition=%cond, body=%body
}
"""
    module, changed = run_pass(WhileLoopInvariantCodeMotion(), text)
    assert changed
    assert sorted(opcodes(module)) == sorted(["parameter", "get-tuple-element", "get-tuple-element",
                                              "get-tuple-element", "multiply", "tuple", "while",
                                              "get-tuple-element", "get-tuple-element",
                                              "get-tuple-element", "tuple"])
    assert "multiply" not in opcodes(module, "body")
    assert_same_results(text, module, args=[(np.int32(0), np.arange(4, dtype=np.float32),
                                             np.ones(4, np.float32))])
    assert not WhileLoopInvariantCodeMotion().run(module)


def test_dead_invariant_work_is_left_to_dce():
    text = LOOP.replace("%sum = f32[4] add(%acc, %e)", "%sum = f32[4] add(%acc, %acc)")
    module, changed = run_pass(WhileLoopInvariantCodeMotion(), text)
    assert not changed
