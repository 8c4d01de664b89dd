"""Layer normalization over rows, plain NumPy under xla.jit."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import xla  # noqa: E402
from _timing import report  # noqa: E402


def layernorm(x, gamma, beta, eps=1e-5):
    mean = x.mean(axis=-1, keepdims=True)
    var = np.mean((x - mean) ** 2, axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def main():
    rows = int(os.environ.get("EXAMPLE_SIZE", 4096))
    rng = np.random.default_rng(2)
    x = rng.standard_normal((rows, 1024), dtype=np.float32)
    gamma = rng.standard_normal(1024, dtype=np.float32)
    beta = rng.standard_normal(1024, dtype=np.float32)
    report(f"layernorm f32[{rows},1024]", layernorm, xla.jit(layernorm), (x, gamma, beta), rtol=1e-4)


if __name__ == "__main__":
    main()
