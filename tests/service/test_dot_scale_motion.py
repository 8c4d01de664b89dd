"""DotScaleMotion: a dot operand scaled by a scalar broadcast is scaled
after the dot instead, when the result is smaller than that operand."""
import numpy as np

from pass_test_util import assert_same_results, run_pass
from xla.service.dot_scale_motion import DotScaleMotion

# w = (alpha * A) @ x, as NumPy's ``alpha * A @ x`` traces.
MATVEC = """HloModule m

ENTRY %main (alpha: f64[], a: f64[8,6], x: f64[6]) -> f64[8] {
  %alpha = f64[] parameter(0)
  %a = f64[8,6] parameter(1)
  %x = f64[6] parameter(2)
  %scale = f64[8,6] broadcast(%alpha), dimensions={}
  %scaled = f64[8,6] multiply(%scale, %a)
  ROOT %w = f64[8] dot(%scaled, %x), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""


def test_a_scaled_matrix_becomes_a_scaled_product():
    module, changed = run_pass(DotScaleMotion(), MATVEC)
    assert changed
    assert module.to_text() == """HloModule m

ENTRY %main (alpha: f64[], a: f64[8,6], x: f64[6]) -> f64[8] {
  %alpha = f64[] parameter(0)
  %a = f64[8,6] parameter(1)
  %x = f64[6] parameter(2)
  %dot.1 = f64[8] dot(%a, %x), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %broadcast.2 = f64[8] broadcast(%alpha), dimensions={}
  ROOT %multiply.3 = f64[8] multiply(%dot.1, %broadcast.2)
}
"""
    assert_same_results(MATVEC, module, rtol=1e-12, atol=1e-12)
    assert not DotScaleMotion().run(module)


def test_both_operands_scaled_and_the_scale_on_the_right():
    text = """HloModule m

ENTRY %main (s: f32[], t: f32[], a: f32[4,16], b: f32[16,3]) -> f32[4,3] {
  %s = f32[] parameter(0)
  %t = f32[] parameter(1)
  %a = f32[4,16] parameter(2)
  %b = f32[16,3] parameter(3)
  %bs = f32[4,16] broadcast(%s), dimensions={}
  %sa = f32[4,16] multiply(%a, %bs)
  %bt = f32[16,3] broadcast(%t), dimensions={}
  %tb = f32[16,3] multiply(%bt, %b)
  ROOT %d = f32[4,3] dot(%sa, %tb), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""
    module, changed = run_pass(DotScaleMotion(), text)
    assert changed
    # One dot of the unscaled operands, then each scale on its result.
    entry = module.entry
    ops = [i.opcode for i in entry.instructions if i.opcode != "parameter"]
    assert ops == ["dot", "broadcast", "multiply", "broadcast", "multiply"], ops
    dot = next(i for i in entry.instructions if i.opcode == "dot")
    assert [o.name for o in dot.operands] == ["a", "b"]
    root = entry.root_instruction
    assert root.opcode == "multiply" and root.operands[0].opcode == "multiply"
    assert {root.operands[1].operands[0].name, root.operands[0].operands[1].operands[0].name} == \
        {"s", "t"}
    assert_same_results(text, module, rtol=1e-5, atol=1e-5)


def test_left_alone():
    cases = {
        # The result is as large as the scaled operand (an outer-product-like
        # shape): scaling after the dot saves nothing.
        "no smaller": MATVEC.replace("f64[8,6] parameter(1)", "f64[8,1] parameter(1)")
                            .replace("f64[8,6] broadcast", "f64[8,1] broadcast")
                            .replace("f64[8,6] multiply", "f64[8,1] multiply")
                            .replace("x: f64[6]", "x: f64[1]").replace("f64[6] parameter(2)",
                                                                      "f64[1] parameter(2)")
                            .replace("a: f64[8,6]", "a: f64[8,1]"),
        # The scaled matrix is used elsewhere too: it is computed anyway.
        "other user": MATVEC.replace(
            "  ROOT %w = f64[8] dot(%scaled, %x), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n",
            "  %w = f64[8] dot(%scaled, %x), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
            "  ROOT %t = (f64[8], f64[8,6]) tuple(%w, %scaled)\n").replace("-> f64[8]",
                                                                       "-> (f64[8], f64[8,6])"),
        # A row scaling (an array, not a scalar) does not commute with the dot.
        "array scale": MATVEC.replace("alpha: f64[]", "alpha: f64[6]")
                             .replace("%alpha = f64[] parameter(0)", "%alpha = f64[6] parameter(0)")
                             .replace("broadcast(%alpha), dimensions={}",
                                      "broadcast(%alpha), dimensions={1}"),
        # A widening dot (f32 operands, f64 result): the scale's type is not the result's.
        "widening": MATVEC.replace("ROOT %w = f64[8] dot", "ROOT %w = f32[8] dot")
                          .replace("-> f64[8]", "-> f32[8]"),
    }
    for name, text in cases.items():
        module, changed = run_pass(DotScaleMotion(), text)
        assert not changed, name


def test_integer_scale_is_exact():
    text = MATVEC.replace("f64", "s32")
    module, changed = run_pass(DotScaleMotion(), text)
    assert changed
    rng = np.random.default_rng(0)
    args = [np.int32(-3), rng.integers(-1000, 1000, (8, 6)).astype(np.int32),
            rng.integers(-1000, 1000, 6).astype(np.int32)]
    assert_same_results(text, module, args=args, rtol=0, atol=0)


# gemm: C = (alpha * A) @ B + beta * C with a result larger than A.
GEMM = """HloModule m

ENTRY %main (alpha: f64[], beta: f64[], c: f64[6,7], a: f64[6,5], b: f64[5,7]) -> f64[6,7] {
  %alpha = f64[] parameter(0)
  %beta = f64[] parameter(1)
  %c = f64[6,7] parameter(2)
  %a = f64[6,5] parameter(3)
  %b = f64[5,7] parameter(4)
  %sa = f64[6,5] broadcast(%alpha), dimensions={}
  %aa = f64[6,5] multiply(%sa, %a)
  %d = f64[6,7] dot(%aa, %b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %sb = f64[6,7] broadcast(%beta), dimensions={}
  %bc = f64[6,7] multiply(%sb, %c)
  ROOT %r = f64[6,7] add(%d, %bc)
}
"""


def test_a_larger_result_feeding_an_elementwise_op_takes_the_scale():
    module, changed = run_pass(DotScaleMotion(), GEMM)
    assert changed
    add = module.entry.root_instruction
    scaled = add.operands[0]
    assert scaled.opcode == "multiply" and scaled.operands[0].opcode == "dot"
    assert [o.name for o in scaled.operands[0].operands] == ["a", "b"]
    assert scaled.operands[1].operands[0].name == "alpha"
    assert_same_results(GEMM, module, rtol=1e-12, atol=1e-12)
    # The same dot feeding a transpose (not elementwise) keeps its operand scaled.
    text = GEMM.replace("ROOT %r = f64[6,7] add(%d, %bc)",
                        "%t = f64[7,6] transpose(%d), dimensions={1,0}\n"
                        "  ROOT %r = (f64[7,6], f64[6,7]) tuple(%t, %bc)").replace(
        "-> f64[6,7] {", "-> (f64[7,6], f64[6,7]) {")
    module, changed = run_pass(DotScaleMotion(), text)
    assert not changed
