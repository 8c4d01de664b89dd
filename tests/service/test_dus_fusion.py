"""dynamic-update-slice-fusion (xla/service/dus_fusion.py): a DUS joins the
loop fusion that computes its update, unless that fusion has other users or
reads the array being updated; results stay the interpreter's, on the
module as written and compiled for the CPU."""
import numpy as np
import pytest
from pass_test_util import assert_same_results, run_pass

import xla
from xla.hlo.parser import parse_hlo_module
from xla.service.dus_fusion import DynamicUpdateSliceFusion
from xla.service.instruction_fusion import InstructionFusion

# x[1:-1] = 0.5 * (y[:-2] + y[2:]): the update reads y only.
STENCIL = """HloModule stencil

ENTRY main {
  x = f32[64] parameter(0)
  y = f32[64] parameter(1)
  a = f32[62] slice(y), slice={[0:62]}
  b = f32[62] slice(y), slice={[2:64]}
  s = f32[62] add(a, b)
  half = f32[] constant(0.5)
  hb = f32[62] broadcast(half), dimensions={}
  u = f32[62] multiply(s, hb)
  x2 = f32[64] negate(x)
  one = s32[] constant(1)
  ROOT d = f32[64] dynamic-update-slice(x2, u, one)
}
"""


def fused(text):
    module, _ = run_pass(InstructionFusion(), text)
    changed = DynamicUpdateSliceFusion().run(module)
    for comp in module.computations:
        comp.sort_post_order()
    xla.verify_module(module)
    return module, changed


def roots(module):
    return [i.attr("calls").root_instruction.opcode for i in module.entry.instructions
            if i.opcode == "fusion"]


def cpu_matches_interpreter(text, *args):
    want = xla.compile(parse_hlo_module(text), "interpreter").execute(*args)
    got = xla.compile(parse_hlo_module(text), "cpu").execute(*args)
    for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
        np.testing.assert_allclose(g, w, rtol=1e-6)


def args(*shapes, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.random(s).astype(np.float32) for s in shapes]


def test_the_dus_becomes_the_root_of_its_updates_fusion():
    module, changed = fused(STENCIL)
    assert changed
    assert "dynamic-update-slice" in roots(module)
    assert not any(i.opcode == "dynamic-update-slice" for i in module.entry.instructions)
    assert_same_results(STENCIL, module)
    cpu_matches_interpreter(STENCIL, *args(64, 64))


@pytest.mark.parametrize("edit,why", [
    (("a = f32[62] slice(y)", "a = f32[62] slice(x2)"), "the update reads the array it updates"),
    # (x2 an exponential: never duplicated into the update's fusion)
    (("ROOT d = f32[64] dynamic-update-slice(x2, u, one)",
      "d = f32[64] dynamic-update-slice(x2, u, one)\n  u2 = f32[62] add(u, u)\n"
      "  ROOT t = (f32[64], f32[62]) tuple(d, u2)"), "the update has another user"),
])
def test_what_stays_a_separate_dus(edit, why):
    text = STENCIL.replace(*edit).replace("x2 = f32[64] negate(x)", "x2 = f32[64] exponential(x)")
    module, changed = fused(text)
    assert not changed, why
    assert any(i.opcode == "dynamic-update-slice" for i in module.entry.instructions)
    assert_same_results(text, module)
    cpu_matches_interpreter(text, *args(64, 64))


def test_clamped_starts_inside_the_fused_kernel():
    text = STENCIL.replace("one = s32[] constant(1)", "one = s32[] parameter(2)")
    module, changed = fused(text)
    assert changed
    for start in (0, 1, 2, 50, -7):
        cpu_matches_interpreter(text, *args(64, 64), np.int32(start))
