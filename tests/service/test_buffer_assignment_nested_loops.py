"""Buffer assignment of nested while loops: a nested loop whose init is
the enclosing loop's state (its body parameter), read by nothing after it,
updates that state in place (``enclosing_state``); checked on the
assignment and on the CPU against the interpreter and NumPy."""
import numpy as np

import test_buffer_assignment as tba
from xla.hlo.parser import parse_hlo_module
from xla.service.buffer_assignment import assign_buffers
from xla.service.copy_insertion import CopyInsertion
from xla.service.hlo_memory_scheduler import HloMemoryScheduler

instr, check_properties = tba.instr, tba.check_properties


NESTED_ROW_UPDATES = """HloModule nested_rows

ibody {
  ip = (s32[], s32[], f32[8,16]) parameter(0)
  j = s32[] get-tuple-element(ip), index=0
  k = s32[] get-tuple-element(ip), index=1
  a = f32[8,16] get-tuple-element(ip), index=2
  zero = s32[] constant(0)
  row = f32[1,16] dynamic-slice(a, j, zero), dynamic_slice_sizes={1,16}
  pivot = f32[1,16] dynamic-slice(a, k, zero), dynamic_slice_sizes={1,16}
  half = f32[] constant(0.5)
  halves = f32[1,16] broadcast(half), dimensions={}
  scaled = f32[1,16] multiply(pivot, halves)
  new = f32[1,16] subtract(row, scaled)
  a2 = f32[8,16] dynamic-update-slice(a, new, j, zero)
  one = s32[] constant(1)
  j1 = s32[] add(j, one)
  ROOT it = (s32[], s32[], f32[8,16]) tuple(j1, k, a2)
}

icond {
  cp = (s32[], s32[], f32[8,16]) parameter(0)
  cj = s32[] get-tuple-element(cp), index=0
  n = s32[] constant(8)
  ROOT lt = pred[] compare(cj, n), direction=LT
}

cond {
  cp = (s32[], f32[8,16]) parameter(0)
  ci = s32[] get-tuple-element(cp), index=0
  n = s32[] constant(7)
  ROOT lt = pred[] compare(ci, n), direction=LT
}

body {
  bp = (s32[], f32[8,16]) parameter(0)
  bi = s32[] get-tuple-element(bp), index=0
  ba = f32[8,16] get-tuple-element(bp), index=1
  one = s32[] constant(1)
  first = s32[] add(bi, one)
  start = (s32[], s32[], f32[8,16]) tuple(first, bi, ba)
  inner = (s32[], s32[], f32[8,16]) while(start), condition=icond, body=ibody
  ra = f32[8,16] get-tuple-element(inner), index=2
  i1 = s32[] add(bi, one)
  ROOT bt = (s32[], f32[8,16]) tuple(i1, ra)
}

ENTRY main {
  x = f32[8,16] parameter(0)
  zero = s32[] constant(0)
  init = (s32[], f32[8,16]) tuple(zero, x)
  w = (s32[], f32[8,16]) while(init), condition=cond, body=body
  ROOT wx = f32[8,16] get-tuple-element(w), index=1
}
"""


def test_a_nested_loop_updates_the_enclosing_loops_state_in_place():
    # Elimination's two loops: the inner one takes the outer state ``ba``
    # (read by nothing else) and the outer state takes its result. Both
    # loops' states share one slot, so nothing is copied in or out of the
    # inner loop each outer iteration (a whole matrix, twice, before).
    module = parse_hlo_module(NESTED_ROW_UPDATES)
    CopyInsertion().run(module)
    # (bi, read again, is not copied either: the nested loop only reads it.)
    assert "copy" not in [i.opcode for i in module.computation("body").instructions]
    HloMemoryScheduler().run(module)
    ba = assign_buffers(module)
    check_properties(module, ba)
    outer = ba.buffer(instr(module, "w"), (1,))
    assert ba.buffer(instr(module, "inner"), (2,)).slot == outer.slot
    assert ba.buffer(instr(module, "a2")).slot == outer.slot       # the row update: in place
    x = np.random.default_rng(6).standard_normal((8, 16)).astype(np.float32)
    want = x.astype(np.float64)
    for i in range(7):
        for j in range(i + 1, 8):
            want[j] -= 0.5 * want[i]
    tba._cpu_matches_interpreter(NESTED_ROW_UPDATES, x)
    np.testing.assert_allclose(tba.xla_cpu(NESTED_ROW_UPDATES, x), want, rtol=1e-4, atol=1e-4)


def test_a_nested_loop_whose_init_is_read_after_it_gets_its_own_slot():
    text = NESTED_ROW_UPDATES.replace(
        "  ROOT bt = (s32[], f32[8,16]) tuple(i1, ra)",
        "  s = f32[8,16] add(ra, ba)\n  ROOT bt = (s32[], f32[8,16]) tuple(i1, s)")
    module = parse_hlo_module(text)
    CopyInsertion().run(module)
    HloMemoryScheduler().run(module)
    ba = assign_buffers(module)
    check_properties(module, ba)
    assert ba.buffer(instr(module, "inner"), (2,)).slot != ba.buffer(instr(module, "w"), (1,)).slot
    x = np.random.default_rng(7).standard_normal((8, 16)).astype(np.float32)
    tba._cpu_matches_interpreter(text, x)


def test_state_loops_only_read_stays_in_the_callers_buffer():
    # m is the entry's parameter, passed through by both loops and read by
    # nothing after them: every loop state slot for it is the parameter's
    # buffer (no copy per outer iteration of the nested loop, none into the
    # outer loop).
    from test_copy_insertion import READ_ONLY
    module = parse_hlo_module(READ_ONLY)
    CopyInsertion().run(module)
    HloMemoryScheduler().run(module)
    ba = assign_buffers(module)
    check_properties(module, ba)
    inner = module.computation("outer_body").instruction("w")
    outer = module.entry.root_instruction.operands[0]
    param = ba.buffer(module.entry.parameter(1))
    assert ba.buffer(inner, (2,)).slot == ba.buffer(outer, (2,)).slot == param.slot
    assert ba.buffer(inner, (1,)).slot == ba.buffer(outer, (1,)).slot   # a: in place too
    rng = np.random.default_rng(8)
    p0, p1 = rng.standard_normal(3).astype(np.float32), rng.standard_normal(3).astype(np.float32)
    tba._cpu_matches_interpreter(READ_ONLY, p0, p1)
    np.testing.assert_allclose(tba.xla_cpu(READ_ONLY, p0, p1), np.exp(p0) + 12 * p1, rtol=1e-5)
