"""JAX's multi-device programs (tests/distributed/fixtures, made by
gen_fixtures.py with JAX on 4 CPU devices) run on N devices in one process
and match JAX's per-device results: pmapped collectives (psum, pmean,
all_gather, ppermute, psum_scatter, all_to_all, pmax, axis_index), a
data-parallel MLP step, integer reductions, and a tensor-parallel dot that
XLA's SPMD partitioner split into a local dot plus an all-reduce."""
import json
import pathlib
import sys

import numpy as np
import pytest

import xla

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from test_corpus_interpreter import assert_matches  # noqa: E402

FIXTURES = pathlib.Path(__file__).resolve().parent / "fixtures"
NAMES = sorted(p.name[:-len(".hlo")] for p in FIXTURES.glob("*.hlo") if not p.name.endswith(".sdy.hlo"))
PLATFORMS = ["interpreter", "cpu"]


def load(name):
    config = json.loads((FIXTURES / f"{name}.json").read_text())
    module = xla.parse_hlo_module((FIXTURES / f"{name}.hlo").read_text())
    with np.load(FIXTURES / f"{name}.npz") as z:
        data = {k: z[k] for k in z.files}
    return module, config, data


def test_there_are_fixtures():
    assert len(NAMES) >= 4, NAMES


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("name", NAMES)
def test_matches_jax_on_every_device(name, platform):
    module, config, data = load(name)
    n = config["num_replicas"] * config["num_partitions"]
    params = module.entry.parameters
    args = [[data[f"dev{d}_arg{i}"].reshape(p.shape.dimensions) for i, p in enumerate(params)]
            for d in range(n)]
    exe = xla.compile(module, platform, num_replicas=config["num_replicas"],
                      num_partitions=config["num_partitions"])
    results = exe.execute(args)
    leaves = [s for _, s in module.entry.root_instruction.shape.leaves()]
    for d, result in enumerate(results):
        got = list(result) if isinstance(result, tuple) else [result]
        assert len(got) == len(leaves)
        for k, (value, shape) in enumerate(zip(got, leaves)):
            expected = data[f"dev{d}_out{k}"].reshape(shape.dimensions)
            assert_matches(value, expected, f"{name} on {platform}, device {d}, out{k}")
