"""sub-byte-size-removal: E(n) leaves every layout (and the header's
entry_computation_layout); a bitcast that would reinterpret packed bytes
is refused; the module computes the same."""
import ml_dtypes
import numpy as np
import pytest

import xla

from xla import runtime
from xla.errors import UnimplementedError
from xla.hlo.evaluator.evaluator import Evaluator
from xla.hlo.parser import parse_hlo_module
from xla.service.sub_byte_normalization import SubByteNormalization

# XLA:CPU's optimized form of -w and convert(w) (jax 0.10.2, compile().as_text()).
BEFORE = """HloModule m, entry_computation_layout={(s4[4,4]{1,0:E(4)})->(s4[4,4]{1,0:E(4)}, f32[4,4]{1,0})}

%fused_computation (param_0.2: s4[4,4]) -> s4[4,4] {
  %param_0.2 = s4[4,4]{1,0:E(4)} parameter(0)
  %convert.3 = s8[4,4]{1,0} convert(%param_0.2)
  %neg.0 = s8[4,4]{1,0} negate(%convert.3)
  ROOT %convert.2 = s4[4,4]{1,0:E(4)} convert(%neg.0)
}

ENTRY %main.1 (w.1: s4[4,4]) -> (s4[4,4], f32[4,4]) {
  %w.1 = s4[4,4]{1,0:E(4)} parameter(0)
  %neg = s4[4,4]{1,0:E(4)} fusion(%w.1), kind=kLoop, calls=%fused_computation
  %f = f32[4,4]{1,0} convert(%w.1)
  ROOT %t = (s4[4,4]{1,0:E(4)}, f32[4,4]{1,0}) tuple(%neg, %f)
}

"""

AFTER = """HloModule m, entry_computation_layout={(s4[4,4]{1,0})->(s4[4,4]{1,0}, f32[4,4]{1,0})}

%fused_computation (param_0.2: s4[4,4]) -> s4[4,4] {
  %param_0.2 = s4[4,4]{1,0} parameter(0)
  %convert.3 = s8[4,4]{1,0} convert(%param_0.2)
  %neg.0 = s8[4,4]{1,0} negate(%convert.3)
  ROOT %convert.2 = s4[4,4]{1,0} convert(%neg.0)
}

ENTRY %main.1 (w.1: s4[4,4]) -> (s4[4,4], f32[4,4]) {
  %w.1 = s4[4,4]{1,0} parameter(0)
  %neg = s4[4,4]{1,0} fusion(%w.1), kind=kLoop, calls=%fused_computation
  %f = f32[4,4]{1,0} convert(%w.1)
  ROOT %t = (s4[4,4]{1,0}, f32[4,4]{1,0}) tuple(%neg, %f)
}

"""


def test_removes_element_sizes_and_is_idempotent():
    module = parse_hlo_module(BEFORE)
    assert SubByteNormalization().run(module) is True
    assert module.to_text() == AFTER
    assert SubByteNormalization().run(module) is False


def test_packed_module_runs_on_cpu_as_on_the_interpreter():
    w = np.arange(-8, 8).reshape(4, 4).astype(ml_dtypes.int4)
    cpu = runtime.compile(parse_hlo_module(BEFORE), "cpu").execute(w)
    ref = Evaluator().evaluate(parse_hlo_module(BEFORE), [w])
    want_neg = (-np.arange(-8, 8)).astype(ml_dtypes.int4).reshape(4, 4)  # -(-8) wraps to -8
    for out in (cpu, ref):
        assert out[0].dtype == np.dtype(ml_dtypes.int4)
        np.testing.assert_array_equal(out[0].astype(int), want_neg.astype(int))
        np.testing.assert_array_equal(out[1], w.astype(np.float32))


def test_keeps_tiling():
    text = "HloModule m\n\nENTRY e {\n  ROOT p = u4[256]{0:T(256)E(4)} parameter(0)\n}\n"
    module = parse_hlo_module(text)
    SubByteNormalization().run(module)
    assert "u4[256]{0:T(256)} parameter(0)" in module.to_text()


def test_a_bitcast_of_packed_bytes_is_refused():
    text = """HloModule m
ENTRY e {
  x = s4[8]{0:E(4)} parameter(0)
  ROOT b = u8[4]{0} bitcast(x)
}"""
    with pytest.raises(UnimplementedError, match=r"bitcast b reinterprets the packed s4\[8\]\{0:E\(4\)\}"):
        SubByteNormalization().run(parse_hlo_module(text))


def test_without_the_pass_the_cpu_refuses_a_packed_layout():
    with pytest.raises(UnimplementedError, match=r"packed layout s4\[4,4\]\{1,0:E\(4\)\}"):
        xla.compile(BEFORE, backend="cpu", debug_options="--xla_disable_hlo_passes=sub-byte-size-removal")
