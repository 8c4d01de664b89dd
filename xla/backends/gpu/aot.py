"""Ahead-of-time compilation for NVIDIA GPUs (``aot_compile --target=cuda``):
a module's kernels as PTX, a cubin (``ptxas``, where it is installed), and
a C header that runs them through the CUDA driver API, with no Python.

The header (``NAME.h``, which includes ``<cuda.h>``) holds the buffer
table (how many device buffers, their sizes, which are the arguments and
where the results are), the module's constants, and two functions:

- ``NAME_upload_constants(buffers)``: copies the constants into their buffers;
- ``NAME_run(module, stream, buffers)``: enqueues every launch and copy
  on ``stream``, in order; the results are ready when the stream is.

The caller loads ``NAME.cubin`` (or ``NAME.ptx``, compiled by the driver)
with ``cuModuleLoadData``, fills ``buffers`` with device pointers (each
argument's memory for the argument buffers, ``cuMemAlloc`` of
``NAME_buffer_sizes[i]`` bytes for the others) and calls both. Matrix
products are kernels here (no cuBLAS), and a module whose control flow runs
on the host (``while``, ``conditional``) is refused, naming the op: an
ahead-of-time program has no Python to read a predicate back.
"""
from dataclasses import dataclass

from xla.backends.cpu.aot import check_name
from xla.backends.gpu.kernels import LAUNCH_BLOCK as BLOCK
from xla.errors import UnimplementedError

MAX_GRID = 2048


@dataclass
class GpuAotResult:
    ptx: str
    cubin: bytes        # None where ptxas is not installed
    header_text: str
    arch: str


def aot_compile(module, name, arch="sm_80"):
    """Compiles ``module`` for ``arch``; returns a GpuAotResult."""
    from xla.backends.gpu.compiler import GpuCompiler
    from xla.backends.gpu.nvptx import assemble, check_arch, find_ptxas
    check_name(name)
    check_arch(arch)
    exe = GpuCompiler(None, arch, "gpu", gemm=False).compile(module)
    steps = list(_steps(exe.thunks))
    ptx = exe.ptx
    cubin = assemble(ptx, arch)[0] if ptx and find_ptxas() else None
    return GpuAotResult(ptx, cubin, _header(exe, name, steps, module.name), arch)


def _steps(thunks):
    from xla.backends.gpu.collectives import CollectiveThunk
    from xla.backends.gpu.fft import FftThunk
    from xla.backends.gpu.kernel_emitter import (ConditionalThunk, CopyThunk, KernelThunk,
                                                 WhileThunk)
    for t in thunks:
        if isinstance(t, list):
            yield from _steps(t)
        elif isinstance(t, KernelThunk):
            yield t
        elif isinstance(t, CopyThunk):
            if not t.sequential:   # NAME_run copies in order; no staging buffers here
                raise UnimplementedError("aot_compile --target=cuda does not support copies "
                                         "that overwrite each other's sources")
            yield t
        elif isinstance(t, (WhileThunk, ConditionalThunk)):
            op = "while" if isinstance(t, WhileThunk) else "conditional"
            raise UnimplementedError(f"aot_compile --target=cuda does not support {op}: its "
                                     "control flow runs on the host")
        elif isinstance(t, FftThunk):
            raise UnimplementedError(f"aot_compile --target=cuda does not support fft "
                                     f"(instruction {t.instruction}): it runs through cuFFT")
        elif isinstance(t, CollectiveThunk):
            raise UnimplementedError(f"aot_compile --target=cuda does not support "
                                     f"{t.instruction.opcode} (instruction {t.name}): "
                                     "collectives run through the host runtime")
        else:
            raise UnimplementedError(f"aot_compile --target=cuda does not support {t!r}")


def _c_bytes(data):
    rows = [", ".join(str(b) for b in data[i:i + 24]) for i in range(0, len(data), 24)]
    return "{\n  " + ",\n  ".join(rows) + "\n}" if rows else "{0}"


def _header(exe, name, steps, module_name):
    from xla.backends.gpu.kernel_emitter import KernelThunk
    assignment = exe.assignment
    allocations = list(assignment.allocations)
    index = {a.index: k for k, a in enumerate(allocations)}
    for key in exe._scratch:
        index[key] = len(index)
    # State kept across runs (rng counters): buffers NAME_upload_constants zeroes.
    state = [k for k in exe._constant_bytes if k not in index]
    for key in state:
        index[key] = len(index)
    sizes = [a.size for a in allocations] + list(exe._scratch.values()) + \
        [len(exe._constant_bytes[k]) for k in state]
    params = [a.parameter_number if a.kind == "parameter" else -1 for a in allocations]
    params += [-1] * (len(exe._scratch) + len(state))
    root = exe.module.entry.root_instruction
    results = []
    for shape_index, shape in root.shape.leaves():
        if shape.is_array:
            b = assignment.buffer(root, shape_index)
            results.append((index[b.allocation.index], b.offset, shape.byte_size(), shape))
    guard = f"{name.upper()}_H_"
    n_params = len(exe.module.entry.parameters)
    out = [f"/* {name}: module {module_name} compiled ahead of time for NVIDIA {exe.arch}",
           f"   by aot_compile --target=cuda (PTX: {name}.ptx; cubin: {name}.cubin).",
           "   See xla/backends/gpu/aot.py for how to call it. */",
           f"#ifndef {guard}", f"#define {guard}", "", "#include <stddef.h>",
           "#include <cuda.h>", "",
           f"#define {name}_BUFFER_COUNT {len(sizes)}",
           f"#define {name}_PARAMETER_COUNT {n_params}",
           f"#define {name}_RESULT_COUNT {len(results)}", "",
           "/* Bytes of each device buffer. */",
           f"static const size_t {name}_buffer_sizes[{name}_BUFFER_COUNT] = "
           f"{{{', '.join(map(str, sizes))}}};",
           "/* Which argument each buffer is (its device memory, given by the caller), or -1. */",
           f"static const int {name}_buffer_parameter[{name}_BUFFER_COUNT] = "
           f"{{{', '.join(map(str, params))}}};"]
    if results:
        out += ["/* Where each result leaf is: buffer, byte offset, bytes. */",
                f"static const int {name}_result_buffer[{name}_RESULT_COUNT] = "
                f"{{{', '.join(str(r[0]) for r in results)}}};",
                f"static const size_t {name}_result_offset[{name}_RESULT_COUNT] = "
                f"{{{', '.join(str(r[1]) for r in results)}}};",
                f"static const size_t {name}_result_bytes[{name}_RESULT_COUNT] = "
                f"{{{', '.join(str(r[2]) for r in results)}}};"]
    out += [""]
    upload = []
    for alloc_index, data in exe._constant_bytes.items():
        k = index[alloc_index]
        out.append(f"static const unsigned char {name}_constant_{k}[{max(1, len(data))}] = "
                   f"{_c_bytes(bytes(data))};")
        upload.append(f"  if ((r = cuMemcpyHtoD(buffers[{k}], {name}_constant_{k}, "
                      f"{len(data)})) != CUDA_SUCCESS) return r;")
    out += ["", "/* Copies the module's constants into their buffers. */",
            f"static inline CUresult {name}_upload_constants(CUdeviceptr* buffers) {{",
            "  CUresult r = CUDA_SUCCESS;"] + upload + ["  (void)buffers;", "  return r;", "}", "",
            "/* Enqueues every kernel launch and copy on stream, in order. */",
            f"static inline CUresult {name}_run(CUmodule module, CUstream stream, "
            "CUdeviceptr* buffers) {", "  CUresult r = CUDA_SUCCESS;", "  CUfunction f;",
            "  (void)module; (void)stream; (void)buffers; (void)f;"]
    for t in steps:
        if isinstance(t, KernelThunk):
            args = [f"buffers[{index[a]}] + {o}" for a, o in t.slices]
            args += [f"(CUdeviceptr){v}ULL" for v in t.scalars]
            block = t.block or BLOCK
            grid = max(1, min(MAX_GRID, -(-t.elements // block)))
            out += [f"  {{ /* {t.name}: {t.instruction} */",
                    f"    CUdeviceptr a[{max(1, len(args))}] = {{{', '.join(args) or '0'}}};",
                    f"    void* p[{max(1, len(args))}] = "
                    f"{{{', '.join(f'&a[{k}]' for k in range(len(args))) or '0'}}};",
                    f"    if ((r = cuModuleGetFunction(&f, module, \"{t.name}\")) != CUDA_SUCCESS)"
                    " return r;",
                    f"    if ((r = cuLaunchKernel(f, {grid}, 1, 1, {block}, 1, 1, 0, stream, p, "
                    "NULL)) != CUDA_SUCCESS) return r;", "  }"]
        else:
            for (da, do), (sa, so), n in t.copies:
                out.append(f"  if ((r = cuMemcpyDtoDAsync(buffers[{index[da]}] + {do}, "
                           f"buffers[{index[sa]}] + {so}, {n}, stream)) != CUDA_SUCCESS) return r;")
    out += ["  return r;", "}", "", f"#endif  /* {guard} */", ""]
    return "\n".join(out)
