"""fft through cuFFT: ``FftThunk`` (which transform, over which slices) and
the two ways it runs: ``Cufft`` (cuFFT's batched plans, through ctypes on the
``libcufft`` the nvidia-cufft wheel or the CUDA toolkit installs) on a GPU,
``run_on_host`` (NumPy) on the emulator.

XLA's fft transforms the operand's last ``len(fft_length)`` (1 to 3)
dimensions; the leading ones are a batch. FFT and IFFT are complex to
complex, RFFT real to the first ``n // 2 + 1`` coefficients of the last
dimension, IRFFT those back to ``n`` reals; the inverse transforms are scaled
by ``1 / prod(fft_length)`` (as numpy.fft's). cuFFT's inverse transforms are
unscaled, so the GPU multiplies the result by the scale afterwards (cuBLAS's
``scal`` on the same stream); and its complex-to-real transforms overwrite
their input, so IRFFT transforms a copy of the operand, never the operand.

Operand and result must be row-major (the GPU backend's arrays are, unless
a layout was written into the module); another layout names itself as
unsupported.
"""
import ctypes
import math
from dataclasses import dataclass

import numpy as np

from xla.backends.cpu.kernels import Slice
from xla.backends.cpu.loop_emitter import major_to_minor
from xla.backends.gpu.driver import CudaError, load_cuda_library
from xla.backends.gpu.kernels import unsupported

_COMPLEX = {np.dtype(np.complex64): "c64", np.dtype(np.complex128): "c128"}


@dataclass
class FftThunk:
    """``out = fft_type(operand)`` over the last ``len(lengths)`` dimensions,
    for ``batch`` transforms; slices are (allocation index, offset)."""
    operand: tuple
    out: tuple
    fft_type: str          # FFT, IFFT, RFFT, IRFFT
    lengths: tuple
    batch: int
    precision: str         # c64 or c128: the complex side's type
    operand_bytes: int
    out_bytes: int
    instruction: str

    @property
    def scale(self):
        """What the unscaled inverse's result is multiplied by (1 for forward ones)."""
        return 1.0 / math.prod(self.lengths) if self.fft_type in ("IFFT", "IRFFT") else 1.0

    @property
    def elements(self):
        """Elements of the result (complex ones count once)."""
        return math.prod(_result_dims(self))


def _result_dims(t):
    last = t.lengths[-1] // 2 + 1 if t.fft_type == "RFFT" else t.lengths[-1]
    return (t.batch, *t.lengths[:-1], last)


def _operand_dims(t):
    last = t.lengths[-1] // 2 + 1 if t.fft_type == "IRFFT" else t.lengths[-1]
    return (t.batch, *t.lengths[:-1], last)


def fft_thunk(h, assignment):
    """The FftThunk of fft instruction ``h`` (raises UnimplementedError,
    naming the op, for what cuFFT is not given)."""
    (x,) = h.operands
    fft_type = str(h.attr("fft_type"))
    lengths = tuple(int(n) for n in h.attr("fft_length"))
    complex_side = x.shape if fft_type in ("FFT", "IFFT", "IRFFT") else h.shape
    precision = _COMPLEX.get(np.dtype(complex_side.dtype))
    if precision is None:
        raise unsupported(h, f"element type {complex_side.element_type}")
    for s in (x.shape, h.shape):
        if major_to_minor(s) != list(range(s.rank)):
            raise unsupported(h, f"layout {s} (cuFFT is given row-major arrays)")
    batch = math.prod(x.shape.dimensions[:x.shape.rank - len(lengths)])
    if 0 in lengths or batch == 0 or h.shape.num_elements() >= 2 ** 31:
        if h.shape.num_elements() == 0:
            return []      # nothing to compute
        raise unsupported(h, f"{h.shape.num_elements()} elements (cuFFT plans here take "
                          "fewer than 2^31)")

    def where(y):
        return Slice(assignment.buffer(y)).key
    return FftThunk(where(x), where(h), fft_type, lengths, batch, precision,
                    x.shape.byte_size(), h.shape.byte_size(), h.name)


def _dtypes(t):
    complex_type = np.dtype(np.complex64 if t.precision == "c64" else np.complex128)
    real_type = np.dtype(np.float32 if t.precision == "c64" else np.float64)
    return (real_type if t.fft_type == "RFFT" else complex_type,
            real_type if t.fft_type == "IRFFT" else complex_type)


def run_on_host(t, operand, out):
    """The transform with numpy.fft over host memory (uint8 arrays of the slices)."""
    in_type, out_type = _dtypes(t)
    x = operand.view(in_type).reshape(_operand_dims(t))
    axes = tuple(range(1, len(t.lengths) + 1))
    if t.fft_type == "FFT":
        y = np.fft.fftn(x, axes=axes)
    elif t.fft_type == "IFFT":
        y = np.fft.ifftn(x, axes=axes)
    elif t.fft_type == "RFFT":
        y = np.fft.rfftn(x, axes=axes)
    else:
        y = np.fft.irfftn(x, s=t.lengths, axes=axes)
    out.view(out_type).reshape(_result_dims(t))[...] = y


# cufftType and directions (cufft.h)
_R2C, _C2R, _C2C, _D2Z, _Z2D, _Z2Z = 0x2a, 0x2c, 0x29, 0x6a, 0x6c, 0x69
_FORWARD, _INVERSE = -1, 1
_PLAN = {("FFT", "c64"): (_C2C, "cufftExecC2C", _FORWARD),
         ("IFFT", "c64"): (_C2C, "cufftExecC2C", _INVERSE),
         ("RFFT", "c64"): (_R2C, "cufftExecR2C", None),
         ("IRFFT", "c64"): (_C2R, "cufftExecC2R", None),
         ("FFT", "c128"): (_Z2Z, "cufftExecZ2Z", _FORWARD),
         ("IFFT", "c128"): (_Z2Z, "cufftExecZ2Z", _INVERSE),
         ("RFFT", "c128"): (_D2Z, "cufftExecD2Z", None),
         ("IRFFT", "c128"): (_Z2D, "cufftExecZ2D", None)}


class Cufft:
    """cuFFT plans bound to one stream, one per (transform, lengths, batch),
    made on first use and kept."""

    def __init__(self, stream_address):
        self.lib = load_cuda_library("cufft", ("libcufft.so.12", "libcufft.so.11", "libcufft.so"),
                                     "nvidia-cufft")
        self.stream = ctypes.c_void_p(stream_address)
        self.plans = {}

    def _check(self, call, status):
        if status != 0:
            raise CudaError(f"{call} failed: cuFFT status {status}")

    def _plan(self, t):
        key = (t.fft_type, t.precision, t.lengths, t.batch)
        if key not in self.plans:
            plan = ctypes.c_int()
            n = (ctypes.c_int * len(t.lengths))(*t.lengths)
            kind = _PLAN[t.fft_type, t.precision][0]
            # No embedding: the basic layout, transforms one after another.
            self._check("cufftPlanMany", self.lib.cufftPlanMany(
                ctypes.byref(plan), ctypes.c_int(len(t.lengths)), n, None, 1, 0, None, 1, 0,
                ctypes.c_int(kind), ctypes.c_int(t.batch)))
            self._check("cufftSetStream", self.lib.cufftSetStream(plan, self.stream))
            self.plans[key] = plan
        return self.plans[key]

    def run(self, t, operand, out):
        """``t`` from device address ``operand`` into ``out`` (unscaled: the
        caller scales inverse transforms)."""
        plan = self._plan(t)
        _, call, direction = _PLAN[t.fft_type, t.precision]
        args = [plan, ctypes.c_void_p(operand), ctypes.c_void_p(out)]
        if direction is not None:
            args.append(ctypes.c_int(direction))
        self._check(call, getattr(self.lib, call)(*args))

    def __del__(self):
        for plan in getattr(self, "plans", {}).values():
            try:
                self.lib.cufftDestroy(plan)
            except Exception:   # interpreter shutdown: the library may be gone
                pass
