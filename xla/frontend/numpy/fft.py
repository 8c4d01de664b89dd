"""``numpy.fft`` under ``xla.jit``: fft/ifft/rfft/irfft and their 2-D and
n-D forms, one HLO fft each over up to three axes; ``hfft`` and ``ihfft``
through irfft and rfft, ``fftshift`` and ``ifftshift`` as rolls.

The axes are moved last (transpose), cropped or zero-padded to the requested
lengths, transformed (``xla.lax.fft``), and moved back. NumPy 2's dtype rules: float32/complex64
stay single precision, everything else computes in complex128. ``norm``:
"backward" (the default: inverse transforms scaled by 1/n), "ortho" (both by
1/sqrt n), "forward" (forward transforms by 1/n). Registration only: NumPy
keeps these names under ``np.fft``, so ``xla.numpy`` does not export them.
"""
import builtins

import numpy as np

from xla.errors import ShapeError
from xla.frontend import lax
from xla.frontend.numpy._common import implements, normalize_axis
from xla.frontend.numpy.indexing_routines import pad
from xla.frontend.numpy.manipulation import roll, transpose
from xla.frontend.tracing import as_tracer, convert, tracing_error


def _fft_axes(a, s, axes, default_all):
    if axes is None:
        if s is not None:
            axes = tuple(range(a.ndim - len(s), a.ndim))
        else:
            axes = tuple(range(a.ndim)) if default_all else (a.ndim - 1,)
    axes = tuple(normalize_axis(x, a.ndim) for x in (axes if isinstance(axes, (tuple, list)) else (axes,)))
    if len(set(axes)) != len(axes):
        raise ShapeError(f"fft: repeated axes {axes}")
    if not 1 <= len(axes) <= 3:
        raise tracing_error(f"xla.jit supports FFTs over 1 to 3 axes, got {len(axes)}; "
                            "transform the rest in a second call")
    if s is not None and len(s) != len(axes):
        raise ShapeError(f"fft: s {tuple(s)} and axes {axes} differ in length")
    return axes


def _resize_last(x, sizes):
    """Crops or zero-pads the last len(sizes) dimensions of x to sizes."""
    k = len(sizes)
    index = [slice(None)] * (x.ndim - k) + [slice(0, n) for n in sizes]
    x = x[tuple(index)]
    widths = [(0, 0)] * (x.ndim - k) + [(0, builtins.max(0, n - d)) for n, d in zip(sizes, x.shape[-k:])]
    return pad(x, widths) if builtins.any(w for _, w in widths) else x


def _fft(a, kind, s, axes, norm, default_all=False):
    a = as_tracer(a)
    axes = _fft_axes(a, s, axes, default_all)
    single = a.dtype in (np.float32, np.complex64)
    cdt, rdt = (np.complex64, np.float32) if single else (np.complex128, np.float64)
    in_sizes = [a.shape[x] for x in axes]
    if kind == "IRFFT":
        lengths = list(s) if s is not None else in_sizes[:-1] + [2 * (in_sizes[-1] - 1)]
        sizes = lengths[:-1] + [lengths[-1] // 2 + 1]
    else:
        lengths = list(s) if s is not None else in_sizes
        sizes = lengths
    if builtins.any(n < 1 for n in lengths):
        raise ShapeError(f"fft: invalid number of data points {tuple(lengths)}")
    perm = [d for d in range(a.ndim) if d not in axes] + list(axes)
    x = transpose(a, perm)
    x = convert(x, rdt if kind == "RFFT" else cdt)
    x = _resize_last(x, sizes)
    y = lax.fft(x, kind, lengths)
    n = int(np.prod(lengths))
    inverse = kind in ("IFFT", "IRFFT")
    scale = {"backward": 1.0, None: 1.0, "ortho": 1.0 / np.sqrt(n),
             "forward": 1.0 / n}.get(norm)
    if scale is None:
        raise ValueError(f'Invalid norm value {norm}; should be "backward", "ortho" or "forward".')
    if inverse:
        # HLO's inverse transforms divide by n already ("backward").
        scale = {"backward": 1.0, None: 1.0, "ortho": np.sqrt(n), "forward": float(n)}[norm]
    if scale != 1.0:
        y = y * np.asarray(scale, rdt)
    return transpose(y, tuple(int(i) for i in np.argsort(perm)))


def _register_fft(kind, numpy_fn, form):
    """Registers ``numpy_fn`` with NumPy's signature for its ``form``: "1d"
    (n, axis), "2d" (s, axes=(-2, -1)) or "nd" (s, axes: all by default).
    Module-private, so that xla.numpy does not gain top-level fft names
    NumPy keeps under np.fft."""
    if form == "1d":
        def impl(a, n=None, axis=-1, norm=None, out=None):
            return _fft(a, kind, None if n is None else [n], (axis,), norm)
    elif form == "2d":
        def impl(a, s=None, axes=(-2, -1), norm=None, out=None):
            return _fft(a, kind, s, axes, norm)
    else:
        def impl(a, s=None, axes=None, norm=None, out=None):
            return _fft(a, kind, s, axes, norm, default_all=True)
    impl.__name__ = numpy_fn.__name__
    implements(numpy_fn)(impl)


for _kind, _fns in {"FFT": (np.fft.fft, np.fft.fft2, np.fft.fftn),
                    "IFFT": (np.fft.ifft, np.fft.ifft2, np.fft.ifftn),
                    "RFFT": (np.fft.rfft, np.fft.rfft2, np.fft.rfftn),
                    "IRFFT": (np.fft.irfft, np.fft.irfft2, np.fft.irfftn)}.items():
    for _form, _fn in zip(("1d", "2d", "nd"), _fns):
        _register_fft(_kind, _fn, _form)


# ----- Hermitian transforms and shifts -----------------------------------------------------

_SWAPPED_NORM = {None: "forward", "backward": "forward", "ortho": "ortho", "forward": "backward"}


def _swapped(norm):
    if norm not in _SWAPPED_NORM:
        raise ValueError(f'Invalid norm value {norm}; should be "backward", "ortho" or "forward".')
    return _SWAPPED_NORM[norm]


def hfft(a, n=None, axis=-1, norm=None, out=None):
    """NumPy's ``hfft``: ``irfft`` of the conjugate, the norm's direction
    swapped; ``n`` defaults to ``2 * (m - 1)``."""
    a = as_tracer(a)
    if n is None:
        n = (a.shape[normalize_axis(axis, a.ndim)] - 1) * 2
    return _fft(np.conjugate(a), "IRFFT", [n], (axis,), _swapped(norm))


def ihfft(a, n=None, axis=-1, norm=None, out=None):
    """NumPy's ``ihfft``: the conjugate of ``rfft``, the norm's direction
    swapped."""
    a = as_tracer(a)
    if n is None:
        n = a.shape[normalize_axis(axis, a.ndim)]
    return np.conjugate(_fft(a, "RFFT", [n], (axis,), _swapped(norm)))


def _shift(x, axes, sign):
    x = as_tracer(x)
    if axes is None:
        axes = tuple(range(x.ndim))
    if isinstance(axes, (int, np.integer)):
        return roll(x, sign * (x.shape[axes] // 2), axes)
    return roll(x, [sign * (x.shape[ax] // 2) for ax in axes], tuple(axes))


def fftshift(x, axes=None):
    return _shift(x, axes, 1)


def ifftshift(x, axes=None):
    return _shift(x, axes, -1)


for _fn in (hfft, ihfft, fftshift, ifftshift):
    implements(getattr(np.fft, _fn.__name__))(_fn)
