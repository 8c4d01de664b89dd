"""reduction-dimension-grouper: reduces over consecutive row-major
dimensions reduce their product, the operand's elementwise producers
rebuilt in the grouped shape (broadcasts of kept dimensions broadcast into
it), other producers reshaped; the interpreter computes the same numbers
before and after."""
import pytest
from pass_test_util import assert_same_results, run_pass

from xla.service.reduction_dimension_grouper import ReductionDimensionGrouper

ADD = """add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
"""

GROUPNORM = """HloModule groupnorm
""" + ADD + """
ENTRY e {
  x = f32[4,6,10,10] parameter(0)
  g = f32[4,3,2,10,10] reshape(x)
  z = f32[] constant(0)
  s = f32[4,3] reduce(g, z), dimensions={2,3,4}, to_apply=add
  n = f32[] constant(200)
  nb = f32[4,3] broadcast(n), dimensions={}
  mean = f32[4,3] divide(s, nb)
  mb = f32[4,3,2,10,10] broadcast(mean), dimensions={0,1}
  d = f32[4,3,2,10,10] subtract(g, mb)
  sq = f32[4,3,2,10,10] multiply(d, d)
  v = f32[4,3] reduce(sq, z), dimensions={2,3,4}, to_apply=add
  out = f32[4,3,2,10,10] multiply(d, mb)
  ROOT t = (f32[4,3], f32[4,3], f32[4,3,2,10,10]) tuple(s, v, out)
}
"""


def _reduces(module):
    return [i for i in module.entry.instructions if i.opcode == "reduce"]


def test_groupnorm_statistics_reduce_one_grouped_dimension():
    module, changed = run_pass(ReductionDimensionGrouper(), GROUPNORM)
    assert changed
    for r in _reduces(module):
        assert r.attr("dimensions") == (2,)
        assert r.operands[0].shape.dimensions == (4, 3, 200)
    # The variance's producers are rebuilt in the grouped shape: its
    # square and subtract, the mean broadcast into it; the input reshaped.
    (s, v) = _reduces(module)
    sq = v.operands[0]
    assert sq.opcode == "multiply" and sq.operands[0].opcode == "subtract"
    sub = sq.operands[0]
    assert sub.operands[0].opcode == "reshape" and sub.operands[0].operands[0].opcode == "parameter"
    assert sub.operands[1].opcode == "broadcast" and sub.operands[1].attr("dimensions") == (0, 1)
    # s's operand: the parameter reshaped once (the reshape chain skipped).
    assert s.operands[0].opcode == "reshape" and s.operands[0].operands[0].opcode == "parameter"
    # The output still reads the original subtract.
    assert module.entry.root_instruction.operands[2].operands[0].shape.dimensions == (4, 3, 2, 10, 10)
    assert_same_results(GROUPNORM, module, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dims,layout", [("1,3", "{3,2,1,0}"), ("2", "{3,2,1,0}"),
                                         ("2,3", "{2,3,1,0}")])
def test_left_alone(dims, layout):
    # Dimensions not next to each other, a single one, or not row-major.
    out = {"1,3": "f32[4,10]", "2": "f32[4,6,10]", "2,3": "f32[4,6]"}[dims]
    text = f"""HloModule m
{ADD}
ENTRY e {{
  x = f32[4,6,10,10]{layout} parameter(0)
  z = f32[] constant(0)
  ROOT r = {out} reduce(x, z), dimensions={{{dims}}}, to_apply=add
}}
"""
    _, changed = run_pass(ReductionDimensionGrouper(), text)
    assert not changed


def test_broadcast_over_reduced_dimensions_is_reshaped():
    # A broadcast along a reduced dimension cannot be broadcast into the
    # grouped shape: it is reshaped as it is.
    text = f"""HloModule m
{ADD}
ENTRY e {{
  x = f32[5,4,6] parameter(0)
  w = f32[4] parameter(1)
  wb = f32[5,4,6] broadcast(w), dimensions={{1}}
  p = f32[5,4,6] multiply(x, wb)
  z = f32[] constant(0)
  ROOT r = f32[5] reduce(p, z), dimensions={{1,2}}, to_apply=add
}}
"""
    module, changed = run_pass(ReductionDimensionGrouper(), text)
    assert changed
    (r,) = _reduces(module)
    assert r.attr("dimensions") == (1,)
    mul = r.operands[0]
    assert mul.opcode == "multiply" and mul.operands[1].opcode == "reshape"
    assert mul.operands[1].operands[0].opcode == "broadcast"
    assert_same_results(text, module, rtol=1e-5, atol=1e-5)


def test_compare_and_select_keep_their_attributes():
    text = """HloModule m
max {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] maximum(a, b)
}
ENTRY e {
  x = f32[3,4,5,6] parameter(0)
  y = f32[3,4,5,6] parameter(1)
  c = pred[3,4,5,6] compare(x, y), direction=LT
  s = f32[3,4,5,6] select(c, x, y)
  z = f32[] constant(-inf)
  ROOT r = f32[3,4] reduce(s, z), dimensions={2,3}, to_apply=max
}
"""
    module, changed = run_pass(ReductionDimensionGrouper(), text)
    assert changed
    (r,) = _reduces(module)
    cmp = r.operands[0].operands[0]
    assert cmp.opcode == "compare" and str(cmp.attr("direction")) == "LT"
    assert_same_results(text, module)


CHANNELS = """HloModule channels
""" + ADD + """
sub {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] subtract(a, b)
}
ENTRY e {
  x = u8[2,16,32,3] parameter(0)
  f = f32[2,16,32,3] convert(x)
  z = f32[] constant(0)
  ROOT r = f32[2,3] reduce(f, z), dimensions={1,2}, to_apply=REDUCER
}
"""


def test_a_few_channels_kept_minor_are_folded_sixteen_rows_at_once():
    # [2, 512, 3] -> rows of 16 pixels' 3 channels: [2, 32, 48], reduced to
    # [2, 48], then [2, 16, 3] reduced to [2, 3].
    text = CHANNELS.replace("REDUCER", "add")
    module, changed = run_pass(ReductionDimensionGrouper(), text)
    assert changed
    partial, final = _reduces(module)
    assert partial.operands[0].shape.dimensions == (2, 32, 48)
    assert partial.operands[0].opcode == "convert"      # rebuilt in the new shape
    assert partial.shape.dimensions == (2, 48)
    assert final.operands[0].shape.dimensions == (2, 16, 3) and final.attr("dimensions") == (1,)
    assert_same_results(text, module, rtol=1e-5, atol=1e-3)


@pytest.mark.parametrize("change", [
    ("REDUCER", "sub"),                                   # not regroupable: grouped only
    ("[2,16,32,3]", "[2,17,31,3]"),                       # 527 rows: not a multiple of 16
    ("[2,16,32,3]", "[2,4,8,3]"),                         # 32 rows: too few
])
def test_channels_left_unsplit(change):
    text = CHANNELS.replace(*change).replace("REDUCER", "add")
    module, changed = run_pass(ReductionDimensionGrouper(), text)
    assert changed
    (r,) = _reduces(module)
    assert r.operands[0].shape.rank == 3 and r.attr("dimensions") == (1,)
    assert_same_results(text, module, rtol=1e-5, atol=1e-3)
