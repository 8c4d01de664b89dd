"""Software prefetch of rows ahead (xla/backends/cpu/prefetch.py): the row
passes of a row algorithm (softmax's, layernorm's) over a large entry
parameter prefetch its rows ahead, and nothing else does. The tests make
the threshold one byte so that small arrays qualify, and compare against
the same module compiled without prefetch (a prefetch changes no value:
the bits must match) and against NumPy."""
import gzip
import os
import re

import numpy as np
import pytest

import xla
from xla.backends.cpu import prefetch
from xla.backends.cpu.aot import _AotCompiler
from xla.backends.cpu.compiler import CpuCompiler

PREFETCH = "@\"llvm.prefetch.p0\""
FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures")
# jax.nn.softmax on f32[256, 512] and JAX's layernorm on f32[256, 1024], as
# JAX lowers them (copies of benchmarks/modules/softmax.hlo.gz and
# rt_layernorm_f32_256K.hlo.gz).
JAX_SOFTMAX = os.path.join(FIXTURES, "softmax_f32_jax.hlo.gz")
JAX_LAYERNORM = os.path.join(FIXTURES, "layernorm_f32_256K_jax.hlo.gz")


def _compile(text, threshold, monkeypatch):
    monkeypatch.setattr(CpuCompiler, "prefetch_bytes", lambda self: threshold)
    return xla.compile(text, "cpu")


def _calls(exe):
    return exe.ir_text.count("call void " + PREFETCH)


def _inputs(module_text, seed=0):
    module = xla.parse_hlo_module(module_text)
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(tuple(p.shape.dimensions)).astype(np.float32)
            for p in module.entry.parameters]


def _same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape
    assert np.array_equal(a.view(np.uint8), b.view(np.uint8))


@pytest.mark.parametrize("path", [JAX_SOFTMAX, JAX_LAYERNORM], ids=["softmax", "layernorm"])
def test_jax_row_algorithms_prefetch_and_keep_their_bits(path, monkeypatch):
    text = gzip.open(path, "rt").read()
    fetched = _compile(text, 1, monkeypatch)
    plain = _compile(text, None, monkeypatch)
    assert _calls(fetched) > 0 and _calls(plain) == 0
    args = _inputs(text)
    for _ in range(2):
        _same_bits(fetched.execute(*args), plain.execute(*args))
    if path == JAX_SOFTMAX:
        x = args[0].astype(np.float64)
        e = np.exp(x - x.max(axis=1, keepdims=True))
        np.testing.assert_allclose(fetched.execute(*args), e / e.sum(axis=1, keepdims=True),
                                   rtol=1e-5, atol=1e-7)


def test_the_threshold_is_strict(monkeypatch):
    text = gzip.open(JAX_SOFTMAX, "rt").read()
    size = 256 * 512 * 4
    assert _calls(_compile(text, size - 1, monkeypatch)) > 0
    assert _calls(_compile(text, size, monkeypatch)) == 0


ROW_SUM = """HloModule rows
add {{
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}}
ENTRY e {{
  x = f32[{r},{c}] parameter(0)
  y = f32[{r},{c}] parameter(1)
  z = f32[] constant(0)
  p = f32[{r},{c}] multiply(x, y)
  s = f32[{r}] reduce(p, z), dimensions={{1}}, to_apply=add
  b = f32[{r},{c}] broadcast(s), dimensions={{0}}
  ROOT o = f32[{r},{c}] subtract(p, b)
}}
"""


@pytest.mark.parametrize("cols,expected", [(512, True), (1024, False), (8, False)],
                         ids=["two-2KB-rows", "two-4KB-rows", "32-byte-rows"])
def test_rows_prefetched_together_are_at_most_4KB_and_a_line(cols, expected, monkeypatch):
    # Two parameters read in both passes: their rows together are 4 KB
    # (prefetched), 8 KB (one burst too long) or 64 bytes of 32-byte rows.
    text = ROW_SUM.format(r=64, c=cols)
    fetched = _compile(text, 1, monkeypatch)
    assert (_calls(fetched) > 0) == expected
    x, y = _inputs(text, seed=cols)
    _same_bits(fetched.execute(x, y), _compile(text, None, monkeypatch).execute(x, y))
    p = x.astype(np.float64) * y
    want = p - p.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(fetched.execute(x, y), want, rtol=1e-4, atol=1e-3)


GELU = """HloModule gelu
ENTRY e {
  x = f32[64,1024] parameter(0)
  h = f32[] constant(0.5)
  hb = f32[64,1024] broadcast(h), dimensions={}
  t = f32[64,1024] tanh(x)
  one = f32[] constant(1)
  ob = f32[64,1024] broadcast(one), dimensions={}
  s = f32[64,1024] add(t, ob)
  m = f32[64,1024] multiply(x, s)
  ROOT r = f32[64,1024] multiply(m, hb)
}
"""


def test_an_elementwise_kernel_alone_does_not_prefetch(monkeypatch):
    # Not a row pass (no reduce, no value per row): a GELU over
    # f32[16384, 1024] ran 16-21% slower prefetched.
    assert _calls(_compile(GELU, 1, monkeypatch)) == 0


def test_objects_compiled_ahead_of_time_do_not_prefetch():
    assert _AotCompiler().prefetch_bytes() is None


def test_the_prefetched_row_is_checked_to_lie_inside_the_buffer(monkeypatch):
    # The prefetches are behind a branch on (row offset + 32 KB + a row) <=
    # the buffer's byte size (f32[256, 512]: 512 KB): none past the last row.
    text = gzip.open(JAX_SOFTMAX, "rt").read()
    ir_text = _compile(text, 1, monkeypatch).ir_text
    bounds = re.findall(r"(%\S+) = icmp ule i64 %\S+, " + str(256 * 512 * 4), ir_text)
    assert bounds and all(f"br i1 {name}, label" in ir_text for name in bounds)
    assert prefetch.AHEAD_BYTES == 32 * 1024 and prefetch.MAX_ROW_BYTES == 4096


def test_the_compile_options_name_the_threshold(monkeypatch):
    seen = []
    from xla.backends.cpu import compiler as cpu_compiler
    original = cpu_compiler.KernelCompiler.__init__

    def record(self, opt_level, options, *args, **kwargs):
        seen.append(options)
        original(self, opt_level, options, *args, **kwargs)
    monkeypatch.setattr(cpu_compiler.KernelCompiler, "__init__", record)
    _compile(GELU, 12345, monkeypatch)
    assert "prefetch=12345" in seen[-1]
