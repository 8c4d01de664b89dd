"""CPU runtime benchmark: __xla_cpu_matmul_f32/f64 against NumPy's matmul, and
the cost of calling compiled code through xla._core.cpu_execute and
ExecutableState.run; with --lowp, the low-precision products instead
(__xla_cpu_matmul_s8_s32 and __xla_cpu_matmul_bf16_f32) against NumPy's f32
matmul of the same operands widened (NumPy has no s8 or bf16 GEMM).

    .venv/bin/python benchmarks/cpu_runtime_matmul.py [--repeats N] [--threads N] [--lowp [--only BxMxKxN]]

The runtime's kernels are the ISA variant the CPU supports best, or the one
XLA_CPU_RUNTIME_ISA names (baseline, avx2, avx512, avx512_vnni,
avx512_vnni_bf16, amx): the first line says which; compare variants by
running the script once per XLA_CPU_RUNTIME_ISA value.

The runtime's matmul is called directly through ctypes at the address from
cpu_runtime_symbols() (a few microseconds of ctypes overhead, nothing next to
the products measured). GFLOP/s counts 2*batch*m*k*n flops. Times are the
best of 3 rounds of --repeats calls each (see best_times).
"""
import argparse
import ctypes
import os
import sys
import time
import timeit

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import llvmlite.binding as llvm  # noqa: E402

from xla import _core  # noqa: E402

MATMUL_ARGTYPES = [ctypes.c_void_p] * 3 + [ctypes.c_int64] * 4 + [ctypes.c_int32] * 2

# (batch, m, k, n, transpose_lhs, transpose_rhs)
SHAPES = [
    (1, 1024, 1024, 1024, 0, 0),
    (1, 1024, 1024, 1024, 1, 0),
    (1, 1024, 1024, 1024, 0, 1),
    (1, 2048, 2048, 2048, 0, 0),
    (1, 256, 256, 256, 0, 0),
    (1, 4096, 256, 1024, 0, 0),
    (1, 1, 4096, 4096, 0, 0),
    (64, 64, 64, 64, 0, 0),
    (8, 512, 64, 512, 0, 0),
]


def best_times(fns, repeats, rounds=3):
    """The best time of each function. Each runs `repeats` times in a row, then
    the next: OpenBLAS's idle threads busy-wait for a while after a call and
    would slow whatever ran right after it. Rounds alternate the functions so
    that load from other processes on a shared machine hits them alike."""
    best = [float("inf")] * len(fns)
    for _ in range(rounds):
        for i, fn in enumerate(fns):
            time.sleep(0.2)  # the other side's threads go idle
            fn()  # warm-up (threads, caches, page faults)
            for _ in range(repeats):
                start = time.perf_counter()
                fn()
                best[i] = min(best[i], time.perf_counter() - start)
    return best


def matmul_rows(dtype, shapes, repeats):
    symbols = _core.cpu_runtime_symbols()
    name = {np.float32: "__xla_cpu_matmul_f32", np.float64: "__xla_cpu_matmul_f64"}[dtype]
    matmul = ctypes.CFUNCTYPE(None, *MATMUL_ARGTYPES)(symbols[name])
    rng = np.random.default_rng(0)
    for batch, m, k, n, tl, tr in shapes:
        lhs = rng.standard_normal((batch, k, m) if tl else (batch, m, k)).astype(dtype)
        rhs = rng.standard_normal((batch, n, k) if tr else (batch, k, n)).astype(dtype)
        out = np.empty((batch, m, n), dtype)
        a = lhs.transpose(0, 2, 1) if tl else lhs
        b = rhs.transpose(0, 2, 1) if tr else rhs
        np_out = np.empty((batch, m, n), dtype)
        ours, theirs = best_times(
            [lambda: matmul(lhs.ctypes.data, rhs.ctypes.data, out.ctypes.data, batch, m, k, n, tl, tr),
             lambda: np.matmul(a, b, out=np_out)], repeats)
        tol = 1e-3 * np.sqrt(k) if dtype == np.float32 else 1e-10 * np.sqrt(k)
        assert np.allclose(out, np_out, rtol=tol, atol=tol), "result differs from NumPy"
        flops = 2.0 * batch * m * k * n
        label = f"{np.dtype(dtype).name} {batch}x{m}x{k}x{n}" + (" lhsT" if tl else "") + (
            " rhsT" if tr else "")
        print(f"{label:34s} xla {flops / ours / 1e9:7.1f} GFLOP/s   numpy {flops / theirs / 1e9:7.1f}"
              f" GFLOP/s   ratio {theirs / ours:5.2f}")


# (batch, m, k, n, transpose_lhs, transpose_rhs) of the low-precision products.
LOWP_SHAPES = [
    (1, 512, 512, 512, 0, 0),
    (1, 1024, 1024, 1024, 0, 0),
    (1, 1024, 1024, 1024, 1, 0),
    (1, 1024, 1024, 1024, 0, 1),
    (1, 2048, 2048, 2048, 0, 0),
    (1, 4096, 256, 1024, 0, 0),
    (16, 128, 128, 128, 0, 0),
    (1, 32, 4096, 4096, 0, 0),
]


def lowp_rows(shapes, repeats, only=()):
    """s8 x s8 -> s32 and bf16 x bf16 -> f32 products, checked (s8 exactly,
    through f64, exact for these sizes; bf16 against f32) and timed beside
    NumPy's f32 matmul of the widened operands."""
    import ml_dtypes
    symbols = _core.cpu_runtime_symbols()
    rng = np.random.default_rng(0)
    for name, out_dtype in (("s8_s32", np.int32), ("bf16_f32", np.float32)):
        matmul = ctypes.CFUNCTYPE(None, *MATMUL_ARGTYPES)(symbols["__xla_cpu_matmul_" + name])
        for batch, m, k, n, tl, tr in shapes:
            if only and f"{batch}x{m}x{k}x{n}" not in only:
                continue

            def make(shape):
                if name == "s8_s32":
                    return rng.integers(-128, 128, shape).astype(np.int8)
                return rng.standard_normal(shape).astype(ml_dtypes.bfloat16)
            lhs = make((batch, k, m) if tl else (batch, m, k))
            rhs = make((batch, n, k) if tr else (batch, k, n))
            out = np.empty((batch, m, n), out_dtype)
            a = (lhs.transpose(0, 2, 1) if tl else lhs).astype(np.float32)
            b = (rhs.transpose(0, 2, 1) if tr else rhs).astype(np.float32)
            np_out = np.empty((batch, m, n), np.float32)
            ours, theirs = best_times(
                [lambda: matmul(lhs.ctypes.data, rhs.ctypes.data, out.ctypes.data, batch, m, k, n,
                                tl, tr),
                 lambda: np.matmul(a, b, out=np_out)], repeats)
            if name == "s8_s32":
                want = np.matmul(a.astype(np.float64), b.astype(np.float64))
                assert np.array_equal(out, want.astype(np.int64).astype(np.int32)), "s8 result"
            else:
                tol = 1e-4 * np.sqrt(k)
                assert np.allclose(out, np_out, rtol=tol, atol=tol), "bf16 result"
            flops = 2.0 * batch * m * k * n
            label = f"{name} {batch}x{m}x{k}x{n}" + (" lhsT" if tl else "") + (
                " rhsT" if tr else "")
            print(f"{label:34s} xla {flops / ours / 1e9:7.1f} GOP/s   numpy f32 "
                  f"{flops / theirs / 1e9:7.1f} GFLOP/s   ratio {theirs / ours:5.2f}", flush=True)


NOOP_IR = "define void @noop(ptr %table) {\nentry:\n  ret void\n}\n"


def dispatch_overhead():
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    target_machine = llvm.Target.from_default_triple().create_target_machine()
    engine = llvm.create_mcjit_compiler(llvm.parse_assembly(NOOP_IR), target_machine)
    engine.finalize_object()
    noop = engine.get_function_address("noop")
    arrays = [np.zeros(4, np.float32) for _ in range(3)]
    state = _core.ExecutableState(noop, 3, [0, 1], [2])
    args, outputs = arrays[:2], arrays[2:]
    number = 200_000
    rows = [
        ("cpu_execute(fn, [3 arrays])", lambda: _core.cpu_execute(noop, arrays)),
        ("ExecutableState.run([2], [1])", lambda: state.run(args, outputs)),
        ("(reference: empty Python call)", lambda: None),
    ]
    for label, fn in rows:
        best = min(timeit.repeat(fn, number=number, repeat=5)) / number
        print(f"{label:34s} {best * 1e6:6.2f} us per call")
    del engine


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--threads", type=int, default=0,
                        help="runtime threads (default: XLA_CPU_NUM_THREADS or all CPUs)")
    parser.add_argument("--lowp", action="store_true",
                        help="the s8 and bf16 products instead of f32/f64 and dispatch")
    parser.add_argument("--only", action="append", default=[], metavar="BxMxKxN",
                        help="with --lowp, only this shape (repeatable), e.g. 16x128x128x128")
    args = parser.parse_args()
    if args.threads:
        _core.set_cpu_runtime_num_threads(args.threads)
    isa = getattr(_core, "cpu_runtime_isa", lambda: "(one, built for the build machine)")()
    print(f"runtime threads: {_core.cpu_runtime_num_threads()}, CPUs: {os.cpu_count()}, "
          f"kernels: {isa}")
    if args.lowp:
        lowp_rows(LOWP_SHAPES, args.repeats, args.only)
        return
    matmul_rows(np.float32, SHAPES, args.repeats)
    matmul_rows(np.float64, SHAPES[:1], args.repeats)
    dispatch_overhead()


if __name__ == "__main__":
    main()
