"""Platform and Device: what a backend offers (PJRT's client and devices).

A platform is one kind of hardware with its backend: it names its devices,
makes compilers for them, and moves arrays between the host and its
devices. What the frontend may assume about it is in ``Capabilities``,
never in its name.
"""
from dataclasses import dataclass

import numpy as np

from xla.errors import InvalidArgumentError


@dataclass(frozen=True)
class Capabilities:
    """What callers may rely on. Every field defaults to the conservative answer.

    host_buffers: device memory is host memory: executables take NumPy
        arrays as arguments without copying and return NumPy arrays, and
        ``HostBuffer`` is the platform's buffer type (cpu, interpreter).
    donation: executions honour donated arguments (``input_output_alias``):
        a donated buffer's memory may hold a result, and the buffer is deleted.
    persistent_cache: ``Compiler.compile`` accepts ``cache=`` (a
        ``PersistentCache``) and may load native code from it.
    aot: the compiler can produce an object file and header ahead of time.
    """
    host_buffers: bool = False
    donation: bool = False
    persistent_cache: bool = False
    aot: bool = False


class Device:
    """One device of a platform: ``platform.name``, ``id`` (unique on the
    platform) and ``kind`` (a description of the hardware)."""

    def __init__(self, platform, id=0, kind=None):
        self.platform = platform
        self.id = id
        self.kind = kind or platform.name

    def put(self, array):
        """Copies a host array to this device; returns a Buffer."""
        return self.platform.transfer_to_device(np.asarray(array), self)

    def __repr__(self):
        return f"{type(self).__name__}(platform={self.platform.name!r}, id={self.id})"


class Platform:
    """The interface a backend implements (see docs/new_backend.md).

    Subclasses set ``name`` and ``capabilities`` and implement ``compiler()``;
    those whose memory is not host memory implement ``transfer_to_device``
    (and their Buffer subclass reads back). ``devices()`` defaults to one
    device.
    """

    name = None
    capabilities = Capabilities()

    def __init__(self):
        self._devices = None

    def devices(self):
        if self._devices is None:
            self._devices = [Device(self, 0)]
        return list(self._devices)

    def default_device(self):
        return self.devices()[0]

    def compiler(self):
        """A new ``xla.runtime.Compiler`` for this platform."""
        raise NotImplementedError(f"platform {self.name!r} has no compiler")

    def transfer_to_device(self, array, device):
        """A Buffer on ``device`` holding a copy of ``array`` (the default,
        for host memory: a copy the buffer owns, so that the caller's array
        and the buffer never change each other, e.g. through donation)."""
        if not self.capabilities.host_buffers:
            raise NotImplementedError(
                f"platform {self.name!r} must implement transfer_to_device")
        from xla.runtime.buffer import HostBuffer
        return HostBuffer(np.array(array, copy=True, order="C"), device)

    # ----- DLPack ------------------------------------------------------------------
    def dlpack_device(self, device):
        """``device`` as DLPack names it, ``(device_type, device_id)``, or
        None where its memory cannot be shared through DLPack (the default
        for memory that is not the host's)."""
        return (1, 0) if self.capabilities.host_buffers else None   # kDLCPU

    def buffer_from_dlpack(self, producer, device):
        """A Buffer on ``device`` sharing the memory of ``producer`` (an
        object with ``__dlpack__`` whose ``__dlpack_device__`` is
        ``dlpack_device(device)``), without a copy."""
        if not self.capabilities.host_buffers:
            raise InvalidArgumentError(f"from_dlpack: {device} does not use host memory and "
                                       "takes no DLPack tensors; use xla.device_put to copy onto it")
        from xla.runtime.buffer import HostBuffer
        from xla.runtime.dlpack import to_numpy
        return HostBuffer(to_numpy(producer), device)

    def check_device(self, device):
        if device.platform is not self:
            raise InvalidArgumentError(f"{device} is not a device of platform {self.name!r}")
        return device

    def __repr__(self):
        return f"<Platform {self.name}>"
