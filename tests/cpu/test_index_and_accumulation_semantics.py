"""Two former silent wrong answers of the CPU backend (issue 13): u64 start
indices of 2^63 or more clamp to dim - size as XLA and the evaluator do
(they were read as negative and clamped to 0), and bf16 sums accumulate in
f32 and round once, as XLA does (rounding every step lost the sum). Every
backend must agree with the evaluator; the exact answers come from NumPy."""
import ml_dtypes
import numpy as np
import pytest

import xla

PLATFORMS = ["interpreter", "cpu", "gpu_emulator"]

SLICE = """HloModule m
ENTRY e {
  x = f32[8] parameter(0)
  i = u64[] parameter(1)
  u = f32[2] parameter(2)
  ds = f32[3] dynamic-slice(x, i), dynamic_slice_sizes={3}
  dus = f32[8] dynamic-update-slice(x, u, i)
  ROOT t = (f32[3], f32[8]) tuple(ds, dus)
}"""

SUM = """HloModule m
add {
  a = bf16[] parameter(0)
  b = bf16[] parameter(1)
  ROOT c = bf16[] add(a, b)
}
ENTRY e {
  x = bf16[17765] parameter(0)
  z = bf16[] constant(0)
  ROOT r = bf16[] reduce(x, z), dimensions={0}, to_apply=add
}"""


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("start", [2**63, 2**63 + 5, 2**64 - 1])
def test_huge_unsigned_starts_clamp_to_the_end(platform, start):
    x = np.arange(8, dtype=np.float32)
    ds, dus = xla.compile(SLICE, platform).execute(x, np.uint64(start), np.float32([-1, -2]))
    np.testing.assert_array_equal(ds, [5, 6, 7])
    np.testing.assert_array_equal(dus, [0, 1, 2, 3, 4, 5, -1, -2])


@pytest.mark.parametrize("platform", PLATFORMS)
def test_bf16_sums_accumulate_in_f32(platform):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(17765) - 1.77).astype(ml_dtypes.bfloat16)
    exact = x.astype(np.float64).sum()
    got = float(xla.compile(SUM, platform).execute(x))
    assert abs(got - exact) <= abs(exact) * 2 ** -7, (got, exact)   # one bf16 rounding
