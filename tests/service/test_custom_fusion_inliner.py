"""CustomFusionInliner: kCustom fusions become their computation's instructions."""
import numpy as np
from pass_test_util import assert_same_results, opcodes, run_pass

from xla import runtime
from xla.hlo.parser import parse_hlo_module
from xla.service.custom_fusion_inliner import CustomFusionInliner

YNN = """HloModule m

%fused_dot (p0: f32[2,3], p1: f32[3,4]) -> f32[2,4] {
  %p0 = f32[2,3]{1,0} parameter(0)
  %p1 = f32[3,4]{1,0} parameter(1)
  ROOT %d = f32[2,4]{1,0} dot(%p0, %p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}

%fused_neg (q: f32[2,4]) -> f32[2,4] {
  %q = f32[2,4]{1,0} parameter(0)
  ROOT %n = f32[2,4]{1,0} negate(%q)
}

ENTRY %main (x: f32[2,3], y: f32[3,4]) -> f32[2,4] {
  %x = f32[2,3]{1,0} parameter(0)
  %y = f32[3,4]{1,0} parameter(1)
  %f = f32[2,4]{1,0} fusion(%x, %y), kind=kCustom, calls=%fused_dot, backend_config={"outer_dimension_partitions":[],"fusion_config":{"kind":"__ynn_fusion"}}
  ROOT %g = f32[2,4]{1,0} fusion(%f), kind=kLoop, calls=%fused_neg
}
"""


def test_inlines_custom_fusion_only():
    module, changed = run_pass(CustomFusionInliner(), YNN)
    assert changed
    ops = opcodes(module)
    assert "dot" in ops and ops.count("fusion") == 1
    assert [c.name for c in module.computations if "fused_dot" in c.name] == []
    kinds = [i.attr("kind") for i in module.entry.instructions if i.opcode == "fusion"]
    assert kinds == ["kLoop"]
    assert_same_results(YNN, module)
    assert not CustomFusionInliner().run(module)


def test_no_custom_fusion_is_no_change():
    text = YNN.replace("kind=kCustom", "kind=kOutput")
    module, changed = run_pass(CustomFusionInliner(), text)
    assert not changed


def test_cpu_compiles_custom_fusion():
    executable = runtime.compile(parse_hlo_module(YNN), "cpu")
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    y = np.arange(12, dtype=np.float32).reshape(3, 4) / 7
    np.testing.assert_allclose(executable.execute(x, y), -(x @ y), rtol=1e-6)
