"""JAX's global modules with their shardings, in GSPMD's form and in
Shardy's (NAME_shardy; JAX's default, without manual regions), as JAX
hands them to XLA (tests/distributed/fixtures/unpartitioned, made by
gen_unpartitioned_fixtures.py with jax 0.10.2 on 4 CPU devices): propagated and partitioned here, run on 4 partitions of the
interpreter and the CPU, they give JAX's results, with as many collectives
of each kind (and while loops) as XLA:CPU's partitioned module has."""
import json
import pathlib

import numpy as np
import pytest

import xla
from xla.service.spmd_partitioner import partition, shard_arguments, unshard_result

FIXTURES = pathlib.Path(__file__).resolve().parent / "fixtures" / "unpartitioned"
NAMES = sorted(p.stem for p in FIXTURES.glob("*.hlo"))


def test_there_are_fixtures():
    assert {"sharding_constraint", "sharded_while", "sharding_constraint_shardy",
            "sharded_while_shardy"} <= set(NAMES)


def _counts(module):
    ops = [i.opcode for c in module.computations for i in c.instructions]
    return {op: ops.count(op) for op in ("all-gather", "all-to-all", "all-reduce",
                                         "collective-permute", "while")}


@pytest.mark.parametrize("name", NAMES)
def test_partitioned_like_xla(name):
    meta = json.loads((FIXTURES / f"{name}.json").read_text())
    module = xla.parse_hlo_module((FIXTURES / f"{name}.hlo").read_text())
    partitioned, _, _ = partition(module, meta["num_partitions"])
    assert _counts(partitioned) == meta["xla_cpu_counts"]


@pytest.mark.parametrize("platform", ["interpreter", "cpu"])
@pytest.mark.parametrize("name", NAMES)
def test_matches_jax(name, platform):
    n = json.loads((FIXTURES / f"{name}.json").read_text())["num_partitions"]
    data = np.load(FIXTURES / f"{name}.npz")
    args = [data[f"arg{i}"] for i in range(sum(k.startswith("arg") for k in data.files))]
    outs = [data[f"out{k}"] for k in range(sum(k.startswith("out") for k in data.files))]
    module = xla.parse_hlo_module((FIXTURES / f"{name}.hlo").read_text())
    partitioned, params, result = partition(module, n)
    exe = xla.compile(xla.parse_hlo_module(partitioned.to_text()), platform, num_partitions=n)
    got = unshard_result(exe.execute(shard_arguments(args, params, n)), result,
                         module.entry.root_instruction.shape)
    got = list(got) if isinstance(got, tuple) else [got]
    assert len(got) == len(outs)
    for g, o in zip(got, outs):
        np.testing.assert_allclose(g, o, rtol=1e-5, atol=1e-6)
