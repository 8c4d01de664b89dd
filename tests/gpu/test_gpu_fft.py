"""fft on the GPU backend (``fft.py``: cuFFT on a GPU, numpy.fft on the
emulator) against numpy.fft: every fft_type, 1 to 3 transform dimensions,
batches, even, odd and prime lengths, length-1 axes, c64 and c128; inside a
while loop; the operand of IRFFT left as it was (cuFFT's complex-to-real
transform overwrites its input); what is refused, by name."""
import numpy as np
import pytest

import xla
from xla.backends.gpu.driver import cuda_unavailable_reason
from xla.errors import UnimplementedError

NO_GPU = cuda_unavailable_reason()
needs_gpu = pytest.mark.skipif(NO_GPU is not None, reason=f"needs an NVIDIA GPU: {NO_GPU}")
PLATFORMS = ["gpu_emulator", pytest.param("gpu", marks=needs_gpu)]

CASES = [
    # (fft_type, operand dims, fft_length)
    ("FFT", [16], [16]),
    ("FFT", [3, 5, 12], [12]),
    ("IFFT", [4, 7], [7]),
    ("FFT", [2, 6, 10], [6, 10]),
    ("IFFT", [3, 4, 5], [3, 4, 5]),
    ("RFFT", [3, 17], [17]),
    ("RFFT", [2, 6, 9], [6, 9]),
    ("RFFT", [4, 3, 8], [4, 3, 8]),
    ("IRFFT", [2, 9], [17]),
    ("IRFFT", [5, 6, 5], [6, 8]),
    ("IRFFT", [2, 3, 5], [2, 3, 8]),
    ("FFT", [2, 64, 31], [64, 31]),
    ("IFFT", [2, 1, 5], [1, 5]),
    ("RFFT", [3, 1], [1]),
    ("IRFFT", [2, 1], [1]),
]
NUMPY = {"FFT": np.fft.fftn, "IFFT": np.fft.ifftn, "RFFT": np.fft.rfftn, "IRFFT": np.fft.irfftn}


def _module(kind, dims, lengths, complex_type):
    real_type = {"c64": "f32", "c128": "f64"}[complex_type]
    in_type = real_type if kind == "RFFT" else complex_type
    out_type = real_type if kind == "IRFFT" else complex_type
    out_dims = dims[:len(dims) - len(lengths)] + list(lengths)
    if kind == "RFFT":
        out_dims[-1] = lengths[-1] // 2 + 1
    shape_in = f"{in_type}[{','.join(map(str, dims))}]"
    shape_out = f"{out_type}[{','.join(map(str, out_dims))}]"
    return (f"HloModule fft\nENTRY %main (x: {shape_in}) -> ({shape_out}, {shape_in}) {{\n"
            f"  %x = {shape_in} parameter(0)\n"
            f"  %f = {shape_out} fft(%x), fft_type={kind}, "
            f"fft_length={{{','.join(map(str, lengths))}}}\n"
            # x is read again after the fft: an IRFFT that overwrote it shows here
            f"  %y = {shape_in} add(%x, %x)\n"
            f"  ROOT %t = ({shape_out}, {shape_in}) tuple(%f, %y)\n}}\n")


def _operand(kind, dims, complex_type, seed):
    rng = np.random.default_rng(seed)
    cdt, rdt = {"c64": (np.complex64, np.float32), "c128": (np.complex128, np.float64)}[complex_type]
    x = rng.standard_normal(dims)
    if kind == "RFFT":
        return x.astype(rdt)
    return (x + 1j * rng.standard_normal(dims)).astype(cdt)


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("complex_type", ["c64", "c128"])
@pytest.mark.parametrize("kind,dims,lengths", CASES, ids=lambda v: str(v))
def test_fft_matches_numpy(kind, dims, lengths, complex_type, platform):
    from xla.backends.gpu.fft import FftThunk
    x = _operand(kind, dims, complex_type, len(dims) * 100 + sum(lengths))
    exe = xla.compile(_module(kind, dims, lengths, complex_type), platform)
    assert any(isinstance(t, FftThunk) for t in exe.thunks), exe.thunks
    got, doubled = exe.execute(x)
    axes = tuple(range(len(dims) - len(lengths), len(dims)))
    kwargs = {"s": lengths} if kind in ("RFFT", "IRFFT") else {}
    wide = x.astype(np.float64 if kind == "RFFT" else np.complex128)
    want = NUMPY[kind](wide, axes=axes, **kwargs)
    assert got.shape == want.shape
    real, cplx = {"c64": (np.float32, np.complex64), "c128": (np.float64, np.complex128)}[complex_type]
    assert got.dtype == (real if kind == "IRFFT" else cplx)
    tol = (1e-5 if complex_type == "c64" else 1e-12) * np.sqrt(np.prod(lengths))
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.abs(want).max())
    np.testing.assert_array_equal(doubled, x + x)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_fft_in_a_while_loop(platform):
    """Four round trips x -> ifft(fft(x)) in a loop: x comes back."""
    exe = xla.compile("""HloModule m
cond {
  s = (s32[], c64[3,8]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(4)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  s = (s32[], c64[3,8]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  x = c64[3,8] get-tuple-element(s), index=1
  f = c64[3,8] fft(x), fft_type=FFT, fft_length={8}
  g = c64[3,8] fft(f), fft_type=IFFT, fft_length={8}
  one = s32[] constant(1)
  j = s32[] add(i, one)
  ROOT t = (s32[], c64[3,8]) tuple(j, g)
}
ENTRY e {
  x = c64[3,8] parameter(0)
  z = s32[] constant(0)
  t = (s32[], c64[3,8]) tuple(z, x)
  w = (s32[], c64[3,8]) while(t), condition=cond, body=body
  ROOT r = c64[3,8] get-tuple-element(w), index=1
}""", platform)
    x = _operand("FFT", [3, 8], "c64", 7)
    np.testing.assert_allclose(exe.execute(x), x, rtol=1e-5, atol=1e-5)


def test_numpy_fft_under_jit_on_the_emulator():
    f = xla.jit(lambda x: np.fft.irfft(np.fft.rfft(x) * 2, n=x.shape[-1]), backend="gpu_emulator")
    x = np.random.default_rng(3).standard_normal((4, 30)).astype(np.float32)
    np.testing.assert_allclose(np.asarray(f(x)), 2 * x, rtol=1e-5, atol=1e-5)


def test_a_non_row_major_fft_is_refused_by_name():
    with pytest.raises(UnimplementedError, match=r"gpu backend does not support fft \(layout"):
        xla.compile("""HloModule m
ENTRY e {
  x = c64[8,4] parameter(0)
  t = c64[8,4]{0,1} copy(x)
  f = c64[8,4]{0,1} fft(t), fft_type=FFT, fft_length={4}
  ROOT r = c64[8,4] copy(f)
}""", "gpu_emulator")


def test_aot_names_fft():
    from xla.backends.gpu.aot import aot_compile
    module = xla.parse_hlo_module(_module("FFT", [4, 8], [8], "c64"))
    with pytest.raises(UnimplementedError, match="does not support fft .*cuFFT"):
        aot_compile(module, "m")
