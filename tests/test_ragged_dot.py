"""ragged-dot (XLA's RaggedDot) on every layer: the text form, shape
inference and the verifier against jaxlib 0.10.2's parser (which infers the
result shape, or refuses), the interpreter against XLA's results, and the
CPU backend.

Fixtures: tests/service/fixtures/ragged_dot_xla.npz, written by
gen_ragged_dot.py there (XLA's inferred shapes and refusals, and the
results XLA:CPU computes for jax.lax.ragged_dot_general).
"""
import os

import numpy as np
import pytest

from xla.errors import HloParseError, ShapeError, VerifierError
from xla.hlo.evaluator import evaluate
from xla.hlo.parser import parse_hlo_module
from xla.hlo.shape_functions_compute import infer_ragged_dot_shape
from xla.hlo.shape import Shape
from xla.hlo.types import PrimitiveType
from xla.hlo.verifier import verify_module

FIXTURE = np.load(os.path.join(os.path.dirname(__file__), "service", "fixtures",
                               "ragged_dot_xla.npz"))
CASES = sorted({k.split("/")[0] for k in FIXTURE.files if not k.startswith("refused/")})
REFUSED = sorted({k.split("/")[1] for k in FIXTURE.files if k.startswith("refused/")})


def case(name):
    module = parse_hlo_module(str(FIXTURE[name + "/hlo"]))
    args = [FIXTURE[f"{name}/{k}"] for k in ("lhs", "rhs", "group_sizes")]
    args = [a.astype(p.shape.dtype) for a, p in zip(args, module.entry.parameters)]
    return module, args, FIXTURE[name + "/out"]


def tolerance(module):
    return {} if module.entry.root_instruction.shape.element_type.is_integer else \
        {"rtol": 1e-5, "atol": 1e-5}


def test_the_fixture_covers_every_kind_of_ragged_dimension():
    assert {c.split("_")[0] for c in CASES} == {"noncontracting", "contracting", "batch"}
    assert len(CASES) >= 12 and len(REFUSED) >= 12


@pytest.mark.parametrize("name", CASES)
def test_shape_inference_agrees_with_xla(name):
    # The fixture's result shape is the one XLA's parser inferred.
    module, _, _ = case(name)
    root = module.entry.root_instruction
    verify_module(module)
    left_out = str(FIXTURE[name + "/hlo"]).replace(f"ROOT r = {root.shape.to_text(False)} ",
                                                  "ROOT r = ")
    if "preferred" not in name and "bf16" not in name:
        inferred = parse_hlo_module(left_out).entry.root_instruction.shape
        assert inferred.to_text(False) == root.shape.to_text(False)
    assert module.to_text() == parse_hlo_module(module.to_text()).to_text()


@pytest.mark.parametrize("name", CASES)
def test_interpreter_matches_xla(name):
    module, args, expected = case(name)
    out = np.asarray(evaluate(module, *args))
    assert out.shape == expected.shape and out.dtype == module.entry.root_instruction.shape.dtype
    np.testing.assert_allclose(out.astype(expected.dtype), expected, **tolerance(module))


@pytest.mark.parametrize("name", REFUSED)
def test_what_xla_refuses_is_refused(name):
    text = str(FIXTURE[f"refused/{name}/hlo"])
    # XLA's parser fails inferring the shape; so does ours, at the instruction.
    with pytest.raises(HloParseError, match=r"^6:8: error: cannot infer the result shape of "
                                            r"ragged-dot: "):
        parse_hlo_module(text)
    # Declared, the shape is refused by the verifier.
    declared = text.replace("ROOT r = ragged-dot", "ROOT r = f32[11,7] ragged-dot")
    with pytest.raises(VerifierError, match="instruction %r in computation %e: "):
        verify_module(parse_hlo_module(declared))


@pytest.mark.parametrize("args, message", [
    ((Shape.array("f32", [11, 5]), Shape.array("f32", [3, 5, 7]), Shape.array("s32", [3]),
      (1,), (1,), (), (), (0,), ()),
     "a non-contracting lhs ragged dimension needs exactly one rhs group dimension, got 0"),
    ((Shape.array("f32", [11, 5]), Shape.array("f32", [5, 7]), Shape.array("s32", [3]),
      (1,), (0,), (), (), (1,), (0,)),
     "a contracting lhs ragged dimension takes no rhs group dimension"),
    ((Shape.array("f32", [11, 5]), Shape.array("f32", [3, 5, 7]), Shape.array("s32", [2]),
      (1,), (1,), (), (), (0,), (0,)),
     r"rhs group dimension 0 of f32\[3,5,7\] has size 3 but group sizes s32\[2\] give 2 groups"),
    ((Shape.array("f32", [2, 11, 5]), Shape.array("f32", [3, 2, 5, 7]), Shape.array("s32", [3, 3]),
      (2,), (2,), (0,), (1,), (1,), (0,)),
     r"group sizes s32\[3,3\] must have dimensions \[2,3\]"),
    ((Shape.array("f32", [11, 5]), Shape.array("f32", [3, 5, 7]), Shape.array("s32", []),
      (1,), (1,), (), (), (0,), (0,)),
     r"group sizes s32\[\] need a group dimension"),
    ((Shape.array("f32", [11, 5]), Shape.array("f32", [3, 5, 7]), Shape.array("s32", [3]),
      (1,), (1,), (), (), (0, 1), (0,)),
     "needs exactly one lhs ragged dimension, got 2"),
])
def test_shape_errors_say_what_does_not_fit(args, message):
    with pytest.raises(ShapeError, match=message):
        infer_ragged_dot_shape(*args)


def test_preferred_element_type():
    lhs, rhs, gs = Shape.array("bf16", [9, 8]), Shape.array("bf16", [2, 8, 5]), Shape.array("s32", [2])
    dims = ((1,), (1,), (), (), (0,), (0,))
    assert infer_ragged_dot_shape(lhs, rhs, gs, *dims).to_text(False) == "bf16[9,5]"
    out = infer_ragged_dot_shape(lhs, rhs, gs, *dims, preferred_element_type=PrimitiveType.F32)
    assert out.to_text(False) == "f32[9,5]"


def test_rows_outside_every_group_are_zero_even_with_inf_and_nan():
    module, args, _ = case("noncontracting_partial")
    lhs, rhs, sizes = args
    covered = int(sizes.sum())
    lhs = lhs.copy()
    lhs[covered:] = np.inf   # rows in no group
    rhs = rhs.copy()
    rhs[1] = np.nan          # the slice of group 1, which is empty
    out = np.asarray(evaluate(module, lhs, rhs, sizes))
    assert np.all(out[covered:] == 0) and np.all(np.isfinite(out[:covered]))


@pytest.mark.parametrize("name", CASES)
def test_cpu_runs_ragged_dot_or_names_it(name):
    # The CPU runs what ragged-dot-expander expands (dots and selects),
    # matching XLA's results; it would name the op for anything else.
    import xla
    from xla.errors import UnimplementedError
    from xla.service.ragged_dot_expander import _expandable
    module, args, expected = case(name)
    if not _expandable(module.entry.root_instruction):
        with pytest.raises(UnimplementedError, match=r"does not support ragged-dot \(instruction r\)"):
            xla.compile(module, "cpu")
        return
    out = np.asarray(xla.compile(module, "cpu").execute(*args))
    assert out.dtype == module.entry.root_instruction.shape.dtype
    np.testing.assert_allclose(out.astype(expected.dtype), expected, **tolerance(module))


def test_the_expander_covers_every_form():
    # Batch dimensions with a ragged non-contracting or contracting one,
    # group sizes per prefix position, several contracting dimensions: all
    # expanded (the CPU ran 9 of the 14 cases before).
    from xla.service.ragged_dot_expander import _expandable
    expanded = {n for n in CASES if _expandable(case(n)[0].entry.root_instruction)}
    assert expanded == set(CASES)
    assert len(CASES) >= 14


def test_the_cpu_keeps_rows_outside_every_group_zero():
    import xla
    module, args, _ = case("noncontracting_partial")
    lhs, rhs, sizes = args
    covered = int(sizes.sum())
    lhs = lhs.copy()
    lhs[covered:] = np.inf
    rhs = rhs.copy()
    rhs[1] = np.nan
    out = np.asarray(xla.compile(module, "cpu").execute(lhs, rhs, sizes))
    assert np.all(out[covered:] == 0) and np.all(np.isfinite(out[:covered]))
