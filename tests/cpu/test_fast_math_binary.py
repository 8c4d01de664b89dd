"""fast_math's two-argument functions as vectorizable IR, no call in their
loops: hypot, sqrt(x^2 + y^2) (complex abs and the complex functions that
take a modulus use it), within one ulp of the true value over the whole
range of f32 and f64, denormals included, with C99's special cases
(hypot(+-inf, NaN) = inf); and atan2 (arctan2, the angle of a complex
number), within one ulp, with C99's signed zeros and infinities.

The reference is NumPy a type wider (float64 for f32, long double for
f64), rounded to the type. Measured (x86-64 AVX-512, 1.3M pairs each):

* hypot: f32 the rounded reference itself on every pair (a double
  rounding, sqrt in f64 then to f32, could differ by one); f64 1 ulp on
  0.013% of pairs, 0 on the rest (without the correction step: 1 ulp on
  about 7%).
* atan2: 1 ulp at most, on 7% (f32) and 6% (f64) of pairs (with pi/2 - r
  and pi - r as separate roundings instead of one constant: 2 ulps, 1 on
  22%)."""
import ctypes
import re

import numpy as np
import pytest
from llvmlite import ir

from xla.backends.cpu import fast_math
from xla.backends.cpu.jit import JitModule

from test_fast_math import _ordered

I8P = ir.IntType(8).as_pointer()
I64 = ir.IntType(64)
N = 1 << 19


FUNCS = ("hypot", "atan2")


def _loop(module, typ, func):
    """void <func>_loop(typ* out, typ* a, typ* b, i64 n): out[i] = func(a[i], b[i])."""
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [I8P, I8P, I8P, I64]), f"{func}_loop")
    for arg in fn.args[:3]:
        arg.add_attribute("noalias")
    entry, loop, done = (fn.append_basic_block(n) for n in ("entry", "loop", "done"))
    b = ir.IRBuilder(entry)
    out, xs, ys = (b.bitcast(a, typ.as_pointer()) for a in fn.args[:3])
    n = fn.args[3]
    b.cbranch(b.icmp_signed(">", n, ir.Constant(I64, 0)), loop, done)
    b.position_at_end(loop)
    i = b.phi(I64, "i")
    i.add_incoming(ir.Constant(I64, 0), entry)
    x = b.load(b.gep(xs, [i]))
    y = b.load(b.gep(ys, [i]))
    b.store(getattr(fast_math, func)(b, x, y), b.gep(out, [i]))
    nxt = b.add(i, ir.Constant(I64, 1))
    i.add_incoming(nxt, loop)
    b.cbranch(b.icmp_signed("<", nxt, n), loop, done)
    b.position_at_end(done)
    b.ret_void()


_JIT = {}


def _jit(dtype):
    if dtype not in _JIT:
        module = ir.Module(name=f"binary_{np.dtype(dtype).name}")
        for func in FUNCS:
            _loop(module, ir.FloatType() if dtype == np.float32 else ir.DoubleType(), func)
        _JIT[dtype] = JitModule(module)
    return _JIT[dtype]


def call(func, x, y):
    x, y = np.ascontiguousarray(x), np.ascontiguousarray(y)
    fn = _jit(x.dtype.type).function(f"{func}_loop", None, ctypes.c_void_p, ctypes.c_void_p,
                                     ctypes.c_void_p, ctypes.c_int64)
    out = np.empty_like(x)
    fn(out.ctypes.data, x.ctypes.data, y.ctypes.data, x.size)
    return out


def _pairs(dtype):
    """Random bit patterns (every binade, denormals, both signs), pairs of
    close magnitudes (the most cancellation-free but rounding-sensitive
    case), pairs far apart, and every pair of special values."""
    rng = np.random.default_rng(1)
    bits = np.uint32 if dtype == np.float32 else np.uint64
    width = 32 if dtype == np.float32 else 64
    raw = rng.integers(0, 1 << width, (2, N), dtype=np.uint64).astype(bits).view(dtype)
    close = rng.standard_normal(N).astype(dtype) * dtype(2.0) ** rng.integers(-60, 60, N).astype(dtype)
    near = (close * (1 + rng.uniform(-0.5, 0.5, N))).astype(dtype)
    info = np.finfo(dtype)
    special = np.array([0.0, -0.0, 1.0, -1.0, 3.0, 4.0, np.inf, -np.inf, np.nan, info.max,
                        -info.max, info.tiny, info.smallest_subnormal, info.max / 2,
                        np.sqrt(info.max), np.sqrt(info.tiny), 2.0 ** 500, 2.0 ** -450,
                        2.0 ** 501, 2.0 ** -451], np.float64)
    with np.errstate(over="ignore"):
        special = special.astype(dtype)
    sx, sy = np.meshgrid(special, special)
    x = np.concatenate([raw[0], close, sx.ravel()])
    y = np.concatenate([raw[1], near, sy.ravel()])
    return x, y


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_hypot_within_one_ulp_everywhere(dtype):
    x, y = _pairs(dtype)
    got = call("hypot", x, y)
    wide = np.float64 if dtype == np.float32 else np.longdouble
    with np.errstate(all="ignore"):
        want = np.hypot(x.astype(wide), y.astype(wide)).astype(dtype)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    inf = ok & np.isinf(want)
    np.testing.assert_array_equal(got[inf], want[inf])
    dist = np.abs(_ordered(got[ok]) - _ordered(want[ok]))
    assert dist.max() <= 1, (x[ok][np.argmax(dist)], y[ok][np.argmax(dist)])
    # Mostly the correctly rounded value itself.
    assert (dist == 0).mean() > 0.999


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_hypot_special_values(dtype):
    inf, nan = dtype(np.inf), dtype(np.nan)
    x = np.array([inf, -inf, nan, nan, 0, -0.0, 3, nan, 5e-324 if dtype == np.float64 else 1e-45],
                 dtype)
    y = np.array([nan, 1, inf, -inf, 0, -0.0, -4, 2, 0], dtype)
    got = call("hypot", x, y)
    assert list(got[:4]) == [np.inf] * 4        # C99: an infinite part wins over NaN
    assert got[4] == 0 and not np.signbit(got[5]) and got[6] == 5
    assert np.isnan(got[7])
    assert got[8] == x[8]                       # the smallest denormal, kept


@pytest.mark.parametrize("func", FUNCS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_loop_has_no_call_and_is_vectorized(dtype, func):
    text = _jit(dtype).optimized_ir
    body = text[text.index(f"define void @{func}_loop"):]
    body = body[:body.index("\n}")]
    callees = set(re.findall(r"\bcall\b[^@]*@([\w.\"]+)", body))
    assert all(c.startswith("llvm.") for c in callees), callees
    assert re.search(r"<\d+ x (float|double)>", body), "not vectorized"


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_atan2_within_one_ulp_everywhere(dtype):
    x, y = _pairs(dtype)
    # and angles all around the circle at moderate radii
    rng = np.random.default_rng(2)
    a = rng.uniform(-np.pi, np.pi, 1 << 18)
    r = np.exp(rng.uniform(-5, 5, 1 << 18))
    y = np.concatenate([y, (r * np.sin(a)).astype(dtype)])
    x = np.concatenate([x, (r * np.cos(a)).astype(dtype)])
    got = call("atan2", y, x)
    wide = np.float64 if dtype == np.float32 else np.longdouble
    with np.errstate(all="ignore"):
        want = np.arctan2(y.astype(wide), x.astype(wide)).astype(dtype)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    dist = np.abs(_ordered(got[ok]) - _ordered(want[ok]))
    worst = np.argmax(dist)
    assert dist.max() <= 1, (y[ok][worst], x[ok][worst], got[ok][worst], want[ok][worst])
    assert (dist == 0).mean() > 0.9


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_atan2_special_values(dtype):
    inf, nan = np.inf, np.nan
    cases = [(0.0, 0.0), (-0.0, 0.0), (0.0, -0.0), (-0.0, -0.0), (0.0, -1.0), (-0.0, -1.0),
             (0.0, 1.0), (-0.0, 1.0), (1.0, 0.0), (-1.0, -0.0), (inf, inf), (-inf, inf),
             (inf, -inf), (-inf, -inf), (inf, 1.0), (-inf, -1.0), (1.0, inf), (-1.0, inf),
             (1.0, -inf), (-1.0, -inf), (nan, 1.0), (1.0, nan), (nan, inf), (inf, nan),
             (1e-45 if dtype == np.float32 else 5e-324, 1.0), (1.0, 1e30), (3.0, -1e-30)]
    y = np.array([c[0] for c in cases], dtype)
    x = np.array([c[1] for c in cases], dtype)
    got = call("atan2", y, x)
    want = np.arctan2(y, x)   # C99's cases, as NumPy (libm) gives them
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    np.testing.assert_array_equal(np.signbit(got[ok]), np.signbit(want[ok]))
    assert np.abs(_ordered(got[ok]) - _ordered(want[ok])).max() <= 1
