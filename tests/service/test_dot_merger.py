"""DotMerger: dots sharing an operand become one dot of the concatenated
other operands, sliced back; dependent dots, and dots that differ in
types, attributes or size, are left alone. Values from NumPy, and the
interpreter on the module before and after."""
import numpy as np

from pass_test_util import assert_same_results, evaluate, run_pass
from xla.backends.cpu.pipeline import constant_weights, cpu_pipeline
from xla.hlo.parser import parse_hlo_module
from xla.hlo.verifier import verify_module
from xla.service.dot_merger import DotMerger
from xla.tools.arrays import random_args

# Attention's projections: x @ wq, x @ wk, x @ wv (widths 4, 6, 3).
QKV = """HloModule m

ENTRY %main (x: f32[8,16], wq: f32[16,4], wk: f32[16,6], wv: f32[16,3]) -> (f32[8,4], f32[8,6], f32[8,3]) {
  %x = f32[8,16] parameter(0)
  %wq = f32[16,4] parameter(1)
  %wk = f32[16,6] parameter(2)
  %wv = f32[16,3] parameter(3)
  %q = f32[8,4] dot(%x, %wq), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %k = f32[8,6] dot(%x, %wk), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %v = f32[8,3] dot(%x, %wv), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT %t = (f32[8,4], f32[8,6], f32[8,3]) tuple(%q, %k, %v)
}
"""


def args_of(text, seed=0):
    module = parse_hlo_module(text)
    return random_args([p.shape for p in module.entry.parameters], seed=seed)


def check_against_numpy(text, module, expected_fn, rtol=1e-5):
    """The merged module's values on the interpreter are NumPy's, and the
    unmerged module's."""
    args = args_of(text)
    got = evaluate(module, args)
    want = expected_fn(*[np.asarray(a, np.float64) for a in args])
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g, np.float64), w, rtol=rtol, atol=rtol)
    assert_same_results(text, module, args=args, rtol=rtol, atol=rtol)


def test_shared_lhs_one_dot_of_the_concatenated_weights():
    module, changed = run_pass(DotMerger(), QKV)
    assert changed
    assert module.to_text() == """HloModule m

ENTRY %main (x: f32[8,16], wq: f32[16,4], wk: f32[16,6], wv: f32[16,3]) -> (f32[8,4], f32[8,6], f32[8,3]) {
  %x = f32[8,16] parameter(0)
  %wq = f32[16,4] parameter(1)
  %wk = f32[16,6] parameter(2)
  %wv = f32[16,3] parameter(3)
  %concatenate.1 = f32[16,13] concatenate(%wq, %wk, %wv), dimensions={1}
  %dot.2 = f32[8,13] dot(%x, %concatenate.1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %q = f32[8,4] slice(%dot.2), slice={[0:8], [0:4]}
  %k = f32[8,6] slice(%dot.2), slice={[0:8], [4:10]}
  %v = f32[8,3] slice(%dot.2), slice={[0:8], [10:13]}
  ROOT %t = (f32[8,4], f32[8,6], f32[8,3]) tuple(%q, %k, %v)
}
"""
    check_against_numpy(QKV, module, lambda x, wq, wk, wv: [x @ wq, x @ wk, x @ wv])
    assert not DotMerger().run(module)  # idempotent


def test_shared_rhs_concatenates_rows():
    text = """HloModule m

ENTRY %main (a: f32[5,16], b: f32[7,16], w: f32[16,4]) -> (f32[5,4], f32[7,4]) {
  %a = f32[5,16] parameter(0)
  %b = f32[7,16] parameter(1)
  %w = f32[16,4] parameter(2)
  %da = f32[5,4] dot(%a, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %db = f32[7,4] dot(%b, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT %t = (f32[5,4], f32[7,4]) tuple(%da, %db)
}
"""
    module, changed = run_pass(DotMerger(), text)
    assert changed
    assert module.to_text() == """HloModule m

ENTRY %main (a: f32[5,16], b: f32[7,16], w: f32[16,4]) -> (f32[5,4], f32[7,4]) {
  %a = f32[5,16] parameter(0)
  %b = f32[7,16] parameter(1)
  %w = f32[16,4] parameter(2)
  %concatenate.1 = f32[12,16] concatenate(%a, %b), dimensions={0}
  %dot.2 = f32[12,4] dot(%concatenate.1, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %da = f32[5,4] slice(%dot.2), slice={[0:5], [0:4]}
  %db = f32[7,4] slice(%dot.2), slice={[5:12], [0:4]}
  ROOT %t = (f32[5,4], f32[7,4]) tuple(%da, %db)
}
"""
    check_against_numpy(text, module, lambda a, b, w: [a @ w, b @ w])


def test_batch_dimensions():
    # Per-head products as dot_decomposer leaves them: [B, M, K] x [B, K, N].
    shared_lhs = """HloModule m

ENTRY %main (x: f32[3,5,8], p: f32[3,8,2], q: f32[3,8,4]) -> (f32[3,5,2], f32[3,5,4]) {
  %x = f32[3,5,8] parameter(0)
  %p = f32[3,8,2] parameter(1)
  %q = f32[3,8,4] parameter(2)
  %xp = f32[3,5,2] dot(%x, %p), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}
  %xq = f32[3,5,4] dot(%x, %q), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}
  ROOT %t = (f32[3,5,2], f32[3,5,4]) tuple(%xp, %xq)
}
"""
    module, changed = run_pass(DotMerger(), shared_lhs)
    assert changed
    text = module.to_text()
    assert "%concatenate.1 = f32[3,8,6] concatenate(%p, %q), dimensions={2}" in text
    assert "%xp = f32[3,5,2] slice(%dot.2), slice={[0:3], [0:5], [0:2]}" in text
    assert "%xq = f32[3,5,4] slice(%dot.2), slice={[0:3], [0:5], [2:6]}" in text
    check_against_numpy(shared_lhs, module, lambda x, p, q: [x @ p, x @ q])

    # A shared rhs: the lhs operands' rows are concatenated, the result
    # sliced along the dimension after the batch one.
    shared_rhs = """HloModule m

ENTRY %main (a: f32[3,2,8], b: f32[3,5,8], w: f32[3,8,4]) -> (f32[3,2,4], f32[3,5,4]) {
  %a = f32[3,2,8] parameter(0)
  %b = f32[3,5,8] parameter(1)
  %w = f32[3,8,4] parameter(2)
  %aw = f32[3,2,4] dot(%a, %w), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}
  %bw = f32[3,5,4] dot(%b, %w), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}
  ROOT %t = (f32[3,2,4], f32[3,5,4]) tuple(%aw, %bw)
}
"""
    module, changed = run_pass(DotMerger(), shared_rhs)
    assert changed
    text = module.to_text()
    assert "%concatenate.1 = f32[3,7,8] concatenate(%a, %b), dimensions={1}" in text
    assert "%bw = f32[3,5,4] slice(%dot.2), slice={[0:3], [2:7], [0:4]}" in text
    check_against_numpy(shared_rhs, module, lambda a, b, w: [a @ w, b @ w])


def test_a_dependence_between_the_dots_blocks_the_merge():
    # k's weights are computed from q (through a tanh and a concatenate):
    # one dot would need its own result.
    text = """HloModule m

ENTRY %main (x: f32[4,8], wq: f32[8,4]) -> f32[4,4] {
  %x = f32[4,8] parameter(0)
  %wq = f32[8,4] parameter(1)
  %q = f32[4,4] dot(%x, %wq), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %t = f32[4,4] tanh(%q)
  %wk = f32[8,4] concatenate(%t, %t), dimensions={0}
  ROOT %k = f32[4,4] dot(%x, %wk), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""
    module, changed = run_pass(DotMerger(), text)
    assert not changed
    assert module.to_text() == parse_hlo_module(text).to_text()


def test_a_dependence_made_by_an_earlier_merge_blocks_the_merge():
    # a and b share x, c and d share y; each pair is independent in the
    # module as written, but d reads a and b reads c. Once a and b are one
    # dot, c reaches d through it (c -> b = a -> d): merging c and d too
    # would make a cycle.
    text = """HloModule m

ENTRY %main (x: f32[4,8], y: f32[4,8], wa: f32[8,4], wc: f32[8,4]) -> (f32[4,4], f32[4,4]) {
  %x = f32[4,8] parameter(0)
  %y = f32[4,8] parameter(1)
  %wa = f32[8,4] parameter(2)
  %wc = f32[8,4] parameter(3)
  %a = f32[4,4] dot(%x, %wa), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %c = f32[4,4] dot(%y, %wc), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %wb = f32[8,4] concatenate(%c, %c), dimensions={0}
  %b = f32[4,4] dot(%x, %wb), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %wd = f32[8,4] concatenate(%a, %a), dimensions={0}
  %d = f32[4,4] dot(%y, %wd), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT %t = (f32[4,4], f32[4,4]) tuple(%b, %d)
}
"""
    module, changed = run_pass(DotMerger(), text)  # run_pass verifies: no cycle
    assert changed
    dots = [i for i in module.entry.instructions if i.opcode == "dot"]
    # a and b merged (the first pair found); c and d not.
    assert sorted(d.name for d in dots) == ["c", "d", "dot.2"]
    merged = module.entry.instruction("dot.2")
    assert merged.operands[0].name == "x"
    assert [o.name for o in merged.operands[1].operands] == ["wa", "wb"]

    def expected(x, y, wa, wc):
        a, c = x @ wa, y @ wc
        return [x @ np.concatenate([c, c]), y @ np.concatenate([a, a])]
    check_against_numpy(text, module, expected)


def test_differences_that_block_the_merge():
    two = """HloModule m

ENTRY %main (x: f32[4,8], a: f32[8,4], b: f32[8,4]) -> (f32[4,4], f32[4,4]) {
  %x = f32[4,8] parameter(0)
  %a = f32[8,4] parameter(1)
  %b = f32[8,4] parameter(2)
  %p = f32[4,4] dot(%x, %a), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %q = f32[4,4] dot(%x, %b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT %t = (f32[4,4], f32[4,4]) tuple(%p, %q)
}
"""
    assert run_pass(DotMerger(), two)[1]  # the baseline merges
    q_line = "%q = f32[4,4] dot(%x, %b), lhs_contracting_dims={1}, rhs_contracting_dims={0}"
    cases = {
        "precision": two.replace(q_line, q_line + ", operand_precision={highest,highest}"),
        "result type": two.replace(q_line, q_line.replace("%q = f32", "%q = f64"))
                          .replace("(f32[4,4], f32[4,4]) tuple", "(f32[4,4], f64[4,4]) tuple")
                          .replace("-> (f32[4,4], f32[4,4])", "-> (f32[4,4], f64[4,4])"),
        "rhs type": two.replace("b: f32[8,4]", "b: f64[8,4]")
                       .replace("%b = f32[8,4]", "%b = f64[8,4]"),
        # An order the module asks for is kept as it is.
        "control dependency": two.replace(q_line, q_line + ", control-predecessors={%p}"),
        # b stored column-major: the concatenate would need one layout.
        "layout": two.replace("%b = f32[8,4] parameter(2)", "%b = f32[8,4]{0,1} parameter(2)"),
        # x as lhs of one and rhs of the other.
        "other side": two.replace(q_line, "%q = f32[4,4] dot(%b, %x), lhs_contracting_dims={0}, "
                                  "rhs_contracting_dims={1}"),
        "dimension numbers": two.replace("b: f32[8,4]", "b: f32[4,8]")
                                .replace("%b = f32[8,4]", "%b = f32[4,8]")
                                .replace(q_line, "%q = f32[4,4] dot(%x, %b), lhs_contracting_dims={1}, "
                                         "rhs_contracting_dims={1}"),
        # Matrix-vector products: the vectors have no free dimension to concatenate along.
        "no free dimension": two.replace("a: f32[8,4], b: f32[8,4]", "a: f32[8], b: f32[8]")
                                .replace("%a = f32[8,4]", "%a = f32[8]")
                                .replace("%b = f32[8,4]", "%b = f32[8]")
                                .replace("f32[4,4]", "f32[4]"),
    }
    for why, text in cases.items():
        module, changed = run_pass(DotMerger(), text, verify=why != "result type")
        assert not changed, why
    # Metadata does not block (the first dot's is kept).
    meta = two.replace(q_line, q_line + ', metadata={op_name="k"}')
    module, changed = run_pass(DotMerger(), meta)
    assert changed


def test_size_threshold():
    # p and q: 4x8 + 8x4 + 4x4 floats = 320 bytes each.
    two = """HloModule m

ENTRY %main (x: f32[4,8], a: f32[8,4], b: f32[8,100]) -> (f32[4,4], f32[4,100]) {
  %x = f32[4,8] parameter(0)
  %a = f32[8,4] parameter(1)
  %b = f32[8,100] parameter(2)
  %p = f32[4,4] dot(%x, %a), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %q = f32[4,100] dot(%x, %b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT %t = (f32[4,4], f32[4,100]) tuple(%p, %q)
}
"""
    # q: 4x8 + 8x100 + 4x100 floats = 4928 bytes.
    assert not run_pass(DotMerger(max_size_to_merge=319), two)[1]   # both too large
    module, changed = run_pass(DotMerger(max_size_to_merge=320), two)  # p is small: joins q
    assert changed
    check_against_numpy(two, module, lambda x, a, b: [x @ a, x @ b])
    assert run_pass(DotMerger(max_size_to_merge=4928), two)[1]


def test_can_merge_hook_and_constant_operands():
    # The CPU's rule: only constants are concatenated (once, at compile time).
    assert not run_pass(DotMerger(can_merge=constant_weights), QKV)[1]
    rng = np.random.default_rng(1)
    wq, wk = (np.round(rng.standard_normal((16, n)), 2) for n in (4, 6))

    def literal(w):
        return "{" + ", ".join("{" + ", ".join(f"{v:g}" for v in row) + "}" for row in w) + "}"
    text = f"""HloModule m

ENTRY %main (x: f32[8,16]) -> (f32[8,4], f32[8,6]) {{
  %x = f32[8,16] parameter(0)
  %wq = f32[16,4] constant({literal(wq)})
  %wk = f32[16,6] constant({literal(wk)})
  %q = f32[8,4] dot(%x, %wq), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
  %k = f32[8,6] dot(%x, %wk), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
  ROOT %t = (f32[8,4], f32[8,6]) tuple(%q, %k)
}}
"""
    module, changed = run_pass(DotMerger(can_merge=constant_weights), text)
    assert changed
    ops = [i.opcode for i in module.entry.instructions]
    assert ops == ["parameter", "constant", "dot", "slice", "slice", "tuple"], ops
    (w,) = [i for i in module.entry.instructions if i.opcode == "constant"]
    assert w.shape.dimensions == (16, 10)
    np.testing.assert_array_equal(w.literal, np.concatenate([wq, wk], 1).astype(np.float32))
    check_against_numpy(text, module, lambda x: [x @ wq.astype(np.float32),
                                                 x @ wk.astype(np.float32)])

    # In the CPU pipeline: constants merge, parameters do not.
    for source, dots in ((text, 1), (QKV, 3)):
        m = parse_hlo_module(source)
        cpu_pipeline().run(m)
        verify_module(m)
        assert sum(i.opcode == "dot" for c in m.computations for i in c.instructions) == dots


def test_dots_in_a_called_computation_and_dead_code_free():
    # A while body's dots merge too; the fused computations are left alone.
    body = QKV.replace("ENTRY %main", "%body").replace(
        "HloModule m\n", "")
    text = "HloModule m\n" + body + """
ENTRY %e (x: f32[8,16], wq: f32[16,4], wk: f32[16,6], wv: f32[16,3]) -> (f32[8,4], f32[8,6], f32[8,3]) {
  %x = f32[8,16] parameter(0)
  %wq = f32[16,4] parameter(1)
  %wk = f32[16,6] parameter(2)
  %wv = f32[16,3] parameter(3)
  ROOT %c = (f32[8,4], f32[8,6], f32[8,3]) call(%x, %wq, %wk, %wv), to_apply=%body
}
"""
    module, changed = run_pass(DotMerger(), text)
    assert changed
    body = module.computation("body")
    assert [i.opcode for i in body.instructions].count("dot") == 1
    assert_same_results(text, module)
