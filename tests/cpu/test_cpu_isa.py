"""The CPU runtime's ISA variants (xla/backends/cpu/runtime/kernels.h): every
variant this CPU runs computes matmuls, convolutions and FFTs that agree
with NumPy (each in its own process, chosen with XLA_CPU_RUNTIME_ISA), the query
reports what was asked, a bad request is a clear error, and no code of the
extension outside the variant units uses AVX or AVX-512 instructions."""
import os
import re
import shutil
import subprocess
import sys
import textwrap

import pytest

from xla import _core

ENV = "XLA_CPU_RUNTIME_ISA"
X86_64 = os.uname().machine in ("x86_64", "AMD64")


def cpu_flags():
    """The CPU's feature flags from /proc/cpuinfo (empty where there is none)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def run_python(code, isa):
    env = dict(os.environ)
    env.pop(ENV, None)
    if isa is not None:
        env[ENV] = isa
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(_core.__file__))))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env,
                          capture_output=True, text=True, timeout=240)


def test_variants_follow_the_cpu_flags():
    isas = _core.cpu_runtime_isas()
    assert isas[0] == "baseline"
    flags = cpu_flags()
    if not X86_64 or not flags:
        assert isas == ["baseline"] or flags == set()
        return
    avx2 = {"avx2", "fma"} <= flags
    avx512 = avx2 and {"avx512f", "avx512bw", "avx512dq", "avx512vl"} <= flags
    vnni = avx512 and "avx512_vnni" in flags
    bf16 = vnni and "avx512_bf16" in flags
    amx = bf16 and {"amx_tile", "amx_int8", "amx_bf16"} <= flags
    assert isas == (["baseline"] + ["avx2"] * avx2 + ["avx512"] * avx512 + ["avx512_vnni"] * vnni
                    + ["avx512_vnni_bf16"] * bf16 + ["amx"] * amx)


def test_default_is_the_widest_variant_and_the_device_kind_says_so():
    result = run_python("""
        import xla
        from xla import _core
        print(_core.cpu_runtime_isa())
        print(xla.devices("cpu")[0].kind)
    """, None)
    assert result.returncode == 0, result.stderr
    isa, kind = result.stdout.splitlines()[:2]
    assert isa == _core.cpu_runtime_isas()[-1]
    assert kind.endswith("; runtime kernels: " + isa)


# Each variant in its own process: runtime matmuls (every dtype, transposes,
# batches, shapes for the serial, split and threaded paths) and a
# convolution against NumPy, and one dot through xla.jit.
VARIANT_CHECK = """
    import ctypes, os, sys
    import numpy as np
    import xla
    from xla import _core
    assert _core.cpu_runtime_isa() == os.environ["XLA_CPU_RUNTIME_ISA"], _core.cpu_runtime_isa()
    assert xla.devices("cpu")[0].kind.endswith("runtime kernels: " + _core.cpu_runtime_isa())
    symbols = _core.cpu_runtime_symbols()
    args = [ctypes.c_void_p] * 3 + [ctypes.c_int64] * 4 + [ctypes.c_int32] * 2
    rng = np.random.default_rng(0)
    shapes = [(1, 1, 1, 1), (1, 3, 5, 7), (2, 17, 33, 9), (1, 1, 300, 70), (1, 300, 64, 1),
              (1, 130, 70, 150), (1, 256, 256, 256), (1, 96, 64, 512), (6, 40, 24, 40),
              # matrix-vector products of few columns (row dots): rows past a
              # multiple of four, 16 columns, and 17 (Eigen's GEMV)
              (1, 2003, 6, 1), (1, 9, 16, 1), (1, 6, 17, 1)]
    tolerance = {"f32": 2e-5, "f64": 1e-12, "c64": 3e-5, "c128": 1e-12}
    for name, dtype in [("f32", np.float32), ("f64", np.float64), ("s32", np.int32),
                        ("c64", np.complex64), ("c128", np.complex128)]:
        fn = ctypes.CFUNCTYPE(None, *args)(symbols["__xla_cpu_matmul_" + name])
        for batch, m, k, n in shapes:
            for tl in (0, 1):
                for tr in (0, 1):
                    def make(shape):
                        if name == "s32":
                            return rng.integers(-2**31, 2**31, shape, dtype=np.int64).astype(np.int32)
                        x = rng.standard_normal(shape)
                        if dtype in (np.complex64, np.complex128):
                            x = x + 1j * rng.standard_normal(shape)
                        return x.astype(dtype)
                    lhs = make((batch, k, m) if tl else (batch, m, k))
                    rhs = make((batch, n, k) if tr else (batch, k, n))
                    out = np.full((batch, m, n), 7, dtype)
                    fn(lhs.ctypes.data, rhs.ctypes.data, out.ctypes.data, batch, m, k, n, tl, tr)
                    a = lhs.transpose(0, 2, 1) if tl else lhs
                    b = rhs.transpose(0, 2, 1) if tr else rhs
                    what = f"{name} {batch}x{m}x{k}x{n} tl={tl} tr={tr}"
                    if name == "s32":  # sums wrap modulo 2**32
                        want = np.matmul(a.astype(np.int64), b.astype(np.int64)).astype(np.int32)
                        assert np.array_equal(out, want), what
                    else:
                        want = np.matmul(a.astype(np.complex128 if name[0] == "c" else np.float64),
                                         b)
                        scale = tolerance[name] * np.sqrt(k)
                        assert np.allclose(out, want, rtol=scale, atol=scale), what
    # The low-precision matmuls: s8 exactly (extremes included), bf16 within
    # f32 summation's bound; non-multiples of the 8 x 32 tile and k groups.
    import ml_dtypes
    s8 = ctypes.CFUNCTYPE(None, *args)(symbols["__xla_cpu_matmul_s8_s32"])
    bf16 = ctypes.CFUNCTYPE(None, *args)(symbols["__xla_cpu_matmul_bf16_f32"])
    # (and, run transposed into a buffer: many rows and at most 64 columns)
    for batch, m, k, n in shapes + [(1, 67, 67, 67), (2, 9, 1030, 41), (1, 5, 0, 3),
                                    (1, 300, 40, 24), (1, 1030, 67, 64), (1, 200, 9, 2),
                                    (1, 4100, 20, 3)]:   # blocks of 2048 rows
        for tl in (0, 1):
            for tr in (0, 1):
                what = f"{batch}x{m}x{k}x{n} tl={tl} tr={tr}"
                lhs_shape = (batch, k, m) if tl else (batch, m, k)
                rhs_shape = (batch, n, k) if tr else (batch, k, n)
                for lo, hi in ((-128, 128), (-128, -127), (127, 128)):
                    lhs = rng.integers(lo, hi, lhs_shape).astype(np.int8)
                    rhs = rng.integers(-128, 128, rhs_shape).astype(np.int8)
                    rhs.flat[::2] = -128
                    out = np.full((batch, m, n), 7, np.int32)
                    s8(lhs.ctypes.data, rhs.ctypes.data, out.ctypes.data, batch, m, k, n, tl, tr)
                    a = lhs.transpose(0, 2, 1) if tl else lhs
                    b = rhs.transpose(0, 2, 1) if tr else rhs
                    want = np.matmul(a.astype(np.int64), b.astype(np.int64)).astype(np.int32)
                    assert np.array_equal(out, want), "s8 " + what
                lhs = rng.standard_normal(lhs_shape).astype(ml_dtypes.bfloat16)
                rhs = rng.standard_normal(rhs_shape).astype(ml_dtypes.bfloat16)
                out = np.full((batch, m, n), 7, np.float32)
                bf16(lhs.ctypes.data, rhs.ctypes.data, out.ctypes.data, batch, m, k, n, tl, tr)
                a = (lhs.transpose(0, 2, 1) if tl else lhs).astype(np.float64)
                b = (rhs.transpose(0, 2, 1) if tr else rhs).astype(np.float64)
                bound = (k + 1) * 2.0 ** -24 * np.matmul(np.abs(a), np.abs(b))
                assert np.all(np.abs(out - np.matmul(a, b)) <= bound), "bf16 " + what
    # The tiled GEMM (small and strided products): two batch dimensions, the
    # scalar operand stored transposed, the vector operand's batch
    # dimensions swapped and its rows padded, the result's rows padded (the
    # padding must stay untouched); fewer rows than a block, fewer columns
    # than a vector, columns past whole blocks, k = 0; serial and split
    # over the pool with the same bits. Then the same walks blocked (the
    # runtime's blocked GEMM per product or row slab: the 300 rows of each
    # of the 6 products are 2 slabs, 160 and 140).
    for name, dtype in [("f32", np.float32), ("f64", np.float64)]:
        gemm = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * 4 + [ctypes.c_int64]))(
            symbols["__xla_cpu_tiled_gemm_" + name])
        for blocked in (0, 1):
            for m, k, n in [(1, 3, 5), (3, 7, 2), (4, 1, 1), (5, 0, 9), (4, 6, 4), (9, 3, 30),
                            (6, 5, 100), (17, 2, 31), (63, 63, 63), (8, 5, 11), (7, 2, 16),
                            (13, 9, 49), (5, 4, 52), (130, 17, 7), (300, 40, 70)]:
                a = rng.standard_normal((2, 3, k, m)).astype(dtype)
                b = rng.standard_normal((3, 2, k, n + 3)).astype(dtype)
                e = [s // a.itemsize for s in a.strides]
                f = [s // b.itemsize for s in b.strides]
                results = []
                for chunk in (0, 1):
                    out = np.full((2, 3, m, n + 1), 7, dtype)
                    g = [s // out.itemsize for s in out.strides]
                    walk = np.array([m, k, n, e[3], e[2], f[2], g[2], 2, 2, 3, e[0], e[1], f[1],
                                     f[0], g[0], g[1], blocked] + [1] * blocked, np.int64)
                    gemm(a.ctypes.data, b.ctypes.data, out.ctypes.data, walk.ctypes.data, chunk)
                    want = np.swapaxes(a, 2, 3).astype(np.float64) @ np.swapaxes(b, 0, 1)[..., :n]
                    what = f"tiled gemm {name} {m}x{k}x{n} chunk={chunk} blocked={blocked}"
                    scale = tolerance[name] * np.sqrt(max(k, 1))
                    assert np.allclose(out[..., :n], want, rtol=scale, atol=scale), what
                    assert np.all(out[..., n:] == 7), what
                    results.append(out.tobytes())
                assert results[0] == results[1], f"tiled gemm {name} {m}x{k}x{n}: bits differ"
        # A blocked walk's vector operand stored transposed: b[p, j] at
        # bt[j, p] (its rows padded), b_row 1 and b_col the padded row.
        for m, k, n in [(300, 40, 70), (64, 17, 5), (5, 130, 33)]:
            a = rng.standard_normal((3, m, k)).astype(dtype)
            bt = rng.standard_normal((3, n, k + 2)).astype(dtype)
            out = np.full((3, m, n), 7, dtype)
            walk = np.array([m, k, n, k, 1, 1, n, 1, 3, m * k, n * (k + 2), m * n, 1, k + 2],
                            np.int64)
            for chunk in (0, 1):
                gemm(a.ctypes.data, bt.ctypes.data, out.ctypes.data, walk.ctypes.data, chunk)
                want = a.astype(np.float64) @ np.swapaxes(bt[..., :k], 1, 2)
                scale = tolerance[name] * np.sqrt(k)
                assert np.allclose(out, want, rtol=scale, atol=scale), \
                    f"blocked gemm {name} {m}x{k}x{n}, b transposed, chunk={chunk}"
    conv = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * 3 + [ctypes.c_int64] * 18))(
        symbols["__xla_cpu_conv2d_f32"])
    x = rng.standard_normal((2, 12, 11, 8)).astype(np.float32)
    w = rng.standard_normal((3, 3, 8, 16)).astype(np.float32)
    out = np.empty((2, 12, 11, 16), np.float32)
    conv(x.ctypes.data, w.ctypes.data, out.ctypes.data, 2, 12, 11, 8, 3, 3, 16, 12, 11,
         1, 1, 1, 1, 1, 1, 1, 1, 1)
    padded = np.pad(x.astype(np.float64), ((0, 0), (1, 1), (1, 1), (0, 0)))
    want = np.zeros((2, 12, 11, 16))
    for ky in range(3):
        for kx in range(3):
            want += padded[:, ky:ky + 12, kx:kx + 11, :] @ w[ky, kx].astype(np.float64)
    assert np.allclose(out, want, rtol=1e-4, atol=1e-4), "conv2d"
    # FFT (fft.cc): the lanes' 64-byte vectors in every variant's
    # alignment, power-of-two and other lengths, real transforms.
    fft = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int32,
                           ctypes.c_void_p, ctypes.c_int32)
    for real, cdt, tol in (("f32", np.complex64, 2e-5), ("f64", np.complex128, 1e-12)):
        f = fft(symbols["__xla_cpu_fft_" + real])
        for rows, n in ((37, 256), (5, 48), (3, 4)):
            z = (rng.standard_normal((rows, n)) + 1j * rng.standard_normal((rows, n))).astype(cdt)
            lengths = np.array([n], np.int64)
            out = np.empty_like(z)
            f(z.ctypes.data, out.ctypes.data, rows, 1, lengths.ctypes.data, 0)
            want = np.fft.fft(z.astype(np.complex128))
            assert np.allclose(out, want, rtol=0, atol=tol * np.abs(want).max() * 10), f"fft {real} {n}"
            x = np.ascontiguousarray(z.real)
            half = np.empty((rows, n // 2 + 1), cdt)
            f(x.ctypes.data, half.ctypes.data, rows, 1, lengths.ctypes.data, 2)
            want = np.fft.rfft(x.astype(np.float64))
            assert np.allclose(half, want, rtol=0, atol=tol * np.abs(want).max() * 10), f"rfft {real} {n}"
    a = rng.standard_normal((200, 300)).astype(np.float32)
    b = rng.standard_normal((300, 150)).astype(np.float32)
    got = np.asarray(xla.jit(lambda p, q: p @ q)(a, b))
    assert np.allclose(got, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-3), "xla.jit dot"
    print("ok", _core.cpu_runtime_isa())
"""


@pytest.mark.parametrize("isa", ["baseline", "avx2", "avx512", "avx512_vnni", "avx512_vnni_bf16",
                                 "amx"])
def test_variant_agrees_with_numpy(isa):
    if isa not in _core.cpu_runtime_isas():
        pytest.skip(f"this CPU or build has no {isa} variant")
    result = run_python(VARIANT_CHECK, isa)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().splitlines()[-1] == "ok " + isa


def test_unknown_variant_is_a_clear_error():
    result = run_python("""
        import xla
        from xla import _core
        for query in (_core.cpu_runtime_isa, lambda: xla.devices("cpu")):
            try:
                query()
            except ValueError as e:
                print("ValueError:", e)
            else:
                print("no error")
    """, "sse9")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 2
    for line in lines:
        assert line.startswith("ValueError: XLA_CPU_RUNTIME_ISA=sse9 is not a CPU runtime ISA")
        assert "baseline" in line


def test_unsupported_variant_is_a_clear_error():
    built = (["baseline", "avx2", "avx512", "avx512_vnni", "avx512_vnni_bf16", "amx"] if X86_64
             else ["baseline"])
    unsupported = [isa for isa in built if isa not in _core.cpu_runtime_isas()]
    if not unsupported:
        pytest.skip("this CPU runs every variant")
    result = run_python("""
        from xla import _core
        try:
            _core.cpu_runtime_isa()
        except ValueError as e:
            print(e)
    """, unsupported[-1])
    assert "this CPU lacks" in result.stdout, result.stdout + result.stderr


# Instructions that need AVX or wider: VEX/EVEX encodings (mnemonics v...,
# but not the legacy verr/verw), and ymm/zmm/opmask registers. objdump's
# instruction lines are "address:<tab>mnemonic operands [# or <symbol>]".
_MNEMONIC_AVX = re.compile(r"^(?:(?:lock|rep\w*|notrack|bnd|data16|addr32)\s+)*v(?!err|erw)[a-z]")
_REGISTER_AVX = re.compile(r"%(?:[yz]mm\d+|k[0-7])\b")
_FUNCTION = re.compile(r"^[0-9a-f]+ <(.+)>:$")
# AMX instructions (legacy-looking mnemonics: ldtilecfg, tileloadd, tdpbsud, ...).
_MNEMONIC_AMX = re.compile(r"^(?:ldtilecfg|sttilecfg|tile[a-z0-9]+|tdp[a-z0-9]+)\b")


def uses_avx(line):
    parts = line.split("\t", 1)
    if len(parts) != 2:
        return False
    instruction = re.split(r"\s[#<]", parts[1], maxsplit=1)[0].strip()
    return bool(_MNEMONIC_AVX.match(instruction) or _REGISTER_AVX.search(instruction))


def uses_amx(line):
    parts = line.split("\t", 1)
    return len(parts) == 2 and bool(_MNEMONIC_AMX.match(parts[1].strip()))


_VARIANT_MARKERS = ("isa_avx2", "isa_avx512", "isa_amx", "xla_eigen_avx2", "xla_eigen_avx512",
                    "xla_eigen_amx")


def test_only_the_variant_units_use_avx():
    """Disassembles the extension: every function with an AVX or AVX-512
    instruction must belong to a wide variant (its name, template arguments
    included, names one of their namespaces). Anything else (the bindings,
    the C++ core, the runtime's other files, the baseline variant, and any
    inline library function the linker kept one copy of) must run on any
    x86-64 CPU. AMX tile instructions only in the amx variant's functions."""
    if not X86_64:
        pytest.skip("x86-64 only")
    objdump = shutil.which("objdump")
    if objdump is None:
        pytest.skip("objdump (binutils) is not installed")
    # Mangled names: a variant's namespaces appear in them as in source.
    result = subprocess.run([objdump, "-d", "--no-show-raw-insn", _core.__file__],
                            capture_output=True, text=True, timeout=240)
    assert result.returncode == 0, result.stderr
    offenders = {}
    wide = set()
    zmm = False
    function = None
    for line in result.stdout.splitlines():
        m = _FUNCTION.match(line)
        if m:
            function = m.group(1)
            continue
        if function is None or not line.startswith(" "):
            continue
        if uses_amx(line) and "isa_amx" not in function:
            offenders.setdefault(function, line.strip())
        if not uses_avx(line):
            continue
        if any(marker in function for marker in _VARIANT_MARKERS):
            wide.add(function)
            zmm = zmm or ("%zmm" in line and "avx512" in function)
        else:
            offenders.setdefault(function, line.strip())
    assert not offenders, f"AVX code outside the wide variants ({len(offenders)} functions):\n" + (
        "\n".join(f"{name}: {insn}" for name, insn in sorted(offenders.items())[:20]))
    # The scan sees the variants' code (so it can tell): both have AVX code,
    # the avx512 one zmm registers.
    assert any("avx2" in f for f in wide)
    assert any("avx512" in f for f in wide) and zmm
