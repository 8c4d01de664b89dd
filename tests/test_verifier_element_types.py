"""The verifier accepts and rejects element types as XLA does (issue 13: it
was looser, then stricter). The verdicts are XLA's own, from jaxlib 0.10.2
(tests/service/fixtures/gen_element_type_verdicts.py): 335 small modules,
every unary and binary elementwise op, compare, clamp, select and dot over
pred, s32, u8, f32, bf16 and c64.

Facts they record: add and multiply are defined on pred (as or and and),
subtract, divide, remainder, power and the shifts are not; abs and sign
refuse unsigned types; cbrt refuses complex; a dot may mix element types
(XLA converts the operands to the result type)."""
import json
import pathlib

import numpy as np
import pytest

import xla
from xla.errors import XlaError

FIXTURE = pathlib.Path(__file__).resolve().parent / "service" / "fixtures" / "element_type_verdicts.json"
VERDICTS = json.loads(FIXTURE.read_text())

# Dots XLA accepts whose result type is narrower than an operand's (an f32
# operand with an s32 result, c64 with f32, anything but pred with a pred
# result): XLA's conversion semantics for them are not documented, so the
# verifier refuses them rather than guess.
NARROWING_DOTS = {
    f"{a}x{b}->{r}" for a in ("pred", "s32", "u8", "f32", "bf16", "c64")
    for b in ("pred", "s32", "u8", "f32", "bf16", "c64") for r in (a, b)
    if any((t == "c64" and r != "c64") or (t in ("f32", "bf16") and r in ("pred", "s32", "u8"))
           or (t != "pred" and r == "pred") for t in (a, b))
}


def ours(text):
    try:
        xla.verify_module(xla.parse_hlo_module(text))
        return True
    except XlaError:
        return False


def test_the_verifier_agrees_with_xla():
    assert len(VERDICTS) == 335
    disagree = [(key, accepted, why) for key, text, accepted, why in VERDICTS
                if ours(text) != accepted and not (key[0] == "dot" and key[1] in NARROWING_DOTS)]
    assert disagree == []


def test_narrowing_dots_are_refused_with_a_reason():
    refused = [(key, text) for key, text, accepted, _ in VERDICTS
               if key[0] == "dot" and key[1] in NARROWING_DOTS]
    assert len(refused) == 26
    for key, text in refused:
        with pytest.raises(XlaError, match="cannot produce element type"):
            xla.verify_module(xla.parse_hlo_module(text))


@pytest.mark.parametrize("platform", ["interpreter", "cpu"])
def test_what_xla_accepts_runs_as_xla_runs_it(platform):
    """add/multiply on pred are or/and; a dot of f32 and s32 converts the
    s32 operand (XLA inserts the convert; values from NumPy in f64)."""
    x = np.array([0, 0, 1, 1], bool)
    z = np.array([0, 1, 0, 1], bool)
    for op, want in (("add", [0, 1, 1, 1]), ("multiply", [0, 0, 0, 1])):
        text = (f"HloModule m\nENTRY e {{\n  x = pred[4] parameter(0)\n  z = pred[4] parameter(1)\n"
                f"  ROOT y = pred[4] {op}(x, z)\n}}\n")
        np.testing.assert_array_equal(xla.compile(text, platform).execute(x, z), np.array(want, bool))
    a = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    b = np.arange(-4, 4, dtype=np.int32).reshape(4, 2)
    dot = ("HloModule m\nENTRY e {\n  a = f32[3,4] parameter(0)\n  b = s32[4,2] parameter(1)\n"
           "  ROOT d = f32[3,2] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n")
    np.testing.assert_allclose(xla.compile(dot, platform).execute(a, b),
                               a.astype(np.float64) @ b.astype(np.float64), rtol=1e-5)
