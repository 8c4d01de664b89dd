"""Calls with several mid-sized results, each case in a fresh process:
ours with the output buffer cache (python/output_buffers.cc) and without it
(XLA_CPU_OUTPUT_CACHE_BYTES=0: NumPy's allocator, as every result below
8 MiB had before 2026-11-28), NumPy computing the same results, and jax.jit
where installed.

    PYTHONPATH=. .venv/bin/python benchmarks/result_buffers.py [--repeats N]

A fresh process matters: glibc's mmap and trim thresholds start at 128 KiB
and only rise as large blocks are freed, so in a process that has freed a
32 MiB array the effect below disappears, and in one that has not, every
call whose results together exceed the trim threshold gets its pages from
the kernel again (faulted in and zeroed as they are first written).
Workloads: k results ``x * 2 ... x * (k+1)`` of one f32 array, and four
independent 1024x512x512 products of one left operand (attention's
projections, with their results returned). Times are medians of --repeats
calls after three warm-up calls; GB/s counts the input read once and every
result written. Nothing is asserted.
"""
import argparse
import importlib.util
import json
import os
import subprocess
import sys

CHILD = r"""
import json, statistics, sys, time
import numpy as np
side, kind, k, elems, repeats = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
rng = np.random.default_rng(0)
if kind == "scale":
    args = [rng.standard_normal(elems).astype(np.float32)]
    def numpy_fn(x):
        return tuple(x * np.float32(i + 2) for i in range(k))
else:
    m, kk, n = 1024, 512, 512
    args = [rng.standard_normal((m, kk)).astype(np.float32)] + [
        rng.standard_normal((kk, n)).astype(np.float32) for _ in range(k)]
    def numpy_fn(a, *bs):
        return tuple(a @ b for b in bs)
if side == "numpy":
    fn = lambda: numpy_fn(*args)
elif side == "jax":
    import jax
    jax.config.update("jax_platforms", "cpu")
    jf = jax.jit(numpy_fn)
    dev = [jax.device_put(a) for a in args]
    fn = lambda: jax.block_until_ready(jf(*dev))
else:
    import xla
    if kind == "scale":
        lines = "\n".join(f"  %c{i} = f32[] constant({i + 2})\n  %b{i} = f32[{elems}] broadcast(%c{i}), "
                          f"dimensions={{}}\n  %y{i} = f32[{elems}] multiply(%x, %b{i})" for i in range(k))
        params = f"  %x = f32[{elems}] parameter(0)"
        shape = f"f32[{elems}]"
    else:
        params = "  %a = f32[1024,512] parameter(0)\n" + "\n".join(
            f"  %w{i} = f32[512,512] parameter({i + 1})" for i in range(k))
        lines = "\n".join(f"  %y{i} = f32[1024,512] dot(%a, %w{i}), lhs_contracting_dims={{1}}, "
                          "rhs_contracting_dims={0}" for i in range(k))
        shape = "f32[1024,512]"
    shapes = ", ".join([shape] * k)
    text = (f"HloModule results\nENTRY %main {{\n{params}\n{lines}\n"
            f"  ROOT %t = ({shapes}) tuple({', '.join(f'%y{i}' for i in range(k))})\n}}\n")
    exe = xla.compile(xla.parse_hlo_module(text), "cpu")
    fn = lambda: exe.execute(*args)
for _ in range(3):
    fn()
times = []
for _ in range(repeats):
    start = time.perf_counter()
    fn()
    times.append(time.perf_counter() - start)
print(json.dumps(statistics.median(times)))
"""

CASES = [("scale", k, kib * 256) for kib in (64, 256, 1024, 4096) for k in (1, 2, 8)] + [
    ("scale", 64, 64 * 256), ("dots", 1, 0), ("dots", 4, 0)]


def run(side, kind, k, elems, repeats, cache_off=False):
    env = dict(os.environ)
    if cache_off:
        env["XLA_CPU_OUTPUT_CACHE_BYTES"] = "0"
    out = subprocess.run([sys.executable, "-c", CHILD, side, kind, str(k), str(elems), str(repeats)],
                         env=env, capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        return None
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=50)
    args = parser.parse_args()
    have_jax = importlib.util.find_spec("jax") is not None
    header = (f"{'workload':34} {'ours':>10} {'ours, no cache':>15} {'numpy':>10} {'jax.jit':>10}"
              f" {'no cache/ours':>14} {'np/ours':>8} {'jax/ours':>9} {'GB/s':>7}")
    print(header)
    print("-" * len(header))
    for kind, k, elems in CASES:
        name = (f"{k} x f32[{elems}] (x * c)" if kind == "scale"
                else f"{k} x 1024x512x512 product")
        ours = run("xla", kind, k, elems, args.repeats)
        plain = run("xla", kind, k, elems, args.repeats, cache_off=True)
        theirs = run("numpy", kind, k, elems, args.repeats)
        jx = run("jax", kind, k, elems, args.repeats) if have_jax else None
        nbytes = (k + 1) * elems * 4 if kind == "scale" else None
        rate = f"{nbytes / ours / 1e9:7.1f}" if nbytes else f"{'-':>7}"
        jcol = f"{jx * 1e6:8.1f}us" if jx else f"{'-':>10}"
        jratio = f"{jx / ours:9.2f}" if jx else f"{'-':>9}"
        print(f"{name:34} {ours * 1e6:8.1f}us {plain * 1e6:13.1f}us {theirs * 1e6:8.1f}us {jcol}"
              f" {plain / ours:14.2f} {theirs / ours:8.2f} {jratio} {rate}", flush=True)


if __name__ == "__main__":
    main()
