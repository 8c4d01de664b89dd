"""Complex math functions on the CPU backend (elemental_ir_emitter.py):
expm1, log1p, tanh, tan, logistic and power of c64/c128 against the
interpreter (NumPy's complex functions), over random values, values near 0
(where expm1 and tanh keep relative accuracy), large real parts (tanh must
not overflow) and zeros (power's special cases)."""
import numpy as np
import pytest

import xla

RNG = np.random.default_rng(0)
VALUES = np.concatenate([
    RNG.standard_normal(300) * 3 + 1j * RNG.standard_normal(300) * 3,
    [0, 1e-5 + 1e-5j, -1e-6j, 2e-4 - 1e-3j, 30 + 1j, -30 - 2j, 5 + 40j, 1, -1, 0.5j, 100,
     -25 + 0.3j, 800 + 0.1j],
])
# (Not cbrt: XLA's verifier refuses it on complex numbers, and so does ours;
# tests/test_verifier_element_types.py.)
UNARY = ["exponential-minus-one", "log-plus-one", "tanh", "tan", "logistic"]
TYPES = [("c64", np.complex64, 3e-6), ("c128", np.complex128, 1e-13)]


def run_both(text, args):
    got = xla.compile(text, backend="cpu").execute(*args)
    with np.errstate(all="ignore"):
        want = xla.compile(text, backend="interpreter").execute(*args)
    return got, want


@pytest.mark.parametrize("ty,dtype,tol", TYPES, ids=[t[0] for t in TYPES])
@pytest.mark.parametrize("op", UNARY)
def test_complex_unary(op, ty, dtype, tol):
    x = VALUES.astype(dtype)
    n = len(x)
    text = (f"HloModule m\nENTRY %main (x: {ty}[{n}]) -> {ty}[{n}] {{\n"
            f"  %x = {ty}[{n}] parameter(0)\n  ROOT %r = {ty}[{n}] {op}(%x)\n}}\n")
    got, want = run_both(text, [x])
    assert got.dtype == want.dtype
    # Relative to each element's magnitude: values near 0 must keep their digits.
    scale = np.maximum(np.abs(want), np.finfo(dtype).tiny)
    finite = np.isfinite(want)
    err = np.abs(got[finite] - want[finite]) / scale[finite]
    assert err.max() <= tol, (op, x[finite][err.argmax()], got[finite][err.argmax()],
                              want[finite][err.argmax()])
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))


@pytest.mark.parametrize("ty,dtype,tol", TYPES, ids=[t[0] for t in TYPES])
def test_complex_power(ty, dtype, tol):
    z = VALUES.astype(dtype)
    w = (VALUES[::-1] * 0.3).astype(dtype)
    # Special cases: w = 0 gives 1 (also for z = 0); z = 0 gives 0 for a
    # real positive w and NaN otherwise.
    z = np.concatenate([z, np.array([0, 0, 0, 2 + 1j], dtype)])
    w = np.concatenate([w, np.array([0, 2.5, -1 + 1j, 0], dtype)])
    n = len(z)
    text = (f"HloModule m\nENTRY %main (x: {ty}[{n}], y: {ty}[{n}]) -> {ty}[{n}] {{\n"
            f"  %x = {ty}[{n}] parameter(0)\n  %y = {ty}[{n}] parameter(1)\n"
            f"  ROOT %r = {ty}[{n}] power(%x, %y)\n}}\n")
    got, want = run_both(text, [z, w])
    assert got[-4] == 1 and got[-3] == 0 and np.isnan(got[-2]) and got[-1] == 1
    finite = np.isfinite(want)
    np.testing.assert_allclose(got[finite], want[finite], rtol=tol * 10, atol=tol)
