"""Reductions to small outputs split into chunks across the thread pool
(ir_emitter.ModuleEmitter.emit_chunked_reduce): checked against NumPy,
integers exactly, and bit-identical results for every thread count."""
import numpy as np
import pytest

from xla import _core
from xla import runtime
from xla.hlo.parser import parse_hlo_module


def reducer(name, op, t):
    return f"""
%{name} (a: {t}[], b: {t}[]) -> {t}[] {{
  %a = {t}[] parameter(0)
  %b = {t}[] parameter(1)
  ROOT %rr = {t}[] {op}(%a, %b)
}}
"""


def reduce_module(t, in_dims, dims, op, init, out_dims, layout=""):
    ins = ",".join(map(str, in_dims))
    outs = ",".join(map(str, out_dims))
    return f"""HloModule m
{reducer("red", op, t)}
ENTRY %main (x: {t}[{ins}]{layout}) -> {t}[{outs}] {{
  %x = {t}[{ins}]{layout} parameter(0)
  %init = {t}[] constant({init})
  ROOT %r = {t}[{outs}] reduce(%x, %init), dimensions={{{",".join(map(str, dims))}}}, to_apply=%red
}}
"""


def compile_cpu(text):
    return runtime.compile(parse_hlo_module(text), "cpu")


def is_chunked(exe):
    return ".combine" in exe.ir_text


N = 1 << 18 | 37  # not a multiple of the chunk count nor of the vector width


@pytest.mark.parametrize("t,np_t,op,init,np_fn", [
    ("s32", np.int32, "add", 5, lambda x, i: np.int32(x.sum(dtype=np.int32) + i)),
    ("u32", np.uint32, "multiply", 3, lambda x, i: np.uint32(np.prod(x, dtype=np.uint32) * np.uint32(i))),
    ("s64", np.int64, "maximum", -7, lambda x, i: max(x.max(), i)),
    ("s8", np.int8, "minimum", 100, lambda x, i: min(x.min(), i)),
    ("u16", np.uint16, "and", 65535, lambda x, i: np.bitwise_and.reduce(x) & np.uint16(i)),
    ("s16", np.int16, "or", 0, lambda x, i: np.bitwise_or.reduce(x)),
])
def test_integer_reductions_to_a_scalar_are_exact(t, np_t, op, init, np_fn):
    rng = np.random.default_rng(0)
    info = np.iinfo(np_t)
    if op == "multiply":
        x = np.where(rng.random(N) < 0.999, 1, rng.integers(1, 4, N)).astype(np_t)
    elif op == "and":
        x = (np_t(info.max) ^ (np_t(1) << rng.integers(0, 3, N).astype(np_t))).astype(np_t)
    else:
        x = rng.integers(info.min, info.max, N, dtype=np_t, endpoint=True)
    exe = compile_cpu(reduce_module(t, [N], [0], op, init, []))
    assert is_chunked(exe)
    out = exe.execute(x)
    assert out == np_fn(x, np_t(init))


@pytest.mark.parametrize("op,init,np_fn", [
    ("add", 1.5, lambda x: x.astype(np.float64).sum() + 1.5),
    ("maximum", "-inf", lambda x: x.max()),
    ("minimum", "inf", lambda x: x.min()),
])
def test_float_reductions_to_a_scalar(op, init, np_fn):
    x = np.random.default_rng(1).standard_normal(N).astype(np.float32)
    out = compile_cpu(reduce_module("f32", [N], [0], op, init, [])).execute(x)
    np.testing.assert_allclose(out, np_fn(x), rtol=1e-5)


@pytest.mark.parametrize("in_dims,dims,out_dims,layout,chunked", [
    ([4, 70001], [1], [4], "", True),           # rows, few of them
    ([70001, 3], [0], [3], "", True),           # columns
    ([513, 257], [0, 1], [], "", True),         # all dimensions
    ([3, 300, 301], [0, 2], [300], "", False),  # too many outputs
    ([300, 301], [0], [301], "{0,1}", False),   # column-major: dim 0 is the minor one
])
def test_small_output_reductions(in_dims, dims, out_dims, layout, chunked):
    x = np.random.default_rng(2).integers(-1000, 1000, in_dims).astype(np.int32)
    exe = compile_cpu(reduce_module("s32", in_dims, dims, "add", 7, out_dims, layout))
    assert is_chunked(exe) == chunked
    out = exe.execute(x)
    np.testing.assert_array_equal(out, x.sum(axis=tuple(dims), dtype=np.int32) + 7)


def test_fused_reduction_with_negative_zero_and_nan():
    x = np.full(N, -0.0, np.float32)
    exe = compile_cpu(reduce_module("f32", [N], [0], "add", "-0", []))
    assert np.signbit(exe.execute(x))
    x[12345] = np.nan
    assert np.isnan(exe.execute(x))
    assert np.isnan(compile_cpu(reduce_module("f32", [N], [0], "maximum", "-inf", [])).execute(x))


def test_float_results_do_not_depend_on_the_thread_count():
    x = np.random.default_rng(3).standard_normal(1 << 20).astype(np.float32)
    exe = compile_cpu(reduce_module("f32", [1 << 20], [0], "add", 0, []))
    results = []
    try:
        for threads in (1, 2, 3, 7):
            _core.set_cpu_runtime_num_threads(threads)
            results.append(np.asarray(exe.execute(x)).tobytes())
    finally:
        _core.set_cpu_runtime_num_threads(0)
    assert len(set(results)) == 1


def test_non_associative_reducer_stays_serial():
    text = f"""HloModule m
%red (a: f32[], b: f32[]) -> f32[] {{
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %rr = f32[] subtract(%a, %b)
}}
ENTRY %main (x: f32[{N}]) -> f32[] {{
  %x = f32[{N}] parameter(0)
  %init = f32[] constant(0)
  ROOT %r = f32[] reduce(%x, %init), dimensions={{0}}, to_apply=%red
}}
"""
    x = np.ones(N, np.float32)
    exe = compile_cpu(text)
    assert not is_chunked(exe)
    assert exe.execute(x) == -N
