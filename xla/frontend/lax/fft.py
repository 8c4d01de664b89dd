"""The fast Fourier transform, as ``jax.lax.fft``."""
import enum

import numpy as np

from xla.errors import InvalidArgumentError, ShapeError
from xla.frontend.lax.eager import eager
from xla.frontend.lax.subcomputation import type_text
from xla.frontend.tracing import Tracer, as_tracer, convert, current_context


class FftType(enum.IntEnum):
    """Which transform ``fft`` computes (JAX's and XLA's names)."""
    FFT = 0      # complex to complex
    IFFT = 1     # its inverse, divided by the number of points
    RFFT = 2     # real to complex: the last dimension n gives n // 2 + 1 outputs
    IRFFT = 3    # its inverse: complex to real, divided by the number of points


def _fft_type(fft_type):
    if isinstance(fft_type, FftType):
        return fft_type
    if isinstance(fft_type, str) and fft_type.upper() in FftType.__members__:
        return FftType[fft_type.upper()]
    raise InvalidArgumentError(f"lax.fft: unknown fft_type {fft_type!r}; use one of "
                               "'fft', 'ifft', 'rfft', 'irfft' or an FftType")


@eager
def fft(x, fft_type, fft_lengths):
    """The ``fft_type`` transform over the last ``len(fft_lengths)`` (1 to 3)
    dimensions of ``x`` (HLO fft). RFFT takes reals (integers become
    float64) and the others complex numbers (reals become complex of their
    precision), as JAX converts them. The transformed dimensions are
    ``fft_lengths``, except for IRFFT, whose last input dimension is
    ``fft_lengths[-1] // 2 + 1``."""
    typ = _fft_type(fft_type)
    t = as_tracer(x)
    lengths = tuple(int(n) for n in fft_lengths)
    if not 1 <= len(lengths) <= 3 or len(lengths) > t.ndim:
        raise ShapeError(f"lax.fft: {len(lengths)} fft_lengths for {type_text(t)} (1 to 3, at most "
                         "the operand's rank)")
    if typ == FftType.RFFT:
        if t.dtype.kind == "c":
            raise InvalidArgumentError(f"lax.fft: RFFT takes real input, got {type_text(t)}")
        if t.dtype.kind != "f":
            t = convert(t, np.float64)
    elif t.dtype.kind != "c":
        t = convert(t, np.complex64 if t.dtype == np.float32 else np.complex128)
    expected = lengths[:-1] + (lengths[-1] // 2 + 1,) if typ == FftType.IRFFT else lengths
    if t.shape[-len(lengths):] != expected or min(lengths) < 1:
        raise ShapeError(f"lax.fft: {typ.name} with fft_lengths {lengths} needs trailing dimensions "
                         f"{expected}, got {type_text(t)}")
    return Tracer(current_context().builder.fft(t.op, typ.name, lengths))
