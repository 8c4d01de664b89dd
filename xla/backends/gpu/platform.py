"""The GPU platforms.

- ``gpu``: NVIDIA GPUs through the CUDA driver (``driver.py``, cuda-python).
  Compiling (HLO passes, NVPTX kernels, PTX in dumps) needs no GPU; where
  there is none, the platform has no devices and running raises an error
  naming what is missing (the driver library, cuda-python, a GPU).
- ``gpu_emulator``: the same compiler, with kernels run on the host by the
  emulator (``emulator.py``) over emulated device memory. It is how the GPU
  backend is tested on machines without a GPU.

Buffers live in device memory (``GpuBuffer``); nothing is host memory, so
``xla.jit`` keeps results on the device until they are read. Each device
implements the operations ``GpuExecutable`` runs a module with: allocate,
upload, download, copy, synchronize, load_kernels, launch, gemm, fft, and graphs (capture,
launch_graph, destroy_graph: ``executable.py``'s command buffers).
"""
import numpy as np

from xla.backends.gpu.kernels import LAUNCH_BLOCK as BLOCK   # threads per block on a GPU
from xla.errors import InvalidArgumentError
from xla.runtime import Capabilities, Device, Platform

BLOCKS_PER_SM = 16     # grid-stride kernels: at most this many blocks per multiprocessor
EMULATOR_BLOCK = 64    # threads per block on the emulator
EMULATOR_GRID = 16     # at most this many blocks (the kernels' loops stride over the rest)
EMULATOR_THREADED_GRID = 2   # kernels run threaded (a host thread per GPU thread): fewer
POOL_BYTES = 64 << 20  # the emulator keeps at most this much freed memory for reuse
POISON = 0xA5          # fresh emulated memory: what a kernel reading unwritten memory gets


class EmulatorDevice(Device):
    """Kernels compiled for the host and run one thread after another.
    Like one GPU with one stream, it runs one operation at a time: the
    logical devices of a replicated run (threads) take turns (``_lock``;
    the kernels' registers are module globals)."""
    emulated = True

    def __init__(self, platform):
        import threading
        super().__init__(platform, 0, kind="NVPTX kernels emulated on the host")
        self._free = {}          # size -> freed allocations, reused as a GPU's pool does
        self._free_bytes = 0
        self._recording = None   # the graph being captured (capture)
        self._lock = threading.RLock()   # reentrant: a release may run in a collection

    def allocate(self, nbytes):
        import weakref
        from xla.backends.gpu.executable import HostMemory, device_bytes
        with self._lock:
            free = self._free.get(nbytes)
            if free:
                array = free.pop()
                self._free_bytes -= nbytes
            else:
                array = None
        if array is None:
            array = device_bytes(nbytes)
        array.fill(POISON)
        memory = HostMemory(array)
        weakref.finalize(memory, self._release, array)
        return memory

    def _release(self, array):
        """A freed allocation: kept for reuse (the last freed is reused first, so a
        repeated sequence of allocations gets the same addresses), up to
        POOL_BYTES in all."""
        with self._lock:
            if self._free_bytes + array.nbytes <= POOL_BYTES:
                self._free.setdefault(array.nbytes, []).append(array)
                self._free_bytes += array.nbytes

    def upload(self, memory, data):
        memory.array[:] = np.ascontiguousarray(data).reshape(-1).view(np.uint8)

    def download(self, memory):
        return memory.array.copy()

    def _do(self, op, *args):
        """Runs ``op(*args)`` now, or records it in the graph being captured
        (args: addresses and plain values, never memory objects, so that a
        graph, like a CUDA graph, keeps no allocation alive)."""
        with self._lock:
            if self._recording is not None:
                self._recording.append((op, args))
            else:
                op(*args)

    def copy(self, dst, src):
        self._do(_host_copy, dst.address, src.address, dst.nbytes)

    def synchronize(self):
        pass

    def load_kernels(self, executable):
        from xla.backends.gpu.emulator import EmulatedKernel
        return {t.name: EmulatedKernel(t) for t in executable.kernels}

    def gemm(self, thunk, lhs, rhs, out):
        from xla.backends.gpu.gemm import run_on_host
        self._do(_on_host, run_on_host, thunk, (lhs.address, lhs.nbytes),
                 (rhs.address, rhs.nbytes), (out.address, out.nbytes))

    def fft(self, thunk, operand, out):
        from xla.backends.gpu.fft import run_on_host
        self._do(_on_host, run_on_host, thunk, (operand.address, operand.nbytes),
                 (out.address, out.nbytes))

    def launch(self, kernel, thunk, pointers):
        block = thunk.block or EMULATOR_BLOCK
        grid = max(1, min(EMULATOR_THREADED_GRID if kernel.threaded else EMULATOR_GRID,
                          -(-thunk.elements // block)))
        self._do(kernel.launch, list(pointers), grid, block)

    # Graphs: what the executable enqueues, recorded once and replayed.
    def capture(self, enqueue):
        """Records what ``enqueue()`` would run, as a graph; nothing runs."""
        self._recording = []
        try:
            enqueue()
            return self._recording
        finally:
            self._recording = None

    def launch_graph(self, graph):
        for op, args in graph:
            op(*args)

    def destroy_graph(self, graph):
        pass


def _host_bytes(address, nbytes):
    """The emulated device memory at ``address`` as a uint8 array."""
    import ctypes
    return np.frombuffer((ctypes.c_uint8 * nbytes).from_address(address), np.uint8) \
        if nbytes else np.zeros(0, np.uint8)


def _host_copy(dst, src, nbytes):
    import ctypes
    ctypes.memmove(dst, src, nbytes)


def _on_host(run, thunk, *slices):
    run(thunk, *[_host_bytes(a, n) for a, n in slices])


class CudaDevice(Device):
    """One NVIDIA GPU: its primary context and a stream (``driver.CudaContext``)."""
    emulated = False

    def __init__(self, platform, ordinal):
        from xla.backends.gpu.driver import CudaContext
        self.context = CudaContext(ordinal)
        self._cublas = None       # cuBLAS and cuFFT handles on the context's stream,
        self._cufft = None        # made on first use
        major, minor = self.context.compute_capability
        super().__init__(platform, ordinal,
                         kind=f"{self.context.name} (compute capability {major}.{minor})")
        self.arch = arch_for(self.context.compute_capability)

    def allocate(self, nbytes):
        return self.context.allocate(nbytes)

    def upload(self, memory, data):
        self.context.upload(memory, data)

    def download(self, memory):
        return self.context.download(memory)

    def copy(self, dst, src):
        self.context.copy(dst, src)

    def synchronize(self):
        self.context.synchronize()

    def load_kernels(self, executable):
        from xla.backends.gpu.nvptx import compile_ptx
        kernels = executable.kernels
        ptx = executable.ptx if executable.arch == self.arch else \
            compile_ptx([t.ir_text for t in kernels], self.arch)
        return self.context.load_module(ptx, sorted({t.name for t in kernels}))

    def _library(self, attribute, make):
        """A library handle on the context's stream (made on first use); the
        caller holds the context's lock, current."""
        if getattr(self, attribute) is None:
            setattr(self, attribute, make(int(self.context.stream)))
        return getattr(self, attribute)

    def gemm(self, thunk, lhs, rhs, out):
        from xla.backends.gpu.gemm import Cublas
        with self.context.lock:
            self.context.make_current()
            self._library("_cublas", Cublas).gemm(thunk, lhs.address, rhs.address, out.address)

    def fft(self, thunk, operand, out):
        from xla.backends.gpu.fft import Cufft
        from xla.backends.gpu.gemm import Cublas
        with self.context.lock:
            self.context.make_current()
            if thunk.fft_type == "IRFFT":     # cuFFT's complex-to-real overwrites its input
                scratch = self.allocate(operand.nbytes)
                self.copy(scratch, operand)
                operand = scratch
            self._library("_cufft", Cufft).run(thunk, operand.address, out.address)
            if thunk.scale != 1.0:
                real = 8 if thunk.precision == "c128" else 4
                self._library("_cublas", Cublas).scale(real, out.nbytes // real, thunk.scale,
                                                       out.address)

    def launch(self, kernel, thunk, pointers):
        block = thunk.block or BLOCK
        grid = max(1, min(BLOCKS_PER_SM * self.context.multiprocessors,
                          -(-thunk.elements // block)))
        self.context.launch(kernel, grid, block, pointers)

    def capture(self, enqueue):
        return self.context.capture(enqueue)

    def launch_graph(self, graph):
        self.context.launch_graph(graph)

    def destroy_graph(self, graph):
        self.context.destroy_graph(graph)


def arch_for(compute_capability):
    """The newest architecture code is generated for that the device runs
    (PTX for an older one is compiled for the device by the driver)."""
    from xla.backends.gpu.nvptx import SUPPORTED_ARCHS
    major, minor = compute_capability
    ok = [a for a in SUPPORTED_ARCHS if (int(a[3:-1]), int(a[-1])) <= (major, minor)]
    if not ok:
        raise InvalidArgumentError(f"GPU of compute capability {major}.{minor}: the gpu "
                                   f"backend generates code for {', '.join(SUPPORTED_ARCHS)}")
    return ok[-1]


class _GpuPlatformBase(Platform):
    capabilities = Capabilities(host_buffers=False, donation=True)
    arch = "sm_80"

    def compiler(self):
        from xla.backends.gpu.compiler import GpuCompiler
        device = self._device_or_none()
        return GpuCompiler(device, getattr(device, "arch", self.arch), self.name)

    def _device_or_none(self):
        return self.default_device()

    def transfer_to_device(self, array, device):
        from xla.backends.gpu.executable import GpuBuffer
        self.check_device(device)
        if array.dtype == object:
            raise InvalidArgumentError("a GPU buffer holds numbers, not Python objects")
        data = np.asarray(array, order="C")
        memory = device.allocate(data.nbytes)
        device.upload(memory, data)
        return GpuBuffer(memory, data.shape, data.dtype, device)


class GpuEmulatorPlatform(_GpuPlatformBase):
    name = "gpu_emulator"

    def devices(self):
        if self._devices is None:
            self._devices = [EmulatorDevice(self)]
        return list(self._devices)


class CudaPlatform(_GpuPlatformBase):
    name = "gpu"

    def devices(self):
        if self._devices is None:
            from xla.backends.gpu.driver import device_count
            self._devices = [CudaDevice(self, i) for i in range(device_count())]
        return list(self._devices)

    def _device_or_none(self):
        from xla.backends.gpu.driver import cuda_unavailable_reason
        return None if cuda_unavailable_reason() else self.default_device()

    # ----- DLPack: tensors of PyTorch, CuPy, JAX... on the same GPU, no copy -------
    def dlpack_device(self, device):
        from xla.runtime.dlpack import KDL_CUDA
        return (KDL_CUDA, device.id)

    def buffer_from_dlpack(self, producer, device):
        from xla.backends.gpu.driver import DeviceMemory
        from xla.backends.gpu.executable import GpuBuffer
        from xla.runtime import dlpack
        self.check_device(device)
        # The producer orders its writes before work on our stream.
        tensor = dlpack.consume(producer, stream=device.context.stream_handle)
        if tensor.device != self.dlpack_device(device):
            tensor.release()
            raise InvalidArgumentError(f"from_dlpack: the tensor is on DLPack device "
                                       f"{tensor.device}, not on {device}")
        if not tensor.row_major:
            tensor.release()
            raise InvalidArgumentError(
                f"from_dlpack: a tensor of shape {list(tensor.shape)} with strides "
                f"{list(tensor.strides)} (elements) is not row-major; GPU buffers are "
                "(copy it to a contiguous tensor first)")
        # A view whose owner is the import: the producer's deleter runs when
        # the last view of the memory goes.
        memory = DeviceMemory(device.context, tensor.address, tensor.nbytes, owner=tensor)
        return GpuBuffer(memory, tensor.shape, tensor.dtype, device, shared=True)
