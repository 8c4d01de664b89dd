"""The runtime layer: the interfaces between the compiler and the hardware.

- ``Platform`` (``platform.py``): one kind of hardware and its backend:
  devices, ``Capabilities``, a compiler, host-to-device transfers.
- ``Device``: one device of a platform.
- ``Buffer`` (``buffer.py``): an array resident on a device;
  ``HostBuffer`` for platforms whose memory is host memory.
- ``Compiler`` and ``Executable`` (``executable.py``): compile an HloModule;
  run it on buffers (``execute_buffers``) or NumPy arrays (``execute``).
- The registry (``registry.py``): platforms by name, built in or discovered
  through the ``xla.backends`` entry-point group; ``compile`` (``compile.py``)
  with dumps and snapshots as explicit hooks.
- ``device_put`` (``transfer.py``).

Layering: runtime imports hlo and service, never a backend by name (backends
are loaded through the registry) and never the frontend or tools.
docs/new_backend.md describes how to implement these for new hardware.
"""
from xla.runtime.buffer import Buffer, HostBuffer
from xla.runtime.executable import CompileHooks, Compiler, Executable
from xla.runtime.platform import Capabilities, Device, Platform
from xla.runtime.registry import (available_platforms, default_platform, devices, get_compiler,
                                  get_platform, register_platform, unregister_platform)
from xla.runtime.transfer import device_put, from_dlpack
from xla.runtime.compile import compile
from xla.runtime import profiler  # noqa: F401,E402  (xla.profiler)

__all__ = ["Buffer", "Capabilities", "CompileHooks", "Compiler", "Device", "Executable",
           "HostBuffer", "Platform", "available_platforms", "compile", "default_platform", "device_put", "from_dlpack", "devices",
           "get_compiler", "get_platform", "register_platform", "unregister_platform"]
