"""aot_compile --target=cuda: PTX, a cubin and a C header that runs the
kernels through the CUDA driver API. Without a GPU: the files, the header
compiling against the nvcc wheel's cuda.h, the PTX naming every kernel the
header launches, refusals named. With one: a C program built from the
header runs the module and matches the interpreter."""
import os
import pathlib
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

from xla.backends.gpu.driver import cuda_unavailable_reason
from xla.hlo.evaluator import evaluate
from xla.hlo.parser import parse_hlo_module
from xla.tools.arrays import flatten_result

ROOT = pathlib.Path(__file__).resolve().parents[2]
TOOL = ROOT / "tools" / "aot_compile.py"
NO_GPU = cuda_unavailable_reason()

MODULE = """HloModule aot_mix
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
lt {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = pred[] compare(a, b), direction=LT
}
ENTRY e {
  x = f32[64,100] parameter(0)
  y = f32[100,8] parameter(1)
  k = f32[3] constant({0.5, 2, -1})
  k1 = f32[1] slice(k), slice={[1:2]}
  k2 = f32[] reshape(k1)
  kb = f32[64,100] broadcast(k2), dimensions={}
  e = f32[64,100] exponential(x)
  m = f32[64,100] multiply(e, kb)
  z = f32[] constant(0)
  s = f32[64] reduce(m, z), dimensions={1}, to_apply=add
  d = f32[64,8] dot(m, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  o = f32[64] sort(s), dimensions={0}, to_apply=lt
  ks = f32[3] sort(k), dimensions={0}, to_apply=lt
  ROOT t = (f32[64], f32[64,8], f32[3]) tuple(o, d, ks)
}
"""

HARNESS = r"""
#include <stdio.h>
#include <stdlib.h>
#include "{name}.h"

#define CHECK(x) do {{ CUresult r_ = (x); if (r_ != CUDA_SUCCESS) {{ \
  const char* s_; cuGetErrorString(r_, &s_); fprintf(stderr, "%s: %s\n", #x, s_); return 1; }} }} while (0)

static void* slurp(const char* path, size_t* n) {{
  FILE* f = fopen(path, "rb"); if (!f) return NULL;
  fseek(f, 0, SEEK_END); *n = (size_t)ftell(f); fseek(f, 0, SEEK_SET);
  void* p = malloc(*n + 1); if (fread(p, 1, *n, f) != *n) {{ fclose(f); return NULL; }}
  ((char*)p)[*n] = 0; fclose(f); return p;
}}

int main(int argc, char** argv) {{
  CUdevice dev; CUcontext ctx; CUmodule mod; size_t n;
  CUdeviceptr buffers[{name}_BUFFER_COUNT];
  char path[4096];
  CHECK(cuInit(0)); CHECK(cuDeviceGet(&dev, 0));
  CHECK(cuDevicePrimaryCtxRetain(&ctx, dev)); CHECK(cuCtxSetCurrent(ctx));
  void* image = slurp(argv[1], &n); if (!image) return 2;
  CHECK(cuModuleLoadData(&mod, image));
  for (int i = 0; i < {name}_BUFFER_COUNT; ++i) {{
    CHECK(cuMemAlloc(&buffers[i], {name}_buffer_sizes[i] ? {name}_buffer_sizes[i] : 1));
    int p = {name}_buffer_parameter[i];
    if (p >= 0) {{
      snprintf(path, sizeof path, "%s/arg%d.bin", argv[2], p);
      void* data = slurp(path, &n); if (!data) return 3;
      CHECK(cuMemcpyHtoD(buffers[i], data, n)); free(data);
    }}
  }}
  CHECK({name}_upload_constants(buffers));
  CHECK({name}_run(mod, 0, buffers));
  CHECK(cuCtxSynchronize());
  for (int k = 0; k < {name}_RESULT_COUNT; ++k) {{
    void* host = malloc({name}_result_bytes[k]);
    CHECK(cuMemcpyDtoH(host, buffers[{name}_result_buffer[k]] + {name}_result_offset[k],
                       {name}_result_bytes[k]));
    snprintf(path, sizeof path, "%s/out%d.bin", argv[2], k);
    FILE* f = fopen(path, "wb"); fwrite(host, 1, {name}_result_bytes[k], f); fclose(f);
    free(host);
  }}
  printf("ok\n");
  return 0;
}}
"""


def cuda_include():
    import nvidia
    for root in nvidia.__path__:
        for sub in ("cu13/include", "cuda_nvcc/include", "cu12/include", "cuda_runtime/include"):
            if (pathlib.Path(root) / sub / "cuda.h").exists():
                return str(pathlib.Path(root) / sub)
    return "/usr/local/cuda/include"


def run_tool(*args):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT)] + sys.path))
    return subprocess.run([sys.executable, str(TOOL), *map(str, args)], capture_output=True,
                          text=True, timeout=300, env=env)


def compile_aot(tmp_path, text=MODULE, arch="sm_80"):
    hlo = tmp_path / "aot_mix.hlo"
    hlo.write_text(text)
    return run_tool("--target=cuda", f"--cuda_arch={arch}", "--out_dir", tmp_path, hlo)


def test_writes_ptx_cubin_and_a_header_that_compiles(tmp_path):
    proc = compile_aot(tmp_path, arch="sm_90")
    assert proc.returncode == 0, proc.stderr
    header = (tmp_path / "aot_mix.h").read_text()
    ptx = (tmp_path / "aot_mix.ptx").read_text()
    assert ".target sm_90" in ptx
    assert (tmp_path / "aot_mix.cubin").read_bytes()[:4] == b"\x7fELF"
    launched = set(re.findall(r'cuModuleGetFunction\(&f, module, "(\w+)"\)', header))
    entries = set(re.findall(r"\.entry\s+(\w+)", ptx))
    assert launched and launched == entries, (launched, entries)
    # The row reduction's two kernels, the sort's steps, the dot as a kernel (no cuBLAS).
    assert any(n.endswith("_partials") for n in launched) and any(n.endswith("_step") for n in launched)
    assert header.count('"k') > len(launched)        # the sort's step launched many times
    assert "cublas" not in header.lower()
    assert "aot_mix_constant_" in header              # the f32[3] constant, uploaded by the header
    cc = shutil.which("gcc") or shutil.which("cc")
    assert cc, "a C compiler is needed (build-essential)"
    (tmp_path / "main.c").write_text(HARNESS.format(name="aot_mix"))
    run = subprocess.run([cc, "-std=c99", "-Wall", "-Werror", "-fsyntax-only", "-I", str(tmp_path),
                          "-I", cuda_include(), str(tmp_path / "main.c")],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr


def test_host_control_flow_is_refused_naming_the_op(tmp_path):
    proc = compile_aot(tmp_path, """HloModule w
c {
  p = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}
b {
  p = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  x = f32[4] get-tuple-element(p), index=1
  one = s32[] constant(1)
  j = s32[] add(i, one)
  y = f32[4] add(x, x)
  ROOT t = (s32[], f32[4]) tuple(j, y)
}
ENTRY e {
  x = f32[4] parameter(0)
  z = s32[] constant(0)
  t = (s32[], f32[4]) tuple(z, x)
  w = (s32[], f32[4]) while(t), condition=c, body=b
  ROOT r = f32[4] get-tuple-element(w), index=1
}""")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "does not support while" in proc.stderr, proc.stderr


@pytest.mark.skipif(NO_GPU is not None, reason=f"needs an NVIDIA GPU: {NO_GPU}")
def test_the_header_runs_the_module_on_a_gpu(tmp_path):
    from xla.backends.gpu.platform import arch_for
    import xla
    arch = xla.devices("gpu")[0].arch
    assert arch == arch_for(xla.devices("gpu")[0].context.compute_capability)
    proc = compile_aot(tmp_path, arch=arch)
    assert proc.returncode == 0, proc.stderr
    (tmp_path / "main.c").write_text(HARNESS.format(name="aot_mix"))
    cc = shutil.which("gcc") or shutil.which("cc")
    build = subprocess.run([cc, "-std=c99", "-O1", "-I", str(tmp_path), "-I", cuda_include(),
                            str(tmp_path / "main.c"), "-o", str(tmp_path / "main"),
                            # the toolkit's link stub, where libcuda.so itself is not installed
                            "-L/usr/local/cuda/lib64/stubs", "-lcuda"],
                           capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    rng = np.random.default_rng(5)
    args = [rng.standard_normal((64, 100)).astype(np.float32) * 0.1,
            rng.standard_normal((100, 8)).astype(np.float32)]
    for k, a in enumerate(args):
        (tmp_path / f"arg{k}.bin").write_bytes(a.tobytes())
    image = tmp_path / ("aot_mix.cubin" if (tmp_path / "aot_mix.cubin").exists() else "aot_mix.ptx")
    run = subprocess.run([str(tmp_path / "main"), str(image), str(tmp_path)], capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stderr
    expected = flatten_result(evaluate(parse_hlo_module(MODULE), *args))
    for k, e in enumerate(expected):
        got = np.frombuffer((tmp_path / f"out{k}.bin").read_bytes(), np.float32).reshape(e.shape)
        np.testing.assert_allclose(got, e, rtol=1e-4, atol=1e-4)
