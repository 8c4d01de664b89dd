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
from xla.service.instruction_fusion import InstructionFusion

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
