"""HloComputation's list edits: remove_instruction, insert_before and
insert_after are recorded and applied on the next read of ``instructions``;
what a reader sees is the same as editing the list in place."""
import pytest

from xla.hlo.parser import parse_hlo_module
from xla.hlo.ir import HloInstruction

TEXT = """
HloModule m

ENTRY main {
  p = f32[4] parameter(0)
  a = f32[4] sine(p)
  b = f32[4] cosine(a)
  ROOT c = f32[4] add(a, b)
}
"""


def names(comp):
    return [i.name for i in comp.instructions]


def new(opcode, operands, name):
    return HloInstruction(opcode, operands[0].shape, operands, name=name)


def test_insert_before_and_after_keep_the_order_of_an_in_place_edit():
    comp = parse_hlo_module(TEXT).entry
    p, a, b, c = comp.instructions
    comp.insert_before(b, new("negate", [a], "x1"))
    comp.insert_before(b, new("negate", [a], "x2"))  # after x1: both just before b
    comp.insert_after(a, new("exponential", [a], "y1"))
    comp.insert_after(a, new("exponential", [a], "y2"))  # just after a: before y1
    assert names(comp) == ["p", "a", "y2", "y1", "x1", "x2", "b", "c"]


def test_inserted_instructions_can_be_anchors():
    comp = parse_hlo_module(TEXT).entry
    p, a, b, c = comp.instructions
    x = comp.insert_before(b, new("negate", [a], "x"))
    comp.insert_before(x, new("negate", [a], "w"))
    comp.insert_after(x, new("negate", [x], "z"))
    assert names(comp) == ["p", "a", "w", "x", "z", "b", "c"]


def test_remove_then_read_and_readd():
    module = parse_hlo_module(TEXT)
    comp = module.entry
    p, a, b, c = comp.instructions
    before = comp.instructions
    c.operands = [a, a]
    comp.remove_instruction(b)
    assert [i.name for i in before] == ["p", "a", "b", "c"]  # a list read earlier is unchanged
    assert names(comp) == ["p", "a", "c"]
    assert b.parent is None and a.users == [c]
    # Removed instructions leave their operands' user sets; adding back restores them.
    assert b not in a._users
    comp.insert_before(c, b)
    c.operands = [a, b]
    assert names(comp) == ["p", "a", "b", "c"]
    assert set(a.users) == {b, c}
    assert b.users == [c]


def test_remove_rejects_the_root_and_strangers():
    comp = parse_hlo_module(TEXT).entry
    with pytest.raises(ValueError):
        comp.remove_instruction(comp.root_instruction)
    with pytest.raises(ValueError):
        comp.remove_instruction(HloInstruction.create_parameter(7, comp.root_instruction.shape))


def test_unique_name_sees_instructions_added_later():
    module = parse_hlo_module(TEXT)
    comp = module.entry
    first = module.unique_name("sine")
    a = comp.instructions[1]
    taken = {first}
    # Names a pass gives explicitly are noted as the instructions are added.
    comp.insert_before(a, new("sine", [comp.instructions[0]], "sine.2"))
    comp.add_instruction(new("sine", [a], "sine.3"))
    for _ in range(5):
        name = module.unique_name("sine")
        assert name not in taken and name not in {"sine.2", "sine.3"}
        taken.add(name)


# post_order: a list already in post order comes back as it is (found in one
# pass); any other is walked depth first. Expected orders written by hand.
def test_post_order_keeps_a_list_in_post_order():
    comp = parse_hlo_module(TEXT).entry
    order = comp.post_order()
    assert [i.name for i in order] == ["p", "a", "b", "c"]
    assert order is not comp.instructions


def test_post_order_moves_an_operand_before_its_user_and_the_root_last():
    comp = parse_hlo_module(TEXT).entry
    p, a, b, c = comp.instructions
    comp.instructions = [c, b, a, p]
    assert [i.name for i in comp.post_order()] == ["p", "a", "b", "c"]
    comp.instructions = [p, a, c, b]   # operands first, but the root is not last
    assert [i.name for i in comp.post_order()] == ["p", "a", "b", "c"]


def test_post_order_puts_control_predecessors_first():
    comp = parse_hlo_module(TEXT).entry
    p, a, b, c = comp.instructions
    d = new("negate", [p], "d")
    comp.add_instruction(d)   # listed after the root...
    b.attrs["control-predecessors"] = [d]   # ...and b must follow it
    assert [i.name for i in comp.post_order()] == ["p", "a", "d", "b", "c"]


def test_a_shapes_physical_order_is_its_layouts_or_row_major():
    from xla.hlo.parser import parse_shape
    from xla.hlo.shape import Layout
    s = parse_shape("f32[2,3,4]{0,2,1}")
    assert s.physical_minor_to_major() == (0, 2, 1) and not s.is_row_major()
    r = s.with_layout(Layout.row_major(3))
    assert r.physical_minor_to_major() == (2, 1, 0) and r.is_row_major()
    assert s.without_layout().physical_minor_to_major() == (2, 1, 0)
    assert s.without_layout().is_row_major()
