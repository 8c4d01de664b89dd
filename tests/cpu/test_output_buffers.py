"""The cache of output buffers (python/output_buffers.cc): results of 32 KiB
or more get memory whose pages stay mapped between calls, given back when
the last array using it is gone and never while one is. Expected values:
NumPy's; "the same buffer" is the array's data address."""
import os
import subprocess
import sys

import numpy as np
import pytest

import xla
from xla import _core
from xla.backends.cpu.executable import CACHED_OUTPUT_BYTES

ROWS, COLS = 2048, 1024     # f32: 8 MiB

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
    assert CACHED_OUTPUT_BYTES == 32 << 10
    assert _core.cpu_output_array([8, 1024], np.float32).base is not None
    assert _core.cpu_output_array([8, 1023], np.float32).base is None   # NumPy's own
    assert _core.cpu_output_array([ROWS, COLS], np.float32).base is not None


# Eight results of 256 KiB each: glibc trims the heap's free top when they
# are freed, so with NumPy's allocator every call faulted their pages in
# again (286 us a call where the kernel takes 13 us).
EIGHT = "HloModule eight\nENTRY %main (x: f32[256,256]) -> ({}) {{\n  %x = f32[256,256] parameter(0)\n{}\n  ROOT %t = ({}) tuple({})\n}}\n".format(
    ", ".join(["f32[256,256]"] * 8),
    "\n".join(f"  %c{k} = f32[] constant({k})\n  %b{k} = f32[256,256] broadcast(%c{k}), dimensions={{}}\n"
              f"  %y{k} = f32[256,256] multiply(%x, %b{k})" for k in range(8)),
    ", ".join(["f32[256,256]"] * 8), ", ".join(f"%y{k}" for k in range(8)))


def test_the_results_of_a_call_with_many_mid_sized_results_are_reused():
    exe = xla.compile(xla.parse_hlo_module(EIGHT), "cpu")
    x = np.random.default_rng(1).standard_normal((256, 256)).astype(np.float32)
    first = exe.execute(x)
    addresses = {r.ctypes.data for r in first}
    assert len(addresses) == 8 and all(r.base is not None for r in first)
    del first
    hits = _core.cpu_output_cache_stats()["hits"]
    second = exe.execute(x)
    assert {r.ctypes.data for r in second} == addresses
    assert _core.cpu_output_cache_stats()["hits"] == hits + 8
    for k, r in enumerate(second):
        np.testing.assert_array_equal(r, x * np.float32(k))


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


SAME_SIZE_EVICTION = """
import numpy as np
from xla import _core
a1, a2, a3, b = (_core.cpu_output_array([1024, n], np.float32) for n in (64, 64, 64, 128))
second, newest = a2.ctypes.data, a3.ctypes.data
del a1, a2, a3, b      # 3 x 256 KiB, then 512 KiB, given back into 1 MiB
again = _core.cpu_output_array([1024, 64], np.float32)
stats = _core.cpu_output_cache_stats()
print((stats["idle_bytes"], stats["idle_buffers"], stats["hits"], again.ctypes.data == newest,
       again.ctypes.data == second))
"""


def test_the_oldest_buffer_goes_first_and_the_newest_of_a_size_is_taken():
    # The 512 KiB buffer does not fit beside the three 256 KiB ones: the
    # oldest (the first 256 KiB one) is freed. The next 256 KiB array takes
    # the newest of the two left, leaving the other and the 512 KiB one.
    out = _child(SAME_SIZE_EVICTION, str(1 << 20))
    assert out.returncode == 0, out.stderr
    assert eval(out.stdout) == (768 << 10, 2, 1, True, False)   # noqa: S307


def test_a_limit_of_zero_turns_the_cache_off():
    out = _child(ALLOCATE_AND_DROP, "0")
    assert out.returncode == 0, out.stderr
    stats = eval(out.stdout)   # noqa: S307
    assert (stats["idle_bytes"], stats["hits"], stats["misses"]) == (0, 0, 0)


def test_a_bad_limit_names_the_variable():
    out = _child(ALLOCATE_AND_DROP, "lots")
    assert out.returncode != 0
    assert "XLA_CPU_OUTPUT_CACHE_BYTES='lots' is not a byte count" in out.stderr
