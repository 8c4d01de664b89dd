"""HloMemoryScheduler: memory-minimizing order, operands before users."""
from pass_test_util import assert_same_results, run_pass

from xla.hlo.parser import parse_hlo_module
from xla.service.hlo_memory_scheduler import HloMemoryScheduler, peak_memory

# Both big buffers are defined before either is reduced; the scheduler
# finishes one chain (big -> reduce) before starting the other.
TWO_CHAINS = """
HloModule two_chains

add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}

ENTRY main {
  p = f32[] parameter(0)
  zero = f32[] constant(0)
  a = f32[1024] broadcast(p), dimensions={}
  b = f32[1024] broadcast(p), dimensions={}
  ra = f32[] reduce(a, zero), dimensions={0}, to_apply=add
  rb = f32[] reduce(b, zero), dimensions={0}, to_apply=add
  ROOT out = f32[] add(ra, rb)
}
"""


def names(module, comp=None):
    c = module.entry if comp is None else module.computation(comp)
    return [i.name for i in c.instructions]


def assert_operands_first(module):
    for comp in module.computations:
        seen = set()
        for instr in comp.instructions:
            for o in list(instr.operands) + list(instr.control_predecessors):
                assert id(o) in seen, f"{o.name} after its user {instr.name} in {comp.name}"
            seen.add(id(instr))


def test_finishes_one_chain_before_starting_the_other():
    before = parse_hlo_module(TWO_CHAINS)
    module, changed = run_pass(HloMemoryScheduler(), TWO_CHAINS)
    assert changed
    assert names(module) == ["p", "zero", "a", "ra", "b", "rb", "out"]
    # a (4096) + ra + b + rb (4 each) at most, against a and b together + ra.
    assert peak_memory(module.entry) == 4096 + 8 < peak_memory(before.entry) == 8192 + 4
    assert_operands_first(module)
    assert_same_results(TWO_CHAINS, module)


def test_marks_the_module_scheduled():
    module, _ = run_pass(HloMemoryScheduler(), TWO_CHAINS)
    assert module.is_scheduled
    assert module.to_text().startswith("HloModule two_chains, is_scheduled=true\n")
    # Scheduling a scheduled module again changes nothing.
    assert not HloMemoryScheduler().run(module)
    assert HloMemoryScheduler.name == "hlo-memory-scheduler"


def test_keeps_a_better_given_order():
    # Already optimal: the original order is kept exactly.
    text = """
HloModule chain

ENTRY main {
  p = f32[16] parameter(0)
  a = f32[16] exponential(p)
  b = f32[16] negate(a)
  ROOT c = f32[16] sine(b)
}
"""
    module, changed = run_pass(HloMemoryScheduler(), text)
    assert names(module) == ["p", "a", "b", "c"]
    assert changed  # the header changed


def test_schedules_called_computations_and_keeps_side_effect_order():
    text = """
HloModule loop

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

cond {
  cp = (s32[], f32[64]) parameter(0)
  ci = s32[] get-tuple-element(cp), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(ci, n), direction=LT
}

body {
  bp = (s32[], f32[64]) parameter(0)
  bi = s32[] get-tuple-element(bp), index=0
  bx = f32[64] get-tuple-element(bp), index=1
  one = s32[] constant(1)
  big = f32[64,64] broadcast(bx), dimensions={1}
  i1 = s32[] add(bi, one)
  fzero = f32[] constant(0)
  r = f32[64] reduce(big, fzero), dimensions={0}, to_apply=add
  ROOT t = (s32[], f32[64]) tuple(i1, r)
}

ENTRY main {
  x = f32[64] parameter(0)
  zero = s32[] constant(0)
  init = (s32[], f32[64]) tuple(zero, x)
  w = (s32[], f32[64]) while(init), condition=cond, body=body
  lo = f32[] constant(0)
  hi = f32[] constant(1)
  r1 = f32[4] rng(lo, hi), distribution=rng_uniform
  r2 = f32[4] rng(lo, hi), distribution=rng_uniform
  wi = s32[] get-tuple-element(w), index=0
  wx = f32[64] get-tuple-element(w), index=1
  ROOT out = (s32[], f32[64], f32[4], f32[4]) tuple(wi, wx, r1, r2)
}
"""
    module, _ = run_pass(HloMemoryScheduler(), text)
    assert_operands_first(module)
    entry = names(module)
    assert entry.index("r1") < entry.index("r2")
    assert_same_results(text, module)


def test_control_predecessors_are_respected():
    text = """
HloModule ctrl

ENTRY main {
  p = f32[256] parameter(0)
  small = f32[1] slice(p), slice={[0:1]}
  big = f32[256,256] broadcast(p), dimensions={1}, control-predecessors={small}
  ROOT t = (f32[1], f32[256,256]) tuple(small, big)
}
"""
    module, _ = run_pass(HloMemoryScheduler(), text)
    entry = names(module)
    assert entry.index("small") < entry.index("big")
    assert_operands_first(module)
