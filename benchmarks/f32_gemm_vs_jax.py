"""f32 GEMMs, ours against jax.jit's (XLA:CPU; YNNPACK in jax 0.10) and
NumPy's in one process: --rounds rounds, each side --repeats calls back to
back per round after --settle seconds and two unmeasured calls; GFLOP/s from the median of all
of a side's calls. (Alternating call by call measures each side's pool
threads waking: after a pause a VM's idle vCPU takes milliseconds to run
again, and right after the other side's call its threads are still
spinning on both cores.)

    PYTHONPATH=.:<jax site-packages> .venv/bin/python benchmarks/f32_gemm_vs_jax.py
    taskset -c 0 env XLA_CPU_NUM_THREADS=1 ... benchmarks/f32_gemm_vs_jax.py   # one thread

With taskset, jax's XLA:CPU sees one CPU and runs one thread too; NumPy's
OpenBLAS follows OPENBLAS_NUM_THREADS. Without jax installed, ours and
NumPy only.
"""
import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import xla  # noqa: E402

PRODUCTS = [(256, 1024, 4096), (256, 4096, 1024), (1024, 1024, 1024), (2048, 2048, 2048),
            (2048, 512, 2048), (512, 512, 512), (128, 128, 128)]


def dot_module(m, k, n, transpose_rhs):
    rhs = f"f32[{n},{k}]" if transpose_rhs else f"f32[{k},{n}]"
    return f"""HloModule gemm
ENTRY e {{
  a = f32[{m},{k}] parameter(0)
  b = {rhs} parameter(1)
  ROOT d = f32[{m},{n}] dot(a, b), lhs_contracting_dims={{1}}, rhs_contracting_dims={{{1 if transpose_rhs else 0}}}
}}"""


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--settle", type=float, default=0.3,
                        help="seconds before each side's calls: OpenBLAS's and XLA:CPU's "
                             "threads spin for a while after a call, on the cores ours need")
    parser.add_argument("--transpose-rhs", action="store_true",
                        help="B stored [n, k] (a dense layer's x @ W^T)")
    parser.add_argument("--product", action="append", default=[], metavar="MxKxN",
                        help="only this product (repeatable; default: the list above)")
    args = parser.parse_args()
    try:
        products = [tuple(int(d) for d in p.split("x")) for p in args.product] or PRODUCTS
        if any(len(p) != 3 or min(p) < 1 for p in products):
            raise ValueError
    except ValueError:
        parser.error(f"--product wants MxKxN with positive sizes, got {args.product}")
    try:
        import jax
        jax.config.update("jax_platforms", "cpu")
    except ImportError:
        jax = None
    rng = np.random.default_rng(0)
    print(f"CPUs visible {len(os.sched_getaffinity(0))}, XLA_CPU_NUM_THREADS="
          f"{os.environ.get('XLA_CPU_NUM_THREADS', '(unset: one per CPU)')}; "
          f"jax {jax.__version__ if jax else 'not installed'}")
    print(f"{'product':>18} {'ours':>8} {'jax.jit':>8} {'numpy':>8}  jax/ours  (GFLOP/s)")
    for m, k, n in products:
        a = rng.standard_normal((m, k), dtype=np.float32)
        b = rng.standard_normal((n, k) if args.transpose_rhs else (k, n), dtype=np.float32)
        exe = xla.compile(xla.parse_hlo_module(dot_module(m, k, n, args.transpose_rhs)), "cpu")
        sides = {"ours": lambda: exe.execute(a, b)}
        if jax is not None:
            f = jax.jit((lambda x, y: x @ y.T) if args.transpose_rhs else (lambda x, y: x @ y))
            ja, jb = jax.device_put(a), jax.device_put(b)
            sides["jax.jit"] = lambda: f(ja, jb).block_until_ready()
        sides["numpy"] = (lambda: a @ b.T) if args.transpose_rhs else (lambda: a @ b)
        times = {name: [] for name in sides}
        for _ in range(args.rounds):
            for name, fn in sides.items():
                time.sleep(args.settle)  # the other sides' threads stop spinning
                fn()  # wakes this side's threads
                fn()
                for _ in range(args.repeats):
                    t = time.perf_counter()
                    fn()
                    times[name].append(time.perf_counter() - t)
        rate = {name: 2 * m * k * n / statistics.median(ts) / 1e9 for name, ts in times.items()}
        jax_rate = rate.get("jax.jit")
        ratio = f"{jax_rate / rate['ours']:.2f}" if jax_rate else "-"
        print(f"{m:>6}x{k}x{n:<6} {rate['ours']:8.0f} {jax_rate or 0:8.0f} {rate['numpy']:8.0f}  {ratio:>8}")


if __name__ == "__main__":
    main()
