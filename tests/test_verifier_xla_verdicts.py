"""Modules XLA's verifier accepts that ours once refused (issue 14), each
also run on the interpreter and the CPU with the expected values computed
here with NumPy.

* ``after-all`` takes operands of any shape (XLA's
  ``ShapeVerifier::HandleAfterAll`` checks only that the result is a
  token; ``ShapeInference::InferAfterAllShape``, which wants tokens, is the
  builders' check, ``shape_inference.infer_after_all_shape`` here).
"""
import numpy as np
import pytest

import xla
from xla.errors import ShapeError, VerifierError
from xla.hlo import shape_inference
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
