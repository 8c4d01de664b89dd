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
