"""Small f32/f64 matrix products as a tiled LLVM IR GEMM
(xla/backends/cpu/emit_small_gemm.py) instead of a call to the runtime's
Eigen matmul: which dots take it, and results against NumPy's, including
shapes whose last row and column blocks overlap the ones before."""
import numpy as np
import pytest

import xla
from xla.hlo.parser import parse_hlo_module

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
    (4, 1, 24), (60, 50, 70), (5, 7, 25), (63, 63, 63), (17, 2, 31), (4, 100, 24)])
def test_small_products_are_tiled_kernels_with_numpys_values(m, k, n, et):
    exe = compile_dot(m, k, n, et)
    assert not uses_runtime_matmul(exe, et)
    rng = np.random.default_rng(m * k * n)
    a, b = rng.standard_normal((m, k)).astype(NP[et]), rng.standard_normal((k, n)).astype(NP[et])
    got = exe.execute(a, b)
    want = a.astype(np.float64) @ b.astype(np.float64)
    tol = 1e-12 if et == "f64" else 1e-5
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.sqrt(k))
    assert got.dtype == NP[et]


@pytest.mark.parametrize("m, k, n, why", [
    (3, 5, 40, "fewer rows than a block"),
    (8, 5, 11, "fewer columns than a block"),
    (64, 64, 64, "as many multiply-adds as the runtime spreads over threads"),
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
