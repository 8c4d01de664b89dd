"""DLPack interop with PyTorch's CPU tensors, where PyTorch is installed
(a test dependency only, not in requirements.txt: PyPI's Linux wheel brings
several GB of CUDA libraries; run with it on the path to check). Tensors go
into xla.jit and xla.from_dlpack without a copy, and buffers come out to
torch.from_dlpack without one."""
import numpy as np
import pytest

import xla

try:
    import torch
except ImportError:
    torch = None
pytestmark = pytest.mark.skipif(
    torch is None, reason="PyTorch is not installed (an optional test dependency; see the docstring)")


def test_jit_takes_torch_tensors_without_a_copy():
    t = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    f = xla.jit(lambda x, y: x @ y.T + 1)
    out = f(t, t)
    np.testing.assert_allclose(out, t.numpy() @ t.numpy().T + 1)
    b = xla.from_dlpack(t)
    assert b.array.ctypes.data == t.data_ptr()
    t[0, 0] = 100.0          # the buffer sees the tensor's memory
    assert b.to_numpy()[0, 0] == 100.0


@pytest.mark.parametrize("name", ["float32", "float64", "int32", "int64", "int8", "uint8", "bool",
                                  "float16", "bfloat16", "complex64"])
def test_tensors_and_buffers_round_trip_without_copies(name):
    dtype = getattr(torch, name)
    t = (torch.arange(6).reshape(2, 3) % 3).to(dtype)
    b = xla.from_dlpack(t)
    assert b.array.ctypes.data == t.data_ptr() and b.shape == (2, 3)
    back = torch.from_dlpack(b)
    assert back.dtype == dtype and back.data_ptr() == t.data_ptr()
    assert torch.equal(back, t)
    out = xla.jit(lambda x: x == x)(t)      # any dtype goes into jit
    assert out.dtype == np.bool_ and out.all()


def test_results_of_jit_come_out_to_torch():
    f = xla.jit(lambda x: np.tanh(x) * 2)
    t = torch.linspace(-2, 2, 9)
    out = torch.from_dlpack(xla.device_put(f(t)))
    torch.testing.assert_close(out, torch.tanh(t) * 2)
