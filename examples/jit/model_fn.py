"""The seed example: sum(x + y*z) as plain NumPy, compiled by xla.jit.

Fusion turns it into one loop that never writes y*z or x + y*z to memory.
A new shape compiles again (recompiled_on_launch); the same shape reuses the
executable.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import xla  # noqa: E402
from _timing import report  # noqa: E402


def model_fn(x, y, z):
    return np.sum(x + y * z)


def main():
    n = int(os.environ.get("EXAMPLE_SIZE", 1 << 24))
    rng = np.random.default_rng(0)
    x, y, z = (rng.standard_normal(n, dtype=np.float32) for _ in range(3))
    jitted = xla.jit(model_fn)
    report(f"model_fn f32[{n}]", model_fn, jitted, (x, y, z), rtol=1e-3)
    small = [a[:1000] for a in (x, y, z)]
    np.testing.assert_allclose(jitted(*small), model_fn(*small), rtol=1e-4)
    print(f"a new shape recompiled: compilations {jitted.cache_info().compilations}")


if __name__ == "__main__":
    main()
