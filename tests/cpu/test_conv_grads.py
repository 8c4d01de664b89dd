"""Convolutions and both of their gradients as jax.jit lowers them
(tests/cpu/fixtures/conv_grads.npz, gen_conv_grads.py): strides, uneven
and explicit padding, rhs and lhs dilation, feature groups, depthwise
layers, 1-D and NCHW, against XLA:CPU's results; each runs in the runtime's
conv2d or, for the kernel gradient, its conv2d_filter form, or for a
depthwise layer's, conv2d_depthwise_filter
(xla/backends/cpu/layout_constraints.py)."""
import pathlib

import numpy as np
import pytest

import xla
from xla.hlo.parser import parse_hlo_module

FIXTURES = pathlib.Path(__file__).resolve().parent / "fixtures"
DATA = np.load(FIXTURES / "conv_grads.npz")

# case: (calls of __xla_cpu_conv2d_f32, of __xla_cpu_conv2d_filter_f32, of
# __xla_cpu_conv2d_depthwise_filter_f32)
RUNTIME_CALLS = {
    "same_3x3": (2, 1, 0),
    "stride2_same": (2, 1, 0),
    "uneven_padding": (2, 1, 0),
    "rhs_dilation": (2, 1, 0),
    "lhs_dilation": (2, 1, 0),
    # the kernel gradient's three batch groups: one conv2d_filter each
    # (convolution-batch-group-splitter)
    "feature_groups": (2, 3, 0),
    "conv1d": (2, 1, 0),
    "nchw": (2, 1, 0),
    # depthwise layers, their input gradients and their kernel gradients
    # (batch groups of one entry: runtime/convolution_depthwise.cc)
    "depthwise": (2, 0, 1),
    "depthwise_stride2": (2, 0, 1),
    # 3-D: GEMMs over the windows (convolution-im2col), no convolution left
    "conv3d": (0, 0, 0),
}


@pytest.mark.parametrize("case", sorted(RUNTIME_CALLS))
def test_convolution_and_its_gradients_match_xla(case):
    text = str(DATA[f"{case}.hlo"])
    args = [DATA[f"{case}.{a}"] for a in ("x", "w", "ct")]
    exe = xla.compile(parse_hlo_module(text), "cpu")
    conv2d, conv2d_filter, depthwise_filter = RUNTIME_CALLS[case]
    assert exe.ir_text.count('call void @"__xla_cpu_conv2d_f32"') == conv2d
    assert exe.ir_text.count('call void @"__xla_cpu_conv2d_filter_f32"') == conv2d_filter
    assert exe.ir_text.count('call void @"__xla_cpu_conv2d_depthwise_filter_f32"') == \
        depthwise_filter
    for k, out in enumerate(exe.execute(*args)):
        want = DATA[f"{case}.out{k}"]
        np.testing.assert_allclose(np.asarray(out), want, rtol=1e-4,
                                   atol=1e-4 * max(1.0, float(np.abs(want).max())))


def test_kernel_gradient_of_jax_reads_its_operands_without_copies():
    # f01b_i01o->01bf over row-major arrays is conv2d_filter's order: layout
    # assignment adds no transposed copy of either operand or the result.
    text = str(DATA["stride2_same.hlo"])
    exe = xla.compile(parse_hlo_module(text), "cpu")
    kernel_grads = [i for i in exe.module.entry.instructions
                    if i.opcode == "convolution" and i.attr("dim_labels").to_text() == "f01b_i01o->01bf"]
    assert len(kernel_grads) == 1
    conv = kernel_grads[0]
    assert [o.opcode for o in conv.operands] == ["parameter", "parameter"]
    assert all(u.opcode == "tuple" for u in conv.users)


def test_3d_convolution_and_its_gradients_leave_no_convolution():
    exe = xla.compile(parse_hlo_module(str(DATA["conv3d.hlo"])), "cpu")
    opcodes = {i.opcode for i in exe.module.all_instructions()}
    assert "convolution" not in opcodes and "dot" in opcodes
