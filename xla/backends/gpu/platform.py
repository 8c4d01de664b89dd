"""The GPU platforms.

- ``gpu``: NVIDIA GPUs through the CUDA driver. Compiling (HLO passes,
  NVPTX kernels, PTX in dumps) needs no GPU; running needs the driver, and
  without one raises an error naming what is missing. The driver-side
  runtime (module loading and launches through cuda-python) is not written
  yet: on a machine with a driver, running says so.
- ``gpu_emulator``: the same compiler, with kernels run on the host by the
  emulator (``emulator.py``) over emulated device memory. It is how the GPU
  backend is tested on machines without a GPU.

Buffers live in device memory (``GpuBuffer``); nothing is host memory, so
``xla.jit`` keeps results on the device until they are read.
"""
import numpy as np

from xla.errors import InvalidArgumentError
from xla.backends.gpu.driver import cuda_unavailable_reason
from xla.runtime import Capabilities, Device, Platform


class EmulatorDevice(Device):
    emulated = True

    def __init__(self, platform):
        super().__init__(platform, 0, kind="NVPTX kernels emulated on the host")


class _GpuPlatformBase(Platform):
    capabilities = Capabilities(host_buffers=False, donation=False)
    arch = "sm_80"

    def compiler(self):
        from xla.backends.gpu.compiler import GpuCompiler
        return GpuCompiler(self._device_or_none(), self.arch, self.name)

    def _device_or_none(self):
        return self.default_device()

    def transfer_to_device(self, array, device):
        from xla.backends.gpu.executable import GpuBuffer, device_bytes
        self.check_device(device)
        if array.dtype == object:
            raise InvalidArgumentError("a GPU buffer holds numbers, not Python objects")
        data = np.asarray(array, order="C")
        memory = device_bytes(data.nbytes)
        memory[:] = data.reshape(-1).view(np.uint8)
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
        raise InvalidArgumentError(f"platform 'gpu' has no devices here: "
                                   f"{cuda_unavailable_reason()}")

    def _device_or_none(self):
        return None
