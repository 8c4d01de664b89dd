"""Batches of tiny matrix products (emit_small_gemm.tiny_products): at most
three result columns each (3x3 rotations, 4x4 transforms of points, 2x2
products, matrix-vector products) run as the element generator's loop
over the whole result, each element its short sum and the loop over the
batch vectorized, instead of one tiled product per batch element:
einsum('nij,nj->ni') over 1M 4x4 matrices 12.8 -> 2.8 ms (XLA:CPU 4.8).
JAX-lowered programs (fixtures/tiny_products_jax.npz, from
gen_tiny_products_jax.py) against XLA:CPU's results and the interpreter,
and which code computes them."""
import numpy as np
import pytest

import xla
from xla.backends.cpu.emit_small_gemm import tiny_products
from xla.hlo.parser import parse_hlo_module

from lapack_fixtures import cpu_and_interpreter, load, program

DATA, NAMES = load("tiny_products_jax.npz")
# Products with more than three columns keep the tiled kernel.
LOOPS = {"rotations_3x3", "transform_points_4x4", "products_2x2_f64", "contraction_3x16x3",
         "transposed_lhs", "complex_2x2", "int32_matvec", "bf16_matvec_f32_acc",
         "two_batch_dims"}


def test_fixture_has_every_program():
    assert set(NAMES) == LOOPS


@pytest.mark.parametrize("name", NAMES)
def test_matches_jax_and_the_interpreter(name):
    ((got, w, ref),) = cpu_and_interpreter(*program(DATA, name))
    if w.dtype.kind == "i":
        np.testing.assert_array_equal(got, w)
        np.testing.assert_array_equal(got, ref)
        return
    tol = 1e-12 if w.dtype in (np.float64, np.complex128) else 1e-5
    np.testing.assert_allclose(got, w, rtol=tol, atol=tol)
    np.testing.assert_allclose(got, ref, rtol=tol, atol=tol)


@pytest.mark.parametrize("name", NAMES)
def test_runs_as_one_loop_over_the_batch(name):
    text, _, _ = program(DATA, name)
    exe = xla.compile(text, "cpu")
    dots = [i for i in exe.module.all_instructions() if i.opcode == "dot"]
    assert dots and all(tiny_products(d) for d in dots)
    # The generator's sum loop (k0), no call of the runtime's GEMMs.
    assert "k0.header" in exe.ir_text
    assert "gemm" not in exe.ir_text and "matmul" not in exe.ir_text


@pytest.mark.parametrize("m,k,n,want", [(3, 3, 3, True), (8, 8, 1, True), (64, 8, 1, True),
                                        (4, 4, 4, False), (3, 17, 3, False),
                                        (65, 2, 1, False), (1, 8, 8, False)])
def test_which_products_are_tiny(m, k, n, want):
    text = f"""HloModule m
ENTRY e {{
  a = f32[100,{m},{k}] parameter(0)
  b = f32[100,{k},{n}] parameter(1)
  ROOT d = f32[100,{m},{n}] dot(a, b), lhs_batch_dims={{0}}, lhs_contracting_dims={{2}}, rhs_batch_dims={{0}}, rhs_contracting_dims={{1}}
}}"""
    assert tiny_products(parse_hlo_module(text).entry.root_instruction) == want
