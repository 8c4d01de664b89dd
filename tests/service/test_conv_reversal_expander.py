"""ConvolutionReversalExpander: window reversal as an explicit reverse of
the kernel; same results (interpreter before and after), and the CPU then
runs reversed convolutions through the runtime's conv2d."""
import numpy as np

from pass_test_util import assert_same_results, opcodes, run_pass

import xla
from xla.hlo.parser import parse_hlo_module
from xla.service.conv_reversal_expander import ConvolutionReversalExpander

TEXT = """HloModule m

ENTRY e {
  x = f32[2,6,5,3] parameter(0)
  w = f32[3,2,3,4] parameter(1)
  ROOT c = f32[2,6,4,4] convolution(x, w), window={size=3x2 pad=1_1x0_0 rhs_reversal=1x0}, dim_labels=b01f_01io->b01f
}
"""


def test_reversal_becomes_a_reverse_of_the_kernel():
    module, changed = run_pass(ConvolutionReversalExpander(), TEXT)
    assert changed
    assert "reverse" in opcodes(module)
    (conv,) = [i for i in module.entry.instructions if i.opcode == "convolution"]
    assert not any(d.window_reversal for d in conv.attr("window").dimensions)
    (rev,) = [i for i in module.entry.instructions if i.opcode == "reverse"]
    assert tuple(rev.attr("dimensions")) == (0,)
    assert_same_results(TEXT, module, rtol=1e-5, atol=1e-5)
    _, changed = run_pass(ConvolutionReversalExpander(), TEXT.replace(" rhs_reversal=1x0", ""))
    assert changed is False


def test_the_cpu_runs_reversed_convolutions_in_the_runtime():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 6, 5, 3)).astype(np.float32)
    w = rng.standard_normal((3, 2, 3, 4)).astype(np.float32)
    exe = xla.compile(parse_hlo_module(TEXT), "cpu")
    assert "__xla_cpu_conv2d_f32" in exe.ir_text
    want = np.asarray(xla.compile(parse_hlo_module(TEXT), "interpreter").execute(x, w))
    np.testing.assert_allclose(np.asarray(exe.execute(x, w)), want, rtol=1e-5, atol=1e-5)
