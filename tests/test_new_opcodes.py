"""The inverse trigonometric and hyperbolic opcodes XLA has (acos, acosh,
asin, asinh, atanh, cosh, sinh): parsed, shape-inferred, evaluated, compiled
for the CPU and the GPU emulator, against NumPy in float64; and their
gradients against NumPy's derivative formulas."""
import numpy as np
import pytest

import xla
from xla.frontend.autodiff import VJP_RULES

OPS = [("acos", np.arccos, -0.9, 0.9, lambda x: -1 / np.sqrt(1 - x * x)),
       ("acosh", np.arccosh, 1.1, 5.0, lambda x: 1 / np.sqrt(x * x - 1)),
       ("asin", np.arcsin, -0.9, 0.9, lambda x: 1 / np.sqrt(1 - x * x)),
       ("asinh", np.arcsinh, -3.0, 3.0, lambda x: 1 / np.sqrt(x * x + 1)),
       ("atanh", np.arctanh, -0.9, 0.9, lambda x: 1 / (1 - x * x)),
       ("cosh", np.cosh, -3.0, 3.0, np.sinh),
       ("sinh", np.sinh, -3.0, 3.0, np.cosh)]


@pytest.mark.parametrize("platform", ["interpreter", "cpu", "gpu_emulator"])
@pytest.mark.parametrize("op,fn,lo,hi,grad", OPS, ids=[o[0] for o in OPS])
def test_values_match_numpy(platform, op, fn, lo, hi, grad):
    text = f"HloModule m\nENTRY e {{\n  x = f32[64] parameter(0)\n  ROOT y = {op}(x)\n}}"
    x = np.linspace(lo, hi, 64).astype(np.float32)
    got = xla.compile(text, platform).execute(x)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, fn(x.astype(np.float64)), rtol=2e-6, atol=2e-7)


@pytest.mark.parametrize("op,fn,lo,hi,grad", OPS, ids=[o[0] for o in OPS])
def test_gradients(op, fn, lo, hi, grad):
    assert op in VJP_RULES
    from xla.frontend.tracing import Tracer, current_builder

    def f(x):
        b = current_builder()
        return np.sum(Tracer(b.unary(op, x.op)))
    x = np.linspace(lo, hi, 8).astype(np.float64)
    np.testing.assert_allclose(xla.jit(xla.grad(f))(x), grad(x), rtol=1e-10)


@pytest.mark.parametrize("ty", ["s8", "u8", "s16", "u16", "s32", "u32", "s64", "u64"])
@pytest.mark.parametrize("platform", ["interpreter", "cpu"])
def test_mulhi_is_the_high_half_of_the_double_width_product(ty, platform):
    dtype = np.dtype({"s": "int", "u": "uint"}[ty[0]] + ty[1:])
    info = np.iinfo(dtype)
    edge = [info.min, info.max, 0, 1, -1 if info.min < 0 else 2, info.max // 3, info.min // 3]
    rng = np.random.default_rng(int(ty[1:]))
    x = np.array(edge * len(edge) + list(rng.integers(info.min, info.max, 50, endpoint=True, dtype=dtype)), dtype)
    y = np.array([e for e in edge for _ in edge] + list(rng.integers(info.min, info.max, 50, endpoint=True, dtype=dtype)),
                 dtype)
    n = x.size
    text = (f"HloModule m\nENTRY e {{\n  x = {ty}[{n}] parameter(0)\n  y = {ty}[{n}] parameter(1)\n"
            f"  ROOT h = {ty}[{n}] mulhi(x, y)\n}}")
    bits = dtype.itemsize * 8
    # Python's integers: the exact product, its high half, wrapped to the type.
    want = [((int(a) * int(b)) >> bits) for a, b in zip(x, y)]
    want = np.array([(w + (1 << bits)) % (1 << bits) for w in want], np.uint64).astype(
        np.dtype(f"uint{bits}")).view(dtype)
    np.testing.assert_array_equal(xla.compile(text, platform).execute(x, y), want)
