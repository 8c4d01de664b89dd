"""The runtime's vectorized FFT (runtime/fft.cc): power-of-two lengths run
a Stockham transform across groups of 16 (f32) or 8 (f64) lines, real
transforms of power-of-two length >= 4 as half-length complex ones, other
lengths Eigen's kissfft. jnp.fft programs as jax lowers them against
XLA:CPU's results (fixtures/fft_jax.npz, from gen_fft_jax.py), and
hand-written fft ops against NumPy's pocketfft where every path and group
shape is exercised: full and partial groups, lines side by side (an axis
before the last), strides that split a group across outer indices, odd
and even powers of two, lengths 2 and 4, mixed power-of-two and other
lengths, IRFFT spectra whose DC and Nyquist imaginary parts must be
ignored, and the lengths and line counts that go to kissfft instead
(fft.cc UseLanes)."""
import numpy as np
import pytest

from xla import runtime
from xla.hlo.parser import parse_hlo_module

from lapack_fixtures import load, program, run

DATA, NAMES = load("fft_jax.npz")


def test_fixture_has_every_program():
    assert len(NAMES) == 10 and "fft2_c64" in NAMES and "irfft_odd_f32" in NAMES
    assert "fft_type=RFFT" in str(DATA["rfft_f32.hlo"])


@pytest.mark.parametrize("name", NAMES)
def test_matches_jax(name):
    text, args, want = program(DATA, name)
    exe = runtime.compile(parse_hlo_module(text), "cpu")
    assert "__xla_cpu_fft_" in exe.ir_text
    got = run(text, args, "cpu")
    assert [(g.dtype, g.shape) for g in got] == [(w.dtype, w.shape) for w in want]
    single = want[0].dtype in (np.float32, np.complex64)
    for g, w in zip(got, want):
        scale = np.abs(w).max()
        np.testing.assert_allclose(g, w, rtol=0, atol=(3e-6 if single else 1e-13) * scale)


NUMPY = {"FFT": np.fft.fftn, "IFFT": np.fft.ifftn, "RFFT": np.fft.rfftn}


def _module(kind, dims, lengths, complex_type):
    real_type = {"c64": "f32", "c128": "f64"}[complex_type]
    in_type = real_type if kind == "RFFT" else complex_type
    out_type = real_type if kind == "IRFFT" else complex_type
    out_dims = list(dims)
    if kind == "RFFT":
        out_dims[-1] = lengths[-1] // 2 + 1
    if kind == "IRFFT":
        out_dims[-1] = lengths[-1]
    s_in = f"{in_type}[{','.join(map(str, dims))}]"
    s_out = f"{out_type}[{','.join(map(str, out_dims))}]"
    return (f"HloModule fft\nENTRY %main (x: {s_in}) -> {s_out} {{\n  %x = {s_in} parameter(0)\n"
            f"  ROOT %f = {s_out} fft(%x), fft_type={kind}, "
            f"fft_length={{{','.join(map(str, lengths))}}}\n}}\n")


CASES = [
    # kind, dims, lengths
    ("FFT", [16, 64], [64]),          # one full f32 group (two f64 groups), even power
    ("FFT", [37, 128], [128]),        # full and partial groups, odd power (radix-2 stage)
    ("IFFT", [5, 2], [2]),            # length 2: one radix-2 stage
    ("FFT", [3, 4], [4]),             # length 4: one radix-4 stage
    ("FFT", [64, 64], [64, 64]),      # axis 0 side by side (stride 64)
    ("IFFT", [2, 32, 24], [32, 24]),  # axis 0 with stride 24: groups across rows; 24 kissfft
    ("FFT", [3, 48, 16], [48, 16]),   # 48 kissfft, 16 lanes
    ("FFT", [2, 8, 16, 32], [8, 16, 32]),
    ("FFT", [4096], [4096]),          # one line: a group of one
    ("RFFT", [21, 256], [256]),
    ("RFFT", [3, 4], [4]),            # half length 2
    ("RFFT", [5, 2], [2]),            # length 2: kissfft
    ("RFFT", [2, 16, 64], [16, 64]),
    ("RFFT", [3, 24, 12], [24, 12]),  # not powers of two
    ("IRFFT", [18, 129], [256]),
    ("IRFFT", [7, 3], [4]),
    ("IRFFT", [4, 8, 17], [8, 32]),
    ("IRFFT", [6, 16], [30]),         # even, not a power of two: kissfft
    ("IRFFT", [2, 1025], [2048]),
    ("FFT", [2, 8192], [8192]),       # few lines of a long length: kissfft
    ("RFFT", [4, 16384], [16384]),    # a quarter of a group or more: lanes
    ("IFFT", [131072], [131072]),     # past 2^16: kissfft
]


@pytest.mark.parametrize("complex_type", ["c64", "c128"])
@pytest.mark.parametrize("kind,dims,lengths", CASES)
def test_matches_numpy(kind, dims, lengths, complex_type):
    cdt, rdt = {"c64": (np.complex64, np.float32), "c128": (np.complex128, np.float64)}[complex_type]
    rng = np.random.default_rng(len(dims) * 100 + dims[-1])
    x = rng.standard_normal(dims)
    if kind != "RFFT":
        x = x + 1j * rng.standard_normal(dims)
    x = x.astype(rdt if kind == "RFFT" else cdt)
    text = _module(kind, dims, lengths, complex_type)
    got = np.asarray(runtime.compile(parse_hlo_module(text), "cpu").execute(x))
    axes = tuple(range(len(dims) - len(lengths), len(dims)))
    wide = x.astype(np.float64 if kind == "RFFT" else np.complex128)
    if kind == "IRFFT":
        # numpy's irfftn ignores the imaginary parts of the DC and Nyquist
        # terms of the last axis (they are not zero here), as XLA's does.
        want = np.fft.irfftn(wide, s=lengths, axes=axes)
    else:
        want = NUMPY[kind](wide, axes=axes)
    assert got.dtype == (rdt if kind == "IRFFT" else cdt) and got.shape == want.shape
    tol = 2e-6 if complex_type == "c64" else 1e-14
    np.testing.assert_allclose(got, want, rtol=0, atol=tol * np.abs(want).max() * np.log2(max(lengths) + 1))


def test_inverse_of_forward_is_the_identity():
    # Large enough to share groups over the pool: ifft(fft(x)) and
    # irfft(rfft(x)) give x back.
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((64, 1024)) + 1j * rng.standard_normal((64, 1024))).astype(np.complex64)
    f = runtime.compile(parse_hlo_module(_module("FFT", [64, 1024], [1024], "c64")), "cpu")
    i = runtime.compile(parse_hlo_module(_module("IFFT", [64, 1024], [1024], "c64")), "cpu")
    np.testing.assert_allclose(np.asarray(i.execute(np.asarray(f.execute(x)))), x, atol=2e-5)
    r = x.real.copy()
    rf = runtime.compile(parse_hlo_module(_module("RFFT", [64, 1024], [1024], "c64")), "cpu")
    ri = runtime.compile(parse_hlo_module(_module("IRFFT", [64, 513], [1024], "c64")), "cpu")
    np.testing.assert_allclose(np.asarray(ri.execute(np.asarray(rf.execute(r)))), r, atol=2e-5)
