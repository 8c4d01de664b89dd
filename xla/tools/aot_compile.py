"""aot_compile: an HLO module -> an object file and a C header for a CPU
target (see ``xla.backends.cpu.aot``), or PTX, a cubin and a C header for
NVIDIA GPUs (``--target=cuda``, see ``xla.backends.gpu.aot``).

The command-line program ``tools/aot_compile.py`` is a thin wrapper over
``compile_file``.
"""
import os
import re

from xla.backends.cpu import aot
from xla.errors import InvalidArgumentError
from xla.tools import outputs as outputs_module
from xla.tools import replay


def default_name(path):
    """A C identifier from the module file's name (``fma_reduce.hlo`` ->
    ``fma_reduce``)."""
    stem = os.path.basename(path).split(".")[0]
    name = re.sub(r"[^A-Za-z0-9_]", "_", stem) or "entry"
    return "_" + name if name[0].isdigit() else name


def compile_file(path, out_dir, target="x86_64", name=None, host_cpu=False, runtime_c=False,
                 overwrite=False, cuda_arch="sm_80"):
    """Compiles the HLO text file ``path``; writes OUT_DIR/NAME.o,
    OUT_DIR/NAME.h and, when the object calls runtime functions,
    OUT_DIR/xla_cpu_runtime.c (creating OUT_DIR); returns (AotResult, [paths]).
    Each output is checked and written as ``xla.tools.outputs`` says: never
    through a link or into a device, never over the input, over an existing
    file only with ``overwrite``, whole or not at all."""
    name = name or default_name(path)
    aot.check_name(name)
    if target == "cuda":
        outputs = [os.path.join(out_dir, f"{name}{suffix}") for suffix in (".ptx", ".cubin", ".h")]
    else:
        outputs = [os.path.join(out_dir, f"{name}.o"), os.path.join(out_dir, f"{name}.h"),
                   os.path.join(out_dir, aot.RUNTIME_C_FILE)]
    if os.path.lexists(out_dir) and not os.path.isdir(out_dir):
        raise InvalidArgumentError(f"--out_dir={out_dir} is not a directory")
    if os.path.isdir(out_dir):
        for out in outputs:
            if os.path.realpath(out) == os.path.realpath(path):
                raise InvalidArgumentError(f"writing {out} would overwrite the input {path}")
            outputs_module.check_output_path(out, [path], overwrite, flag="output")
    module = replay.read_module(path)
    if target == "cuda":
        from xla.backends.gpu import aot as gpu_aot
        if host_cpu or runtime_c:
            raise InvalidArgumentError("--host_cpu and --runtime_c are for CPU targets, "
                                       "not --target=cuda")
        result = gpu_aot.aot_compile(module, name, cuda_arch)
        contents = [result.ptx, result.cubin, result.header_text]
        if result.cubin is None:     # no ptxas here: the driver compiles the PTX when loading it
            outputs.pop(1)
            contents.pop(1)
    else:
        result = aot.aot_compile(module, target=target, name=name, host_cpu=host_cpu,
                                 runtime_c=runtime_c)
        contents = [result.object_bytes, result.header_text, result.runtime_source]
        if result.runtime_source is None:
            outputs.pop()
            contents.pop()
    try:
        os.makedirs(out_dir, exist_ok=True)
    except OSError as e:
        raise InvalidArgumentError(f"cannot create --out_dir={out_dir}: {e.strerror}") from None
    for out, data in zip(outputs, contents):
        outputs_module.write_atomically(out, data, overwrite=overwrite)
    return result, outputs
