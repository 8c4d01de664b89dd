"""ShardingPropagation through control flow (xla/service/sharding_propagation.py):
a while's operand, body parameter and root, condition parameter and result
hold one value per carried element and end with one sharding; a call's and
a conditional's operands flow into the callee's parameters and the roots
out. Before: the module as written; after: the shardings printed (derived by
hand: a carried value keeps the cut it enters with, or the cut its body
asks for). End to end the partitioned modules run on 4 partitions of the
interpreter and the CPU and equal the unpartitioned module's result."""
import numpy as np

import xla
from xla.hlo.evaluator import evaluate
from xla.service.sharding_propagation import ShardingPropagation
from xla.service.spmd_partitioner import partition, shard_arguments, unshard_result

ROWS = "{devices=[4,1]0,1,2,3}"
LOOP = """HloModule m, num_partitions=4

body {
  p = (s32[], f32[8,6]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  x = f32[8,6] get-tuple-element(p), index=1
  one = s32[] constant(1)
  next = s32[] add(i, one)
  y = f32[8,6] sine(x)%s
  ROOT t = (s32[], f32[8,6]) tuple(next, y)
}

cond {
  cp = (s32[], f32[8,6]) parameter(0)
  ci = s32[] get-tuple-element(cp), index=0
  cx = f32[8,6] get-tuple-element(cp), index=1
  three = s32[] constant(3)
  ROOT lt = pred[] compare(ci, three), direction=LT
}

ENTRY e {
  a = f32[8,6] parameter(0)%s
  zero = s32[] constant(0)
  init = (s32[], f32[8,6]) tuple(zero, a)
  w = (s32[], f32[8,6]) while(init), condition=cond, body=body
  ROOT r = f32[8,6] get-tuple-element(w), index=1
}
"""


def shardings(m):
    return {(c.name, h.name): (None if "sharding" not in h.attrs
                               else str(getattr(h.attrs["sharding"], "text", h.attrs["sharding"])))
            for c in m.computations for h in c.instructions}


def run(text, shapes):
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    module = xla.parse_hlo_module(text)
    expected = evaluate(xla.parse_hlo_module(text), *args)
    partitioned, params, result = partition(module, 4)
    for platform in ("interpreter", "cpu"):
        exe = xla.compile(xla.parse_hlo_module(partitioned.to_text()), platform, num_partitions=4)
        got = unshard_result(exe.execute(shard_arguments(args, params, 4)), result,
                             module.entry.root_instruction.shape)
        for g, e in zip(*((got, expected) if isinstance(got, tuple) else ([got], [expected]))):
            np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6, err_msg=platform)
    return partitioned


def test_a_parameters_cut_is_carried_through_the_loop():
    m = xla.parse_hlo_module(LOOP % ("", ", sharding={devices=[4,1]<=[4]}"))
    assert ShardingPropagation(None, 4).run(m)
    got = shardings(m)
    carried = "{{replicated}, " + ROWS + "}"
    for where in [("e", "init"), ("e", "w"), ("body", "p"), ("body", "t"), ("cond", "cp")]:
        assert got[where] == carried, where
    for where in [("body", "x"), ("body", "y"), ("cond", "cx"), ("e", "r")]:
        assert got[where] == ROWS, where
    assert got[("body", "i")] is None      # scalars stay whole
    partitioned = run(LOOP % ("", ", sharding={devices=[4,1]<=[4]}"), [(8, 6)])
    ops = [h.opcode for c in partitioned.computations for h in c.instructions]
    assert "while" in ops and not {"all-gather", "all-reduce", "all-to-all"} & set(ops)


def test_a_cut_asked_for_inside_the_body_reaches_the_loop_and_its_result():
    # Nothing outside says how a is cut (an entry parameter gets no
    # sharding by default); the body's constraint on y makes the whole
    # loop carry rows, so the loop's operand is cut on entry (locally: a
    # is whole on every device) and no collective runs at all.
    text = LOOP % ("\n  c = f32[8,6] custom-call(y), custom_call_target=\"Sharding\", "
                   "sharding={devices=[4,1]<=[4]}", "")
    text = text.replace("tuple(next, y)", "tuple(next, c)")
    m = xla.parse_hlo_module(text)
    ShardingPropagation(None, 4).run(m)
    got = shardings(m)
    assert got[("body", "x")] == got[("body", "y")] == got[("e", "r")] == ROWS
    assert got[("e", "w")] == "{{replicated}, " + ROWS + "}"
    assert got[("e", "a")] is None
    partitioned = run(text, [(8, 6)])
    ops = [h.opcode for c in partitioned.computations for h in c.instructions]
    assert not {"all-gather", "all-reduce", "all-to-all"} & set(ops)
    assert "dynamic-slice" in [h.opcode for h in partitioned.entry.instructions]


def test_call_and_conditional_operands_reach_their_computations():
    text = """HloModule m, num_partitions=4

f {
  x = f32[8,6] parameter(0)
  ROOT y = f32[8,6] exponential(x)
}

g {
  u = f32[8,6] parameter(0)
  ROOT v = f32[8,6] negate(u)
}

ENTRY e {
  a = f32[8,6] parameter(0), sharding={devices=[4,1]<=[4]}
  k = s32[] parameter(1)
  c = f32[8,6] call(a), to_apply=f
  ROOT d = f32[8,6] conditional(k, c, a), branch_computations={f, g}
}
"""
    m = xla.parse_hlo_module(text)
    ShardingPropagation(None, 4).run(m)
    got = shardings(m)
    assert got[("f", "x")] == got[("f", "y")] == got[("g", "u")] == got[("g", "v")] == ROWS
    assert got[("e", "c")] == got[("e", "d")] == ROWS
    for k in (0, 1, 5):
        module = xla.parse_hlo_module(text)
        partitioned, params, result = partition(module, 4)
        x = np.random.default_rng(k).standard_normal((8, 6)).astype(np.float32)
        exe = xla.compile(xla.parse_hlo_module(partitioned.to_text()), "cpu", num_partitions=4)
        got = unshard_result(exe.execute(shard_arguments([x, np.int32(k)], params, 4)), result,
                             module.entry.root_instruction.shape)
        want = np.exp(np.exp(x)) if k == 0 else -x     # out of range: the last branch
        np.testing.assert_allclose(got, want, rtol=1e-5)
        ops = [h.opcode for c in partitioned.computations for h in c.instructions]
        assert not {"all-gather", "all-reduce", "all-to-all"} & set(ops)


def test_the_fixed_point_needs_two_rounds_through_the_body():
    # z enters whole and is only cut because the body adds it to the
    # carried x: its cut comes back out of the body to the loop.
    text = """HloModule m, num_partitions=4

body {
  p = (s32[], f32[8,6], f32[8,6]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  x = f32[8,6] get-tuple-element(p), index=1
  z = f32[8,6] get-tuple-element(p), index=2
  s = f32[8,6] add(x, z)
  one = s32[] constant(1)
  next = s32[] add(i, one)
  ROOT t = (s32[], f32[8,6], f32[8,6]) tuple(next, s, z)
}

cond {
  cp = (s32[], f32[8,6], f32[8,6]) parameter(0)
  ci = s32[] get-tuple-element(cp), index=0
  three = s32[] constant(3)
  ROOT lt = pred[] compare(ci, three), direction=LT
}

ENTRY e {
  a = f32[8,6] parameter(0), sharding={devices=[4,1]<=[4]}
  b = f32[8,6] parameter(1)
  b2 = f32[8,6] cosine(b)
  zero = s32[] constant(0)
  init = (s32[], f32[8,6], f32[8,6]) tuple(zero, a, b2)
  ROOT w = (s32[], f32[8,6], f32[8,6]) while(init), condition=cond, body=body
}
"""
    m = xla.parse_hlo_module(text)
    ShardingPropagation(None, 4).run(m)
    got = shardings(m)
    assert got[("body", "z")] == got[("e", "b2")] == ROWS
    assert got[("e", "w")] == "{{replicated}, " + ROWS + ", " + ROWS + "}"
    run(text, [(8, 6), (8, 6)])
