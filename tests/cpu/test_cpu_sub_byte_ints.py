"""s1/u1/s2/u2/s4/u4 on the CPU backend (one element per byte, iN in
registers) and the interpreter: parameters, results, constants, converts and
elementwise ops. Expected values for s2/u2/s4/u4 are XLA:CPU's own
(fixtures/sub_byte_ints_xla.npz, from gen_sub_byte_ints.py); s1/u1, which
jax cannot lower, against the same rules computed here in int64."""
import os

import ml_dtypes
import numpy as np
import pytest

from sub_byte_modules import ALL_TYPES, OTHERS, XLA_TYPES, arguments, module, values
from xla import runtime
from xla.hlo.evaluator.evaluator import Evaluator
from xla.hlo.parser import parse_hlo_module
from xla.tools.arrays import flatten_result

_FIXTURE = os.path.join(os.path.dirname(__file__), "fixtures", "sub_byte_ints_xla.npz")

# Where XLA:CPU (jax 0.10.2) is wrong and this project follows the rules
# (test_ops_match_the_rules): popcnt of a negative s4 counts the bits of the
# sign-extended byte (popcnt(s4 -1) = 8, wrapped to -8); clamp(-1, x, 1) of
# s2 gives 0 for every x.
KNOWN_XLA_BUGS = {("s4", "popcnt"), ("s2", "clamped")}


def _widen(a):
    a = np.asarray(a)
    if a.dtype.kind == "V":  # ml_dtypes ints
        return a.astype(np.int8 if ml_dtypes.iinfo(a.dtype).min < 0 else np.uint8)
    return a


@pytest.fixture(scope="module")
def xla_results():
    with np.load(_FIXTURE) as f:
        return dict(f)


def _run(text, args, backend):
    if backend == "cpu":
        out = runtime.compile(parse_hlo_module(text), "cpu").execute(*args)
    else:
        out = Evaluator().evaluate(parse_hlo_module(text), list(args))
    return [np.asarray(a) for a in flatten_result(out)]


@pytest.mark.parametrize("backend", ["cpu", "interpreter"])
@pytest.mark.parametrize("t", list(XLA_TYPES))
def test_ops_and_converts_match_xla(t, backend, xla_results):
    text, names = module(t)
    got = _run(text, arguments(t), backend)
    result_types = [r.split("[")[0] for r in text.split("ROOT out = (")[1].split(")")[0].split(", ")]
    bad = []
    for name, g, rt in zip(names, got, result_types):
        if rt in ALL_TYPES:
            assert g.dtype == np.dtype(ALL_TYPES[rt]), name
        want = xla_results[f"{t}_{name}"]
        g = _widen(g)
        same = g.shape == want.shape and np.array_equal(g.astype(want.dtype), want,
                                                        equal_nan=want.dtype.kind == "f")
        if same == ((t, name) in KNOWN_XLA_BUGS):
            bad.append(name)
    assert not bad, f"{backend} differs from XLA:CPU for {t} (or agrees with a known bug): {bad}"


def _wrap(v, t):
    bits = int(t[1:])
    v = np.asarray(v, np.int64) & ((1 << bits) - 1)
    return v - ((v >> (bits - 1)) << bits) if t[0] == "s" else v


def _model(t, x, y):
    """XLA's rules (docs/interpreter.md) in int64, wrapped to ``t``."""
    bits = int(t[1:])
    lo, hi = int(ml_dtypes.iinfo(ALL_TYPES[t]).min), int(ml_dtypes.iinfo(ALL_TYPES[t]).max)
    x, y = x.astype(np.int64), y.astype(np.int64)
    ux, uy = x & ((1 << bits) - 1), y & ((1 << bits) - 1)
    safe = np.where(y == 0, 1, y)
    quo = np.where(y == 0, -1 if t[0] == "s" else hi, np.trunc(x / safe).astype(np.int64))
    rem = np.where(y == 0, x, x - np.trunc(x / safe).astype(np.int64) * safe)
    big = uy >= bits
    sx = _wrap(ux, f"s{bits}")  # shift-right-arithmetic reads the bits as signed
    return {
        "add": x + y, "subtract": x - y, "multiply": x * y, "divide": quo, "remainder": rem,
        "and": x & y, "or": x | y, "xor": x ^ y,
        "shift_left": np.where(big, 0, ux << np.minimum(uy, 63)),
        "shift_right_logical": np.where(big, 0, ux >> np.minimum(uy, 63)),
        "shift_right_arithmetic": np.where(big, np.where(sx < 0, -1, 0), sx >> np.minimum(uy, 63)),
        "maximum": np.maximum(x, y), "minimum": np.minimum(x, y),
        "negate": -x, "not": ~x, "popcnt": np.array([bin(int(v)).count("1") for v in ux]),
        "count_leading_zeros": np.array([bits - int(v).bit_length() for v in ux]),
        "abs": np.abs(x), "sign": np.sign(x),
        "clamped": np.clip(x, lo + (1 if hi - lo > 1 else 0), hi),  # the module's constants
    }, (lo, hi)


@pytest.mark.parametrize("backend", ["cpu", "interpreter"])
@pytest.mark.parametrize("t", ["s1", "u1"] + list(XLA_TYPES))
def test_ops_match_the_rules(t, backend):
    # The same rules as XLA's results above, so that s1/u1 are checked too
    # (and the model is checked against XLA on the wider types).
    text, names = module(t)
    x, y, f, i = arguments(t)
    got = dict(zip(names, _run(text, (x, y, f, i), backend)))
    model, (lo, hi) = _model(t, x, y)
    bad = [name for name, want in model.items()
           if name in got and not np.array_equal(_widen(got[name]).astype(np.int64), _wrap(want, t))]
    with np.errstate(invalid="ignore"):
        f_want = np.where(np.isnan(f), 0, np.clip(np.trunc(np.nan_to_num(f, posinf=1e9, neginf=-1e9)), lo, hi))
    if not np.array_equal(_widen(got["from_f32"]).astype(np.int64), f_want.astype(np.int64)):
        bad.append("from_f32")
    if not np.array_equal(_widen(got["from_s32"]).astype(np.int64), _wrap(i, t)):
        bad.append("from_s32")
    c = np.resize(values(t), len(x)).astype(np.int64)
    exact = {"lt": x.astype(int) < y.astype(int), "ge": x.astype(int) >= y.astype(int),
             "to_pred": x.astype(int) != 0, "to_u8": _widen(x).astype(np.int64) & 0xFF,
             "with_constant": _wrap(_widen(x).astype(np.int64) + c, t),
             "sel": np.where(x.astype(int) < y.astype(int), _widen(x), _widen(y)),
             "to_other": _wrap(_widen(x).astype(np.int64), OTHERS[t])}
    bad += [name for name, want in exact.items()
            if not np.array_equal(_widen(got[name]).astype(np.int64), np.asarray(want).astype(np.int64))]
    if not np.array_equal(got["to_s32"], _widen(x).astype(np.int32)):
        bad.append("to_s32")
    if not np.array_equal(got["to_f32"], _widen(x).astype(np.float32)):
        bad.append("to_f32")
    assert not bad, f"{backend} breaks the rules for {t}: {bad}"


@pytest.mark.parametrize("t", list(ALL_TYPES))
def test_parameters_constants_and_results_one_per_byte(t):
    v = values(t)
    text = f"""HloModule m
ENTRY e {{
  x = {t}[{len(v)}] parameter(0)
  c = {t}[{len(v)}] constant({{{", ".join(str(int(a)) for a in v[::-1])}}})
  r = {t}[{len(v)}] reverse(x), dimensions={{0}}
  ROOT t = ({t}[{len(v)}], {t}[{len(v)}], {t}[2,{len(v)}]) tuple(r, c, {t}[2,{len(v)}] broadcast(x), dimensions={{1}})
}}"""
    text = text.replace(f"{t}[2,{len(v)}] broadcast(x), dimensions={{1}})", "b)").replace(
        "  ROOT", f"  b = {t}[2,{len(v)}] broadcast(x), dimensions={{1}}\n  ROOT")
    r, c, b = _run(text, (v,), "cpu")
    for a in (r, c, b):
        assert a.dtype == np.dtype(ALL_TYPES[t])
    # The bytes as ml_dtypes holds them: the value in the low bits, the rest zero.
    np.testing.assert_array_equal(r.view(np.uint8), v[::-1].view(np.uint8))
    np.testing.assert_array_equal(c.view(np.uint8), v[::-1].view(np.uint8))
    np.testing.assert_array_equal(b.view(np.uint8), np.stack([v, v]).view(np.uint8))


def test_packed_layout_runs_one_element_per_byte():
    # XLA:CPU's E(4) (two s4 a byte) is a storage choice: the cpu backend's
    # sub-byte-size-removal keeps one element per byte (tests/service/
    # test_sub_byte_normalization.py refuses what that would change).
    text = """HloModule m
ENTRY e {
  x = s4[8]{0:E(4)} parameter(0)
  ROOT n = s4[8]{0:E(4)} negate(x)
}"""
    x = np.array([-8, -1, 0, 1, 2, 3, 6, 7], ml_dtypes.int4)
    out = runtime.compile(parse_hlo_module(text), "cpu").execute(x)
    assert out.dtype == np.dtype(ml_dtypes.int4)
    assert out.astype(int).tolist() == [-8, 1, 0, -1, -2, -3, -6, -7]


@pytest.mark.parametrize("backend", ["cpu", "interpreter"])
def test_bitcast_convert_between_widths_packs_like_xla(backend):
    # Expected values from jax 0.10.2 (jax.lax.bitcast_convert_type under
    # jit, XLA:CPU), as in tests/test_interpreter_ops_hlo.py.
    x = np.array([[1, -2], [3, -4], [5, -6], [7, -8]], dtype=ml_dtypes.int4)
    packed = _run("HloModule m\nENTRY e {\n  x = s4[4,2] parameter(0)\n"
                  "  ROOT b = s8[4] bitcast-convert(x)\n}", (x,), backend)[0]
    assert packed.tolist() == [-31, -61, -91, -121]
    unpacked = _run("HloModule m\nENTRY e {\n  x = s8[4] parameter(0)\n"
                    "  ROOT b = s4[4,2] bitcast-convert(x)\n}",
                    (np.array([0x21, -0x6d, 127, -128], np.int8),), backend)[0]
    assert unpacked.dtype == np.dtype(ml_dtypes.int4)
    assert unpacked.astype(int).tolist() == [[1, 2], [3, -7], [-1, 7], [0, -8]]
    # f4e2m1fn codes 0x1 and 0xf (0.5, -6) in one byte, low nibble first.
    f4 = _run("HloModule m\nENTRY e {\n  x = u8[2] parameter(0)\n"
              "  ROOT b = f4e2m1fn[2,2] bitcast-convert(x)\n}", (np.array([0xF1, 0x08], np.uint8),), backend)[0]
    assert f4.dtype == np.dtype(ml_dtypes.float4_e2m1fn)
    assert f4.view(np.uint8).tolist() == [[0x1, 0xF], [0x8, 0x0]]
