"""Accuracy and vectorization of the branch-free math functions (fast_math.py).

Each function is emitted into a plain loop over an array, JIT-compiled, and
run on ~1M inputs spread over the whole range of the type (uniform in bit
pattern, so every binade is hit, denormals included), dense samples near the
interesting points (0, 1, -1, the overflow and underflow thresholds) and the
special values. The reference is NumPy in a wider type (float64 for f32,
long double for f64) rounded to the result type; the error is the distance
in representable values (ulps), NaN must match NaN, and infinities and
signed zeros must match exactly.

Measured (x86-64 AVX2+FMA, llvmlite 0.50 / LLVM 22), max ulp distance:

    function    f32          f64
    exp          1 (0.95)     1 (0.95)
    log          1 (0.80)     1 (0.78)
    expm1        1 (1.37)     2 (1.78)
    log1p        1 (0.77)     1 (0.77)
    tanh         2 (2.21)     2 (2.49)
    logistic     2 (2.09)     2 (1.94)

(in parentheses: the error against the unrounded reference, in ulps.)

``python tests/cpu/test_fast_math.py`` prints the table (with fractional
ulps measured against the unrounded reference).
"""
import ctypes
import math
import re

import numpy as np
import pytest
from llvmlite import ir

from xla.backends.cpu import fast_math
from xla.backends.cpu.jit import JitModule

I8P = ir.IntType(8).as_pointer()
I64 = ir.IntType(64)

FUNCS = ["exp", "log", "expm1", "log1p", "tanh", "logistic"]
# Allowed ulps (the measured maximum, see the module docstring).
MAX_ULPS = {
    ("exp", "f32"): 1, ("log", "f32"): 1, ("expm1", "f32"): 1, ("log1p", "f32"): 1,
    ("tanh", "f32"): 2, ("logistic", "f32"): 2,
    ("exp", "f64"): 1, ("log", "f64"): 1, ("expm1", "f64"): 2, ("log1p", "f64"): 1,
    ("tanh", "f64"): 2, ("logistic", "f64"): 2,
}
N_RANDOM = 1 << 20


def _ref_logistic(x):
    with np.errstate(over="ignore"):
        return np.where(x >= 0, 1 / (1 + np.exp(-x)), np.exp(x) / (1 + np.exp(x)))


# f32 only (f64 keeps libm's): erf.
F32_ONLY = ["erf_f32"]
_erf = np.frompyfunc(math.erf, 1, 1)
REFERENCE = {"exp": np.exp, "log": np.log, "expm1": np.expm1, "log1p": np.log1p,
             "tanh": np.tanh, "logistic": _ref_logistic,
             "erf_f32": lambda x: _erf(x).astype(x.dtype)}


def _llvm_type(dtype):
    return ir.FloatType() if dtype == np.float32 else ir.DoubleType()


def _add_loop(module, name, emit, typ):
    """void name(typ* out, typ* in, i64 n): out[i] = emit(in[i])."""
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [I8P, I8P, I64]), name)
    for arg in fn.args[:2]:
        arg.add_attribute("noalias")
    entry, loop, done = (fn.append_basic_block(n) for n in ("entry", "loop", "done"))
    b = ir.IRBuilder(entry)
    out = b.bitcast(fn.args[0], typ.as_pointer())
    inp = b.bitcast(fn.args[1], typ.as_pointer())
    n = fn.args[2]
    b.cbranch(b.icmp_signed(">", n, ir.Constant(I64, 0)), loop, done)
    b.position_at_end(loop)
    i = b.phi(I64, "i")
    i.add_incoming(ir.Constant(I64, 0), entry)
    x = b.load(b.gep(inp, [i]), align=4)
    b.store(emit(b, x), b.gep(out, [i]), align=4)
    nxt = b.add(i, ir.Constant(I64, 1))
    i.add_incoming(nxt, loop)
    b.cbranch(b.icmp_signed("<", nxt, n), loop, done)
    b.position_at_end(done)
    b.ret_void()


_JIT = {}


def _jit(dtype):
    key = np.dtype(dtype).name
    if key not in _JIT:
        module = ir.Module(name=f"fast_math_{key}")
        for f in FUNCS + (F32_ONLY if key == "float32" else []):
            _add_loop(module, f"{f}_{key}", getattr(fast_math, f), _llvm_type(dtype))
        _JIT[key] = JitModule(module)
    return _JIT[key]


def run(func, x):
    x = np.ascontiguousarray(x)
    jit = _jit(x.dtype)
    fn = jit.function(f"{func}_{x.dtype.name}", None, ctypes.c_void_p, ctypes.c_void_p,
                      ctypes.c_int64)
    out = np.empty_like(x)
    fn(out.ctypes.data, x.ctypes.data, x.size)
    return out


def inputs(dtype, seed=0):
    """~1M inputs over the whole range, plus dense samples and specials."""
    rng = np.random.default_rng(seed)
    if dtype == np.float32:
        bits = rng.integers(0, 1 << 32, N_RANDOM, dtype=np.uint64).astype(np.uint32)
        wide = bits.view(np.float32)
        thresholds = [88.72283, 88.7229, -87.33654, -103.27893, -103.97208, -17.3, 9.01]
    else:
        bits = rng.integers(0, 1 << 64, N_RANDOM, dtype=np.uint64)
        wide = bits.view(np.float64)
        thresholds = [709.782712893384, -708.3964185322641, -744.4400719213812,
                      -745.1332191019411, -37.4, 19.06]
    info = np.finfo(dtype)
    dense = [rng.uniform(-1, 1, 1 << 16), rng.uniform(-2, 2, 1 << 16) * 1e-3,
             rng.uniform(0, 2, 1 << 16), 1 + rng.uniform(-1, 1, 1 << 15) * 1e-3,
             -1 + rng.uniform(0, 1, 1 << 14) * 2.0 ** -10, rng.uniform(-30, 30, 1 << 16),
             rng.uniform(-800, 800, 1 << 15)]
    for t in thresholds:
        dense.append(t + rng.uniform(-1, 1, 1 << 12) * abs(t) * 1e-5)
    special = [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, float(info.max), -float(info.max),
               float(info.tiny), -float(info.tiny), float(info.smallest_subnormal),
               -float(info.smallest_subnormal), 0.5, 2.0, 1e-30, -1e-30]
    with np.errstate(all="ignore"):
        parts = [wide] + [np.asarray(d).astype(dtype) for d in dense]
        parts.append(np.array(special, np.float64).astype(dtype))
    return np.concatenate(parts)


def reference(func, x):
    wide = np.float64 if x.dtype == np.float32 else np.longdouble
    with np.errstate(all="ignore"):
        return REFERENCE[func](x.astype(wide)), REFERENCE[func](x.astype(wide)).astype(x.dtype)


def _ordered(x):
    itype = {4: np.int32, 8: np.int64}[x.dtype.itemsize]
    s = x.view(itype).astype(np.int64)
    mag = s & np.int64(np.iinfo(itype).max)
    return np.where(s < 0, -mag, mag)


def errors(func, x):
    """(max ulp distance, max fractional ulps, mismatch description or None)."""
    got = run(func, x)
    exact, want = reference(func, x)
    gn, wn = np.isnan(got), np.isnan(want)
    problems = []
    if (gn != wn).any():
        idx = np.nonzero(gn != wn)[0][:5]
        problems.append(f"NaN mismatch at x={x[idx].tolist()}: got {got[idx].tolist()}")
    ok = ~(gn | wn)
    inf_or_zero = ok & (np.isinf(want) | (want == 0))
    bad_special = inf_or_zero & (got.view(f"u{x.dtype.itemsize}") != want.view(f"u{x.dtype.itemsize}"))
    if bad_special.any():
        idx = np.nonzero(bad_special)[0][:5]
        problems.append(f"inf/zero mismatch at x={x[idx].tolist()}: got {got[idx].tolist()} "
                        f"want {want[idx].tolist()}")
    dist = np.abs(_ordered(got[ok]) - _ordered(want[ok]))
    finite = ok & np.isfinite(want) & (want != 0)
    with np.errstate(all="ignore"):
        ulp = np.spacing(np.abs(want[finite])).astype(exact.dtype)
        # below the smallest normal, ulps are the denormal spacing
        frac = np.abs(got[finite].astype(exact.dtype) - exact[finite]) / ulp
    worst = int(dist.max()) if dist.size else 0
    if worst:
        i = np.nonzero(ok)[0][np.argmax(dist)]
        problems.append(f"worst at x={x[i]!r}: got {got[i]!r} want {want[i]!r}")
    return worst, float(frac.max()) if frac.size else 0.0, problems


@pytest.mark.parametrize("dtype", ["f32", "f64"])
@pytest.mark.parametrize("func", FUNCS)
def test_accuracy(func, dtype):
    x = inputs(np.float32 if dtype == "f32" else np.float64)
    worst, _, problems = errors(func, x)
    assert not [p for p in problems if not p.startswith("worst")], problems
    assert worst <= MAX_ULPS[(func, dtype)], problems


@pytest.mark.parametrize("func,x,want", [
    ("exp", [-np.inf, np.inf, np.nan, 89.0, 88.8, -104.0, 0.0, -0.0, 1e-45],
     [0.0, np.inf, np.nan, np.inf, np.inf, 0.0, 1.0, 1.0, 1.0]),
    ("log", [0.0, -0.0, -1.0, -1e-45, -np.inf, np.inf, np.nan, 1.0],
     [-np.inf, -np.inf, np.nan, np.nan, np.nan, np.inf, np.nan, 0.0]),
    ("expm1", [-np.inf, np.inf, np.nan, -0.0, 0.0, 1e-40, -1e-40, -30.0, 89.0],
     [-1.0, np.inf, np.nan, -0.0, 0.0, 1e-40, -1e-40, -1.0, np.inf]),
    ("log1p", [-1.0, -2.0, -np.inf, np.inf, np.nan, -0.0, 0.0, 1e-40, -1e-40],
     [-np.inf, np.nan, np.nan, np.inf, np.nan, -0.0, 0.0, 1e-40, -1e-40]),
    ("tanh", [-np.inf, np.inf, np.nan, -0.0, 0.0, 1e-40, -1e-40, 20.0, -20.0],
     [-1.0, 1.0, np.nan, -0.0, 0.0, 1e-40, -1e-40, 1.0, -1.0]),
    ("logistic", [-np.inf, np.inf, np.nan, 0.0, -0.0, -200.0, 200.0],
     [0.0, 1.0, np.nan, 0.5, 0.5, 0.0, 1.0]),
])
def test_special_values_f32(func, x, want):
    """Bit-exact results (NaN for NaN) at the special points."""
    got = run(func, np.array(x, np.float32))
    want = np.array(want, np.float64).astype(np.float32)
    same = (got.view(np.uint32) == want.view(np.uint32)) | (np.isnan(got) & np.isnan(want))
    assert same.all(), f"{func}({x}): got {got.tolist()} want {want.tolist()}"


def test_erf_f32_accuracy():
    x = inputs(np.float32)
    worst, _, problems = errors("erf_f32", x)
    assert not [p for p in problems if not p.startswith("worst")], problems
    assert worst <= 1, problems
    x = np.array([-np.inf, np.inf, np.nan, -0.0, 0.0, 1e-45, -1e-40, 4.0, -3.95, 1.0, -1.0,
                  1.5, -1.4999999], np.float32)
    got = run("erf_f32", x)
    want = np.array([math.erf(v) for v in x.astype(np.float64)]).astype(np.float32)
    same = (got.view(np.uint32) == want.view(np.uint32)) | (np.isnan(got) & np.isnan(want))
    assert same.all(), (x[~same], got[~same], want[~same])


def test_exp_loop_vectorizes():
    """An elementwise exp over f32, through the elemental emitter's row, becomes
    <8 x float> (or <4 x float>) code with no call left in the loop."""
    from kernel_harness import KernelLibrary
    from xla.hlo.parser import parse_hlo_module
    hlo = "HloModule m\n\nENTRY e {\n  p0 = f32[1024] parameter(0)\n" \
          "  ROOT r = f32[1024] exponential(p0)\n}"
    lib = KernelLibrary("vec_exp")
    lib.add("exp_kernel", parse_hlo_module(hlo).entry.root_instruction)
    text = lib.compile().optimized_ir
    assert "<8 x float>" in text or "<4 x float>" in text, text
    body = text[text.index("define void @exp_kernel"):]
    body = body[:body.index("\n}")]
    callees = set(re.findall(r"\bcall\b[^@]*@([\w.\"]+)", body))
    assert callees <= {"llvm.fmuladd.v16f32", "llvm.fmuladd.v8f32", "llvm.fmuladd.v4f32",
                       "llvm.fmuladd.f32"}, callees
    assert "@llvm.fmuladd.v8f32" in body or "@llvm.fmuladd.v4f32" in body
    assert "expf" not in text and "llvm.exp." not in text
    got = lib.run("exp_kernel", ((1024,), np.float32),
                  np.linspace(-110, 90, 1024, dtype=np.float32), None)
    want = np.exp(np.linspace(-110, 90, 1024, dtype=np.float32).astype(np.float64))
    with np.errstate(over="ignore"):
        want = want.astype(np.float32)
    assert np.max(np.abs(_ordered(got) - _ordered(want))) <= 1


@pytest.mark.parametrize("opcode", ["exponential", "log", "tanh", "logistic",
                                    "exponential-minus-one", "log-plus-one"])
def test_emitter_rows_have_no_calls(opcode):
    """The f32 rows of these opcodes emit no libm call (only vectorizable intrinsics)."""
    from kernel_harness import KernelLibrary
    from xla.hlo.parser import parse_hlo_module
    hlo = f"HloModule m\n\nENTRY e {{\n  p0 = f32[64] parameter(0)\n" \
          f"  ROOT r = f32[64] {opcode}(p0)\n}}"
    lib = KernelLibrary("rows_" + opcode.replace("-", "_"))
    lib.add("k", parse_hlo_module(hlo).entry.root_instruction)
    text = str(lib.module)
    calls = {line.split("@")[1].split("(")[0].strip('"') for line in text.splitlines() if " call " in line}
    assert all(c.startswith(("llvm.fmuladd", "llvm.fabs", "llvm.copysign")) for c in calls), calls


def main():
    print(f"{'function':10s} {'dtype':5s} {'max ulp':>8s} {'max frac ulp':>13s}")
    for dtype in (np.float32, np.float64):
        x = inputs(dtype)
        for f in FUNCS:
            worst, frac, problems = errors(f, x)
            print(f"{f:10s} {np.dtype(dtype).name:7s} {worst:6d} {frac:13.3f}  "
                  + "; ".join(problems))


if __name__ == "__main__":
    main()


def test_fast_math_tanh_rational():
    """--xla_cpu_enable_fast_math's f32 tanh: 6 ulp at most (XLA's own
    measures 5), never beyond [-1, 1], specials exact."""
    module = ir.Module(name="tanh_rational")
    _add_loop(module, "tanh_rational_float32", fast_math.tanh_rational, _llvm_type(np.float32))
    jit = JitModule(module)
    fn = jit.function("tanh_rational_float32", None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)
    x = inputs(np.float32)
    got = np.empty_like(x)
    fn(got.ctypes.data, x.ctypes.data, x.size)
    _, want = reference("tanh", x)
    finite = np.isfinite(x)
    assert np.abs(got[finite]).max() <= 1.0
    ulps = np.abs(_ordered(got[finite]) - _ordered(want[finite]))
    assert ulps.max() <= 6, (ulps.max(), x[finite][ulps.argmax()])
    special = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-40], np.float32)
    out = np.empty_like(special)
    fn(out.ctypes.data, special.ctypes.data, special.size)
    assert np.isnan(out[0]) and out[1] == 1.0 and out[2] == -1.0
    assert out[3] == 0.0 and not np.signbit(out[3]) and np.signbit(out[4])
    assert out[5] == np.float32(1e-40)


def test_fast_math_flag_selects_the_rational_tanh():
    import xla
    text = """HloModule t
ENTRY %main (x: f32[1000]) -> f32[1000] {
  %x = f32[1000] parameter(0)
  ROOT %t = f32[1000] tanh(%x)
}
"""
    x = np.linspace(-12, 12, 1000).astype(np.float32)
    accurate = xla.compile(text, backend="cpu")
    fast = xla.compile(text, backend="cpu", debug_options="--xla_cpu_enable_fast_math=true")
    # The rational form divides once and has no exponential's bit tricks.
    assert "bitcast" in accurate.ir_text and "bitcast" not in fast.ir_text
    want = np.tanh(x.astype(np.float64))
    np.testing.assert_allclose(fast.execute(x), want, rtol=6e-7, atol=1e-7)
    np.testing.assert_allclose(accurate.execute(x), want, rtol=1.2e-7, atol=1e-7)


@pytest.mark.parametrize("hlo_type,np_type", [("bf16", "bfloat16"), ("f16", "float16")])
def test_narrow_tanh_is_rational_and_correctly_rounded(hlo_type, np_type):
    """A bf16/f16 tanh computes the rational f32 form (fewer operations; its
    6 f32 ulp are far below the narrow type's half ulp): every one of the
    type's 65536 values rounds to the correctly rounded tanh, NaN to NaN;
    an f32 tanh keeps the accurate form."""
    import ml_dtypes
    import xla
    dtype = np.dtype(getattr(ml_dtypes, np_type, None) or np_type)

    def compiled(t):
        return xla.compile(f"HloModule t\nENTRY e {{\n  x = {t}[65536] parameter(0)\n"
                           f"  ROOT r = {t}[65536] tanh(x)\n}}\n", backend="cpu")

    # The rational form's clamp bound (9.02 as f32) is in its IR alone.
    clamp = str(ir.Constant(ir.FloatType(), float(np.float32(fast_math._TANH_RATIONAL_CLAMP))))
    clamp = clamp.split()[-1]
    narrow = compiled(hlo_type)
    assert clamp in narrow.ir_text and clamp not in compiled("f32").ir_text
    x = np.arange(1 << 16, dtype=np.uint16).view(dtype)
    got = narrow.execute(x)
    with np.errstate(invalid="ignore"):  # NaN casts
        wide = x.astype(np.float64)
        want = np.tanh(wide).astype(dtype)
    nan = np.isnan(wide)
    with np.errstate(invalid="ignore"):
        assert np.isnan(got[nan].astype(np.float64)).all()
    assert np.array_equal(got[~nan].view(np.uint16), want[~nan].view(np.uint16))


def test_exp_underflow_is_exactly_plus_zero():
    # Below the underflow threshold the lanes are computed at 0 and replaced
    # (no subnormal arithmetic for a softmax's masked -1e9/-inf lanes); the
    # result is +0 exactly, and the thresholds' neighbours keep their values.
    for dtype, below in ((np.float32, [-104.01, -1e9, -1e30, -np.inf]),
                         (np.float64, [-746.01, -1e300, -np.inf])):
        got = run("exp", np.array(below, dtype))
        assert np.array_equal(got, np.zeros(len(below), dtype)) and not np.signbit(got).any()
    near = np.array([-103.97, -103.9, -100.0, -87.5], np.float32)
    want = np.exp(near.astype(np.float64)).astype(np.float32)
    got = run("exp", near)
    assert (np.abs(got.view(np.int32) - want.view(np.int32)) <= 1).all(), (got, want)


_SCALEF_JIT = {}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("func", ["exp", "expm1", "logistic"])
def test_avx512_scalef_path_is_bit_identical(func, dtype):
    """With AVX-512F the final p * 2^n is llvm.ldexp (one vscalefps): the
    same single rounding as the two multiplications it replaces, so the
    results are the same bits, denormal results included (every f32 in
    [-104, -87], where exp's result is denormal)."""
    from xla.backends.cpu import jit, llvm_types
    if jit.host_vector_bits() < 512:
        pytest.skip("the host has no AVX-512F")
    key = np.dtype(dtype).name
    if key not in _SCALEF_JIT:
        module = ir.Module(name=f"fast_math_scalef_{key}")
        with llvm_types.vector_width(512):
            for f in ("exp", "expm1", "logistic"):
                _add_loop(module, f"{f}_{key}", getattr(fast_math, f), _llvm_type(dtype))
        assert "llvm.ldexp" in str(module)
        plain = ir.Module(name="plain")
        _add_loop(plain, "f", getattr(fast_math, func), _llvm_type(dtype))
        assert "llvm.ldexp" not in str(plain)   # 256 bits wide: no AVX-512 assumed
        _SCALEF_JIT[key] = JitModule(module)
    x = inputs(dtype)
    if dtype == np.float32:
        lo, hi = np.float32(-87.0).view(np.uint32), np.float32(-104.0).view(np.uint32)
        x = np.concatenate([x, np.arange(lo, hi + 1, dtype=np.uint32).view(np.float32)])
    else:
        x = np.concatenate([x, np.linspace(-745.2, -708.0, 1 << 20)])
    fn = _SCALEF_JIT[key].function(f"{func}_{key}", None, ctypes.c_void_p, ctypes.c_void_p,
                                   ctypes.c_int64)
    got = np.empty_like(x)
    fn(got.ctypes.data, x.ctypes.data, x.size)
    want = run(func, x)   # emitted outside a compile: 256 bits wide, two multiplications
    u = f"u{x.dtype.itemsize}"
    diff = np.nonzero(got.view(u) != want.view(u))[0]
    assert diff.size == 0, (x[diff[:5]], got[diff[:5]], want[diff[:5]])
