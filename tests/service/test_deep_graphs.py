"""Deep graphs: nothing between the text and the interpreter recurses in
proportion to the depth of the graph, and passes stay linear where every
instruction is rewritten.

The 100,000-instruction chain would overflow Python's stack (1,000 frames)
in any recursive walk; its multiplies by one are all rewritten by the
algebraic simplifier, which took quadratic time while each removal rebuilt
the instruction list and each user check scanned the computation.
"""
import numpy as np

from xla.runtime import get_compiler
from xla.hlo.parser import parse_hlo_module
from xla.hlo.verifier import verify_module
from xla.service.pass_registry import make_pass

CHAIN = 100_000


def _chain_text(n):
    """``n`` ops after the parameter, cycling sine, add(v, v), multiply(v, 1)."""
    lines = ["HloModule deep_chain", "", "ENTRY %main (p: f32[4]) -> f32[4] {",
             "  %v0 = f32[4] parameter(0)",
             "  %one = f32[] constant(1)",
             "  %ones = f32[4] broadcast(f32[] %one), dimensions={}"]
    for i in range(1, n + 1):
        prev = f"f32[4] %v{i - 1}"
        root = "ROOT " if i == n else ""
        if i % 3 == 1:
            lines.append(f"  {root}%v{i} = f32[4] sine({prev})")
        elif i % 3 == 2:
            lines.append(f"  {root}%v{i} = f32[4] add({prev}, {prev})")
        else:
            lines.append(f"  {root}%v{i} = f32[4] multiply({prev}, f32[4] %ones)")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _chain_reference(x, n):
    x = x.astype(np.float32)
    for i in range(1, n + 1):
        if i % 3 == 1:
            x = np.sin(x)
        elif i % 3 == 2:
            x = x + x
        else:
            x = x * np.float32(1)
    return x


def test_100k_chain_parses_verifies_prints_optimizes_and_runs():
    text = _chain_text(CHAIN)
    module = parse_hlo_module(text)
    verify_module(module)
    printed = module.to_text()
    assert printed.count("\n  %v") + printed.count("\n  ROOT %v") == CHAIN + 1
    assert CHAIN % 3 == 1 and f"ROOT %v{CHAIN} = f32[4] sine(f32[4] %v{CHAIN - 1})" in printed

    pipeline = get_compiler("interpreter").pipeline()
    pipeline.run(module)
    verify_module(module)
    ops = [i.opcode for c in module.computations for i in c.instructions]
    assert "multiply" not in ops  # x * 1 -> x, every one of them

    x = np.array([0.5, -1.0, 2.0, 0.0], np.float32)
    result = get_compiler("interpreter").compile(module).execute(x)
    np.testing.assert_allclose(np.asarray(result), _chain_reference(x, CHAIN), rtol=1e-5, atol=1e-6)


def test_algsimp_removes_every_multiply_by_one_of_a_long_chain():
    # Control dependencies elsewhere in the process must not make rewiring
    # scan this computation (they used to, once any module had some).
    parse_hlo_module("HloModule c\n\nENTRY main {\n  p = f32[] parameter(0)\n"
                     "  a = f32[] sine(p)\n  ROOT b = f32[] cosine(p), control-predecessors={a}\n}\n")
    n = 30_000
    lines = ["HloModule ones", "", "ENTRY %main (p: f32[4]) -> f32[4] {",
             "  %v0 = f32[4] parameter(0)", "  %one = f32[] constant(1)",
             "  %ones = f32[4] broadcast(f32[] %one), dimensions={}"]
    lines += [f"  %v{i} = f32[4] multiply(f32[4] %v{i - 1}, f32[4] %ones)" for i in range(1, n)]
    lines += [f"  ROOT %v{n} = f32[4] multiply(f32[4] %v{n - 1}, f32[4] %ones)", "}"]
    module = parse_hlo_module("\n".join(lines))
    assert make_pass("algsimp").run(module)
    entry = module.entry
    assert entry.root_instruction.opcode == "parameter"
    # What is left: the parameter, and the constant and broadcast that lost
    # their users (algsimp removes the operands that become unused).
    assert [i.name for i in entry.instructions] == ["v0"]
    assert entry.parameter(0).users == []


def test_deeply_nested_calls_verify_order_callees_first_and_inline():
    depth = 3000
    lines = ["HloModule nested", "", "c0 {", "  q = f32[4] parameter(0)", "  ROOT r0 = f32[4] sine(q)", "}", ""]
    for i in range(1, depth):
        lines += [f"c{i} {{", f"  p{i} = f32[4] parameter(0)",
                  f"  s{i} = f32[4] call(p{i}), to_apply=c{i - 1}",
                  f"  ROOT r{i} = f32[4] add(s{i}, p{i})", "}", ""]
    lines += ["ENTRY main {", "  p = f32[4] parameter(0)",
              f"  ROOT r = f32[4] call(p), to_apply=c{depth - 1}", "}"]
    module = parse_hlo_module("\n".join(lines))
    verify_module(module)
    order = [c.name for c in module.computations_post_order()]
    assert order == [f"c{i}" for i in range(depth)] + ["main"]
    assert module.to_text().count("call(") == depth
    # Inlined callers first: one copy of each level ends up in the entry.
    assert make_pass("call-inliner").run(module)
    assert [c.name for c in module.computations] == ["main"]
    ops = [i.opcode for i in module.entry.instructions]
    assert ops.count("add") == depth - 1 and ops.count("sine") == 1 and "call" not in ops
    x = np.array([0.5, -1.0, 2.0, 0.0], np.float32)
    result = get_compiler("interpreter").compile(module).execute(x)
    expected = np.sin(x)
    for _ in range(depth - 1):
        expected = expected + x
    np.testing.assert_allclose(np.asarray(result), expected, rtol=1e-5)


def test_copy_insertion_sees_the_parameter_through_a_deep_tuple_chain():
    # ROOT is get-tuple-element(tuple(get-tuple-element(tuple(... p ...)))):
    # its source is the entry parameter, so the root must get a copy.
    depth = 5000
    lines = ["HloModule tuples", "", "ENTRY main {", "  g0 = f32[4] parameter(0)"]
    for i in range(1, depth + 1):
        lines.append(f"  t{i} = (f32[4]) tuple(g{i - 1})")
        root = "ROOT " if i == depth else ""
        lines.append(f"  {root}g{i} = f32[4] get-tuple-element(t{i}), index=0")
    lines.append("}")
    module = parse_hlo_module("\n".join(lines))
    assert make_pass("copy-insertion").run(module)
    root = module.entry.root_instruction
    assert root.opcode == "copy" and root.operands[0].name == f"g{depth}"
    verify_module(module)
