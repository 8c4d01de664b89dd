"""convert between every pair of the narrow types (sub-byte ints, the
minifloats) and a few wide ones, every value of the source, on the cpu and
the interpreter. Expected values: ml_dtypes casts through f32 (every source
value is exact in f32) for float results; truncation toward zero,
saturation and NaN -> 0 for float -> int (the project's convention);
wrapping for int -> int."""
import ml_dtypes
import numpy as np
import pytest

from xla import runtime
from xla.hlo.evaluator.evaluator import Evaluator
from xla.hlo.parser import parse_hlo_module

INTS = {"s1": ml_dtypes.int1, "u1": ml_dtypes.uint1, "s2": ml_dtypes.int2, "u2": ml_dtypes.uint2,
        "s4": ml_dtypes.int4, "u4": ml_dtypes.uint4, "s8": np.int8, "u16": np.uint16}
FLOATS = {"f8e4m3": ml_dtypes.float8_e4m3, "f8e3m4": ml_dtypes.float8_e3m4,
          "f8e4m3fnuz": ml_dtypes.float8_e4m3fnuz, "f8e5m2fnuz": ml_dtypes.float8_e5m2fnuz,
          "f8e4m3b11fnuz": ml_dtypes.float8_e4m3b11fnuz, "f8e8m0fnu": ml_dtypes.float8_e8m0fnu,
          "f4e2m1fn": ml_dtypes.float4_e2m1fn, "f6e3m2fn": ml_dtypes.float6_e3m2fn,
          "f6e2m3fn": ml_dtypes.float6_e2m3fn, "f8e5m2": ml_dtypes.float8_e5m2, "bf16": ml_dtypes.bfloat16}
ALL = dict(INTS, **FLOATS)
NARROW = [t for t in ALL if t not in ("s8", "u16", "bf16", "f8e5m2")]


def _values(t):
    dt = ALL[t]
    if t in INTS:
        info = ml_dtypes.iinfo(dt) if np.dtype(dt).kind == "V" else np.iinfo(dt)
        lo, hi = max(int(info.min), -300), min(int(info.max), 300)
        return np.arange(lo, hi + 1).astype(dt)
    if t == "bf16":
        return np.concatenate([np.linspace(-300, 300, 241), [np.nan, np.inf, -np.inf, 0.1]]).astype(dt)
    return np.arange(1 << ml_dtypes.finfo(dt).bits, dtype=np.uint8).view(dt)


def _expected(x, src, dst):
    ddt = ALL[dst]
    if dst in FLOATS:
        with np.errstate(invalid="ignore", over="ignore"):
            return x.astype(np.float32).astype(ddt)
    info = ml_dtypes.iinfo(ddt) if np.dtype(ddt).kind == "V" else np.iinfo(ddt)
    if src in FLOATS:
        v = x.astype(np.float64)
        with np.errstate(invalid="ignore"):
            v = np.where(np.isnan(v), 0, np.clip(np.trunc(np.nan_to_num(v)), int(info.min), int(info.max)))
        return v.astype(np.int64).astype(ddt)
    bits = int(dst[1:])
    v = x.astype(np.int64) & ((1 << bits) - 1)
    if dst[0] == "s":
        v = v - ((v >> (bits - 1)) << bits)
    return v.astype(ddt)


def _same(got, want):
    """Bit for bit (NaN codes included); bf16 by value (NaN as NaN)."""
    got, want = np.asarray(got), np.asarray(want)
    if got.dtype != want.dtype or got.shape != want.shape:
        return False
    if want.dtype.itemsize == 1:
        return np.array_equal(got.view(np.uint8), want.view(np.uint8))
    if want.dtype.kind in "iu":
        return np.array_equal(got, want)
    return np.array_equal(got.astype(np.float64), want.astype(np.float64), equal_nan=True)


@pytest.mark.parametrize("src", NARROW)
def test_convert_from_each_narrow_type(src):
    x = _values(src)
    n = len(x)
    dsts = [t for t in ALL if t != src]
    lines = [f"  y{i} = {d}[{n}] convert(x)" for i, d in enumerate(dsts)]
    shapes = ", ".join(f"{d}[{n}]" for d in dsts)
    text = (f"HloModule m\n\nENTRY e {{\n  x = {src}[{n}] parameter(0)\n" + "\n".join(lines)
            + f"\n  ROOT t = ({shapes}) tuple({', '.join(f'y{i}' for i in range(len(dsts)))})\n}}\n")
    cpu = runtime.compile(parse_hlo_module(text), "cpu").execute(x)
    ref = Evaluator().evaluate(parse_hlo_module(text), [x])
    bad = []
    for d, c, r in zip(dsts, cpu, ref):
        want = _expected(x, src, d)
        for name, got in (("cpu", c), ("interpreter", r)):
            if not _same(got, want):
                bad.append(f"{name}: {src} -> {d}")
    assert not bad, bad


@pytest.mark.parametrize("dst", NARROW)
def test_convert_from_wide_types(dst):
    xs = {"s8": _values("s8"), "u16": _values("u16"), "bf16": _values("bf16"), "f8e5m2": _values("f8e5m2")}
    lines, shapes, args, params = [], [], [], []
    for i, (src, x) in enumerate(xs.items()):
        params.append(f"  p{i} = {src}[{len(x)}] parameter({i})")
        lines.append(f"  y{i} = {dst}[{len(x)}] convert(p{i})")
        shapes.append(f"{dst}[{len(x)}]")
        args.append(x)
    text = ("HloModule m\n\nENTRY e {\n" + "\n".join(params + lines)
            + f"\n  ROOT t = ({', '.join(shapes)}) tuple({', '.join(f'y{i}' for i in range(len(xs)))})\n}}\n")
    cpu = runtime.compile(parse_hlo_module(text), "cpu").execute(*args)
    ref = Evaluator().evaluate(parse_hlo_module(text), args)
    bad = []
    for (src, x), c, r in zip(xs.items(), cpu, ref):
        want = _expected(x, src, dst)
        for name, got in (("cpu", c), ("interpreter", r)):
            if not _same(got, want):
                bad.append(f"{name}: {src} -> {dst}")
    assert not bad, bad
