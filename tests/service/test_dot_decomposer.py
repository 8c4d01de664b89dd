"""DotDecomposer: every dot becomes lhs [batch..., M, K] x rhs [batch..., K, N]."""
import numpy as np
import pytest

from pass_test_util import assert_same_results, opcodes, run_pass

from xla.service.dot_decomposer import DotDecomposer, is_canonical_dot


def module_of(params, dot):
    return f"HloModule m\n\nENTRY e {{\n  {params}\n  ROOT d = {dot}\n}}\n"


def decompose(text, changed=True):
    module, did = run_pass(DotDecomposer(), text)
    assert did is changed
    assert_same_results(text, module, rtol=1e-5, atol=1e-5)
    for instr in module.all_instructions():
        if instr.opcode == "dot":
            assert is_canonical_dot(instr), instr.to_text()
    return module


def the_dot(module):
    (dot,) = [i for i in module.entry.instructions if i.opcode == "dot"]
    return dot


def test_transposed_rhs_gets_a_transpose():
    text = module_of("p0 = f32[3,4] parameter(0)\n  p1 = f32[5,4] parameter(1)",
                     "f32[3,5] dot(p0, p1), lhs_contracting_dims={1}, rhs_contracting_dims={1}")
    m = decompose(text)
    assert m.entry.to_text().splitlines()[1:-1] == [
        "  p0 = f32[3,4] parameter(0)",
        "  p1 = f32[5,4] parameter(1)",
        "  transpose.1 = f32[4,5] transpose(p1), dimensions={1,0}",
        "  ROOT d = f32[3,5] dot(p0, transpose.1), lhs_contracting_dims={1}, rhs_contracting_dims={0}",
    ]


def test_multiple_contracting_and_free_dims_are_flattened():
    text = module_of("p0 = f32[2,3,4,5] parameter(0)\n  p1 = f32[5,6,4,7] parameter(1)",
                     "f32[2,3,6,7] dot(p0, p1), lhs_contracting_dims={2,3}, rhs_contracting_dims={2,0}")
    m = decompose(text)
    dot = the_dot(m)
    assert dot.operands[0].shape.dimensions == (6, 20)
    assert dot.operands[1].shape.dimensions == (20, 42)
    assert m.entry.root_instruction.opcode == "reshape"


def test_batch_dims_are_moved_first_in_order():
    text = module_of("p0 = f32[4,2,3,5] parameter(0)\n  p1 = f32[3,5,2,6] parameter(1)",
                     "f32[2,3,4,6] dot(p0, p1), lhs_batch_dims={1,2}, rhs_batch_dims={2,0}, "
                     "lhs_contracting_dims={3}, rhs_contracting_dims={1}")
    dot = the_dot(decompose(text))
    assert dot.attr("lhs_batch_dims") == (0, 1) and dot.attr("rhs_batch_dims") == (0, 1)
    assert dot.operands[0].shape.dimensions == (2, 3, 4, 5)
    assert dot.operands[1].shape.dimensions == (2, 3, 5, 6)


def test_outer_product_gets_a_unit_contracting_dim():
    text = module_of("p0 = f32[3] parameter(0)\n  p1 = f32[4] parameter(1)", "f32[3,4] dot(p0, p1)")
    dot = the_dot(decompose(text))
    assert dot.operands[0].shape.dimensions == (3, 1)
    assert dot.operands[1].shape.dimensions == (1, 4)


def test_full_contraction_keeps_no_free_dims():
    text = module_of("p0 = f32[2,3] parameter(0)\n  p1 = f32[2,3] parameter(1)",
                     "f32[] dot(p0, p1), lhs_contracting_dims={0,1}, rhs_contracting_dims={0,1}")
    dot = the_dot(decompose(text))
    assert dot.operands[0].shape.dimensions == (6,) and dot.operands[1].shape.dimensions == (6,)


def test_preferred_element_type_and_attributes_are_kept():
    text = module_of("p0 = bf16[3,4] parameter(0)\n  p1 = bf16[5,4] parameter(1)",
                     "f32[3,5] dot(p0, p1), lhs_contracting_dims={1}, rhs_contracting_dims={1}, "
                     "operand_precision={highest,highest}")
    dot = the_dot(decompose(text))
    assert dot.shape.element_type.text == "f32"
    assert "operand_precision={highest,highest}" in dot.to_text()


@pytest.mark.parametrize("params,dot", [
    ("p0 = f32[3,4] parameter(0)\n  p1 = f32[4,5] parameter(1)",
     "f32[3,5] dot(p0, p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}"),
    ("p0 = f32[2,3,4] parameter(0)\n  p1 = f32[2,4,5] parameter(1)",
     "f32[2,3,5] dot(p0, p1), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}"),
    ("p0 = f32[3,4] parameter(0)\n  p1 = f32[4] parameter(1)",
     "f32[3] dot(p0, p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}"),
])
def test_canonical_dots_are_left_alone(params, dot):
    module, changed = run_pass(DotDecomposer(), module_of(params, dot))
    assert not changed
    assert opcodes(module) == ["parameter", "parameter", "dot"]


def test_layouts_of_new_instructions_are_row_major_in_a_laid_out_module():
    text = module_of("p0 = f32[4,3]{0,1} parameter(0)\n  p1 = f32[5,4]{1,0} parameter(1)",
                     "f32[3,5]{1,0} dot(p0, p1), lhs_contracting_dims={0}, rhs_contracting_dims={1}")
    m = decompose(text)
    for instr in m.entry.instructions:
        if instr.opcode == "transpose":
            assert instr.shape.layout.minor_to_major == (1, 0)


def test_dots_of_preds_are_or_of_and_through_s32():
    import xla
    text = """HloModule m
ENTRY e {
  x = pred[4,3] parameter(0)
  y = pred[3,2] parameter(1)
  ROOT d = pred[4,2] dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}"""
    module, changed = run_pass(DotDecomposer(), text)
    assert changed and module.entry.root_instruction.opcode == "compare"
    assert module.entry.root_instruction.name == "d"
    rng = np.random.default_rng(0)
    for _ in range(3):
        x, y = rng.random((4, 3)) > 0.6, rng.random((3, 2)) > 0.6
        want = (x[:, :, None] & y[None, :, :]).any(axis=1)   # OR over k of x[i,k] AND y[k,j]
        assert_same_results(text, module, args=[x, y])
        # The CPU refused dots of preds ("dot (element type pred)").
        np.testing.assert_array_equal(xla.compile(text, "cpu").execute(x, y), want)
