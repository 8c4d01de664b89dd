"""f32 -> bf16 through the host's vcvtneps2bf16 (llvm_types
``_f32_to_bf16_bits_native``): the same bits as ml_dtypes, where the
instruction alone would flush denormal inputs to zero and keep a NaN's
payload. Expected values: ml_dtypes' casts (round to nearest even, NaN ->
0x7fc0 / 0xffc0 with the sign). Every case runs with the native conversion
and with the integer rounding (the path of targets without AVX512-BF16)."""
import re

import llvmlite.binding as llvm
import ml_dtypes
import numpy as np
import pytest

from xla import runtime
from xla.backends.cpu import jit
from xla.backends.cpu.compiler import CpuCompiler
from xla.hlo.parser import parse_hlo_module

HOST_BF16 = jit.host_converts_bf16()
needs_bf16 = pytest.mark.skipif(not HOST_BF16, reason="the host has no AVX512-BF16")
_RNG = np.random.default_rng(7)


@pytest.fixture(params=["native", "integer"])
def path(request, monkeypatch):
    native = request.param == "native"
    if native and not HOST_BF16:
        pytest.skip("the host has no AVX512-BF16")
    monkeypatch.setattr(CpuCompiler, "native_bf16_conversion", lambda self: native)
    return request.param


def _edge_bits():
    """f32 bit patterns where the instruction and ml_dtypes part, and the
    rounding boundaries around them."""
    k = np.arange(0, 129, dtype=np.uint32)
    sub_grid = k << 16                                   # exact bf16 denormals, and 0x00800000
    sub_ties = sub_grid[:-1] | np.uint32(0x8000)         # halfway: to even
    sub_near = np.concatenate([sub_ties - np.uint32(1), sub_ties + np.uint32(1)])
    tiny = np.array([0x00000001, 0x00007fff, 0x00008000, 0x00008001, 0x00017fff, 0x00018000,
                     0x007f7fff, 0x007f8000, 0x007fffff, 0x00800000, 0x00800001, 0x0080ffff],
                    np.uint32)
    ties = (np.arange(1, 1000, dtype=np.uint32) << 16) | np.uint32(0x8000)
    nans = np.array([0x7f800001, 0x7f810000, 0x7fbf0000, 0x7fc00001, 0x7fc10000, 0x7fff0000,
                     0x7fffffff, 0x7fa00000, 0x7f80ffff], np.uint32)
    special = np.array([0x7f800000, 0x7f7fffff, 0x7f7f7fff, 0x7f7f8000, 0x7f7f8001, 0x3f808000,
                        0x3f818000, 0x3f800000], np.uint32)
    pos = np.concatenate([sub_grid, sub_ties, sub_near, tiny, ties, nans, special,
                          ties | np.uint32(0x3c000000)])
    return np.concatenate([pos, pos | np.uint32(0x80000000)])


def _bits_values():
    random = _RNG.integers(0, 2 ** 32, 30000, dtype=np.uint64).astype(np.uint32)
    denormal = _RNG.integers(0, 0x00800000, 3000, dtype=np.uint64).astype(np.uint32)
    return np.concatenate([_edge_bits(), random, denormal, denormal | np.uint32(0x80000000)])


def _expected_bits(bits):
    with np.errstate(invalid="ignore", over="ignore"):
        return bits.view(np.float32).astype(ml_dtypes.bfloat16).view(np.uint16)


def _convert_module(n):
    return f"""HloModule convert
ENTRY %main (x: f32[{n}]) -> bf16[{n}] {{
  %x = f32[{n}] parameter(0)
  ROOT %y = bf16[{n}] convert(%x)
}}"""


def _check(got_bits, bits):
    want = _expected_bits(bits)
    bad = np.nonzero(got_bits != want)[0]
    assert bad.size == 0, [(hex(bits[i]), hex(got_bits[i]), hex(want[i])) for i in bad[:8]]


# The length is no multiple of the vector widths: the vector loop, the
# vectorizer's epilogue and the scalar remainder each see edge cases.
@pytest.mark.parametrize("shift", [0, 5, 13])
def test_convert_matches_ml_dtypes(path, shift):
    bits = np.roll(_bits_values(), shift)
    exe = runtime.compile(parse_hlo_module(_convert_module(bits.size)), "cpu")
    got = np.asarray(exe.execute(bits.view(np.float32))).view(np.uint16)
    _check(got, bits)


def test_fused_arithmetic_store_matches_ml_dtypes(path):
    # x * 2^-100 rounded to bf16 once at the store (excess precision): the
    # products are exact in f32, many of them denormal.
    x = _RNG.standard_normal(4099).astype(np.float32) * np.float32(2.0 ** -27)
    x[::97] = np.nan
    x[1::89] = np.float32(3 * 2.0 ** -34)  # its product 1.5 * 2^-133: a tie among denormals
    text = """HloModule scale
ENTRY %main (x: f32[4099]) -> bf16[4099] {
  %x = f32[4099] parameter(0)
  %c = f32[] constant(7.888609052210118e-31)
  %cb = f32[4099] broadcast(%c), dimensions={}
  %m = f32[4099] multiply(%x, %cb)
  ROOT %y = bf16[4099] convert(%m)
}"""
    exe = runtime.compile(parse_hlo_module(text), "cpu")
    got = np.asarray(exe.execute(x)).view(np.uint16)
    product = (x * np.float32(2.0 ** -100)).view(np.uint32)
    _check(got, product)


def _assembly(ir_text):
    tm = jit.target_machine()
    return "\n".join(tm.emit_assembly(llvm.parse_assembly(part))
                     for part in re.split(r"(?m)^(?=; ModuleID)", ir_text) if part.strip())


@needs_bf16
def test_native_conversion_is_one_instruction_per_16_lanes():
    exe = runtime.compile(parse_hlo_module(_convert_module(4096)), "cpu")
    assert "to bfloat" in exe.ir_text
    asm = _assembly(exe.optimized_ir_text)
    assert re.search(r"vcvtneps2bf16\s+%zmm\d+, %ymm\d+", asm), "no 16-lane vcvtneps2bf16"
    assert "vpmovdw" not in asm  # the integer rounding's narrowing
    assert "vpsrld" not in asm  # nor the integer rounding (llvm_types._round_bf16_in_f32)


def test_integer_rounding_without_the_feature(monkeypatch):
    monkeypatch.setattr(CpuCompiler, "native_bf16_conversion", lambda self: False)
    exe = runtime.compile(parse_hlo_module(_convert_module(64)), "cpu")
    assert "bfloat" not in exe.ir_text


def test_aot_objects_use_the_integer_rounding():
    # a baseline x86-64 object cannot assume AVX512-BF16
    from xla.backends.cpu.aot import _AotCompiler
    assert _AotCompiler().native_bf16_conversion() is False


def test_convert_rounds_once(path):
    # The convert's rounding is the only one: its bf16 result, widened to
    # f32 in a register, is stored as its bits (llvm_types._widened_bf16_bits).
    exe = runtime.compile(parse_hlo_module(_convert_module(4096)), "cpu")
    if path == "native":
        assert exe.ir_text.count("to bfloat") == 1
    else:
        assert exe.ir_text.count("2143289344") == 1  # 0x7fc00000: one NaN select


def test_moved_bf16_keeps_its_bits(path):
    # A transpose stores loaded elements as they are, NaN payloads included,
    # as the interpreter (NumPy) moves them; rounding them again would make
    # 0x7f81 (a signaling NaN) the quiet 0x7fc0.
    from xla.hlo.evaluator.evaluator import Evaluator
    text = """HloModule move
ENTRY %main (x: bf16[64,48]) -> bf16[48,64] {
  %x = bf16[64,48] parameter(0)
  ROOT %t = bf16[48,64] transpose(%x), dimensions={1,0}
}"""
    bits = _RNG.integers(0, 1 << 16, (64, 48), dtype=np.uint64).astype(np.uint16)
    bits[::3, ::5] = np.array([0x7f81, 0xffa5, 0x7fc1, 0x0001, 0x8001], np.uint16)[
        np.arange(bits[::3, ::5].size) % 5].reshape(bits[::3, ::5].shape)
    x = bits.view(ml_dtypes.bfloat16)
    got = np.asarray(runtime.compile(parse_hlo_module(text), "cpu").execute(x)).view(np.uint16)
    want = np.asarray(Evaluator().evaluate(parse_hlo_module(text), [x])).view(np.uint16)
    assert np.array_equal(want, bits.T)
    assert np.array_equal(got, want)


def _widened_module(n):
    # The convert's bf16 value goes on in f32 (x 1, exact: a NaN stays the
    # convert's quiet NaN).
    return f"""HloModule widened
ENTRY %main (x: f32[{n}]) -> f32[{n}] {{
  %x = f32[{n}] parameter(0)
  %h = bf16[{n}] convert(%x)
  %w = f32[{n}] convert(%h)
  %one = f32[] constant(1)
  %ob = f32[{n}] broadcast(%one), dimensions={{}}
  ROOT %y = f32[{n}] multiply(%w, %ob)
}}"""


@pytest.mark.parametrize("shift", [0, 7])
def test_rounded_value_used_in_f32_matches_ml_dtypes(path, shift):
    # llvm_types._round_bf16_in_f32: the rounding kept in 32-bit lanes.
    bits = np.roll(_bits_values(), shift)
    exe = runtime.compile(parse_hlo_module(_widened_module(bits.size)), "cpu")
    got = np.asarray(exe.execute(bits.view(np.float32))).view(np.uint32)
    assert np.all(got & np.uint32(0xFFFF) == 0), "not a bf16 value"
    _check((got >> np.uint32(16)).astype(np.uint16), bits)


@needs_bf16
def test_rounded_value_used_in_f32_is_not_narrowed_and_widened():
    # A bf16 rounding whose value stays in f32 rounds in 32-bit lanes: no
    # vcvtneps2bf16 to 16 bits and vpmovzxwd / vpslld back.
    exe = runtime.compile(parse_hlo_module(_widened_module(4096)), "cpu")
    asm = _assembly(exe.optimized_ir_text)
    assert "vcvtneps2bf16" not in asm and "vpmovzxwd" not in asm
    assert re.search(r"vpandd?\s+.*%zmm", asm), "no 16-lane rounding"


def test_stored_rounded_value_is_converted_once(path):
    # A rounded value that is also stored: the store takes its bits (no
    # second rounding); with AVX512-BF16 from one conversion of the
    # unrounded value, the f32 user from the 32-bit rounding.
    text = """HloModule both
ENTRY %main (x: f32[4099]) -> (bf16[4099], f32[4099]) {
  %x = f32[4099] parameter(0)
  %h = bf16[4099] convert(%x)
  %w = f32[4099] convert(%h)
  %s = f32[4099] add(%w, %w)
  ROOT %t = (bf16[4099], f32[4099]) tuple(%h, %s)
}"""
    bits = _bits_values()[:4099]
    exe = runtime.compile(parse_hlo_module(text), "cpu")
    h, s = exe.execute(bits.view(np.float32))
    _check(np.asarray(h).view(np.uint16), bits)
    want = _expected_bits(bits).astype(np.uint32) << np.uint32(16)
    with np.errstate(invalid="ignore", over="ignore"):
        doubled = (want.view(np.float32) * np.float32(2))
    np.testing.assert_array_equal(np.asarray(s), doubled)
    assert exe.ir_text.count("to bfloat") == (1 if path == "native" else 0)
