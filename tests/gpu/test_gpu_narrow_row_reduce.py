"""f16/bf16 row maximum/minimum on the GPU backend: split_reduction leaves
them to one thread per output (``chunk_identity`` has no narrow identity),
whose kernel is the CPU reduction emitter's f32-vector row
(``reduction_emitter.row_identity``); the same values and signed-zero and
NaN rules as on the CPU (tests/cpu/test_narrow_row_reduce.py)."""
import pathlib
import sys

import numpy as np
import pytest

import xla
from xla.backends.gpu.driver import cuda_unavailable_reason

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "cpu"))
from test_narrow_row_reduce import TYPES, _expected, _module, _rows  # noqa: E402

NO_GPU = cuda_unavailable_reason()
needs_gpu = pytest.mark.skipif(NO_GPU is not None, reason=f"needs an NVIDIA GPU: {NO_GPU}")


@pytest.mark.parametrize("platform", ["gpu_emulator", pytest.param("gpu", marks=needs_gpu)])
@pytest.mark.parametrize("et,dt", TYPES)
@pytest.mark.parametrize("c", [17, 1000])
def test_narrow_row_max_min(platform, et, dt, c):
    exe = xla.compile(xla.parse_hlo_module(_module(et, c)), platform)
    x = _rows(c, dt, c)
    for init in (-np.inf, np.inf, -0.0, np.nan):
        a, b = (np.asarray(v).astype(np.float64) for v in exe.execute(x, dt(init)))
        want_a, want_b = _expected(x, init)
        np.testing.assert_array_equal(a, want_a, err_msg=f"max, init {init}")
        np.testing.assert_array_equal(b, want_b, err_msg=f"min, init {init}")
        assert (np.signbit(a) == np.signbit(want_a)).all(), f"max sign, init {init}"
        assert (np.signbit(b) == np.signbit(want_b)).all(), f"min sign, init {init}"
