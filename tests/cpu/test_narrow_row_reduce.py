"""Row maximum/minimum of f16 and bf16 in f32 vector accumulators
(reduction_emitter.row_identity): the same values as NumPy on the exactly
widened f32 values, as the interpreter, and, for rows of at least two
vectors (16 elements), the NaN and signed-zero rules of the f32 vector
row (NaN propagates, -0 orders below +0, a NaN init value propagates).
Narrow row sums run in f32 vector lanes too, reassociated as f32 ones are,
rounded once."""
import math

import ml_dtypes
import numpy as np
import pytest

import xla

TYPES = [("bf16", ml_dtypes.bfloat16), ("f16", np.float16)]


def _module(et, c, rows=8, element="x"):
    """max and min of each row of ``element`` (an HLO expression of %x)
    with init value parameter %i."""
    body = {"x": "", "xy": f"  %e = {et}[{rows},{c}] multiply(%x, %x)\n",
            "erf": f"  %e = {et}[{rows},{c}] erf(%x)\n"}[element]
    src = "%x" if element == "x" else "%e"
    return f"""HloModule m

%max (a: {et}[], b: {et}[]) -> {et}[] {{
  %a = {et}[] parameter(0)
  %b = {et}[] parameter(1)
  ROOT %r = {et}[] maximum(%a, %b)
}}

%min (a: {et}[], b: {et}[]) -> {et}[] {{
  %a = {et}[] parameter(0)
  %b = {et}[] parameter(1)
  ROOT %r = {et}[] minimum(%a, %b)
}}

ENTRY %main (x: {et}[{rows},{c}], i: {et}[]) -> ({et}[{rows}], {et}[{rows}]) {{
  %x = {et}[{rows},{c}] parameter(0)
  %i = {et}[] parameter(1)
{body}  %ra = {et}[{rows}] reduce({src}, %i), dimensions={{1}}, to_apply=%max
  %rb = {et}[{rows}] reduce({src}, %i), dimensions={{1}}, to_apply=%min
  ROOT %t = ({et}[{rows}], {et}[{rows}]) tuple(%ra, %rb)
}}"""


def _signed_max(values):
    """max with -0 ordered below +0 (IEEE 754-2019 maximum, no NaNs)."""
    return max(values, key=lambda v: (v, not math.copysign(1.0, v) < 0))


def _expected(x, init):
    """Row max and min in f64 from the exactly widened values: NaN if the
    row or init has one, -0 below +0."""
    rows = [[float(v) for v in r] + [float(init)] for r in x]
    mx = [math.nan if any(map(math.isnan, r)) else _signed_max(r) for r in rows]
    mn = [math.nan if any(map(math.isnan, r)) else -_signed_max([-v for v in r]) for r in rows]
    return np.array(mx), np.array(mn)


def _rows(c, dt, seed):
    rng = np.random.RandomState(seed)
    x = (rng.standard_normal((8, c)) * 100).astype(dt)
    x[0, :] = -0.0
    x[0, c // 2] = 0.0                       # -0 ... +0 ... -0
    x[1, :] = 0.0
    x[1, c - 1] = -0.0                       # +0 ... -0 last
    x[2, :] = -np.inf                        # all -inf
    x[3, :] = np.inf
    x[3, c // 3] = -np.inf                   # +inf and one -inf
    x[4, c - 1] = np.nan                     # NaN in the last element (the remainder)
    x[5, :] = np.nan                         # all NaN
    x[6, :] = -(np.abs(x[6, :]) + dt(1))     # negatives, one -0
    x[6, c // 3] = -0.0
    x[7, 0] = dt(65504.0) if dt is np.float16 else ml_dtypes.finfo(dt).max
    return x


def _compile(text, backend="cpu"):
    return xla.compile(xla.parse_hlo_module(text), backend)


@pytest.mark.parametrize("et,dt", TYPES)
@pytest.mark.parametrize("c", [5, 15, 16, 17, 40, 1000, 1024])
def test_narrow_row_max_min_match_numpy_and_interpreter(et, dt, c):
    text = _module(et, c)
    exe, interp = _compile(text), _compile(text, "interpreter")
    x = _rows(c, dt, c)
    for init in (-np.inf, np.inf, 0.0, -0.0, 1.5, np.nan):
        a, b = exe.execute(x, dt(init))
        assert a.dtype == dt and b.dtype == dt
        want_a, want_b = _expected(x, init)
        msg = f"{et}[8,{c}] init {init}"
        np.testing.assert_array_equal(a.astype(np.float64), want_a, err_msg="max " + msg)
        np.testing.assert_array_equal(b.astype(np.float64), want_b, err_msg="min " + msg)
        ia, ib = interp.execute(x, dt(init))
        # (as f32: NumPy's NaN-aware equality does not know bfloat16)
        f32 = lambda v: v.astype(np.float32)  # noqa: E731
        np.testing.assert_array_equal(f32(a), f32(ia), err_msg="max vs interpreter " + msg)
        np.testing.assert_array_equal(f32(b), f32(ib), err_msg="min vs interpreter " + msg)
        if c >= 16:
            # Vector rows: the zero's sign follows IEEE maximum/minimum in
            # any order. (Shorter rows fold with the reducer's own code,
            # whose sign of a zero depends on the order, as for f32.)
            assert (np.signbit(a) == np.signbit(want_a)).all(), "max sign " + msg
            assert (np.signbit(b) == np.signbit(want_b)).all(), "min sign " + msg


@pytest.mark.parametrize("et,dt", TYPES)
def test_narrow_row_max_of_random_rows_with_remainders(et, dt):
    rows, c = 64, 1003                       # 1003 = 62 * 16 + 11
    exe = _compile(_module(et, c, rows=rows))
    x = np.random.RandomState(1).standard_normal((rows, c)).astype(dt)
    x[3, c // 2] = np.nan
    x[9, c - 1] = np.nan
    x[10, 7] = np.nan
    a, b = exe.execute(x, dt(-np.inf))
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(a.astype(np.float32), x.astype(np.float32).max(1))
    a, b = exe.execute(x, dt(np.inf))
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(b.astype(np.float32), x.astype(np.float32).min(1))


@pytest.mark.parametrize("et,dt", TYPES)
def test_narrow_row_max_of_a_fused_product_keeps_its_rounding(et, dt):
    # x*x is rounded to the narrow type before the maximum (the element's
    # own code); the maximum of those values is then exact.
    c = 1000
    exe = _compile(_module(et, c, element="xy"))
    x = (np.random.RandomState(2).standard_normal((8, c)) * 3).astype(dt)
    sq = (x.astype(np.float32) * x.astype(np.float32)).astype(dt)
    a, b = exe.execute(x, dt(-np.inf))
    np.testing.assert_array_equal(a, sq.astype(np.float32).max(1).astype(dt))
    a, b = exe.execute(x, dt(np.inf))
    np.testing.assert_array_equal(b, sq.astype(np.float32).min(1).astype(dt))


@pytest.mark.parametrize("et,dt", TYPES)
def test_narrow_row_max_of_a_libm_element_stays_sequential_and_correct(et, dt):
    # erf calls libm: the loop vectorizer cannot vectorize it, and the
    # narrow row is not hand-unrolled either.
    c = 1000
    exe = _compile(_module(et, c, element="erf"))
    x = np.random.RandomState(3).uniform(-2, 2, (8, c)).astype(dt)
    a, _ = exe.execute(x, dt(-np.inf))
    e = np.vectorize(math.erf)(x.astype(np.float64)).astype(np.float32).astype(dt)
    np.testing.assert_allclose(a.astype(np.float32), e.astype(np.float32).max(1), rtol=1e-2)


@pytest.mark.parametrize("et", ["bf16", "f16"])
def test_narrow_row_max_runs_in_f32_vectors(et, monkeypatch):
    # (Compiled as for a 256-bit target, whatever this CPU has: 8 f32 lanes.)
    from xla.backends.cpu.compiler import CpuCompiler
    monkeypatch.setattr(CpuCompiler, "vector_bits", lambda self: 256)
    exe = _compile(_module(et, 1000))
    opt = exe.optimized_ir_text
    assert "llvm.vector.reduce.fmaximum.v8f32" in opt or "llvm.maximum.v8f32" in opt
    assert "llvm.vector.reduce.fminimum.v8f32" in opt or "llvm.minimum.v8f32" in opt


@pytest.mark.parametrize("et,dt,big,small", [("bf16", ml_dtypes.bfloat16, 256.0, 2.0 ** -16),
                                              ("f16", np.float16, 2048.0, 2.0 ** -13)])
def test_narrow_row_sum_runs_in_f32_vectors(et, dt, big, small, monkeypatch):
    # Vectorized as an f32 row sum is (reassociated in f32 lanes), rounded
    # once at the end. Row 0 tells it from the sequential f32 sum: ``small``
    # is half an f32 ulp of ``big``, so big + small ties back to big at
    # every step and the sequential sum is ``big``, where lanes that sum
    # the smalls on their own reach the exact sum's value in the type
    # (about 2 (bf16) or 16 (f16) above ``big``).
    from xla.backends.cpu.compiler import CpuCompiler
    monkeypatch.setattr(CpuCompiler, "vector_bits", lambda self: 256)
    r, c = 2, 1 << 17
    exe = _compile(f"""HloModule m

%add (a: {et}[], b: {et}[]) -> {et}[] {{
  %a = {et}[] parameter(0)
  %b = {et}[] parameter(1)
  ROOT %r = {et}[] add(%a, %b)
}}

ENTRY %main (x: {et}[{r},{c}]) -> {et}[{r}] {{
  %x = {et}[{r},{c}] parameter(0)
  %z = {et}[] constant(0)
  ROOT %s = {et}[{r}] reduce(%x, %z), dimensions={{1}}, to_apply=%add
}}""")
    assert "fadd <8 x float>" in exe.optimized_ir_text or \
        "llvm.vector.reduce.fadd.v8f32" in exe.optimized_ir_text
    x = np.random.RandomState(4).standard_normal((r, c)).astype(dt)
    x[0, :] = dt(small)
    x[0, 0] = dt(big)
    got = exe.execute(x)
    exact = x.astype(np.float64).sum(axis=1)
    assert float(got[0]) == float(dt(exact[0])) > big
    sequential = np.add.accumulate(x.astype(np.float32), axis=1, dtype=np.float32)[:, -1]
    assert float(sequential[0]) == big
    # Row 1 (random values): the f32 sum's rounding, within one step of the
    # type of the exact sum.
    step = float(np.spacing(dt(abs(exact[1]))).astype(np.float64))
    assert abs(float(got[1]) - exact[1]) <= step
