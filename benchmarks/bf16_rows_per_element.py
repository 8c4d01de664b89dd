"""Per-element cost of cpu_workloads.py's bf16 softmax, GELU and layernorm
(and the f32 softmax and GELU) on one thread: cycles per element on
L2-resident data (128 x 1024 / 128 K elements, best of 15 rounds of 20
calls) and the best of 30 calls on the full 4096 x 1024 / 4 M elements.
One thread and best-of timings compare code more steadily than
cpu_workloads.py's medians on a shared machine; run it alternately with
two source trees for before/after:

    for i in 1 2 3; do
      PYTHONPATH=old python benchmarks/bf16_rows_per_element.py
      PYTHONPATH=new python benchmarks/bf16_rows_per_element.py
    done
"""
import argparse
import os
import sys
import time

import ml_dtypes
import numpy as np

sys.path.insert(1, os.path.dirname(os.path.abspath(__file__)))
import cpu_workloads as cw  # noqa: E402

import xla  # noqa: E402

BF16 = ml_dtypes.bfloat16


def workloads(r, c, n, rng):
    def x(*shape, t=BF16):
        return rng.standard_normal(shape).astype(t)
    return {
        "softmax bf16": (cw.softmax_half(r, c, "bf16"), [x(r, c)]),
        "gelu bf16": (cw.gelu_half(n, "bf16"), [x(n)]),
        "layernorm bf16": (cw.layernorm_half(r, c, "bf16"), [x(r, c), x(c), x(c)]),
        "softmax f32": (cw.softmax(r, c), [x(r, c, t=np.float32)]),
        "gelu f32": (cw.gelu(n), [x(n, t=np.float32)]),
    }


def best(exe, inputs, rounds, calls):
    exe.execute(*inputs)
    t = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(calls):
            exe.execute(*inputs)
        t = min(t, (time.perf_counter() - start) / calls)
    return t


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ghz", type=float, default=2.6, help="clock for the cycles column")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    one = {"xla_cpu_num_threads": 1}
    small = workloads(128, 1024, 1 << 17, rng)
    full = workloads(4096, 1024, 1 << 22, rng)
    for name in small:
        text, inputs = small[name]
        t = best(xla.compile(xla.parse_hlo_module(text), "cpu", debug_options=one), inputs, 15, 20)
        cycles = t * args.ghz * 1e9 / inputs[0].size
        text, inputs = full[name]
        t_full = best(xla.compile(xla.parse_hlo_module(text), "cpu", debug_options=one), inputs, 30, 1)
        print(f"{name:15} in cache {cycles:5.2f} cycles/element   full size {t_full * 1e3:6.3f} ms")


if __name__ == "__main__":
    main()
