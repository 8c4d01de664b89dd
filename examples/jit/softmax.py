"""Softmax over the rows of a matrix, plain NumPy under xla.jit."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import xla  # noqa: E402
from _timing import report  # noqa: E402


def softmax(x):
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)


def main():
    rows = int(os.environ.get("EXAMPLE_SIZE", 4096))
    x = np.random.default_rng(1).standard_normal((rows, 1024), dtype=np.float32)
    report(f"softmax f32[{rows},1024]", softmax, xla.jit(softmax), (x,), rtol=1e-5)


if __name__ == "__main__":
    main()
