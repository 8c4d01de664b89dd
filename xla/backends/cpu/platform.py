"""The CPU as a platform: one device (the host, all its cores through the
runtime's thread pool), host memory for buffers, donation, the persistent
compile cache and ahead-of-time compilation."""
from xla.runtime import Capabilities, Device, Platform


class CpuPlatform(Platform):
    name = "cpu"
    capabilities = Capabilities(host_buffers=True, donation=True, persistent_cache=True,
                                aot=True)

    def devices(self):
        if self._devices is None:
            from xla.backends.cpu import jit
            self._devices = [Device(self, 0, kind=jit.host_cpu())]
        return list(self._devices)

    def compiler(self):
        from xla.backends.cpu.compiler import CpuCompiler
        return CpuCompiler(device=self.default_device())
