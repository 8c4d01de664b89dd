"""ShardingPropagation (xla/service/sharding_propagation.py): the module
before, the pass, the shardings printed after. Expected shardings are
derived by hand from the ops' semantics (which tile of the operand each
device needs to compute its tile of the result). End to end, the modules
partitioned for 4 devices (propagation first) run on the interpreter and
the CPU and, put back together, equal the unpartitioned module's result."""
import pathlib

import numpy as np
import pytest

import xla
from xla.hlo.evaluator import evaluate
from xla.service.sharding_propagation import ShardingPropagation
from xla.service.spmd_partitioner import partition, shard, unshard

ADD = """add {
  lhs = f32[] parameter(0)
  rhs = f32[] parameter(1)
  ROOT sum = f32[] add(lhs, rhs)
}
"""


def module(body, header=""):
    return "HloModule m, num_partitions=4" + header + "\n" + ADD + "ENTRY e {\n" + body + "\n}\n"


def propagate(text, allow_parameters=None):
    m = xla.parse_hlo_module(text)
    changed = ShardingPropagation(allow_parameters).run(m)
    return m, changed


def shardings(m):
    """Instruction name -> the printed sharding (None: none)."""
    out = {}
    for h in m.entry.instructions:
        s = h.attrs.get("sharding")
        out[h.name] = None if s is None else str(getattr(s, "text", s))
    return out


def collectives(m):
    return [h.opcode for h in m.entry.instructions
            if h.opcode in ("all-gather", "all-reduce", "all-to-all", "collective-permute")]


def run_partitioned(text, shapes, allow_parameters=None, platforms=("interpreter", "cpu")):
    """The partitioned module; checks its results against the interpreter's
    on the unpartitioned module."""
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    expected = evaluate(xla.parse_hlo_module(text), *args)
    partitioned, params, result = partition(xla.parse_hlo_module(text), 4,
                                            allow_spmd_sharding_propagation_to_parameters=
                                            allow_parameters)
    for platform in platforms:
        exe = xla.compile(xla.parse_hlo_module(partitioned.to_text()), platform, num_partitions=4)
        per_device = [[shard(a, s, 4)[d] for a, s in zip(args, params)] for d in range(4)]
        outs = exe.execute(per_device)
        if isinstance(expected, tuple):
            parts = result.elements
            for k, e in enumerate(expected):
                got = unshard([o[k] for o in outs], parts[k], np.shape(e))
                np.testing.assert_allclose(got, e, rtol=2e-5, atol=2e-5, err_msg=platform)
        else:
            got = unshard(outs, result, np.shape(expected))
            np.testing.assert_allclose(got, expected, rtol=2e-5, atol=2e-5, err_msg=platform)
    return partitioned, params, result


ROWS = "{devices=[4,1]0,1,2,3}"


# ----- backward through elementwise, transpose, broadcast, reshape, reduce -----------

def test_a_sharding_annotation_propagates_to_its_producers():
    text = module("""  x = f32[8,6] parameter(0)
  a = f32[8,6] exponential(x)
  b = f32[8,6] negate(a)
  s = f32[8,6] custom-call(b), custom_call_target="Sharding", sharding={devices=[4,1]<=[4]}
  ROOT r = f32[8,6] tanh(s)""")
    m, changed = propagate(text)
    assert changed
    # Before: only s. After: its producers backward and its user forward;
    # the parameter keeps none (propagation to parameters is off).
    assert shardings(m) == {"x": None, "a": ROWS, "b": ROWS,
                            "s": "{devices=[4,1]<=[4]}", "r": ROWS}
    assert 'b = f32[8,6] negate(a), sharding={devices=[4,1]0,1,2,3}' in m.to_text()


def test_backward_through_transpose_broadcast_and_reshape():
    text = module("""  v = f32[6] parameter(0)
  c = f32[6,8] broadcast(v), dimensions={0}
  t = f32[8,6] transpose(c), dimensions={1,0}
  y = f32[8,2,3] reshape(t)
  ROOT s = f32[8,2,3] custom-call(y), custom_call_target="Sharding", sharding={devices=[2,2,1]<=[4]}""")
    m, _ = propagate(text, allow_parameters=True)
    got = shardings(m)
    # y [8,2,3] cut 2 x 2 x 1 is the reshape of t [8,6] cut 2 x 2 (6 = 2*3
    # columns in 2 contiguous chunks of 3); device d holds t's tile
    # (d // 2, d % 2), so c = t's transpose holds (d % 2, d // 2).
    assert got["y"] == "{devices=[2,2,1]0,1,2,3}"
    assert got["t"] == "{devices=[2,2]0,1,2,3}"
    assert got["c"] == "{devices=[2,2]0,2,1,3}"
    # v is c's dimension 0, cut by d % 2, replicated over d // 2.
    assert got["v"] == "{devices=[2,2]0,2,1,3 last_tile_dim_replicate}"
    partitioned, _, _ = run_partitioned(text, [(6,)], allow_parameters=True)
    assert collectives(partitioned) == []


def test_a_reshape_whose_tiles_are_not_contiguous_gets_no_sharding_from_it():
    # [8,3,2] cut along its last dimension holds columns {0,2,4} | {1,3,5}
    # of the [8,6] operand: no tiling of the operand reshapes into it.
    text = module("""  t = f32[8,6] parameter(0)
  y = f32[8,3,2] reshape(t)
  ROOT s = f32[8,3,2] custom-call(y), custom_call_target="Sharding", sharding={devices=[2,1,2]<=[4]}""")
    m, _ = propagate(text, allow_parameters=True)
    assert shardings(m)["t"] is None
    run_partitioned(text, [(8, 6)], allow_parameters=True)


def test_reduce_operand_takes_the_kept_dimensions_cut():
    text = module("""  x = f32[8,12] parameter(0)
  e = f32[8,12] exponential(x)
  z = f32[] constant(0)
  r = f32[12] reduce(e, z), dimensions={0}, to_apply=add
  ROOT s = f32[12] custom-call(r), custom_call_target="Sharding", sharding={devices=[4]<=[4]}""")
    m, _ = propagate(text, allow_parameters=True)
    got = shardings(m)
    assert got["r"] == "{devices=[4]0,1,2,3}" and got["e"] == "{devices=[1,4]0,1,2,3}"
    assert got["x"] == "{devices=[1,4]0,1,2,3}" and got["z"] is None   # scalars get none
    partitioned, params, _ = run_partitioned(text, [(8, 12)], allow_parameters=True)
    assert collectives(partitioned) == [] and params[0].to_text() == "{devices=[1,4]0,1,2,3}"


# ----- dot: operands from the result and the other operand ---------------------------

def test_dot_operand_from_the_result_and_the_other_operands_contracting_cut():
    # w's rows (contracting) are cut along the model axis (devices 0|1, 2|3
    # differ), the result's rows along the data axis: x must be cut 2 x 2.
    text = module("""  x = f32[8,16] parameter(0)
  w = f32[16,6] parameter(1), sharding={devices=[2,1,2]<=[2,2]T(1,0) last_tile_dim_replicate}
  d = f32[8,6] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT s = f32[8,6] custom-call(d), custom_call_target="Sharding", sharding={devices=[2,1,2]<=[4] last_tile_dim_replicate}""")
    m, _ = propagate(text, allow_parameters=True)
    got = shardings(m)
    assert got["x"] == "{devices=[2,2]0,1,2,3}"
    assert got["d"] == "{devices=[2,1,2]0,1,2,3 last_tile_dim_replicate}"
    partitioned, _, _ = run_partitioned(text, [(8, 16), (16, 6)], allow_parameters=True)
    assert collectives(partitioned) == ["all-reduce"]
    assert "replica_groups={{0,1},{2,3}}" in partitioned.to_text()


def test_a_sharded_result_makes_a_data_parallel_mlp_need_no_collective():
    text = module("""  x = f32[8,16] parameter(0)
  w1 = f32[16,12] parameter(1), sharding={replicated}
  h = f32[8,12] dot(x, w1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  t = f32[8,12] tanh(h)
  w2 = f32[12,4] parameter(2), sharding={replicated}
  ROOT y = f32[8,4] dot(t, w2), lhs_contracting_dims={1}, rhs_contracting_dims={0}, sharding={devices=[4,1]<=[4]}""")
    m, _ = propagate(text, allow_parameters=True)
    assert shardings(m)["x"] == ROWS and shardings(m)["h"] == ROWS
    partitioned, params, result = run_partitioned(text, [(8, 16), (16, 12), (12, 4)],
                                                  allow_parameters=True)
    assert collectives(partitioned) == [] and "dynamic-slice" not in \
        [h.opcode for h in partitioned.entry.instructions]
    assert [p.to_text() for p in params] == [ROWS, "{replicated}", "{replicated}"]
    # Without propagation to the parameter, x comes whole and each device
    # cuts its rows locally: still no collective.
    partitioned, params, _ = run_partitioned(text, [(8, 16), (16, 12), (12, 4)])
    assert collectives(partitioned) == [] and params[0].is_replicated


def test_tuple_result_sharding_propagates_element_by_element():
    text = module("""  x = f32[8,6] parameter(0)
  y = f32[6,8] parameter(1)
  a = f32[8,6] sine(x)
  b = f32[6,8] cosine(y)
  ROOT t = (f32[8,6], f32[6,8]) tuple(a, b), sharding={{devices=[4,1]<=[4]}, {devices=[1,4]<=[4]}}""")
    m, _ = propagate(text, allow_parameters=True)
    got = shardings(m)
    assert got["x"] == got["a"] == ROWS and got["y"] == got["b"] == "{devices=[1,4]0,1,2,3}"
    partitioned, _, _ = run_partitioned(text, [(8, 6), (6, 8)], allow_parameters=True)
    assert collectives(partitioned) == []


# ----- fixed point and priorities --------------------------------------------------

def test_forward_and_backward_iterate_to_a_fixed_point():
    # b learns its sharding only after x has learnt a's, backward, in the
    # first round: forward in the second round.
    text = module("""  x = f32[8,6] parameter(0)
  a = f32[8,6] exponential(x)
  b = f32[8,6] negate(x)
  s = f32[8,6] custom-call(a), custom_call_target="Sharding", sharding={devices=[4,1]<=[4]}
  ROOT t = (f32[8,6], f32[8,6]) tuple(s, b)""")
    m, _ = propagate(text, allow_parameters=True)
    assert shardings(m)["b"] == ROWS and shardings(m)["x"] == ROWS
    m2 = xla.parse_hlo_module(m.to_text())
    assert ShardingPropagation(True).run(m2) is False     # idempotent


def test_explicit_shardings_are_never_overwritten():
    text = module("""  x = f32[8,8] parameter(0), sharding={replicated}
  a = f32[8,8] exponential(x), sharding={devices=[1,4]<=[4]}
  ROOT s = f32[8,8] custom-call(a), custom_call_target="Sharding", sharding={devices=[4,1]<=[4]}""")
    m, changed = propagate(text, allow_parameters=True)
    assert not changed
    assert shardings(m) == {"x": "{replicated}", "a": "{devices=[1,4]<=[4]}",
                            "s": "{devices=[4,1]<=[4]}"}
    run_partitioned(text, [(8, 8)], allow_parameters=True)


def test_the_more_specific_candidate_wins_and_ties_go_to_the_first():
    # Two users ask for a's sharding: 2 tiles (with replication) and 4 tiles.
    text = module("""  x = f32[8,8] parameter(0)
  a = f32[8,8] exponential(x)
  s1 = f32[8,8] custom-call(a), custom_call_target="Sharding", sharding={devices=[2,1,2]<=[4] last_tile_dim_replicate}
  s2 = f32[8,8] custom-call(a), custom_call_target="Sharding", sharding={devices=[1,4]<=[4]}
  ROOT t = (f32[8,8], f32[8,8]) tuple(s1, s2)""")
    m, _ = propagate(text)
    assert shardings(m)["a"] == "{devices=[1,4]0,1,2,3}"
    # Equal specificity: the first user's.
    tie = text.replace("{devices=[2,1,2]<=[4] last_tile_dim_replicate}", "{devices=[4,1]<=[4]}")
    m, _ = propagate(tie)
    assert shardings(m)["a"] == ROWS
    # Forward before backward: an operand cut 4 ways beats an equally
    # specific user.
    fwd = module("""  x = f32[8,8] parameter(0), sharding={devices=[1,4]<=[4]}
  a = f32[8,8] exponential(x)
  ROOT s = f32[8,8] custom-call(a), custom_call_target="Sharding", sharding={devices=[4,1]<=[4]}""")
    m, _ = propagate(fwd)
    assert shardings(m)["a"] == "{devices=[1,4]0,1,2,3}"
    run_partitioned(fwd, [(8, 8)])


@pytest.mark.parametrize("header, expected", [
    ("", [None, None]),
    (", allow_spmd_sharding_propagation_to_parameters={true}", [ROWS, ROWS]),
    (", allow_spmd_sharding_propagation_to_parameters={false,true}", [None, ROWS])])
def test_parameters_get_shardings_only_where_allowed(header, expected):
    text = module("""  x = f32[8,6] parameter(0)
  y = f32[8,6] parameter(1)
  a = f32[8,6] add(x, y)
  ROOT s = f32[8,6] custom-call(a), custom_call_target="Sharding", sharding={devices=[4,1]<=[4]}""",
                  header)
    m, _ = propagate(text)
    assert [shardings(m)["x"], shardings(m)["y"]] == expected
    _, params, _ = run_partitioned(text, [(8, 6), (8, 6)])
    assert [None if p.is_replicated else p.to_text() for p in params] == expected


def test_uneven_tiles_are_not_propagated():
    # 6 rows do not split in 4: the slice's operand gets no sharding.
    text = module("""  x = f32[6,8] parameter(0)
  c = f32[6,8] cosine(x)
  sl = f32[4,8] slice(c), slice={[0:4], [0:8]}
  ROOT s = f32[4,8] custom-call(sl), custom_call_target="Sharding", sharding={devices=[4,1]<=[4]}""")
    m, _ = propagate(text, allow_parameters=True)
    assert shardings(m)["c"] is None or shardings(m)["c"] == "{replicated}"
    run_partitioned(text, [(6, 8)], allow_parameters=True)


def test_shardy_modules_with_manual_regions_are_left_alone():
    # pmap lowers to a manual region (xla.sdy.GlobalToLocalShape, ...):
    # its per-device code must not be resharded.
    fixtures = pathlib.Path(__file__).resolve().parents[1] / "distributed" / "fixtures"
    m = xla.parse_hlo_module((fixtures / "pmap_mlp_step.sdy.hlo").read_text())
    before = m.to_text()
    assert ShardingPropagation(True, 4).run(m) is False and m.to_text() == before


def test_shardy_form_propagates_from_its_sdy_shardings():
    # JAX's default lowering of a sharded jit: the cuts are in xla.sdy.sharding
    # attributes (a parameter's, a result sharding's), no classic one.
    text = ("HloModule m, num_partitions=4, frontend_attributes={xla.sdy.meshes="
            "{mesh = #sdy.mesh<[\"x\"=4]>}}\n" + ADD + """ENTRY e {
  x = f32[8,8] parameter(0), frontend_attributes={xla.sdy.sharding="#sdy.sharding<@mesh, [{\\"x\\"}, {}]>"}
  a = f32[8,8] exponential(x)
  y = f32[8,8] parameter(1)
  b = f32[8,8] negate(y)
  ROOT s = f32[8,8] custom-call(b), custom_call_target="xla.sdy.FuncResultSharding", frontend_attributes={xla.sdy.sharding="#sdy.sharding_per_value<[<@mesh, [{}, {\\"x\\"}]>]>"}
}
""")
    m, changed = propagate(text)
    got = shardings(m)
    assert changed and got["a"] == ROWS and got["b"] == "{devices=[1,4]0,1,2,3}"
    assert got["x"] is None and got["y"] is None      # parameters: as written / not allowed


def test_a_broadcast_given_a_sharding_computes_only_its_tiles():
    # The bias's broadcast learns the rows' sharding backward from the add;
    # the partitioner then broadcasts straight into each device's [2,6]
    # tile (no whole [8,6] broadcast, no slice of it).
    text = module("""  x = f32[8,6] parameter(0), sharding={devices=[4,1]<=[4]}
  b = f32[6] parameter(1)
  bb = f32[8,6] broadcast(b), dimensions={1}
  ROOT s = f32[8,6] add(x, bb)""")
    m, _ = propagate(text)
    assert shardings(m)["bb"] == ROWS and shardings(m)["b"] is None
    partitioned, _, _ = run_partitioned(text, [(8, 6), (6,)])
    ops = {h.opcode: h for h in partitioned.entry.instructions}
    assert ops["broadcast"].shape.dimensions == (2, 6) and "dynamic-slice" not in ops
    # Cut along the broadcast operand's dimension: each device broadcasts
    # its slice of b.
    text = text.replace("{devices=[4,1]<=[4]}", "{devices=[1,2,2]<=[4] last_tile_dim_replicate}")
    partitioned, _, _ = run_partitioned(text, [(8, 6), (6,)])
    ops = {h.opcode: h for h in partitioned.entry.instructions}
    assert ops["broadcast"].shape.dimensions == (8, 3) and collectives(partitioned) == []


def test_ops_given_a_sharding_cut_their_whole_operands_first():
    # Only the result is annotated and the parameters are passed whole:
    # each device cuts its rows of x (a local dynamic-slice) and computes
    # the dot, the reduce and the transpose on tiles, never whole.
    text = module("""  x = f32[8,16] parameter(0)
  w = f32[16,4] parameter(1)
  d = f32[8,4] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  z = f32[] constant(0)
  r = f32[8] reduce(x, z), dimensions={1}, to_apply=add
  rb = f32[8,4] broadcast(r), dimensions={0}
  a = f32[8,4] add(d, rb)
  ROOT t = f32[4,8] transpose(a), dimensions={1,0}, sharding={devices=[1,4]<=[4]}""")
    partitioned, params, _ = run_partitioned(text, [(8, 16), (16, 4)])
    assert all(p.is_replicated for p in params) and collectives(partitioned) == []
    shapes = {h.opcode: h.shape.dimensions for h in partitioned.entry.instructions}
    assert shapes["dot"] == (2, 4) and shapes["reduce"] == (2,) and shapes["transpose"] == (4, 2)


def test_a_parameter_option_of_the_wrong_length_is_an_error():
    from xla.errors import InvalidArgumentError
    text = module("""  x = f32[8,6] parameter(0)
  ROOT s = f32[8,6] custom-call(x), custom_call_target="Sharding", sharding={devices=[4,1]<=[4]}""")
    with pytest.raises(InvalidArgumentError, match="2 values for 1 parameters"):
        propagate(text, allow_parameters=[True, False])


def test_convolution_kernel_takes_the_output_feature_cut():
    text = module("""  x = f32[8,5,5,3] parameter(0)
  k = f32[3,3,3,4] parameter(1)
  c = f32[8,5,5,4] convolution(x, k), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
  ROOT s = f32[8,5,5,4] custom-call(c), custom_call_target="Sharding", sharding={devices=[1,1,1,4]<=[4]}""")
    m, _ = propagate(text, allow_parameters=True)
    # The kernel's output features (dimension 3, "o") are the result's; the
    # input is needed whole by every device.
    assert shardings(m)["k"] == "{devices=[1,1,1,4]0,1,2,3}" and shardings(m)["x"] == "{replicated}"
    partitioned, _, _ = run_partitioned(text, [(8, 5, 5, 3), (3, 3, 3, 4)], allow_parameters=True)
    assert collectives(partitioned) == []
