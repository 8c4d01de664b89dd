"""Writes benchmarks/modules/gpu_*.hlo.gz: the GPU benchmark's workloads as JAX
lowers them (unoptimized HLO text). Run from an environment with jax (never
a dependency of this project):

    python benchmarks/gen_gpu_modules.py [NAME...]
"""
import gzip
import pathlib
import sys

import jax
import jax.numpy as jnp
from jax import ShapeDtypeStruct as S

OUT = pathlib.Path(__file__).resolve().parent / "modules"
f32 = jnp.float32


def gelu(x):
    return 0.5 * x * (1 + jnp.tanh(0.7978845608 * (x + 0.044715 * x**3)))


def softmax(x):
    return jax.nn.softmax(x, axis=-1)


def layernorm(x, g, b):
    m = x.mean(-1, keepdims=True)
    v = ((x - m)**2).mean(-1, keepdims=True)
    return (x - m) / jnp.sqrt(v + 1e-5) * g + b


WORKLOADS = {
    "gpu_axpby": (lambda a, b, c: a * b + c, [S((1 << 26,), f32)] * 3),
    "gpu_gelu": (gelu, [S((1 << 26,), f32)]),
    "gpu_row_sum": (lambda x: x.sum(axis=1), [S((8192, 8192), f32)]),
    "gpu_col_sum": (lambda x: x.sum(axis=0), [S((8192, 8192), f32)]),
    "gpu_softmax": (softmax, [S((4096, 1024), f32)]),
    "gpu_layernorm": (layernorm, [S((8192, 1024), f32), S((1024,), f32), S((1024,), f32)]),
    "gpu_matmul": (lambda a, b: a @ b, [S((2048, 2048), f32)] * 2),
    "gpu_sort": (lambda x: jnp.sort(x, axis=-1), [S((64, 16384), f32)]),
    "gpu_transpose": (lambda x: x.T, [S((8192, 8192), f32)]),
    "gpu_conv": (lambda x, w: jax.lax.conv_general_dilated(
        x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")),
        [S((32, 56, 56, 64), f32), S((3, 3, 64, 64), f32)]),
    "gpu_fft": (lambda x: jnp.fft.irfft(jnp.fft.rfft(x) * 2, n=x.shape[-1]), [S((4096, 4096), f32)]),
}


def main(names):
    """Writes the modules named (all by default); gzip without a timestamp,
    so that rewriting an unchanged module changes no byte."""
    for name, (fn, args) in WORKLOADS.items():
        if names and name not in names:
            continue
        text = jax.jit(fn).lower(*args).compiler_ir("hlo").as_hlo_text()
        with open(OUT / f"{name}.hlo.gz", "wb") as raw, \
                gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as f:
            f.write(text.encode())
        print(name, len(text))


if __name__ == "__main__":
    main(sys.argv[1:])
