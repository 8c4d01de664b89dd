"""bf16 divides by a multiply with the reciprocal (elemental_ir_emitter's
``_reciprocal_divide_is_exact``): the fact it rests on, checked exhaustively
over the numerators, and the CPU backend's quotients, bit for bit against
NumPy's f32 division rounded to bf16 (ml_dtypes), on both sides of the
reciprocal's range test."""
import ml_dtypes
import numpy as np

import xla

BF16 = ml_dtypes.bfloat16
ALL_BF16_AS_F32 = (np.arange(1 << 16, dtype=np.uint32) << 16).view(np.float32)


def _bits(a):
    return np.asarray(a).view(np.uint16)


def test_reciprocal_product_rounds_as_the_quotient():
    """For every bf16 x and divisors y with 2^-126 <= |y| <= 2^126 (1/y a
    normal f32): bf16(x * f32(1/y)) == bf16(x / y), both in f32. All 256
    sign-mantissa pairs of y at the exponents where ranges end or meet
    (the whole range, 64514 divisors, also holds: 45 s)."""
    mant = np.arange(256, dtype=np.uint32)   # sign and 7 mantissa bits
    ys = []
    for e in (1, 2, 3, 27, 100, 126, 127, 128, 150, 200, 251, 252, 253):   # biased exponents
        ys.append((((mant >> 7) << 15) | (e << 7) | (mant & 127)) << 16)
    ys = np.concatenate(ys).view(np.float32)
    assert np.abs(ys).min() == np.float32(2.0 ** -126) and np.abs(ys).max() < 2.0 ** 127
    x = ALL_BF16_AS_F32[None, :]
    with np.errstate(all="ignore"):
        for i in range(0, ys.size, 128):
            y = ys[i:i + 128, None]
            r = np.float32(1) / y
            want = _bits((x / y).astype(BF16))
            got = _bits((x * r).astype(BF16))
            assert np.array_equal(got, want), (y[np.nonzero(got != want)[0][0], 0])


DIVISORS = np.array([3.0, -0.3, 1.0, 2.0 ** -126, -(2.0 ** 126), 7e37, 2.0 ** -127, 1e-39,
                     2.0 ** 127, 3e38, 0.0, -0.0, np.inf, -np.inf, np.nan], np.float32)


def _module(body, rows, cols):
    return f"""HloModule q
ENTRY %main (x: bf16[{rows},{cols}], y: bf16[{rows}]) -> bf16[{rows},{cols}] {{
  %x = bf16[{rows},{cols}] parameter(0)
  %y = bf16[{rows}] parameter(1)
  %yb = bf16[{rows},{cols}] broadcast(%y), dimensions={{0}}
{body}
}}
"""


def _same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    nan = np.isnan(got.astype(np.float32))
    assert np.array_equal(nan, np.isnan(want.astype(np.float32)))
    assert np.array_equal(_bits(got)[~nan], _bits(want)[~nan])


def test_divide_by_row_values_is_the_rounded_quotient():
    """Every bf16 numerator over each divisor row: in range (the multiply),
    out of it (denormal, huge, zero, inf, NaN: the division), both loops."""
    rows, cols = DIVISORS.size, 1 << 16
    x = np.tile(np.arange(1 << 16, dtype=np.uint16).view(BF16), (rows, 1))
    y = DIVISORS.astype(BF16)
    exe = xla.compile(_module("  ROOT %q = bf16[{0},{1}] divide(%x, %yb)".format(rows, cols),
                              rows, cols), backend="cpu")
    assert "fmul" in exe.ir_text and "fdiv" in exe.ir_text
    with np.errstate(all="ignore"):
        want = (x.astype(np.float32) / y.astype(np.float32)[:, None]).astype(BF16)
    _same(exe.execute(x, y), want)
    # Without excess precision every op rounds: the same quotients.
    exe = xla.compile(_module("  ROOT %q = bf16[{0},{1}] divide(%x, %yb)".format(rows, cols),
                              rows, cols), backend="cpu",
                      debug_options="--xla_allow_excess_precision=false")
    _same(exe.execute(x, y), want)


def test_quotient_used_in_the_kernel_stays_the_f32_quotient():
    """With excess precision a quotient that another op of the kernel uses
    stays x / y in f32, where x * (1/y) would differ in its last bits: a
    convert to f32 reads it as is, NumPy's f32 x / y bit for bit."""
    rows, cols = 4, 1 << 16
    x = np.tile(np.arange(1 << 16, dtype=np.uint16).view(BF16), (rows, 1))
    y = np.array([3.0, 0.7, 1.1, 9.0], np.float32).astype(BF16)
    text = f"""HloModule q
ENTRY %main (x: bf16[{rows},{cols}], y: bf16[{rows}]) -> f32[{rows},{cols}] {{
  %x = bf16[{rows},{cols}] parameter(0)
  %y = bf16[{rows}] parameter(1)
  %yb = bf16[{rows},{cols}] broadcast(%y), dimensions={{0}}
  %q = bf16[{rows},{cols}] divide(%x, %yb)
  ROOT %f = f32[{rows},{cols}] convert(%q)
}}
"""
    got = np.asarray(xla.compile(text, backend="cpu").execute(x, y))
    with np.errstate(all="ignore"):
        want = x.astype(np.float32) / y.astype(np.float32)[:, None]
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan)
    assert np.array_equal(got.view(np.uint32)[~nan], want.view(np.uint32)[~nan])


def test_gpu_kernels_keep_the_division():
    """The GPU backend shares the element generators but not the rewrite
    (its grid-stride loops are not unswitched: both paths would run)."""
    text = _module("  ROOT %q = bf16[2,64] divide(%x, %yb)", 2, 64)
    x = np.arange(128, dtype=np.uint16).reshape(2, 64).view(BF16)
    y = np.array([3.0, 0.7], np.float32).astype(BF16)
    exe = xla.compile(text, backend="gpu_emulator")
    assert "fdiv" in exe.ir_text and "fmul" not in exe.ir_text
    with np.errstate(all="ignore"):
        want = (x.astype(np.float32) / y.astype(np.float32)[:, None]).astype(BF16)
    _same(exe.execute(x, y), want)
