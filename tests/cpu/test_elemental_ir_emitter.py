"""The CPU elemental IR emitter against the interpreter, op by op, dtype by dtype.

Each case is a one-op HLO module over 1-D arrays of edge values (0, -0,
NaN, +-inf, INT_MIN, -1, shift amounts past the width, denormals, float ->
int saturation boundaries, bf16/f16 rounding ties, ...). The op is emitted
with ``emit_elementwise`` inside a test-only loop (kernel_harness.py), all
cases with the same first-operand type share one JIT-compiled LLVM module,
and the result is compared with ``xla.hlo.evaluator.evaluate``:
integers and pred exactly, floats bit for bit (NaN matching NaN) for the
correctly rounded ops, within a few ulps for the transcendental ones.
"""
import functools
import itertools

import ml_dtypes
import numpy as np
import pytest

from kernel_harness import KernelLibrary
from xla.backends.cpu import llvm_types
from xla.backends.cpu.elemental_ir_emitter import _EMITTERS, emit_elementwise
from xla.hlo.evaluator import evaluate
from xla.errors import UnimplementedError
from xla.hlo import opcodes
from xla.hlo.parser import parse_hlo_module
from xla.hlo.types import PrimitiveType as PT
from xla.hlo.types import from_text

TYPES = "pred s8 s16 s32 s64 u8 u16 u32 u64 f16 bf16 f32 f64 c64 c128".split()
INTS = [t for t in TYPES if t[0] in "su"]
FLOATS = ["f16", "bf16", "f32", "f64"]
COMPLEX = ["c64", "c128"]
DIRECTIONS = ["EQ", "NE", "LT", "LE", "GT", "GE"]

# Allowed error in ulps of the result type (0: bit-exact, NaN matches NaN).
# exp/log/expm1/log1p/tanh/logistic are fast_math.py (<= 1 ulp, tanh and
# logistic <= 2, from the correctly rounded result); the interpreter's NumPy
# float32 kernels add their own error on top.
WIDE_ULPS = {
    "exponential": 2, "exponential-minus-one": 2, "log": 2, "log-plus-one": 2,
    "cbrt": 4, "tanh": 3, "logistic": 3, "sine": 4, "cosine": 4, "tan": 4, "erf": 4,
    "atan2": 4, "power": 4,
    "acos": 4, "acosh": 4, "asin": 4, "asinh": 4, "atanh": 4, "cosh": 4, "sinh": 4,
}
NARROW_ULPS = 1
# Complex transcendental results: error relative to |result|, in epsilons.
COMPLEX_EPS = 8


def _et(name):
    return from_text(name)


def _dtype(name):
    return _et(name).dtype


# ----------------------------------------------------------------------------
# edge values
# ----------------------------------------------------------------------------

_RNG = np.random.default_rng(1234)


def _int_edges(name):
    et = _et(name)
    bits = et.bits
    lo = -(1 << (bits - 1)) if et.is_signed_integer else 0
    hi = (1 << (bits - 1)) - 1 if et.is_signed_integer else (1 << bits) - 1
    vals = [0, 1, -1, 2, -2, 3, -3, 5, 7, 8, 15, 16, 31, 32, 33, 63, 64, 65, 100, -100,
            127, -128, 255, 256, 1000, -1000, 1 << 15, 1 << 31, 1 << 62,
            lo, lo + 1, hi, hi - 1, hi // 2, lo // 2]
    vals += [int(v) for v in _RNG.integers(-(1 << 62), 1 << 62, 6)]
    mask = (1 << bits) - 1
    out = []
    for v in vals:
        v &= mask
        if et.is_signed_integer and v >= 1 << (bits - 1):
            v -= 1 << bits
        out.append(v)
    return np.array(sorted(set(out)), dtype=et.dtype)


_FLOAT_BASE = [
    0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 3.0, 0.1, -0.1, 0.75, 7.0, -7.0,
    100.0, -100.0, 1e-3, 20.0, -20.0, 3.141592653589793, 2.718281828459045, 0.49999997,
    float("inf"), float("-inf"), float("nan"),
    127.5, 128.0, -128.5, -129.0, 255.5, 256.0, 32767.5, 32768.0, -32768.5, 65535.5, 65536.0,
    65504.0, 65519.0, 65520.0, -65520.0, 2.0 ** 31, -2.0 ** 31, 2.0 ** 31 - 128, 2.0 ** 32,
    2.0 ** 63, -2.0 ** 63, 2.0 ** 64, 1e10, -1e10, 1e30, 88.7, -87.5,
    1 + 2.0 ** -8, 1 + 3 * 2.0 ** -8, 1 + 2.0 ** -8 + 2.0 ** -20, 1 + 2.0 ** -11, 1 + 3 * 2.0 ** -11,
    -(1 + 2.0 ** -8), 6e-5, 6e-8, 1e-40, -1e-40,
    # The largest floats below 2^w and their neighbours (the float -> int
    # clamp where the bound is not a float), and just past the bounds.
    2.0 ** 32 - 256, 2.0 ** 32 - 512, -2.0 ** 31 - 256, 2.0 ** 64 - 2.0 ** 40, -0.9,
    -2.0 ** 63 - 2.0 ** 40, 2147483647.5, 2147483646.9, -2147483648.9, 4294967295.5,
    4294967294.2, 2.0 ** 64 - 2048, 2.0 ** 63 - 2048, -2.0 ** 63 - 2048,
]


def _float_edges(name):
    dtype = _dtype(name)
    info = np.finfo(np.float64 if name == "f64" else np.float32)
    vals = list(_FLOAT_BASE) + [float(info.tiny), -float(info.tiny), float(info.smallest_subnormal),
                                -float(info.smallest_subnormal), float(info.max), -float(info.max)]
    if name == "f64":
        vals += [1 + 2.0 ** -8 + 2.0 ** -40, 1 + 2.0 ** -24 + 2.0 ** -60, 1e300, -1e300, 1e-300,
                 2.0 ** 63 - 1024, 2.0 ** 53 + 2, 3.4028235677973366e38, 3.5e38, 700.0, -745.0]
    if name in ("f16", "bf16"):
        mlinfo = ml_dtypes.finfo(dtype)
        vals += [float(mlinfo.max), float(mlinfo.tiny), float(mlinfo.smallest_subnormal),
                 -float(mlinfo.smallest_subnormal)]
    vals += list(_RNG.normal(0, 10, 8)) + list(_RNG.normal(0, 1e4, 4))
    with np.errstate(all="ignore"):
        if name == "bf16":
            # through f32 first, as ml_dtypes does from f64
            return np.array(vals, np.float64).astype(np.float32).astype(dtype)
        return np.array(vals, np.float64).astype(dtype)


def _complex_edges(name, finite=False):
    reals = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 1e-3, 100.0, -0.75]
    if not finite:
        reals += [float("inf"), float("-inf"), float("nan")]
    vals = [complex(r, i) for r in reals for i in reals]
    vals += list(_RNG.normal(0, 3, 8) + 1j * _RNG.normal(0, 3, 8))
    return np.array(vals, _dtype(name))


def edges(name, finite=False):
    if name == "pred":
        return np.array([False, True])
    if name in INTS:
        return _int_edges(name)
    if name in FLOATS:
        return _float_edges(name)
    return _complex_edges(name, finite)


# ----------------------------------------------------------------------------
# cases
# ----------------------------------------------------------------------------

class Case:
    def __init__(self, opcode, operand_types, result_type, attrs="", inputs=None, ulps=0,
                 finite=False, tag=""):
        self.opcode = opcode
        self.operand_types = operand_types
        self.result_type = result_type
        self.attrs = attrs
        self.ulps = ulps
        self.finite = finite
        self.group = operand_types[-1] if opcode in ("select",) else operand_types[0]
        self.inputs = inputs or self._default_inputs
        suffix = f"-{tag}" if tag else ""
        self.id = f"{opcode}-{'-'.join(operand_types)}-{result_type}{suffix}"
        self.kernel_name = "k_" + "".join(c if c.isalnum() else "_" for c in self.id)

    def _default_inputs(self):
        arity = len(self.operand_types)
        if arity == 1:
            return [edges(self.operand_types[0], self.finite)]
        if arity == 2:
            x, y = edges(self.operand_types[0], self.finite), edges(self.operand_types[1], self.finite)
            xx, yy = np.meshgrid(x, y, indexing="ij")
            return [xx.ravel(), yy.ravel()]
        if self.opcode == "select":
            x = edges(self.operand_types[1], self.finite)
            y = x[::-1].copy()
            p = _RNG.integers(0, 2, x.size).astype(bool)
            return [p, x, y]
        # clamp: lo, x, hi from a few values each
        v = edges(self.operand_types[1], self.finite)
        pick = v[np.linspace(0, v.size - 1, min(v.size, 12)).astype(int)]
        lo, x, hi = (a.ravel() for a in np.meshgrid(pick, v, pick, indexing="ij"))
        return [lo, x, hi]

    def hlo_text(self, n):
        lines = [f"HloModule m_{self.kernel_name}", "", "ENTRY e {"]
        names = []
        for i, t in enumerate(self.operand_types):
            lines.append(f"  p{i} = {t}[{n}] parameter({i})")
            names.append(f"p{i}")
        attrs = f", {self.attrs}" if self.attrs else ""
        lines.append(f"  ROOT r = {self.result_type}[{n}] {self.opcode}({', '.join(names)}){attrs}")
        lines.append("}")
        return "\n".join(lines)


def _complex_component(t):
    return {"c64": "f32", "c128": "f64"}[t]


def _unary_result(opcode, t):
    if opcode == "is-finite":
        return "pred"
    if t in COMPLEX and opcode in ("abs", "real", "imag"):
        return _complex_component(t)
    return t


UNARY_BY_KIND = {
    "pred": "abs negate sign not copy".split(),
    "int": "abs negate sign not popcnt count-leading-zeros copy".split(),
    "float": """abs negate sign exponential exponential-minus-one log log-plus-one sqrt rsqrt
                cbrt tanh logistic sine cosine tan erf floor ceil round-nearest-afz
                round-nearest-even is-finite copy real imag acos acosh asin asinh atanh cosh
                sinh""".split(),
    "complex": "abs negate sign exponential log sqrt rsqrt sine cosine real imag copy".split(),
}
BINARY_BY_KIND = {
    "pred": "add subtract multiply divide remainder power maximum minimum and or xor".split(),
    "int": """add subtract multiply divide remainder power maximum minimum and or xor
              shift-left shift-right-arithmetic shift-right-logical mulhi""".split(),
    "float": "add subtract multiply divide remainder power maximum minimum atan2".split(),
    "complex": "add subtract multiply divide".split(),
}
# Complex ops checked to a few epsilons of |result| rather than bit for bit:
# NumPy's own complex kernels (hypot, contracted multiply-adds, C99 cexp...)
# are not reproducible operation by operation.
COMPLEX_TRANSCENDENTAL = {"exponential", "log", "sqrt", "rsqrt", "sine", "cosine", "abs", "sign",
                          "divide", "multiply"}


def _kind(t):
    if t == "pred":
        return "pred"
    if t in INTS:
        return "int"
    if t in FLOATS:
        return "float"
    return "complex"


def _ulps_for(opcode, t):
    if opcode not in WIDE_ULPS:
        return 0
    return NARROW_ULPS if t in ("f16", "bf16") else WIDE_ULPS[opcode]


def _power_inputs(t):
    def make():
        x = edges(t)
        if t in INTS:
            y = np.array([0, 1, 2, 3, 5, 7, 8, 13, 31, 32, 63, 64, 100, -1, -2, -100], np.int64)
            y = y.astype(_dtype(t))
        else:
            y = edges(t)
        xx, yy = np.meshgrid(x, y, indexing="ij")
        return [xx.ravel(), yy.ravel()]
    return make


def _reduce_precision_inputs(t):
    def make():
        x = edges(t)
        extra = _RNG.normal(0, 1, 64) * np.exp2(_RNG.integers(-30, 30, 64))
        with np.errstate(all="ignore"):
            return [np.concatenate([x, extra.astype(np.float32).astype(x.dtype)])]
    return make


def build_cases():
    cases = []
    for t in TYPES:
        kind = _kind(t)
        for op in UNARY_BY_KIND[kind]:
            finite = kind == "complex" and op in COMPLEX_TRANSCENDENTAL
            cases.append(Case(op, [t], _unary_result(op, t), ulps=_ulps_for(op, t), finite=finite))
        for op in BINARY_BY_KIND[kind]:
            inputs = _power_inputs(t) if op == "power" else None
            finite = kind == "complex" and op in COMPLEX_TRANSCENDENTAL
            cases.append(Case(op, [t, t], t, inputs=inputs, ulps=_ulps_for(op, t), finite=finite))
        # compare
        if kind == "float":
            ctypes_ = ["FLOAT", "TOTALORDER"]
        elif kind == "int":
            ctypes_ = [None, "SIGNED", "UNSIGNED"]
        else:
            ctypes_ = [None]
        dirs = ["EQ", "NE"] if kind == "complex" else DIRECTIONS
        for d, ct in itertools.product(dirs, ctypes_):
            attrs = f"direction={d}" + (f", type={ct}" if ct else "")
            cases.append(Case("compare", [t, t], "pred", attrs=attrs, tag=f"{d}{ct or ''}"))
        # select and clamp
        cases.append(Case("select", ["pred", t, t], t))
        if kind != "complex":
            cases.append(Case("clamp", [t, t, t], t))
        # convert to every type
        for u in TYPES:
            cases.append(Case("convert", [t], u))
        # bitcast-convert between types of the same width
        if t != "pred":
            for u in TYPES:
                if u != "pred" and u != t and _et(u).bits == _et(t).bits:
                    cases.append(Case("bitcast-convert", [t], u))
        if kind == "float":
            cases.append(Case("complex", [t, t], "c64" if t == "f32" else "c128")) \
                if t in ("f32", "f64") else None
            for e, m in [(8, 7), (5, 10), (8, 23), (11, 52), (5, 2), (4, 3), (8, 0), (2, 1)]:
                src_m = 52 if t == "f64" else 23
                src_e = 11 if t == "f64" else 8
                if e > src_e or m > src_m:
                    continue
                cases.append(Case("reduce-precision", [t], t,
                                  attrs=f"exponent_bits={e}, mantissa_bits={m}",
                                  inputs=_reduce_precision_inputs(t), tag=f"e{e}m{m}"))
    return cases


CASES = build_cases()
_BY_GROUP = {}
for _c in CASES:
    _BY_GROUP.setdefault(_c.group, []).append(_c)


@functools.lru_cache(maxsize=None)
def _library(group):
    """All cases of ``group`` (their first operand type) in one JIT module;
    returns (library, {case id: (module, inputs)})."""
    lib = KernelLibrary(f"elemental_{group}")
    prepared = {}
    for case in _BY_GROUP[group]:
        inputs = case.inputs()
        n = inputs[0].size
        module = parse_hlo_module(case.hlo_text(n))
        lib.add(case.kernel_name, module.entry.root_instruction)
        prepared[case.id] = (module, inputs)
    lib.compile()
    return lib, prepared


# ----------------------------------------------------------------------------
# comparison
# ----------------------------------------------------------------------------

def _ordered_bits(x):
    """Integers whose differences count ulps between floats of x's type."""
    itype = {2: np.int16, 4: np.int32, 8: np.int64}[x.dtype.itemsize]
    s = x.view(itype).astype(np.int64)
    mag = s & np.int64(np.iinfo(itype).max)
    return np.where(s < 0, -mag, mag)


def _check_float(got, want, ulps, context):
    with np.errstate(invalid="ignore"):
        gn, wn = np.isnan(got.astype(np.float64)), np.isnan(want.astype(np.float64))
    bad = gn != wn
    ok = ~(gn | wn)
    if ulps == 0:
        itype = {2: np.uint16, 4: np.uint32, 8: np.uint64}[got.dtype.itemsize]
        bad |= ok & (got.view(itype) != want.view(itype))
    else:
        dist = np.abs(_ordered_bits(got) - _ordered_bits(want))
        bad |= ok & (dist > ulps)
    if bad.any():
        idx = np.nonzero(bad)[0][:8]
        raise AssertionError(f"{context}: {bad.sum()} mismatches, e.g. at {idx.tolist()}: "
                             f"got {got[idx].tolist()} want {want[idx].tolist()}")


def _check_complex_close(got, want, context):
    eps = np.finfo(got.real.dtype).eps
    tol = COMPLEX_EPS * eps * np.abs(want.astype(np.complex128))
    bad = np.zeros(got.shape, bool)
    for g, w in ((got.real, want.real), (got.imag, want.imag)):
        gn, wn = np.isnan(g), np.isnan(w)
        both_nan = gn & wn
        same = (g == w) | both_nan
        with np.errstate(all="ignore"):
            close = np.isfinite(g) & np.isfinite(w) & (np.abs(g.astype(np.float64) - w) <= tol)
        bad |= ~(same | close)
    if bad.any():
        idx = np.nonzero(bad)[0][:8]
        raise AssertionError(f"{context}: {bad.sum()} mismatches, e.g. at {idx.tolist()}: "
                             f"got {got[idx].tolist()} want {want[idx].tolist()}")


def check(got, want, case, inputs):
    context = case.id
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    t = case.result_type
    if t == "pred" or t in INTS:
        if not np.array_equal(got, want):
            bad = np.nonzero(got != want)[0][:8]
            raise AssertionError(f"{context}: mismatches at {bad.tolist()}: got {got[bad].tolist()} "
                                 f"want {want[bad].tolist()} inputs "
                                 f"{[x[bad].tolist() for x in inputs]}")
        return
    if t in FLOATS:
        ulps = case.ulps
        if case.opcode == "abs" and case.operand_types[0] in COMPLEX:
            ulps = 2  # hypot
        _check_float(got, want, ulps, context)
        return
    if case.finite and case.opcode in COMPLEX_TRANSCENDENTAL:
        _check_complex_close(got, want, context)
        return
    comp = got.real.dtype
    _check_float(np.ascontiguousarray(got.real), np.ascontiguousarray(want.real.astype(comp)),
                 case.ulps, context + " (real)")
    _check_float(np.ascontiguousarray(got.imag), np.ascontiguousarray(want.imag.astype(comp)),
                 case.ulps, context + " (imag)")


# ----------------------------------------------------------------------------
# tests
# ----------------------------------------------------------------------------

@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_matches_interpreter(case):
    lib, prepared = _library(case.group)
    module, inputs = prepared[case.id]
    with np.errstate(all="ignore"):
        want = np.asarray(evaluate(module, *inputs))
    got = lib.run(case.kernel_name, (want.shape, want.dtype), *inputs)
    check(got, want, case, inputs)


def test_every_elementwise_opcode_has_a_row():
    elementwise = opcodes.UNARY_ELEMENTWISE | opcodes.BINARY_ELEMENTWISE | opcodes.TERNARY_ELEMENTWISE
    assert elementwise <= set(_EMITTERS)


def test_every_row_is_tested_on_some_type():
    tested = {c.opcode for c in CASES}
    assert set(_EMITTERS) <= tested


def _emit_one(text):
    from llvmlite import ir
    module = parse_hlo_module(text)
    instr = module.entry.root_instruction
    m = ir.Module()
    fn = ir.Function(m, ir.FunctionType(ir.VoidType(), []), "f")
    b = ir.IRBuilder(fn.append_basic_block())
    values = [ir.Constant(llvm_types.register_type(o.shape.element_type)
                          if llvm_types.is_supported(o.shape.element_type) else ir.IntType(8),
                          ir.Undefined)
              for o in instr.operands]
    return emit_elementwise(b, instr, values)


@pytest.mark.parametrize("op, types, result", [
    ("exponential", ["s32"], "s32"),
    ("remainder", ["c64", "c64"], "c64"),
    ("floor", ["c128"], "c128"),
    ("atan2", ["c64", "c64"], "c64"),
    ("maximum", ["c64", "c64"], "c64"),
    ("clamp", ["c64", "c64", "c64"], "c64"),
    ("popcnt", ["f32"], "f32"),
    ("exponential", ["u4"], "u4"),
    ("bitcast-convert", ["f32"], "f16"),
])
def test_unsupported_raises_unimplemented(op, types, result):
    args = ", ".join(f"p{i}" for i in range(len(types)))
    params = "\n".join(f"  p{i} = {t}[] parameter({i})" for i, t in enumerate(types))
    text = f"HloModule m\n\nENTRY e {{\n{params}\n  ROOT r = {result}[] {op}({args})\n}}"
    with pytest.raises(UnimplementedError) as info:
        _emit_one(text)
    message = str(info.value)
    assert op in message and "cpu" in message and types[0] in message


def test_compare_complex_ordering_unsupported():
    text = ("HloModule m\n\nENTRY e {\n  p0 = c64[] parameter(0)\n  p1 = c64[] parameter(1)\n"
            "  ROOT r = pred[] compare(p0, p1), direction=LT\n}")
    with pytest.raises(UnimplementedError, match="compare"):
        _emit_one(text)


def test_emitted_code_is_straight_line():
    """The emitter adds no basic blocks (loop emitters may call it anywhere)."""
    from llvmlite import ir
    for case in CASES[::7]:
        module = parse_hlo_module(case.hlo_text(4))
        instr = module.entry.root_instruction
        m = ir.Module()
        fn = ir.Function(m, ir.FunctionType(ir.VoidType(), []), "f")
        b = ir.IRBuilder(fn.append_basic_block())
        values = [ir.Constant(llvm_types.register_type(o.shape.element_type), ir.Undefined)
                  for o in instr.operands]
        emit_elementwise(b, instr, values)
        assert len(fn.blocks) == 1, case.id


# ----------------------------------------------------------------------------
# llvm_types: loads, stores and constants
# ----------------------------------------------------------------------------

def _roundtrip_kernel_library():
    """Kernels storing f32 -> f16/bf16 (rounding) and loading back."""
    from llvmlite import ir
    from xla.backends.cpu.jit import JitModule
    m = ir.Module("roundtrip")
    i8p = ir.IntType(8).as_pointer()
    for et in (PT.F16, PT.BF16, PT.PRED):
        fn = ir.Function(m, ir.FunctionType(ir.VoidType(), [i8p, i8p, ir.IntType(64)]),
                         f"store_{et.text}")
        entry = fn.append_basic_block("entry")
        loop = fn.append_basic_block("loop")
        done = fn.append_basic_block("done")
        b = ir.IRBuilder(entry)
        src_et = PT.F32 if et is not PT.PRED else PT.PRED
        src = b.bitcast(fn.args[0], llvm_types.memory_type(src_et).as_pointer())
        dst = b.bitcast(fn.args[1], llvm_types.memory_type(et).as_pointer())
        b.branch(loop)
        b.position_at_end(loop)
        i = b.phi(ir.IntType(64))
        i.add_incoming(ir.Constant(ir.IntType(64), 0), entry)
        v = llvm_types.load_element(b, b.gep(src, [i]), src_et)
        llvm_types.store_element(b, v, b.gep(dst, [i]), et)
        nxt = b.add(i, ir.Constant(ir.IntType(64), 1))
        i.add_incoming(nxt, loop)
        b.cbranch(b.icmp_signed("<", nxt, fn.args[2]), loop, done)
        b.position_at_end(done)
        b.ret_void()
    return JitModule(m)


@pytest.fixture(scope="module")
def roundtrip_jit():
    return _roundtrip_kernel_library()


def _run_store(jit, name, x, out_dtype):
    import ctypes
    fn = jit.function(name, None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)
    out = np.zeros(x.shape, out_dtype)
    fn(x.ctypes.data, out.ctypes.data, x.size)
    return out


@pytest.mark.parametrize("target", ["f16", "bf16"])
def test_store_rounds_like_numpy(roundtrip_jit, target):
    # every f32 of a few exponents' worth of random bit patterns, plus ties
    bits = _RNG.integers(0, 2 ** 32, 20000, dtype=np.uint64).astype(np.uint32)
    ties = (np.arange(1, 2000, dtype=np.uint32) << 13) | np.uint32(1 << 12)
    ties_bf = (np.arange(1, 2000, dtype=np.uint32) << 16) | np.uint32(1 << 15)
    x = np.concatenate([bits, ties, ties_bf, ties | np.uint32(0x38000000),
                        np.array([0x7f800000, 0xff800000, 0x7fc00000, 0xffc00001, 0x00000001,
                                  0x80000001, 0x7f7fffff, 0x477fe000, 0x477ff000], np.uint32)])
    x = x.view(np.float32)
    dtype = _dtype(target)
    got = _run_store(roundtrip_jit, f"store_{target}", x, dtype)
    with np.errstate(all="ignore"):
        want = x.astype(dtype)
    _check_float(got, want, 0, f"store f32 -> {target}")
    if target == "bf16":
        # NaN becomes the quiet NaN with the sign kept, as ml_dtypes does
        assert np.array_equal(got.view(np.uint16), want.view(np.uint16))


def test_pred_load_store(roundtrip_jit):
    x = np.array([0, 1, 2, 255, 0, 7], np.uint8).view(np.bool_)
    got = _run_store(roundtrip_jit, "store_pred", x, np.uint8)
    assert got.tolist() == [0, 1, 1, 1, 0, 1]


@pytest.mark.parametrize("et, value, expected", [
    (PT.PRED, True, "i1 1"),
    (PT.S8, -1, "i8 255"),
    (PT.U64, 2 ** 64 - 1, "i64 18446744073709551615"),
    (PT.F32, float("inf"), "float 0x7ff0000000000000"),
    (PT.F32, float("-inf"), "float 0xfff0000000000000"),
    (PT.F64, 0.5, "double 0x3fe0000000000000"),
    (PT.BF16, 1 + 2 ** -8 + 2 ** -20, "float 0x3ff0200000000000"),
    (PT.F16, 65519.0, "float 0x40effc0000000000"),
    (PT.F16, 1e6, "float 0x7ff0000000000000"),
])
def test_constant(et, value, expected):
    assert str(llvm_types.constant(et, value)) == expected


def test_constant_nan_and_complex():
    assert "float" in str(llvm_types.constant(PT.F32, float("nan")))
    c = llvm_types.constant(PT.C64, 1.5 - 2j)
    assert str(c) == "{float, float} {float 0x3ff8000000000000, float 0xc000000000000000}"
    c = llvm_types.constant(PT.C128, complex(float("inf"), 0.25))
    assert "0x7ff0000000000000" in str(c) and "0x3fd0000000000000" in str(c)


def test_types():
    assert str(llvm_types.register_type(PT.PRED)) == "i1"
    assert str(llvm_types.memory_type(PT.PRED)) == "i8"
    assert str(llvm_types.register_type(PT.BF16)) == "float"
    assert str(llvm_types.memory_type(PT.F16)) == "i16"
    assert str(llvm_types.register_type(PT.C128)) == "{double, double}"
    assert str(llvm_types.register_type(PT.F8E4M3FN)) == "float"
    assert str(llvm_types.memory_type(PT.F8E5M2)) == "i8"
    assert str(llvm_types.register_type(PT.U4)) == "i4"
    assert str(llvm_types.memory_type(PT.S1)) == "i8"
    assert str(llvm_types.register_type(PT.F4E2M1FN)) == "float"
    with pytest.raises(UnimplementedError, match="token"):
        llvm_types.register_type(PT.TOKEN)
