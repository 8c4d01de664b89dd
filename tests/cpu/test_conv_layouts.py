"""Convolutions of every dim_labels run through the runtime's conv2d: the
CPU's layout assignment copies operands into NHWC/HWIO and the result out
of NHWC, or for a kernel gradient into the order of conv2d_filter
(xla/backends/cpu/layout_constraints.py). A JAX-lowered conv net training
step (tests/cpu/fixtures/cnn_train.*, gen_cnn_train.py) matches XLA:CPU's
results with every convolution, the gradients' included, in the runtime."""
import pathlib

import numpy as np
import pytest

import xla
from xla.hlo.parser import parse_hlo_module

FIXTURES = pathlib.Path(__file__).resolve().parent / "fixtures"


def test_conv_net_training_step_runs_every_convolution_in_the_runtime():
    text = (FIXTURES / "cnn_train.hlo").read_text()
    data = np.load(FIXTURES / "cnn_train.npz")
    args = [data[f"arg{i}"] for i in range(5)]
    exe = xla.compile(parse_hlo_module(text), "cpu")
    convs = [i for i in exe.module.entry.instructions if i.opcode == "convolution"]
    assert len(convs) == 5
    # two layers and the strided layer's input gradient; the two kernel gradients
    assert exe.ir_text.count("call void @\"__xla_cpu_conv2d_f32\"") == 3
    assert exe.ir_text.count("call void @\"__xla_cpu_conv2d_filter_f32\"") == 2
    for k, out in enumerate(exe.execute(*args)):
        np.testing.assert_allclose(np.asarray(out), data[f"out{k}"], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("labels,lhs,rhs,out,window,runtime", [
    # A kernel gradient: batch and feature swapped on the input.
    ("f01b_i01o->01bf", (4, 9, 9, 3), (4, 9, 9, 5), (3, 3, 3, 5), "size=9x9 pad=1_1x1_1",
     "conv2d_filter"),
    # The same in NCHW order (PyTorch-style arrays): copies into conv2d_filter's order.
    ("fb01_io01->bf01", (4, 3, 9, 9), (4, 5, 9, 9), (3, 5, 3, 3), "size=9x9 pad=1_1x1_1",
     "conv2d_filter"),
    # An input gradient of a strided layer: kernel in 01oi, lhs dilation.
    ("b01f_01oi->b01f", (2, 5, 5, 6), (3, 3, 4, 6), (2, 10, 10, 4),
     "size=3x3 pad=2_1x2_1 lhs_dilate=2x2", "conv2d"),
    # NCHW / OIHW, as PyTorch-style modules write them.
    ("bf01_oi01->bf01", (2, 3, 8, 8), (6, 3, 3, 3), (2, 6, 6, 6), "size=3x3", "conv2d"),
])
def test_dim_labels_in_the_runtime(labels, lhs, rhs, out, window, runtime):
    s = lambda d: ",".join(map(str, d))  # noqa: E731
    text = (f"HloModule m\nENTRY e {{\n  x = f32[{s(lhs)}] parameter(0)\n"
            f"  w = f32[{s(rhs)}] parameter(1)\n"
            f"  ROOT c = f32[{s(out)}] convolution(x, w), window={{{window}}}, "
            f"dim_labels={labels}\n}}\n")
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal(lhs).astype(np.float32), rng.standard_normal(rhs).astype(np.float32)
    exe = xla.compile(parse_hlo_module(text), "cpu")
    assert f"call void @\"__xla_cpu_{runtime}_f32\"" in exe.ir_text
    want = np.asarray(xla.compile(parse_hlo_module(text), "interpreter").execute(x, w))
    np.testing.assert_allclose(np.asarray(exe.execute(x, w)), want, rtol=1e-4, atol=1e-4)
