"""--xla_allow_excess_precision on the cpu backend (llvm_types: "Per-op
rounding and excess precision").

With the flag (XLA's default) the f16/bf16/f8 results of arithmetic inside
one kernel stay in f32 and are rounded where stored: a fused chain of exact
f32 operations then equals NumPy computing in f32 and rounding once. With it
false every op rounds, bit for bit as the interpreter does. ``convert`` and
``reduce-precision`` round either way."""
import ml_dtypes
import numpy as np
import pytest

from xla import runtime
from xla.hlo.evaluator.evaluator import Evaluator
from xla.hlo.parser import parse_hlo_module
from xla.tools.arrays import flatten_result

BF16 = ml_dtypes.bfloat16
TYPES = [("bf16", BF16), ("f16", np.float16), ("f8e4m3fn", ml_dtypes.float8_e4m3fn)]
OFF = {"xla_allow_excess_precision": False}


def _cpu(text, *args, debug_options=None):
    exe = runtime.compile(parse_hlo_module(text), "cpu", debug_options=debug_options)
    out = flatten_result(exe.execute(*args))
    return [np.asarray(o) for o in out] if len(out) > 1 else np.asarray(out[0])


def _interpreter(text, *args):
    return np.asarray(flatten_result(Evaluator().evaluate(parse_hlo_module(text), list(args)))[0])


def _bits(a):
    return np.asarray(a).view(np.uint8 if a.dtype.itemsize == 1 else np.uint16)


def _chain(t, n):
    # (x*y + z) * x - y: every step an exact IEEE f32 operation, so f32
    # arithmetic rounded once is NumPy's f32 result rounded once.
    return f"""HloModule chain
ENTRY %main (x: {t}[{n}], y: {t}[{n}], z: {t}[{n}]) -> {t}[{n}] {{
  %x = {t}[{n}] parameter(0)
  %y = {t}[{n}] parameter(1)
  %z = {t}[{n}] parameter(2)
  %m = {t}[{n}] multiply(%x, %y)
  %a = {t}[{n}] add(%m, %z)
  %p = {t}[{n}] multiply(%a, %x)
  ROOT %s = {t}[{n}] subtract(%p, %y)
}}
"""


def _chain_args(dt, n=4096):
    rng = np.random.default_rng(0)
    scale = 3.0 if dt is ml_dtypes.float8_e4m3fn else 10.0
    return [(rng.standard_normal(n) * scale).astype(np.float32).astype(dt) for _ in range(3)]


def _once_rounded(x, y, z, dt):
    x, y, z = (a.astype(np.float32) for a in (x, y, z))
    with np.errstate(over="ignore", invalid="ignore"):
        return ((x * y + z) * x - y).astype(dt)


@pytest.mark.parametrize("t,dt", TYPES, ids=[t for t, _ in TYPES])
def test_fused_chain_rounds_once_by_default(t, dt):
    args = _chain_args(dt)
    got = _cpu(_chain(t, 4096), *args)
    want = _once_rounded(*args, dt)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(_bits(got), _bits(want))


@pytest.mark.parametrize("t,dt", TYPES, ids=[t for t, _ in TYPES])
def test_flag_off_rounds_every_op_as_the_interpreter(t, dt):
    args = _chain_args(dt)
    text = _chain(t, 4096)
    got = _cpu(text, *args, debug_options=OFF)
    np.testing.assert_array_equal(_bits(got), _bits(_interpreter(text, *args)))
    # The two modes differ on these inputs (else the tests above prove nothing).
    assert np.count_nonzero(_bits(got) != _bits(_once_rounded(*args, dt))) > 100


def test_convert_and_reduce_precision_round_inside_a_fusion():
    # x -> bf16 -> f32 and reduce-precision to bf16's format: both round
    # whatever the flag says (the program asks for the rounding).
    n = 1024
    text = f"""HloModule keep
ENTRY %main (x: f32[{n}]) -> (f32[{n}], f32[{n}]) {{
  %x = f32[{n}] parameter(0)
  %h = bf16[{n}] convert(%x)
  %back = f32[{n}] convert(%h)
  %two = f32[] constant(2)
  %twob = f32[{n}] broadcast(%two), dimensions={{}}
  %c = f32[{n}] multiply(%back, %twob)
  %r = f32[{n}] reduce-precision(%x), exponent_bits=8, mantissa_bits=7
  %d = f32[{n}] multiply(%r, %twob)
  ROOT %t = (f32[{n}], f32[{n}]) tuple(%c, %d)
}}
"""
    x = np.random.default_rng(1).standard_normal(n).astype(np.float32)
    want = x.astype(BF16).astype(np.float32) * 2
    for options in (None, OFF):
        c, d = _cpu(text, x, debug_options=options)
        np.testing.assert_array_equal(c, want)
        np.testing.assert_array_equal(d, want)


def test_row_reduce_and_division_stay_in_f32_until_stored():
    # softmax's tail in bf16: exp, an f32 sum of the exps, divide. The
    # exps stay f32 inside the fusion; the quotient is rounded once.
    r, c = 64, 256
    text = f"""HloModule sm
%add (a: f32[], b: f32[]) -> f32[] {{
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}}
ENTRY %main (x: bf16[{r},{c}]) -> bf16[{r},{c}] {{
  %x = bf16[{r},{c}] parameter(0)
  %e = bf16[{r},{c}] exponential(%x)
  %one = bf16[] constant(1)
  %oneb = bf16[{r},{c}] broadcast(%one), dimensions={{}}
  %e1 = bf16[{r},{c}] add(%e, %oneb)
  %ef = f32[{r},{c}] convert(%e1)
  %zero = f32[] constant(0)
  %sm = f32[{r}] reduce(%ef, %zero), dimensions={{1}}, to_apply=%add
  %smh = bf16[{r}] convert(%sm)
  %sb = bf16[{r},{c}] broadcast(%smh), dimensions={{0}}
  ROOT %out = bf16[{r},{c}] divide(%e1, %sb)
}}
"""
    x = np.random.default_rng(2).standard_normal((r, c)).astype(BF16)
    e1 = np.exp(x.astype(np.float32)) + 1
    s = e1.sum(axis=1, keepdims=True).astype(BF16).astype(np.float32)  # its convert
    want = e1 / s
    got = _cpu(text, x).astype(np.float32)
    # Against f32 arithmetic (the sum rounded by its convert): the quotient's
    # rounding, and the exp's where the fusion pass materializes it (the
    # reduce fusion stores it as a side output here): 1.5 bf16 ulps at most.
    np.testing.assert_allclose(got, want, rtol=1.5 * 2 ** -7, atol=0)
    # Per-op rounding rounds the sum of each element too: further from f32.
    off = _cpu(text, x, debug_options=OFF).astype(np.float32)
    assert np.abs(got - want).mean() < 0.8 * np.abs(off - want).mean()


@pytest.mark.parametrize("name", ["bf16_ops.hlo", "bf16_ops.optimized.hlo", "f16_ops.hlo",
                                  "f16_ops.optimized.hlo"])
def test_corpus_narrow_modules_within_the_types_precision_of_xla(name):
    # JAX's outputs (XLA:CPU, which rounds these modules' ops one by one;
    # tests/cpu/test_cpu_corpus.py matches them with the flag off): with
    # excess precision the results move by rounding differences only, at
    # most two units in the last place of the narrow type.
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "service"))
    from pass_test_util import CORPUS_DIR, _corpus_interpreter_test
    helpers = _corpus_interpreter_test()
    path = CORPUS_DIR / name
    exe = runtime.compile(parse_hlo_module(path.read_text(), filename=str(path)), "cpu")
    data = helpers.load_npz(helpers.npz_for(path))
    params = exe.module.entry.parameters
    args = [helpers._as_type(data[f"arg{i}"], p.shape) for i, p in enumerate(params)]
    leaves = [s for _, s in exe.module.entry.root_instruction.shape.leaves()]
    want = [helpers._as_type(data[f"out{i}"], s) for i, s in enumerate(leaves)]
    ulp = 2.0 ** -7 if name.startswith("bf16") else 2.0 ** -10   # relative, at worst
    for got, w in zip(flatten_result(exe.execute(*args)), want):
        got, w = np.asarray(got, np.float64), np.asarray(w, np.float64)
        scale = max(1.0, float(np.max(np.abs(w))))
        np.testing.assert_allclose(got, w, rtol=2 * ulp, atol=2 * ulp * scale)


def test_the_flag_is_part_of_the_persistent_cache_key(tmp_path):
    # The same module compiled with the flag on, then off, through one disk
    # cache: the second compile must not load the first's code.
    from xla.backends.cpu import kernel_compiler
    from xla.frontend.disk_cache import PersistentCache
    cache = PersistentCache(str(tmp_path))
    args = _chain_args(BF16)
    text = _chain("bf16", 4096)
    got = {}
    for allowed in (True, False):
        kernel_compiler.memory_cache.clear()
        exe = runtime.compile(parse_hlo_module(text), "cpu", cache=cache,
                              debug_options={"xla_allow_excess_precision": allowed})
        assert not getattr(exe, "from_disk_cache", False)
        got[allowed] = np.asarray(exe.execute(*args))
    np.testing.assert_array_equal(_bits(got[True]), _bits(_once_rounded(*args, BF16)))
    np.testing.assert_array_equal(_bits(got[False]), _bits(_interpreter(text, *args)))
