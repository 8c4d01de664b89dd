"""What calling an already-compiled ``xla.jit`` function costs, per call.

    .venv/bin/python benchmarks/jit_call_overhead.py [--calls=N] [--repeats=R]
    .venv/bin/python benchmarks/jit_call_overhead.py --trees=OLD,NEW --rounds=R

Rows (microseconds per call, the median of ``--repeats`` loops of
``--calls`` calls timed with ``time.perf_counter_ns``):

- ``add``: ``xla.jit(lambda x, y: x + y)`` on two f32[4] arrays;
  ``add exe``: its executable's ``execute`` (the layer below jit);
  ``add numpy``: ``np.add``.
- ``gemm``: benchmarks/numpy_programs.py's gemm at its benchmark size
  (C = alpha*A@B + beta*C in place, 60x70 C) under ``xla.jit`` on the
  same arrays each call; ``gemm exe``: its executable's ``execute`` (scalars
  as 0-d arrays, C donated as jit does); ``gemm numpy``: the kernel in NumPy.
- ``add prepared``, ``gemm prepared``: the executable's ``prepared_call``
  (what jit's call plan runs), where the tree has one.

``--trees=A,B``: runs this script again under ``PYTHONPATH=A`` and
``PYTHONPATH=B`` alternately, ``--rounds`` times each (a loaded machine's
load changes between rounds), and prints each row's median over the rounds
per tree. Run with ``OPENBLAS_NUM_THREADS=1 XLA_CPU_NUM_THREADS=1`` for
one-thread figures.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


CLOCKS = {"wall": time.perf_counter_ns, "thread": time.thread_time_ns}
clock = CLOCKS["wall"]


def per_call(fn, args, calls, repeats):
    for _ in range(min(calls, 200)):
        fn(*args)
    times = []
    for _ in range(repeats):
        start = clock()
        for _ in range(calls):
            fn(*args)
        times.append((clock() - start) / calls / 1000)
    return statistics.median(times)


def measure(calls, repeats):
    import numpy as np
    import xla
    sys.path.insert(0, os.path.join(HERE, "..", "tests", "frontend"))
    from numpy_programs import KERNELS
    rows = {}
    add = xla.jit(lambda x, y: x + y)
    x, y = np.ones(4, np.float32), np.arange(4, dtype=np.float32)
    add(x, y)
    (entry,) = add._cache.values()
    rows["add"] = per_call(add, (x, y), calls, repeats)
    rows["add exe"] = per_call(entry.executable.execute, (x, y), calls, repeats)
    prepared = getattr(entry.executable, "prepared_call", lambda *a: None)()
    if prepared is not None:
        rows["add prepared"] = per_call(lambda *a: prepared(a), (x, y), calls, repeats)
    rows["add numpy"] = per_call(np.add, (x, y), calls, repeats)
    fn, make, _ = KERNELS["gemm"]
    args = make(np.random.default_rng(0), "bench")
    gemm = xla.jit(fn)
    gemm(*args)
    (entry,) = gemm._cache.values()
    exe = entry.executable
    arrays = [np.asarray(a) for a in args]
    few = max(calls // 5, 1)
    rows["gemm"] = per_call(gemm, args, few, repeats)
    rows["gemm exe"] = per_call(lambda *a: exe.execute(*a, donated=(2,)), arrays, few, repeats)
    prepared = getattr(exe, "prepared_call", lambda *a: None)((2,))
    if prepared is not None:
        rows["gemm prepared"] = per_call(lambda *a: prepared(a), arrays, few, repeats)
    rows["gemm numpy"] = per_call(fn, args, few, repeats)
    return rows


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--calls", type=int, default=20000)
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--trees", default="", help="two or more source trees, comma-separated")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--clock", choices=sorted(CLOCKS), default="wall",
                   help="wall: time.perf_counter_ns; thread: this thread's CPU time "
                        "(steadier on a loaded machine; the runtime runs on the calling thread "
                        "with XLA_CPU_NUM_THREADS=1)")
    p.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    opts = p.parse_args()
    global clock
    clock = CLOCKS[opts.clock]
    if not opts.trees:
        rows = measure(opts.calls, opts.repeats)
        if opts.json:
            print(json.dumps(rows))
        else:
            for name, us in rows.items():
                print(f"{name:<14} {us:8.2f} us")
        return
    trees = opts.trees.split(",")
    results = {t: [] for t in trees}
    for _ in range(opts.rounds):
        for tree in trees:
            env = dict(os.environ, PYTHONPATH=os.path.abspath(tree))
            out = subprocess.run([sys.executable, os.path.abspath(__file__), "--json",
                                  f"--calls={opts.calls}", f"--repeats={opts.repeats}",
                                  f"--clock={opts.clock}"],
                                 env=env, check=True, capture_output=True, text=True).stdout
            results[tree].append(json.loads(out.strip().splitlines()[-1]))
    names = list(dict.fromkeys(n for t in trees for n in results[t][0]))
    print(f"{'row':<14}" + "".join(f" {t[-24:]:>24}" for t in trees) + "   (us per call, median of "
          f"{opts.rounds} rounds, {opts.clock} clock)")
    for name in names:
        print(f"{name:<14}" + "".join(
            f" {statistics.median(r[name] for r in results[t]):24.2f}" if name in results[t][0]
            else f" {'-':>24}" for t in trees))


if __name__ == "__main__":
    main()
