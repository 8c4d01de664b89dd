"""Pads with interior padding of a computed operand (lax.associative_scan's
tree of slices, pads and adds; upsampling) compute the operand only where
an element is not padding (element_generator._gen_pad): selecting computed
it for every element, and the scan's tree pads two arrays that read the
level below, 2^levels evaluations per element. JAX-lowered programs with
XLA:CPU's results (fixtures/interior_pads_jax.npz, written by
gen_interior_pads_jax.py) and hand-written pads against the interpreter."""
import re

import numpy as np
import pytest

import xla
from lapack_fixtures import load, program, run
from xla.hlo.parser import parse_hlo_module
from xla.tools.arrays import flatten_result

DATA, NAMES = load("interior_pads_jax.npz")


def _branches(exe):
    """Whether a kernel computes a value in a branch (the pad's phi)."""
    return bool(re.search(r"= phi\s+float ", exe.ir_text))


@pytest.mark.parametrize("name", NAMES)
def test_jax_interior_pads(name):
    text, args, want = program(DATA, name)
    exe = xla.compile(parse_hlo_module(text), "cpu")
    # the pad's operand computed in a branch, its value a phi
    assert _branches(exe)
    got = [np.asarray(g) for g in flatten_result(exe.execute(*args))]
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        # sums, products and maxima in another grouping than XLA:CPU's tree
        np.testing.assert_allclose(g, w, rtol=2e-6, atol=2e-5)


@pytest.mark.parametrize("padding,operand,expect_branch", [
    ("0_0_1x1_2_1", "y = f32[5,6] multiply(x, x)", True),       # computed: a branch
    ("0_0_1x1_2_1", "y = f32[5,6] copy(x)", False),             # a load: selected
    ("1_1_0x2_0_0", "y = f32[5,6] multiply(x, x)", False),      # edges only: selected
    ("-1_0_2x0_-3_1", "y = f32[5,6] add(x, x)", True),          # negative edges
])
def test_hand_written_pads(padding, operand, expect_branch):
    lo = [[int(v) for v in d.split("_")] for d in padding.split("x")]
    dims = [max(0, l + h + n + max(n - 1, 0) * i) for (l, h, i), n in zip(lo, (5, 6))]
    text = f"""HloModule m
ENTRY e {{
  x = f32[5,6] parameter(0)
  {operand}
  c = f32[] constant(-7)
  ROOT p = f32[{dims[0]},{dims[1]}] pad(y, c), padding={padding}
}}
"""
    x = np.random.default_rng(4).standard_normal((5, 6)).astype(np.float32)
    exe = xla.compile(parse_hlo_module(text), "cpu")
    assert _branches(exe) == expect_branch
    got = np.asarray(exe.execute(x))
    want = np.asarray(run(text, [x], "interpreter")[0])
    assert got.tobytes() == want.tobytes()
