"""DynamicPadder: dynamic dimensions become static at their bounds, sizes
are tracked as s32[] instructions, ops whose result would see the padding
are masked or rewritten, the rest refused by name; and bind_dynamic_entry,
which gives a dynamic entry's parameters and result explicit sizes."""
import numpy as np
import pytest

from pass_test_util import opcodes, run_pass
from xla.errors import UnimplementedError
from xla.hlo.evaluator.evaluator import Evaluator
from xla.hlo.parser import parse_hlo_module
from xla.hlo.verifier import verify_module
from xla.service.dynamic_entry import bind_dynamic_entry
from xla.service.dynamic_padder import DynamicPadder

REDUCE = """HloModule m

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}

ENTRY e {
  p = f32[3,5] parameter(0)
  n = s32[] parameter(1)
  d = f32[3,<=5] set-dimension-size(p, n), dimensions={1}
  zero = f32[] constant(0)
  ROOT s = f32[3] reduce(d, zero), dimensions={1}, to_apply=add
}
"""


def valid_region_matches(text_before, module_after, args):
    """The interpreter's result before the pass (held at its dynamic sizes)
    is the valid region of the padded result after it."""
    before = Evaluator().evaluate(parse_hlo_module(text_before), list(args))
    after = Evaluator().evaluate(module_after, list(args))
    for want, got in zip(before if isinstance(before, tuple) else (before,),
                         after if isinstance(after, tuple) else (after,)):
        want, got = np.asarray(want), np.asarray(got)
        region = got[tuple(slice(0, k) for k in want.shape)]
        np.testing.assert_allclose(region, want, rtol=1e-6)


def test_reduce_over_a_dynamic_dimension_is_masked_with_its_init():
    module, changed = run_pass(DynamicPadder(), REDUCE)
    assert changed
    assert module.entry.to_text() == """ENTRY e {
  p = f32[3,5] parameter(0)
  n = s32[] parameter(1)
  zero = f32[] constant(0)
  iota.1 = s32[3,5] iota(), iota_dimension=1
  broadcast.2 = s32[3,5] broadcast(n), dimensions={}
  compare.3 = pred[3,5] compare(iota.1, broadcast.2), direction=LT
  broadcast.4 = f32[3,5] broadcast(zero), dimensions={}
  select.5 = f32[3,5] select(compare.3, p, broadcast.4)
  ROOT s = f32[3] reduce(select.5, zero), dimensions={1}, to_apply=add
}"""
    x = np.arange(15, dtype=np.float32).reshape(3, 5)
    for n in (0, 2, 5):
        got = Evaluator().evaluate(module, [x, np.int32(n)])
        np.testing.assert_array_equal(got, x[:, :n].sum(axis=1))
    assert not DynamicPadder().run(module)


def test_get_dimension_size_reads_the_tracked_size_through_a_reshape():
    text = """HloModule m

ENTRY e {
  p = f32[4,3] parameter(0)
  n = s32[] parameter(1)
  d = f32[<=4,3] set-dimension-size(p, n), dimensions={0}
  r = f32[<=12] reshape(d)
  ROOT s = s32[] get-dimension-size(r), dimensions={0}
}
"""
    module, _ = run_pass(DynamicPadder(), text)
    # The padding stays at the end of the merged dimensions: a plain reshape.
    assert module.entry.to_text() == """ENTRY e {
  p = f32[4,3] parameter(0)
  n = s32[] parameter(1)
  constant.1 = s32[] constant(3)
  r = f32[12] reshape(p)
  ROOT multiply.2 = s32[] multiply(n, constant.1)
}"""


def test_get_dimension_size_of_a_static_dimension_is_a_constant():
    text = """HloModule m

ENTRY e {
  p = f32[4,7] parameter(0)
  ROOT s = s32[] get-dimension-size(p), dimensions={1}
}
"""
    module, changed = run_pass(DynamicPadder(), text)
    assert changed
    assert opcodes(module) == ["parameter", "constant"]
    assert int(Evaluator().evaluate(module, [np.zeros((4, 7), np.float32)])) == 7


def test_reshape_that_interleaves_the_padding_gathers():
    text = """HloModule m

ENTRY e {
  p = f32[3,4] parameter(0)
  n = s32[] parameter(1)
  d = f32[3,<=4] set-dimension-size(p, n), dimensions={1}
  ROOT r = f32[<=12] reshape(d)
}
"""
    module, _ = run_pass(DynamicPadder(), text)
    assert "gather" in opcodes(module) and "reshape" in opcodes(module)
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    for n in (0, 1, 3, 4):
        valid_region_matches(text, module, [x, np.int32(n)])


def test_dynamic_reshape_is_a_gather_with_its_operands_as_sizes():
    text = """HloModule m

ENTRY e {
  p = f32[12] parameter(0)
  a = s32[] parameter(1)
  b = s32[] parameter(2)
  r = f32[<=12,<=12] dynamic-reshape(p, a, b)
  size = s32[] get-dimension-size(r), dimensions={1}
  ROOT t = (f32[<=12,<=12], s32[]) tuple(r, size)
}
"""
    module, _ = run_pass(DynamicPadder(), text)
    assert "dynamic-reshape" not in opcodes(module) and "gather" in opcodes(module)
    root = module.entry.root_instruction
    assert root.operands[1].name == "b"
    x = np.arange(12, dtype=np.float32)
    for a, b in ((1, 12), (3, 4), (12, 1)):
        valid_region_matches(text, module, [x, np.int32(a), np.int32(b)])


def test_concatenate_along_a_dynamic_dimension_writes_at_running_offsets():
    text = """HloModule m

ENTRY e {
  p = f32[2,3] parameter(0)
  q = f32[2,3] parameter(1)
  n = s32[] parameter(2)
  a = f32[<=2,3] set-dimension-size(p, n), dimensions={0}
  ROOT c = f32[<=4,3] concatenate(a, q), dimensions={0}
}
"""
    module, _ = run_pass(DynamicPadder(), text)
    ops = opcodes(module)
    assert ops.count("dynamic-update-slice") == 2 and "concatenate" not in ops
    x, y = np.ones((2, 3), np.float32), -np.ones((2, 3), np.float32)
    for n in (0, 1, 2):
        valid_region_matches(text, module, [x, y, np.int32(n)])


def test_slice_size_follows_the_valid_elements():
    text = """HloModule m

ENTRY e {
  p = f32[8] parameter(0)
  n = s32[] parameter(1)
  d = f32[<=8] set-dimension-size(p, n), dimensions={0}
  s = f32[<=3] slice(d), slice={[1:6:2]}
  ROOT z = s32[] get-dimension-size(s), dimensions={0}
}
"""
    module, _ = run_pass(DynamicPadder(), text)
    x = np.arange(8, dtype=np.float32)
    for n in range(9):
        got = int(Evaluator().evaluate(module, [x, np.int32(n)]))
        assert got == len(x[:n][1:6:2]), n


def test_nothing_dynamic_is_no_change():
    text = """HloModule m

ENTRY e {
  p = f32[4] parameter(0)
  ROOT n = f32[4] negate(p)
}
"""
    module, changed = run_pass(DynamicPadder(), text)
    assert not changed and opcodes(module) == ["parameter", "negate"]


@pytest.mark.parametrize("text,match", [
    ("""HloModule m
ENTRY e {
  p = f32[<=4] parameter(0)
  ROOT n = f32[<=4] negate(p)
}""", "entry parameter of dynamic shape"),
    ("""HloModule m
body {
  x = f32[4] parameter(0)
  n = s32[] constant(2)
  ROOT d = f32[<=4] set-dimension-size(x, n), dimensions={0}
}
ENTRY e {
  p = f32[4] parameter(0)
  ROOT c = f32[<=4] call(p), to_apply=body
}""", "inside computation body"),
    ("""HloModule m
ENTRY e {
  p = f32[4] parameter(0)
  n = s32[] parameter(1)
  d = f32[<=4] set-dimension-size(p, n), dimensions={0}
  z = f32[] constant(0)
  ROOT q = f32[<=6] pad(d, z), padding=1_1
}""", "pad q: a dynamic operand"),
])
def test_refusals_name_the_instruction(text, match):
    with pytest.raises(UnimplementedError, match=match):
        DynamicPadder().run(parse_hlo_module(text))


def test_bind_dynamic_entry_gives_parameters_and_result_explicit_sizes():
    text = """HloModule m

ENTRY e {
  p = f32[<=4,3] parameter(0)
  ROOT n = f32[<=4,3] negate(p)
}
"""
    module = parse_hlo_module(text)
    binding = bind_dynamic_entry(module)
    verify_module(module)
    assert module.entry.to_text() == """ENTRY e {
  p = f32[4,3] parameter(0)
  p_size_0.1 = s32[] parameter(1)
  set-dimension-size.2 = f32[<=4,3] set-dimension-size(p, p_size_0.1), dimensions={0}
  n = f32[<=4,3] negate(set-dimension-size.2)
  get-dimension-size.3 = s32[] get-dimension-size(n), dimensions={0}
  ROOT tuple.4 = (f32[<=4,3], s32[]) tuple(n, get-dimension-size.3)
}"""
    assert DynamicPadder().run(module)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    args = binding.pad_arguments([x])
    assert args[0].shape == (4, 3) and int(args[1]) == 2
    result = binding.unpad_result(Evaluator().evaluate(module, args))
    np.testing.assert_array_equal(result, -x)
    assert bind_dynamic_entry(parse_hlo_module(
        "HloModule s\nENTRY e {\n  ROOT p = f32[4] parameter(0)\n}\n")) is None
