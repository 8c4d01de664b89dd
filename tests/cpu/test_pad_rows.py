"""Pads of the minor dimension as one kernel of rows (emit_pad.py): each
row the low padding, the operand's row at unclamped consecutive indices (a
vector loop), the high padding; rows in an outer dimension's padding the
padding value throughout. ``jnp.pad(jnp.diff(x, axis=1), ((0, 0), (1,
0)))`` of f32[4096, 1024] 1.8-2.2 -> 0.21 ms (XLA:CPU 0.38-0.8 in its good
runs). JAX-lowered programs (fixtures/pad_rows_jax.npz, from
gen_pad_rows_jax.py) against XLA:CPU's results and the interpreter, and
which code runs."""
import numpy as np
import pytest

import xla

from lapack_fixtures import cpu_and_interpreter, load, program, run

DATA, NAMES = load("pad_rows_jax.npz")
# jax lowers edge mode to concatenates of slices, not a pad.
ROWS = set(NAMES) - {"edge_mode"}


def test_fixture_has_every_program():
    assert NAMES == sorted(["diff_padded", "both_ends_constant", "outer_and_minor", "bf16",
                            "s32_value", "fused_exp", "edge_mode"])


@pytest.mark.parametrize("name", NAMES)
def test_matches_jax_and_the_interpreter(name):
    ((got, w, ref),) = cpu_and_interpreter(*program(DATA, name))
    # Exact but for the fused exponential (fast_math.exp: within an ulp).
    for other in (ref, w):
        np.testing.assert_allclose(got.astype(np.float64), other.astype(np.float64), rtol=1e-6,
                                   atol=1e-6)
    if name != "fused_exp":
        np.testing.assert_array_equal(got.astype(np.float64), ref.astype(np.float64))


@pytest.mark.parametrize("name", sorted(ROWS))
def test_runs_as_rows(name):
    text, _, _ = program(DATA, name)
    exe = xla.compile(text, "cpu")
    assert "operand.header" in exe.ir_text


def test_small_and_interior_pads_keep_the_generator():
    small = """HloModule m
ENTRY e {
  x = f32[3,5] parameter(0)
  z = f32[] constant(0)
  ROOT p = f32[3,9] pad(x, z), padding=0_0x2_2
}"""
    interior = """HloModule m
ENTRY e {
  x = f32[64,100] parameter(0)
  z = f32[] constant(0)
  ROOT p = f32[64,201] pad(x, z), padding=0_0x1_1_1
}"""
    for text, shape in ((small, (3, 5)), (interior, (64, 100))):
        exe = xla.compile(text, "cpu")
        x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
        (ref,) = run(text, [x], "interpreter")
        np.testing.assert_array_equal(np.asarray(exe.execute(x)), ref)
        assert "operand.header" not in exe.ir_text
