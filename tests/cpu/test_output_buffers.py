"""The cache of large output buffers (python/output_buffers.cc): results of
8 MiB or more get memory whose pages stay mapped between calls, given back
when the last array using it is gone and never while one is. Expected
values: NumPy's; "the same buffer" is the array's data address."""
import os
import subprocess
import sys

import numpy as np
import pytest

import xla
from xla import _core
from xla.backends.cpu.executable import CACHED_OUTPUT_BYTES

ROWS, COLS = 2048, 1024     # f32: 8 MiB, the smallest cached size

SCALE = f"""HloModule scale
ENTRY %main (x: f32[{ROWS},{COLS}], s: f32[]) -> f32[{ROWS},{COLS}] {{
  %x = f32[{ROWS},{COLS}] parameter(0)
  %s = f32[] parameter(1)
  %b = f32[{ROWS},{COLS}] broadcast(%s), dimensions={{}}
  ROOT %y = f32[{ROWS},{COLS}] multiply(%x, %b)
}}
"""


@pytest.fixture(scope="module")
def scale():
    return xla.compile(xla.parse_hlo_module(SCALE), "cpu")


@pytest.fixture(scope="module")
def x():
    return np.random.default_rng(0).standard_normal((ROWS, COLS)).astype(np.float32)


def _f32(value):
    return np.array(value, np.float32)   # an array: the executable's fast path


def test_the_threshold_is_the_extensions():
    assert ROWS * COLS * 4 == CACHED_OUTPUT_BYTES == 8 << 20
    assert _core.cpu_output_array([ROWS, COLS], np.float32).base is not None
    assert _core.cpu_output_array([ROWS, COLS - 1], np.float32).base is None   # NumPy's own


def test_a_dropped_result_s_buffer_serves_the_next_call(scale, x):
    first = scale.execute(x, _f32(2))
    address = first.ctypes.data
    np.testing.assert_array_equal(first, x * 2)
    del first
    hits = _core.cpu_output_cache_stats()["hits"]
    second = scale.execute(x, _f32(3))
    assert second.ctypes.data == address
    assert _core.cpu_output_cache_stats()["hits"] == hits + 1
    np.testing.assert_array_equal(second, x * 3)


def test_a_live_result_is_never_written_again(scale, x):
    results = [scale.execute(x, _f32(k)) for k in range(4)]
    assert len({r.ctypes.data for r in results}) == 4
    for k, r in enumerate(results):
        np.testing.assert_array_equal(r, x * k)
        assert r.flags.writeable and r.flags.c_contiguous


def test_a_view_keeps_its_buffer(scale, x):
    result = scale.execute(x, _f32(5))
    row = result[7]
    column = result[:, 3]
    del result
    again = [scale.execute(x, _f32(-1)) for _ in range(3)]
    np.testing.assert_array_equal(row, x[7] * 5)
    np.testing.assert_array_equal(column, x[:, 3] * 5)
    assert row.ctypes.data not in {a.ctypes.data + 7 * COLS * 4 for a in again}


def test_the_prepared_call_of_jit_takes_them_too(x):
    f = xla.jit(lambda a, s: a * s)
    f(x, _f32(2))
    first = f(x, _f32(2))
    address = first.ctypes.data
    del first
    hits = _core.cpu_output_cache_stats()["hits"]
    second = f(x, _f32(4))
    assert second.ctypes.data == address
    assert _core.cpu_output_cache_stats()["hits"] == hits + 1
    np.testing.assert_array_equal(second, x * 4)


def _child(code, cache_bytes):
    env = dict(os.environ, XLA_CPU_OUTPUT_CACHE_BYTES=cache_bytes)
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=120)


ALLOCATE_AND_DROP = f"""
import numpy as np
from xla import _core
a, b, c = (_core.cpu_output_array([{ROWS}, {COLS} * n], np.float32) for n in (1, 2, 3))
del a
del b
del c
again = _core.cpu_output_array([{ROWS}, {COLS}], np.float32)
print(_core.cpu_output_cache_stats())
"""


def test_the_cache_holds_at_most_its_limit_of_idle_buffers():
    # 8, 16 and 24 MiB given back, in that order, into 30 MiB: the 24 MiB
    # one pushes the older two out, so the next 8 MiB array is a new buffer.
    out = _child(ALLOCATE_AND_DROP, str(30 << 20))
    assert out.returncode == 0, out.stderr
    stats = eval(out.stdout)   # noqa: S307 - the dict the child printed
    assert stats["limit_bytes"] == 30 << 20
    assert (stats["idle_bytes"], stats["idle_buffers"], stats["hits"]) == (24 << 20, 1, 0)


def test_a_limit_of_zero_turns_the_cache_off():
    out = _child(ALLOCATE_AND_DROP, "0")
    assert out.returncode == 0, out.stderr
    stats = eval(out.stdout)   # noqa: S307
    assert (stats["idle_bytes"], stats["hits"], stats["misses"]) == (0, 0, 0)


def test_a_bad_limit_names_the_variable():
    out = _child(ALLOCATE_AND_DROP, "lots")
    assert out.returncode != 0
    assert "XLA_CPU_OUTPUT_CACHE_BYTES='lots' is not a byte count" in out.stderr
