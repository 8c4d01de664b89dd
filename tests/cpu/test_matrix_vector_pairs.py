"""matrix-vector-pair-fusion (xla/backends/cpu/matrix_vector_pairs.py) and
its kernel (emit_matrix_vector_pair.py): ``A x`` and ``y A`` of one matrix
become one fusion computed in one pass over A; dots of other forms, of a
small matrix, or where one depends on the other, are left alone. Values
against NumPy's (in float64)."""
import numpy as np
import pytest

import xla
from xla.backends.cpu.matrix_vector_pairs import MatrixVectorPairFusion
from xla.hlo.parser import parse_hlo_module


def bicg_text(m, k, et="f64", cols_input=None):
    """r A and A p of A[m, k], as dot_decomposer leaves them; with
    ``cols_input``, the vector y A reads instead of r."""
    y = cols_input or "r2"
    return f"""HloModule bicg

ENTRY main {{
  A = {et}[{m},{k}]{{1,0}} parameter(0)
  p = {et}[{k}]{{0}} parameter(1)
  r = {et}[{m}]{{0}} parameter(2)
  r2 = {et}[1,{m}]{{1,0}} reshape(r)
  p2 = {et}[{k},1]{{1,0}} reshape(p)
  Ap = {et}[{m},1]{{1,0}} dot(A, p2), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
  rA = {et}[1,{k}]{{1,0}} dot({y}, A), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
  s = {et}[{k}]{{0}} reshape(rA)
  q = {et}[{m}]{{0}} reshape(Ap)
  ROOT t = ({et}[{k}]{{0}}, {et}[{m}]{{0}}) tuple(s, q)
}}
"""


def entry_opcodes(module):
    return [i.opcode for i in module.entry.instructions]


def test_the_two_products_become_one_fusion():
    module = parse_hlo_module(bicg_text(300, 256))
    assert MatrixVectorPairFusion().run(module)
    xla.verify_module(module)
    ops = entry_opcodes(module)
    assert "dot" not in ops and ops.count("fusion") == 1
    (fusion,) = [i for i in module.entry.instructions if i.opcode == "fusion"]
    fused = fusion.attr("calls")
    assert [i.opcode for i in fused.instructions].count("dot") == 2
    assert fused.root_instruction.opcode == "tuple"
    assert [o.name for o in fusion.operands] == ["A", "p2", "r2"]
    assert not MatrixVectorPairFusion().run(module)     # idempotent


@pytest.mark.parametrize("text, why", [
    (bicg_text(100, 100), "a small matrix (cached: two passes cost little)"),
    (bicg_text(300, 256).replace("rA = f64[1,256]{1,0} dot(r2, A)",
                                 "r3 = f64[1,300]{1,0} reshape(q)\n  "
                                 "rA = f64[1,256]{1,0} dot(r3, A)"), "y A reads A x"),
    (bicg_text(300, 256).replace("A = f64[300,256]{1,0}", "A = f64[300,256]{0,1}"),
     "A stored column-major"),
])
def test_other_pairs_are_left_alone(text, why):
    assert not MatrixVectorPairFusion().run(parse_hlo_module(text)), why


@pytest.mark.parametrize("et", ["f32", "f64"])
@pytest.mark.parametrize("m, k", [(300, 256), (1001, 77), (259, 300)])
def test_one_pass_gives_numpys_values(m, k, et):
    exe = xla.compile(parse_hlo_module(bicg_text(m, k, et)), "cpu")
    assert "__xla_cpu_matmul" not in exe.ir_text
    dt = np.float32 if et == "f32" else np.float64
    rng = np.random.default_rng(m + k)
    A, p, r = (rng.standard_normal(s).astype(dt) for s in ((m, k), k, m))
    rA, Ap = exe.execute(A, p, r)
    A64 = A.astype(np.float64)
    tol = 1e-12 if et == "f64" else 2e-5
    np.testing.assert_allclose(rA, r.astype(np.float64) @ A64, rtol=tol, atol=tol * np.sqrt(m))
    np.testing.assert_allclose(Ap, A64 @ p.astype(np.float64), rtol=tol, atol=tol * np.sqrt(k))


def test_mvt_under_jit_matches_numpy():
    def mvt(x1, x2, y_1, y_2, A):
        x1 += A @ y_1
        x2 += y_2 @ A
    rng = np.random.default_rng(3)
    args = [rng.random(400) for _ in range(4)] + [rng.random((400, 400))]
    ref, ours = [a.copy() for a in args], [a.copy() for a in args]
    mvt(*ref)
    f = xla.jit(mvt)
    exe = xla.compile(parse_hlo_module(f.lower(*ours).as_hlo_text()), "cpu")
    assert any(c.name.startswith("fused_matrix_vector_pair") for c in exe.module.computations)
    f(*ours)
    for r, o in zip(ref, ours):
        np.testing.assert_allclose(o, r, rtol=1e-12)
