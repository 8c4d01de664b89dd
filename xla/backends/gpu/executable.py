"""GpuExecutable: the launch sequence of a compiled module over device memory.

Buffer assignment's allocations become device allocations: constants are
uploaded once; per execution, parameter allocations are the argument
buffers' own memory (when an argument fills its allocation and nothing
writes it, or when it was donated and a result may live there: the
argument is then deleted) or copies, and temporaries and outputs are fresh. Each
``KernelThunk`` is launched with the addresses of its slices; a result that
fills an output allocation is returned as that allocation, without a copy.

Where the kernels run is the device's business (``platform.py``):
``CudaDevice`` launches them on a GPU through the CUDA driver
(``driver.py``), asynchronously on one stream (a buffer's read back or
``block_until_ready`` waits); ``EmulatorDevice`` runs them on the host
(``emulator.py``) over "device memory" that only transfers and kernels
reach. Both offer the same operations: allocate, upload, download, copy,
synchronize, load_kernels and launch.
"""
import contextlib
import copy
import threading

import numpy as np

from xla.errors import InvalidArgumentError
from xla.hlo.evaluator.registry import TOKEN
from xla.runtime import Buffer, Executable, profiler

ALIGN = 256          # what cudaMalloc guarantees


def device_bytes(n):
    raw = np.zeros(n + ALIGN, dtype=np.uint8)
    start = (-raw.ctypes.data) % ALIGN
    return raw[start:start + n]


class HostMemory:
    """The emulator's device memory: bytes of host memory (``array``) that
    only transfers and emulated kernels touch. Same interface as
    ``driver.DeviceMemory``: ``address``, ``nbytes``, ``view(offset, n)``;
    a view keeps its allocation (``owner``) alive, so an allocation goes
    back to the emulator's pool only when no view of it is left."""

    __slots__ = ("array", "_owner", "__weakref__")

    def __init__(self, array, owner=None):
        self.array = array
        self._owner = owner

    @property
    def address(self):
        return self.array.ctypes.data

    @property
    def nbytes(self):
        return self.array.nbytes

    def view(self, offset, nbytes):
        return HostMemory(self.array[offset:offset + nbytes], self._owner or self)


class GpuBuffer(Buffer):
    """An array in a GPU device's memory (``memory``: its bytes, row-major;
    a ``HostMemory`` on the emulator, a ``driver.DeviceMemory`` on CUDA)."""

    def __init__(self, memory, shape, dtype, device, shared=False):
        super().__init__(shape, dtype, device)
        self.memory = memory
        # Memory another library also holds (through DLPack, either way):
        # never given up to an execution, which would write into it.
        self.shared = shared

    def _read(self):
        return self.device.download(self.memory).view(self.dtype).reshape(self.shape)

    def block_until_ready(self):
        self.check_live()
        self.device.synchronize()
        return self

    def _free(self):
        self.memory = None

    # ----- DLPack (CUDA devices; the emulator's memory is not a device's) --------
    def __dlpack_device__(self):
        where = self.device.platform.dlpack_device(self.device)
        if where is None:
            raise BufferError(f"buffers on {self.device} cannot be exported through DLPack")
        return where

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """The buffer's device memory, shared and read-only (DLPack 1.0's
        read-only flag, so a consumer must ask for 1.0), ready for any
        stream: pending work is waited for first."""
        from xla.runtime import dlpack
        where = self.__dlpack_device__()
        if max_version is None or tuple(max_version) < (1, 0):
            raise BufferError("a GPU buffer is read-only, which only DLPack 1.0 can say: "
                              "the consumer must pass max_version=(1, 0)")
        if dl_device is not None and tuple(dl_device) != where:
            raise BufferError(f"a buffer on {self.device} cannot be exported to DLPack "
                              f"device {tuple(dl_device)}")
        if copy:
            raise BufferError("a GPU buffer is exported without a copy (copy=True refused)")
        self.block_until_ready()
        self.shared = True
        return dlpack.export(self.memory.address, self.shape, self.dtype, *where,
                             owner=self.memory)


def run_copies(device, thunk, memory):
    """A ``CopyThunk`` on ``device`` over ``memory`` (allocation -> memory):
    in order when that is the same as all at once, else every source read
    (into staging buffers) before any destination is written."""
    if thunk.sequential:
        for (da, do), (sa, so), n in thunk.copies:
            device.copy(memory[da].view(do, n), memory[sa].view(so, n))
        return
    staged = []
    for dst, (a, o), n in thunk.copies:
        stage = device.allocate(n)
        device.copy(stage, memory[a].view(o, n))
        staged.append((dst, stage))
    for (a, o), stage in staged:
        device.copy(memory[a].view(o, stage.nbytes), stage)


class GpuExecutable(Executable):
    platform = "gpu"

    def __init__(self, module, assignment, thunks, device, arch, platform_name):
        super().__init__(module, device)
        self.platform = platform_name
        self.assignment = assignment
        self.thunks = thunks
        self.arch = arch
        self._ptx = None
        self._kernels_on = {}  # device -> kernels by name (shared with the for_device copies)
        self._constants_on = {}   # device -> constant memory by allocation (this copy's own)
        self._load_lock = threading.Lock()   # shared with the for_device copies
        from xla.backends.cpu.executable import literal_array_at
        from xla.backends.cpu.ir_emitter import physical_bytes
        from xla.backends.gpu.kernel_emitter import kernel_thunks
        # Every distinct kernel (the first launch of each), nested control flow included.
        launches = list(kernel_thunks(thunks))
        self._kernels = list({t.name: t for t in reversed(launches)}.values())[::-1]
        self._scratch = {key: n for t in self._kernels for key, n in (t.scratch or {}).items()}
        self._constant_bytes = {}
        for alloc in assignment.allocations:
            if alloc.kind == "constant":
                data = np.zeros(alloc.size, np.uint8)
                for b in alloc.buffers:
                    if b.shape.is_array and b.instruction.opcode == "constant":
                        raw = physical_bytes(literal_array_at(b.instruction, b.index), b.shape)
                        data[b.offset:b.offset + len(raw)] = np.frombuffer(raw, np.uint8)
                self._constant_bytes[alloc.index] = data
        from xla.backends.gpu.command_buffer import command_count, graphable
        from xla.debug_options import debug_options
        options = debug_options()
        # Replayed as CUDA graphs (command_buffer.py), decided once, as XLA does at compile time.
        self.uses_command_buffers = (
            graphable(thunks, set(options.xla_gpu_enable_command_buffer))
            and command_count(thunks) >= max(1, options.xla_gpu_graph_min_graph_size))
        self._command_buffers = {}   # device -> CommandBuffers
        # State kept across executions (rng counters): zeroed once per device, like a constant.
        for t in self._kernels:
            for key, n in (t.persistent or {}).items():
                self._constant_bytes[key] = np.zeros(n, np.uint8)

    # ----- artifacts ---------------------------------------------------------------
    @property
    def kernels(self):
        """Every distinct kernel of the executable (the first launch of each),
        nested control flow included."""
        return list(self._kernels)

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

    @property
    def optimized_ir_text(self):
        """The kernels linked into one module (libdevice too, where called)
        after LLVM's O3 pipeline for ``self.arch``: what the PTX is made from."""
        from xla.backends.gpu.nvptx import optimized_ir
        kernels = self.kernels
        return optimized_ir([t.ir_text for t in kernels], self.arch) if kernels else ""

    def dump_artifacts(self):
        return {"-buffer-assignment.txt": self.assignment.to_text(),
                "ir-no-opt.ll": self.ir_text,
                "ir-with-opt.ll": self.optimized_ir_text,
                "ptx": self.ptx}

    # ----- running ----------------------------------------------------------------
    def _load(self, device):
        """The kernels and constants on ``device`` (loaded on first use)."""
        with self._load_lock:
            if device not in self._kernels_on:
                self._kernels_on[device] = device.load_kernels(self) if self.kernels else {}
            if device not in self._constants_on:
                constants = {}
                for index, data in self._constant_bytes.items():
                    constants[index] = device.allocate(data.nbytes)
                    device.upload(constants[index], data)
                self._constants_on[device] = constants
            return self._kernels_on[device], self._constants_on[device]

    def for_device(self, ordinal):
        """The executable of device ``ordinal`` of a replicated run
        (``xla.runtime.collectives``): the same kernels, loaded once per
        GPU; its own constants and state kept across executions (rng
        counters); on GPU ``ordinal`` modulo the platform's GPUs (so one
        GPU holds every logical device where there is one, each with
        buffers of its own). It replays no command buffers: logical devices
        on one GPU share its stream, and a capture would take in another
        device's launches."""
        exe = copy.copy(self)
        exe.execute_hooks = []
        exe._constants_on = {}
        exe._command_buffers = {}
        exe.uses_command_buffers = False
        if self.device is not None:
            if not self.device.emulated:
                self.ptx   # made once, before the copies share it
                exe._ptx = self._ptx
            devices = self.device.platform.devices()
            exe.device = devices[ordinal % len(devices)]
        return exe

    def _run(self, device, kernels, thunks, memory):
        from xla.backends.gpu.collectives import CollectiveThunk, run_collective_thunk
        from xla.backends.gpu.fft import FftThunk
        from xla.backends.gpu.gemm import GemmThunk, operand_bytes
        from xla.backends.gpu.kernel_emitter import (ConditionalThunk, CopyThunk, KernelThunk,
                                                     WhileThunk)
        for thunk in thunks:
            if isinstance(thunk, KernelThunk):
                pointers = [memory[a].address + offset for a, offset in thunk.slices]
                pointers += thunk.scalars
                device.launch(kernels[thunk.name], thunk, pointers)
            elif isinstance(thunk, GemmThunk):
                device.gemm(thunk, *[memory[a].view(o, n) for (a, o), n in
                                     zip((thunk.lhs, thunk.rhs, thunk.out), operand_bytes(thunk))])
            elif isinstance(thunk, FftThunk):
                (a, o), (b, p) = thunk.operand, thunk.out
                device.fft(thunk, memory[a].view(o, thunk.operand_bytes),
                           memory[b].view(p, thunk.out_bytes))
            elif isinstance(thunk, CollectiveThunk):
                with getattr(device, "span", contextlib.nullcontext)(thunk.name):
                    run_collective_thunk(device, thunk, memory)
            elif isinstance(thunk, list):
                self._run(device, kernels, thunk, memory)
            elif isinstance(thunk, CopyThunk):
                run_copies(device, thunk, memory)
            elif isinstance(thunk, WhileThunk):
                self._run(device, kernels, [thunk.init], memory)
                while True:
                    self._run(device, kernels, thunk.condition, memory)
                    a, o = thunk.pred
                    if not device.download(memory[a].view(o, 1))[0]:   # one byte back
                        break
                    self._run(device, kernels, thunk.body, memory)
                    self._run(device, kernels, [thunk.carry], memory)
            elif isinstance(thunk, ConditionalThunk):
                a, o = thunk.selector
                dtype = np.dtype(thunk.selector_dtype)
                value = device.download(memory[a].view(o, dtype.itemsize)).view(dtype)[0]
                n = len(thunk.branches)
                if dtype == np.bool_:
                    index = 0 if value else 1
                else:
                    index = int(value) if 0 <= int(value) < n else n - 1
                self._run(device, kernels, thunk.branches[index], memory)
            else:
                raise TypeError(f"unknown thunk {thunk!r}")

    def execute(self, *args, donated=()):
        self._require_device()
        return super().execute(*args, donated=donated)

    def execute_buffers(self, buffers, donated=()):
        self._require_device()
        device = self.device
        params = self.module.entry.parameters
        if len(buffers) != len(params):
            raise InvalidArgumentError(f"module {self.module.name} takes {len(params)} "
                                       f"argument(s), got {len(buffers)}")
        for i, (b, p) in enumerate(zip(buffers, params)):
            if p.shape.is_token and b is TOKEN:
                continue
            if not isinstance(b, GpuBuffer) or b.device is not device:
                raise InvalidArgumentError(f"argument {i} is not a buffer on {device}")
            b.check_live(f"argument {i}")
            if b.shape != tuple(p.shape.dimensions) or b.dtype != p.shape.dtype:
                raise InvalidArgumentError(
                    f"argument {i} ({p.name}): expected {p.shape.dtype}{list(p.shape.dimensions)}, "
                    f"got {b.dtype}{list(b.shape)}")
        kernels, constants = self._load(device)
        # A donated argument passed once is given up: its memory may hold a
        # result (an allocation buffer assignment made live-out, the
        # module's input_output_alias), and the buffer is deleted.
        given_up = {i for i in donated
                    if buffers[i] is not TOKEN and not buffers[i].shared
                    and sum(b is buffers[i] for b in buffers) == 1}
        memory, fresh = dict(constants), set()
        for alloc in self.assignment.allocations:
            if alloc.kind == "parameter":
                arg = buffers[alloc.parameter_number]
                if arg is TOKEN:
                    memory[alloc.index] = device.allocate(alloc.size)
                    continue
                whole = alloc.parameter_index in ((), None) and arg.memory.nbytes == alloc.size
                if whole and alloc.maybe_live_out and alloc.parameter_number in given_up:
                    memory[alloc.index] = arg.memory     # written in place, returned as is
                    fresh.add(alloc.index)
                elif whole and not alloc.maybe_live_out:
                    memory[alloc.index] = arg.memory
                else:
                    copy = device.allocate(alloc.size)
                    n = min(alloc.size, arg.memory.nbytes)
                    device.copy(copy.view(0, n), arg.memory)
                    memory[alloc.index] = copy
            elif alloc.kind != "constant":
                memory[alloc.index] = device.allocate(alloc.size)
                fresh.add(alloc.index)
        for key, nbytes in self._scratch.items():
            memory[key] = device.allocate(nbytes)
        timed = None
        if profiler.recording():       # every operation timed (profiling.py); no graphs
            from xla.backends.gpu.profiling import TimedDevice
            timed = TimedDevice(device, self.module, self.assignment)
            self._run(timed, kernels, self.thunks, memory)
            timed.finish()
        elif self.uses_command_buffers:
            from xla.backends.gpu.command_buffer import CommandBuffers
            if device not in self._command_buffers:
                self._command_buffers[device] = CommandBuffers(device)
            self._command_buffers[device].run(
                tuple(m.address for m in memory.values()),
                lambda: self._run(device, kernels, self.thunks, memory))
        else:
            self._run(device, kernels, self.thunks, memory)
        root = self.module.entry.root_instruction
        out, handed_out = [], set()
        for index, shape in root.shape.leaves():
            if shape.is_token:
                out.append(TOKEN)
                continue
            buffer = self.assignment.buffer(root, index)
            alloc = buffer.allocation
            nbytes = shape.byte_size()
            raw = memory[alloc.index].view(buffer.offset, nbytes)
            # A result owns its memory: one that is the whole of a fresh
            # allocation not yet handed out is returned as is; others
            # (constants, arguments, parts, a leaf repeated) are copies.
            if alloc.index not in fresh or nbytes != alloc.size or alloc.index in handed_out:
                copy = device.allocate(nbytes)
                device.copy(copy, raw)
                raw = copy
            handed_out.add(alloc.index)
            out.append(GpuBuffer(raw, shape.dimensions, shape.dtype, device))
        for i in given_up:
            buffers[i].mark_donated()
        return out

    def _require_device(self):
        if self.device is None:
            from xla.backends.gpu.driver import cuda_unavailable_reason
            reason = cuda_unavailable_reason() or "the executable was compiled without a device"
            raise InvalidArgumentError(
                f"cannot run on platform {self.platform!r}: {reason}. The 'gpu_emulator' "
                "platform runs the same kernels on the host")
