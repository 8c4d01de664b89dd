"""LLVM IR -> PTX through llvmlite's NVPTX target, and ``ptxas`` (from the
``nvidia-cuda-nvcc`` wheel, a test dependency) to assemble it.

``SUPPORTED_ARCHS``: the compute capabilities code is generated for;
``--xla_gpu_arch`` picks one (default sm_80).
"""
import functools
import os
import shutil
import subprocess

from xla.errors import InvalidArgumentError, UnimplementedError

TRIPLE = "nvptx64-nvidia-cuda"
DATA_LAYOUT = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"
SUPPORTED_ARCHS = ("sm_80", "sm_86", "sm_89", "sm_90")
PTX_VERSION = {"sm_80": "+ptx75", "sm_86": "+ptx75", "sm_89": "+ptx78", "sm_90": "+ptx78"}


@functools.lru_cache(maxsize=None)
def _target_machine(arch):
    import llvmlite.binding as llvm
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    try:
        target = llvm.Target.from_triple(TRIPLE)
    except RuntimeError as e:
        raise UnimplementedError(f"this llvmlite has no NVPTX target: {e}") from None
    return target.create_target_machine(cpu=arch, features=PTX_VERSION[arch], opt=3)


def check_arch(arch):
    if arch not in SUPPORTED_ARCHS:
        raise InvalidArgumentError(f"--xla_gpu_arch={arch}: supported are "
                                   f"{', '.join(SUPPORTED_ARCHS)}")
    return arch


def find_libdevice():
    """libdevice.10.bc ($XLA_LIBDEVICE, the nvcc wheel's nvvm/libdevice, or a CUDA
    toolkit's under $CUDA_HOME or /usr/local/cuda); None."""
    explicit = os.environ.get("XLA_LIBDEVICE")
    if explicit:
        return explicit
    try:
        import nvidia
        for root in nvidia.__path__:
            for sub in ("cu13/nvvm/libdevice/libdevice.10.bc", "cuda_nvcc/nvvm/libdevice/libdevice.10.bc",
                        "cu12/nvvm/libdevice/libdevice.10.bc"):
                path = os.path.join(root, sub)
                if os.path.exists(path):
                    return path
    except ImportError:
        pass
    for root in (os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
        if root and os.path.exists(os.path.join(root, "nvvm/libdevice/libdevice.10.bc")):
            return os.path.join(root, "nvvm/libdevice/libdevice.10.bc")
    return None


def _optimized(ir_text, arch):
    """``ir_text`` (or a list of kernel modules, linked into one) optimized,
    with libdevice linked in when a kernel calls it; only the kernels stay
    visible (everything else internal, so unused libdevice code goes)."""
    import llvmlite.binding as llvm
    from xla.backends.cpu import jit
    tm = _target_machine(check_arch(arch))
    texts = [ir_text] if isinstance(ir_text, str) else list(ir_text)
    context = llvm.create_context()
    mod = llvm.parse_assembly(texts[0], context=context)
    for other in texts[1:]:
        mod.link_in(llvm.parse_assembly(other, context=context))
    if any("@__nv_" in t for t in texts):
        path = find_libdevice()
        if path is None:
            raise UnimplementedError("libdevice.10.bc not found (install the nvidia-cuda-nvcc "
                                     "wheel or set XLA_LIBDEVICE): the kernels call its math")
        with open(path, "rb") as f:
            libdevice = llvm.parse_bitcode(f.read(), context=context)
        libdevice.triple = TRIPLE
        libdevice.data_layout = mod.data_layout
        mod.link_in(libdevice)
        for fn in mod.functions:
            if not fn.is_declaration and fn.name.startswith("__nv_"):
                fn.linkage = llvm.Linkage.internal
    mod.verify()
    jit.optimize(mod, 3, tm)
    return mod, tm


def optimized_ir(ir_text, arch):
    """The module optimized for ``arch`` (LLVM's O3 pipeline)."""
    from xla.backends.cpu import jit
    with jit.llvm_lock():
        return str(_optimized(ir_text, arch)[0])


def compile_ptx(ir_text, arch):
    """PTX assembly for the kernels of ``ir_text`` (one module's text, or
    a list of them linked into one PTX module), optimized at O3."""
    from xla.backends.cpu import jit
    with jit.llvm_lock():
        mod, tm = _optimized(ir_text, arch)
        return tm.emit_assembly(mod)


def find_ptxas():
    """The ptxas binary: $XLA_PTXAS, the nvidia-cuda-nvcc wheel's, or PATH's; None."""
    explicit = os.environ.get("XLA_PTXAS")
    if explicit:
        return explicit
    try:
        import nvidia
        for root in nvidia.__path__:
            for sub in ("cu13/bin/ptxas", "cuda_nvcc/bin/ptxas", "cu12/bin/ptxas"):
                path = os.path.join(root, sub)
                if os.access(path, os.X_OK):
                    return path
    except ImportError:
        pass
    return shutil.which("ptxas")


def assemble(ptx, arch, ptxas=None):
    """Runs ptxas on ``ptx`` for ``arch``; returns (cubin bytes, ptxas's
    messages). Raises UnimplementedError naming what is missing."""
    import tempfile
    ptxas = ptxas or find_ptxas()
    if ptxas is None:
        raise UnimplementedError("ptxas not found: install the nvidia-cuda-nvcc wheel or set XLA_PTXAS")
    with tempfile.TemporaryDirectory() as tmp:
        src, out = os.path.join(tmp, "k.ptx"), os.path.join(tmp, "k.cubin")
        with open(src, "w") as f:
            f.write(ptx)
        run = subprocess.run([ptxas, f"-arch={arch}", "--warn-on-spills", "-o", out, src],
                             capture_output=True, text=True)
        if run.returncode != 0:
            raise InvalidArgumentError(f"ptxas -arch={arch} failed:\n{run.stderr}")
        with open(out, "rb") as f:
            return f.read(), run.stderr + run.stdout
