"""The CUDA driver API, as this backend uses it, through cuda-python
(``cuda.bindings.driver``, an optional dependency: ``requirements-gpu.txt``).

``cuda_unavailable_reason()`` says why CUDA cannot run here (None when it
can); ``CudaContext`` is one device's primary context and stream, with the
operations the executable needs: stream-ordered allocation from the
device's default pool, which keeps what is freed
(``cuMemAllocAsync``/``cuMemFreeAsync``, so a buffer freed while kernels
still read it is released only after them), copies, PTX module loading,
kernel launches (and cuBLAS, ``gemm.py``, runs on the same stream). Every driver
error raises ``CudaError`` naming the call and the driver's message; kernel
faults are asynchronous and surface at the next synchronizing call (a read
back, ``block_until_ready``).
"""
import ctypes
import ctypes.util
import functools
import threading

import numpy as np

from xla.errors import InternalError, InvalidArgumentError


class CudaError(InternalError):
    """A CUDA driver call failed."""


def _driver():
    from cuda.bindings import driver
    return driver


@functools.lru_cache(maxsize=None)
def cuda_unavailable_reason():
    """None when CUDA devices can be used here; else why not, in words."""
    if ctypes.util.find_library("cuda") is None:
        try:
            ctypes.CDLL("libcuda.so.1")
        except OSError:
            return "no NVIDIA driver: libcuda.so.1 (the CUDA driver library) is not installed"
    try:
        d = _driver()
    except ImportError:
        return ("the CUDA driver is present but cuda-python is not installed "
                "(pip install -r requirements-gpu.txt)")
    try:
        err, = d.cuInit(0)
        if err != d.CUresult.CUDA_SUCCESS:
            return f"cuInit failed: {_message(err)}"
        err, count = d.cuDeviceGetCount()
    except Exception as e:   # the bindings could not load the driver library
        return f"the CUDA driver could not be loaded: {e}"
    if err != d.CUresult.CUDA_SUCCESS:
        return f"cuDeviceGetCount failed: {_message(err)}"
    if count == 0:
        return "the CUDA driver reports no GPU"
    return None


def device_count():
    reason = cuda_unavailable_reason()
    if reason is not None:
        raise InvalidArgumentError(f"platform 'gpu' has no devices here: {reason}")
    return _check("cuDeviceGetCount", _driver().cuDeviceGetCount())


def _message(err):
    d = _driver()
    e, text = d.cuGetErrorString(err)
    name = getattr(err, "name", str(err))
    if e == d.CUresult.CUDA_SUCCESS and text:
        return f"{name}: {text.decode() if isinstance(text, bytes) else text}"
    return name


def _check(call, result):
    err, *values = result
    if err != _driver().CUresult.CUDA_SUCCESS:
        raise CudaError(f"{call} failed: {_message(err)}")
    if not values:
        return None
    return values[0] if len(values) == 1 else tuple(values)


def load_cuda_library(name, sonames, wheel):
    """A CUDA library (cuBLAS, cuFFT...) by ctypes: where cuda-pathfinder finds
    it (the NVIDIA wheels, a CUDA toolkit), else by ``sonames`` on the loader's
    search path; CudaError naming the wheel to install when neither has it."""
    try:
        from cuda.pathfinder import load_nvidia_dynamic_lib
        path = load_nvidia_dynamic_lib(name).abs_path
        if path:
            return ctypes.CDLL(path)
    except Exception:   # not found by the pathfinder: the loader's search path next
        pass
    for soname in sonames:
        try:
            return ctypes.CDLL(soname)
        except OSError:
            continue
    raise CudaError(f"lib{name} not found: install the {wheel} wheel "
                    "(requirements-gpu.txt) or a CUDA toolkit")


class DeviceMemory:
    """Device memory: ``address`` (an int), ``nbytes``. An allocation frees
    itself (stream-ordered) when the last reference to it or to a view of
    it goes; ``view(offset, n)`` is part of it."""

    __slots__ = ("context", "address", "nbytes", "_owner", "_root", "__weakref__")

    def __init__(self, context, address, nbytes, owner=None, root=False):
        self.context, self.address, self.nbytes = context, address, nbytes
        self._owner = owner      # the allocation a view keeps alive
        self._root = root

    def view(self, offset, nbytes):
        if offset < 0 or offset + nbytes > self.nbytes:
            raise InternalError(f"device memory view [{offset}, {offset + nbytes}) outside "
                                f"an allocation of {self.nbytes} bytes")
        return DeviceMemory(self.context, self.address + offset, nbytes,
                            owner=self._owner or self)

    def __del__(self):
        if self._root and self.context is not None:
            self.context.free(self.address)


class CudaContext:
    """Device ``ordinal``'s primary context and one stream, on which every
    copy, launch, allocation and free of this backend is ordered. Callers
    of other CUDA libraries on it hold ``lock`` and call ``make_current``."""

    def __init__(self, ordinal):
        d = _driver()
        device_count()
        self.ordinal = ordinal
        self.lock = threading.RLock()
        self.device = _check("cuDeviceGet", d.cuDeviceGet(ordinal))
        self.context = _check("cuDevicePrimaryCtxRetain", d.cuDevicePrimaryCtxRetain(self.device))
        self.make_current()
        name = _check("cuDeviceGetName", d.cuDeviceGetName(256, self.device))
        self.name = name.split(b"\0")[0].decode() if isinstance(name, bytes) else str(name)
        attr = d.CUdevice_attribute
        get = lambda a: _check("cuDeviceGetAttribute", d.cuDeviceGetAttribute(a, self.device))
        self.compute_capability = (get(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
                                   get(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR))
        self.multiprocessors = get(attr.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
        self.stream = _check("cuStreamCreate",
                             d.cuStreamCreate(d.CUstream_flags.CU_STREAM_NON_BLOCKING))
        self.stream_handle = int(self.stream)     # the CUstream as DLPack passes streams
        # Memory freed back to the stream-ordered pool stays there for the next
        # allocation instead of going back to the driver at each synchronize
        # (which made every execution map its outputs' pages afresh).
        pool = _check("cuDeviceGetDefaultMemPool", d.cuDeviceGetDefaultMemPool(self.device))
        _check("cuMemPoolSetAttribute", d.cuMemPoolSetAttribute(
            pool, d.CUmemPool_attribute.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
            d.cuuint64_t(2 ** 64 - 1)))

    def make_current(self):
        _check("cuCtxSetCurrent", _driver().cuCtxSetCurrent(self.context))

    # ----- memory -------------------------------------------------------------------
    def allocate(self, nbytes):
        d = _driver()
        with self.lock:
            self.make_current()
            ptr = _check("cuMemAllocAsync", d.cuMemAllocAsync(max(1, nbytes), self.stream))
        return DeviceMemory(self, int(ptr), nbytes, root=True)

    def free(self, address):
        try:
            d = _driver()
            with self.lock:
                self.make_current()
                d.cuMemFreeAsync(address, self.stream)
        except Exception:   # interpreter shutdown: the driver may already be gone
            pass

    def upload(self, memory, data):
        """A NumPy array's bytes (made contiguous) into ``memory``."""
        data = np.ascontiguousarray(data)
        if data.nbytes != memory.nbytes:
            raise InternalError(f"upload of {data.nbytes} bytes into {memory.nbytes}")
        if data.nbytes:
            with self.lock:
                self.make_current()
                _check("cuMemcpyHtoDAsync", _driver().cuMemcpyHtoDAsync(
                    memory.address, data.ctypes.data, data.nbytes, self.stream))
                # The copy reads pageable host memory: wait, so the caller may reuse it.
                self.synchronize()

    def download(self, memory):
        """``memory``'s bytes as a new NumPy uint8 array (waits for the stream)."""
        out = np.empty(memory.nbytes, np.uint8)
        with self.lock:
            self.make_current()
            if memory.nbytes:
                _check("cuMemcpyDtoHAsync", _driver().cuMemcpyDtoHAsync(
                    out.ctypes.data, memory.address, memory.nbytes, self.stream))
            self.synchronize()
        return out

    def copy(self, dst, src):
        """``dst.nbytes`` bytes from ``src`` to ``dst``, on the stream."""
        if dst.nbytes:
            with self.lock:
                self.make_current()
                _check("cuMemcpyDtoDAsync", _driver().cuMemcpyDtoDAsync(
                    dst.address, src.address, dst.nbytes, self.stream))

    def synchronize(self):
        with self.lock:
            self.make_current()
            _check("cuStreamSynchronize (a kernel or copy before it failed)",
                   _driver().cuStreamSynchronize(self.stream))

    # ----- events (xla.profiler) -----------------------------------------------------------
    def record_event(self):
        """A new CUDA event recorded on the stream now (timing enabled)."""
        d = _driver()
        with self.lock:
            self.make_current()
            event = _check("cuEventCreate", d.cuEventCreate(d.CUevent_flags.CU_EVENT_DEFAULT))
            _check("cuEventRecord", d.cuEventRecord(event, self.stream))
            return event

    def elapsed_ms(self, start, end):
        """Milliseconds between two recorded events (after both completed)."""
        d = _driver()
        call = getattr(d, "cuEventElapsedTime_v2", None) or d.cuEventElapsedTime
        with self.lock:
            self.make_current()
            return float(_check("cuEventElapsedTime", call(start, end)))

    def destroy_event(self, event):
        with self.lock:
            self.make_current()
            _driver().cuEventDestroy(event)

    # ----- code -----------------------------------------------------------------------
    def load_module(self, ptx, names):
        """Loads a PTX module (the driver compiles it for this device);
        returns {kernel name: CUfunction}."""
        d = _driver()
        with self.lock:
            self.make_current()
            module = _check("cuModuleLoadData", d.cuModuleLoadData(ptx.encode() + b"\0"))
            return {n: _check(f"cuModuleGetFunction({n})", d.cuModuleGetFunction(module, n.encode()))
                    for n in names}

    # ----- graphs -----------------------------------------------------------------------
    def capture(self, enqueue):
        """What ``enqueue()`` puts on the stream, captured as a CUDA graph and
        instantiated (nothing runs); the stream is left as it was also when
        ``enqueue`` raises."""
        d = _driver()
        with self.lock:
            self.make_current()
            _check("cuStreamBeginCapture", d.cuStreamBeginCapture(
                self.stream, d.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL))
            try:
                enqueue()
            except BaseException:
                err, graph = d.cuStreamEndCapture(self.stream)
                if err == d.CUresult.CUDA_SUCCESS and graph:
                    d.cuGraphDestroy(graph)
                raise
            graph = _check("cuStreamEndCapture", d.cuStreamEndCapture(self.stream))
            try:
                return _check("cuGraphInstantiate", d.cuGraphInstantiate(graph, 0))
            finally:
                d.cuGraphDestroy(graph)

    def launch_graph(self, graph_exec):
        with self.lock:
            self.make_current()
            _check("cuGraphLaunch", _driver().cuGraphLaunch(graph_exec, self.stream))

    def destroy_graph(self, graph_exec):
        try:
            with self.lock:
                self.make_current()
                _driver().cuGraphExecDestroy(graph_exec)
        except Exception:   # interpreter shutdown: the driver may already be gone
            pass

    def launch(self, function, grid, block, pointers):
        """Launches ``function`` (a CUfunction of ``load_module``) with one
        pointer-sized argument per entry of ``pointers``."""
        args = (tuple(pointers), tuple(ctypes.c_void_p for _ in pointers))
        with self.lock:
            self.make_current()
            _check("cuLaunchKernel", _driver().cuLaunchKernel(
                function, grid, 1, 1, block, 1, 1, 0, self.stream, args, 0))
