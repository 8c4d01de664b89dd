"""The NumPy kernel suite (tests/frontend/numpy_programs.py) at benchmark
sizes: each kernel run by NumPy and, unmodified, under xla.jit.

    .venv/bin/python benchmarks/numpy_programs.py [--repeats=N] [--rounds=R] [--only=a,b] [--settle=S]

For each kernel: the first call under xla.jit (trace and compile, then
run), the median of ``--repeats`` calls after it (on fresh copies of the
arguments, made outside the timing, since the kernels update them in
place) against NumPy's median on the same copies, and their ratio
numpy/ours (above 1: this project is faster); with ``--rounds=R`` the two
are timed alternately R times and the medians over the rounds are
reported (the ratio: the median of the rounds' ratios), which a shared,
noisy machine needs. Each block of calls starts ``--settle`` seconds after
the other side's: both keep threads busy after a call (NumPy's OpenBLAS
spins its workers for about 2^28 cycles, ~0.1 s; the CPU runtime's pool
helpers 2 ms), and on a 2-core machine one side's spinning worker took the
second core from the other's block (at two threads each, xla.jit's
mlp_forward 0.72-0.86 ms after NumPy's block, 0.46-0.59 ms with OpenBLAS
at one thread). The last line is the
geometric mean of the ratios. How each loop was compiled is reported (one
HLO while, or unrolled, and why). Where ``import jax`` works, the kernels
that benchmarks/numpy_programs_jax.py writes as JAX asks (``.at[]``,
``lax.fori_loop``, ``lax.cond``) are timed under jax.jit too (results and
updated arguments checked against NumPy's), as jax/ours; jax is never a
dependency: run from an environment that has it, e.g. with a scratch
environment's site-packages on PYTHONPATH (the README says how the
figures were made).
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
    p.add_argument("--rounds", type=int, default=1,
                   help="NumPy and xla.jit timed alternately this many times; medians reported")
    p.add_argument("--only", default="", help="comma-separated kernel names")
    p.add_argument("--settle", type=float, default=0.2,
                   help="seconds between one side's block of calls and the other's, for the "
                        "threads each keeps spinning after its calls to stop")
    opts = p.parse_args()
    names = [n for n in KERNELS if not opts.only or n in opts.only.split(",")]
    try:
        import numpy_programs_jax as jx
        import jax
    except ImportError:
        jx = None
    print(f"{'kernel':<22} {'first call':>11} {'numpy':>11} {'xla.jit':>11} {'numpy/ours':>10}"
          + (f" {'jax.jit':>11} {'jax/ours':>8}" if jx else "") + "  loops")
    ratios, jax_ratios = [], []
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
        # NumPy and ours alternately, --rounds times: on a shared machine the
        # load changes between rounds; each round's ratio sees the same load,
        # and the figures are the medians over the rounds.
        ours_t, ref_t = [], []
        for _ in range(opts.rounds):
            time.sleep(opts.settle)
            ref_t.append(median_time(fn, args, opts.repeats))
            time.sleep(opts.settle)
            ours_t.append(median_time(jitted, args, opts.repeats))
        ours, ref = statistics.median(ours_t), statistics.median(ref_t)
        ratios.append(statistics.median(r / o for r, o in zip(ref_t, ours_t)))
        jax_text = ""
        if jx is not None:
            jax_text = f" {'':>11} {'':>8}"
            if name in jx.KERNELS:
                jfn, jstatic = jx.KERNELS[name]
                jj = jax.jit(jfn, static_argnums=jstatic)
                check_jax(name, fn, jj, args)

                def run(*a, jj=jj):
                    jax.block_until_ready(jj(*a))
                time.sleep(opts.settle)
                tj = median_time(run, args, opts.repeats)
                jax_ratios.append(tj / ours)
                jax_text = f" {tj * 1e3:8.3f} ms {tj / ours:7.2f}x"
        print(f"{name:<22} {first * 1e3:9.0f} ms {ref * 1e3:8.3f} ms {ours * 1e3:8.3f} ms "
              f"{ratios[-1]:9.2f}x{jax_text}  {loops}", flush=True)
    geo = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
    slower = [n for n, r in zip(names, ratios) if r < 1]
    print(f"geometric mean numpy/ours: {geo:.2f}x over {len(ratios)} kernels; "
          f"slower than NumPy: {', '.join(slower) or 'none'}")
    if jax_ratios:
        geo = math.exp(sum(math.log(r) for r in jax_ratios) / len(jax_ratios))
        print(f"geometric mean jax/ours: {geo:.2f}x over the {len(jax_ratios)} kernels written for JAX")


def check_jax(name, fn, jitted, args):
    """JAX's version computes what the NumPy kernel does (its result, then
    the arguments the kernel updates in place)."""
    ref = copies(args)
    want = fn(*ref)
    got = jitted(*copies(args))
    got = list(got) if isinstance(got, tuple) else [got]
    expected = ([] if want is None else [want]) + [
        r for r, a in zip(ref, args) if isinstance(a, np.ndarray) and not np.array_equal(r, a)]
    if len(expected) != len(got):
        raise AssertionError(f"{name}: the JAX version returns {len(got)} values, not {len(expected)}")
    for w, g in zip(expected, got):
        if not np.allclose(np.asarray(g), np.asarray(w), rtol=1e-6, atol=1e-9):
            raise AssertionError(f"{name}: the JAX version disagrees with NumPy")


if __name__ == "__main__":
    main()
