"""Shardy's form of sharding (xla/hlo/sdy.py) read into HloShardings, and
JAX's global modules in that form (tests/distributed/fixtures/*.sdy.hlo:
pmap and shard_map as JAX hands them to XLA) partitioned and run on four
devices, matching JAX's per-device results."""
import json
import pathlib
import sys

import numpy as np
import pytest

import xla
from xla.errors import InvalidArgumentError, UnimplementedError
from xla.hlo import sdy
from xla.hlo.sharding import parse_sharding as parse_classic

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from test_corpus_interpreter import assert_matches  # noqa: E402

FIXTURES = pathlib.Path(__file__).resolve().parent / "fixtures"
SDY = sorted(p.name[:-len(".sdy.hlo")] for p in FIXTURES.glob("*.sdy.hlo"))


def same(a, b):
    return a.kind == b.kind and a.replicate_last == b.replicate_last and \
        np.array_equal(a.devices, b.devices)


@pytest.mark.parametrize("text,classic", [
    ('#sdy.sharding<@mesh, [{"i"}, {}]>', "{devices=[4,1]<=[4]}"),
    ('#sdy.sharding<@mesh2, [{"x"}, {"y"}]>', "{devices=[2,2]<=[4]}"),
    ('#sdy.sharding<@mesh2, [{"y"}, {"x"}]>', "{devices=[2,2]<=[2,2]T(1,0)}"),
    ('#sdy.sharding<@mesh2, [{"y"}, {}]>', "{devices=[2,1,2]<=[2,2]T(1,0) last_tile_dim_replicate}"),
    ('#sdy.sharding<@mesh2, [{"x", "y"}, {?}]>', "{devices=[4,1]<=[4]}"),
    ('#sdy.sharding<@mesh2, [{}, {"y", "x"}]>', "{devices=[1,4]<=[2,2]T(1,0)}"),
])
def test_shardings_match_the_classic_form(text, classic):
    meshes = {"mesh": sdy.parse_mesh('#sdy.mesh<["i"=4]>'),
              "mesh2": sdy.parse_mesh('#sdy.mesh<["x"=2, "y"=2]>')}
    assert same(sdy.parse_sharding(text, meshes, 2), parse_classic(classic))


def test_replicated_device_ids_and_errors():
    meshes = {"m": sdy.parse_mesh('#sdy.mesh<["a"=2], device_ids=[1,0]>')}
    assert sdy.parse_sharding('#sdy.sharding<@m, [{}]>', meshes).is_replicated
    assert sdy.parse_sharding('#sdy.sharding<@m, [{"a"}]>', meshes).devices.tolist() == [1, 0]
    with pytest.raises(InvalidArgumentError, match="no axis 'b'"):
        sdy.parse_sharding('#sdy.sharding<@m, [{"b"}]>', meshes)
    with pytest.raises(InvalidArgumentError, match="does not define"):
        sdy.parse_sharding('#sdy.sharding<@other, [{}]>', meshes)
    with pytest.raises(UnimplementedError, match="sub-axis"):
        sdy.parse_sharding('#sdy.sharding<@m, [{"a":(1)2}]>', meshes)
    per_value = sdy.parse_sharding_per_value('#sdy.sharding_per_value<[<@m, [{"a"}]>, <@m, [{}]>]>',
                                             meshes)
    assert [s.kind for s in per_value] == ["tiled", "replicated"]
    assert sdy.parse_manual_axes('#sdy<manual_axes{"a", "b"}>') == ["a", "b"]


def test_there_are_shardy_fixtures():
    assert len(SDY) >= 3, SDY


@pytest.mark.parametrize("platform", ["interpreter", "cpu"])
@pytest.mark.parametrize("name", SDY)
def test_shardy_modules_match_jax_on_every_device(name, platform):
    # The global module, partitioned here; each device gets its tiles (the
    # arguments JAX gave each device) and returns its tiles.
    config = json.loads((FIXTURES / f"{name}.json").read_text())
    module = xla.parse_hlo_module((FIXTURES / f"{name}.sdy.hlo").read_text())
    assert sdy.uses_shardy(module)
    local = xla.parse_hlo_module((FIXTURES / f"{name}.hlo").read_text())
    with np.load(FIXTURES / f"{name}.npz") as z:
        data = {k: z[k] for k in z.files}
    n = config["num_partitions"]
    args = [[data[f"dev{d}_arg{i}"].reshape(p.shape.dimensions)
             for i, p in enumerate(local.entry.parameters)] for d in range(n)]
    exe = xla.compile(module, platform, num_partitions=n)
    results = exe.execute(args)
    leaves = [s for _, s in local.entry.root_instruction.shape.leaves()]
    for d, result in enumerate(results):
        got = list(result) if isinstance(result, tuple) else [result]
        assert len(got) == len(leaves)
        for k, (value, shape) in enumerate(zip(got, leaves)):
            expected = data[f"dev{d}_out{k}"].reshape(shape.dimensions)
            assert_matches(value, expected, f"{name} on {platform}, device {d}, out{k}")


def test_partially_manual_bodies_are_named():
    text = (FIXTURES / "pmap_int_psum.sdy.hlo").read_text()
    text = text.replace('#sdy.mesh<[\\"i\\"=4]>', '#sdy.mesh<[\\"i\\"=4, \\"j\\"=1]>')
    text = text.replace('mesh = #sdy.mesh<["i"=4]>', 'mesh = #sdy.mesh<["i"=4, "j"=1]>')
    module = xla.parse_hlo_module(text)
    with pytest.raises(UnimplementedError, match="manual over axes"):
        xla.compile(module, "interpreter", num_partitions=4)


def test_replay_runs_a_shardy_module_on_global_arrays(tmp_path):
    # replay_computation's path: global arguments are cut into each
    # partition's tiles and the results put back together. pmap shards
    # every argument and result along dimension 0.
    from xla.tools.replay import replay_file
    name = "pmap_collectives"
    local = xla.parse_hlo_module((FIXTURES / f"{name}.hlo").read_text())
    with np.load(FIXTURES / f"{name}.npz") as z:
        data = {k: z[k] for k in z.files}
    params = local.entry.parameters
    args = [np.concatenate([data[f"dev{d}_arg{i}"].reshape(p.shape.dimensions) for d in range(4)])
            for i, p in enumerate(params)]
    np.savez(tmp_path / "args.npz", **{f"arg{i}": a for i, a in enumerate(args)})
    for platform in ("interpreter", "cpu"):
        result = replay_file(str(FIXTURES / f"{name}.sdy.hlo"), platform,
                             args_path=str(tmp_path / "args.npz"), num_partitions=4)
        leaves = [s for _, s in local.entry.root_instruction.shape.leaves()]
        assert len(result.leaves) == len(leaves)
        for k, shape in enumerate(leaves):
            expected = np.concatenate([data[f"dev{d}_out{k}"].reshape(shape.dimensions)
                                       for d in range(4)])
            assert_matches(np.asarray(result.leaves[k]), expected, f"{platform} out{k}")
