"""f8e4m3fn / f8e5m2 on the CPU backend: i8 in memory, f32 in registers,
rounded on store exactly as ml_dtypes (and the interpreter) round."""
import ml_dtypes
import numpy as np
import pytest

from xla import runtime
from xla.hlo.evaluator.evaluator import Evaluator
from xla.hlo.parser import parse_hlo_module
from xla.tools.arrays import flatten_result

TYPES = [("f8e4m3fn", ml_dtypes.float8_e4m3fn), ("f8e5m2", ml_dtypes.float8_e5m2)]


def _run_both(text, *args):
    cpu = flatten_result(runtime.compile(parse_hlo_module(text), "cpu").execute(*args))
    ref = flatten_result(Evaluator().evaluate(parse_hlo_module(text), list(args)))
    return [np.asarray(a) for a in cpu], [np.asarray(r) for r in ref]


def _boundary_values(dt):
    vals = np.arange(256, dtype=np.uint8).view(dt).astype(np.float32)
    vals = vals[np.isfinite(vals)]
    u = np.unique(vals.astype(np.float64))
    mids = ((u[1:] + u[:-1]) / 2).astype(np.float32)  # exact in f32
    top = np.float32(u[-1]) * np.float32(1.0625)  # the overflow boundary
    special = np.array([np.inf, -np.inf, np.nan, -np.nan, 1e30, -1e30, 0.0, -0.0, 1e-30, -1e-30,
                        np.uint32(0x7F800001).view(np.float32), top, -top,
                        np.nextafter(top, np.float32(0)), np.nextafter(top, np.float32(np.inf))],
                       np.float32)
    rand = np.random.default_rng(0).standard_normal(4096).astype(np.float32) * 64
    return np.concatenate([vals, mids, np.nextafter(mids, np.float32(np.inf)),
                           np.nextafter(mids, np.float32(-np.inf)), special, rand]).astype(np.float32)


@pytest.mark.parametrize("t,dt", TYPES, ids=[t for t, _ in TYPES])
def test_convert_all_bits_and_rounding_boundaries(t, dt):
    y = _boundary_values(dt)
    n = len(y)
    text = f"""HloModule m
ENTRY %main (x: {t}[256], y: f32[{n}]) -> (f32[256], {t}[{n}], f32[{n}], u8[{n}]) {{
  %x = {t}[256] parameter(0)
  %y = f32[{n}] parameter(1)
  %a = f32[256] convert(%x)
  %b = {t}[{n}] convert(%y)
  %c = f32[{n}] convert(%b)
  %d = u8[{n}] bitcast-convert(%b)
  ROOT %t = (f32[256], {t}[{n}], f32[{n}], u8[{n}]) tuple(%a, %b, %c, %d)
}}
"""
    allbits = np.arange(256, dtype=np.uint8).view(dt)
    cpu, ref = _run_both(text, allbits, y)
    with np.errstate(invalid="ignore"):
        expected = y.astype(dt)
    np.testing.assert_array_equal(cpu[0], allbits.astype(np.float32))
    np.testing.assert_array_equal(cpu[0], ref[0])
    assert cpu[1].dtype == dt
    np.testing.assert_array_equal(cpu[1].view(np.uint8), expected.view(np.uint8))
    np.testing.assert_array_equal(cpu[1].view(np.uint8), ref[1].view(np.uint8))
    np.testing.assert_array_equal(cpu[2], ref[2])
    np.testing.assert_array_equal(cpu[3], expected.view(np.uint8))


@pytest.mark.parametrize("t,dt", TYPES, ids=[t for t, _ in TYPES])
def test_arithmetic_and_f64_convert_match_interpreter(t, dt):
    text = f"""HloModule m
ENTRY %main (x: {t}[256], y: {t}[256], z: f64[512], i: s32[512]) -> ({t}[256], {t}[512], {t}[512], u8[256]) {{
  %x = {t}[256] parameter(0)
  %y = {t}[256] parameter(1)
  %z = f64[512] parameter(2)
  %i = s32[512] parameter(3)
  %s = {t}[256] multiply(%x, %y)
  %a = {t}[256] add(%s, %x)
  %cz = {t}[512] convert(%z)
  %ci = {t}[512] convert(%i)
  %bits = u8[256] parameter(4)
  %bc = {t}[256] bitcast-convert(%bits)
  %back = u8[256] bitcast-convert(%bc)
  ROOT %t = ({t}[256], {t}[512], {t}[512], u8[256]) tuple(%a, %cz, %ci, %back)
}}
""".replace("i: s32[512])", "i: s32[512], bits: u8[256])")
    rng = np.random.default_rng(1)
    x = np.arange(256, dtype=np.uint8).view(dt)
    y = rng.permutation(x)
    z = np.concatenate([rng.standard_normal(256) * 100,
                        np.arange(256, dtype=np.uint8).view(dt).astype(np.float64) * (1 + 2.0 ** -30)])
    i = rng.integers(-70000, 70000, 512).astype(np.int32)
    bits = np.arange(256, dtype=np.uint8)
    cpu, ref = _run_both(text, x, y, z, i, bits)
    for c, r in zip(cpu[:3], ref[:3]):
        assert c.dtype == r.dtype
        np.testing.assert_array_equal(c.astype(np.float32), r.astype(np.float32))
    # Bits survive a trip through registers, except that NaNs become the
    # canonical NaN ml_dtypes gives (as bf16 NaNs become quiet NaNs).
    nan = np.isnan(bits.view(dt).astype(np.float32))
    np.testing.assert_array_equal(cpu[3][~nan], bits[~nan])
    assert np.isnan(cpu[3][nan].view(dt).astype(np.float32)).all()
