"""The bf16/f16 rows of cpu_workloads.py (sum(x + y*z), softmax, layernorm,
GELU) on the CPU backend and jax.jit, the two calls alternating in one
process (each preceded by a 20 ms pause), --repeats rounds: best and median
time of each. On a loaded machine the best of alternating calls compares
the two more steadily than cpu_workloads.py's medians of separate blocks.
For before/after comparisons, run it alternately with two source trees:

    for i in 1 2; do
      PYTHONPATH=new:new/benchmarks:$JAX python benchmarks/half_workloads_vs_jax.py
      PYTHONPATH=old:old/benchmarks:$JAX python benchmarks/half_workloads_vs_jax.py
    done
"""
import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(1, os.path.dirname(os.path.abspath(__file__)))
import cpu_workloads as cw  # noqa: E402

import xla  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    import jax
    import jax.numpy as jnp
    jax.config.update("jax_platforms", "cpu")
    rng = np.random.RandomState(0)
    f = lambda *s: rng.standard_normal(s).astype(np.float32)  # noqa: E731
    rows = [row for t in cw.HALF_NP for row in cw.half_workloads(t, f, 1 << 24, 4096, 1024, 1 << 22)]
    for name, text, inputs, _np_fn, jax_fn, nbytes, _flops in rows:
        ours = xla.compile(xla.parse_hlo_module(text), "cpu")
        jitted = jax.jit(jax_fn(jnp))
        jax_inputs = [jnp.asarray(a) for a in inputs]
        run = {"ours": lambda: ours.execute(*inputs),
               "jax": lambda: jitted(*jax_inputs).block_until_ready()}
        for fn in run.values():
            fn()
        times = {k: [] for k in run}
        for _ in range(args.repeats):
            for k, fn in run.items():
                time.sleep(0.02)
                start = time.perf_counter()
                fn()
                times[k].append(time.perf_counter() - start)
        best = {k: min(v) for k, v in times.items()}
        med = {k: statistics.median(v) for k, v in times.items()}
        print(f"{name:28} ours best {best['ours'] * 1e3:6.2f} median {med['ours'] * 1e3:6.2f} ms | "
              f"jax.jit best {best['jax'] * 1e3:6.2f} median {med['jax'] * 1e3:6.2f} ms | "
              f"jax/ours (best) {best['jax'] / best['ours']:5.2f} | "
              f"{nbytes / best['ours'] / 1e9:5.1f} GB/s (best)", flush=True)


if __name__ == "__main__":
    main()
