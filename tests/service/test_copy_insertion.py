"""CopyInsertion: copies for while inits, swapped body results, conditional
branches and the entry result, and none where a buffer is already owned."""
from pass_test_util import assert_same_results, opcodes, run_pass

from xla.service.copy_insertion import CopyInsertion

BODY_COND = """
body {
  bp = (s32[], f32[3], f32[3]) parameter(0)
  i = s32[] get-tuple-element(bp), index=0
  one = s32[] constant(1)
  i2 = s32[] add(i, one)
  a = f32[3] get-tuple-element(bp), index=1
  b = f32[3] get-tuple-element(bp), index=2
  ROOT t = (s32[], f32[3], f32[3]) tuple(i2, SECOND, THIRD)
}

cond {
  cp = (s32[], f32[3], f32[3]) parameter(0)
  ci = s32[] get-tuple-element(cp), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(ci, n), direction=LT
}
"""


def loop_module(second="a", third="b", entry=None):
    entry = entry or """
ENTRY e {
  p0 = f32[3] parameter(0)
  e0 = f32[3] exponential(p0)
  e1 = f32[3] sine(p0)
  zero = s32[] constant(0)
  init = (s32[], f32[3], f32[3]) tuple(zero, e0, e1)
  w = (s32[], f32[3], f32[3]) while(init), condition=cond, body=body
  ROOT r = f32[3] get-tuple-element(w), index=1
}
"""
    return "HloModule m\n" + BODY_COND.replace("SECOND", second).replace("THIRD", third) + entry


def insert(text, changed=True):
    module, did = run_pass(CopyInsertion(), text)
    assert did is changed
    assert_same_results(text, module)
    return module


def test_constant_init_element_is_copied_owned_ones_are_not():
    m = insert(loop_module())
    init = m.entry.instruction("init")
    assert [o.opcode for o in init.operands] == ["copy", "exponential", "sine"]
    assert init.operands[0].operands[0].name == "zero"
    assert opcodes(m, "body").count("copy") == 0


def test_parameter_and_shared_init_elements_are_copied():
    entry = """
ENTRY e {
  p0 = f32[3] parameter(0)
  e0 = f32[3] exponential(p0)
  zero = s32[] constant(0)
  i0 = s32[] negate(zero)
  init = (s32[], f32[3], f32[3]) tuple(i0, p0, e0)
  w = (s32[], f32[3], f32[3]) while(init), condition=cond, body=body
  r = f32[3] get-tuple-element(w), index=1
  ROOT s = f32[3] add(r, e0)
}
"""
    # (The body writes index 2: a loop that only reads an element copies
    # nothing, test_state_a_loop_only_reads_is_not_copied.)
    m = insert(loop_module(entry=entry, third="a"))
    init = m.entry.instruction("init")
    assert [o.opcode for o in init.operands] == ["negate", "copy", "copy"]


def test_repeated_init_element_is_copied():
    entry = """
ENTRY e {
  p0 = f32[3] parameter(0)
  e0 = f32[3] exponential(p0)
  zero = s32[] constant(0)
  i0 = s32[] negate(zero)
  init = (s32[], f32[3], f32[3]) tuple(i0, e0, e0)
  w = (s32[], f32[3], f32[3]) while(init), condition=cond, body=body
  ROOT r = f32[3] get-tuple-element(w), index=1
}
"""
    m = insert(loop_module(entry=entry))
    assert [o.opcode for o in m.entry.instruction("init").operands] == ["negate", "exponential", "copy"]


def test_swapped_body_elements_are_copied():
    m = insert(loop_module(second="b", third="a"))
    root = m.computation("body").root_instruction
    assert [o.opcode for o in root.operands] == ["add", "copy", "copy"]


def test_repeated_body_element_is_copied():
    m = insert(loop_module(second="a", third="a"))
    root = m.computation("body").root_instruction
    # a at index 1 is a pass-through; at index 2 it is swapped in and repeated.
    assert [o.opcode for o in root.operands] == ["add", "get-tuple-element", "copy"]


def test_entry_root_parameter_and_constant_are_copied():
    text = """HloModule m

ENTRY e {
  p0 = f32[3] parameter(0)
  c = f32[3] constant({1, 2, 3})
  n = f32[3] negate(p0)
  ROOT t = (f32[3], f32[3], f32[3], f32[3]) tuple(p0, c, n, n)
}
"""
    m = insert(text)
    assert [o.opcode for o in m.entry.root_instruction.operands] == ["copy", "copy", "negate", "copy"]


def test_entry_root_alias_allows_the_parameter():
    text = """HloModule m, input_output_alias={ {0}: (0, {}, may-alias) }

ENTRY e {
  p0 = f32[3] parameter(0)
  p1 = f32[3] parameter(1)
  ROOT t = (f32[3], f32[3]) tuple(p0, p1)
}
"""
    m = insert(text)
    assert [o.opcode for o in m.entry.root_instruction.operands] == ["parameter", "copy"]


def test_entry_root_that_is_a_parameter():
    text = """HloModule m

ENTRY e {
  ROOT p0 = (f32[3], s32[]) parameter(0)
}
"""
    m = insert(text)
    root = m.entry.root_instruction
    assert root.opcode == "tuple" and [o.opcode for o in root.operands] == ["copy", "copy"]


def test_conditional_branch_returning_its_parameter_is_copied():
    text = """HloModule m

t {
  tp = f32[3] parameter(0)
  ROOT tn = f32[3] negate(tp)
}

f {
  ROOT fp = f32[3] parameter(0)
}

ENTRY e {
  p = pred[] parameter(0)
  x = f32[3] parameter(1)
  c = f32[3] conditional(p, x, x), true_computation=t, false_computation=f
  ROOT n = f32[3] negate(c)
}
"""
    m = insert(text)
    assert m.computation("t").root_instruction.opcode == "negate"
    assert m.computation("f").root_instruction.opcode == "copy"


def test_nothing_to_copy_returns_false():
    text = """HloModule m

ENTRY e {
  p0 = f32[3] parameter(0)
  ROOT n = f32[3] negate(p0)
}
"""
    module, changed = run_pass(CopyInsertion(), text)
    assert not changed
    assert opcodes(module) == ["parameter", "negate"]


NESTED = """HloModule nested

inner_body {
  p = (s32[], f32[3]) parameter(0)
  j = s32[] get-tuple-element(p), index=0
  one = s32[] constant(1)
  j2 = s32[] add(j, one)
  x = f32[3] get-tuple-element(p), index=1
  two = f32[] constant(2)
  twos = f32[3] broadcast(two), dimensions={}
  x2 = f32[3] multiply(x, twos)
  ROOT t = (s32[], f32[3]) tuple(j2, x2)
}

inner_cond {
  p = (s32[], f32[3]) parameter(0)
  j = s32[] get-tuple-element(p), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(j, n), direction=LT
}

outer_body {
  op = (s32[], f32[3]) parameter(0)
  i = s32[] get-tuple-element(op), index=0
  x = f32[3] get-tuple-element(op), index=1
  zero = s32[] constant(0)
  init = (s32[], f32[3]) tuple(zero, x)
  w = (s32[], f32[3]) while(init), condition=inner_cond, body=inner_body
  one = s32[] constant(1)
  i2 = s32[] add(i, one)
  y = f32[3] get-tuple-element(w), index=1
  ROOT t = (s32[], f32[3]) tuple(i2, NEW_STATE)
}

outer_cond {
  p = (s32[], f32[3]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(4)
  ROOT lt = pred[] compare(i, n), direction=LT
}

ENTRY e {
  p0 = f32[3] parameter(0)
  e0 = f32[3] exponential(p0)
  zero = s32[] constant(0)
  init = (s32[], f32[3]) tuple(zero, e0)
  w = (s32[], f32[3]) while(init), condition=outer_cond, body=outer_body
  ROOT r = f32[3] get-tuple-element(w), index=1
}
"""


def test_the_enclosing_loops_state_is_not_copied_into_a_nested_loop():
    # The nested loop may update the outer loop's state in place (buffer
    # assignment decides, test_buffer_assignment.py): x is read by nothing
    # else, and the outer state takes the nested loop's result.
    m = insert(NESTED.replace("NEW_STATE", "y"))
    init = m.computation("outer_body").instruction("init")
    assert [o.opcode for o in init.operands] == ["copy", "get-tuple-element"]


def test_the_enclosing_loops_state_read_after_a_nested_loop_is_copied():
    m = insert(NESTED.replace("NEW_STATE", "s").replace(
        "  ROOT t = (s32[], f32[3]) tuple(i2, s)",
        "  s = f32[3] add(x, y)\n  ROOT t = (s32[], f32[3]) tuple(i2, s)"))
    init = m.computation("outer_body").instruction("init")
    assert [o.opcode for o in init.operands] == ["copy", "copy"]


READ_ONLY = """HloModule read_only

inner_body {
  p = (s32[], f32[3], f32[3]) parameter(0)
  j = s32[] get-tuple-element(p), index=0
  one = s32[] constant(1)
  j2 = s32[] add(j, one)
  a = f32[3] get-tuple-element(p), index=1
  m = f32[3] get-tuple-element(p), index=2
  a2 = f32[3] add(a, m)
  ROOT t = (s32[], f32[3], f32[3]) tuple(j2, a2, m)
}

inner_cond {
  p = (s32[], f32[3], f32[3]) parameter(0)
  j = s32[] get-tuple-element(p), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(j, n), direction=LT
}

outer_body {
  op = (s32[], f32[3], f32[3]) parameter(0)
  i = s32[] get-tuple-element(op), index=0
  a = f32[3] get-tuple-element(op), index=1
  m = f32[3] get-tuple-element(op), index=2
  zero = s32[] constant(0)
  init = (s32[], f32[3], f32[3]) tuple(zero, a, m)
  w = (s32[], f32[3], f32[3]) while(init), condition=inner_cond, body=inner_body
  one = s32[] constant(1)
  i2 = s32[] add(i, one)
  y = f32[3] get-tuple-element(w), index=1
  ROOT t = (s32[], f32[3], f32[3]) tuple(i2, y, m)
}

outer_cond {
  p = (s32[], f32[3], f32[3]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(4)
  ROOT lt = pred[] compare(i, n), direction=LT
}

ENTRY e {
  p0 = f32[3] parameter(0)
  p1 = f32[3] parameter(1)
  e0 = f32[3] exponential(p0)
  zero = s32[] constant(0)
  init = (s32[], f32[3], f32[3]) tuple(zero, e0, p1)
  w = (s32[], f32[3], f32[3]) while(init), condition=outer_cond, body=outer_body
  ROOT r = f32[3] get-tuple-element(w), index=1
}
"""


def test_state_a_loop_only_reads_is_not_copied():
    # m: every loop passes it through unchanged and nothing reads its
    # result, so it is not copied, though the outer root reads it again
    # (nested loop) or it is the entry's parameter (outer loop).
    m = insert(READ_ONLY)
    assert [o.opcode for o in m.computation("outer_body").instruction("init").operands] == [
        "copy", "get-tuple-element", "get-tuple-element"]
    entry_init = m.entry.root_instruction.operands[0].operands[0]
    assert [o.opcode for o in entry_init.operands] == ["copy", "exponential", "parameter"]


def test_state_whose_result_is_read_is_copied():
    # The nested loop's m result is read after it, and so is m: copied (the
    # pass does not look into the body to see that it is the same value).
    m = insert(READ_ONLY.replace("tuple(i2, y, m)", "tuple(i2, y2, m)").replace(
        "  y = f32[3] get-tuple-element(w), index=1",
        "  y = f32[3] get-tuple-element(w), index=1\n  w2 = f32[3] get-tuple-element(w), index=2\n"
        "  y2 = f32[3] add(y, w2)"))
    assert [o.opcode for o in m.computation("outer_body").instruction("init").operands] == [
        "copy", "get-tuple-element", "copy"]
