"""scan_expander: every scan becomes a while loop over (index, carries,
inputs, outputs); the interpreter gives the same values before and after,
XLA's test cases (fixtures/scan_xla.json) included."""
import json
import pathlib

import numpy as np
import pytest

from pass_test_util import assert_same_results, opcodes, run_pass
from xla.service.scan_expander import ScanExpander

CASES = json.loads((pathlib.Path(__file__).resolve().parent / "fixtures" / "scan_xla.json").read_text())

REVERSE_CUMSUM = """HloModule m

add {
  x = f32[] parameter(0)
  c = f32[] parameter(1)
  s = f32[] add(c, x)
  ROOT t = (f32[], f32[]) tuple(s, s)
}

ENTRY e {
  input = f32[4]{0} parameter(0)
  init = f32[] constant(0)
  ROOT scan = (f32[4]{0}, f32[]) scan(input, init), dimensions={0}, num_carries=1, is_reverse=true, to_apply=add
}
"""

EXPANDED = """HloModule m

scan_condition.1 {
  loop_state.2 = (s64[], f32[], f32[4]{0}, f32[4]{0}) parameter(0)
  get-tuple-element.3 = s64[] get-tuple-element(loop_state.2), index=0
  constant.4 = s64[] constant(4)
  ROOT compare.5 = pred[] compare(get-tuple-element.3, constant.4), direction=LT
}

scan_body.6 {
  loop_state.7 = (s64[], f32[], f32[4]{0}, f32[4]{0}) parameter(0)
  get-tuple-element.8 = s64[] get-tuple-element(loop_state.7), index=0
  get-tuple-element.9 = f32[] get-tuple-element(loop_state.7), index=1
  get-tuple-element.10 = f32[4]{0} get-tuple-element(loop_state.7), index=2
  get-tuple-element.11 = f32[4]{0} get-tuple-element(loop_state.7), index=3
  constant.12 = s64[] constant(3)
  subtract.13 = s64[] subtract(constant.12, get-tuple-element.8)
  dynamic-slice.14 = f32[1]{0} dynamic-slice(get-tuple-element.10, subtract.13), dynamic_slice_sizes={1}
  reshape.15 = f32[] reshape(dynamic-slice.14)
  s.24 = f32[] add(get-tuple-element.9, reshape.15)
  t.25 = (f32[], f32[]) tuple(s.24, s.24)
  get-tuple-element.17 = f32[] get-tuple-element(t.25), index=0
  get-tuple-element.18 = f32[] get-tuple-element(t.25), index=1
  reshape.19 = f32[1]{0} reshape(get-tuple-element.17)
  dynamic-update-slice.20 = f32[4]{0} dynamic-update-slice(get-tuple-element.11, reshape.19, subtract.13)
  constant.21 = s64[] constant(1)
  add.22 = s64[] add(get-tuple-element.8, constant.21)
  ROOT tuple.23 = (s64[], f32[], f32[4]{0}, f32[4]{0}) tuple(add.22, get-tuple-element.18, get-tuple-element.10, dynamic-update-slice.20)
}

ENTRY e {
  input = f32[4]{0} parameter(0)
  init = f32[] constant(0)
  constant.26 = s64[] constant(0)
  constant.27 = f32[] constant(0)
  broadcast.28 = f32[4]{0} broadcast(constant.27), dimensions={}
  tuple.29 = (s64[], f32[], f32[4]{0}, f32[4]{0}) tuple(constant.26, init, input, broadcast.28)
  while.30 = (s64[], f32[], f32[4]{0}, f32[4]{0}) while(tuple.29), condition=scan_condition.1, body=scan_body.6
  get-tuple-element.31 = f32[4]{0} get-tuple-element(while.30), index=3
  get-tuple-element.32 = f32[] get-tuple-element(while.30), index=1
  ROOT tuple.33 = (f32[4]{0}, f32[]) tuple(get-tuple-element.31, get-tuple-element.32)
}
"""


def test_reverse_cumsum_becomes_a_while_loop():
    m, changed = run_pass(ScanExpander(), REVERSE_CUMSUM)
    assert changed
    assert m.to_text() == EXPANDED
    assert_same_results(REVERSE_CUMSUM, m)


def test_idempotent():
    m, _ = run_pass(ScanExpander(), REVERSE_CUMSUM)
    assert not ScanExpander().run(m)


def test_no_scan_no_change():
    text = "HloModule m\nENTRY e {\n  x = f32[4] parameter(0)\n  ROOT n = f32[4] negate(x)\n}\n"
    m, changed = run_pass(ScanExpander(), text)
    assert not changed and opcodes(m) == ["parameter", "negate"]


def test_zero_length_scan_needs_no_loop():
    m, changed = run_pass(ScanExpander(), CASES["zero_length"]["text"])   # verified
    assert changed and "while" not in opcodes(m)
    assert_same_results(CASES["zero_length"]["text"], m,
                        args=[np.zeros(0, np.float32), np.float32(2.5)])


@pytest.mark.parametrize("case", sorted(k for k, c in CASES.items() if "results" in c))
def test_xla_cases_keep_their_values(case):
    text = CASES[case]["text"]
    m, changed = run_pass(ScanExpander(), text)
    assert changed
    assert not any(i.opcode == "scan" for c in m.computations for i in c.instructions)
    args = [np.asarray(v, dtype=t) for t, v in CASES[case]["args"]]
    assert_same_results(text, m, args=args)
