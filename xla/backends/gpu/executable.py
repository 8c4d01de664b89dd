"""GpuExecutable: the launch sequence of a compiled module over device memory.

Buffer assignment's allocations become device allocations: constants are
uploaded once; per execution, parameter allocations are the argument
buffers' own memory (when an argument fills its allocation and nothing
writes it) or copies, and temporaries and outputs are fresh. Each
``KernelThunk`` is launched with the addresses of its slices; a result that
fills an output allocation is returned as that allocation, without a copy.

Where the kernels run is the device's business: ``EmulatorDevice`` runs
them on the host (``emulator.py``), with "device memory" that only
transfers reach.
"""
import numpy as np

from xla.errors import InvalidArgumentError
from xla.hlo.evaluator.registry import TOKEN
from xla.runtime import Buffer, Executable

ALIGN = 256          # what cudaMalloc guarantees
EMULATOR_BLOCK = 64  # threads per block on the emulator
EMULATOR_GRID = 16   # at most this many blocks (the kernels' loops stride over the rest)


def device_bytes(n):
    raw = np.zeros(n + ALIGN, dtype=np.uint8)
    start = (-raw.ctypes.data) % ALIGN
    return raw[start:start + n]


class GpuBuffer(Buffer):
    """An array in a GPU device's memory (``memory``: the bytes, row-major)."""

    def __init__(self, memory, shape, dtype, device):
        super().__init__(shape, dtype, device)
        self.memory = memory

    def _read(self):
        return np.array(self.memory.view(self.dtype).reshape(self.shape))

    def _free(self):
        self.memory = None


class GpuExecutable(Executable):
    platform = "gpu"

    def __init__(self, module, assignment, thunks, device, arch, platform_name):
        super().__init__(module, device)
        self.platform = platform_name
        self.assignment = assignment
        self.thunks = thunks
        self.arch = arch
        self._kernels = None
        self._ptx = None
        self._constants = {}
        from xla.backends.cpu.executable import literal_array_at
        from xla.backends.cpu.ir_emitter import physical_bytes
        for alloc in assignment.allocations:
            if alloc.kind == "constant":
                memory = device_bytes(alloc.size)
                for b in alloc.buffers:
                    if b.shape.is_array and b.instruction.opcode == "constant":
                        data = physical_bytes(literal_array_at(b.instruction, b.index), b.shape)
                        memory[b.offset:b.offset + len(data)] = np.frombuffer(data, np.uint8)
                self._constants[alloc.index] = memory

    # ----- artifacts ---------------------------------------------------------------
    @property
    def kernels(self):
        """Every kernel launch of the executable, nested control flow included."""
        from xla.backends.gpu.kernel_emitter import kernel_thunks
        return list(kernel_thunks(self.thunks))

    @property
    def ir_text(self):
        return "\n".join(t.ir_text for t in self.kernels)

    @property
    def ptx(self):
        """The PTX module of all the kernels, for ``self.arch`` (made on first use)."""
        if self._ptx is None:
            from xla.backends.gpu.nvptx import compile_ptx
            kernels = self.kernels
            self._ptx = compile_ptx([t.ir_text for t in kernels], self.arch) if kernels else ""
        return self._ptx

    def dump_artifacts(self):
        return {"-buffer-assignment.txt": self.assignment.to_text(),
                "ir-no-opt.ll": self.ir_text,
                "ptx": self.ptx}

    # ----- running ----------------------------------------------------------------
    def _emulated_kernels(self):
        """Kernel name -> the kernel compiled for the host (made on first use)."""
        if self._kernels is None:
            from xla.backends.gpu.emulator import EmulatedKernel
            self._kernels = {t.name: EmulatedKernel(t) for t in self.kernels}
        return self._kernels

    def _run(self, thunks, memory):
        from xla.backends.gpu.kernel_emitter import (ConditionalThunk, CopyThunk, KernelThunk,
                                                     WhileThunk)
        kernels = self._emulated_kernels()
        for thunk in thunks:
            if isinstance(thunk, KernelThunk):
                pointers = [memory[a].ctypes.data + offset for a, offset in thunk.slices]
                grid = max(1, min(EMULATOR_GRID, -(-thunk.elements // EMULATOR_BLOCK)))
                kernels[thunk.name].launch(pointers, grid, EMULATOR_BLOCK)
            elif isinstance(thunk, list):
                self._run(thunk, memory)
            elif isinstance(thunk, CopyThunk):
                staged = [(dst, memory[a][o:o + n].copy(), n) for dst, (a, o), n in thunk.copies]
                for (a, o), data, n in staged:
                    memory[a][o:o + n] = data
            elif isinstance(thunk, WhileThunk):
                self._run([thunk.init], memory)
                while True:
                    self._run(thunk.condition, memory)
                    a, o = thunk.pred
                    if not memory[a][o]:   # device to host: one byte
                        break
                    self._run(thunk.body, memory)
                    self._run([thunk.carry], memory)
            elif isinstance(thunk, ConditionalThunk):
                a, o = thunk.selector
                dtype = np.dtype(thunk.selector_dtype)
                value = memory[a][o:o + dtype.itemsize].view(dtype)[0]
                n = len(thunk.branches)
                if dtype == np.bool_:
                    index = 0 if value else 1
                else:
                    index = int(value) if 0 <= int(value) < n else n - 1
                self._run(thunk.branches[index], memory)
            else:
                raise TypeError(f"unknown thunk {thunk!r}")

    def execute(self, *args, donated=()):
        if self.device is None or not getattr(self.device, "emulated", False):
            self._require_device()
        return super().execute(*args, donated=donated)

    def execute_buffers(self, buffers, donated=()):
        if self.device is None or not getattr(self.device, "emulated", False):
            self._require_device()
        params = self.module.entry.parameters
        if len(buffers) != len(params):
            raise InvalidArgumentError(f"module {self.module.name} takes {len(params)} "
                                       f"argument(s), got {len(buffers)}")
        for i, (b, p) in enumerate(zip(buffers, params)):
            if p.shape.is_token and b is TOKEN:
                continue
            if not isinstance(b, GpuBuffer) or b.device is not self.device:
                raise InvalidArgumentError(f"argument {i} is not a buffer on {self.device}")
            b.check_live(f"argument {i}")
            if b.shape != tuple(p.shape.dimensions) or b.dtype != p.shape.dtype:
                raise InvalidArgumentError(
                    f"argument {i} ({p.name}): expected {p.shape.dtype}{list(p.shape.dimensions)}, "
                    f"got {b.dtype}{list(b.shape)}")
        memory, fresh = dict(self._constants), set()
        for alloc in self.assignment.allocations:
            if alloc.kind == "parameter":
                arg = buffers[alloc.parameter_number]
                if arg is TOKEN:
                    memory[alloc.index] = device_bytes(alloc.size)
                    continue
                if alloc.parameter_index in ((), None) and not alloc.maybe_live_out \
                        and arg.memory.nbytes == alloc.size:
                    memory[alloc.index] = arg.memory
                else:
                    copy = device_bytes(alloc.size)
                    n = min(alloc.size, arg.memory.nbytes)
                    copy[:n] = arg.memory[:n]
                    memory[alloc.index] = copy
            elif alloc.kind != "constant":
                memory[alloc.index] = device_bytes(alloc.size)
                fresh.add(alloc.index)
        self._run(self.thunks, memory)
        root = self.module.entry.root_instruction
        out = []
        for index, shape in root.shape.leaves():
            if shape.is_token:
                out.append(TOKEN)
                continue
            buffer = self.assignment.buffer(root, index)
            alloc = buffer.allocation
            nbytes = shape.byte_size()
            raw = memory[alloc.index][buffer.offset:buffer.offset + nbytes]
            if alloc.index not in fresh or nbytes != alloc.size:
                copy = device_bytes(nbytes)
                copy[:] = raw
                raw = copy
            out.append(GpuBuffer(raw, shape.dimensions, shape.dtype, self.device))
        return out

    def _require_device(self):
        from xla.backends.gpu.driver import cuda_unavailable_reason
        reason = cuda_unavailable_reason()
        raise InvalidArgumentError(
            f"cannot run on platform {self.platform!r}: {reason}. The 'gpu_emulator' platform "
            "runs the same kernels on the host")
