"""Small f32/f64 matrix products as a tiled LLVM IR GEMM
(xla/backends/cpu/emit_small_gemm.py) instead of a call to the runtime's
Eigen matmul: which dots take it, and results against NumPy's, including
shapes whose last row and column blocks overlap the ones before."""
import os

import numpy as np
import pytest

import xla
from xla import _core
from xla.hlo.parser import parse_hlo_module

from gemm_paths import calls_runtime_tiled_gemm, splits_over_the_pool, use_llvm_kernel

NP = {"f32": np.float32, "f64": np.float64}
DIMS = "lhs_contracting_dims={1}, rhs_contracting_dims={0}"


def compile_dot(m, k, n, et, dims=DIMS, lhs=None, rhs=None):
    s = lambda d: ",".join(map(str, d))  # noqa: E731
    text = (f"HloModule m\nENTRY e {{\n  a = {et}[{s(lhs or (m, k))}] parameter(0)\n"
            f"  b = {et}[{s(rhs or (k, n))}] parameter(1)\n"
            f"  ROOT d = {et}[{m},{n}] dot(a, b), {dims}\n}}\n")
    return xla.compile(parse_hlo_module(text), "cpu")


def uses_runtime_matmul(exe, et):
    return f"__xla_cpu_matmul_{et}" in exe.ir_text


@pytest.mark.parametrize("et", ["f32", "f64"])
@pytest.mark.parametrize("m, k, n", [
    (4, 1, 24), (60, 50, 70), (5, 7, 25), (63, 63, 63), (17, 2, 31), (4, 100, 24),
    (9, 3, 30), (6, 5, 100), (5, 4, 52),
    # fewer columns than a block: the last vector masked (or whole: 8, 16;
    # f32 4 and 7, f64 7: fewer columns than a vector)
    (8, 5, 11), (9, 300, 7), (5, 4, 8), (6, 3, 9), (7, 2, 16), (512, 128, 10), (4, 6, 4)])
def test_small_products_are_tiled_kernels_with_numpys_values(m, k, n, et, tiled_gemm_path):
    exe = compile_dot(m, k, n, et)
    assert not uses_runtime_matmul(exe, et)
    # (k = 1: no dot left, the simplifier made it a multiply)
    assert calls_runtime_tiled_gemm(exe) == (tiled_gemm_path == "runtime" and k > 1)
    rng = np.random.default_rng(m * k * n)
    a, b = rng.standard_normal((m, k)).astype(NP[et]), rng.standard_normal((k, n)).astype(NP[et])
    got = exe.execute(a, b)
    want = a.astype(np.float64) @ b.astype(np.float64)
    tol = 1e-12 if et == "f64" else 1e-5
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.sqrt(k))
    assert got.dtype == NP[et]


@pytest.mark.parametrize("m, k, n, why", [
    (3, 5, 40, "fewer rows than a block"),
    (8, 5, 3, "fewer than 4 columns"),
    (129, 400, 300, "more multiply-adds than the tiled kernel takes, its rhs over 256 KB"),
])
def test_other_products_call_the_runtime(m, k, n, why):
    exe = compile_dot(m, k, n, "f64")
    assert uses_runtime_matmul(exe, "f64"), why
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((m, k)), rng.standard_normal((k, n))
    np.testing.assert_allclose(exe.execute(a, b), a @ b, rtol=1e-12, atol=1e-12)


def test_a_transposed_operand_calls_the_runtime():
    # a.T @ b, read in place by the runtime with its transpose flag.
    exe = compile_dot(40, 30, 24, "f64", dims="lhs_contracting_dims={0}, rhs_contracting_dims={0}",
                      lhs=(30, 40), rhs=(30, 24))
    assert uses_runtime_matmul(exe, "f64")


@pytest.mark.parametrize("et", ["f32", "f64"])
@pytest.mark.parametrize("m, k, n", [(8, 300, 300), (20, 256, 400), (16, 256, 300)])
def test_products_the_runtime_may_thread_are_tiled_on_one_thread(m, k, n, et, tiled_gemm_path):
    # At least 64^3 multiply-adds and an rhs over MAX_SPLIT_RHS_BYTES (256
    # KB: f64 300x300 720 KB, f32 256x300 307 KB): the driver asks the pool
    # for its thread count; with one thread (where the runtime computes the
    # product serially too) it runs the tiled kernel, with more the
    # runtime's matmul. Both give NumPy's values.
    exe = compile_dot(m, k, n, et)
    assert uses_runtime_matmul(exe, et) and "__xla_cpu_runtime_num_threads" in exe.ir_text
    rng = np.random.default_rng(m + k + n)
    a, b = rng.standard_normal((m, k)).astype(NP[et]), rng.standard_normal((k, n)).astype(NP[et])
    want = a.astype(np.float64) @ b.astype(np.float64)
    tol = 1e-12 if et == "f64" else 1e-5
    default = _core.cpu_runtime_num_threads()
    try:
        for threads in (1, 2):
            _core.set_cpu_runtime_num_threads(threads)
            got = exe.execute(a, b)
            np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.sqrt(k))
    finally:
        _core.set_cpu_runtime_num_threads(0)
    assert _core.cpu_runtime_num_threads() == default


@pytest.mark.parametrize("et", ["f32", "f64"])
@pytest.mark.parametrize("m, k, n", [(64, 64, 64), (100, 100, 100), (128, 128, 128), (90, 70, 66),
                                     (512, 128, 10), (512, 256, 128), (2001, 64, 40)])
def test_products_with_a_small_rhs_are_tiled_at_every_thread_count(m, k, n, et, tiled_gemm_path):
    # At least 64^3 multiply-adds and an rhs of at most 256 KB (f64
    # 256x128 is 256 KB): the tiled kernel at every thread count, from 2^22
    # multiply-adds (512x256x128, 2001x64x40) its row blocks through the
    # pool's parallel_for; each element is computed by the same
    # instructions on whichever thread, so the bits are the same at 1, 2
    # and 3 threads, and NumPy's values.
    exe = compile_dot(m, k, n, et)
    assert not uses_runtime_matmul(exe, et)
    assert splits_over_the_pool(exe) == (m * k * n >= 1 << 22)
    rng = np.random.default_rng(m + k + n)
    a, b = rng.standard_normal((m, k)).astype(NP[et]), rng.standard_normal((k, n)).astype(NP[et])
    want = a.astype(np.float64) @ b.astype(np.float64)
    tol = 1e-12 if et == "f64" else 1e-5
    results = []
    try:
        for threads in (1, 2, 3):
            _core.set_cpu_runtime_num_threads(threads)
            got = exe.execute(a, b)
            np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.sqrt(k))
            results.append(np.asarray(got).tobytes())
    finally:
        _core.set_cpu_runtime_num_threads(0)
    assert len(set(results)) == 1


@pytest.mark.parametrize("bits, width", [(512, 8), (256, 4)])
def test_the_vector_width_follows_the_targets(monkeypatch, bits, width):
    # The JIT emits for the host (CpuCompiler.vector_bits: 512 where its
    # features include AVX-512); 512-bit vectors only on such a target, and
    # a product too narrow for a block of 512-bit vectors keeps 256-bit ones.
    from xla.backends.cpu.compiler import CpuCompiler
    monkeypatch.setattr(CpuCompiler, "vector_bits", lambda self: bits)

    def kernel_vectors(n):
        text = (f"HloModule m\nENTRY e {{\n  a = f64[8,6] parameter(0)\n"
                f"  b = f64[6,{n}] parameter(1)\n  ROOT d = f64[8,{n}] dot(a, b), {DIMS}\n}}\n")
        _, emitted = CpuCompiler().emit(parse_hlo_module(text), {})
        kernels = "".join(t for t in emitted.kernels.values() if "llvm.fmuladd" in t)
        return {w for w in (4, 8) if f"<{w} x double>" in kernels}

    assert kernel_vectors(40) == {width}
    assert kernel_vectors(20) == {4}


def test_a_narrow_product_next_to_a_wide_one_is_tiled_too(llvm_tiled_gemm):
    """Two products of one module that differ in sizes only share a
    shape-generic kernel where they can; one of fewer columns than a block
    (x @ W1 then h @ W2, an MLP's layers) gets a kernel of its own."""
    text = (f"HloModule m\nENTRY e {{\n  x = f64[512,256] parameter(0)\n"
            f"  w1 = f64[256,128] parameter(1)\n  w2 = f64[128,10] parameter(2)\n"
            f"  h = f64[512,128] dot(x, w1), {DIMS}\n  ROOT z = f64[512,10] dot(h, w2), {DIMS}\n}}\n")
    exe = xla.compile(parse_hlo_module(text), "cpu")
    assert not uses_runtime_matmul(exe, "f64")
    rng = np.random.default_rng(7)
    x, w1, w2 = (rng.standard_normal(s) for s in ((512, 256), (256, 128), (128, 10)))
    np.testing.assert_allclose(exe.execute(x, w1, w2), (x @ w1) @ w2, rtol=1e-12, atol=1e-10)


@pytest.mark.skipif(os.uname().machine not in ("x86_64", "AMD64"),
                    reason="bit equality holds where the runtime's variant and LLVM both fuse "
                           "multiply-adds or both do not: x86-64 (the baseline variant has no FMA)")
@pytest.mark.parametrize("et", ["f32", "f64"])
@pytest.mark.parametrize("batch, m, k, n", [((), 60, 50, 70), ((), 5, 7, 25), ((), 9, 300, 7),
                                            ((), 512, 256, 128), ((3,), 37, 19, 53),
                                            ((2, 3), 6, 33, 130), ((4,), 128, 32, 128)])
def test_the_runtimes_tiled_gemm_gives_the_kernels_bits(monkeypatch, batch, m, k, n, et):
    # The runtime's tiled GEMM walks the product as the LLVM kernel does:
    # each element the sum over p in increasing order, one fused
    # multiply-add each (whatever the vector width or the tile: both use
    # 512-bit vectors here where the kernel may use 256-bit ones).
    nb = len(batch)
    bd = ",".join(map(str, range(nb)))
    s = lambda d: ",".join(map(str, d))  # noqa: E731
    batching = f"lhs_batch_dims={{{bd}}}, rhs_batch_dims={{{bd}}}, " if nb else ""
    text = (f"HloModule m\nENTRY e {{\n  a = {et}[{s(batch + (m, k))}] parameter(0)\n"
            f"  b = {et}[{s(batch + (k, n))}] parameter(1)\n"
            f"  ROOT d = {et}[{s(batch + (m, n))}] dot(a, b), {batching}"
            f"lhs_contracting_dims={{{nb + 1}}}, rhs_contracting_dims={{{nb}}}\n}}\n")
    rng = np.random.default_rng(m + k + n)
    a = rng.standard_normal(batch + (m, k)).astype(NP[et])
    b = rng.standard_normal(batch + (k, n)).astype(NP[et])
    runtime = xla.compile(parse_hlo_module(text), "cpu")
    assert calls_runtime_tiled_gemm(runtime) and "llvm.fmuladd" not in runtime.ir_text
    got = np.asarray(runtime.execute(a, b))
    use_llvm_kernel(monkeypatch)
    kernel = xla.compile(parse_hlo_module(text), "cpu")
    assert "llvm.fmuladd" in kernel.ir_text and not calls_runtime_tiled_gemm(kernel)
    assert got.tobytes() == np.asarray(kernel.execute(a, b)).tobytes()
    tol = 1e-12 if et == "f64" else 1e-5
    np.testing.assert_allclose(got, a.astype(np.float64) @ b.astype(np.float64),
                               rtol=tol, atol=tol * np.sqrt(k))
