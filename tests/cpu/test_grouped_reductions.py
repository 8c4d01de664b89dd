"""Reductions over several consecutive dimensions reduce one dimension of
their product (xla/service/reduction_dimension_grouper.py, in the CPU
pipeline before fusion): GroupNorm over NCHW groups of f32[16, 64, 56, 56]
1.39 -> 0.28 ms (XLA:CPU 0.72-1.08), BatchNorm's training step of the
second survey 6.4 -> 1.8 ms (3.7). JAX-lowered programs
(fixtures/grouped_reductions_jax.npz, from gen_grouped_reductions_jax.py)
against XLA:CPU's results and the interpreter, and the reduces left."""
import numpy as np
import pytest

import xla

from lapack_fixtures import load, program, run

DATA, NAMES = load("grouped_reductions_jax.npz")


def test_fixture_has_every_program():
    assert NAMES == sorted(["groupnorm_nchw", "batch_stats_nhwc", "spatial_mean_nchw",
                            "computed_sum_nchw", "max_minor_two"])


@pytest.mark.parametrize("name", NAMES)
def test_matches_jax_and_the_interpreter(name):
    text, args, want = program(DATA, name)
    got = run(text, args, "cpu")
    ref = run(text, args, "interpreter")
    for g, w, r in zip(got, want, ref):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-5)
        np.testing.assert_allclose(g, r, rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("name", NAMES)
def test_every_reduce_reduces_one_dimension(name):
    text, _, _ = program(DATA, name)
    module = xla.compile(text, "cpu").module
    reduces = [i for i in module.all_instructions() if i.opcode == "reduce"]
    assert reduces
    assert all(len(r.attr("dimensions")) == 1 for r in reduces), \
        [r.attr("dimensions") for r in reduces]
