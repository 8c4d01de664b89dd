"""scaled-dot (XLA's ScaledDot) on every layer: the text form with jaxlib
0.10.2's operand order (lhs, lhs_scale, rhs, rhs_scale), shape inference
against its parser, the interpreter against XLA's results, and the CPU
backend.

Fixtures: tests/service/fixtures/scaled_dot_xla.npz, written by
gen_scaled_dot.py there (modules jaxlib's parser reads, and the results
XLA:CPU computes for jax.lax.scaled_dot on inputs whose products are exact).
"""
import os

import numpy as np
import pytest

from xla.errors import HloParseError, ShapeError, VerifierError
from xla.hlo.evaluator import evaluate
from xla.hlo.parser import parse_hlo_module
from xla.hlo.shape import Shape
from xla.hlo.shape_functions_compute import infer_scaled_dot_shape
from xla.hlo.verifier import verify_module

FIXTURE = np.load(os.path.join(os.path.dirname(__file__), "service", "fixtures",
                               "scaled_dot_xla.npz"))
CASES = sorted({k.split("/")[0] for k in FIXTURE.files})


def case(name):
    module = parse_hlo_module(str(FIXTURE[name + "/hlo"]))
    args = [FIXTURE[f"{name}/{k}"].astype(p.shape.dtype)
            for k, p in zip(("lhs", "lhs_scale", "rhs", "rhs_scale"), module.entry.parameters)]
    return module, args, FIXTURE[name + "/out"]


@pytest.mark.parametrize("name", CASES)
def test_interpreter_matches_xla(name):
    module, args, expected = case(name)
    verify_module(module)
    assert module.to_text() == parse_hlo_module(module.to_text()).to_text()
    out = np.asarray(evaluate(module, *args))
    # Every product and sum is exact: the results agree to the bit.
    np.testing.assert_array_equal(out.astype(np.float32), expected)


def test_result_shape_left_out_is_inferred_as_xla_does():
    # The fixture's f32 modules have the shape jaxlib's parser inferred.
    for name in ("f32", "batch", "contracting_first"):
        text = str(FIXTURE[name + "/hlo"])
        declared = parse_hlo_module(text).entry.root_instruction.shape.to_text(False)
        left_out = parse_hlo_module(text.replace(f"ROOT r = {declared} ", "ROOT r = "))
        assert left_out.entry.root_instruction.shape.to_text(False) == declared


@pytest.mark.parametrize("scale, message", [
    ("f32[4,3]", r"the lhs scale f32\[4,3\] must be a scalar or have the rank of f32\[4,32\]"),
    ("f32[2]", r"the lhs scale f32\[2\] must be a scalar"),
    ("f32[4,0]", r"the lhs scale f32\[4,0\] must be a scalar"),
])
def test_scales_must_tile_their_operand(scale, message):
    text = str(FIXTURE["f32/hlo"]).replace("lhs_scale = f32[4,2]", f"lhs_scale = {scale}")
    with pytest.raises(VerifierError, match=message):
        verify_module(parse_hlo_module(text))
    with pytest.raises(HloParseError, match="cannot infer the result shape of scaled-dot: "):
        parse_hlo_module(text.replace("ROOT r = f32[4,8] ", "ROOT r = "))


def test_scalar_scales_scale_the_whole_operand():
    text = str(FIXTURE["f32/hlo"]).replace("lhs_scale = f32[4,2]", "lhs_scale = f32[]")
    m = parse_hlo_module(text)
    verify_module(m)
    _, (lhs, _, rhs, rhs_scale), _ = case("f32")
    out = evaluate(m, lhs, np.float32(0.5), rhs, rhs_scale)
    np.testing.assert_array_equal(out, (lhs * 0.5) @ (rhs * np.repeat(rhs_scale, 16, axis=0)))


def test_dot_dimension_errors():
    with pytest.raises(ShapeError, match="contracting dimension 1 of lhs"):
        infer_scaled_dot_shape(Shape.array("f32", [4, 32]), Shape.array("f32", []),
                               Shape.array("f32", [16, 8]), Shape.array("f32", []), (1,), (0,))


@pytest.mark.parametrize("name", CASES)
def test_cpu_runs_scaled_dot_through_the_expander(name):
    # scaled-dot-expander: converts, multiplies by the repeated scales, a
    # dot in the compute type; every product exact, so XLA's bits.
    import xla
    module, args, expected = case(name)
    out = np.asarray(xla.compile(module, "cpu").execute(*args))
    assert out.dtype == module.entry.root_instruction.shape.dtype
    np.testing.assert_array_equal(out.astype(np.float32), expected)