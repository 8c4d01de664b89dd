"""Reduce-windows that are inclusive scans (jnp.cumsum, cumprod, cummax,
cumlogsumexp: a window of the whole prefix, or with reverse=True the whole
suffix) run on the CPU as running folds (emit_window.emit_scan), not as a
window loop per output, and give the interpreter's bits (forward; reverse
on integers) and XLA:CPU's results: JAX-lowered programs with jax's
arguments and results (fixtures/scans_jax.npz, written by
gen_scans_jax.py) and hand-written windows at the edges of the rule."""
import re

import ml_dtypes
import numpy as np
import pytest

import xla
from lapack_fixtures import load, program, run
from xla.backends.cpu.emit_window import prefix_scan
from xla.hlo.parser import parse_hlo_module

DATA, NAMES = load("scans_jax.npz")

# program: (loop order, exact against the interpreter). "rows": the scan
# dimension is the layout's minor one, one register fold per row;
# "steps": each step of a major scan dimension reads the previous step's
# outputs back, over the dimensions minor to it.
PROGRAMS = {
    "cumsum_f64_rows": ("rows", True),
    "cumsum_f32_axis0": ("steps", True),
    "cumsum_f32_middle": ("steps", True),
    "cumsum_reverse_f32": ("rows", False),   # regrouped from the end
    "cumsum_reverse_s32_axis0": ("steps", True),
    "cumprod_s32": ("rows", True),
    "cummax_f32": ("rows", True),
    "cummin_reverse_f64": ("steps", False),
    "cumsum_bf16": ("rows", True),
    "cumlogsumexp_f32": ("rows", False),   # exp and log1p: the CPU's, not libm's, within an ulp
    "cumsum_between_ops": ("rows", False),   # x * y + 1 fused into one FMA
}



def _loops(exe):
    """(scan loops, loops over the dimensions minor to a major scan
    dimension, window loops) in the emitted kernels."""
    text = exe.ir_text
    return (len(re.findall(r"^scan\.header:", text, re.M)),
            len(re.findall(r"^col\d*\.header:", text, re.M)),
            len(re.findall(r"^w\d+\.header:", text, re.M)))


def test_every_program_is_listed():
    assert sorted(PROGRAMS) == NAMES


@pytest.mark.parametrize("name", NAMES)
def test_jax_scan_runs_as_a_running_fold(name):
    text, args, want = program(DATA, name)
    exe = xla.compile(parse_hlo_module(text), "cpu")
    order, exact = PROGRAMS[name]
    windows = [i for i in exe.module.all_instructions() if i.opcode == "reduce-window"]
    assert windows and all(prefix_scan(w) is not None for w in windows)
    scans, cols, window_loops = _loops(exe)
    assert scans == len(windows) and window_loops == 0
    assert (cols > 0) == (order == "steps")
    got = [np.asarray(g) for g in xla.tools.arrays.flatten_result(exe.execute(*args))]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        if w.dtype.kind in "iu":
            np.testing.assert_array_equal(g, w)   # wrapping products too
        else:
            # XLA:CPU folds in another grouping: within a few units in the
            # last place of the running sums' magnitude.
            eps = float(ml_dtypes.finfo(w.dtype).eps)
            g64, w64 = g.astype(np.float64), w.astype(np.float64)
            scale = np.maximum.accumulate(np.abs(w64), axis=-1).max()
            np.testing.assert_allclose(g64, w64, rtol=4 * eps, atol=64 * eps * scale)
    if exact:
        ref = run(text, args, "interpreter")
        for g, r in zip(got, ref):
            assert g.tobytes() == np.asarray(r, g.dtype).tobytes()


def _window_module(dims, window, dtype="f32", layout=None, init="0", reducer="add",
                   variadic=False, out_dims=None):
    lay = "{" + ",".join(map(str, layout)) + "}" if layout else ""
    shape = f"{dtype}[{','.join(map(str, dims))}]{lay}"
    out = f"{dtype}[{','.join(map(str, out_dims or dims))}]{lay}"
    if variadic:   # the running maximum and the index where it was first reached
        ishape = f"s32[{','.join(map(str, dims))}]{lay}"
        return f"""HloModule m
r {{
  v0 = {dtype}[] parameter(0)
  i0 = s32[] parameter(1)
  v1 = {dtype}[] parameter(2)
  i1 = s32[] parameter(3)
  gt = pred[] compare(v1, v0), direction=GT
  v = {dtype}[] select(gt, v1, v0)
  i = s32[] select(gt, i1, i0)
  ROOT t = ({dtype}[], s32[]) tuple(v, i)
}}
ENTRY e {{
  x = {shape} parameter(0)
  k = {ishape} parameter(1)
  c = {dtype}[] constant(-inf)
  z = s32[] constant(-1)
  ROOT w = ({shape}, {ishape}) reduce-window(x, k, c, z), window={{{window}}}, to_apply=r
}}
"""
    return f"""HloModule m
r {{
  a = {dtype}[] parameter(0)
  b = {dtype}[] parameter(1)
  ROOT s = {dtype}[] {reducer}(a, b)
}}
ENTRY e {{
  x = {shape} parameter(0)
  c = {dtype}[] constant({init})
  ROOT w = {out} reduce-window(x, c), window={{{window}}}, to_apply=r
}}
"""


def _expected(x, axis, init, reverse=False):
    """The in-order fold of each window, float64."""
    x = np.moveaxis(x.astype(np.float64), axis, -1)
    out = np.empty_like(x)
    n = x.shape[-1]
    for i in range(n):
        part = x[..., i:] if reverse else x[..., :i + 1]
        out[..., i] = init + part.sum(axis=-1)
    return np.moveaxis(out, -1, axis)


# (dims, layout, window, axis, reverse, loop order)
SCANS = [
    # init 2.5 is combined once per window (padding is skipped, not folded)
    ((6, 40), None, "size=1x40 pad=0_0x39_0", 1, False, "rows"),
    # a window longer than the dimension, its padding as long
    ((6, 40), None, "size=1x64 pad=0_0x63_0", 1, False, "rows"),
    # column-major: dimension 1 is the major one, each step a column
    ((33, 20), (0, 1), "size=1x20 pad=0_0x19_0", 1, False, "steps"),
    # column-major, scanning the minor dimension 0
    ((33, 20), (0, 1), "size=33x1 pad=32_0x0_0", 0, False, "rows"),
    # every dimension but the scanned one of size 1: one row
    ((1, 300, 1), None, "size=1x300x1 pad=0_0x299_0x0_0", 1, False, "rows"),
    # reverse on floats: regrouped from the end
    ((5, 70), None, "size=1x70 pad=0_0x0_69", 1, True, "rows"),
]


@pytest.mark.parametrize("dims,layout,window,axis,reverse,order", SCANS)
def test_hand_written_scan(dims, layout, window, axis, reverse, order):
    text = _window_module(dims, window, layout=layout, init="2.5")
    x = np.random.default_rng(1).integers(-8, 9, dims).astype(np.float32) / 4
    exe = xla.compile(parse_hlo_module(text), "cpu")
    (w,) = [i for i in exe.module.all_instructions() if i.opcode == "reduce-window"]
    assert prefix_scan(w) == (axis, reverse)
    scans, cols, window_loops = _loops(exe)
    assert scans == 1 and window_loops == 0 and (cols > 0) == (order == "steps")
    got = np.asarray(exe.execute(x))
    # quarters: every partial sum is exact, so any grouping gives these
    np.testing.assert_array_equal(got, _expected(x, axis, 2.5, reverse))
    if not reverse:
        ref = np.asarray(run(text, [x], "interpreter")[0])
        assert got.tobytes() == ref.tobytes()


def test_forward_float_scan_has_the_in_order_bits():
    # values whose sums round: the fold must be out[i - 1] + x[i], in order
    x = np.random.default_rng(2).standard_normal((7, 500)).astype(np.float32) * 1e3
    x[:, ::3] *= 1e-6
    text = _window_module((7, 500), "size=1x500 pad=0_0x499_0")
    got = np.asarray(xla.compile(text, "cpu").execute(x))
    want = np.empty_like(x)
    acc = np.zeros(7, np.float32)
    for i in range(500):
        acc = acc + x[:, i]
        want[:, i] = acc
    assert got.tobytes() == want.tobytes()


def test_variadic_forward_scan():
    # running argmax: the fold of (value, index) pairs, a tuple accumulator
    rng = np.random.default_rng(3)
    x = rng.integers(0, 20, (4, 90)).astype(np.float32)
    k = np.broadcast_to(np.arange(90, dtype=np.int32), (4, 90)).copy()
    text = _window_module((4, 90), "size=1x90 pad=0_0x89_0", variadic=True)
    exe = xla.compile(parse_hlo_module(text), "cpu")
    assert _loops(exe)[0] == 1 and _loops(exe)[2] == 0
    v, i = (np.asarray(a) for a in xla.tools.arrays.flatten_result(exe.execute(x, k)))
    np.testing.assert_array_equal(v, np.maximum.accumulate(x, axis=1))
    first = np.array([[int(np.argmax(row[:j + 1])) for j in range(90)] for row in x])
    np.testing.assert_array_equal(i, first)


@pytest.mark.parametrize("dtype,reducer,reverse", [
    ("s32", "add", True), ("s32", "multiply", True), ("s32", "maximum", True),
    ("s32", "subtract", False), ("f32", "subtract", False), ("f32", "add", True),
])
def test_reverse_scan_needs_an_order_free_reducer(dtype, reducer, reverse):
    text = _window_module((3, 30), "size=1x30 pad=0_0x0_29", dtype=dtype, reducer=reducer,
                          init="1")
    (w,) = [i for i in parse_hlo_module(text).all_instructions() if i.opcode == "reduce-window"]
    assert (prefix_scan(w) is not None) == reverse
    x = np.random.default_rng(4).integers(-3, 4, (3, 30)).astype(dtype.replace("s", "int").replace("f", "float"))
    got = np.asarray(xla.compile(text, "cpu").execute(x))
    ref = np.asarray(run(text, [x], "interpreter")[0])
    assert got.tobytes() == ref.tobytes()   # integers and exact small float sums


@pytest.mark.parametrize("window,out_dims", [
    ("size=1x20 pad=0_0x19_0", (3, 40)),               # a sliding window, not the whole prefix
    ("size=1x40 stride=1x2 pad=0_0x39_0", (3, 20)),    # strided
    ("size=1x40 pad=0_0x39_0 rhs_dilate=1x2", (3, 1)),
    ("size=1x40 pad=0_0x39_0 lhs_dilate=1x2", (3, 79)),
    ("size=2x40 pad=1_0x39_0", (3, 40)),               # windows along two dimensions
    ("size=1x40 pad=0_0x38_1", (3, 40)),               # the padding split
])
def test_other_windows_keep_the_window_loop(window, out_dims):
    text = _window_module((3, 40), window, out_dims=out_dims)
    (w,) = [i for i in parse_hlo_module(text).all_instructions() if i.opcode == "reduce-window"]
    assert prefix_scan(w) is None
    x = np.random.default_rng(5).integers(-8, 9, (3, 40)).astype(np.float32)
    exe = xla.compile(text, "cpu")
    assert _loops(exe)[0] == 0
    got = np.asarray(exe.execute(x))
    ref = np.asarray(run(text, [x], "interpreter")[0])
    assert got.tobytes() == ref.tobytes()
