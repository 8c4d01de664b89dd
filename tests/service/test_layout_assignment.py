"""LayoutAssignment: row-major by default, the entry computation layout, copies
where operand layouts disagree, parameters of called computations."""
from pass_test_util import assert_same_results, opcodes, run_pass

from xla.hlo.shape import Layout
from xla.service.layout_assignment import LayoutAssignment


def assign(text, changed=True):
    module, did = run_pass(LayoutAssignment(), text)
    assert did is changed
    assert_same_results(text, module)
    for instr in module.all_instructions():
        for _, leaf in instr.shape.leaves():
            assert not leaf.is_array or leaf.layout is not None, instr.to_text()
    return module


def test_missing_layouts_become_row_major():
    text = """HloModule m

ENTRY e {
  p0 = f32[2,3] parameter(0)
  e = f32[2,3] exponential(p0)
  ROOT t = f32[3,2] transpose(e), dimensions={1,0}
}
"""
    m = assign(text)
    assert m.entry.to_text().splitlines()[1:-1] == [
        "  p0 = f32[2,3]{1,0} parameter(0)",
        "  e = f32[2,3]{1,0} exponential(p0)",
        "  ROOT t = f32[3,2]{1,0} transpose(e), dimensions={1,0}",
    ]


def test_entry_computation_layout_is_respected():
    text = """HloModule m, entry_computation_layout={(f32[2,3]{0,1})->f32[2,3]{0,1}}

ENTRY e {
  p0 = f32[2,3] parameter(0)
  ROOT n = f32[2,3] negate(p0)
}
"""
    m = assign(text)
    assert m.entry.parameter(0).shape.to_text() == "f32[2,3]{0,1}"
    # negate got row-major, so its operand is copied and so is the root.
    assert opcodes(m) == ["parameter", "copy", "negate", "copy"]
    assert m.entry.root_instruction.shape.to_text() == "f32[2,3]{0,1}"


def test_elementwise_operands_are_copied_to_the_result_layout():
    text = """HloModule m

ENTRY e {
  p0 = f32[2,3]{0,1} parameter(0)
  p1 = f32[2,3]{1,0} parameter(1)
  ROOT a = f32[2,3]{1,0} add(p0, p1)
}
"""
    m = assign(text)
    add = m.entry.root_instruction
    assert add.operands[0].opcode == "copy" and add.operands[0].shape.to_text() == "f32[2,3]{1,0}"
    assert add.operands[1].name == "p1"


def test_called_computation_parameters_follow_operands():
    text = """HloModule m

body {
  bp = (s32[], f32[2,3]) parameter(0)
  i = s32[] get-tuple-element(bp), index=0
  one = s32[] constant(1)
  i2 = s32[] add(i, one)
  x = f32[2,3] get-tuple-element(bp), index=1
  x2 = f32[2,3] negate(x)
  ROOT t = (s32[], f32[2,3]) tuple(i2, x2)
}

cond {
  cp = (s32[], f32[2,3]) parameter(0)
  ci = s32[] get-tuple-element(cp), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(ci, n), direction=LT
}

callee {
  q = f32[2,3] parameter(0)
  ROOT s = f32[2,3] sine(q)
}

ENTRY e {
  p0 = f32[2,3]{0,1} parameter(0)
  c = f32[2,3]{0,1} call(p0), to_apply=callee
  zero = s32[] constant(0)
  init = (s32[], f32[2,3]{0,1}) tuple(zero, c)
  w = (s32[], f32[2,3]{0,1}) while(init), condition=cond, body=body
  ROOT r = f32[2,3]{0,1} get-tuple-element(w), index=1
}
"""
    m = assign(text)
    assert m.computation("callee").parameter(0).shape.to_text() == "f32[2,3]{0,1}"
    assert m.computation("callee").root_instruction.shape.to_text() == "f32[2,3]{0,1}"
    body = m.computation("body")
    assert body.parameter(0).shape.to_text() == "(s32[], f32[2,3]{0,1})"
    assert body.root_instruction.shape.to_text() == "(s32[], f32[2,3]{0,1})"
    assert m.computation("cond").parameter(0).shape.to_text() == "(s32[], f32[2,3]{0,1})"


def test_bitcast_keeps_its_operand_layout():
    text = """HloModule m, entry_computation_layout={(f32[2,3]{0,1})->f32[6]{0}}

ENTRY e {
  p0 = f32[2,3]{1,0} parameter(0)
  ROOT b = f32[6]{0} bitcast(p0)
}
"""
    m = assign(text)
    b = m.entry.root_instruction
    assert b.opcode == "bitcast"
    assert b.operands[0].opcode == "copy" and b.operands[0].shape.to_text() == "f32[2,3]{1,0}"


def test_fully_laid_out_module_is_unchanged():
    text = """HloModule m, entry_computation_layout={(f32[2,3]{1,0})->f32[2,3]{1,0}}

ENTRY e {
  p0 = f32[2,3]{1,0} parameter(0)
  ROOT n = f32[2,3]{1,0} negate(p0)
}
"""
    module, changed = run_pass(LayoutAssignment(), text)
    assert not changed
    assert opcodes(module) == ["parameter", "negate"]


def test_constraints_give_operands_and_results_their_layouts():
    # As the CPU asks for fft: copies to row-major in, and back out.
    text = """HloModule m

ENTRY e {
  p0 = c64[8,4]{0,1} parameter(0)
  f = c64[8,4]{0,1} fft(p0), fft_type=FFT, fft_length={4}
  ROOT n = c64[8,4]{0,1} negate(f)
}
"""
    def row_major_fft(instr):
        if instr.opcode != "fft":
            return None
        return [Layout.row_major(2)], Layout.row_major(2)

    module, did = run_pass(LayoutAssignment(constraints=row_major_fft), text)
    assert did
    assert_same_results(text, module)
    (fft,) = [i for i in module.entry.instructions if i.opcode == "fft"]
    assert fft.shape.to_text() == "c64[8,4]{1,0}"
    assert fft.operands[0].opcode == "copy" and fft.operands[0].shape.to_text() == "c64[8,4]{1,0}"
    (back,) = fft.users
    assert back.opcode == "copy" and back.shape.to_text() == "c64[8,4]{0,1}"
    # Without the option the written layouts stay.
    module, _ = run_pass(LayoutAssignment(), text)
    (fft,) = [i for i in module.entry.instructions if i.opcode == "fft"]
    assert fft.shape.to_text() == "c64[8,4]{0,1}"
