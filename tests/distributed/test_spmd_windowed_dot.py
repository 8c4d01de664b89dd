"""Windowed dot (xla/service/spmd_windowed_dot.py): a dot whose operands
are cut along their free dimensions by the same devices passes one
operand's tiles round a ring of collective-permutes (a while loop, one
step per iteration) instead of gathering it, when that operand is at least
the threshold. The partitioned module
runs on 4 partitions of the interpreter and the CPU and equals the
unpartitioned module's result on the interpreter."""
import numpy as np
import pytest

import xla
from xla.hlo.evaluator import evaluate
from xla.service.spmd_partitioner import partition, shard, unshard


def module(body):
    return "HloModule m, num_partitions=4\nENTRY e {\n" + body + "\n}\n"


def run(text, shapes, threshold):
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    expected = evaluate(xla.parse_hlo_module(text), *args)
    partitioned, params, result = partition(xla.parse_hlo_module(text), 4,
                                            windowed_einsum_threshold_bytes=threshold)
    for platform in ("interpreter", "cpu"):
        exe = xla.compile(xla.parse_hlo_module(partitioned.to_text()), platform, num_partitions=4)
        per_device = [[shard(a, s, 4)[d] for a, s in zip(args, params)] for d in range(4)]
        got = unshard(exe.execute(per_device), result, np.shape(expected))
        np.testing.assert_allclose(got, expected, rtol=2e-5, atol=2e-5, err_msg=platform)
    return [h.opcode for c in partitioned.computations for h in c.instructions], result


def ring_loop(text, shapes):
    """The while of the partitioned module and its body's opcodes."""
    partitioned, _, _ = partition(xla.parse_hlo_module(text), 4, windowed_einsum_threshold_bytes=0)
    (loop,) = [h for h in partitioned.entry.instructions if h.opcode == "while"]
    return loop, [h.opcode for h in loop.attr("body").instructions]


ROWS_TIMES_COLUMNS = """  x = f32[8,16] parameter(0), sharding={devices=[4,1]<=[4]}
  w = f32[16,12] parameter(1), sharding=%s
  ROOT d = f32[8,12] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}"""


@pytest.mark.parametrize("w_sharding", ["{devices=[1,4]<=[4]}", "{devices=[1,4]3,1,0,2}"])
def test_columns_travel_round_the_ring_instead_of_an_all_gather(w_sharding):
    # w is 16*12*4 = 768 bytes: at the threshold the ring is used.
    ops, result = run(module(ROWS_TIMES_COLUMNS % w_sharding), [(8, 16), (16, 12)], 768)
    assert "all-gather" not in ops
    # One step in the loop's body, the last one peeled after it.
    assert ops.count("collective-permute") == 1 and ops.count("while") == 1
    assert ops.count("dot") == 2 and ops.count("dynamic-update-slice") == 2
    assert result.to_text() == "{devices=[4,1]0,1,2,3}"
    loop, body = ring_loop(module(ROWS_TIMES_COLUMNS % w_sharding), [(8, 16), (16, 12)])
    assert sorted(o for o in body if o in ("dot", "collective-permute", "dynamic-update-slice")) \
        == ["collective-permute", "dot", "dynamic-update-slice"]
    assert str(loop.attr("backend_config").text) == '{"known_trip_count":{"n":"3"}}'
    # Each device holds one 16x3 tile of w at a time (plus the one arriving).
    assert loop.shape.tuple_shapes[2].dimensions == (16, 3)


def test_below_the_threshold_or_by_default_the_operand_is_gathered():
    for threshold in (769, None):
        ops, _ = run(module(ROWS_TIMES_COLUMNS % "{devices=[1,4]<=[4]}"), [(8, 16), (16, 12)],
                     threshold)
        assert ops.count("all-gather") == 1 and "collective-permute" not in ops


def test_a_rank_3_lhs_with_the_rhs_columns_travelling():
    ops, _ = run(module("""  x = f32[2,8,16] parameter(0), sharding={devices=[1,4,1]<=[4]}
  w = f32[16,12] parameter(1), sharding={devices=[1,4]<=[4]}
  ROOT d = f32[2,8,12] dot(x, w), lhs_contracting_dims={2}, rhs_contracting_dims={0}"""),
                 [(2, 8, 16), (16, 12)], 0)
    assert ops.count("collective-permute") == 1 and "all-gather" not in ops


def test_operands_sharing_a_cut_batch_dimension_keep_the_reshard():
    # y's tiles would need cutting along the batch x cuts: no ring; y moves
    # from its column cut to x's batch cut by one all-to-all.
    ops, _ = run(module("""  x = f32[4,8,16] parameter(0), sharding={devices=[4,1,1]<=[4]}
  y = f32[4,16,8] parameter(1), sharding={devices=[1,1,4]<=[4]}
  ROOT d = f32[4,8,8] dot(x, y), lhs_batch_dims={0}, rhs_batch_dims={0},
    lhs_contracting_dims={2}, rhs_contracting_dims={1}"""), [(4, 8, 16), (4, 16, 8)], 0)
    assert "collective-permute" not in ops and ops.count("all-to-all") == 1


def test_a_ring_inside_a_partitioned_loop_body():
    # The dot of a loop body (rows times columns, both carried) becomes a
    # ring loop nested in the partitioned body.
    text = """HloModule m, num_partitions=4

body {
  p = (s32[], f32[8,16], f32[16,16]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  x = f32[8,16] get-tuple-element(p), index=1
  w = f32[16,16] get-tuple-element(p), index=2
  d = f32[8,16] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  y = f32[8,16] tanh(d)
  one = s32[] constant(1)
  next = s32[] add(i, one)
  ROOT t = (s32[], f32[8,16], f32[16,16]) tuple(next, y, w)
}

cond {
  cp = (s32[], f32[8,16], f32[16,16]) parameter(0)
  ci = s32[] get-tuple-element(cp), index=0
  two = s32[] constant(2)
  ROOT lt = pred[] compare(ci, two), direction=LT
}

ENTRY e {
  a = f32[8,16] parameter(0), sharding={devices=[4,1]<=[4]}
  b = f32[16,16] parameter(1), sharding={devices=[1,4]<=[4]}
  zero = s32[] constant(0)
  init = (s32[], f32[8,16], f32[16,16]) tuple(zero, a, b)
  w = (s32[], f32[8,16], f32[16,16]) while(init), condition=cond, body=body
  ROOT r = f32[8,16] get-tuple-element(w), index=1
}
"""
    rng = np.random.default_rng(0)
    args = [rng.standard_normal((8, 16)).astype(np.float32),
            (rng.standard_normal((16, 16)) * 0.3).astype(np.float32)]
    expected = evaluate(xla.parse_hlo_module(text), *args)
    partitioned, params, result = partition(xla.parse_hlo_module(text), 4,
                                            windowed_einsum_threshold_bytes=0)
    exe = xla.compile(xla.parse_hlo_module(partitioned.to_text()), "cpu", num_partitions=4)
    per_device = [[shard(a, s, 4)[d] for a, s in zip(args, params)] for d in range(4)]
    np.testing.assert_allclose(unshard(exe.execute(per_device), result, (8, 16)), expected,
                               rtol=2e-5, atol=2e-5)
    (outer,) = [h for h in partitioned.entry.instructions if h.opcode == "while"]
    body = outer.attr("body")
    (ring,) = [h for h in body.instructions if h.opcode == "while"]
    assert "collective-permute" in [h.opcode for h in ring.attr("body").instructions]
    assert "all-gather" not in [h.opcode for c in partitioned.computations for h in c.instructions]
