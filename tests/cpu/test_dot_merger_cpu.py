"""dot-merger in the CPU pipeline (``constant_weights`` in cpu/pipeline.py):
projections of one input by constant weights become one matmul whose
slices fuse into the kernels that read them (no copy, no concatenate at
run time); weights that are parameters, and results read by another dot,
keep their own dots. Values against NumPy's (in float64)."""
import numpy as np
import pytest

import xla
from xla.hlo.parser import parse_hlo_module
from xla.tools.arrays import flatten_result

RNG = np.random.default_rng(7)
WEIGHTS = [np.round(RNG.standard_normal((16, 8)), 3) for _ in range(3)]


def literal(w):
    return "{" + ", ".join("{" + ", ".join(f"{v:g}" for v in row) + "}" for row in w) + "}"


def projections(weights, consumer):
    """x @ w0, x @ w1, x @ w2 with constant (``weights``) or parameter weights,
    each read by ``consumer``: "heads" (a reshape and transpose per result, as
    attention splits heads) or "dot" (q @ k^T, then @ v)."""
    if weights == "constant":
        header = "(x: f32[32,16])"
        ws = "\n".join(f"  %w{i} = f32[16,8] constant({literal(w)})" for i, w in enumerate(WEIGHTS))
    else:
        header = "(x: f32[32,16], w0: f32[16,8], w1: f32[16,8], w2: f32[16,8])"
        ws = "\n".join(f"  %w{i} = f32[16,8] parameter({i + 1})" for i in range(3))
    dots = "\n".join(f"  %p{i} = f32[32,8] dot(%x, %w{i}), lhs_contracting_dims={{1}}, "
                     f"rhs_contracting_dims={{0}}" for i in range(3))
    if consumer == "heads":
        body = "\n".join(f"  %r{i} = f32[32,2,4] reshape(%p{i})\n"
                         f"  %h{i} = f32[2,32,4] transpose(%r{i}), dimensions={{1,0,2}}"
                         for i in range(3))
        result = "(f32[2,32,4], f32[2,32,4], f32[2,32,4])"
        root = f"  ROOT %t = {result} tuple(%h0, %h1, %h2)"
    else:
        body = ("  %s = f32[32,32] dot(%p0, %p1), lhs_contracting_dims={1}, rhs_contracting_dims={1}\n"
                "  %e = f32[32,32] tanh(%s)")
        result = "f32[32,8]"
        root = ("  ROOT %o = f32[32,8] dot(%e, %p2), lhs_contracting_dims={1}, "
                "rhs_contracting_dims={0}")
    return (f"HloModule m\n\nENTRY %main {header} -> {result} {{\n  %x = f32[32,16] parameter(0)\n"
            f"{ws}\n{dots}\n{body}\n{root}\n}}\n")


def expected(consumer, x, ws):
    p = [x @ w for w in ws]
    if consumer == "heads":
        return [q.reshape(32, 2, 4).transpose(1, 0, 2) for q in p]
    return [np.tanh(p[0] @ p[1].T) @ p[2]]


def entry_opcodes(exe):
    return [i.opcode for i in exe.module.entry.instructions]


def test_constant_weights_one_matmul_slices_fused():
    exe = xla.compile(parse_hlo_module(projections("constant", "heads")), "cpu")
    ops = entry_opcodes(exe)
    assert ops.count("dot") == 1, ops
    assert not {"slice", "copy", "concatenate"} & set(ops), ops
    (dot,) = [i for i in exe.module.entry.instructions if i.opcode == "dot"]
    assert dot.shape.dimensions == (32, 24) and dot.operands[1].opcode == "constant"
    # The slices are read inside the transposing kernels.
    fused = [i.opcode for c in exe.module.computations if c is not exe.module.entry
             for i in c.instructions]
    assert fused.count("slice") == 3
    x = RNG.standard_normal((32, 16)).astype(np.float32)
    got = flatten_result(exe.execute(x))
    ws = [w.astype(np.float32).astype(np.float64) for w in WEIGHTS]
    for g, w in zip(got, expected("heads", x.astype(np.float64), ws)):
        np.testing.assert_allclose(np.asarray(g, np.float64), w, rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("weights, consumer", [("parameter", "heads"), ("constant", "dot")])
def test_left_as_three_dots(weights, consumer):
    # Parameters would be concatenated each call; a result read by a dot
    # would be a strided slice copied for it.
    text = projections(weights, consumer)
    exe = xla.compile(parse_hlo_module(text), "cpu")
    ops = entry_opcodes(exe)
    assert ops.count("dot") == (3 if consumer == "heads" else 5), ops
    assert "concatenate" not in ops
    x = RNG.standard_normal((32, 16)).astype(np.float32)
    ws = [w.astype(np.float32) for w in WEIGHTS]
    args = [x] + (ws if weights == "parameter" else [])
    got = flatten_result(exe.execute(*args))
    want = expected(consumer, x.astype(np.float64), [w.astype(np.float64) for w in ws])
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g, np.float64), w, rtol=1e-4, atol=1e-4)
