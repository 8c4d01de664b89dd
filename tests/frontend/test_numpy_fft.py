"""numpy.fft inside xla.jit (xla/frontend/numpy/fft.py) against NumPy, on
the cpu backend and the interpreter: every function, n/s crop and pad, axes
not last, every norm, float32 staying single precision as in NumPy 2."""
import numpy as np
import pytest

import xla
from xla.errors import TracingError

RNG = np.random.default_rng(0)
REAL = RNG.standard_normal((3, 6, 10))
CPLX = REAL + 1j * RNG.standard_normal((3, 6, 10))

CASES = [
    ("fft", CPLX, {}),
    ("fft", REAL, {"n": 7}),
    ("fft", CPLX, {"n": 13, "axis": 1}),
    ("ifft", CPLX, {"axis": 0, "norm": "ortho"}),
    ("ifft", REAL, {"norm": "forward"}),
    ("rfft", REAL, {}),
    ("rfft", REAL, {"n": 9, "axis": 1, "norm": "ortho"}),
    ("irfft", CPLX[..., :6], {}),
    ("irfft", CPLX[..., :6], {"n": 11}),
    ("irfft", CPLX, {"axis": 1, "norm": "forward"}),
    ("fft2", CPLX, {}),
    ("ifft2", CPLX, {"s": (4, 12), "axes": (0, 2)}),
    ("rfft2", REAL, {"norm": "ortho"}),
    ("irfft2", CPLX[..., :6], {"s": (6, 10)}),
    ("fftn", CPLX, {}),
    ("fftn", REAL, {"axes": (2, 0)}),
    ("ifftn", CPLX, {"s": (5, 8), "axes": (1, 2)}),
    ("rfftn", REAL, {}),
    ("irfftn", CPLX[..., :6], {"axes": (0, 2)}),
    ("hfft", CPLX[..., :6], {}),
    ("hfft", CPLX, {"n": 7, "axis": 1, "norm": "ortho"}),
    ("hfft", REAL, {"norm": "forward"}),
    ("ihfft", REAL, {}),
    ("ihfft", REAL, {"n": 7, "axis": 0, "norm": "forward"}),
    ("ihfft", REAL, {"norm": "ortho"}),
    ("fftshift", CPLX, {}),
    ("fftshift", REAL, {"axes": 1}),
    ("ifftshift", REAL[..., :9], {}),
    ("ifftshift", CPLX, {"axes": (0, 2)}),
]


@pytest.mark.parametrize("backend", ["cpu", "interpreter"])
@pytest.mark.parametrize("dtype", ["single", "double"])
@pytest.mark.parametrize("name,x,kwargs", CASES, ids=lambda v: v if isinstance(v, str) else None)
def test_numpy_fft(name, x, kwargs, dtype, backend):
    if dtype == "single":
        x = x.astype(np.complex64 if np.iscomplexobj(x) else np.float32)
    fn = getattr(np.fft, name)
    want = fn(x, **kwargs)
    got = xla.jit(lambda v: fn(v, **kwargs), backend=backend)(x)
    assert got.dtype == want.dtype and got.shape == want.shape
    tol = 2e-5 if dtype == "single" else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.abs(want).max())


def test_integer_input_computes_in_double():
    x = np.arange(12, dtype=np.int32).reshape(3, 4)
    got = xla.jit(np.fft.rfft)(x)
    assert got.dtype == np.complex128
    np.testing.assert_allclose(got, np.fft.rfft(x), atol=1e-12)


def test_more_than_three_axes_is_a_clear_error():
    x = np.zeros((2, 2, 2, 2), np.complex64)
    with pytest.raises(TracingError, match="1 to 3 axes"):
        xla.jit(np.fft.fftn)(x)


@pytest.mark.parametrize("name", ["fftshift", "ifftshift"])
@pytest.mark.parametrize("x", [np.arange(7, dtype=np.int32), np.arange(12).reshape(3, 4) > 5, np.zeros(0),
                               np.arange(6.0).reshape(2, 3).astype(np.float32)], ids=["i32", "bool", "empty", "f32"])
def test_shifts_keep_the_dtype(name, x):
    fn = getattr(np.fft, name)
    got, want = xla.jit(fn)(x), fn(x)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    got = xla.jit(lambda v: np.fft.ifftshift(np.fft.fftshift(v)))(x)
    np.testing.assert_array_equal(got, x)
