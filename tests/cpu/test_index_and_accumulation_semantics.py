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


def window_sum(et, n, window):
    return f"""HloModule m
add {{
  a = {et}[] parameter(0)
  b = {et}[] parameter(1)
  ROOT c = {et}[] add(b, a)
}}
ENTRY e {{
  x = {et}[{n}] parameter(0)
  z = {et}[] constant(0)
  ROOT r = {et}[{n // window}] reduce-window(x, z), window={{size={window} stride={window}}}, to_apply=add
}}"""


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("dtype,et", [(ml_dtypes.bfloat16, "bf16"), (np.float16, "f16")])
def test_narrow_reduce_window_sums_accumulate_in_f32(platform, dtype, et):
    """Rounding every step, a bf16 window of 4,096 values summed to -1,296
    for -7,316 (XLA:CPU itself does so for bf16 windows, measured with
    jaxlib 0.10.2; it accumulates f16 windows and bf16 reduces in f32)."""
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(16384) * 3 - 1.77).astype(dtype)
    exact = x.astype(np.float64).reshape(4, 4096).sum(axis=1)
    got = np.asarray(xla.compile(window_sum(et, 16384, 4096), platform).execute(x)).astype(np.float64)
    ulp = 2.0 ** (np.floor(np.log2(np.abs(exact))) - (7 if et == "bf16" else 10))
    assert np.all(np.abs(got - exact) <= ulp), (got, exact)   # one rounding
