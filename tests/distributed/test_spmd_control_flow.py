"""SPMD partitioning of control flow (xla/service/spmd_control_flow.py): a
while whose carried values are cut runs on the tiles, its body partitioned
(collectives only where the body's own ops need them); calls and
conditionals likewise. Results equal NumPy's / the unpartitioned module's
on 4 partitions of the interpreter and the CPU."""
import numpy as np
import pytest

import xla
from xla.hlo.evaluator import evaluate
from xla.sharding import Mesh, NamedSharding, P
from xla.service.spmd_partitioner import partition, shard_arguments, unshard_result

MESH = Mesh((4,), ("batch",))
ROWS, WHOLE = NamedSharding(MESH, P("batch", None)), NamedSharding(MESH, P())
COLLECTIVES = ("all-gather", "all-reduce", "all-to-all", "collective-permute", "reduce-scatter")


def ops_of(module):
    """Computation name -> its opcodes."""
    return {c.name: [h.opcode for h in c.instructions] for c in module.computations}


def loop_body(module):
    (w,) = [h for h in module.entry.instructions if h.opcode == "while"]
    return w.attr("body")


@pytest.mark.parametrize("backend", ["interpreter", "cpu"])
def test_data_parallel_fori_loop_of_a_matmul_runs_partitioned(backend):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 16)).astype(np.float32)
    w = (rng.standard_normal((16, 16)) * 0.3).astype(np.float32)

    def f(x, w):
        return xla.lax.fori_loop(0, 4, lambda i, h: np.tanh(h @ w), x)

    g = xla.jit(f, backend=backend, in_shardings=(ROWS, WHOLE), out_shardings=ROWS)
    expected = x
    for _ in range(4):
        expected = np.tanh(expected @ w)
    np.testing.assert_allclose(g(x, w), expected, rtol=1e-5, atol=1e-5)
    module = g.lower(x, w).partitioned_module()
    body = loop_body(module)
    (dot,) = [h for h in body.instructions if h.opcode == "dot"]
    assert dot.shape.dimensions == (2, 16)          # each device: its 2 rows
    assert not set(COLLECTIVES) & {o for ops in ops_of(module).values() for o in ops}


def test_a_loss_summed_in_the_body_all_reduces_there_and_nothing_is_gathered():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((8, 4)).astype(np.float32)

    def f(x):
        def body(i, carry):
            h, total = carry
            h = np.sin(h) + np.float32(1)
            return h, total + np.sum(h)
        return xla.lax.fori_loop(0, 3, body, (x, np.float32(0)))

    g = xla.jit(f, in_shardings=ROWS)
    h, total = x, np.float32(0)
    for _ in range(3):
        h = np.sin(h) + 1
        total = total + h.sum()
    got_h, got_total = g(x)
    np.testing.assert_allclose(got_h, h, rtol=1e-5)
    np.testing.assert_allclose(got_total, total, rtol=1e-5)
    module = g.lower(x).partitioned_module()
    body = loop_body(module)
    assert [o for o in (h.opcode for h in body.instructions) if o in COLLECTIVES] == ["all-reduce"]
    assert "all-gather" not in {o for ops in ops_of(module).values() for o in ops}


def check(text, shapes):
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    module = xla.parse_hlo_module(text)
    expected = evaluate(xla.parse_hlo_module(text), *args)
    partitioned, params, result = partition(module, 4)
    for platform in ("interpreter", "cpu"):
        exe = xla.compile(xla.parse_hlo_module(partitioned.to_text()), platform, num_partitions=4)
        got = unshard_result(exe.execute(shard_arguments(args, params, 4)), result,
                             module.entry.root_instruction.shape)
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6, err_msg=platform)
    return partitioned


LOOP = """HloModule m, num_partitions=4

body {
  p = (s32[], f32[8,8]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  x = f32[8,8] get-tuple-element(p), index=1
  one = s32[] constant(1)
  next = s32[] add(i, one)
%s
  ROOT t = (s32[], f32[8,8]) tuple(next, y)
}

cond {
  cp = (s32[], f32[8,8]) parameter(0)
  ci = s32[] get-tuple-element(cp), index=0
  three = s32[] constant(3)
  ROOT lt = pred[] compare(ci, three), direction=LT
}

ENTRY e {
  a = f32[8,8] parameter(0), sharding={devices=[4,1]<=[4]}
  zero = s32[] constant(0)
  init = (s32[], f32[8,8]) tuple(zero, a)
  w = (s32[], f32[8,8]) while(init), condition=cond, body=body
  ROOT r = f32[8,8] get-tuple-element(w), index=1
}
"""


def test_a_body_whose_result_is_cut_otherwise_is_resharded_at_its_root():
    # y is constrained to columns inside the body; the loop carries rows
    # (its operand's cut, found first): each iteration moves y back to rows
    # with one all-to-all before handing it on, and the loop result is rows.
    partitioned = check(LOOP % ('  s = f32[8,8] sine(x)\n  y = f32[8,8] custom-call(s), '
                                'custom_call_target="Sharding", sharding={devices=[1,4]<=[4]}'),
                        [(8, 8)])
    body = ops_of(partitioned)[loop_body(partitioned).name]
    assert [o for o in body if o in COLLECTIVES] == ["all-to-all", "all-to-all"]
    assert not [o for o in ops_of(partitioned)[partitioned.entry.name] if o in COLLECTIVES]


def test_an_op_the_partitioner_runs_whole_gathers_inside_the_body_only():
    # A dynamic-slice at the loop index is computed whole (after an
    # all-gather in the body); the rest stays cut.
    partitioned = check(LOOP % ('  zero = s32[] constant(0)\n'
                                '  row = f32[1,8] dynamic-slice(x, i, zero), dynamic_slice_sizes={1,8}\n'
                                '  r1 = f32[8] reshape(row)\n'
                                '  rb = f32[8,8] broadcast(r1), dimensions={1}\n'
                                '  y = f32[8,8] add(x, rb)'),
                        [(8, 8)])
    body = ops_of(partitioned)[loop_body(partitioned).name]
    assert "all-gather" in body and "while" in ops_of(partitioned)[partitioned.entry.name]


def test_a_carried_tuple_of_tuples_stays_cut():
    # Nested tuples follow XLA's flattened tuple sharding.
    text = """HloModule m, num_partitions=4

body {
  p = (s32[], (f32[8,4], f32[8,4])) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  pair = (f32[8,4], f32[8,4]) get-tuple-element(p), index=1
  x = f32[8,4] get-tuple-element(pair), index=0
  z = f32[8,4] get-tuple-element(pair), index=1
  s = f32[8,4] add(x, z)
  one = s32[] constant(1)
  next = s32[] add(i, one)
  np = (f32[8,4], f32[8,4]) tuple(s, z)
  ROOT t = (s32[], (f32[8,4], f32[8,4])) tuple(next, np)
}

cond {
  cp = (s32[], (f32[8,4], f32[8,4])) parameter(0)
  ci = s32[] get-tuple-element(cp), index=0
  three = s32[] constant(3)
  ROOT lt = pred[] compare(ci, three), direction=LT
}

ENTRY e {
  a = f32[8,4] parameter(0), sharding={devices=[4,1]<=[4]}
  b = f32[8,4] parameter(1), sharding={devices=[4,1]<=[4]}
  zero = s32[] constant(0)
  ab = (f32[8,4], f32[8,4]) tuple(a, b)
  init = (s32[], (f32[8,4], f32[8,4])) tuple(zero, ab)
  w = (s32[], (f32[8,4], f32[8,4])) while(init), condition=cond, body=body
  wp = (f32[8,4], f32[8,4]) get-tuple-element(w), index=1
  ROOT r = f32[8,4] get-tuple-element(wp), index=0
}
"""
    partitioned = check(text, [(8, 4), (8, 4)])
    assert not {o for ops in ops_of(partitioned).values() for o in ops} & set(COLLECTIVES)


def test_lax_cond_on_a_cut_operand_runs_each_branch_on_the_tiles():
    x = np.random.default_rng(2).standard_normal((8, 4)).astype(np.float32)
    g = xla.jit(lambda x, k: xla.lax.cond(k > 0, lambda v: np.sin(v) * 2, lambda v: v - 1, x),
                in_shardings=(ROWS, WHOLE))
    for k in (0, 1):
        np.testing.assert_allclose(g(x, np.int32(k)), np.sin(x) * 2 if k else x - 1, rtol=1e-6)
    module = g.lower(x, np.int32(1)).partitioned_module()
    (cond,) = [h for h in module.entry.instructions if h.opcode == "conditional"]
    shape = cond.shape.tuple_shapes[0] if cond.shape.is_tuple else cond.shape
    assert shape.dimensions == (2, 4)
    assert not set(COLLECTIVES) & {o for ops in ops_of(module).values() for o in ops}


def test_a_condition_on_a_cut_value_all_reduces_in_the_condition():
    x = np.random.default_rng(3).standard_normal((8, 4)).astype(np.float32)
    g = xla.jit(lambda x: xla.lax.while_loop(lambda v: np.sum(v * v) < 1000,
                                             lambda v: v * np.float32(1.5), x),
                in_shardings=ROWS)
    want = x
    while (want * want).sum() < 1000:
        want = want * np.float32(1.5)
    np.testing.assert_allclose(g(x), want, rtol=1e-5)
    module = g.lower(x).partitioned_module()
    (w,) = [h for h in module.entry.instructions if h.opcode == "while"]
    cond_ops = [h.opcode for h in w.attr("condition").instructions]
    assert [o for o in cond_ops if o in COLLECTIVES] == ["all-reduce"]
    assert not set(COLLECTIVES) & {h.opcode for h in w.attr("body").instructions}


def test_the_gradient_through_a_sharded_loop_matches_the_unsharded_one():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((8, 6)).astype(np.float32)
    w = (rng.standard_normal((6, 6)) * 0.3).astype(np.float32)

    def loss(w, x):
        h = xla.lax.fori_loop(0, 3, lambda i, h: np.tanh(h @ w), x)
        return np.sum(h * h)

    sharded = xla.jit(xla.grad(loss), in_shardings=(WHOLE, ROWS))
    np.testing.assert_allclose(sharded(w, x), xla.jit(xla.grad(loss))(w, x), rtol=1e-4, atol=1e-5)
    module = sharded.lower(w, x).partitioned_module()
    ops = [h.opcode for c in module.computations for h in c.instructions]
    assert ops.count("while") >= 2
    # The residuals the forward loop stacks stay cut by the batch: no
    # gather; w's gradient sums the devices' rows (all-reduces).
    assert "all-gather" not in ops and "all-reduce" in ops
