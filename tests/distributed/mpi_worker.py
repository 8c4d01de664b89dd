"""Run by tests/distributed/test_mpi.py under mpirun, one process per device:
``fixtures`` runs every JAX fixture on this rank's device and compares with
JAX's result for that device; ``collectives`` checks pmap's collectives
against NumPy. Prints ``rank R ok ...`` per check; fails loudly otherwise."""
import functools
import json
import pathlib
import sys

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import xla  # noqa: E402
from xla import lax  # noqa: E402
from test_corpus_interpreter import assert_matches  # noqa: E402


def fixtures(rank, size, platform):
    for hlo in sorted((HERE / "fixtures").glob("*.hlo")):
        if hlo.name.endswith(".sdy.hlo"):
            continue
        name = hlo.name[:-len(".hlo")]
        config = json.loads((HERE / "fixtures" / f"{name}.json").read_text())
        if config["num_replicas"] * config["num_partitions"] != size:
            continue
        module = xla.parse_hlo_module(hlo.read_text())
        with np.load(HERE / "fixtures" / f"{name}.npz") as z:
            data = {k: z[k] for k in z.files}
        params = module.entry.parameters
        args = [data[f"dev{rank}_arg{i}"].reshape(p.shape.dimensions) for i, p in enumerate(params)]
        exe = xla.compile(module, platform, num_replicas=config["num_replicas"],
                          num_partitions=config["num_partitions"])
        (result,) = exe.execute([args])
        leaves = [s for _, s in module.entry.root_instruction.shape.leaves()]
        got = list(result) if isinstance(result, tuple) else [result]
        for k, (value, shape) in enumerate(zip(got, leaves)):
            assert_matches(value, data[f"dev{rank}_out{k}"].reshape(shape.dimensions),
                           f"{name} rank {rank} out{k}")
        print(f"rank {rank} ok {name} {platform}", flush=True)


def collectives(rank, size, platform):
    @functools.partial(xla.pmap, axis_name="i", backend=platform)
    def f(x):
        return (lax.psum(x, "i"), lax.all_gather(x, "i"), lax.pmax(x, "i"),
                lax.ppermute(x, "i", [(j, (j + 1) % size) for j in range(size)]),
                lax.axis_index("i"), lax.psum(x.astype(np.int32), "i"))
    everyone = [np.arange(6, dtype=np.float32).reshape(2, 3) * (d + 1) - d for d in range(size)]
    s, g, m, p, idx, si = f(everyone[rank][None])
    np.testing.assert_allclose(s[0], sum(everyone), rtol=1e-6)
    np.testing.assert_array_equal(g[0], np.stack(everyone))
    np.testing.assert_array_equal(m[0], np.max(everyone, axis=0))
    np.testing.assert_array_equal(p[0], everyone[(rank - 1) % size])
    assert int(idx[0]) == rank
    np.testing.assert_array_equal(si[0], sum(e.astype(np.int32) for e in everyone))
    print(f"rank {rank} ok collectives {platform}", flush=True)


def main():
    xla.distributed.initialize()
    rank, size = xla.distributed.process_index(), xla.distributed.process_count()
    mode, platform = sys.argv[1], sys.argv[2]
    {"fixtures": fixtures, "collectives": collectives}[mode](rank, size, platform)


if __name__ == "__main__":
    main()
