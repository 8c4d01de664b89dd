"""Makes tests/distributed/fixtures/unpartitioned/NAME.* with JAX (run in a
scratch environment with jax installed; jax is never a dependency of this
project):

    XLA_FLAGS=--xla_force_host_platform_device_count=8 python gen_unpartitioned_fixtures.py

For each program, jitted over a mesh of 4 devices, in GSPMD's classic
form (Shardy off: NAME) and in Shardy's, JAX's default (NAME_shardy):
NAME.hlo, the global module with its shardings as JAX hands it to XLA
(``lower(...).as_text(dialect="hlo")``), before propagation and
partitioning; NAME.npz, the global
arguments ``arg{i}`` and results ``out{k}``; NAME.json, how
many of each collective and while loops XLA:CPU's partitioned, optimized
module has (``compile().as_text()``).
"""
import json
import pathlib
import re

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

OUT = pathlib.Path(__file__).resolve().parent / "fixtures" / "unpartitioned"
COUNTED = ("all-gather", "all-to-all", "all-reduce", "collective-permute", "while")


def save(name, jitted, args):
    lowered = jitted.lower(*args)
    compiled = lowered.compile().as_text()
    OUT.mkdir(exist_ok=True)
    (OUT / f"{name}.hlo").write_text(lowered.as_text(dialect="hlo"))
    outs = jax.tree_util.tree_leaves(jitted(*args))
    np.savez(OUT / f"{name}.npz",
             **{f"arg{i}": np.asarray(a) for i, a in enumerate(args)},
             **{f"out{k}": np.asarray(o) for k, o in enumerate(outs)})
    counts = {op: len(re.findall(rf" {op}(?:-start)?\(", compiled)) for op in COUNTED}
    (OUT / f"{name}.json").write_text(
        json.dumps({"num_partitions": 4, "xla_cpu_counts": counts}, indent=1) + "\n")


def programs():
    mesh = jax.make_mesh((4,), ("x",), axis_types=(jax.sharding.AxisType.Auto,))

    def s(*spec):
        return NamedSharding(mesh, P(*spec))

    rng = np.random.default_rng(0)

    def constraint(a):
        b = jax.lax.with_sharding_constraint(jnp.sin(a), s(None, "x"))
        return b * 2
    yield ("sharding_constraint", jax.jit(constraint, in_shardings=s("x", None),
                                          out_shardings=s("x", None)),
           [rng.standard_normal((8, 8)).astype(np.float32)])

    def loop(x, w):
        def body(i, x):
            return jnp.tanh(x @ w) + 0.1 * i.astype(jnp.float32)
        return jax.lax.fori_loop(0, 3, body, x)
    yield ("sharded_while", jax.jit(loop, in_shardings=(s("x", None), s()),
                                    out_shardings=s("x", None)),
           [rng.standard_normal((8, 4)).astype(np.float32),
            rng.standard_normal((4, 4)).astype(np.float32)])


def main():
    for shardy in (False, True):
        jax.config.update("jax_use_shardy_partitioner", shardy)
        for name, jitted, args in programs():
            save(name + ("_shardy" if shardy else ""), jitted, args)


if __name__ == "__main__":
    main()
