"""The heat equation on a grid, written as NumPy code is written (a Python
time loop, an update in place through slices), under xla.jit: the loop
becomes one HLO while loop, not `steps` copies of its body
(docs/frontend.md, "Python control flow")."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import xla  # noqa: E402
from _timing import report  # noqa: E402


def heat(u0, steps=500):
    u = u0.copy()
    for t in range(steps):
        lap = u[2:, 1:-1] + u[:-2, 1:-1] + u[1:-1, 2:] + u[1:-1, :-2] - 4.0 * u[1:-1, 1:-1]
        u[1:-1, 1:-1] += 0.2 * lap
    return u


def main():
    n = int(os.environ.get("EXAMPLE_SIZE", 256))
    u0 = np.zeros((n, n))
    u0[n // 4:n // 2, n // 4:n // 2] = 1.0
    jitted = xla.jit(heat)
    report(f"heat f64[{n},{n}], 500 steps", heat, jitted, (u0,), rtol=1e-12)
    print(f"HLO while loops: {jitted.lower(u0).as_hlo_text().count(' while(')}")


if __name__ == "__main__":
    main()
