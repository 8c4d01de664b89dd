"""The CPU pipeline's last steps before scheduling (xla/backends/cpu/pipeline.py):
a reshape left between fusions and library calls that moves no byte is a
bitcast of its operand's buffer (``reshape-to-bitcast``), not a copy."""
import numpy as np

import xla
from xla.hlo.parser import parse_hlo_module

# An attention block's projection as JAX lowers it: x[4,128,256] flattened
# to [512,256] for the matmul, the product reshaped back as the result.
PROJECTION = """HloModule m
ENTRY e {
  x = f32[4,128,256]{2,1,0} parameter(0)
  w = f32[256,256]{1,0} parameter(1)
  r = f32[512,256]{1,0} reshape(x)
  d = f32[512,256]{1,0} dot(r, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT out = f32[4,128,256]{2,1,0} reshape(d)
}
"""


def test_row_major_reshapes_around_a_matmul_are_bitcasts():
    exe = xla.compile(parse_hlo_module(PROJECTION), "cpu")
    opcodes = [i.opcode for i in exe.module.entry.instructions]
    assert "reshape" not in opcodes
    assert opcodes.count("bitcast") == 2
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 128, 256)).astype(np.float32)
    w = rng.standard_normal((256, 256)).astype(np.float32)
    want = (x.reshape(512, 256).astype(np.float64) @ w).reshape(4, 128, 256)
    np.testing.assert_allclose(np.asarray(exe.execute(x, w)), want, rtol=1e-4, atol=1e-3)


def test_a_reshape_that_reorders_bytes_stays_a_copy():
    # The operand is column-major: flattening it moves elements.
    text = """HloModule m
ENTRY e {
  x = f32[3,4]{0,1} parameter(0)
  ROOT r = f32[12]{0} reshape(x)
}
"""
    exe = xla.compile(parse_hlo_module(text), "cpu")
    assert "bitcast" not in [i.opcode for i in exe.module.entry.instructions]
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    np.testing.assert_array_equal(np.asarray(exe.execute(x)), x.reshape(12))
