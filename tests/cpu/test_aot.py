"""Ahead-of-time compilation (tools/aot_compile.py, xla/backends/cpu/aot.py):
objects are linked into C programs with gcc, run (x86-64 natively, AArch64
under qemu-aarch64) and their results compared with the interpreter's.

The cross tools are part of `make setup` (Makefile APT_PACKAGES); when they
are missing the AArch64 tests fail, they do not skip.
"""
import os
import pathlib
import platform
import shutil
import subprocess
import sys

import numpy as np
import pytest

from xla.backends.cpu import aot
from xla.backends.cpu.executable import from_physical, to_physical
from xla.hlo.evaluator.evaluator import Evaluator
from xla.errors import InvalidArgumentError, UnimplementedError
from xla.hlo.parser import parse_hlo_module
from xla.tools import arrays
from xla.tools.replay import read_module

ROOT = pathlib.Path(__file__).resolve().parents[2]
TOOL = ROOT / "tools" / "aot_compile.py"
FMA_REDUCE = ROOT / "examples" / "fma_reduce.hlo"
MAIN_C = ROOT / "examples" / "aot" / "main.c"
CORPUS = ROOT / "tests" / "corpus"
HOST_X86 = platform.machine().lower() in ("x86_64", "amd64")

# Writes each argument array leaf from argv[1] (raw bytes, in order) into
# its buffer, runs the function, writes the result leaves to argv[2], and
# checks that a tuple result's index table points at the leaves.
HARNESS = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "{name}.h"

int main(int argc, char** argv) {{
  void* table[{name}_NUM_BUFFERS];
  if (argc != 3) return 2;
  for (int i = 0; i < {name}_NUM_BUFFERS; ++i) {{
    size_t size = ((size_t){name}_BUFFER_SIZES[i] + 63) / 64 * 64 + 64;
    table[i] = {name}_BUFFER_IS_CONSTANT[i] ? NULL : aligned_alloc({name}_BUFFER_ALIGNMENT, size);
    if (table[i]) memset(table[i], 0xA5, size);  /* no reliance on zeroed memory */
  }}
  FILE* in = fopen(argv[1], "rb");
  for (int k = 0; k < {name}_NUM_ARG_ARRAYS; ++k)
    if ((int64_t)fread(table[{name}_ARG_INDICES[k]], 1, {name}_ARG_SIZES[k], in) != {name}_ARG_SIZES[k])
      return 3;
  fclose(in);
  {name}(table);
  FILE* out = fopen(argv[2], "wb");
  for (int k = 0; k < {name}_NUM_RESULTS; ++k) {{
    const char* p = (const char*)table[{name}_RESULT_INDICES[k]] + {name}_RESULT_OFFSETS[k];
    if ((int64_t)fwrite(p, 1, {name}_RESULT_SIZES[k], out) != {name}_RESULT_SIZES[k]) return 4;
    {check_tuple}
  }}
  fclose(out);
  puts("ok");
  return 0;
}}
"""
CHECK_TUPLE = """if (((void**)table[{name}_RESULT_TUPLE_INDEX])[k] != (void*)p) {{
      fprintf(stderr, "tuple index table entry %d is wrong\\n", k); return 5; }}"""


def run_tool(*args):
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, str(TOOL), *map(str, args)], capture_output=True,
                          text=True, env=env, timeout=300)


def compile_module(path, out_dir, target, name, *flags):
    proc = run_tool(f"--target={target}", f"--out_dir={out_dir}", f"--name={name}", *flags, path)
    assert proc.returncode == 0, proc.stderr
    assert (out_dir / f"{name}.o").exists() and (out_dir / f"{name}.h").exists()
    return out_dir / f"{name}.o"


def cross_tools():
    """(gcc for aarch64, qemu-aarch64): fails, not skips, when missing."""
    gcc, qemu = shutil.which("aarch64-linux-gnu-gcc"), shutil.which("qemu-aarch64")
    if not gcc or not qemu:
        pytest.fail("aarch64-linux-gnu-gcc and qemu-aarch64 are needed (Debian packages "
                    "gcc-aarch64-linux-gnu, libc6-dev-arm64-cross, qemu-user): run `make setup`")
    return gcc, qemu


def host_gcc():
    gcc = shutil.which("gcc")
    if not gcc:
        pytest.fail("gcc is needed: run `make setup`")
    if not HOST_X86:
        pytest.fail(f"these tests link x86-64 objects natively; the host is {platform.machine()}")
    return gcc


def link(cc, out_dir, sources, exe, static=False):
    cmd = [cc, "-O1", "-std=c11", "-Wall", "-Werror", f"-I{out_dir}", *map(str, sources),
           "-lm", "-o", str(exe)]
    if static:
        cmd.insert(1, "-static")
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return exe


def run_exe(exe, *args, qemu=None):
    cmd = ([qemu] if qemu else []) + [str(exe), *map(str, args)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def readelf_header(path):
    proc = subprocess.run(["readelf", "-h", str(path)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def module_args(path, seed=0):
    """Arguments for a module: its corpus .npz when there is one, else random."""
    module = read_module(path)
    shapes = [p.shape for p in module.entry.parameters]
    npz = pathlib.Path(str(path).replace(".optimized.hlo", ".hlo")).with_suffix(".npz")
    if npz.exists():
        with np.load(npz) as data:
            return [arrays.restore_dtype(data[f"arg{i}"], s.dtype) for i, s in enumerate(shapes)]
    return arrays.random_args(shapes, seed=seed)


def check_module(path, out_dir, target, name, cc, qemu=None, static=False, flags=(),
                 rtol=1e-5, atol=1e-6):
    """Compiles ``path`` ahead of time, runs it through HARNESS, compares with
    the interpreter."""
    obj = compile_module(path, out_dir, target, name, *flags)
    reference = parse_hlo_module(path.read_text())
    args = module_args(path)
    expected = arrays.flatten_result(Evaluator().evaluate(reference, list(args)))
    root_shape = reference.entry.root_instruction.shape
    leaves = [s for _, s in root_shape.leaves() if s.is_array]
    harness = out_dir / f"{name}_main.c"
    check = CHECK_TUPLE.format(name=name) if root_shape.is_tuple and \
        all(s.is_array for s in root_shape.tuple_shapes) else ""
    harness.write_text(HARNESS.format(name=name, check_tuple=check))
    sources = [harness, obj]
    if (out_dir / aot.RUNTIME_C_FILE).exists():
        sources.append(out_dir / aot.RUNTIME_C_FILE)
    exe = link(cc, out_dir, sources, out_dir / name, static=static)
    params = reference.entry.parameters
    inputs = out_dir / f"{name}.in"
    inputs.write_bytes(b"".join(to_physical(np.asarray(a, p.shape.dtype), p.shape).tobytes()
                                for a, p in zip(args, params)))
    outputs = out_dir / f"{name}.out"
    assert run_exe(exe, inputs, outputs, qemu=qemu).strip() == "ok"
    data = outputs.read_bytes()
    offset = 0
    assert len(expected) == len(leaves)
    for i, (shape, e) in enumerate(zip(leaves, expected)):
        n = shape.byte_size()
        flat = np.frombuffer(data[offset:offset + n], dtype=shape.dtype)
        offset += n
        actual = from_physical(flat, shape)
        np.testing.assert_allclose(actual, np.asarray(e), rtol=rtol, atol=atol,
                                   err_msg=f"{path.name} result {i} on {target}")
    assert offset == len(data)


# ----- x86-64 -----------------------------------------------------------------------
def test_fma_reduce_main_c_x86_64(tmp_path):
    gcc = host_gcc()
    obj = compile_module(FMA_REDUCE, tmp_path, "x86_64", "fma_reduce")
    assert "Advanced Micro Devices X86-64" in readelf_header(obj)
    exe = link(gcc, tmp_path, [MAIN_C, obj], tmp_path / "fma_reduce")
    assert run_exe(exe).strip() == "fma_reduce = 46"
    rng = np.random.default_rng(1)
    args = [rng.standard_normal(8).astype(np.float32) for _ in range(3)]
    inputs = tmp_path / "args.bin"
    inputs.write_bytes(b"".join(a.tobytes() for a in args))
    run_exe(exe, inputs)
    actual = np.frombuffer((tmp_path / "args.bin.out").read_bytes(), np.float32)[0]
    expected = Evaluator().evaluate(parse_hlo_module(FMA_REDUCE.read_text()), args)
    np.testing.assert_allclose(actual, expected, rtol=1e-6)


@pytest.mark.parametrize("module", ["mlp_train_step.hlo", "linear_tuple.hlo", "bf16_ops.hlo",
                                    "f16_ops.hlo", "unary_math.hlo"])
def test_corpus_module_x86_64(tmp_path, module):
    # Tuple results, constants, libm calls, half/bfloat conversions.
    rtol = 1e-2 if module.startswith(("bf16", "f16")) else 1e-5
    check_module(CORPUS / module, tmp_path, "x86_64", "m", host_gcc(), rtol=rtol, atol=1e-5)


def test_runtime_c_complex_dot_x86_64(tmp_path):
    hlo = tmp_path / "cdot.hlo"
    hlo.write_text(COMPLEX_DOT)
    # Without the runtime: the dot is a loop in the object itself.
    (tmp_path / "plain").mkdir()
    check_module(hlo, tmp_path / "plain", "x86_64", "cdot", host_gcc(), rtol=1e-5)
    assert "__xla_cpu_matmul_c64" not in (tmp_path / "plain" / "cdot.h").read_text()
    check_module(hlo, tmp_path, "x86_64", "cdot", host_gcc(), flags=["--runtime_c"], rtol=1e-5)
    assert (tmp_path / aot.RUNTIME_C_FILE).exists()
    assert "__xla_cpu_matmul_c64" in (tmp_path / "cdot.h").read_text()


# Attention's per-head products at 256 tokens per head of 64, beyond the
# tiled kernel's limits: the JIT's runtime reads their heads in place
# (strided_gemm's blocked walks); an object has no such runtime, so the
# same module keeps the head transposes as copies for the matmul.
LONG_HEADS = """HloModule heads
ENTRY e {
  q = f32[1,256,256] parameter(0)
  k = f32[1,256,256] parameter(1)
  v = f32[1,256,256] parameter(2)
  q4 = f32[1,256,4,64] reshape(q)
  k4 = f32[1,256,4,64] reshape(k)
  v4 = f32[1,256,4,64] reshape(v)
  scores = f32[1,4,256,256] dot(q4, k4), lhs_batch_dims={0,2}, lhs_contracting_dims={3}, rhs_batch_dims={0,2}, rhs_contracting_dims={3}
  c = f32[] constant(0.01)
  cb = f32[1,4,256,256] broadcast(c), dimensions={}
  p = f32[1,4,256,256] multiply(scores, cb)
  o = f32[1,4,64,256] dot(v4, p), lhs_batch_dims={0,2}, lhs_contracting_dims={1}, rhs_batch_dims={0,1}, rhs_contracting_dims={3}
  ot = f32[1,256,4,64] transpose(o), dimensions={0,3,1,2}
  ROOT r = f32[1,256,256] reshape(ot)
}
"""


def test_long_attention_heads_x86_64(tmp_path):
    hlo = tmp_path / "heads.hlo"
    hlo.write_text(LONG_HEADS)
    check_module(hlo, tmp_path, "x86_64", "heads", host_gcc(), rtol=1e-4, atol=1e-4)
    (tmp_path / "rt").mkdir()
    check_module(hlo, tmp_path / "rt", "x86_64", "heads", host_gcc(), flags=["--runtime_c"],
                 rtol=1e-4, atol=1e-4)
    assert "__xla_cpu_tiled_gemm" not in (tmp_path / "rt" / "heads.h").read_text()


def test_runtime_c_s32_dot_x86_64(tmp_path):
    # aot_runtime.c's s32 matmul (sums in uint32_t: defined wraparound).
    hlo = tmp_path / "idot.hlo"
    hlo.write_text(COMPLEX_DOT.replace("c64", "s32"))
    check_module(hlo, tmp_path, "x86_64", "idot", host_gcc(), flags=["--runtime_c"], rtol=0)
    assert "__xla_cpu_matmul_s32" in (tmp_path / "idot.h").read_text()


def test_runtime_c_low_precision_dots_x86_64(tmp_path):
    # aot_runtime.c's s8 x s8 -> s32 and bf16 x bf16 -> f32 matmuls, and
    # the emitted loops where no runtime is linked.
    for name, result, operand, rtol, symbol in (("s8dot", "s32", "s8", 0, "s8_s32"),
                                                ("bdot", "f32", "bf16", 1e-6, "bf16_f32")):
        out = tmp_path / name
        out.mkdir()
        hlo = out / f"{name}.hlo"
        hlo.write_text(COMPLEX_DOT.replace("c64[2,3,5]", f"{result}[2,3,5]").replace("c64", operand))
        check_module(hlo, out, "x86_64", name, host_gcc(), flags=["--runtime_c"], rtol=rtol)
        assert f"__xla_cpu_matmul_{symbol}" in (out / f"{name}.h").read_text()
        # Without the runtime: the emitted loops compute the narrow dot.
        (out / "plain").mkdir()
        check_module(hlo, out / "plain", "x86_64", name, host_gcc(), rtol=rtol)
        assert f"__xla_cpu_matmul_{symbol}" not in (out / "plain" / f"{name}.h").read_text()


@pytest.mark.parametrize("module", ["conv_nhwc.hlo", "conv1d.hlo"])
def test_runtime_c_convolution_x86_64(tmp_path, module):
    # aot_runtime.c's serial conv2d in place of the runtime's.
    check_module(CORPUS / module, tmp_path, "x86_64", "m", host_gcc(), flags=["--runtime_c"],
                 rtol=1e-4, atol=1e-5)
    assert "__xla_cpu_conv2d_f32" in (tmp_path / "m.h").read_text()


def test_runtime_c_kernel_gradient_x86_64(tmp_path):
    # aot_runtime.c's serial conv2d_filter: a kernel gradient as JAX writes it.
    hlo = tmp_path / "kgrad.hlo"
    hlo.write_text(KERNEL_GRADIENT)
    check_module(hlo, tmp_path, "x86_64", "m", host_gcc(), flags=["--runtime_c"],
                 rtol=1e-4, atol=1e-5)
    assert "__xla_cpu_conv2d_filter_f32" in (tmp_path / "m.h").read_text()


KERNEL_GRADIENT = """\
HloModule kgrad

ENTRY %main (x: f32[3,9,8,2], dy: f32[3,5,4,5]) -> f32[3,4,2,5] {
  %x = f32[3,9,8,2]{3,2,1,0} parameter(0)
  %dy = f32[3,5,4,5]{3,2,1,0} parameter(1)
  ROOT %dw = f32[3,4,2,5]{3,2,1,0} convolution(%x, %dy), window={size=5x4 pad=1_1x1_1 rhs_dilate=2x2},
      dim_labels=f01b_i01o->01bf
}
"""

COMPLEX_DOT = """\
HloModule cdot

ENTRY %main (a: c64[2,3,4], b: c64[2,4,5]) -> c64[2,3,5] {
  %a = c64[2,3,4]{2,1,0} parameter(0)
  %b = c64[2,4,5]{2,1,0} parameter(1)
  ROOT %d = c64[2,3,5]{2,1,0} dot(%a, %b), lhs_batch_dims={0}, rhs_batch_dims={0},
      lhs_contracting_dims={2}, rhs_contracting_dims={1}
}
"""


# ----- aarch64 ----------------------------------------------------------------------
def test_aarch64_object_is_relocatable(tmp_path):
    obj = compile_module(FMA_REDUCE, tmp_path, "aarch64", "fma_reduce")
    header = readelf_header(obj)
    assert "AArch64" in header and "REL (Relocatable file)" in header, header


def test_fma_reduce_main_c_aarch64_qemu(tmp_path):
    gcc, qemu = cross_tools()
    obj = compile_module(FMA_REDUCE, tmp_path, "aarch64", "fma_reduce")
    exe = link(gcc, tmp_path, [MAIN_C, obj], tmp_path / "fma_reduce", static=True)
    assert run_exe(exe, qemu=qemu).strip() == "fma_reduce = 46"


@pytest.mark.parametrize("module", ["mlp_train_step.hlo", "bf16_ops.hlo"])
def test_corpus_module_aarch64_qemu(tmp_path, module):
    gcc, qemu = cross_tools()
    rtol = 1e-2 if module.startswith("bf16") else 1e-5
    check_module(CORPUS / module, tmp_path, "aarch64", "m", gcc, qemu=qemu, static=True,
                 rtol=rtol, atol=1e-5)


def test_runtime_c_complex_dot_aarch64_qemu(tmp_path):
    gcc, qemu = cross_tools()
    hlo = tmp_path / "cdot.hlo"
    hlo.write_text(COMPLEX_DOT)
    check_module(hlo, tmp_path, "aarch64", "cdot", gcc, qemu=qemu, static=True,
                 flags=["--runtime_c"])


# ----- the library and the tool's errors ----------------------------------------------
def test_header_contents():
    result = aot.aot_compile(read_module(CORPUS / "mlp_train_step.hlo"), "x86_64", "mlp")
    text = result.header_text
    assert 'extern "C"' in text and "#include <stdint.h>" in text
    assert "void mlp(void** buffer_table);" in text
    assert f"#define mlp_NUM_BUFFERS {len(result.assignment.allocations)}" in text
    for name in ("mlp_BUFFER_SIZES", "mlp_ARG0_INDEX", "mlp_ARG5_INDEX", "mlp_RESULT4_INDEX",
                 "mlp_RESULT_TUPLE_INDEX", "mlp_TEMP_INDEX", "mlp_TEMP_SIZE"):
        assert name in text, name
    assert "constants embedded in the object" in text
    # Only the C library's (libm's) functions are left to the linker.
    assert not [s for s in result.undefined_symbols if s.startswith("__xla")]
    for symbol in result.undefined_symbols:
        assert symbol in text


def test_host_cpu_only_for_the_host_target():
    with pytest.raises(InvalidArgumentError):
        other = "aarch64" if HOST_X86 else "x86_64"
        aot.aot_compile(read_module(FMA_REDUCE), other, "f", host_cpu=True)


def test_what_needs_a_runtime_is_refused_naming_the_op():
    # FFT runs through the runtime's Eigen FFT, which objects do not carry.
    with pytest.raises(UnimplementedError, match="does not support fft"):
        aot.aot_compile(parse_hlo_module("""HloModule m
ENTRY e {
  x = c64[8] parameter(0)
  ROOT f = c64[8] fft(x), fft_type=FFT, fft_length={8}
}"""), "x86_64", "f")


def test_tool_errors(tmp_path):
    bad_name = run_tool("--out_dir", tmp_path, "--name=int", FMA_REDUCE)
    assert bad_name.returncode == 1 and "not a C identifier" in bad_name.stderr
    missing = run_tool("--out_dir", tmp_path, tmp_path / "missing.hlo")
    assert missing.returncode == 1 and "cannot read module" in missing.stderr
    source = tmp_path / "k.h"
    source.write_text(FMA_REDUCE.read_text())
    clobber = run_tool("--out_dir", tmp_path, "--name=k", source)
    assert clobber.returncode == 1 and "overwrite the input" in clobber.stderr
    assert source.read_text() == FMA_REDUCE.read_text()
    malformed = tmp_path / "bad.hlo"
    malformed.write_text("HloModule bad\nENTRY %e {\n")
    parse = run_tool("--out_dir", tmp_path, malformed)
    assert parse.returncode == 1
    for proc in (bad_name, missing, clobber, parse):
        assert "Traceback" not in proc.stderr, proc.stderr


def test_conversion_helpers_are_defined_weak():
    # LLVM may call __truncsfbf2 & co., which older libgccs lack; the object
    # defines the ones it calls, weak (several objects may be linked together).
    import llvmlite.binding as llvm
    from xla.backends.cpu import jit
    aot._initialize_targets()
    triple = aot.TARGETS["aarch64"][0]
    tm = llvm.Target.from_triple(triple).create_target_machine(cpu="generic", opt=2, reloc="pic")
    mod = llvm.parse_assembly("declare bfloat @__truncsfbf2(float)\n"
                              "define bfloat @g(float %x) {\n"
                              "  %r = call bfloat @__truncsfbf2(float %x)\n  ret bfloat %r\n}\n")
    mod.triple, mod.data_layout = triple, str(tm.target_data)
    mod.link_in(aot._support_module(["__truncsfbf2"], triple, tm))
    assert mod.get_function("__truncsfbf2").linkage.name == "weak_any"
    assert jit.undefined_symbols(tm.emit_object(mod)) == []


def test_an_eigh_composite_compiles_ahead_of_time_as_its_decomposition():
    # The JIT's runtime computes xla.eigh (linalg-composite-rewriter); an
    # object's C runtime has no eigensolver, so it keeps the Jacobi loops.
    import xla
    a = np.random.default_rng(0).standard_normal((4, 4))
    text = xla.jit(lambda a: np.linalg.eigh(a)).lower(a).as_hlo_text()
    assert 'composite.name="xla.eigh"' in text
    result = aot.aot_compile(parse_hlo_module(text), runtime_c=True)
    assert not any("syevd" in s for s in result.runtime_symbols + result.undefined_symbols)
    assert "custom-call" not in result.module.to_text()
