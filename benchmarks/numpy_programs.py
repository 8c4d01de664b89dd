"""The NumPy kernel suite (tests/frontend/numpy_programs.py) at benchmark
sizes: each kernel run by NumPy and, unmodified, under xla.jit.

    .venv/bin/python benchmarks/numpy_programs.py [--repeats=N] [--only=a,b]

For each kernel: the first call under xla.jit (trace and compile, then
run), the median of ``--repeats`` calls after it (on fresh copies of the
arguments, made outside the timing, since the kernels update them in
place) against NumPy's median on the same copies, and their ratio
numpy/ours (above 1: this project is faster); the last line is the
geometric mean of the ratios. How each loop was compiled is reported (one
HLO while, or unrolled, and why). jax is not needed (nor used) here.
"""
import argparse
import math
import os
import statistics
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "frontend"))

import xla  # noqa: E402
from numpy_programs import KERNELS  # noqa: E402


def copies(args):
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def median_time(fn, args, repeats):
    times = []
    for _ in range(repeats):
        fresh = copies(args)
        t = time.perf_counter()
        fn(*fresh)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--only", default="", help="comma-separated kernel names")
    opts = p.parse_args()
    names = [n for n in KERNELS if not opts.only or n in opts.only.split(",")]
    print(f"{'kernel':<22} {'first call':>11} {'numpy':>11} {'xla.jit':>11} {'numpy/ours':>10}  loops")
    ratios = []
    for name in names:
        fn, make, static = KERNELS[name]
        args = make(np.random.default_rng(0), "bench")
        jitted = xla.jit(fn, static_argnums=static)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            t = time.perf_counter()
            jitted(*copies(args))
            first = time.perf_counter() - t
        text = jitted.lower(*copies(args)).as_hlo_text()
        whiles = text.count(" while(")
        unrolled = [str(w.message).split(": ", 1)[1].split(":")[0] for w in caught
                    if "unrolled" in str(w.message)]
        loops = f"{whiles} while" + (f"; {'; '.join(unrolled)}" if unrolled else "")
        ours = median_time(jitted, args, opts.repeats)
        ref = median_time(fn, args, opts.repeats)
        ratios.append(ref / ours)
        print(f"{name:<22} {first * 1e3:9.0f} ms {ref * 1e3:8.3f} ms {ours * 1e3:8.3f} ms "
              f"{ref / ours:9.2f}x  {loops}", flush=True)
    geo = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
    slower = [n for n, r in zip(names, ratios) if r < 1]
    print(f"geometric mean numpy/ours: {geo:.2f}x over {len(ratios)} kernels; "
          f"slower than NumPy: {', '.join(slower) or 'none'}")


if __name__ == "__main__":
    main()
