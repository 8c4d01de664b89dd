"""Transfers between the host and devices: ``xla.device_put`` and reading
buffers back (``np.asarray(buffer)``, ``Buffer.to_numpy()``)."""
import numpy as np

from xla.errors import InvalidArgumentError
from xla.runtime.buffer import Buffer
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
    array = np.asarray(value)
    if array.dtype == object:
        raise InvalidArgumentError(f"device_put: a {type(value).__name__} is not an array")
    return device.put(array)
