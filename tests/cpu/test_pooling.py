"""Pooling (reduce-window) as jax lowers it, branch-free: a window over
inputs read from memory reads each padded position at a clamped index and
drops it with a select, and windows of up to UNROLL_WINDOW_ELEMENTS
elements are unrolled, so the code of one output element is straight-line
and the loop over the output vectorizes (emit_window.generate_reduce_window).
A 3x3 stride-2 max pool of f32[16, 64, 112, 112] (NCHW, one row and column
of padding) ran one element at a time with a branch per window element:
7.9 -> 2.9 ms (XLA:CPU 6.3). JAX-lowered programs (fixtures/pooling_jax.npz,
from gen_pooling_jax.py) against XLA:CPU's results and the interpreter, and
the kernels' code."""
import re

import numpy as np
import pytest

import xla

from lapack_fixtures import cpu_and_interpreter, load, program

DATA, NAMES = load("pooling_jax.npz")


def test_fixture_has_every_program():
    assert NAMES == sorted(["maxpool_nchw_same", "maxpool_nhwc_padded", "avgpool_nchw_valid",
                            "avgpool_nhwc_same_count", "maxpool_nchw_bf16",
                            "maxpool_1d_dilated"])


@pytest.mark.parametrize("name", NAMES)
def test_matches_jax_and_the_interpreter(name):
    for g, w, r in cpu_and_interpreter(*program(DATA, name)):
        # max is exact; the sums are in window order (the interpreter's).
        np.testing.assert_array_equal(g.astype(np.float32), r.astype(np.float32))
        tol = 1e-2 if g.dtype.itemsize == 2 else 1e-6
        np.testing.assert_allclose(g.astype(np.float32), w.astype(np.float32), rtol=tol, atol=tol)


@pytest.mark.parametrize("name", ["maxpool_nchw_same", "maxpool_nhwc_padded",
                                  "avgpool_nchw_valid"])
def test_padded_windows_are_unrolled_and_vectorized(name):
    text, _, _ = program(DATA, name)
    exe = xla.compile(text, "cpu")
    # The loops over the window's offsets are named w<dimension>.
    assert not re.search(r"^w\d+\.header:", exe.ir_text, re.M), "a loop over the window remains"
    assert re.search(r"<\d+ x float>", exe.optimized_ir_text), "the output loop is not vectorized"
