"""Reductions over several consecutive dimensions reduce one dimension of
their product (xla/service/reduction_dimension_grouper.py, in the CPU
pipeline before fusion): GroupNorm over NCHW groups of f32[16, 64, 56, 56]
1.39 -> 0.28 ms (XLA:CPU 0.72-1.08), BatchNorm's training step of the
second survey 6.4 -> 1.8 ms (3.7); with a few channels kept minor, rows of
16 pixels' channels at a time: the per-channel mean of u8[64, 224, 224, 3]
9.1 -> 0.61 ms (6.2-11). JAX-lowered programs
(fixtures/grouped_reductions_jax.npz, from gen_grouped_reductions_jax.py)
against XLA:CPU's results and the interpreter, and the reduces left."""
import numpy as np
import pytest

import xla

from lapack_fixtures import cpu_and_interpreter, load, program

DATA, NAMES = load("grouped_reductions_jax.npz")


def test_fixture_has_every_program():
    assert NAMES == sorted(["groupnorm_nchw", "batch_stats_nhwc", "spatial_mean_nchw",
                            "computed_sum_nchw", "max_minor_two", "channel_mean_u8_nhwc",
                            "channel_max_nhwc", "channel_sum_s32"])


@pytest.mark.parametrize("name", NAMES)
def test_matches_jax_and_the_interpreter(name):
    for g, w, r in cpu_and_interpreter(*program(DATA, name)):
        if w.dtype.kind == "i":
            np.testing.assert_array_equal(g, w)
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-5)
        np.testing.assert_allclose(g, r, rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("name", ["channel_mean_u8_nhwc", "channel_max_nhwc",
                                  "channel_sum_s32"])
def test_a_few_channels_kept_minor_fold_sixteen_rows_at_once(name):
    # The pixels' reduce becomes one over rows of 16 pixels' channels (48,
    # 80 or 48 columns: a column reduction that vectorizes), then one over
    # the 16 partial results of each channel.
    text, _, _ = program(DATA, name)
    module = xla.compile(text, "cpu").module
    reduces = [i for i in module.all_instructions() if i.opcode == "reduce"]
    widths = sorted(r.operands[0].shape.dimensions[-1] for r in reduces)
    c = {"channel_mean_u8_nhwc": 3, "channel_max_nhwc": 5, "channel_sum_s32": 6}[name]
    assert widths == sorted([c, c * 16 // np.gcd(c, 16)])


@pytest.mark.parametrize("name", NAMES)
def test_every_reduce_reduces_one_dimension(name):
    text, _, _ = program(DATA, name)
    module = xla.compile(text, "cpu").module
    reduces = [i for i in module.all_instructions() if i.opcode == "reduce"]
    assert reduces
    assert all(len(r.attr("dimensions")) == 1 for r in reduces), \
        [r.attr("dimensions") for r in reduces]
