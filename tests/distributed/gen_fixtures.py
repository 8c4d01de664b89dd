"""Makes tests/distributed/fixtures/ with JAX (run in a scratch environment
with jax installed; jax is never a dependency of this project):

    XLA_FLAGS=--xla_force_host_platform_device_count=8 python gen_fixtures.py

For each program: NAME.hlo, the per-device module XLA:CPU compiled (pmap and
sharded jit: XLA's SPMD-partitioned module, one partition per device; for
pmap, NAME.sdy.hlo is also the global module JAX handed to XLA, in Shardy's
form), and NAME.npz with ``dev{d}_arg{i}`` and
``dev{d}_out{k}`` (result leaves depth-first) per device, from running it
on JAX's CPU devices. NAME.json records num_replicas and num_partitions.
"""
import json
import os
import pathlib

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

OUT = pathlib.Path(__file__).resolve().parent / "fixtures"
N = 4


def save(name, text, per_device_args, per_device_outs):
    """The device counts come from the compiled module's header (pmap in
    jax 0.10 compiles to one partition per device, through shard_map)."""
    import re
    header = text.split("\n", 1)[0]
    replicas = int((re.search(r"replica_count=(\d+)", header) or [0, 1])[1])
    partitions = int((re.search(r"num_partitions=(\d+)", header) or [0, 1])[1])
    OUT.mkdir(exist_ok=True)
    (OUT / f"{name}.hlo").write_text(text)
    arrays = {}
    for d, (args, outs) in enumerate(zip(per_device_args, per_device_outs)):
        for i, a in enumerate(args):
            arrays[f"dev{d}_arg{i}"] = np.asarray(a)
        for k, o in enumerate(jax.tree_util.tree_leaves(outs)):
            arrays[f"dev{d}_out{k}"] = np.asarray(o)
    np.savez(OUT / f"{name}.npz", **arrays)
    (OUT / f"{name}.json").write_text(json.dumps({"num_replicas": replicas,
                                                  "num_partitions": partitions}) + "\n")


def pmapped(name, f, *args):
    """args: arrays with a leading axis of N (one slice per device)."""
    pf = jax.pmap(f, axis_name="i")
    lowered = pf.lower(*args)
    # What JAX hands to XLA (Shardy's global form, kept for reference) and
    # XLA:CPU's compiled per-device module, which the tests run.
    (OUT / f"{name}.sdy.hlo").write_text(lowered.compiler_ir("hlo").as_hlo_text())
    text = lowered.compile().as_text()
    outs = pf(*args)
    leaves, treedef = jax.tree_util.tree_flatten(outs)
    per_dev_out = [[np.asarray(leaf)[d] for leaf in leaves] for d in range(N)]
    per_dev_args = [[np.asarray(a)[d] for a in args] for d in range(N)]
    save(name, text, per_dev_args, per_dev_out)


def collectives(x, y):
    s = lax.psum(x, "i")
    m = lax.pmean(y, "i")
    g = lax.all_gather(x, "i")
    p = lax.ppermute(x, "i", perm=[(j, (j + 1) % N) for j in range(N)])
    rs = lax.psum_scatter(y, "i", tiled=True)
    a2a = lax.all_to_all(y.reshape(N, -1), "i", 0, 0)
    mx = lax.pmax(x, "i")
    idx = lax.axis_index("i")
    return s * 2, m, g, p, rs, a2a, mx, idx


def mlp_step(w1, w2, x, t):
    def loss(params, x, t):
        w1, w2 = params
        h = jnp.tanh(x @ w1)
        return jnp.mean((h @ w2 - t) ** 2)
    l, (g1, g2) = jax.value_and_grad(loss)((w1, w2), x, t)
    g1, g2 = lax.pmean(g1, "i"), lax.pmean(g2, "i")
    return w1 - 0.1 * g1, w2 - 0.1 * g2, lax.pmean(l, "i")


def sharded_dot():
    """A tensor-parallel dot: x sharded on the contracting dimension, XLA's
    SPMD partitioner makes a local dot plus an all-reduce."""
    mesh = Mesh(np.array(jax.devices()[:N]), ("m",))
    rng = np.random.default_rng(1)
    x = rng.standard_normal((8, 16)).astype(np.float32)
    w = rng.standard_normal((16, 6)).astype(np.float32)
    xs = jax.device_put(x, NamedSharding(mesh, P(None, "m")))
    ws = jax.device_put(w, NamedSharding(mesh, P("m", None)))
    f = jax.jit(lambda x, w: jnp.tanh(x @ w), out_shardings=NamedSharding(mesh, P()))
    compiled = f.lower(xs, ws).compile()
    out = f(xs, ws)
    shard = lambda a: [np.asarray(s.data) for s in sorted(a.addressable_shards, key=lambda s: s.device.id)]
    per_dev_args = list(zip(shard(xs), shard(ws)))
    per_dev_out = [[o] for o in shard(out)]
    save("sharded_dot", compiled.as_text(), per_dev_args, per_dev_out)


def main():
    assert len(jax.devices()) >= N, "set XLA_FLAGS=--xla_force_host_platform_device_count=8"
    rng = np.random.default_rng(0)
    x = rng.standard_normal((N, 8)).astype(np.float32)
    y = rng.standard_normal((N, 8)).astype(np.float32)
    pmapped("pmap_collectives", collectives, x, y)
    w1 = np.broadcast_to(rng.standard_normal((5, 7)).astype(np.float32), (N, 5, 7)).copy()
    w2 = np.broadcast_to(rng.standard_normal((7, 3)).astype(np.float32), (N, 7, 3)).copy()
    xb = rng.standard_normal((N, 6, 5)).astype(np.float32)
    tb = rng.standard_normal((N, 6, 3)).astype(np.float32)
    pmapped("pmap_mlp_step", mlp_step, w1, w2, xb, tb)
    ints = rng.integers(-100, 100, (N, 6)).astype(np.int32)
    pmapped("pmap_int_psum", lambda v: (lax.psum(v, "i"), lax.pmin(v, "i")), ints)
    sharded_dot()


if __name__ == "__main__":
    main()
