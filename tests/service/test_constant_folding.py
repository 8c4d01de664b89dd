"""HloConstantFolding: instructions of constants become constants."""
import numpy as np

from pass_test_util import assert_same_results, opcodes, run_pass
from xla.service.constant_folding import MAX_CONSTANT_ELEMENTS, HloConstantFolding

CHAIN = """HloModule m

ENTRY %main (x: f32[2]) -> f32[2] {
  %x = f32[2] parameter(0)
  %a = f32[2] constant({1, 2})
  %b = f32[2] constant({3, 4})
  %sum = f32[2] add(%a, %b)
  %neg = f32[2] negate(%sum)
  ROOT %r = f32[2] multiply(%x, %neg)
}
"""


def test_folds_chains_into_one_constant():
    module, changed = run_pass(HloConstantFolding(), CHAIN)
    assert changed
    assert module.to_text() == """HloModule m

ENTRY %main (x: f32[2]) -> f32[2] {
  %x = f32[2] parameter(0)
  %constant.2 = f32[2] constant({-4, -6})
  ROOT %r = f32[2] multiply(%x, %constant.2)
}
"""
    assert_same_results(CHAIN, module)
    assert not HloConstantFolding().run(module)


def test_result_keeps_shape_type_and_layout():
    text = """HloModule m

ENTRY %main () -> f32[2,2] {
  %c = s32[2,2]{0,1} constant({ { 1, 2 }, { 3, 4 } })
  ROOT %f = f32[2,2]{0,1} convert(%c)
}
"""
    module, changed = run_pass(HloConstantFolding(), text)
    assert changed
    root = module.entry.root_instruction
    assert root.opcode == "constant"
    assert root.shape.to_text() == "f32[2,2]{0,1}"
    np.testing.assert_array_equal(root.literal, np.float32([[1, 2], [3, 4]]))
    assert root.literal.dtype == np.float32


def test_folds_reduce_with_its_reducer():
    text = """HloModule m

%add (p: s32[], q: s32[]) -> s32[] {
  %p = s32[] parameter(0)
  %q = s32[] parameter(1)
  ROOT %r = s32[] add(%p, %q)
}

ENTRY %main () -> s32[] {
  %c = s32[4] constant({1, 2, 3, 4})
  %zero = s32[] constant(0)
  ROOT %total = s32[] reduce(%c, %zero), dimensions={0}, to_apply=%add
}
"""
    module, changed = run_pass(HloConstantFolding(), text)
    assert changed
    assert int(module.entry.root_instruction.literal) == 10


def test_leaves_broadcast_iota_rng_and_parameters():
    text = """HloModule m

ENTRY %main (x: f32[]) -> (f32[1000], s32[1000], f32[4], f32[]) {
  %x = f32[] parameter(0)
  %one = f32[] constant(1)
  %b = f32[1000] broadcast(%one), dimensions={}
  %i = s32[1000] iota(), iota_dimension=0
  %lo = f32[] constant(0)
  %r = f32[4] rng(%lo, %one), distribution=rng_uniform
  %y = f32[] add(%x, %one)
  ROOT %t = (f32[1000], s32[1000], f32[4], f32[]) tuple(%b, %i, %r, %y)
}
"""
    module, changed = run_pass(HloConstantFolding(), text)
    assert not changed
    assert sorted(opcodes(module)) == sorted(["parameter", "constant", "broadcast", "iota", "constant",
                                              "rng", "add", "tuple"])


def test_size_limit_unless_operands_are_as_large():
    text = """HloModule m

ENTRY %main () -> (f32[8], f32[8]) {
  %c = f32[2] constant({1, 2})
  %zero = f32[] constant(0)
  %padded = f32[8] pad(%c, %zero), padding=3_3
  %big = f32[8] constant({1, 2, 3, 4, 5, 6, 7, 8})
  %rev = f32[8] reverse(%big), dimensions={0}
  ROOT %t = (f32[8], f32[8]) tuple(%padded, %rev)
}
"""
    module, changed = run_pass(HloConstantFolding(max_constant_elements=4), text)
    assert changed
    root = module.entry.root_instruction
    assert [o.opcode for o in root.operands] == ["pad", "constant"]
    np.testing.assert_array_equal(root.operands[1].literal, np.arange(8, 0, -1, dtype=np.float32))
    assert_same_results(text, module)

    module, changed = run_pass(HloConstantFolding(), text)
    assert [o.opcode for o in module.entry.root_instruction.operands] == ["constant", "constant"]
    assert MAX_CONSTANT_ELEMENTS == 45 * 1000 * 1000


def test_gte_of_tuple_constant_and_control_dependencies():
    text = """HloModule m

ENTRY %main () -> (s32[], f32[]) {
  %c = (s32[], f32[]) constant((7, 2.5))
  %g = s32[] get-tuple-element(%c), index=0
  %h = f32[] constant(1)
  %n = f32[] negate(%h), control-predecessors={%g}
  ROOT %t = (s32[], f32[]) tuple(%g, %n)
}
"""
    module, changed = run_pass(HloConstantFolding(), text)
    # g has a control successor and n a control predecessor: neither folds.
    assert not changed
    module, changed = run_pass(HloConstantFolding(), text.replace(", control-predecessors={%g}", ""))
    assert changed
    assert [o.opcode for o in module.entry.root_instruction.operands] == ["constant", "constant"]
    assert int(module.entry.root_instruction.operands[0].literal) == 7


def test_nothing_to_fold_returns_false():
    text = """HloModule m

ENTRY %main (x: f32[2]) -> f32[2] {
  %x = f32[2] parameter(0)
  %c = f32[2] constant({1, 2})
  ROOT %r = f32[2] add(%x, %c)
}
"""
    module, changed = run_pass(HloConstantFolding(), text)
    assert not changed
