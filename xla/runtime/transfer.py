"""Transfers between the host and devices: ``xla.device_put`` and reading
buffers back (``np.asarray(buffer)``, ``Buffer.to_numpy()``)."""
import numpy as np

from xla.errors import InvalidArgumentError
from xla.runtime.buffer import Buffer
from xla.runtime.dlpack import to_numpy
from xla.runtime.platform import Device


def device_put(value, device=None):
    """Copies ``value`` to ``device`` and returns a Buffer (lists, tuples and
    dicts of arrays give the same containers of Buffers). ``device`` is a
    Device, a platform name (its first device), or None (the default
    platform's first device). A buffer
    already on ``device`` is returned as is; one on another device is read
    back and copied."""
    device = resolve_device(device)
    return _put(value, device)


def resolve_device(device):
    if isinstance(device, Device):
        return device
    from xla.runtime.registry import default_platform, get_platform
    if device is None:
        return default_platform().default_device()
    if isinstance(device, str):
        return get_platform(device).default_device()
    raise InvalidArgumentError(f"device_put: {device!r} is not a Device or platform name")


def from_dlpack(value, device=None):
    """A buffer sharing the memory of ``value``, any DLPack producer (PyTorch,
    JAX, CuPy, NumPy...) on ``device`` (host memory for the CPU, a GPU's
    memory for that GPU), without a copy (``jax.dlpack.from_dlpack``). The
    producer must not change the memory while the buffer is in use."""
    device = resolve_device(device)
    if not hasattr(value, "__dlpack__"):
        raise InvalidArgumentError(f"from_dlpack: a {type(value).__name__} is not a DLPack producer")
    where = device.platform.dlpack_device(device)
    if where is not None and hasattr(value, "__dlpack_device__"):
        got = tuple(value.__dlpack_device__())
        if got != where:
            raise InvalidArgumentError(
                f"from_dlpack: the tensor is on DLPack device {got}, not on {device} {where}; "
                "use xla.device_put to copy it")
    return device.platform.buffer_from_dlpack(value, device)


def foreign_to(value, device):
    """``value``, an array of another library, for ``device``: a buffer
    sharing its memory when it is on that device (DLPack), else a NumPy
    array (``from_foreign``)."""
    where = device.platform.dlpack_device(device)
    if where is not None and where != (1, 0) and hasattr(value, "__dlpack_device__"):
        try:
            got = tuple(value.__dlpack_device__())
        except (BufferError, TypeError):
            got = None
        if got == where:
            return device.platform.buffer_from_dlpack(value, device)
    return from_foreign(value)


def from_foreign(value):
    """A NumPy array for ``value``: DLPack producers on the CPU (PyTorch and
    JAX arrays, anything with ``__dlpack__``) without a copy, else
    ``np.asarray``."""
    if isinstance(value, np.ndarray):
        return value
    if hasattr(value, "__dlpack__") and not isinstance(value, Buffer):
        device = getattr(value, "__dlpack_device__", lambda: (1, 0))()
        if device[0] == 1:   # kDLCPU
            try:
                return to_numpy(value)
            except (BufferError, TypeError, RuntimeError):
                pass
    return np.asarray(value)



def _put(value, device):
    if isinstance(value, Buffer):
        if value.device is device:
            value.check_live()
            return value
        return device.put(value.to_numpy())
    if isinstance(value, (list, tuple)):
        return type(value)(_put(v, device) for v in value)
    if isinstance(value, dict):
        return {k: _put(v, device) for k, v in value.items()}
    array = foreign_to(value, device)
    if isinstance(array, Buffer):
        return array
    if array.dtype == object:
        raise InvalidArgumentError(f"device_put: a {type(value).__name__} is not an array")
    return device.put(array)
