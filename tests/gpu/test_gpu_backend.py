"""The GPU backend without a GPU (this machine has none): every corpus module
either runs on the emulator and matches JAX, or is rejected at compile time
with an error naming the op and "gpu" (the list below: what the GPU backend
does not generate yet; a module leaving it must be removed from it); every
kernel of the modules that run assembles with ptxas for sm_80 and sm_90
without a warning; and the 'gpu' platform says what is missing."""
import numpy as np
import pytest

import xla
from xla.backends.gpu.emulator import host_ir
from xla.backends.gpu.nvptx import assemble, compile_ptx, find_ptxas
from xla.errors import InvalidArgumentError, UnimplementedError

from test_corpus_interpreter import FILES, _ids, check_against_jax

# corpus module -> the op the GPU backend names as unsupported
UNSUPPORTED = {
    "argmax_argmin.hlo": "fusion",
    "argmax_argmin.optimized.hlo": "fusion",
    "attention.hlo": "fusion",
    "complex128_ops.hlo": "dot",
    "complex128_ops.optimized.hlo": "dot",
    "complex64_ops.hlo": "dot",
    "complex64_ops.optimized.hlo": "dot",
    "hlo_map_nested_tuple.hlo": "map",
    "linalg_hlo_ops.hlo": "cholesky",
    "linalg_lapack.hlo": "custom-call",
    "linalg_lapack.optimized.hlo": "custom-call",
    "maxpool_grad.hlo": "select-and-scatter",
    "maxpool_grad.optimized.hlo": "fusion",
    "rng_bit_generator.hlo": "rng-bit-generator",
    "rng_uniform.hlo": "rng",
    "rng_uniform.optimized.hlo": "rng-get-and-update-state",
    "scan_rnn.hlo": "fusion",
    "sort_multi_key.hlo": "sort",
    "sort_multi_key.optimized.hlo": "sort",
    "sort_ops.hlo": "sort",
    "sort_ops.optimized.hlo": "sort",
    "top_k.hlo": "topk",
    "top_k.optimized.hlo": "custom-call",
}


def compile_gpu(path):
    return xla.compile(xla.parse_hlo_module(path.read_text(), filename=str(path)), "gpu_emulator")


@pytest.mark.parametrize("path", FILES or [None], ids=_ids(FILES))
def test_corpus_on_the_emulator(path):
    assert path is not None
    if path.name in UNSUPPORTED:
        with pytest.raises(UnimplementedError, match=f"the gpu backend does not support "
                                                     f"{UNSUPPORTED[path.name]}"):
            compile_gpu(path)
        return
    check_against_jax(path, lambda module, args: xla.compile(module, "gpu_emulator").execute(*args))


def test_most_of_the_corpus_runs():
    assert len(FILES) - len(UNSUPPORTED) >= 121


def test_every_kernel_assembles_with_ptxas():
    assert find_ptxas(), "ptxas not found: `make setup` installs the nvidia-cuda-nvcc wheel"
    kernels = 0
    for path in FILES:
        if path.name in UNSUPPORTED:
            continue
        exe = compile_gpu(path)
        if not exe.kernels:
            continue
        kernels += len(exe.kernels)
        for arch in ("sm_80", "sm_90"):
            ptx = compile_ptx([t.ir_text for t in exe.kernels], arch)
            assert f".target {arch}" in ptx and ".entry" in ptx
            _, messages = assemble(ptx, arch)
            assert messages.strip() == "", f"{path.name} {arch}: {messages}"
    assert kernels >= 1200, kernels


def test_kernels_are_grid_stride_loops_over_special_registers():
    exe = xla.compile("""HloModule m
ENTRY e {
  x = f32[1000] parameter(0)
  y = f32[1000] parameter(1)
  ROOT z = f32[1000] multiply(x, y)
}""", "gpu_emulator")
    (thunk,) = exe.thunks
    assert "ptx_kernel" in thunk.ir_text and thunk.elements == 1000
    for reg in ("tid.x", "ctaid.x", "ntid.x", "nctaid.x"):
        assert f"llvm.nvvm.read.ptx.sreg.{reg}" in thunk.ir_text
    ptx = exe.ptx
    assert "%tid.x" in ptx and "%nctaid.x" in ptx
    x = np.arange(1000, dtype=np.float32)
    np.testing.assert_array_equal(exe.execute(x, x + 1), x * (x + 1))


def test_the_emulator_refuses_what_it_cannot_run_faithfully():
    ir_text = """target triple = "nvptx64-nvidia-cuda"
define ptx_kernel void @k(ptr %p) {
  call void @llvm.nvvm.barrier0()
  ret void
}
declare void @llvm.nvvm.barrier0()
"""
    with pytest.raises(UnimplementedError, match="cannot run @llvm.nvvm.barrier0"):
        host_ir(ir_text, "k", 1)


def test_results_stay_on_the_device():
    f = xla.jit(lambda x: np.exp(x) * 2, backend="gpu_emulator")
    x = np.linspace(-1, 1, 300).astype(np.float32)
    out = f(x)
    assert type(out).__name__ == "GpuBuffer" and out.device.platform.name == "gpu_emulator"
    again = f(out)
    np.testing.assert_allclose(np.asarray(again), np.exp(np.exp(x) * 2) * 2, rtol=2e-6)


def test_the_gpu_platform_compiles_without_a_gpu_and_says_what_is_missing(tmp_path):
    exe = xla.compile("""HloModule m
ENTRY e {
  x = f32[8] parameter(0)
  ROOT y = f32[8] add(x, x)
}""", "gpu", debug_options=f"--xla_dump_to={tmp_path}")
    assert ".entry" in exe.ptx
    assert any(p.name.endswith(".ptx") for p in tmp_path.iterdir()), list(tmp_path.iterdir())
    with pytest.raises(InvalidArgumentError, match="no NVIDIA driver|not installed|not implemented"):
        exe.execute(np.ones(8, np.float32))
    with pytest.raises(InvalidArgumentError, match="platform 'gpu' has no devices here"):
        xla.devices("gpu")
