"""fft on the CPU backend (emit_fft.py, the runtime's Eigen FFT) against
numpy.fft and the interpreter: every fft_type, 1 to 3 transform
dimensions, batches, even, odd and prime lengths, c64 and c128; numpy.fft
under xla.jit on the cpu backend; the cases that name the op as unsupported."""
import numpy as np
import pytest

import xla
from xla.errors import UnimplementedError

CASES = [
    # (fft_type, operand dims, fft_length)
    ("FFT", [16], [16]),
    ("FFT", [3, 5, 12], [12]),
    ("IFFT", [4, 7], [7]),
    ("FFT", [2, 6, 10], [6, 10]),
    ("IFFT", [3, 4, 5], [3, 4, 5]),
    ("RFFT", [16], [16]),
    ("RFFT", [3, 17], [17]),
    ("RFFT", [2, 6, 9], [6, 9]),
    ("RFFT", [4, 3, 8], [4, 3, 8]),
    ("IRFFT", [9], [16]),
    ("IRFFT", [2, 9], [17]),
    ("IRFFT", [5, 6, 5], [6, 8]),
    ("IRFFT", [2, 3, 5], [2, 3, 8]),
    ("FFT", [2, 64, 31], [64, 31]),
    # Length-1 axes (the identity; Eigen's kissfft cannot take them).
    ("FFT", [4, 1], [1]),
    ("IFFT", [2, 1, 5], [1, 5]),
    ("RFFT", [3, 1], [1]),
    ("IRFFT", [2, 1], [1]),
    ("RFFT", [2, 5, 1], [5, 1]),
]
NUMPY = {"FFT": np.fft.fftn, "IFFT": np.fft.ifftn, "RFFT": np.fft.rfftn, "IRFFT": np.fft.irfftn}


def module(kind, dims, lengths, complex_type):
    real_type = {"c64": "f32", "c128": "f64"}[complex_type]
    in_type = real_type if kind == "RFFT" else complex_type
    out_type = real_type if kind == "IRFFT" else complex_type
    batch = dims[:len(dims) - len(lengths)]
    out_dims = batch + list(lengths)
    if kind == "RFFT":
        out_dims[-1] = lengths[-1] // 2 + 1
    shape_in = f"{in_type}[{','.join(map(str, dims))}]"
    shape_out = f"{out_type}[{','.join(map(str, out_dims))}]"
    return (f"HloModule fft\nENTRY %main (x: {shape_in}) -> {shape_out} {{\n"
            f"  %x = {shape_in} parameter(0)\n"
            f"  ROOT %f = {shape_out} fft(%x), fft_type={kind}, "
            f"fft_length={{{','.join(map(str, lengths))}}}\n}}\n")


@pytest.mark.parametrize("complex_type", ["c64", "c128"])
@pytest.mark.parametrize("kind,dims,lengths", CASES, ids=lambda v: str(v))
def test_fft_matches_numpy_and_interpreter(kind, dims, lengths, complex_type):
    rng = np.random.default_rng(len(dims) * 100 + sum(lengths))
    cdt, rdt = {"c64": (np.complex64, np.float32), "c128": (np.complex128, np.float64)}[complex_type]
    x = rng.standard_normal(dims)
    if kind != "RFFT":
        x = x + 1j * rng.standard_normal(dims)
    x = x.astype(rdt if kind == "RFFT" else cdt)
    text = module(kind, dims, lengths, complex_type)
    exe = xla.compile(text, backend="cpu")
    assert "__xla_cpu_fft" in exe.ir_text
    got = exe.execute(x)
    axes = tuple(range(len(dims) - len(lengths), len(dims)))
    kwargs = {"s": lengths} if kind in ("RFFT", "IRFFT") else {}
    want = NUMPY[kind](x.astype(np.complex128 if kind != "RFFT" else np.float64), axes=axes, **kwargs)
    assert got.shape == want.shape
    assert got.dtype == (rdt if kind == "IRFFT" else cdt)
    n = np.prod(lengths)
    tol = (1e-5 if complex_type == "c64" else 1e-12) * np.sqrt(n)
    scale = np.abs(want).max()
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * scale)
    interp = xla.compile(text, backend="interpreter").execute(x)
    np.testing.assert_allclose(got, interp, rtol=tol, atol=tol * scale)


@pytest.mark.parametrize("kind,dims,lengths,layout", [
    ("FFT", [8, 4], [4], "{0,1}"),
    ("IFFT", [3, 6, 5], [6, 5], "{0,2,1}"),
    ("RFFT", [5, 8], [8], "{0,1}"),
    ("IRFFT", [4, 5], [8], "{0,1}"),
])
def test_fft_in_non_default_layouts(kind, dims, lengths, layout):
    # Layout assignment copies the operand to row-major and the row-major
    # result back to the written layout around the runtime call.
    rng = np.random.default_rng(3)
    x = rng.standard_normal(dims)
    if kind != "RFFT":
        x = x + 1j * rng.standard_normal(dims)
    x = x.astype(np.float32 if kind == "RFFT" else np.complex64)
    text = module(kind, dims, lengths, "c64")
    text = text.replace("] parameter(0)", f"]{layout} parameter(0)")
    text = text.replace("] fft(%x)", f"]{layout} fft(%x)")
    assert text.count(layout) == 2
    exe = xla.compile(text, backend="cpu")
    assert "__xla_cpu_fft" in exe.ir_text
    got = exe.execute(x)
    axes = tuple(range(len(dims) - len(lengths), len(dims)))
    kwargs = {"s": lengths} if kind in ("RFFT", "IRFFT") else {}
    want = NUMPY[kind](x.astype(np.complex128 if kind != "RFFT" else np.float64), axes=axes, **kwargs)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())


def test_ahead_of_time_objects_name_fft_as_unsupported():
    from xla.backends.cpu.aot import aot_compile
    text = module("FFT", [3, 8], [8], "c64")
    with pytest.raises(UnimplementedError, match="fft.*ahead-of-time"):
        aot_compile(xla.parse_hlo_module(text), target="x86_64", name="f")


def _spectra(v):
    """numpy.fft over the last axes of a batch: complex and real transforms,
    1-D to 3-D, so one jitted module holds every fft_type."""
    return (np.fft.fft(v, axis=-1), np.fft.ifft2(v), np.fft.fftn(v, axes=(0, 1, 2)),
            np.fft.rfft(v.real), np.fft.irfft(v[..., :5], n=9), np.fft.rfft2(v.real),
            np.fft.irfftn(v[..., :6], s=(6, 10), axes=(1, 2)))


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_jit_numpy_fft_runs_through_the_runtime(dtype):
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((4, 6, 10)) + 1j * rng.standard_normal((4, 6, 10))).astype(dtype)
    jitted = xla.jit(_spectra, backend="cpu")
    text = jitted.lower(x).as_hlo_text()
    for kind in ("FFT", "IFFT", "RFFT", "IRFFT"):
        assert f"fft_type={kind}" in text
    assert "__xla_cpu_fft" in xla.compile(text, backend="cpu").ir_text
    got = jitted(x)
    want = _spectra(x.astype(np.complex128))
    single = dtype == np.complex64
    # The largest transform is all of x (fftn over three axes).
    tol = (1e-5 if single else 1e-12) * np.sqrt(x.size)
    for g, w in zip(got, want):
        assert g.shape == w.shape
        # Single precision stays single (NumPy 2), real results stay real.
        assert g.dtype == (np.dtype(np.float32 if w.dtype.kind == "f" else np.complex64) if single
                           else w.dtype)
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol * np.abs(w).max())
