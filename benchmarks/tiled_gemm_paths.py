"""Small and strided products two ways, alternated in one run: the
runtime's tiled GEMM (``__xla_cpu_tiled_gemm_*``, the JIT's default) and
the LLVM tiled kernel (``emit_small_gemm.py``, what the JIT compiled
before and objects compiled ahead of time still do).

``--run_time``: each product's execution time both ways (best of rounds,
alternated), at the runtime's thread count ``--threads``.
``--compile``: JAX-lowered modules (``benchmarks/modules/``) compiled both
ways, each compile in a fresh process after a warm-up compile (as
``compile_time.py`` does): wall and CPU time, LLVM's stage, distinct kernels.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
TILED = "__xla_cpu_tiled_gemm_"
PRODUCTS = [((), 60, 50, 70, "f64"), ((), 8, 300, 200, "f32"), ((), 8, 256, 256, "f32"),
            ((), 512, 256, 256, "f32"), ((32,), 128, 32, 128, "f32"), ((32,), 128, 128, 32, "f32"),
            ((), 200, 64, 40, "f32"), ((), 16, 64, 10, "f32"), ((), 512, 128, 10, "f64")]

CHILD = r'''
import gzip, json, os, resource, sys, time, gc
sys.path.insert(0, os.environ["BENCH_DIR"])
import xla
from xla.backends.cpu import compiler
if os.environ["PATH_MODE"] == "kernel":
    symbols = {k: v for k, v in compiler.runtime_symbols().items() if not k.startswith("%s")}
    compiler.runtime_symbols = lambda: symbols
from compile_time import WARMUP
xla.compile(xla.parse_hlo_module(WARMUP), "cpu")
text = gzip.open(sys.argv[1], "rt").read()
gc.collect()
def cpu():
    return sum(getattr(resource.getrusage(w), f) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
               for f in ("ru_utime", "ru_stime"))
c, t = cpu(), time.perf_counter()
exe = xla.compile(xla.parse_hlo_module(text), "cpu")
print(json.dumps({"wall": time.perf_counter() - t, "cpu": cpu() - c,
                  "llvm": exe.compile_timings.get("llvm", 0.0),
                  "kernels": exe.compile_timings.get("kernels_distinct", 0)}))
''' % TILED


def _module(batch, m, k, n, et):
    nb = len(batch)
    dims = ",".join(map(str, range(nb)))
    s = lambda d: ",".join(map(str, d))  # noqa: E731
    batching = f"lhs_batch_dims={{{dims}}}, rhs_batch_dims={{{dims}}}, " if nb else ""
    return (f"HloModule m\nENTRY e {{\n  a = {et}[{s(batch + (m, k))}] parameter(0)\n"
            f"  b = {et}[{s(batch + (k, n))}] parameter(1)\n"
            f"  ROOT d = {et}[{s(batch + (m, n))}] dot(a, b), {batching}"
            f"lhs_contracting_dims={{{nb + 1}}}, rhs_contracting_dims={{{nb}}}\n}}\n")


def run_time(threads, rounds):
    import xla
    from xla import _core
    from xla.backends.cpu import compiler
    full = dict(compiler.runtime_symbols())
    without = {k: v for k, v in full.items() if not k.startswith(TILED)}
    _core.set_cpu_runtime_num_threads(threads)
    for batch, m, k, n, et in PRODUCTS:
        rng = np.random.default_rng(0)
        dtype = np.float32 if et == "f32" else np.float64
        a = rng.standard_normal(batch + (m, k)).astype(dtype)
        b = rng.standard_normal(batch + (k, n)).astype(dtype)
        exes = {}
        for name, symbols in (("kernel", without), ("runtime", full)):
            compiler.runtime_symbols = lambda symbols=symbols: symbols
            exes[name] = xla.compile(xla.parse_hlo_module(_module(batch, m, k, n, et)), "cpu")
        compiler.runtime_symbols = lambda: full
        assert TILED in exes["runtime"].ir_text and TILED not in exes["kernel"].ir_text
        reps = max(3, int(2e7 / (int(np.prod(batch or (1,))) * m * k * n)))
        times = {"kernel": [], "runtime": []}
        for _ in range(rounds):
            for name, exe in exes.items():
                exe.execute(a, b)
                t = time.perf_counter()
                for _ in range(reps):
                    exe.execute(a, b)
                times[name].append((time.perf_counter() - t) / reps * 1e6)
        kernel, runtime = min(times["kernel"]), min(times["runtime"])
        print(f"{str(batch):6s} {m}x{k}x{n} {et} threads={threads}: kernel {kernel:8.1f} us  "
              f"runtime {runtime:8.1f} us  runtime/kernel {runtime / kernel:.2f}", flush=True)


def compile_times(modules, rounds):
    results = {}
    for _ in range(rounds):
        for mode in ("kernel", "runtime"):
            for name in modules:
                env = dict(os.environ, PATH_MODE=mode, BENCH_DIR=HERE)
                out = subprocess.run([sys.executable, "-c", CHILD,
                                      os.path.join(HERE, "modules", f"{name}.hlo.gz")],
                                     env=env, capture_output=True, text=True, check=True)
                results.setdefault((name, mode), []).append(json.loads(out.stdout.splitlines()[-1]))
    for (name, mode), runs in sorted(results.items()):
        wall = sorted(r["wall"] * 1e3 for r in runs)
        cpu = statistics.median(r["cpu"] * 1e3 for r in runs)
        llvm = statistics.median(r["llvm"] * 1e3 for r in runs)
        print(f"{name:26s} {mode:8s} wall {statistics.median(wall):7.1f} ms ({wall[0]:.0f}-{wall[-1]:.0f})"
              f"  cpu {cpu:7.1f} ms  llvm {llvm:6.1f} ms  distinct kernels {runs[0]['kernels']}")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run_time", action="store_true")
    parser.add_argument("--compile", default="",
                        help="comma-separated modules of benchmarks/modules (e.g. attention)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    if args.run_time:
        run_time(args.threads, args.rounds)
    if args.compile:
        compile_times(args.compile.split(","), args.rounds)


if __name__ == "__main__":
    main()
