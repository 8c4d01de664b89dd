"""dot-operand-layouts: transposes feeding the runtime's matmul become
bitcasts it reads with its transpose flags (no copy kernel), for every
operand form dot_decomposer produces; results against NumPy."""
import numpy as np
import pytest

import xla
from xla.hlo.parser import parse_hlo_module

NP = {"f32": np.float32, "f64": np.float64, "c64": np.complex64, "s32": np.int32}


def compile_dot(lhs, rhs, out, dims, et="f32"):
    s = lambda d: ",".join(map(str, d))  # noqa: E731
    text = (f"HloModule m\nENTRY e {{\n  a = {et}[{s(lhs)}] parameter(0)\n"
            f"  b = {et}[{s(rhs)}] parameter(1)\n"
            f"  ROOT d = {et}[{s(out)}] dot(a, b), {dims}\n}}\n")
    return xla.compile(parse_hlo_module(text), "cpu")


def values(shape, et, rng):
    if et == "s32":
        return rng.integers(-50, 50, shape).astype(np.int32)
    x = rng.standard_normal(shape)
    if et == "c64":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(NP[et])


CASES = [
    # (lhs, rhs, out, dims, numpy)
    ((64, 48), (64, 40), (48, 40), "lhs_contracting_dims={0}, rhs_contracting_dims={0}",
     lambda a, b: a.T @ b),
    ((48, 64), (40, 64), (48, 40), "lhs_contracting_dims={1}, rhs_contracting_dims={1}",
     lambda a, b: a @ b.T),
    ((64, 48), (40, 64), (48, 40), "lhs_contracting_dims={0}, rhs_contracting_dims={1}",
     lambda a, b: a.T @ b.T),
    ((300, 200), (300,), (200,), "lhs_contracting_dims={0}, rhs_contracting_dims={0}",
     lambda a, b: a.T @ b),
    ((3, 64, 48), (3, 40, 64), (3, 48, 40),
     "lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={1}, rhs_contracting_dims={2}",
     lambda a, b: np.swapaxes(a, 1, 2) @ np.swapaxes(b, 1, 2)),
]


@pytest.mark.parametrize("et", ["f32", "f64", "c64", "s32"])
@pytest.mark.parametrize("lhs,rhs,out,dims,ref", CASES)
def test_transposed_operands_are_read_in_place(lhs, rhs, out, dims, ref, et):
    exe = compile_dot(lhs, rhs, out, dims, et)
    ops = [i.opcode for i in exe.module.entry.instructions]
    assert "transpose" not in ops and "fusion" not in ops, ops
    assert "bitcast" in ops
    assert f"__xla_cpu_matmul_{et}" in exe.ir_text
    rng = np.random.default_rng(len(lhs) + len(rhs))
    a, b = values(lhs, et, rng), values(rhs, et, rng)
    got = np.asarray(exe.execute(a, b))
    want = ref(a.astype(np.complex128 if et == "c64" else np.float64),
               b.astype(np.complex128 if et == "c64" else np.float64))
    if et == "s32":
        np.testing.assert_array_equal(got, want.astype(np.int64))
    else:
        np.testing.assert_allclose(got, want, rtol=1e-4 if et in ("f32", "c64") else 1e-12,
                                   atol=1e-4 if et in ("f32", "c64") else 1e-12)


def test_a_transpose_with_other_users_stays_for_them():
    text = """HloModule m
ENTRY e {
  a = f32[8,6] parameter(0)
  b = f32[8,5] parameter(1)
  t = f32[6,8] transpose(a), dimensions={1,0}
  d = f32[6,5] dot(t, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  n = f32[6,8] negate(t)
  ROOT r = (f32[6,5], f32[6,8]) tuple(d, n)
}
"""
    exe = xla.compile(parse_hlo_module(text), "cpu")
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((8, 6)).astype(np.float32), rng.standard_normal((8, 5)).astype(np.float32)
    d, n = (np.asarray(x) for x in exe.execute(a, b))
    np.testing.assert_allclose(d, a.T @ b, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(n, -a.T)
