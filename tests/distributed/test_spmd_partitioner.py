"""SPMD partitioning (xla/service/spmd_partitioner.py): a module annotated
with shardings, partitioned for 4 devices, runs on the interpreter and the
CPU with each device holding its tiles, and the tiles put back together
equal the unpartitioned module's result on the interpreter (the semantics
reference). The collectives it inserts are the expected ones."""
import numpy as np
import pytest

import xla
from xla.errors import UnimplementedError
from xla.hlo.evaluator import evaluate
from xla.hlo.sharding import parse_sharding
from xla.service.spmd_partitioner import partition, shard, unshard

ADD = """add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
"""


def module(body):
    return "HloModule m, num_partitions=4\n" + ADD + "ENTRY e {\n" + body + "\n}\n"


def check(text, shapes, platforms=("interpreter", "cpu")):
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    expected = evaluate(xla.parse_hlo_module(text), *args)
    partitioned, params, result = partition(xla.parse_hlo_module(text), 4)
    for platform in platforms:
        exe = xla.compile(xla.parse_hlo_module(partitioned.to_text()), platform, num_partitions=4)
        per_device = [[shard(a, s, 4)[d] for a, s in zip(args, params)] for d in range(4)]
        got = unshard(exe.execute(per_device), result, np.shape(expected))
        np.testing.assert_allclose(got, expected, rtol=2e-5, atol=2e-5, err_msg=platform)
    return [i.opcode for i in partitioned.entry.instructions]


def test_sharding_forms_parse_and_print():
    for text, tiles in (("{devices=[2,2]<=[4]}", (2, 2)), ("{devices=[4,1]0,2,1,3}", (4, 1)),
                        ("{devices=[2,1,2]<=[4] last_tile_dim_replicate}", (2, 1)),
                        ("{devices=[2,2]<=[2,2]T(1,0)}", (2, 2))):
        s = parse_sharding(text)
        assert s.tiles == tiles and parse_sharding(s.to_text()) == s
    assert parse_sharding("{devices=[2,2]<=[2,2]T(1,0)}").devices.tolist() == [[0, 2], [1, 3]]
    assert parse_sharding("{replicated}").is_replicated
    assert parse_sharding("{maximal device=1}").device == 1
    t = parse_sharding("{{replicated}, {devices=[4]<=[4]}}")
    assert t.kind == "tuple" and t.elements[1].tiles == (4,)


def test_shardings_from_tile_coordinates():
    from xla.hlo.sharding import from_tile_coords
    assert from_tile_coords((2, 2), [(0, 0), (0, 1), (1, 0), (1, 1)]).to_text() == \
        "{devices=[2,2]0,1,2,3}"
    assert from_tile_coords((2,), [(0,), (1,), (0,), (1,)]).to_text() == \
        "{devices=[2,2]0,2,1,3 last_tile_dim_replicate}"
    assert from_tile_coords((1,), [(0,)] * 4).is_replicated
    assert from_tile_coords((2, 2), [(0, 0), (1, 1), (0, 0), (1, 1)]) is None   # a diagonal


def test_tensor_parallel_dot_is_a_local_dot_and_an_all_reduce():
    ops = check(module("""  x = f32[8,16] parameter(0), sharding={devices=[1,4]<=[4]}
  w = f32[16,6] parameter(1), sharding={devices=[4,1]<=[4]}
  ROOT d = f32[8,6] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}"""),
                [(8, 16), (16, 6)])
    assert ops.count("all-reduce") == 1 and "all-gather" not in ops


def test_data_parallel_layer_needs_no_collective():
    ops = check(module("""  x = f32[8,16] parameter(0), sharding={devices=[4,1]<=[4]}
  w = f32[16,6] parameter(1), sharding={replicated}
  d = f32[8,6] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  t = f32[8,6] tanh(d)
  b = f32[6] parameter(2)
  bb = f32[8,6] broadcast(b), dimensions={1}
  ROOT s = f32[8,6] add(t, bb), sharding={devices=[4,1]<=[4]}"""), [(8, 16), (16, 6), (6,)])
    assert not {"all-reduce", "all-gather"} & set(ops)


def test_reduce_over_a_cut_dimension_all_reduces():
    ops = check(module("""  x = f32[8,12] parameter(0), sharding={devices=[2,2]<=[4]}
  t = f32[12,8] transpose(x), dimensions={1,0}
  z = f32[] constant(0)
  ROOT r = f32[12] reduce(t, z), dimensions={1}, to_apply=add"""), [(8, 12)])
    assert "all-reduce" in ops


def test_other_ops_gather_and_run_whole():
    # The reshape keeps the rows' tiles (8 rows of 12 -> 12 rows of 8); the
    # slice along the cut dimension needs the whole array.
    ops = check(module("""  x = f32[8,12] parameter(0), sharding={devices=[4,1]<=[4]}
  r = f32[12,8] reshape(x)
  ROOT s = f32[6,8] slice(r), slice={[2:8], [0:8]}"""), [(8, 12)])
    assert ops.count("all-gather") == 1


def test_uneven_tiles_are_unimplemented():
    with pytest.raises(UnimplementedError, match="does not split evenly into 4 tiles"):
        partition(xla.parse_hlo_module(module(
            "  ROOT x = f32[6] parameter(0), sharding={devices=[4]<=[4]}")), 4)


def collectives(ops):
    return [o for o in ops if o in ("all-gather", "all-reduce", "all-to-all", "collective-permute",
                                    "reduce-scatter")]


# ----- reshape: the tiles move with the dimensions whose tile boundaries survive

def test_reshape_keeps_the_tiling_of_a_major_dimension():
    ops = check(module("""  x = f32[8,6] parameter(0), sharding={devices=[4,1]<=[4]}
  a = f32[8,2,3] reshape(x)
  t = f32[8,2,3] tanh(a)
  b = f32[2,4,6] reshape(t)
  c = f32[2,4,1,6] reshape(b)
  ROOT d = f32[48] reshape(c)"""), [(8, 6)])
    assert collectives(ops) == [] and ops.count("reshape") == 4


def test_reshape_keeps_a_2d_tiling_when_a_whole_dimension_splits():
    ops = check(module("""  x = f32[4,6,8] parameter(0), sharding={devices=[2,1,2]<=[4]}
  a = f32[1,4,6,2,4] reshape(x)
  ROOT e = f32[1,4,6,2,4] exponential(a)"""), [(4, 6, 8)])
    assert collectives(ops) == []


def test_reshape_across_tile_boundaries_gathers():
    ops = check(module("""  x = f32[8,6] parameter(0), sharding={devices=[1,2,2]<=[4] last_tile_dim_replicate}
  ROOT r = f32[48] reshape(x)"""), [(8, 6)])
    assert "all-gather" in ops


def test_reshape_tiles_rule():
    from xla.service.spmd_shape_ops import reshape_tiles
    assert reshape_tiles((8, 6), (4, 1), (8, 2, 3)) == [4, 1, 1]
    assert reshape_tiles((8, 6), (4, 1), (2, 4, 6)) == [2, 2, 1]
    assert reshape_tiles((8, 6), (4, 1), (48,)) == [4]
    assert reshape_tiles((8, 1, 6), (4, 1, 1), (1, 8, 6, 1)) == [1, 4, 1, 1]
    assert reshape_tiles((4, 6), (4, 3), (24,)) == [12]
    assert reshape_tiles((8, 6), (2, 3), (48,)) is None
    assert reshape_tiles((8, 6), (4, 1), (6, 8)) is None    # 8 rows / 4 != 6 rows / 4
    assert reshape_tiles((12, 2), (4, 1), (6, 4)) is None


# ----- dot: contractions whose cuts agree run locally

def test_batch_parallel_dot_needs_no_collective():
    ops = check(module("""  x = f32[4,8,16] parameter(0), sharding={devices=[4,1,1]<=[4]}
  y = f32[4,16,6] parameter(1), sharding={devices=[4,1,1]<=[4]}
  ROOT d = f32[4,8,6] dot(x, y), lhs_batch_dims={0}, rhs_batch_dims={0},
    lhs_contracting_dims={2}, rhs_contracting_dims={1}"""), [(4, 8, 16), (4, 16, 6)])
    assert collectives(ops) == []


def test_batch_cut_lhs_with_a_replicated_rhs_cuts_the_rhs_locally():
    ops = check(module("""  x = f32[6,4,16] parameter(0), sharding={devices=[1,4,1]<=[4]}
  y = f32[16,4,6] parameter(1), sharding={replicated}
  ROOT d = f32[4,6,6] dot(x, y), lhs_batch_dims={1}, rhs_batch_dims={1},
    lhs_contracting_dims={2}, rhs_contracting_dims={0}"""), [(6, 4, 16), (16, 4, 6)])
    assert collectives(ops) == [] and "dynamic-slice" in ops


def test_rhs_free_dimension_cut_with_a_replicated_lhs():
    ops = check(module("""  x = f32[8,16] parameter(0), sharding={replicated}
  w = f32[16,12] parameter(1), sharding={devices=[1,4]<=[4]}
  d = f32[8,12] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT r = f32[8,12] maximum(d, d)"""), [(8, 16), (16, 12)])
    assert collectives(ops) == []


def test_lhs_and_rhs_free_dimensions_cut_over_a_2d_mesh():
    # Devices d = 2a + b: x's rows cut along a, w's columns along b.
    ops = check(module("""  x = f32[8,16] parameter(0), sharding={devices=[2,1,2]<=[4] last_tile_dim_replicate}
  w = f32[16,12] parameter(1), sharding={devices=[1,2,2]<=[2,2]T(1,0) last_tile_dim_replicate}
  ROOT d = f32[8,12] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}"""),
                [(8, 16), (16, 12)])
    assert collectives(ops) == []
    _, _, result = partition(xla.parse_hlo_module(module("""  x = f32[8,16] parameter(0), sharding={devices=[2,1,2]<=[4] last_tile_dim_replicate}
  w = f32[16,12] parameter(1), sharding={devices=[1,2,2]<=[2,2]T(1,0) last_tile_dim_replicate}
  ROOT d = f32[8,12] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}""")), 4)
    assert result.to_text() == "{devices=[2,2]0,1,2,3}"


def test_rows_and_contracting_cut_all_reduce_within_rows():
    # x cut (data, model), w's rows cut along model: partial sums over model.
    text = module("""  x = f32[8,16] parameter(0), sharding={devices=[2,2]<=[4]}
  w = f32[16,6] parameter(1), sharding={devices=[2,1,2]<=[2,2]T(1,0) last_tile_dim_replicate}
  ROOT d = f32[8,6] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}""")
    ops = check(text, [(8, 16), (16, 6)])
    assert collectives(ops) == ["all-reduce"]
    partitioned, _, _ = partition(xla.parse_hlo_module(text), 4)
    assert "replica_groups={{0,1},{2,3}}" in partitioned.to_text()


def test_free_dimensions_cut_by_the_same_devices_gather_one_operand():
    ops = check(module("""  x = f32[8,16] parameter(0), sharding={devices=[4,1]<=[4]}
  w = f32[16,12] parameter(1), sharding={devices=[1,4]<=[4]}
  ROOT d = f32[8,12] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}"""),
                [(8, 16), (16, 12)])
    assert collectives(ops) == ["all-gather"]


# ----- convolution: the input's batch and the kernel's features, by dim_labels

CONV = "window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f"


def test_batch_cut_convolution_needs_no_collective():
    ops = check(module(f"""  x = f32[8,5,5,3] parameter(0), sharding={{devices=[4,1,1,1]<=[4]}}
  k = f32[3,3,3,4] parameter(1), sharding={{replicated}}
  ROOT c = f32[8,5,5,4] convolution(x, k), {CONV}"""), [(8, 5, 5, 3), (3, 3, 3, 4)])
    assert collectives(ops) == []


def test_batch_cut_convolution_finds_the_dimensions_by_their_labels():
    ops = check(module("""  x = f32[3,5,8,5] parameter(0), sharding={devices=[1,1,4,1]<=[4]}
  k = f32[4,3,3,3] parameter(1)
  c = f32[5,4,5,8] convolution(x, k), window={size=3x3 pad=1_1x1_1}, dim_labels=f0b1_oi01->0f1b
  ROOT t = f32[5,4,5,8] tanh(c)"""), [(3, 5, 8, 5), (4, 3, 3, 3)])
    assert collectives(ops) == []


def test_grouped_convolution_cut_along_the_batch():
    ops = check(module(f"""  x = f32[8,5,5,6] parameter(0), sharding={{devices=[4,1,1,1]<=[4]}}
  k = f32[3,3,2,6] parameter(1)
  ROOT c = f32[8,5,5,6] convolution(x, k), {CONV}, feature_group_count=3"""),
                [(8, 5, 5, 6), (3, 3, 2, 6)])
    assert collectives(ops) == []


def test_kernel_output_features_cut_and_batch_over_a_2d_mesh():
    ops = check(module(f"""  x = f32[8,5,5,3] parameter(0), sharding={{devices=[2,1,1,1,2]<=[4] last_tile_dim_replicate}}
  k = f32[3,3,3,4] parameter(1), sharding={{devices=[1,1,1,2,2]<=[2,2]T(1,0) last_tile_dim_replicate}}
  ROOT c = f32[8,5,5,4] convolution(x, k), {CONV}"""), [(8, 5, 5, 3), (3, 3, 3, 4)])
    assert collectives(ops) == []


def test_input_feature_cut_convolution_all_reduces():
    ops = check(module(f"""  x = f32[8,5,5,4] parameter(0), sharding={{devices=[1,1,1,4]<=[4]}}
  k = f32[3,3,4,2] parameter(1), sharding={{devices=[1,1,4,1]<=[4]}}
  ROOT c = f32[8,5,5,2] convolution(x, k), {CONV}"""), [(8, 5, 5, 4), (3, 3, 4, 2)])
    assert collectives(ops) == ["all-reduce"]


def test_spatially_cut_convolution_gathers():
    ops = check(module(f"""  x = f32[8,4,5,3] parameter(0), sharding={{devices=[1,4,1,1]<=[4]}}
  k = f32[3,3,3,4] parameter(1)
  ROOT c = f32[8,4,5,4] convolution(x, k), {CONV}"""), [(8, 4, 5, 3), (3, 3, 3, 4)])
    assert "all-gather" in ops


# ----- slice, pad, concatenate along whole dimensions keep the tiling

def test_slice_pad_concatenate_along_whole_dimensions_keep_the_tiling():
    ops = check(module("""  x = f32[8,12] parameter(0), sharding={devices=[4,1]<=[4]}
  s = f32[8,4] slice(x), slice={[0:8], [2:10:2]}
  z = f32[] constant(0.5)
  p = f32[8,10] pad(s, z), padding=0_0x1_2_1
  y = f32[8,3] parameter(1), sharding={replicated}
  ROOT c = f32[8,25] concatenate(p, y, x), dimensions={1}"""), [(8, 12), (8, 3)])
    assert collectives(ops) == []


def test_2d_tiling_survives_a_slice_of_a_whole_dimension():
    ops = check(module("""  x = f32[4,10,8] parameter(0), sharding={devices=[2,1,2]<=[4]}
  s = f32[4,3,8] slice(x), slice={[0:4], [7:10], [0:8]}
  ROOT e = f32[4,3,8] negate(s)"""), [(4, 10, 8)])
    assert collectives(ops) == []


def test_slice_pad_concatenate_along_cut_dimensions_gather():
    for body in ("""  x = f32[8,12] parameter(0), sharding={devices=[4,1]<=[4]}
  ROOT s = f32[4,12] slice(x), slice={[2:6], [0:12]}""",
                 """  x = f32[8,12] parameter(0), sharding={devices=[4,1]<=[4]}
  z = f32[] constant(0)
  ROOT p = f32[10,12] pad(x, z), padding=1_1x0_0""",
                 """  x = f32[8,12] parameter(0), sharding={devices=[4,1]<=[4]}
  ROOT c = f32[16,12] concatenate(x, x), dimensions={0}"""):
        assert "all-gather" in check(module(body), [(8, 12)], platforms=("interpreter",))


def test_dynamic_slice_and_gather_stay_gathered():
    ops = check(module("""  x = f32[8,12] parameter(0), sharding={devices=[1,4]<=[4]}
  i = s32[] constant(1)
  ROOT d = f32[8,4] dynamic-slice(x, i, i), dynamic_slice_sizes={8,4}"""), [(8, 12)],
                platforms=("interpreter",))
    assert "all-gather" in ops


# ----- resharding by all-to-all ----------------------------------------------------

def test_a_cut_moved_to_another_dimension_is_one_all_to_all_within_groups():
    # Dimension 0 keeps its 2 tiles; dimension 1's cut moves to dimension 2:
    # devices sharing a dimension-0 tile ({0,1}, {2,3}) swap blocks.
    text = module("""  x = f32[4,6,8] parameter(0), sharding={devices=[2,2,1]<=[4]}
  ROOT y = f32[4,6,8] sine(x), sharding={devices=[2,1,2]<=[4]}""")
    ops = check(text, [(4, 6, 8)])
    assert collectives(ops) == ["all-to-all"]
    partitioned, _, _ = partition(xla.parse_hlo_module(text), 4)
    (a2a,) = [h for h in partitioned.entry.instructions if h.opcode == "all-to-all"]
    assert a2a.attr("replica_groups").text == "{{0,1},{2,3}}"


def test_a_cut_moved_to_other_devices_is_gathered():
    # Device 0 holds rows 0-1 but wants columns 6-7: not an exchange within
    # one group in order, so the value is gathered and cut.
    ops = check(module("""  x = f32[8,8] parameter(0), sharding={devices=[4,1]<=[4]}
  ROOT y = f32[8,8] sine(x), sharding={devices=[1,4]3,2,1,0}"""), [(8, 8)])
    assert collectives(ops) == ["all-gather"]


# ----- dynamic-slice and dynamic-update-slice ----------------------------------------

def test_a_dynamic_slice_taking_the_cut_dimension_whole_runs_on_the_tiles():
    # Rows cut 4 ways; the slice takes all 8 rows (its row start, 3, is
    # clamped to 0 by XLA) and columns 2..5 at a start read at run time.
    ops = check(module("""  x = f32[8,12] parameter(0), sharding={devices=[4,1]<=[4]}
  i = s32[] constant(3)
  j = s32[] constant(2)
  ROOT y = f32[8,4] dynamic-slice(x, i, j), dynamic_slice_sizes={8,4}"""), [(8, 12)])
    assert collectives(ops) == []
    ops = check(module("""  x = f32[8,12] parameter(0), sharding={devices=[4,1]<=[4]}
  i = s32[] constant(3)
  j = s32[] constant(2)
  ROOT y = f32[2,12] dynamic-slice(x, i, j), dynamic_slice_sizes={2,12}"""), [(8, 12)])
    assert collectives(ops) == ["all-gather"]      # across the cut rows: whole


def test_a_dynamic_update_of_whole_cut_dimensions_runs_on_the_tiles():
    # A stack of 5 steps of a batch of 8 rows cut 4 ways: step 2 written.
    ops = check(module("""  s = f32[5,8,3] parameter(0), sharding={devices=[1,4,1]<=[4]}
  u = f32[1,8,3] parameter(1)
  two = s32[] constant(2)
  zero = s32[] constant(0)
  ROOT y = f32[5,8,3] dynamic-update-slice(s, u, two, zero, zero)"""), [(5, 8, 3), (1, 8, 3)])
    assert collectives(ops) == [] and ops.count("dynamic-update-slice") == 1
