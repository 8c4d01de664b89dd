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


# ----- the capsules of xla/runtime/dlpack.py, checked against NumPy's own DLPack ------
# (they are what GPU buffers are exported and imported with; NumPy is a real
# consumer and producer of the same C structures)
class Producer:
    """Hands out a capsule made elsewhere, as another library would."""

    def __init__(self, capsule, device=(1, 0)):
        self.capsule, self.device = capsule, device

    def __dlpack__(self, **kwargs):
        return self.capsule

    def __dlpack_device__(self):
        return self.device


class Owner:
    pass


def test_exported_capsules_are_read_by_numpy_and_freed_when_it_is_done():
    import gc
    import weakref
    from xla.runtime import dlpack
    a = np.arange(24, dtype=np.int16).reshape(2, 3, 4)
    owner = Owner()
    alive = weakref.ref(owner)
    before = dlpack.exported_count()
    capsule = dlpack.export(a.ctypes.data, a.shape, a.dtype, dlpack.KDL_CPU, 0, owner)
    del owner
    b = np.from_dlpack(Producer(capsule))
    np.testing.assert_array_equal(b, a)
    assert np.shares_memory(a, b) and not b.flags.writeable   # flagged read-only
    assert alive() is not None and dlpack.exported_count() == before + 1
    del b, capsule
    gc.collect()
    assert alive() is None and dlpack.exported_count() == before
    # A capsule nobody consumed frees its tensor when dropped.
    capsule = dlpack.export(a.ctypes.data, (), np.dtype(np.bool_), dlpack.KDL_CPU, 0, Owner())
    assert dlpack.exported_count() == before + 1
    del capsule
    gc.collect()
    assert dlpack.exported_count() == before
    with pytest.raises(BufferError, match="no type for"):
        dlpack.export(a.ctypes.data, (1,), np.dtype("U3"), dlpack.KDL_CPU, 0, None)


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint16, np.int64, np.float16,
                                   np.float32, np.float64, np.complex64, np.complex128])
def test_imported_capsules_describe_numpys_tensors(dtype):
    from xla.runtime import dlpack
    a = (np.arange(6) % 3).astype(dtype).reshape(2, 3)
    t = dlpack.consume(a)
    assert (t.address, t.shape, t.dtype, t.device) == (a.ctypes.data, (2, 3), a.dtype, (1, 0))
    assert t.row_major and not t.read_only and t.nbytes == a.nbytes
    t.release()


def test_imported_capsules_report_strides_read_only_and_release_their_producer():
    import gc
    import weakref
    from xla.runtime import dlpack
    a = np.array(np.arange(12, dtype=np.float32).reshape(3, 4))   # owns its memory
    t = dlpack.consume(a.T)
    assert t.shape == (4, 3) and t.strides == (1, 4) and not t.row_major
    view = a[1:]
    view.flags.writeable = False
    r = dlpack.consume(view)
    assert r.read_only and r.row_major and r.address == a.ctypes.data + 16
    held = weakref.ref(a)
    del a, view
    gc.collect()
    assert held() is not None      # the imports keep NumPy's array alive...
    t.release()
    del r
    gc.collect()
    assert held() is None          # ...until released
    with pytest.raises(BufferError, match="not a DLPack capsule"):
        dlpack.consume(Producer(object()))
