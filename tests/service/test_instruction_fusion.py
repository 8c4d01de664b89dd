"""InstructionFusion ("fusion"): producer-consumer fusion decided in C++.

Each test parses a module, runs the pass, checks the structure of the
result, and checks that the interpreter computes the same numbers before
and after. The corpus test runs the pass over every unoptimized module of
tests/corpus.
"""
import pytest

from pass_test_util import (assert_corpus_results, assert_same_results, corpus_has_elided_constants,
                            opcodes, run_pass, CORPUS_DIR)
from xla.hlo.parser import parse_hlo_module
from xla.hlo.verifier import verify_module
from xla.hlo.opcodes import ELEMENTWISE as opcodes_ELEMENTWISE
from xla.service.instruction_fusion import (InstructionFusion, MAX_FUSION_DEPTH,
                                            MAX_FUSION_EMITTED_OPS)

ADD = """
add_f32 {
  lhs = f32[] parameter(0)
  rhs = f32[] parameter(1)
  ROOT sum = f32[] add(lhs, rhs)
}
"""


def fusions(module, comp=None):
    comp = comp or module.entry
    return [i for i in comp.instructions if i.opcode == "fusion"]


def fused_opcodes(fusion):
    return sorted(i.opcode for i in fusion.attr("calls").instructions if i.opcode != "parameter")


def run(text, **options):
    module, changed = run_pass(InstructionFusion(check=True, **options), text)
    assert_same_results(text, module)
    return module, changed


SEED = """HloModule seed
""" + ADD + """
ENTRY main {
  x = f32[1024] parameter(0)
  y = f32[1024] parameter(1)
  z = f32[1024] parameter(2)
  m = f32[1024] multiply(y, z)
  a = f32[1024] add(x, m)
  zero = f32[] constant(0)
  ROOT r = f32[] reduce(a, zero), dimensions={0}, to_apply=add_f32
}
"""


def test_reduce_of_elementwise_is_one_input_fusion():
    module, changed = run(SEED)
    assert changed
    assert opcodes(module) == ["parameter", "parameter", "parameter", "fusion"]
    (fusion,) = fusions(module)
    assert fusion is module.entry.root_instruction
    assert fusion.attr("kind") == "kInput"
    assert fused_opcodes(fusion) == ["add", "constant", "multiply", "reduce"]
    text = module.to_text()
    assert "ROOT fusion = f32[] fusion(y, z, x), kind=kInput, calls=fused_computation" in text
    # The fused computation is printed before its caller, parameters named XLA's way.
    assert text.index("fused_computation {") < text.index("ENTRY main")
    assert [p.name for p in fusion.attr("calls").parameters] == ["param_0", "param_1", "param_2"]


def test_elementwise_chain_is_one_loop_fusion():
    text = """HloModule chain
ENTRY main {
  x = f32[64,32] parameter(0)
  y = f32[64,32] parameter(1)
  n = f32[64,32] negate(x)
  e = f32[64,32] exponential(n)
  m = f32[64,32] multiply(e, y)
  c = f32[] constant(2)
  b = f32[64,32] broadcast(c), dimensions={}
  ROOT a = f32[64,32] add(m, b)
}
"""
    module, _ = run(text)
    assert opcodes(module) == ["parameter", "parameter", "fusion"]
    (fusion,) = fusions(module)
    assert fusion.attr("kind") == "kLoop"
    assert fused_opcodes(fusion) == ["add", "broadcast", "constant", "exponential", "multiply",
                                     "negate"]


def test_expensive_producer_is_not_duplicated():
    text = """HloModule expensive
ENTRY main {
  x = f32[64,32] parameter(0)
  e = f32[64,32] exponential(x)
  n = f32[64,32] negate(e)
  n2 = f32[64,32] abs(n)
  s = f32[64,32] sine(e)
  s2 = f32[64,32] abs(s)
  ROOT d = f32[64,64] dot(n2, s2), lhs_contracting_dims={1}, rhs_contracting_dims={1}
}
"""
    module, _ = run(text, multi_output=False)
    all_fused = [i.opcode for f in fusions(module) for i in f.attr("calls").instructions]
    assert all_fused.count("exponential") <= 1
    exps = [i for i in module.entry.instructions if i.opcode == "exponential"]
    assert all_fused.count("exponential") + len(exps) == 1


def test_cheap_broadcast_is_duplicated():
    text = """HloModule dup
ENTRY main {
  s = f32[] parameter(0)
  x = f32[64,32] parameter(1)
  b = f32[64,32] broadcast(s), dimensions={}
  a = f32[64,32] add(b, x)
  a2 = f32[64,32] abs(a)
  m = f32[64,32] multiply(b, x)
  m2 = f32[64,32] abs(m)
  ROOT d = f32[64,64] dot(a2, m2), lhs_contracting_dims={1}, rhs_contracting_dims={1}
}
"""
    module, _ = run(text, multi_output=False)
    fs = fusions(module)
    assert len(fs) == 2
    for f in fs:
        assert "broadcast" in fused_opcodes(f)
    assert "broadcast" not in opcodes(module)
    # The copies get fresh names; no name is used twice (verify_module checks).
    names = [i.name for f in fs for i in f.attr("calls").instructions if i.opcode == "broadcast"]
    assert len(set(names)) == 2


ROW_UPDATED_TWICE = """HloModule row_update

ENTRY main {
  p = f64[8,8] parameter(0)
  i = s64[] parameter(1)
  s = f64[] parameter(2)
  x = f64[8,8] exponential(p)
  zero = s64[] constant(0)
  row = f64[1,8] dynamic-slice(x, i, zero), dynamic_slice_sizes={1,8}
  scale = f64[1,8] broadcast(s), dimensions={}
  new = f64[1,8] multiply(row, scale)
  d1 = f64[8,8] dynamic-update-slice(x, new, i, zero)
  again = f64[1,8] dynamic-slice(d1, i, zero), dynamic_slice_sizes={1,8}
  sum = f64[1,8] add(new, again)
  ROOT d2 = f64[8,8] dynamic-update-slice(d1, sum, i, zero)
}
"""


def test_no_copy_reads_an_array_after_its_in_place_update():
    # ``new`` reads x and is used on both sides of d1. Copied into sum's
    # fusion it would read x after d1 wrote it, so d1 could not update x in
    # place (a copy of x every time it runs). It is computed once:
    #   before: fusion.1 = fusion(x, i, s, d1)   (row and new recomputed)
    #   after:  fusion.1 = fusion(d1, i, fusion) (new read from its fusion)
    from xla.service.buffer_assignment import assign_buffers
    from xla.service.hlo_memory_scheduler import HloMemoryScheduler
    module, _ = run(ROW_UPDATED_TWICE, multi_output=False)
    entry = module.entry
    d1 = next(i for i in entry.instructions if i.name == "d1")
    (new,) = [f for f in fusions(module) if f.attr("calls").root_instruction.name == "new"]
    (later,) = [f for f in fusions(module) if f.attr("calls").root_instruction.name == "sum"]
    x = d1.operands[0]
    assert d1.operands[1] is new
    assert x not in later.operands and new in later.operands and d1 in later.operands
    assert fused_opcodes(later) == ["add", "constant", "dynamic-slice"]
    HloMemoryScheduler().run(module)
    ba = assign_buffers(module)
    assert ba.buffer(d1).slot == ba.buffer(x).slot      # in place


def test_a_producer_used_only_after_an_in_place_update_still_fuses():
    # All of ``new``'s users come after d1: nothing to keep apart, it fuses.
    text = ROW_UPDATED_TWICE.replace("d1 = f64[8,8] dynamic-update-slice(x, new, i, zero)",
                                     "d1 = f64[8,8] dynamic-update-slice(x, row, i, zero)")
    module, _ = run(text, multi_output=False)
    (later,) = [f for f in fusions(module) if f.attr("calls").root_instruction.name == "sum"]
    assert "multiply" in fused_opcodes(later)


def test_no_cycle_through_unfusible_user():
    # p is used by c and by the unfusible dot d, which c uses too: fusing p
    # into c's fusion alone would make p -> d -> fusion(p, c) a cycle.
    for op in ("add", "divide"):  # cheap (duplicated) and expensive (not)
        text = f"""HloModule diamond
ENTRY main {{
  x = f32[16,16] parameter(0)
  p = f32[16,16] {op}(x, x)
  d = f32[16,16] dot(p, x), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
  c = f32[16,16] multiply(p, d)
  ROOT r = f32[16,16] negate(c)
}}
"""
        module, _ = run(text)  # verify_module rejects cycles
        dot = next(i for i in module.entry.instructions if i.opcode == "dot")
        assert dot.operands[0].opcode in ("fusion", op, "get-tuple-element")



# An MLP layer's backward pass as JAX lowers it (after layout assignment):
# the ReLU gradient g is read by the dot for dx, through a transposed
# bitcast by the dot for dW, and by the bias gradient's reduce.
RELU_GRADIENT = """HloModule relu_gradient
""" + ADD + """
ENTRY main {
  b = f32[41]{0} parameter(0)
  z = f32[8,41]{1,0} parameter(1)
  dy = f32[8,41]{1,0} parameter(2)
  w = f32[40,41]{1,0} parameter(3)
  x = f32[8,40]{1,0} parameter(4)
  bb = f32[8,41]{1,0} broadcast(b), dimensions={1}
  pre = f32[8,41]{1,0} add(z, bb)
  zero = f32[] constant(0)
  zeros = f32[8,41]{1,0} broadcast(zero), dimensions={}
  gt = pred[8,41]{1,0} compare(pre, zeros), direction=GT
  g = f32[8,41]{1,0} select(gt, dy, zeros)
  gt_view = f32[41,8]{0,1} bitcast(g)
  dx = f32[8,40]{1,0} dot(g, w), lhs_contracting_dims={1}, rhs_contracting_dims={1}
  dw = f32[41,40]{1,0} dot(gt_view, x), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  db = f32[41]{0} reduce(g, zero), dimensions={0}, to_apply=add_f32
  ROOT t = (f32[8,40]{1,0}, f32[41,40]{1,0}, f32[41]{0}) tuple(dx, dw, db)
}
"""


def test_a_bitcast_read_only_by_unfused_users_stays_a_view():
    module, _ = run(RELU_GRADIENT, multi_output=False)
    view = next(i for i in module.entry.instructions if i.opcode == "bitcast")
    dx = next(i for i in module.entry.instructions if i.name == "dx")
    # The bitcast reads the fusion that computes g for dx: g is computed
    # once for both dots, not again in a fusion rooted at the bitcast.
    assert view.operands[0] is dx.operands[0]
    assert view.operands[0].opcode == "fusion"
    selects = [f for f in fusions(module) if "select" in fused_opcodes(f)]
    roots = sorted(f.attr("calls").root_instruction.opcode for f in selects)
    assert roots == ["reduce", "select"]   # the reduce's own copy, and g


def test_the_gradient_is_the_bias_gradient_reduce_s_second_output():
    # With multi-output fusion, g is computed once, in the reduce's fusion,
    # and the dots (one through the bitcast view) read that output.
    module, _ = run(RELU_GRADIENT)
    (fusion,) = fusions(module)
    root = fusion.attr("calls").root_instruction
    assert root.opcode == "tuple"
    assert sorted(o.opcode for o in root.operands) == ["reduce", "select"]
    view = next(i for i in module.entry.instructions if i.opcode == "bitcast")
    dx = next(i for i in module.entry.instructions if i.name == "dx")
    g = dx.operands[0]
    assert g.opcode == "get-tuple-element" and g.operands[0] is fusion
    assert view.operands[0] is g


# The same over [batch, seq, features] as a transformer's MLP writes it: g
# reaches the dot for dx through a reshape to [batch * seq, features],
# which moves no byte (reshape-to-bitcast makes it a bitcast after fusion).
RESHAPED_GRADIENT = RELU_GRADIENT.replace("f32[8,41]{1,0}", "f32[2,4,41]{2,1,0}").replace(
    "f32[8,40]{1,0} parameter(4)", "f32[8,40]{1,0} parameter(4)").replace(
    "bb = f32[2,4,41]{2,1,0} broadcast(b), dimensions={1}",
    "bb = f32[2,4,41]{2,1,0} broadcast(b), dimensions={2}").replace(
    "gt = pred[8,41]{1,0} compare", "gt = pred[2,4,41]{2,1,0} compare").replace(
    "dx = f32[8,40]{1,0} dot(g, w)",
    "g2 = f32[8,41]{1,0} reshape(g)\n  dx = f32[8,40]{1,0} dot(g2, w)").replace(
    "db = f32[41]{0} reduce(g, zero), dimensions={0}", "db = f32[41]{0} reduce(g, zero), dimensions={0,1}")


@pytest.mark.parametrize("multi_output", [False, True])
def test_a_reshape_that_moves_no_byte_read_only_by_unfused_users_stays_a_view(multi_output):
    module, _ = run(RESHAPED_GRADIENT, multi_output=multi_output)
    # g is computed once for the reshape and the transposed view (and, with
    # multi-output fusion, once in all), not again in a fusion rooted at the
    # reshape.
    selects = [f for f in fusions(module) if "select" in fused_opcodes(f)]
    roots = sorted(f.attr("calls").root_instruction.opcode for f in selects)
    assert roots == (["tuple"] if multi_output else ["reduce", "select"]), roots
    reshape = next(i for i in module.entry.instructions if i.name == "g2")
    assert reshape.opcode == "reshape"
    view = next(i for i in module.entry.instructions if i.opcode == "bitcast")
    assert reshape.operands[0] is view.operands[0]


def test_a_bitcast_read_by_a_fusion_still_fuses():
    text = RELU_GRADIENT.replace(
        "ROOT t = (f32[8,40]{1,0}, f32[41,40]{1,0}, f32[41]{0}) tuple(dx, dw, db)",
        "n = f32[41,8]{0,1} negate(gt_view)\n"
        "  ROOT t = (f32[8,40]{1,0}, f32[41,40]{1,0}, f32[41]{0}, f32[41,8]{0,1}) "
        "tuple(dx, dw, db, n)")
    module, _ = run(text, multi_output=False)
    (negated,) = [f for f in fusions(module) if f.attr("calls").root_instruction.opcode == "negate"]
    assert "bitcast" in fused_opcodes(negated)

def test_operand_bound():
    params = "\n".join(f"  p{i} = f32[8] parameter({i})" for i in range(20))
    chain = ["  a1 = f32[8] add(p0, p1)"] + [f"  a{i} = f32[8] add(a{i - 1}, p{i})"
                                            for i in range(2, 20)]
    text = "HloModule wide\nENTRY main {\n" + params + "\n" + "\n".join(chain).replace(
        "  a19 =", "  ROOT a19 =") + "\n}\n"
    module, _ = run(text, max_operands=6)
    fs = fusions(module)
    assert len(fs) >= 4
    assert all(len(f.operands) <= 6 for f in fs)


def test_while_body_is_fused():
    text = """HloModule loop
""" + ADD + """
cond {
  cs = (s32[], f32[128]) parameter(0)
  i = s32[] get-tuple-element(cs), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}

body {
  bs = (s32[], f32[128]) parameter(0)
  j = s32[] get-tuple-element(bs), index=0
  one = s32[] constant(1)
  j1 = s32[] add(j, one)
  v = f32[128] get-tuple-element(bs), index=1
  t = f32[128] tanh(v)
  h = f32[] constant(0.5)
  hb = f32[128] broadcast(h), dimensions={}
  v1 = f32[128] multiply(t, hb)
  ROOT out = (s32[], f32[128]) tuple(j1, v1)
}

ENTRY main {
  x = f32[128] parameter(0)
  z = s32[] constant(0)
  init = (s32[], f32[128]) tuple(z, x)
  w = (s32[], f32[128]) while(init), condition=cond, body=body
  ROOT res = f32[128] get-tuple-element(w), index=1
}
"""
    module, changed = run(text)
    assert changed
    body = module.computation("body")
    (fusion,) = fusions(module, body)
    assert fused_opcodes(fusion) == ["broadcast", "constant", "multiply", "tanh"]
    assert not fusions(module, module.computation("add_f32"))


# ----- bounds: emitted code and depth ------------------------------------------
def emitted_ops(fused):
    """The CPU emitter's work for one fused computation: each instruction's
    element generator runs once per distinct index it is asked for, where an
    elementwise instruction passes its own index to its operands and every
    other one (slice, concatenate, pad, broadcast, ...) computes a new index
    per operand it reads. Counts the (instruction, index) evaluations,
    parameters and scalar constants left out."""
    fresh = {}
    seen = set()
    root = fused.root_instruction
    stack = [(o, 0) for o in root.operands] if root.opcode == "tuple" else [(root, 0)]
    while stack:
        h, index = stack.pop()
        if (id(h), index) in seen:
            continue
        seen.add((id(h), index))
        own = h.opcode in opcodes_ELEMENTWISE and all(
            o.shape.dimensions == h.shape.dimensions for o in h.operands)
        for slot, o in enumerate(h.operands):
            stack.append((o, index if own else fresh.setdefault((id(h), index, slot), len(fresh) + 1)))
    by_id = {id(i): i for i in fused.instructions}
    return sum(1 for key, _ in seen
               if by_id[key].opcode != "parameter"
               and not (by_id[key].opcode == "constant" and by_id[key].shape.is_scalar))


def longest_chain(fused):
    """Instructions on the longest operand chain, parameters and scalar
    constants left out (they end every chain)."""
    length = {}
    for h in fused.post_order():
        if h.opcode == "parameter" or (h.opcode == "constant" and h.shape.is_scalar):
            length[id(h)] = 0
        else:
            length[id(h)] = 1 + max((length[id(o)] for o in h.operands), default=0)
    return max(length.values())


def stencil(steps, n=64, form="concatenate"):
    """``steps`` steps of u = 0.25*u[i-1] + 0.5*u[i] + 0.25*u[i+1]: the module
    xla.jit traces for np.concatenate([u[:1], u[:-1]]) and friends, or the
    same with pads of slices (zero boundary)."""
    lines = [f"HloModule stencil_{steps}", "ENTRY main {", f"  u0 = f32[{n}] parameter(0)",
             "  q = f32[] constant(0.25)", "  h = f32[] constant(0.5)"]
    if form == "pad":
        lines.append("  z = f32[] constant(0)")
    for k in range(steps):
        u = f"u{k}"
        if form == "concatenate":
            lines += [f"  a{k} = f32[1] slice({u}), slice={{[0:1]}}",
                      f"  b{k} = f32[{n - 1}] slice({u}), slice={{[0:{n - 1}]}}",
                      f"  left{k} = f32[{n}] concatenate(a{k}, b{k}), dimensions={{0}}",
                      f"  c{k} = f32[{n - 1}] slice({u}), slice={{[1:{n}]}}",
                      f"  d{k} = f32[1] slice({u}), slice={{[{n - 1}:{n}]}}",
                      f"  right{k} = f32[{n}] concatenate(c{k}, d{k}), dimensions={{0}}"]
        else:
            lines += [f"  b{k} = f32[{n - 1}] slice({u}), slice={{[0:{n - 1}]}}",
                      f"  left{k} = f32[{n}] pad(b{k}, z), padding=1_0",
                      f"  c{k} = f32[{n - 1}] slice({u}), slice={{[1:{n}]}}",
                      f"  right{k} = f32[{n}] pad(c{k}, z), padding=0_1"]
        lines += [f"  qb{k} = f32[{n}] broadcast(q), dimensions={{}}",
                  f"  hb{k} = f32[{n}] broadcast(h), dimensions={{}}",
                  f"  l{k} = f32[{n}] multiply(qb{k}, left{k})",
                  f"  m{k} = f32[{n}] multiply(hb{k}, {u})",
                  f"  r{k} = f32[{n}] multiply(qb{k}, right{k})",
                  f"  s{k} = f32[{n}] add(l{k}, m{k})",
                  f"  u{k + 1} = f32[{n}] add(s{k}, r{k})"]
    lines[-1] = lines[-1].replace(f"  u{steps} =", f"  ROOT u{steps} =")
    return "\n".join(lines + ["}", ""])


def test_bounds_match_the_core():
    from xla import _core
    assert (MAX_FUSION_DEPTH, MAX_FUSION_EMITTED_OPS) == (_core.MAX_FUSION_DEPTH,
                                                          _core.MAX_FUSION_EMITTED_OPS)


@pytest.mark.parametrize("form", ["concatenate", "pad"])
def test_stencil_chain_code_is_bounded(form):
    # Each step reads u through several index maps (slices at different
    # offsets). One fusion of all steps would evaluate step k's instructions
    # once per path to the output: exponential in the number of steps.
    totals = {}
    for steps in (3, 6, 12, 24):
        module, _ = run(stencil(steps, form=form))
        fs = fusions(module)
        costs = [emitted_ops(f.attr("calls")) for f in fs]
        assert max(costs) <= MAX_FUSION_EMITTED_OPS, costs
        totals[steps] = sum(costs)
    # Linear: twice the steps, at most about twice the code.
    for steps in (6, 12, 24):
        assert totals[steps] <= 2 * totals[steps // 2] + MAX_FUSION_EMITTED_OPS, totals
    # The same 6 steps with no code bound: one fusion, exponential code.
    module, _ = run(stencil(6, form=form), max_emitted_ops=1 << 50)
    (f,) = fusions(module)
    assert emitted_ops(f.attr("calls")) > 5 * totals[6], totals


def test_stencil_fusions_hold_several_steps():
    # The bound cuts the chain into fusions of a few steps each, not one per step.
    module, _ = run(stencil(12))
    fs = fusions(module)
    assert 2 <= len(fs) <= 6
    assert all(f.attr("kind") == "kLoop" for f in fs)
    assert opcodes(module) == ["parameter"] + ["fusion"] * len(fs)


def test_expensive_producer_read_at_two_offsets_is_not_fused():
    # exp(x) read through two slices would be computed twice per element;
    # negate is cheap and may be.
    for op, fused in (("exponential", False), ("negate", True)):
        text = f"""HloModule offsets
ENTRY main {{
  x = f32[64] parameter(0)
  e = f32[64] {op}(x)
  lo = f32[63] slice(e), slice={{[0:63]}}
  hi = f32[63] slice(e), slice={{[1:64]}}
  ROOT d = f32[63] subtract(hi, lo)
}}
"""
        module, _ = run(text)
        root = module.entry.root_instruction
        assert root.opcode == "fusion"
        assert (op in fused_opcodes(root)) == fused


def chain(n, op="sine"):
    body = [f"  v{k + 1} = f32[16] {op}(v{k})" for k in range(n)]
    body[-1] = body[-1].replace(f"  v{n} =", f"  ROOT v{n} =")
    return "HloModule chain\nENTRY main {\n  v0 = f32[16] parameter(0)\n" + "\n".join(body) + "\n}\n"


def test_long_chain_is_split_at_the_depth_bound():
    module, _ = run(chain(1000))
    fs = fusions(module)
    assert len(fs) == 10
    depths = [longest_chain(f.attr("calls")) for f in fs]
    assert max(depths) <= MAX_FUSION_DEPTH, depths
    assert sum(depths) == 1000
    assert opcodes(module) == ["parameter"] + ["fusion"] * 10


def test_depth_bound_is_an_option():
    module, _ = run(chain(100, "negate"), max_depth=7)
    fs = fusions(module)
    assert len(fs) == 15  # ceil(100 / 7)
    assert max(longest_chain(f.attr("calls")) for f in fs) == 7


# ----- the corpus ---------------------------------------------------------------
UNOPTIMIZED = sorted(p for p in CORPUS_DIR.glob("*.hlo") if not p.name.endswith(".optimized.hlo"))


def test_corpus_is_not_empty():
    assert UNOPTIMIZED, "no unoptimized .hlo files in tests/corpus"


@pytest.mark.parametrize("path", UNOPTIMIZED, ids=[p.name for p in UNOPTIMIZED])
def test_corpus(path):
    text = path.read_text()
    original = parse_hlo_module(text, filename=str(path))
    module = parse_hlo_module(text, filename=str(path))
    InstructionFusion(check=True).run(module)
    verify_module(module)
    if corpus_has_elided_constants(module):
        pytest.skip(f"{path.name} elides constant values; fusion ran and verified")
    assert_corpus_results(path, module, original)
