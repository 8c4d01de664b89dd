"""The CPU runtime's convolutions one at a time: cnn_train's (the JAX-lowered
conv net step of benchmarks/modules/: its layers, input gradient and kernel
gradients, the latter in JAX's f01b_i01o->01bf form) and a few wider NHWC x
HWIO ones, each
compiled alone and timed by the calling thread's CPU time (the steadiest
measure on a shared machine; run with XLA_CPU_NUM_THREADS=1 so the work
stays on that thread). XLA_CPU_RUNTIME_ISA picks the runtime's variant
(avx2, avx512, ...). Nothing is asserted.

    PYTHONPATH=. XLA_CPU_NUM_THREADS=1 .venv/bin/python benchmarks/conv_shapes.py [--repeats=15] [NAME...]
"""
import argparse
import time

import numpy as np

import xla
from xla import _core
from xla.hlo.parser import parse_hlo_module

# name: (input NHWC, kernel HWIO, window attribute), or for kernel
# gradients (input NHWC, output gradient NHWC, window attribute, "filter")
SHAPES = {
    "cnn_kernel_grad_8x16": ((32, 32, 32, 8), (32, 32, 32, 16), "size=32x32 pad=1_1x1_1", "filter"),
    "cnn_kernel_grad_16x32": ((32, 32, 32, 16), (32, 16, 16, 32),
                              "size=16x16 pad=0_1x0_1 rhs_dilate=2x2", "filter"),
    "cnn_first_layer_8to16": ((32, 32, 32, 8), (3, 3, 8, 16), "size=3x3 pad=1_1x1_1"),
    "cnn_strided_16to32": ((32, 32, 32, 16), (3, 3, 16, 32), "size=3x3 stride=2x2 pad=0_1x0_1"),
    "cnn_input_grad_32to16": ((32, 16, 16, 32), (3, 3, 32, 16), "size=3x3 pad=2_1x2_1 lhs_dilate=2x2"),
    "input_grad_64to32": ((32, 8, 8, 64), (3, 3, 64, 32), "size=3x3 pad=2_1x2_1 lhs_dilate=2x2"),
    "fwd_16to8": ((32, 32, 32, 16), (3, 3, 16, 8), "size=3x3 pad=1_1x1_1"),
    "fwd_8to24": ((32, 32, 32, 8), (3, 3, 8, 24), "size=3x3 pad=1_1x1_1"),
    "fwd_32to48": ((32, 16, 16, 32), (3, 3, 32, 48), "size=3x3 pad=1_1x1_1"),
    "fwd_32to64": ((32, 16, 16, 32), (3, 3, 32, 64), "size=3x3 pad=1_1x1_1"),
    "fwd_64to64": ((16, 16, 16, 64), (3, 3, 64, 64), "size=3x3 pad=1_1x1_1"),
}


def _window(window):
    fields = dict(kv.split("=") for kv in window.split())
    pad = [tuple(map(int, a.split("_"))) for a in fields["pad"].split("x")]
    stride = list(map(int, fields.get("stride", "1x1").split("x")))
    lhs = list(map(int, fields.get("lhs_dilate", "1x1").split("x")))
    rhs = list(map(int, fields.get("rhs_dilate", "1x1").split("x")))
    return pad, stride, lhs, rhs


def module_text(x, k, window, form="forward"):
    pad, stride, lhs, rhs = _window(window)
    spatial = [((x[1 + i] - 1) * lhs[i] + 1 + sum(pad[i]) - (k[(1 if form == "filter" else 0) + i] - 1)
                * rhs[i] - 1) // stride[i] + 1 for i in range(2)]
    if form == "filter":
        out, labels = spatial + [x[3], k[3]], "f01b_i01o->01bf"
    else:
        out, labels = [x[0]] + spatial + [k[3]], "b01f_01io->b01f"
    dims = lambda s: ",".join(map(str, s))  # noqa: E731
    return f"""HloModule conv
ENTRY %e (x: f32[{dims(x)}], k: f32[{dims(k)}]) -> f32[{dims(out)}] {{
  %x = f32[{dims(x)}] parameter(0)
  %k = f32[{dims(k)}] parameter(1)
  ROOT %c = f32[{dims(out)}] convolution(%x, %k), window={{{window}}}, dim_labels={labels}
}}"""


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("names", nargs="*", help="of " + ", ".join(SHAPES) + " (default: all)")
    args = parser.parse_args()
    unknown = [n for n in args.names if n not in SHAPES]
    if unknown:
        parser.error(f"unknown shape names {unknown}")
    print(f"# runtime kernels: {_core.cpu_runtime_isa()}; thread ms per call: "
          f"3rd best and best of {args.repeats}")
    rng = np.random.default_rng(0)
    for name in args.names or list(SHAPES):
        x, k, window, *form = SHAPES[name]
        exe = xla.compile(parse_hlo_module(module_text(x, k, window, *form)), "cpu")
        a = rng.standard_normal(x).astype(np.float32)
        b = rng.standard_normal(k).astype(np.float32)
        exe.execute(a, b)
        times = []
        for _ in range(args.repeats):
            start = time.thread_time()
            exe.execute(a, b)
            times.append(time.thread_time() - start)
        times.sort()
        print(f"{name:24} {times[min(2, len(times) - 1)] * 1e3:7.3f} {times[0] * 1e3:7.3f}")


if __name__ == "__main__":
    main()
