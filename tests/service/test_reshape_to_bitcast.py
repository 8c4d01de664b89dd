"""ReshapeToBitcast: a reshape between row-major layouts moves no byte and
becomes a bitcast (its operand's buffer); one whose layouts order the
elements differently is left alone."""
from pass_test_util import assert_same_results, opcodes, run_pass
from xla.service.reshape_to_bitcast import ReshapeToBitcast

ROW_MAJOR = """HloModule m
ENTRY e {
  x = f32[2,3,4]{2,1,0} parameter(0)
  r = f32[6,4]{1,0} reshape(x)
  ROOT n = f32[6,4]{1,0} negate(r)
}"""


def test_a_row_major_reshape_becomes_a_bitcast():
    module, changed = run_pass(ReshapeToBitcast(), ROW_MAJOR)
    assert changed
    assert module.to_text().strip() == """HloModule m

ENTRY e {
  x = f32[2,3,4]{2,1,0} parameter(0)
  bitcast.1 = f32[6,4]{1,0} bitcast(x)
  ROOT n = f32[6,4]{1,0} negate(bitcast.1)
}
""".strip()
    assert_same_results(ROW_MAJOR, module)
    assert not ReshapeToBitcast().run(module)


def test_a_reshape_that_reorders_bytes_is_left_alone():
    text = """HloModule m
ENTRY e {
  x = f32[2,3,4]{0,1,2} parameter(0)
  r = f32[6,4]{1,0} reshape(x)
  ROOT n = f32[6,4]{1,0} negate(r)
}"""
    module, changed = run_pass(ReshapeToBitcast(), text)
    assert not changed and opcodes(module) == ["parameter", "reshape", "negate"]
