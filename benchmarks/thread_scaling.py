"""Thread scaling of the CPU backend: the workloads of cpu_workloads.py at
1, 2, 4, ... threads (``--xla_cpu_num_threads``, each count in a fresh
process), as time and speed-up over one thread, next to NumPy at the same
thread count (its BLAS's threads: OPENBLAS_NUM_THREADS/OMP_NUM_THREADS).

    .venv/bin/python benchmarks/thread_scaling.py [--threads=1,2,4,8,16] [--repeats=5]

Meant for a machine with many cores (the README's table was made on the
16-core machine lent with a GPU); on 2 cores it shows 1 and 2.
"""
import argparse
import json
import os
import platform
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
NAMES = ("sum(x + y*z)", "softmax", "layernorm", "gelu f32", "matmul f32", "mlp")


def child(repeats):
    sys.path.insert(0, HERE)
    import cpu_workloads as w
    import numpy as np

    import xla
    out = {}
    for name, text, inputs, np_fn, _, nbytes, flops, *flags in w.workloads(False):
        if not name.startswith(NAMES) or "fast-math" in name:
            continue
        exe = xla.compile(xla.parse_hlo_module(text), "cpu")
        got = exe.execute(*inputs)
        expected = np_fn(*inputs)
        np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(expected, np.float64),
                                   rtol=2e-3, atol=2e-3 * max(1.0, float(np.abs(expected).max())))
        out[name] = (w.median_time(lambda: exe.execute(*inputs), repeats),
                     w.median_time(lambda: np_fn(*inputs), repeats))
    print(json.dumps(out))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    cores = os.cpu_count() or 1
    default = ",".join(str(n) for n in (1, 2, 4, 8, 16, 32, 64) if n <= cores)
    parser.add_argument("--threads", default=default)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args.repeats)
    counts = [int(n) for n in args.threads.split(",")]
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    print(f"# {time.strftime('%Y-%m-%d')}, {cpu}, {cores} CPUs; medians of {args.repeats}; "
          "time (speed-up over 1 thread)")
    results = {}
    for n in counts:
        env = dict(os.environ, XLA_CPU_NUM_THREADS=str(n), OPENBLAS_NUM_THREADS=str(n),
                   OMP_NUM_THREADS=str(n), MKL_NUM_THREADS=str(n))
        run = subprocess.run([sys.executable, __file__, "--child", f"--repeats={args.repeats}"],
                             env=env, capture_output=True, text=True)
        if run.returncode:
            sys.exit(f"{n} threads failed:\n{run.stderr[-2000:]}")
        results[n] = json.loads(run.stdout.strip().splitlines()[-1])
    names = list(results[counts[0]])
    head = f"{'workload':32}" + "".join(f"{str(n) + ' threads':>20}" for n in counts)
    print(head)
    print("-" * len(head))
    for who, k in (("ours", 0), ("numpy", 1)):
        for name in names:
            base = results[counts[0]][name][k]
            cells = "".join(f"{results[n][name][k] * 1e3:10.2f}ms ({base / results[n][name][k]:4.1f}x)"
                            for n in counts)
            print(f"{(name + ' ' + who)[:32]:32}{cells}")


if __name__ == "__main__":
    main()
