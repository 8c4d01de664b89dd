"""The CPU as a platform: one device (the host, all its cores through the
runtime's thread pool), host memory for buffers, donation, the persistent
compile cache and ahead-of-time compilation."""
from xla.runtime import Capabilities, Device, Platform


class CpuPlatform(Platform):
    name = "cpu"
    capabilities = Capabilities(host_buffers=True, donation=True, persistent_cache=True,
                                aot=True)

    def devices(self):
        """``--xla_force_host_platform_device_count`` devices (default 1), as
        XLA:CPU reports them; they share the runtime's thread pool. The kind
        names the host CPU and its features (what generated code targets)
        and the ISA variant of the runtime's matmul and convolution kernels
        (``xla._core.cpu_runtime_isa()``; a bad ``XLA_CPU_RUNTIME_ISA`` is a
        ValueError here, before anything runs)."""
        from xla.debug_options import debug_options
        n = debug_options().xla_force_host_platform_device_count
        if self._devices is None or len(self._devices) != n:
            from xla.backends.cpu import jit
            from xla import _core
            kind = f"{jit.host_cpu()}; runtime kernels: {_core.cpu_runtime_isa()}"
            keep = list(self._devices or [])[:n]
            self._devices = keep + [Device(self, i, kind=kind) for i in range(len(keep), n)]
        return list(self._devices)

    def compiler(self):
        from xla.backends.cpu.compiler import CpuCompiler
        return CpuCompiler(device=self.default_device())
