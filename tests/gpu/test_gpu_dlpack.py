"""DLPack on a CUDA GPU: buffers export their device memory (kDLCUDA,
read-only, DLPack 1.0) and tensors of other libraries on the same GPU come
in without a copy, into xla.from_dlpack and xla.jit; such shared memory is
never donated. The "other library" is a stand-in holding raw device memory
and handing out a capsule, as PyTorch's and CuPy's CUDA tensors do (neither
is installed on the GPU machine). Needs a GPU: the emulator's memory is not
a device's, and it refuses DLPack (tests/test_dlpack.py)."""
import gc

import numpy as np
import pytest

import xla
from xla.backends.gpu.driver import cuda_unavailable_reason
from xla.errors import InvalidArgumentError
from xla.runtime import dlpack

NO_GPU = cuda_unavailable_reason()
pytestmark = pytest.mark.skipif(NO_GPU is not None, reason=f"needs an NVIDIA GPU: {NO_GPU}")


class CudaTensor:
    """Another library's tensor in device memory, reachable through DLPack only."""

    def __init__(self, array, device):
        self.memory = device.allocate(array.nbytes)
        device.upload(self.memory, np.ascontiguousarray(array))
        device.synchronize()
        self.shape, self.dtype, self.device = array.shape, array.dtype, device
        self.streams = []

    def __dlpack__(self, stream=None, max_version=None, **kwargs):
        self.streams.append(stream)
        return dlpack.export(self.memory.address, self.shape, self.dtype, dlpack.KDL_CUDA,
                             self.device.id, owner=self.memory)

    def __dlpack_device__(self):
        return (dlpack.KDL_CUDA, self.device.id)

    def read(self):
        return self.device.download(self.memory).view(self.dtype).reshape(self.shape)


def test_buffers_export_their_device_memory():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    b = xla.device_put(x, "gpu")
    assert b.__dlpack_device__() == (dlpack.KDL_CUDA, b.device.id)
    c = xla.from_dlpack(b, "gpu")
    assert c.memory.address == b.memory.address and c.shape == (3, 4) and c.dtype == np.float32
    np.testing.assert_array_equal(c.to_numpy(), x)
    with pytest.raises(BufferError, match="max_version"):
        b.__dlpack__()                      # the unversioned protocol cannot say read-only
    with pytest.raises(InvalidArgumentError, match="not on"):
        xla.from_dlpack(np.ones(3), "gpu")  # host memory is not the GPU's


def test_jit_reads_foreign_device_tensors_in_place_and_never_donates_them():
    device = xla.devices("gpu")[0]
    x = np.linspace(-1, 1, 64, dtype=np.float32).reshape(8, 8)
    t = CudaTensor(x, device)
    uploads = []
    original = device.upload
    device.upload = lambda memory, data: (uploads.append(data.nbytes), original(memory, data))
    try:
        f = xla.jit(lambda a: a @ a + 1, backend="gpu", donate_argnums=0)
        out = f(t)
    finally:
        del device.upload
    np.testing.assert_allclose(np.asarray(out), x @ x + 1, rtol=1e-5, atol=1e-5)
    assert uploads == [] and t.streams == [device.context.stream_handle]
    np.testing.assert_array_equal(t.read(), x)      # donated, but shared: not written


def test_imports_hand_their_memory_back_when_the_last_buffer_goes():
    device = xla.devices("gpu")[0]
    t = CudaTensor(np.arange(5, dtype=np.int32), device)
    before = dlpack.exported_count()
    b = xla.from_dlpack(t, device)
    assert dlpack.exported_count() == before + 1 and b.shared
    np.testing.assert_array_equal(b.to_numpy(), np.arange(5))
    y = xla.jit(lambda v: v * 2, backend="gpu")(b)
    np.testing.assert_array_equal(np.asarray(y), np.arange(5) * 2)
    del b
    gc.collect()
    assert dlpack.exported_count() == before
