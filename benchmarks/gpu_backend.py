"""GPU backend workloads on a real GPU, side by side with jax.jit and cuBLAS.

    python benchmarks/gpu_backend.py [--repeats=N] [--out=FILE]

Each workload is a module as JAX lowers it (``benchmarks/modules/gpu_*``,
written by ``gen_gpu_modules.py``), compiled for platform 'gpu'. The same
run measures the device's limits: memory bandwidth (a 1 GiB device-to-device
copy through this backend's runtime, bytes read plus written) and the f32
matrix rate of cuBLAS (through PyTorch, TF32 off, where PyTorch is
installed). Times are medians of ``--repeats`` runs after warm-ups, each run
ending in a stream synchronize; ratios are jax/ours (above 1: this project
is faster); "of limit" is the achieved rate over the limit (bytes that must
move / bandwidth, or FLOPs / cuBLAS's rate). jax.jit and PyTorch are never
dependencies: their columns appear where they are installed. Each result is
checked against jax's (relative error, max-norm) so that a fast wrong
kernel shows.
"""
import argparse
import gzip
import os
import pathlib
import statistics
import sys
import time

import numpy as np

import xla
import xla.debug_options

# jax.jit shares the GPU with this backend here: it must not take 75% of it up front.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

HERE = pathlib.Path(__file__).resolve().parent
NAMES = ["gpu_axpby", "gpu_gelu", "gpu_row_sum", "gpu_col_sum", "gpu_softmax",
         "gpu_layernorm", "gpu_matmul", "gpu_sort", "gpu_transpose", "gpu_fft",
         "gpu_conv"]


def median_time(run, sync, repeats):
    run()
    sync()
    run()
    sync()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        run()
        sync()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def copy_bandwidth(device, repeats):
    n = 1 << 30
    src, dst = device.allocate(n), device.allocate(n)
    device.upload(src, np.ones(n, np.uint8))
    t = median_time(lambda: device.copy(dst, src), device.synchronize, repeats)
    return 2 * n / t


def cublas_rate(repeats):
    try:
        import torch
    except ImportError:
        return None, None
    torch.backends.cuda.matmul.allow_tf32 = False
    a = torch.randn(4096, 4096, device="cuda")
    b = torch.randn(4096, 4096, device="cuda")
    t = median_time(lambda: a @ b, torch.cuda.synchronize, repeats)
    return 2 * 4096 ** 3 / t, torch


def jax_side(name):
    try:
        import jax
        sys.path.insert(0, str(HERE))
        from gen_gpu_modules import WORKLOADS
    except ImportError:
        return None
    if not any(d.platform == "gpu" for d in jax.devices()):
        return None
    return jax.jit(WORKLOADS[name][0] if name else lambda x: x + x)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--out", help="also write the table here")
    opts = parser.parse_args()
    (device, *_) = xla.devices("gpu")
    bandwidth = copy_bandwidth(device, opts.repeats)
    peak, torch = cublas_rate(opts.repeats)
    lines = [f"device: {device.kind}; arch {device.arch}",
             f"limits: copy bandwidth {bandwidth / 1e9:.0f} GB/s (1 GiB device-to-device, "
             f"read+write); cuBLAS f32 (TF32 off) 4096^3: "
             + (f"{peak / 1e12:.1f} TFLOP/s" if peak else "n/a (no PyTorch)"),
             f"{'workload':<16}{'compile s':>10}{'ours ms':>10}{'jax ms':>10}{'jax/ours':>10}"
             f"{'achieved':>16}{'of limit':>10}{'max rel err':>13}{'graphs':>8}"
             f"{'no-graph ms':>12}"]
    rng = np.random.default_rng(0)
    for name in NAMES:
        text = gzip.open(HERE / "modules" / f"{name}.hlo.gz", "rt").read()
        module = xla.parse_hlo_module(text)
        shapes = [p.shape for p in module.entry.parameters]
        args = [rng.standard_normal(tuple(s.dimensions)).astype(np.float32) for s in shapes]
        t = time.perf_counter()
        exe = xla.compile(module, "gpu")
        exe._load(device)
        compile_s = time.perf_counter() - t
        bufs = [device.put(a) for a in args]
        ours = median_time(lambda: exe.execute_buffers(bufs), device.synchronize, opts.repeats)
        with xla.debug_options.override(xla_gpu_enable_command_buffer=()):
            direct = xla.compile(module, "gpu")
        direct_ms = 1e3 * median_time(lambda: direct.execute_buffers(bufs), device.synchronize,
                                      opts.repeats)
        graphs = "yes" if exe.uses_command_buffers else "no"
        (out,) = exe.execute_buffers(bufs)
        out = np.asarray(out)
        result_bytes = out.nbytes
        jfn = jax_side(name)
        jax_ms, err = float("nan"), float("nan")
        if jfn is not None:
            import jax
            jargs = [jax.device_put(a) for a in args]
            last = []
            jax_t = median_time(lambda: last.append(jfn(*jargs)),
                                lambda: last.pop().block_until_ready(), opts.repeats)
            jax_ms = jax_t * 1e3
            ref = np.asarray(jfn(*jargs), dtype=np.float64)
            err = float(np.max(np.abs(out - ref)) / max(np.max(np.abs(ref)), 1e-30))
        if name in ("gpu_matmul", "gpu_conv"):
            if name == "gpu_matmul":
                m, k = args[0].shape
                flops = 2 * m * k * args[1].shape[1]
            else:   # SAME padding, stride 1: every output element is a K*C-long dot
                flops = 2 * out.size * int(np.prod(args[1].shape[:-1]))
            achieved = f"{flops / ours / 1e12:.2f} TFLOP/s"
            limit = f"{flops / ours / peak:.3f}" if peak else "n/a"
        else:
            moved = sum(a.nbytes for a in args) + result_bytes
            achieved = f"{moved / ours / 1e9:.0f} GB/s"
            limit = f"{moved / ours / bandwidth:.3f}"
        lines.append(f"{name:<16}{compile_s:>10.2f}{ours * 1e3:>10.3f}{jax_ms:>10.3f}"
                     f"{jax_ms / (ours * 1e3):>10.2f}{achieved:>16}{limit:>10}{err:>13.2e}"
                     f"{graphs:>8}{direct_ms:>12.3f}")
    tiny = xla.compile("HloModule tiny\nENTRY e {\n  x = f32[8] parameter(0)\n"
                       "  ROOT y = f32[8] add(x, x)\n}", "gpu")
    tbufs = [device.put(np.ones(8, np.float32))]
    t = median_time(lambda: tiny.execute_buffers(tbufs), device.synchronize, 10 * opts.repeats)
    line = f"one tiny kernel (f32[8] add), execute + synchronize: {t * 1e6:.0f} us"
    jfn = jax_side(None)
    if jfn is not None:
        import jax
        jx = jax.device_put(np.ones(8, np.float32))
        last = []
        jt = median_time(lambda: last.append(jfn(jx)), lambda: last.pop().block_until_ready(),
                         10 * opts.repeats)
        line += f"; jax.jit: {jt * 1e6:.0f} us"
    lines.append(line)
    if torch is not None:
        a = torch.randn(2048, 2048, device="cuda")
        t = median_time(lambda: a @ a, torch.cuda.synchronize, opts.repeats)
        lines.append(f"cuBLAS f32 2048^3 (PyTorch, TF32 off): {t * 1e3:.3f} ms, "
                     f"{2 * 2048 ** 3 / t / 1e12:.2f} TFLOP/s")
    table = "\n".join(lines)
    print(table)
    if opts.out:
        pathlib.Path(opts.out).write_text(table + "\n")


if __name__ == "__main__":
    main()
