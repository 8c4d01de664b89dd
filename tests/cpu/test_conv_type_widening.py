"""bf16, f16 and narrow-integer convolutions on the CPU run in f32 or f64
through the runtime's conv2d (``convolution-type-widening``, with the CPU's
rule ``layout_constraints.widened_conv2d``), s8 x s8 -> s32 ones as an s8
im2col matrix and the runtime's s8 product (``convolution-im2col`` with
``native``), and give XLA:CPU's results:
JAX-lowered programs with jax's arguments and results
(fixtures/narrow_convs_jax.npz, written by gen_narrow_convs_jax.py)."""
import ml_dtypes
import numpy as np
import pytest

import xla
from lapack_fixtures import load, program
from xla.hlo.parser import parse_hlo_module
from xla.tools.arrays import flatten_result

DATA, NAMES = load("narrow_convs_jax.npz")

# program: (conv2d calls in f32, in f64; kernel-gradient calls in f32, of
# depthwise kernel gradients in f32; s8 products)
RUNTIME_CALLS = {
    "bf16_same": (1, 0, 0, 0, 0),
    "bf16_strided_groups": (1, 0, 0, 0, 0),
    "bf16_to_f32": (1, 0, 0, 0, 0),
    "bf16_grads": (2, 0, 1, 0, 0),   # the layer and its input gradient; the kernel gradient
    "bf16_depthwise_grads": (2, 0, 0, 1, 0),
    "f16_conv1d_dilated": (1, 0, 0, 0, 0),
    "f16_nchw": (1, 0, 0, 0, 0),
    # s8 x s8 -> s32: im2col in s8 and the runtime's s8 product, not widened
    "s8_to_s32": (0, 0, 0, 0, 1),
    "s8_to_s32_deep": (0, 0, 0, 0, 1),
    "u8_to_s32": (1, 0, 0, 0, 0),
}


def test_every_program_is_listed():
    assert sorted(RUNTIME_CALLS) == NAMES


@pytest.mark.parametrize("name", NAMES)
def test_narrow_convolution_runs_in_the_runtime(name):
    text, args, want = program(DATA, name)
    exe = xla.compile(parse_hlo_module(text), "cpu")
    f32, f64, filt, depthwise_filt, s8 = RUNTIME_CALLS[name]
    assert exe.ir_text.count('call void @"__xla_cpu_conv2d_f32"') == f32
    assert exe.ir_text.count('call void @"__xla_cpu_conv2d_f64"') == f64
    assert exe.ir_text.count('call void @"__xla_cpu_conv2d_filter_f32"') == filt
    assert exe.ir_text.count('call void @"__xla_cpu_conv2d_depthwise_filter_f32"') == \
        depthwise_filt
    assert exe.ir_text.count('call void @"__xla_cpu_matmul_s8_s32"') == s8
    # no convolution is left to the generator's loops
    assert all(i.operands[0].shape.element_type.text in ("f32", "f64")
               for i in exe.module.all_instructions() if i.opcode == "convolution")
    got = [np.asarray(g) for g in flatten_result(exe.execute(*args))]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        if w.dtype.kind in "iu":
            np.testing.assert_array_equal(g, w)   # exact: no partial sum rounds
        else:
            # f32 sums of exact products rounded once, in another order than
            # XLA:CPU's: within a unit in the last place of the result type
            # (and of the sums' cancellation).
            eps = float(ml_dtypes.finfo(w.dtype).eps)
            g64, w64 = g.astype(np.float64), w.astype(np.float64)
            np.testing.assert_allclose(g64, w64, rtol=eps, atol=eps * np.abs(w64).max())
