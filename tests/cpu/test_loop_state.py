"""Loop state updated in place by a multi-output loop fusion, and complex
absolute values without a libm call.

A while body that updates its state elementwise (Mandelbrot's
``z = z * z + c; n += |z| < 2``, an oscillator's ``x, v``) is one loop
fusion with a tuple of outputs. Buffer assignment lets each output take
the slot of an operand it reads (``share_in_place``, ``can_update_in_place``
with a shape index): the kernel computes the outputs one after another at
each element and keeps every element it loaded for the outputs after it,
so nothing is copied back into the loop state per iteration (the 512 x 512
Mandelbrot loop below copied 3 MB per iteration: 20 ms -> 2.2 ms with
both changes, XLA:CPU 3.4 ms). |z| is ``fast_math.hypot`` (vectorizable;
libm's hypotf kept the loop scalar). JAX-lowered programs
(fixtures/loop_state_jax.npz, from gen_loop_state_jax.py) against XLA:CPU's
results, hand-written bodies against NumPy, and the buffer assignment."""
import numpy as np
import pytest

import xla

from lapack_fixtures import load, program, run
from test_fast_math import _ordered

DATA, NAMES = load("loop_state_jax.npz")


def test_fixture_has_every_program():
    assert NAMES == sorted(["mandelbrot_c64", "oscillator_f32", "damped_f64", "abs_c64",
                            "abs_c128", "angle_c64", "arctan2_f64"])


@pytest.mark.parametrize("name", ["mandelbrot_c64", "oscillator_f32", "damped_f64"])
def test_loops_match_jax(name):
    text, args, want = program(DATA, name)
    got = run(text, args, "cpu")
    assert [(g.dtype, g.shape) for g in got] == [(w.dtype, w.shape) for w in want]
    for g, w in zip(got, want):
        if w.dtype.kind == "i":
            np.testing.assert_array_equal(g, w)
        else:
            np.testing.assert_allclose(g, w, rtol=1e-5 if w.dtype.itemsize <= 8 else 1e-12,
                                       atol=1e-6)


def _body_fusions(exe):
    """(the while instruction, the multi-output fusions of its body)."""
    (w,) = [i for i in exe.module.all_instructions() if i.opcode == "while"]
    body = w.attr("body")
    return w, [i for i in body.instructions if i.opcode == "fusion" and i.shape.is_tuple]


@pytest.mark.parametrize("name", ["mandelbrot_c64", "oscillator_f32", "damped_f64"])
def test_jax_loop_state_is_updated_in_place(name):
    text, _, _ = program(DATA, name)
    exe = xla.compile(text, "cpu")
    w, fusions = _body_fusions(exe)
    assert fusions, "the body's update is one multi-output fusion"
    a = exe.assignment
    root = w.attr("body").root_instruction
    for k, leaf in enumerate(root.operands):
        if leaf.opcode == "get-tuple-element" and leaf.operands[0] in fusions:
            out = a.buffer(leaf.operands[0], (leaf.attr("index"),))
            assert out.slot == a.buffer(w, (k,)).slot, f"state {k} is copied each iteration"


@pytest.mark.parametrize("name", ["abs_c64", "abs_c128"])
def test_complex_abs_matches_jax(name):
    text, (z,), (want,) = program(DATA, name)
    (got,) = run(text, [z], "cpu")
    # C99 (and NumPy, and the interpreter): |inf + NaN i| = inf; XLA:CPU
    # gives NaN for an infinite part beside a NaN one.
    inf_nan = (np.isinf(z.real) & np.isnan(z.imag)) | (np.isnan(z.real) & np.isinf(z.imag))
    assert inf_nan.sum() == 4 and np.all(got[inf_nan] == np.inf)
    # Within an ulp of the true value (NumPy's hypot a type wider, rounded).
    wide = np.longdouble if z.dtype == np.complex128 else np.float64
    with np.errstate(over="ignore"):
        exact = np.hypot(z.real.astype(wide), z.imag.astype(wide)).astype(got.dtype)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(exact))
    finite = np.isfinite(exact)
    np.testing.assert_array_equal(got[~finite & ~np.isnan(got)], exact[~finite & ~np.isnan(got)])
    assert _ulps(got[finite], exact[finite]).max() <= 1
    # jax's |z| is max * sqrt(1 + (min / max)^2), and XLA:CPU flushes
    # denormals to zero: within 2 ulps of ours where no part is a denormal.
    normal = ~inf_nan & ~_denormal(z.real) & ~_denormal(z.imag) & ~_denormal(want)
    np.testing.assert_array_equal(np.isnan(got[normal]), np.isnan(want[normal]))
    ok = normal & np.isfinite(want)
    assert _ulps(got[ok], want[ok]).max() <= 2


def _denormal(x):
    return (x != 0) & (np.abs(x) < np.finfo(x.dtype).tiny)


def _ulps(x, y):
    """The distance between finite floats in representable values."""
    return np.abs(_ordered(x) - _ordered(y))


@pytest.mark.parametrize("name", ["angle_c64", "arctan2_f64"])
def test_angles_match_jax(name):
    # fast_math.atan2: within an ulp of the true angle, C99's signed zeros
    # and infinities; jax's (XLA:CPU's) within two ulps of ours where
    # neither an argument nor the angle is a denormal (XLA:CPU flushes them
    # to zero).
    text, args, (want,) = program(DATA, name)
    (got,) = run(text, args, "cpu")
    y, x = (args[0].imag, args[0].real) if name == "angle_c64" else args
    wide = np.longdouble if got.dtype == np.float64 else np.float64
    with np.errstate(all="ignore"):
        exact = np.arctan2(y.astype(wide), x.astype(wide)).astype(got.dtype)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(exact))
    ok = ~np.isnan(exact)
    np.testing.assert_array_equal(np.signbit(got[ok]), np.signbit(exact[ok]))
    assert _ulps(np.abs(got[ok]), np.abs(exact[ok])).max() <= 1
    normal = ok & ~_denormal(x) & ~_denormal(y) & ~_denormal(exact)
    np.testing.assert_array_equal(np.signbit(got[normal]), np.signbit(want[normal]))
    assert _ulps(np.abs(got[normal]), np.abs(want[normal])).max() <= 2


@pytest.mark.parametrize("name,libm", [("abs_c64", "hypot"), ("angle_c64", "atan2")])
def test_complex_abs_and_angle_loops_have_no_call(name, libm):
    text, _, _ = program(DATA, name)
    ir = xla.compile(text, "cpu").optimized_ir_text
    assert libm not in ir


BODY = """HloModule state
fused {
  a = f32[4096] parameter(0)
  b = f32[4096] parameter(1)
  one = f32[] constant(1)
  ones = f32[4096] broadcast(one), dimensions={}
  ROOT t = (f32[4096], f32[4096]) tuple(OUTPUTS)
}
cond {
  s = (s32[], f32[4096], f32[4096]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(5)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  s = (s32[], f32[4096], f32[4096]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  a = f32[4096] get-tuple-element(s), index=1
  b = f32[4096] get-tuple-element(s), index=2
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  f = (f32[4096], f32[4096]) fusion(a, b), kind=kLoop, calls=fused
  f0 = f32[4096] get-tuple-element(f), index=0
  f1 = f32[4096] get-tuple-element(f), index=1
  ROOT r = (s32[], f32[4096], f32[4096]) tuple(i1, f0, f1)
}
ENTRY e {
  x = f32[4096] parameter(0)
  y = f32[4096] parameter(1)
  zero = s32[] constant(0)
  init = (s32[], f32[4096], f32[4096]) tuple(zero, x, y)
  w = (s32[], f32[4096], f32[4096]) while(init), condition=cond, body=body
  ROOT b = f32[4096] get-tuple-element(w), index=2
  ROOT_A
}"""


@pytest.mark.parametrize("outputs,step,in_place", [
    # Output 1 reads a after output 0 wrote a's slot: the element loaded
    # for output 0 is the one output 1 uses.
    ("a1, ba", lambda a, b: (a + 1, b * a), (True, True)),
    ("ab, ba", lambda a, b: (a + b, b * a), (True, True)),
    # Output 0 reads only b: it may not take a's slot (a copy), nor b's,
    # which output 1 still reads.
    ("b2, a1", lambda a, b: (b + b, a + 1), (False, False)),
    # Output 1 reads only a: b's slot keeps b until output 1 is stored.
    ("a1, a2", lambda a, b: (a + 1, a * a), (True, False)),
])
def test_hand_written_bodies(outputs, step, in_place):
    defs = {"a1": "a1 = f32[4096] add(a, ones)", "ba": "ba = f32[4096] multiply(b, a)",
            "ab": "ab = f32[4096] add(a, b)", "b2": "b2 = f32[4096] add(b, b)",
            "a2": "a2 = f32[4096] multiply(a, a)"}
    lines = "\n  ".join(defs[n] for n in outputs.split(", "))
    text = BODY.replace("ROOT t =", lines + "\n  ROOT t =").replace("OUTPUTS", outputs)
    text = text.replace("  ROOT_A\n", "")
    x = np.linspace(-1, 1, 4096, dtype=np.float32)
    y = np.linspace(0.5, 1.5, 4096, dtype=np.float32)
    exe = xla.compile(text, "cpu")
    a, b = x, y
    for _ in range(5):
        a, b = step(a, b)
    np.testing.assert_allclose(np.asarray(exe.execute(x, y)), b, rtol=1e-6)
    w, (f,) = _body_fusions(exe)
    got = tuple(exe.assignment.buffer(f, (k,)).slot == exe.assignment.buffer(w, (k + 1,)).slot
                for k in range(2))
    assert got == in_place
