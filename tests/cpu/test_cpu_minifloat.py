"""The minifloats (f8*, f6*, f4e2m1fn) on the CPU backend: i8 in memory, f32
in registers, rounded on store exactly as ml_dtypes (and the interpreter)
round. Expected values come from ml_dtypes casts. Arithmetic is compared
with the interpreter under --xla_allow_excess_precision=false, where every
op rounds as the interpreter's do (tests/cpu/test_excess_precision.py has
the default)."""
import os

import ml_dtypes
import numpy as np
import pytest

from xla import debug_options, runtime
from xla.hlo.evaluator.evaluator import Evaluator
from xla.hlo.parser import parse_hlo_module
from xla.tools.arrays import flatten_result

TYPES = [("f8e4m3fn", ml_dtypes.float8_e4m3fn), ("f8e5m2", ml_dtypes.float8_e5m2),
         ("f8e4m3", ml_dtypes.float8_e4m3), ("f8e3m4", ml_dtypes.float8_e3m4),
         ("f8e4m3fnuz", ml_dtypes.float8_e4m3fnuz), ("f8e5m2fnuz", ml_dtypes.float8_e5m2fnuz),
         ("f8e4m3b11fnuz", ml_dtypes.float8_e4m3b11fnuz), ("f8e8m0fnu", ml_dtypes.float8_e8m0fnu),
         ("f6e3m2fn", ml_dtypes.float6_e3m2fn), ("f6e2m3fn", ml_dtypes.float6_e2m3fn),
         ("f4e2m1fn", ml_dtypes.float4_e2m1fn)]


def _codes(dt):
    """Every code of ``dt`` (one per byte, in the low bits)."""
    return np.arange(1 << ml_dtypes.finfo(dt).bits, dtype=np.uint8).view(dt)


def _run_both(text, *args):
    with debug_options.override(xla_allow_excess_precision=False):
        exe = runtime.compile(parse_hlo_module(text), "cpu")
    cpu = flatten_result(exe.execute(*args))
    ref = flatten_result(Evaluator().evaluate(parse_hlo_module(text), list(args)))
    return [np.asarray(a) for a in cpu], [np.asarray(r) for r in ref]


def _boundary_values(dt):
    vals = _codes(dt).astype(np.float32)
    vals = vals[np.isfinite(vals)]
    u = np.unique(vals.astype(np.float64))
    mids = ((u[1:] + u[:-1]) / 2).astype(np.float32)  # exact in f32
    top = np.float32(u[-1]) * np.float32(1.0625)  # the overflow boundary
    f32_bits = np.uint32([0x7F800001, 0xFF800001, 0x7FFFFFFF, 0x00000001, 0x80000001, 0x00400000,
                          0x00400001, 0x005FFFFF, 0x00600000, 0x007FFFFF, 0x00800000, 0x7F7FFFFF])
    special = np.array([np.inf, -np.inf, np.nan, -np.nan, 1e30, -1e30, 0.0, -0.0, 1e-30, -1e-30,
                        *f32_bits.view(np.float32), top, -top,
                        np.nextafter(top, np.float32(0)), np.nextafter(top, np.float32(np.inf))],
                       np.float32)
    rand = np.random.default_rng(0).standard_normal(4096).astype(np.float32) * 64
    return np.concatenate([vals, mids, np.nextafter(mids, np.float32(np.inf)),
                           np.nextafter(mids, np.float32(-np.inf)), special, rand]).astype(np.float32)


@pytest.mark.parametrize("t,dt", TYPES, ids=[t for t, _ in TYPES])
def test_convert_all_bits_and_rounding_boundaries(t, dt):
    y = _boundary_values(dt)
    n = len(y)
    codes = _codes(dt)
    k = len(codes)
    bits = ml_dtypes.finfo(dt).bits
    u = f"u{bits}" if bits in (4, 8) else None  # there is no u6
    text = f"""HloModule m
ENTRY %main (x: {t}[{k}], y: f32[{n}]) -> (f32[{k}], {t}[{n}], f32[{n}], {u or t}[{n}]) {{
  %x = {t}[{k}] parameter(0)
  %y = f32[{n}] parameter(1)
  %a = f32[{k}] convert(%x)
  %b = {t}[{n}] convert(%y)
  %c = f32[{n}] convert(%b)
  %d = {u or t}[{n}] {"bitcast-convert" if u else "copy"}(%b)
  ROOT %t = (f32[{k}], {t}[{n}], f32[{n}], {u or t}[{n}]) tuple(%a, %b, %c, %d)
}}
"""
    cpu, ref = _run_both(text, codes, y)
    with np.errstate(invalid="ignore", over="ignore"):
        expected = y.astype(dt)
    np.testing.assert_array_equal(cpu[0], codes.astype(np.float32))  # NaNs where ml_dtypes has them
    np.testing.assert_array_equal(cpu[0], ref[0])
    assert cpu[1].dtype == dt
    np.testing.assert_array_equal(cpu[1].view(np.uint8), expected.view(np.uint8))
    np.testing.assert_array_equal(cpu[1].view(np.uint8), ref[1].view(np.uint8))
    np.testing.assert_array_equal(cpu[2], ref[2])
    np.testing.assert_array_equal(cpu[3].view(np.uint8), expected.view(np.uint8))


@pytest.mark.parametrize("t,dt", TYPES, ids=[t for t, _ in TYPES])
def test_convert_f32_sweep_bit_for_bit(t, dt):
    # Every 4093rd f32 bit pattern (both signs, subnormals, inf and NaNs
    # included), every value of the type, the ties between neighbours and
    # the f32 neighbours of both.
    sweep = np.arange(0, 1 << 32, 4093, dtype=np.uint64).astype(np.uint32).view(np.float32)
    vals = _codes(dt).astype(np.float32)
    vals = np.unique(vals[np.isfinite(vals)].astype(np.float64))
    ties = ((vals[1:] + vals[:-1]) / 2).astype(np.float32)  # exact in f32
    vals = np.concatenate([vals.astype(np.float32), ties])
    near = np.concatenate([np.nextafter(vals, np.float32(np.inf)), np.nextafter(vals, np.float32(-np.inf))])
    y = np.concatenate([sweep, vals, near]).astype(np.float32)
    n = len(y)
    text = f"""HloModule m
ENTRY %main (y: f32[{n}]) -> {t}[{n}] {{
  %y = f32[{n}] parameter(0)
  ROOT %b = {t}[{n}] convert(%y)
}}
"""
    cpu = np.asarray(runtime.compile(parse_hlo_module(text), "cpu").execute(y))
    with np.errstate(invalid="ignore", over="ignore"):
        expected = y.astype(dt)
    bad = np.flatnonzero(cpu.view(np.uint8) != expected.view(np.uint8))
    assert not bad.size, [(hex(int(y[i:i + 1].view(np.uint32)[0])), int(cpu.view(np.uint8)[i]),
                           int(expected.view(np.uint8)[i])) for i in bad[:8]]


@pytest.mark.parametrize("t,dt", TYPES, ids=[t for t, _ in TYPES])
def test_arithmetic_and_f64_convert_match_interpreter(t, dt):
    nbits = ml_dtypes.finfo(dt).bits
    u = {8: "u8", 4: "u4"}.get(nbits)
    udt = {8: np.uint8, 4: ml_dtypes.uint4}.get(nbits)
    text = f"""HloModule m
ENTRY %main (x: {t}[256], y: {t}[256], z: f64[512], i: s32[512], bits: {u or t}[256]) -> ({t}[256], {t}[512], {t}[512], {u or t}[256]) {{
  %x = {t}[256] parameter(0)
  %y = {t}[256] parameter(1)
  %z = f64[512] parameter(2)
  %i = s32[512] parameter(3)
  %s = {t}[256] multiply(%x, %y)
  %a = {t}[256] add(%s, %x)
  %cz = {t}[512] convert(%z)
  %ci = {t}[512] convert(%i)
  %bits = {u or t}[256] parameter(4)
  %bc = {t}[256] {"bitcast-convert" if u else "copy"}(%bits)
  %back = {u or t}[256] {"bitcast-convert" if u else "copy"}(%bc)
  ROOT %t = ({t}[256], {t}[512], {t}[512], {u or t}[256]) tuple(%a, %cz, %ci, %back)
}}
"""
    rng = np.random.default_rng(1)
    x = np.resize(_codes(dt), 256)
    y = rng.permutation(x)
    z = np.concatenate([rng.standard_normal(256) * 100, x.astype(np.float64) * (1 + 2.0 ** -30)])
    i = rng.integers(-70000, 70000, 512).astype(np.int32)
    bits = np.resize(np.arange(1 << nbits, dtype=np.uint8), 256)
    bits = bits.view(udt) if u else bits.view(dt)
    cpu, ref = _run_both(text, x, y, z, i, bits)
    for c, r in zip(cpu[:3], ref[:3]):
        assert c.dtype == r.dtype
        np.testing.assert_array_equal(c.astype(np.float32), r.astype(np.float32))
    # Bits survive a trip through registers, except that NaNs become the
    # canonical NaN ml_dtypes gives (as bf16 NaNs become quiet NaNs).
    codes, back = bits.view(np.uint8), cpu[3].view(np.uint8)
    nan = np.isnan(codes.view(dt).astype(np.float32))
    np.testing.assert_array_equal(back[~nan], codes[~nan])
    assert np.isnan(back[nan].view(dt).astype(np.float32)).all()


_TOTALORDER = os.path.join(os.path.dirname(__file__), "fixtures", "totalorder_xla.npz")


@pytest.mark.parametrize("t,dt", TYPES, ids=[t for t, _ in TYPES])
def test_compare_of_every_pair_of_codes(t, dt):
    # FLOAT: IEEE on the values (ml_dtypes'). TOTALORDER: XLA:CPU's own
    # results (fixtures/totalorder_xla.npz, gen_totalorder.py); jaxlib 0.10.2
    # has no f6 types: those as f4e2m1fn (sign and magnitude of the bits at
    # the type's width).
    codes = _codes(dt)
    k = len(codes)
    x, y = np.repeat(codes, k), np.tile(codes, k)
    text = f"""HloModule m
ENTRY %main (x: {t}[{k * k}], y: {t}[{k * k}]) -> (pred[{k * k}], pred[{k * k}], pred[{k * k}]) {{
  %x = {t}[{k * k}] parameter(0)
  %y = {t}[{k * k}] parameter(1)
  %lt = pred[{k * k}] compare(%x, %y), direction=LT
  %ne = pred[{k * k}] compare(%x, %y), direction=NE
  %tlt = pred[{k * k}] compare(%x, %y), direction=LT, type=TOTALORDER
  ROOT %t = (pred[{k * k}], pred[{k * k}], pred[{k * k}]) tuple(%lt, %ne, %tlt)
}}
"""
    cpu, ref = _run_both(text, x, y)
    xf, yf = x.astype(np.float64), y.astype(np.float64)
    with np.load(_TOTALORDER) as xla_results:
        if t in xla_results:
            total = xla_results[t].reshape(-1)
        else:
            bits = ml_dtypes.finfo(dt).bits
            u = codes.view(np.uint8).astype(np.int64)
            top = 1 << (bits - 1)
            key = np.where(u & top, -(u & (top - 1)) - 1, u)
            total = (key[:, None] < key[None, :]).reshape(-1)
    with np.errstate(invalid="ignore"):
        want = [xf < yf, xf != yf, total]
    for c, r, w in zip(cpu, ref, want):
        np.testing.assert_array_equal(c, w)
        np.testing.assert_array_equal(r, w)


def test_sort_total_order_on_cpu_as_xla():
    # jax.lax.sort's comparator on floats is TOTALORDER; fnuz's NaN first.
    t, dt = "f8e4m3fnuz", ml_dtypes.float8_e4m3fnuz
    codes = np.random.default_rng(3).permutation(_codes(dt))
    text = f"""HloModule m
cmp {{
  a = {t}[] parameter(0)
  b = {t}[] parameter(1)
  ROOT lt = pred[] compare(a, b), direction=LT, type=TOTALORDER
}}

ENTRY e {{
  x = {t}[256] parameter(0)
  ROOT s = {t}[256] sort(x), dimensions={{0}}, to_apply=cmp
}}
"""
    cpu, ref = _run_both(text, codes)
    with np.load(_TOTALORDER) as xla_results:
        below = xla_results[t].sum(axis=0)  # how many codes are below each code
    want = np.argsort(below, kind="stable").astype(np.uint8)
    np.testing.assert_array_equal(cpu[0].view(np.uint8), want)
    np.testing.assert_array_equal(ref[0].view(np.uint8), want)
