"""AlgebraicSimplifier: each rule on a small module, the printed result, the
same numbers before and after, and the cases where a rule must not apply."""
import numpy as np
import pytest

from pass_test_util import assert_same_results, evaluate, opcodes, run_pass

from xla.hlo.parser import parse_hlo_module
from xla.service.algebraic_simplifier import AlgebraicSimplifier


def simplify(text, args=None, changed=True):
    module, did = run_pass(AlgebraicSimplifier(), text)
    assert did is changed
    assert_same_results(text, module, args=args)
    return module


def root(module):
    return module.entry.root_instruction


def module_of(body, params="p0 = f32[4] parameter(0)"):
    return f"HloModule m\n\nENTRY e {{\n  {params}\n{body}\n}}\n"


def test_add_of_negative_zero_is_removed_for_floats():
    text = module_of("""  z = f32[] constant(-0)
  b = f32[4] broadcast(z), dimensions={}
  ROOT a = f32[4] add(b, p0)""")
    m = simplify(text, args=[np.float32([-0.0, 1, np.nan, -np.inf])])
    assert root(m).name == "p0"
    assert opcodes(m) == ["parameter"]


def test_add_of_positive_zero_is_kept_for_floats():
    # -0.0 + 0.0 is +0.0: removing the add would change the sign of zero.
    text = module_of("""  z = f32[] constant(0)
  b = f32[4] broadcast(z), dimensions={}
  ROOT a = f32[4] add(p0, b)""")
    module, changed = run_pass(AlgebraicSimplifier(), text)
    assert not changed
    out = evaluate(module, [np.float32([-0.0, 1, 2, 3])])[0]
    assert not np.signbit(out[0])


def test_add_zero_for_integers_and_subtract_zero():
    text = module_of("""  z = s32[4] constant({0, 0, 0, 0})
  a = s32[4] add(z, p0)
  ROOT s = s32[4] subtract(a, z)""", params="p0 = s32[4] parameter(0)")
    m = simplify(text)
    assert root(m).name == "p0"


def test_subtract_positive_zero_float_applies_negative_zero_does_not():
    text = module_of("""  z = f32[] constant(0)
  b = f32[4] broadcast(z), dimensions={}
  ROOT s = f32[4] subtract(p0, b)""")
    assert root(simplify(text)).name == "p0"
    text = module_of("""  z = f32[] constant(-0)
  b = f32[4] broadcast(z), dimensions={}
  ROOT s = f32[4] subtract(p0, b)""")
    assert run_pass(AlgebraicSimplifier(), text)[1] is False


def test_multiply_by_one_and_divide_by_one():
    text = module_of("""  one = f32[] constant(1)
  b = f32[4] broadcast(one), dimensions={}
  m = f32[4] multiply(b, p0)
  ROOT d = f32[4] divide(m, b)""")
    assert root(simplify(text, args=[np.float32([np.nan, np.inf, -0.0, 3])])).name == "p0"


def test_multiply_by_zero_integers_only():
    text = module_of("""  z = s32[] constant(0)
  b = s32[4] broadcast(z), dimensions={}
  ROOT m = s32[4] multiply(p0, b)""", params="p0 = s32[4] parameter(0)")
    m = simplify(text)
    assert root(m).opcode == "broadcast"
    assert root(m).operands[0].opcode == "constant"
    ftext = module_of("""  z = f32[] constant(0)
  b = f32[4] broadcast(z), dimensions={}
  ROOT m = f32[4] multiply(p0, b)""")
    module, changed = run_pass(AlgebraicSimplifier(), ftext)
    assert not changed  # inf * 0 and NaN * 0 are NaN
    out = evaluate(module, [np.float32([np.inf, np.nan, -1, 1])])[0]
    assert np.isnan(out[:2]).all() and np.signbit(out[2])


def test_divide_by_power_of_two_becomes_multiply():
    text = module_of("""  c = f32[] constant(8)
  b = f32[4] broadcast(c), dimensions={}
  ROOT d = f32[4] divide(p0, b)""")
    m = simplify(text, args=[np.float32([1e-38, 3, -7, np.inf])])
    assert root(m).opcode == "multiply"
    assert float(root(m).operands[1].operands[0].literal) == 0.125


def test_divide_by_other_constants_is_kept():
    for c in ("3", "0", "inf"):
        text = module_of(f"""  c = f32[] constant({c})
  b = f32[4] broadcast(c), dimensions={{}}
  ROOT d = f32[4] divide(p0, b)""")
        assert run_pass(AlgebraicSimplifier(), text)[1] is False, c


def test_double_negation_and_not_not():
    text = module_of("""  n = s8[4] negate(p0)
  n2 = s8[4] negate(n)
  a = s8[4] not(n2)
  ROOT b = s8[4] not(a)""", params="p0 = s8[4] parameter(0)")
    m = simplify(text, args=[np.int8([-128, 127, 0, -1])])
    assert root(m).name == "p0"


def test_reshape_of_reshape_and_noop_reshape():
    text = module_of("""  r = f32[2,2] reshape(p0)
  r2 = f32[1,4] reshape(r)
  ROOT r3 = f32[1,4] reshape(r2)""")
    m = simplify(text)
    assert opcodes(m) == ["parameter", "reshape"]
    assert root(m).operands[0].name == "p0"


def test_transpose_of_transpose_composes():
    text = module_of("""  t = f32[3,4,2] transpose(p0), dimensions={1,2,0}
  ROOT t2 = f32[4,2,3] transpose(t), dimensions={1,2,0}""", params="p0 = f32[2,3,4] parameter(0)")
    m = simplify(text)
    assert root(m).opcode == "transpose"
    assert root(m).attr("dimensions") == (2, 0, 1)
    assert root(m).operands[0].name == "p0"


def test_transpose_back_is_removed():
    text = module_of("""  t = f32[3,2] transpose(p0), dimensions={1,0}
  ROOT t2 = f32[2,3] transpose(t), dimensions={1,0}""", params="p0 = f32[2,3] parameter(0)")
    assert root(simplify(text)).name == "p0"


def test_transpose_with_another_layout_is_kept():
    text = module_of("""  ROOT t = f32[2,3]{0,1} transpose(p0), dimensions={0,1}""",
                     params="p0 = f32[2,3]{1,0} parameter(0)")
    assert run_pass(AlgebraicSimplifier(), text)[1] is False


def test_broadcast_of_broadcast_merges():
    text = module_of("""  c = f32[] constant(2)
  b = f32[3] broadcast(c), dimensions={}
  b2 = f32[3,5] broadcast(b), dimensions={0}
  x = f32[3,5] broadcast(p0), dimensions={1}
  ROOT m = f32[3,5] multiply(b2, x)""", params="p0 = f32[5] parameter(0)")
    m = simplify(text)
    b2 = root(m).operands[0]
    assert b2.opcode == "broadcast" and b2.operands[0].opcode == "constant"
    assert b2.attr("dimensions") == ()


def test_slice_of_slice_composes_and_full_slice_is_removed():
    text = module_of("""  s = f32[9] slice(p0), slice={[2:20:2]}
  s2 = f32[3] slice(s), slice={[1:8:3]}
  ROOT s3 = f32[3] slice(s2), slice={[0:3]}""", params="p0 = f32[20] parameter(0)")
    m = simplify(text)
    assert root(m).opcode == "slice" and root(m).operands[0].name == "p0"
    assert tuple(root(m).attr("slice")[0]) == (4, 17, 6)


def test_noop_ops_are_removed():
    text = module_of("""  c = f32[4] convert(p0)
  k = f32[4] copy(c)
  z = f32[] constant(0)
  p = f32[4] pad(k, z), padding=0_0
  r = f32[4] reverse(p), dimensions={}
  cat = f32[4] concatenate(r), dimensions={0}
  ROOT b = f32[4] bitcast(cat)""")
    m = simplify(text)
    assert opcodes(m) == ["parameter"]


def test_copy_that_changes_layout_is_kept():
    text = module_of("""  ROOT k = f32[2,3]{0,1} copy(p0)""", params="p0 = f32[2,3]{1,0} parameter(0)")
    assert run_pass(AlgebraicSimplifier(), text)[1] is False


def test_reverse_of_size_one_dims_only():
    text = module_of("""  ROOT r = f32[1,4] reverse(p0), dimensions={0}""", params="p0 = f32[1,4] parameter(0)")
    assert root(simplify(text)).name == "p0"
    text = module_of("""  ROOT r = f32[1,4] reverse(p0), dimensions={1}""", params="p0 = f32[1,4] parameter(0)")
    assert run_pass(AlgebraicSimplifier(), text)[1] is False


def test_concatenate_drops_empty_operands():
    text = module_of("""  e = f32[0] constant({})
  ROOT c = f32[4] concatenate(e, p0, e), dimensions={0}""")
    assert root(simplify(text)).name == "p0"


REDUCE = """HloModule m

sum {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

ENTRY e {
  p0 = f32[3,1,4] parameter(0)
  init = f32[] parameter(1)
  ROOT r = f32[3,4] reduce(p0, init), dimensions={1}, to_apply=sum
}
"""


def test_reduce_over_size_one_dims_becomes_reducer_op():
    m = simplify(REDUCE)
    assert root(m).opcode == "add"
    lhs, rhs = root(m).operands
    assert lhs.opcode == "broadcast" and lhs.operands[0].name == "init"
    assert rhs.opcode == "reshape" and rhs.operands[0].name == "p0"


def test_reduce_keeps_reducer_operand_order():
    text = REDUCE.replace("ROOT s = f32[] add(a, b)", "ROOT s = f32[] subtract(b, a)")
    m = simplify(text)
    assert root(m).opcode == "subtract"
    assert root(m).operands[0].opcode == "reshape"


def test_reduce_over_empty_dims_is_the_init_value():
    text = REDUCE.replace("f32[3,1,4] parameter(0)", "f32[3,0,4] parameter(0)")
    m = simplify(text)
    assert root(m).opcode == "broadcast" and root(m).operands[0].name == "init"


def test_reduce_over_larger_dims_is_kept():
    text = REDUCE.replace("f32[3,1,4] parameter(0)", "f32[3,2,4] parameter(0)")
    assert run_pass(AlgebraicSimplifier(), text)[1] is False


def test_dot_with_unit_contracting_dim_becomes_multiply():
    text = module_of("""  ROOT d = f32[3,5] dot(p0, p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}""",
                     params="p0 = f32[3,1] parameter(0)\n  p1 = f32[1,5] parameter(1)")
    m = simplify(text)
    assert root(m).opcode == "multiply"
    assert "dot" not in opcodes(m)


def test_batched_outer_product_with_mixed_types_becomes_multiply():
    text = module_of("""  ROOT d = f32[2,3,5] dot(p0, p1), lhs_batch_dims={1}, rhs_batch_dims={0}, lhs_contracting_dims={}, rhs_contracting_dims={}""",
                     params="p0 = bf16[3,2] parameter(0)\n  p1 = bf16[2,5] parameter(1)")
    m = simplify(text)
    assert root(m).opcode == "multiply"
    assert "convert" in opcodes(m) and "transpose" in opcodes(m)


def test_dot_with_real_contraction_is_kept():
    text = module_of("""  ROOT d = f32[3,5] dot(p0, p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}""",
                     params="p0 = f32[3,2] parameter(0)\n  p1 = f32[2,5] parameter(1)")
    assert run_pass(AlgebraicSimplifier(), text)[1] is False


def test_select_with_constant_predicate_and_same_operands():
    text = module_of("""  t = pred[] constant(true)
  f = pred[4] constant({0, 0, 0, 0})
  s = f32[4] select(t, p0, p1)
  s2 = f32[4] select(f, p1, s)
  ROOT s3 = f32[4] select(p2, s2, s2)""",
                     params="p0 = f32[4] parameter(0)\n  p1 = f32[4] parameter(1)\n  p2 = pred[4] parameter(2)")
    assert root(simplify(text)).name == "p0"


def test_compare_of_equal_integer_operands():
    text = module_of("""  eq = pred[4] compare(p0, p0), direction=EQ
  lt = pred[4] compare(p0, p0), direction=LT
  ROOT t = (pred[4], pred[4]) tuple(eq, lt)""", params="p0 = s32[4] parameter(0)")
    m = simplify(text)
    values = [o.operands[0].literal for o in root(m).operands]
    assert [bool(v) for v in values] == [True, False]


def test_compare_of_equal_float_operands_is_kept():
    # NaN == NaN is false.
    text = module_of("""  ROOT eq = pred[4] compare(p0, p0), direction=EQ""")
    module, changed = run_pass(AlgebraicSimplifier(), text)
    assert not changed
    assert not evaluate(module, [np.float32([np.nan, 1, 2, 3])])[0][0]


def test_dynamic_slice_with_constant_indices_is_clamped_slice():
    text = module_of("""  i = s32[] constant(7)
  j = s32[] constant(-2)
  ROOT d = f32[2,3] dynamic-slice(p0, i, j), dynamic_slice_sizes={2,3}""", params="p0 = f32[5,6] parameter(0)")
    m = simplify(text)
    assert root(m).opcode == "slice"
    assert [tuple(s) for s in root(m).attr("slice")] == [(3, 5, 1), (0, 3, 1)]


def test_dynamic_slice_with_variable_index_is_kept():
    text = module_of("""  j = s32[] constant(0)
  ROOT d = f32[2,3] dynamic-slice(p0, p1, j), dynamic_slice_sizes={2,3}""",
                     params="p0 = f32[5,6] parameter(0)\n  p1 = s32[] parameter(1)")
    assert run_pass(AlgebraicSimplifier(), text)[1] is False


def test_full_dynamic_update_slice_is_the_update():
    text = module_of("""  ROOT d = f32[5,6] dynamic-update-slice(p0, p1, p2, p2)""",
                     params="p0 = f32[5,6] parameter(0)\n  p1 = f32[5,6] parameter(1)\n  p2 = s32[] parameter(2)")
    assert root(simplify(text, args=[np.ones((5, 6), np.float32), np.zeros((5, 6), np.float32),
                                     np.int32(3)])).name == "p1"


def test_nothing_to_do_returns_false():
    text = module_of("""  e = f32[4] exponential(p0)
  ROOT a = f32[4] add(e, p0)""")
    module, changed = run_pass(AlgebraicSimplifier(), text)
    assert not changed
    assert opcodes(module) == ["parameter", "exponential", "add"]


def test_printed_result():
    text = module_of("""  t = f32[3,2] transpose(p0), dimensions={1,0}
  t2 = f32[2,3] transpose(t), dimensions={1,0}
  one = f32[] constant(1)
  b = f32[2,3] broadcast(one), dimensions={}
  ROOT m = f32[2,3] multiply(t2, b)""", params="p0 = f32[2,3] parameter(0)")
    m = simplify(text)
    assert m.to_text() == parse_hlo_module(module_of("  ROOT p0 = f32[2,3] parameter(0)", params="")).to_text()


def test_scheduled_module_keeps_a_valid_order():
    text = """HloModule m, is_scheduled=true

ENTRY e {
  p0 = f32[4]{0} parameter(0)
  c = f32[] constant(4)
  b = f32[4]{0} broadcast(c), dimensions={}
  d = f32[4]{0} divide(p0, b)
  ROOT e = f32[4]{0} exponential(d)
}
"""
    module = parse_hlo_module(text)
    assert AlgebraicSimplifier().run(module)
    order = module.entry.instructions
    position = {id(i): n for n, i in enumerate(order)}
    for instr in order:
        assert all(position[id(o)] < position[id(instr)] for o in instr.operands)
    assert_same_results(text, module)


@pytest.mark.parametrize("dtype", ["s32", "u8", "pred"])
def test_integer_self_compare_all_directions(dtype):
    body = "\n".join(f"  c{d} = pred[3] compare(p0, p0), direction={d}" for d in ("EQ", "NE", "LT", "LE", "GT", "GE"))
    body += "\n  ROOT t = (pred[3], pred[3], pred[3], pred[3], pred[3], pred[3]) tuple(cEQ, cNE, cLT, cLE, cGT, cGE)"
    simplify(module_of(body, params=f"p0 = {dtype}[3] parameter(0)"))


def test_dot_with_a_batch_broadcast_rhs_is_one_matrix_product():
    # NumPy's x @ w for x f32[6,2,4] and w f32[4,3], as tracing writes it.
    text = module_of("""  w = f32[4,3] parameter(1)
  bw = f32[6,4,3] broadcast(w), dimensions={1,2}
  ROOT d = f32[6,2,3] dot(p0, bw), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}""",
                     params="p0 = f32[6,2,4] parameter(0)")
    rng = np.random.default_rng(0)
    m = simplify(text, args=[rng.standard_normal((6, 2, 4)).astype(np.float32),
                             rng.standard_normal((4, 3)).astype(np.float32)])
    d = root(m)
    assert d.opcode == "dot" and d.operands[1].name == "w"
    assert "broadcast" not in opcodes(m)
    assert tuple(d.attr("lhs_batch_dims", ())) == () and tuple(d.attr("rhs_contracting_dims")) == (0,)


def test_dot_with_a_broadcast_that_is_not_only_batch_is_kept():
    # The broadcast also adds a non-batch dimension: not the pattern.
    text = module_of("""  w = f32[4] parameter(1)
  bw = f32[6,4,3] broadcast(w), dimensions={1}
  ROOT d = f32[6,2,3] dot(p0, bw), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}""",
                     params="p0 = f32[6,2,4] parameter(0)")
    module, changed = run_pass(AlgebraicSimplifier(), text)
    assert "broadcast" in opcodes(module)


def test_a_copy_of_a_tuple_is_a_tuple_of_copies():
    import xla
    text = """HloModule m
ENTRY e {
  p = (f32[4], (s32[2], f32[])) parameter(0)
  c = (f32[4], (s32[2], f32[])) copy(p)
  a = f32[4] get-tuple-element(c), index=0
  ROOT r = (f32[4], (f32[4], (s32[2], f32[]))) tuple(a, c)
}"""
    arg = (np.arange(4, dtype=np.float32), (np.array([5, 6], np.int32), np.float32(7)))
    exe = xla.compile(text, "cpu")   # was: "does not support copy (tuple-shaped)"
    got = exe.execute(arg)
    np.testing.assert_array_equal(got[0], arg[0])
    np.testing.assert_array_equal(got[1][0], arg[0])
    np.testing.assert_array_equal(got[1][1][0], arg[1][0])
    assert float(got[1][1][1]) == 7.0
    module = parse_hlo_module(text)
    assert AlgebraicSimplifier().run(module)
    assert not any(i.opcode == "copy" and i.shape.is_tuple for i in module.entry.instructions)


def test_a_broadcast_scalar_is_not_materialized():
    """x * broadcast(1) over f32[2^26] simplifies without making an array of
    that size (the splat check once made two, 512 MiB, and 2 s of compile)."""
    import tracemalloc
    text = """HloModule m
ENTRY e {
  x = f32[67108864] parameter(0)
  one = f32[] constant(1)
  b = f32[67108864] broadcast(one), dimensions={}
  ROOT y = f32[67108864] multiply(x, b)
}"""
    tracemalloc.start()
    try:
        module, changed = run_pass(AlgebraicSimplifier(), text)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert changed and module.entry.root_instruction.opcode == "parameter", opcodes(module)
    assert peak < 16 << 20, peak
