"""Times an f16/bf16 row max alone and the f16/bf16 softmax of
cpu_workloads.py (f32[4096,1024]-sized data) on the CPU backend; median of
--repeats calls. For before/after comparisons on a loaded machine, run it
alternately with two source trees:

    for i in 1 2 3; do
      PYTHONPATH=old python benchmarks/narrow_row_max.py
      PYTHONPATH=new python benchmarks/narrow_row_max.py
    done
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(1, os.path.dirname(os.path.abspath(__file__)))
import cpu_workloads as cw  # noqa: E402

import xla  # noqa: E402


def row_max(r, c, t):
    return f"""HloModule row_max_{t}
{cw._half_reducers(t)}
ENTRY %main (x: {t}[{r},{c}]) -> {t}[{r}] {{
  %x = {t}[{r},{c}] parameter(0)
  %ninf = {t}[] constant(-inf)
  ROOT %mx = {t}[{r}] reduce(%x, %ninf), dimensions={{1}}, to_apply=%max_{t}
}}
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    r, c = 4096, 1024
    x32 = np.random.RandomState(0).standard_normal((r, c)).astype(np.float32)
    for t, dt in cw.HALF_NP.items():
        x = x32.astype(dt)
        for name, text in (("row max", row_max(r, c, t)), ("softmax", cw.softmax_half(r, c, t))):
            exe = xla.compile(xla.parse_hlo_module(text), "cpu")
            s = cw.median_time(lambda: exe.execute(x), args.repeats)
            print(f"{name} {t}[{r},{c}]: {s * 1e3:.3f} ms", flush=True)


if __name__ == "__main__":
    main()
