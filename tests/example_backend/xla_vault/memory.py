"""The vault's device memory: blocks of bytes addressed by integer handles.

No NumPy array ever shares a block: data enters with ``write`` and leaves
with ``read``, each a copy. The platform counts the bytes its transfers move
(``host_to_device``, ``device_to_host``); computations on the device use
``load``/``store``, which are not transfers.
"""
import itertools
import threading

import numpy as np


class DeviceMemory:
    def __init__(self):
        self._blocks = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self.host_to_device = 0   # bytes
        self.device_to_host = 0   # bytes

    def allocate(self, nbytes):
        with self._lock:
            handle = next(self._ids)
            self._blocks[handle] = bytearray(nbytes)
            return handle

    def free(self, handle):
        with self._lock:
            del self._blocks[handle]

    def live_blocks(self):
        return len(self._blocks)

    # ----- transfers (counted) -------------------------------------------------------
    def write(self, handle, array):
        data = np.asarray(array, order="C").tobytes()
        self.host_to_device += len(data)
        self.store(handle, data)

    def read(self, handle, dtype, shape):
        data = bytes(self._blocks[handle])
        self.device_to_host += len(data)
        return np.frombuffer(data, dtype=dtype).reshape(shape).copy()

    # ----- on the device ----------------------------------------------------------------
    def load(self, handle, dtype, shape):
        return np.frombuffer(bytes(self._blocks[handle]), dtype=dtype).reshape(shape).copy()

    def store(self, handle, data):
        block = self._blocks[handle]
        if len(data) != len(block):
            raise ValueError(f"store of {len(data)} bytes into a block of {len(block)}")
        block[:] = data
