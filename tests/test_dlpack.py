"""DLPack interop: arrays of other libraries go into xla.jit and
xla.from_dlpack without a copy, and buffers come out to them without one
(read-only). The foreign library here is a stand-in that exposes a NumPy
array only through ``__dlpack__``, as PyTorch's and JAX's CPU arrays do."""
import numpy as np
import pytest

import xla
from xla.errors import InvalidArgumentError
from xla.runtime.transfer import from_foreign


class ForeignTensor:
    """Another library's CPU array, reachable only through DLPack."""

    def __init__(self, array):
        self._array = array
        self.exports = 0

    def __dlpack__(self, **kwargs):
        self.exports += 1
        return self._array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._array.__dlpack_device__()


def test_jit_takes_dlpack_producers_without_a_copy():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = ForeignTensor(a)
    assert np.shares_memory(from_foreign(t), a)
    f = xla.jit(lambda x, y: x @ y.T)
    out = f(t, ForeignTensor(a))
    np.testing.assert_allclose(out, a @ a.T)
    f(ForeignTensor(a + 1), t)
    assert f.cache_info().compilations == 1 and t.exports >= 2


def test_from_dlpack_shares_memory_and_exports_read_only():
    a = np.arange(5, dtype=np.int64)
    b = xla.from_dlpack(ForeignTensor(a))
    assert np.shares_memory(b.array, a) and b.device is xla.devices("cpu")[0]
    out = np.from_dlpack(b)
    assert np.shares_memory(out, a) and not out.flags.writeable
    assert b.__dlpack_device__() == (1, 0)
    np.testing.assert_array_equal(xla.jit(lambda x: x + 1)(b), a + 1)
    with pytest.raises(InvalidArgumentError, match="not a DLPack producer"):
        xla.from_dlpack([1, 2, 3])


def test_device_buffers_that_cannot_be_exported_say_so():
    g = xla.device_put(np.ones(3, np.float32), "gpu_emulator")
    with pytest.raises(BufferError, match="cannot be exported through DLPack"):
        np.from_dlpack(g)
    with pytest.raises(InvalidArgumentError, match="does not use host memory"):
        xla.from_dlpack(np.ones(2), "gpu_emulator")


def test_deleted_buffers_are_not_exported():
    b = xla.device_put(np.ones(2))
    b.delete()
    with pytest.raises(InvalidArgumentError, match="deleted or donated"):
        np.from_dlpack(b)
