"""matrix-vector-pair-fusion (xla/backends/cpu/matrix_vector_pairs.py) and
its kernel (emit_matrix_vector_pair.py): ``A x`` and ``y A`` of one matrix,
or the chain ``t = A x`` then ``t A`` (``A.T @ (A @ x)``), become one
fusion computed in one pass over A; dots of other forms or of a small
matrix are left alone. Values against NumPy's (in float64)."""
import numpy as np
import pytest

import xla
from xla import _core
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
    (bicg_text(300, 256).replace("A = f64[300,256]{1,0}", "A = f64[300,256]{0,1}"),
     "A stored column-major"),
])
def test_other_pairs_are_left_alone(text, why):
    assert not MatrixVectorPairFusion().run(parse_hlo_module(text)), why


@pytest.fixture(params=[1, 8], ids=["serial", "chunks"])
def pair_chunks(request, monkeypatch):
    """The independent pair serial and split into up to 8 chunks of rows
    (the default)."""
    import xla.backends.cpu.emit_matrix_vector_pair as emitter
    monkeypatch.setattr(emitter, "PAIR_CHUNKS", request.param)
    return request.param


@pytest.mark.parametrize("et", ["f32", "f64"])
@pytest.mark.parametrize("m, k", [(300, 256), (1001, 77), (259, 300), (1200, 1000), (9, 8000)])
def test_one_pass_gives_numpys_values(m, k, et, pair_chunks):
    """Whole blocks of rows and not (1001 = 125 * 8 + 1), chunks of 64
    rows or more (1200: 8 chunks of 150 = 18 * 8 + 6; 259: 4 chunks),
    too few rows to split (9)."""
    exe = xla.compile(parse_hlo_module(bicg_text(m, k, et)), "cpu")
    assert "__xla_cpu_matmul" not in exe.ir_text
    split = pair_chunks > 1 and m >= 128
    assert ("gemv_pair_chunks" in exe.ir_text) == split
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


def chain_text(m, k, et="f64", form="t A", t_out=False):
    """``t A`` with ``t = A x`` for A[m, k], as the CPU pipeline leaves
    ``(A @ x) @ A`` (form "t A") or ``A.T @ (A @ x)`` (form "A^T t": the
    transpose a bitcast, or "transpose" one); with ``t_out``, t is an
    output too."""
    second = {
        "t A": f"""t2 = {et}[1,{m}]{{1,0}} reshape(t)
  y = {et}[1,{k}]{{1,0}} dot(t2, A), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}""",
        "A^T t": f"""At = {et}[{k},{m}]{{0,1}} bitcast(A)
  y = {et}[{k},1]{{1,0}} dot(At, t), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}""",
        "transpose": f"""At = {et}[{k},{m}]{{1,0}} transpose(A), dimensions={{1,0}}
  y = {et}[{k},1]{{1,0}} dot(At, t), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}""",
    }[form]
    root = (f"tv = {et}[{m}]{{0}} reshape(t)\n  ROOT out = ({et}[{k}]{{0}}, {et}[{m}]{{0}}) tuple(yv, tv)"
            if t_out else f"ROOT out = {et}[{k}]{{0}} reshape(yv)")
    return f"""HloModule atax

ENTRY main {{
  A = {et}[{m},{k}]{{1,0}} parameter(0)
  x = {et}[{k}]{{0}} parameter(1)
  x2 = {et}[{k},1]{{1,0}} reshape(x)
  t = {et}[{m},1]{{1,0}} dot(A, x2), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
  {second}
  yv = {et}[{k}]{{0}} reshape(y)
  {root.replace("reshape(yv)", "copy(yv)")}
}}
"""


@pytest.mark.parametrize("form", ["t A", "A^T t", "transpose"])
def test_the_chain_becomes_one_fusion(form):
    module = parse_hlo_module(chain_text(300, 256, form=form))
    assert MatrixVectorPairFusion().run(module)
    xla.verify_module(module)
    ops = entry_opcodes(module)
    # The dots, the reshape of t and A's transposed view are gone.
    assert ops == ["parameter", "parameter", "reshape", "fusion", "get-tuple-element",
                   "get-tuple-element"] + (["reshape"] if form != "t A" else []) + ["reshape", "copy"]
    (fusion,) = [i for i in module.entry.instructions if i.opcode == "fusion"]
    assert [o.name for o in fusion.operands] == ["A", "x2"]
    fused = fusion.attr("calls")
    assert fused.name.startswith("fused_matrix_vector_chain")
    assert [i.opcode for i in fused.instructions] == [
        "parameter", "parameter", "dot", "reshape", "dot", "tuple"]
    second = fused.root_instruction.operands[1]
    assert [o.opcode for o in second.operands] == ["reshape", "parameter"]
    assert tuple(second.shape.dimensions) == (1, 256)
    assert not MatrixVectorPairFusion().run(module)     # idempotent


def test_a_chain_whose_t_is_read_elsewhere_keeps_it():
    """t is an output too: its users read the fusion's first element."""
    module = parse_hlo_module(chain_text(300, 256, t_out=True))
    assert MatrixVectorPairFusion().run(module)
    xla.verify_module(module)
    root = module.entry.root_instruction
    tv = root.operands[1]
    assert tv.opcode == "reshape" and tv.operands[0].opcode == "get-tuple-element"
    assert tv.operands[0].attr("index") == 0 and tv.operands[0].operands[0].opcode == "fusion"


def test_y_a_reading_a_x_is_the_chain():
    """bicg_text with ``y A`` reading ``A x`` (through two reshapes; A x is
    also an output): the pair the pass used to refuse is now the chain."""
    text = bicg_text(300, 256).replace("rA = f64[1,256]{1,0} dot(r2, A)",
                                       "r3 = f64[1,300]{1,0} reshape(q)\n  "
                                       "rA = f64[1,256]{1,0} dot(r3, A)")
    module = parse_hlo_module(text)
    assert MatrixVectorPairFusion().run(module)
    (fusion,) = [i for i in module.entry.instructions if i.opcode == "fusion"]
    assert fusion.attr("calls").name.startswith("fused_matrix_vector_chain")
    A = np.random.default_rng(0).standard_normal((300, 256))
    p, r = np.random.default_rng(1).standard_normal(256), np.zeros(300)
    exe = xla.compile(parse_hlo_module(text), "cpu")
    rA, Ap = exe.execute(A, p, r)
    np.testing.assert_allclose(Ap, A @ p, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(rA, (A @ p) @ A, rtol=1e-12, atol=1e-11)


@pytest.mark.parametrize("text, why", [
    (chain_text(100, 100), "a small matrix"),
    (chain_text(300, 256).replace("t2 = f64[1,300]{1,0} reshape(t)",
                                  "t2 = f64[1,300]{1,0} reshape(t)\n  two = f64[] constant(2)\n  "
                                  "b2 = f64[1,300]{1,0} broadcast(two), dimensions={}\n  "
                                  "t3 = f64[1,300]{1,0} multiply(t2, b2)").replace("dot(t2, A)", "dot(t3, A)"),
     "an op other than a reshape between the dots"),
    (chain_text(300, 256, form="A^T t").replace("f64[256,300]{0,1} bitcast(A)",
                                                "f64[256,300]{1,0} bitcast(A)"),
     "a bitcast of A that is not its transpose"),
    (chain_text(300, 256).replace("A = f64[300,256]{1,0}", "A = f64[300,256]{0,1}"),
     "A stored column-major"),
])
def test_other_chains_are_left_alone(text, why):
    assert not MatrixVectorPairFusion().run(parse_hlo_module(text)), why


def test_a_batched_chain_is_left_alone():
    text = """HloModule batched

ENTRY main {
  A = f64[2,300,256]{2,1,0} parameter(0)
  x = f64[2,256,1]{2,1,0} parameter(1)
  t = f64[2,300,1]{2,1,0} dot(A, x), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}
  t2 = f64[2,1,300]{2,1,0} reshape(t)
  ROOT y = f64[2,1,256]{2,1,0} dot(t2, A), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}
}
"""
    assert not MatrixVectorPairFusion().run(parse_hlo_module(text))


@pytest.fixture(params=[1, 8], ids=["serial", "chunks"])
def chain_chunks(request, monkeypatch):
    """The chain serial and split into up to 8 chunks of rows (the default)."""
    import xla.backends.cpu.emit_matrix_vector_pair as emitter
    monkeypatch.setattr(emitter, "CHAIN_CHUNKS", request.param)
    return request.param


@pytest.mark.parametrize("et", ["f32", "f64"])
@pytest.mark.parametrize("m, k", [(300, 256), (1001, 77), (259, 300), (2, 40000), (9, 8000),
                                  (90, 1000), (70001, 1), (1, 70000)])
def test_the_chain_gives_numpys_values(m, k, et, chain_chunks):
    """Sizes of whole blocks of rows and not (1001 = 125 * 8 + 1, 9 = 8 +
    1), wide and tall, serial or split into chunks of rows over threads
    (128 rows or more); one column or one row, which the simplifier turns into
    other ops before the pass runs (values only)."""
    for form, t_out in (("t A", True), ("A^T t", False)):
        exe = xla.compile(parse_hlo_module(chain_text(m, k, et, form=form, t_out=t_out)), "cpu")
        if m > 1 and k > 1:
            assert "__xla_cpu_matmul" not in exe.ir_text
            assert any(c.name.startswith("fused_matrix_vector_chain") for c in exe.module.computations)
            # The chain's kernel, not the general loops (which recompute t
            # for each element of t A).
            assert "chain_zero" in exe.ir_text
        dt = np.float32 if et == "f32" else np.float64
        rng = np.random.default_rng(m + k)
        A, x = (rng.standard_normal(s).astype(dt) for s in ((m, k), k))
        out = exe.execute(A, x)
        A64 = A.astype(np.float64)
        t = A64 @ x.astype(np.float64)
        y = t @ A64
        tol = 1e-12 if et == "f64" else 2e-5
        if t_out:
            out, t_ours = out
            assert t_ours.dtype == dt
            np.testing.assert_allclose(t_ours, t, rtol=tol, atol=tol * np.sqrt(k))
        assert out.dtype == dt
        # |t| |A| bounds each element's rounding error.
        scale = np.abs(t) @ np.abs(A64)
        assert np.all(np.abs(out - y) <= tol * 4 * scale + tol), form


def test_atax_under_jit_matches_numpy():
    def atax(A, x):
        return A.T @ (A @ x)
    rng = np.random.default_rng(4)
    A, x = rng.random((400, 300)), rng.random(300)
    f = xla.jit(atax)
    exe = xla.compile(parse_hlo_module(f.lower(A, x).as_hlo_text()), "cpu")
    assert any(c.name.startswith("fused_matrix_vector_chain") for c in exe.module.computations)
    assert "chain_zero" in exe.ir_text
    np.testing.assert_allclose(f(A, x), atax(A, x), rtol=1e-12)


def test_the_chains_bits_do_not_depend_on_the_thread_count(chain_chunks):
    exe = xla.compile(parse_hlo_module(chain_text(1001, 300, "f32", t_out=True)), "cpu")
    rng = np.random.default_rng(5)
    A, x = rng.standard_normal((1001, 300)).astype(np.float32), rng.standard_normal(300).astype(np.float32)
    results = []
    try:
        for threads in (1, 2, 3, 7):
            _core.set_cpu_runtime_num_threads(threads)
            results.append(b"".join(np.asarray(o).tobytes() for o in exe.execute(A, x)))
    finally:
        _core.set_cpu_runtime_num_threads(0)
    assert len(set(results)) == 1


def test_the_pairs_bits_do_not_depend_on_the_thread_count(pair_chunks):
    exe = xla.compile(parse_hlo_module(bicg_text(1001, 300, "f32")), "cpu")
    rng = np.random.default_rng(6)
    A = rng.standard_normal((1001, 300)).astype(np.float32)
    p, r = rng.standard_normal(300).astype(np.float32), rng.standard_normal(1001).astype(np.float32)
    results = []
    try:
        for threads in (1, 2, 3, 7):
            _core.set_cpu_runtime_num_threads(threads)
            results.append(b"".join(np.asarray(o).tobytes() for o in exe.execute(A, p, r)))
    finally:
        _core.set_cpu_runtime_num_threads(0)
    assert len(set(results)) == 1
