"""Modules XLA's verifier accepts that ours once refused (issue 14), each
also run on the interpreter and the CPU with the expected values computed
here with NumPy.

* ``after-all`` takes operands of any shape (XLA's
  ``ShapeVerifier::HandleAfterAll`` checks only that the result is a
  token; ``ShapeInference::InferAfterAllShape``, which wants tokens, is the
  builders' check, ``shape_inference.infer_after_all_shape`` here).
* ``allow_mixed_precision`` (XLA's HloVerifierOpts; HloTestBase turns it
  on): operands of different floating-point precisions, and a declared
  result whose precision differs from the inferred one, are accepted with
  it and refused without it (naming the instruction), as XLA's
  ``CheckMixedPrecisionOperands`` and ``CheckShape`` do.
"""
import numpy as np
import pytest

import xla
from xla.errors import ShapeError, VerifierError
from xla.hlo import shape_functions, shape_inference
from xla.hlo.shape import Shape

AFTER_ALL_ON_ARRAYS = """HloModule m
ENTRY %main (x: f32[4], y: s32[2]) -> f32[4] {
  %x = f32[4]{0} parameter(0)
  %y = s32[2]{0} parameter(1)
  %t0 = token[] after-all()
  %t = token[] after-all(f32[4]{0} %x, s32[2]{0} %y, token[] %t0)
  %n = f32[4]{0} negate(f32[4]{0} %x)
  ROOT %r = f32[4]{0} add-dependency(f32[4]{0} %n, token[] %t)
}
"""


def test_after_all_accepts_array_operands():
    xla.verify_module(xla.parse_hlo_module(AFTER_ALL_ON_ARRAYS))


def test_after_all_result_must_still_be_a_token():
    bad = AFTER_ALL_ON_ARRAYS.replace("%t = token[] after-all", "%t = f32[4]{0} after-all")
    bad = bad.replace("token[] %t)", "f32[4]{0} %t)")
    with pytest.raises(VerifierError, match=r"instruction %t in computation %main.*declared shape f32\[4\]"):
        xla.verify_module(xla.parse_hlo_module(bad))


def test_builders_still_want_tokens():
    with pytest.raises(ShapeError, match="operand 1 has shape f32"):
        shape_inference.infer_after_all_shape([Shape.token(), Shape.array("f32", (4,))])


@pytest.mark.parametrize("platform", ["interpreter", "cpu"])
def test_after_all_on_arrays_runs(platform):
    x = np.array([1.5, -2.0, 0.0, 3.25], np.float32)
    y = np.array([7, 8], np.int32)
    got = xla.compile(AFTER_ALL_ON_ARRAYS, platform).execute(x, y)
    np.testing.assert_array_equal(np.asarray(got), -x)


def module(body, params="x = f16[4] parameter(0)\n  y = f32[4] parameter(1)"):
    return f"HloModule m\nENTRY e {{\n  {params}\n  {body}\n}}\n"


MIXED_ACCEPTED = {
    "maximum": "ROOT r = f32[4] maximum(x, y)",
    "narrower result": "ROOT r = f16[4] maximum(x, y)",
    "compare": "ROOT r = pred[4] compare(x, y), direction=GT",
    "select": "p = pred[4] compare(y, y), direction=EQ\n  ROOT r = f32[4] select(p, x, y)",
    "clamp": "ROOT r = f32[4] clamp(x, y, y)",
    "pad": "z = f32[] constant(0)\n  ROOT r = f32[6] pad(x, z), padding=1_1",
    "concatenate": "ROOT r = f32[8] concatenate(x, y), dimensions={0}",
    "dynamic-update-slice": "i = s32[] constant(0)\n  ROOT r = f32[4] dynamic-update-slice(y, x, i)",
    "unary result": "ROOT r = bf16[4] negate(y)",
    "reshape result": "ROOT r = f16[2,2] reshape(y)",
}


@pytest.mark.parametrize("case", sorted(MIXED_ACCEPTED))
def test_mixed_precision_needs_the_option(case):
    text = module(MIXED_ACCEPTED[case])
    xla.verify_module(xla.parse_hlo_module(text), allow_mixed_precision=True)
    with pytest.raises(VerifierError, match=r"instruction %r in computation %e: "):
        xla.verify_module(xla.parse_hlo_module(text))


@pytest.mark.parametrize("body,pattern", [
    # Precision only: an integer is no float, dimensions still count.
    ("z = s32[4] parameter(2)\n  ROOT r = f32[4] maximum(y, z)", "operand 1 has shape s32"),
    ("ROOT r = s32[4] negate(y)", "declared shape s32"),
    ("z = f32[5] parameter(2)\n  ROOT r = f32[4] maximum(x, z)", "operand 1 has shape f32\\[5\\]"),
    # Results that are their input's bits compare exactly (XLA's CheckShape).
    ("t = (f16[4], f32[4]) tuple(x, y)\n  ROOT r = f32[4] get-tuple-element(t), index=0",
     "declared shape f32\\[4\\] does not match"),
])
def test_the_option_ignores_precision_only(body, pattern):
    with pytest.raises(VerifierError, match=pattern):
        xla.verify_module(xla.parse_hlo_module(module(body)), allow_mixed_precision=True)


def test_pass_through_ops_mix_precisions_without_the_option():
    # XLA's CheckMixedPrecisionOperands exempts tuple, call, while, dot...
    xla.verify_module(xla.parse_hlo_module(module("ROOT r = (f16[4], f32[4]) tuple(x, y)")))


@pytest.mark.parametrize("platform", ["interpreter", "cpu"])
@pytest.mark.parametrize("case", sorted(MIXED_ACCEPTED))
def test_mixed_precision_runs(case, platform):
    import ml_dtypes
    x = np.array([1.5, -2.0, 3.25, 0.1], np.float16)
    y = np.array([1.0, -3.0, 4.0, 0.1], np.float32)
    xf = x.astype(np.float32)   # exact
    want = {
        "maximum": np.maximum(xf, y),
        "narrower result": np.maximum(xf, y).astype(np.float16),
        "compare": xf > y,
        "select": xf,
        "clamp": np.minimum(np.maximum(xf, y), y),
        "pad": np.pad(xf, 1),
        "concatenate": np.concatenate([xf, y]),
        "dynamic-update-slice": xf,
        "unary result": (-y).astype(ml_dtypes.bfloat16),
        "reshape result": y.reshape(2, 2).astype(np.float16),
    }[case]
    got = np.asarray(xla.compile(module(MIXED_ACCEPTED[case]), platform,
                                 allow_mixed_precision=True).execute(x, y))
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def test_higher_precision_is_xlas_order():
    # primitive_util::HigherPrecisionType: exponent range, then significand.
    from xla.hlo.types import PrimitiveType as P
    hp = shape_functions.higher_precision_type
    assert hp(P.F16, P.BF16) is P.BF16 and hp(P.BF16, P.F16) is P.BF16   # range wins
    assert hp(P.F8E5M2, P.F16) is P.F16       # same range, more significand
    assert hp(P.BF16, P.F32) is P.F32 and hp(P.F64, P.F32) is P.F64
    text = module("ROOT r = bf16[4] maximum(x, y)", "x = f16[4] parameter(0)\n  y = bf16[4] parameter(1)")
    m = xla.parse_hlo_module(text.replace("ROOT r = bf16[4] maximum", "ROOT r = maximum"))
    assert m.entry.root_instruction.shape.to_text(False) == "bf16[4]"


ADD_F32 = """add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
"""
MIXED_REDUCERS = {
    # bf16 inputs, an f32 init and accumulator (XLA's tests reduce so).
    "reduce bf16 into f32": ("x = bf16[8] parameter(0)\n  z = f32[] constant(0.5)\n"
                             "  ROOT r = f32[] reduce(x, z), dimensions={0}, to_apply=add",
                             lambda x: np.float32(0.5) + x.astype(np.float32).sum()),
    "reduce f16 with an f32 reducer": ("x = f16[8] parameter(0)\n  z = f16[] constant(0)\n"
                                       "  ROOT r = f32[] reduce(x, z), dimensions={0}, to_apply=add",
                                       lambda x: x.astype(np.float32).sum()),
    "reduce-window": ("x = bf16[8] parameter(0)\n  z = f32[] constant(0)\n"
                      "  ROOT r = f32[4] reduce-window(x, z), window={size=2 stride=2}, to_apply=add",
                      lambda x: x.astype(np.float32).reshape(4, 2).sum(axis=1)),
}


@pytest.mark.parametrize("platform", ["interpreter", "cpu"])
@pytest.mark.parametrize("case", sorted(MIXED_REDUCERS))
def test_reducers_of_another_precision(case, platform):
    import ml_dtypes
    body, reference = MIXED_REDUCERS[case]
    text = f"HloModule m\n{ADD_F32}\nENTRY e {{\n  {body}\n}}\n"
    with pytest.raises(VerifierError, match=r"instruction %r in computation %e: .*mixed precision "
                                            r"is disallowed"):
        xla.verify_module(xla.parse_hlo_module(text))
    x = np.arange(1, 9, dtype=np.float32) * np.float32(0.25) - 1   # exact in bf16 and f16
    x = x.astype(ml_dtypes.bfloat16 if "bf16[8]" in body else np.float16)
    got = np.asarray(xla.compile(text, platform, allow_mixed_precision=True).execute(x))
    want = np.asarray(reference(x), np.float32)   # small sums of quarters: exact
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, want)
