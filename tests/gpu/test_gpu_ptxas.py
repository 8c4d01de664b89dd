"""Every kernel of every corpus module the GPU backend runs assembles with
ptxas (the nvidia-cuda-nvcc wheel, a test dependency) for sm_80 and sm_90,
libdevice linked where the kernels call it, without an error or a
warning."""
from xla.backends.gpu.nvptx import assemble, compile_ptx, find_ptxas

from test_corpus_interpreter import FILES
from test_gpu_corpus import UNSUPPORTED, compile_gpu


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
