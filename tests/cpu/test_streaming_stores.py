"""Streaming stores (xla/backends/cpu/streaming_stores.py): a loop kernel
whose outputs are entry results larger than the last-level cache, read by
nothing after it, writes them through a scratch block with non-temporal
stores, then fences. The tests make the cache size small so that small
arrays qualify, and compare against the same module compiled with
plain stores (the same code computes every element: the bits must match)
and against the interpreter."""
import gzip
import os
import platform

import numpy as np
import pytest

import ml_dtypes
import xla
from xla import _core
from xla.backends.cpu import jit, streaming_stores
from xla.backends.cpu.compiler import CpuCompiler
from xla.tools.arrays import flatten_result

pytestmark = pytest.mark.skipif(platform.machine() != "x86_64",
                                reason="streaming stores are emitted for x86-64 hosts only")

NT = "!nontemporal"
SFENCE = 'call void @"llvm.x86.sse.sfence"()'
# jax.nn.softmax on f32[256, 512] as JAX lowers it (a copy of
# benchmarks/modules/softmax.hlo.gz, gen_compile_modules.py).
JAX_SOFTMAX = os.path.join(os.path.dirname(__file__), "fixtures", "softmax_f32_jax.hlo.gz")


def _compile(text, cache_bytes, monkeypatch):
    monkeypatch.setattr(CpuCompiler, "streaming_store_bytes", lambda self: cache_bytes)
    return xla.compile(text, "cpu")


def _both(text, monkeypatch, cache_bytes=1):
    return _compile(text, cache_bytes, monkeypatch), _compile(text, None, monkeypatch)


def _same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape
    assert np.array_equal(a.view(np.uint8), b.view(np.uint8))


def _elementwise(t, dims, layout=None):
    shape = f"{t}[{','.join(map(str, dims))}]" + (f"{{{layout}}}" if layout else "")
    return (f"HloModule m\nENTRY e {{\n  x = {shape} parameter(0)\n  y = {shape} parameter(1)\n"
            f"  s = {shape} add(x, y)\n  ROOT r = {shape} multiply(s, x)\n}}\n")


CASES = [
    # type, dims, NumPy dtype: rows of 4 KB and more, rows that are no whole
    # number of lines or blocks, 1-D arrays (one loop over the thread's
    # chunk), element sizes 1 to 16 bytes.
    ("f32", (64, 1024), np.float32),
    ("f32", (37, 1500), np.float32),
    ("f32", (100003,), np.float32),
    ("bf16", (33, 2051), ml_dtypes.bfloat16),
    ("f16", (70001,), np.float16),
    ("s8", (9, 8191), np.int8),
    ("f64", (25, 777), np.float64),
    ("c128", (4099,), np.complex128),
]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("t,dims,dtype", CASES, ids=[f"{c[0]}{list(c[1])}" for c in CASES])
def test_streamed_result_has_the_plain_kernels_bits(t, dims, dtype, threads, monkeypatch):
    streamed, plain = _both(_elementwise(t, dims), monkeypatch)
    assert NT in streamed.ir_text and SFENCE in streamed.ir_text
    assert NT not in plain.ir_text and SFENCE not in plain.ir_text
    rng = np.random.default_rng(len(dims) * 7 + dims[-1])
    if np.dtype(dtype).kind == "c":
        x, y = (rng.standard_normal(dims) + 1j * rng.standard_normal(dims) for _ in range(2))
    else:
        x, y = (rng.integers(-40, 40, dims) if np.dtype(dtype).kind == "i"
                else rng.standard_normal(dims) for _ in range(2))
    x, y = x.astype(dtype), y.astype(dtype)
    _core.set_cpu_runtime_num_threads(threads)
    try:
        got, want = streamed.execute(x, y), plain.execute(x, y)
    finally:
        _core.set_cpu_runtime_num_threads(0)
    _same_bits(got, want)
    interpreted = xla.compile(_elementwise(t, dims), "interpreter").execute(x, y)
    if np.dtype(dtype).kind in "iu":
        np.testing.assert_array_equal(np.asarray(got), np.asarray(interpreted))
    else:
        np.testing.assert_allclose(np.asarray(got, np.float64 if np.dtype(dtype).kind != "c"
                                              else np.complex128),
                                   np.asarray(interpreted).astype(np.asarray(got).dtype),
                                   rtol=1e-2 if dtype in (np.float16, ml_dtypes.bfloat16) else 1e-6)


def test_jax_softmax_row_group_streams_its_result(monkeypatch):
    # JAX's softmax: three kernels run as one row group; the quotients (the
    # entry result) are streamed, the exponentials (a scratch of the group)
    # are not.
    with gzip.open(JAX_SOFTMAX, "rt") as f:
        text = f.read()
    streamed, plain = _both(text, monkeypatch)
    assert streamed.ir_text.count(NT) == 1
    x = np.random.default_rng(0).standard_normal((256, 512)).astype(np.float32) * 4
    got = streamed.execute(x)
    _same_bits(got, plain.execute(x))
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(got, e / e.sum(axis=1, keepdims=True), rtol=2e-6, atol=1e-9)


@pytest.mark.parametrize("why,text", [
    # The threshold is the result's size: 64 x 1024 f32 is 256 KB.
    ("no larger than the cache", _elementwise("f32", (64, 1024))),
    # Rows of less than MIN_ROW_BYTES in the result's layout.
    ("rows shorter than 1 KB", _elementwise("f32", (4096, 255))),
    # An intermediate, not an entry result.
    ("a temporary", """HloModule m
ENTRY e {
  x = f32[64,1024] parameter(0)
  y = f32[64,1024] parameter(1)
  s = f32[64,1024] add(x, y)
  c = f32[64,1024] cosine(s)
  ROOT r = f32[64] reduce(c, f32[] constant(0)), dimensions={1}, to_apply=add
}
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
"""),
])
def test_no_streaming(why, text, monkeypatch):
    cache_bytes = 256 * 1024 if why.startswith("no larger") else 1
    exe = _compile(text, cache_bytes, monkeypatch)
    assert NT not in exe.ir_text, why
    if why.startswith("no larger"):
        assert NT in _compile(text, 256 * 1024 - 1, monkeypatch).ir_text


def test_multi_output_fusion_streams_each_result(monkeypatch):
    text = """HloModule m
ENTRY e {
  x = f32[64,1024] parameter(0)
  y = f32[64,1024] parameter(1)
  s = f32[64,1024] add(x, y)
  t = f32[64,1024] multiply(s, x)
  ROOT r = (f32[64,1024], f32[64,1024]) tuple(t, s)
}
"""
    streamed, plain = _both(text, monkeypatch)
    assert streamed.ir_text.count(NT) == 2
    rng = np.random.default_rng(1)
    x, y = (rng.standard_normal((64, 1024)).astype(np.float32) for _ in range(2))
    got = flatten_result(streamed.execute(x, y))
    for g, w in zip(got, flatten_result(plain.execute(x, y))):
        _same_bits(g, w)
    np.testing.assert_array_equal(got[0], (x + y) * x)
    np.testing.assert_array_equal(got[1], x + y)


# JAX's RMSNorm with a residual (benchmarks/gen_runtime_modules.py, rows cut
# from 8192 to 64): the residual sum and the normalized rows, each its own
# loop kernel (the sum recomputed in the norm's), both streamed.
RMSNORM_RESIDUAL = """HloModule jit_fn, entry_computation_layout={(f32[64,1024]{1,0}, f32[64,1024]{1,0}, f32[1024]{0})->(f32[64,1024]{1,0}, f32[64,1024]{1,0})}

region_0.1 {
  reduce_sum.3 = f32[] parameter(0)
  reduce_sum.4 = f32[] parameter(1)
  ROOT reduce_sum.5 = f32[] add(reduce_sum.3, reduce_sum.4)
}

ENTRY main.2 {
  x.1 = f32[64,1024]{1,0} parameter(0)
  r.1 = f32[64,1024]{1,0} parameter(1)
  add.4 = f32[64,1024]{1,0} add(x.1, r.1)
  mul.9 = f32[64,1024]{1,0} multiply(add.4, add.4)
  constant.5 = f32[] constant(0)
  reduce_sum.7 = f32[64]{0} reduce(mul.9, constant.5), dimensions={1}, to_apply=region_0.1
  broadcast_in_dim.2 = f32[64,1]{1,0} reshape(reduce_sum.7)
  constant.4 = f32[] constant(1024)
  div.2 = f32[64,1]{1,0} broadcast(constant.4), dimensions={}
  div.3 = f32[64,1]{1,0} divide(broadcast_in_dim.2, div.2)
  constant.3 = f32[] constant(1e-06)
  add.3 = f32[64,1]{1,0} broadcast(constant.3), dimensions={}
  add.5 = f32[64,1]{1,0} add(div.3, add.3)
  rsqrt.1 = f32[64,1]{1,0} rsqrt(add.5)
  mul.10 = f32[64,1]{1,0} broadcast(rsqrt.1), dimensions={0,1}
  mul.11 = f32[64]{0} reshape(mul.10)
  mul.12 = f32[64,1024]{1,0} broadcast(mul.11), dimensions={0}
  mul.13 = f32[64,1024]{1,0} multiply(add.4, mul.12)
  g.1 = f32[1024]{0} parameter(2)
  broadcast_in_dim.3 = f32[1,1024]{1,0} reshape(g.1)
  mul.14 = f32[1,1024]{1,0} broadcast(broadcast_in_dim.3), dimensions={0,1}
  mul.15 = f32[1024]{0} reshape(mul.14)
  mul.16 = f32[64,1024]{1,0} broadcast(mul.15), dimensions={1}
  mul.17 = f32[64,1024]{1,0} multiply(mul.13, mul.16)
  ROOT tuple.1 = (f32[64,1024]{1,0}, f32[64,1024]{1,0}) tuple(mul.17, add.4)
}

"""


def test_jax_rmsnorm_residual_streams_both_results(monkeypatch):
    streamed, plain = _both(RMSNORM_RESIDUAL, monkeypatch)
    assert streamed.ir_text.count(NT) == 2
    rng = np.random.default_rng(2)
    x, r = (rng.standard_normal((64, 1024)).astype(np.float32) for _ in range(2))
    g = rng.standard_normal(1024).astype(np.float32)
    got = flatten_result(streamed.execute(x, r, g))
    for a, b in zip(got, flatten_result(plain.execute(x, r, g))):
        _same_bits(a, b)
    h = (x + r).astype(np.float64)
    want = h / np.sqrt((h * h).mean(axis=1, keepdims=True) + 1e-6) * g
    np.testing.assert_allclose(got[0], want, rtol=2e-6, atol=1e-6)
    np.testing.assert_array_equal(got[1], x + r)


def test_result_read_by_a_later_kernel_is_not_streamed(monkeypatch):
    # The sum is a result and the dot's operand: the dot would find it gone
    # from the cache. The dot's own result is no loop kernel's.
    text = """HloModule m
ENTRY e {
  x = f32[64,1024] parameter(0)
  y = f32[64,1024] parameter(1)
  w = f32[1024,8] parameter(2)
  s = f32[64,1024] add(x, y)
  d = f32[64,8] dot(s, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT r = (f32[64,1024], f32[64,8]) tuple(s, d)
}
"""
    exe = _compile(text, 1, monkeypatch)
    assert NT not in exe.ir_text
    rng = np.random.default_rng(4)
    x, y = (rng.standard_normal((64, 1024)).astype(np.float32) for _ in range(2))
    w = rng.standard_normal((1024, 8)).astype(np.float32)
    got = flatten_result(exe.execute(x, y, w))
    np.testing.assert_array_equal(got[0], x + y)


def test_objects_compiled_ahead_of_time_never_stream():
    from xla.backends.cpu import aot
    assert aot._AotCompiler().streaming_store_bytes() is None


def test_host_threshold_is_the_last_level_cache(tmp_path):
    for name, level, kind, size in (("index0", 1, "Data", "48K"), ("index1", 1, "Instruction", "32K"),
                                    ("index2", 2, "Unified", "1024K"),
                                    ("index3", 3, "Unified", "32768K")):
        d = tmp_path / name
        d.mkdir()
        (d / "level").write_text(f"{level}\n")
        (d / "type").write_text(f"{kind}\n")
        (d / "size").write_text(f"{size}\n")
    assert jit.host_last_level_cache_bytes(str(tmp_path)) == 32 << 20
    assert jit.host_last_level_cache_bytes(str(tmp_path / "missing")) is None
    assert jit.host_streaming_store_bytes() >= 1 << 20


def test_context_is_off_outside_a_compile():
    assert streaming_stores._cache_bytes.get() is None
