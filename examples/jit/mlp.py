"""A small MLP with GELU (tanh form), plain NumPy under xla.jit."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import xla  # noqa: E402
from _timing import report  # noqa: E402


def gelu(x):
    return 0.5 * x * (1 + np.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))


def mlp(x, w1, b1, w2, b2):
    return gelu(x @ w1 + b1) @ w2 + b2


def main():
    batch = int(os.environ.get("EXAMPLE_SIZE", 256))
    rng = np.random.default_rng(3)
    x = rng.standard_normal((batch, 1024), dtype=np.float32)
    w1 = rng.standard_normal((1024, 4096), dtype=np.float32) / 32
    b1 = rng.standard_normal(4096, dtype=np.float32)
    w2 = rng.standard_normal((4096, 1024), dtype=np.float32) / 64
    b2 = rng.standard_normal(1024, dtype=np.float32)
    report(f"mlp {batch}x1024->4096->1024", mlp, xla.jit(mlp), (x, w1, b1, w2, b2), rtol=2e-3)


if __name__ == "__main__":
    main()
