"""dot-operand-layouts: transposes feeding the runtime's matmul become
bitcasts it reads with its transpose flags (no copy kernel), for every
operand form dot_decomposer produces; results against NumPy."""
import ml_dtypes
import numpy as np
import pytest

import xla
from xla.hlo.parser import parse_hlo_module

NP = {"f32": np.float32, "f64": np.float64, "c64": np.complex64, "s32": np.int32}


def compile_dot(lhs, rhs, out, dims, et="f32"):
    s = lambda d: ",".join(map(str, d))  # noqa: E731
    text = (f"HloModule m\nENTRY e {{\n  a = {et}[{s(lhs)}] parameter(0)\n"
            f"  b = {et}[{s(rhs)}] parameter(1)\n"
            f"  ROOT d = {et}[{s(out)}] dot(a, b), {dims}\n}}\n")
    return xla.compile(parse_hlo_module(text), "cpu")


def values(shape, et, rng):
    if et == "s32":
        return rng.integers(-50, 50, shape).astype(np.int32)
    x = rng.standard_normal(shape)
    if et == "c64":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(NP[et])


CASES = [
    # (lhs, rhs, out, dims, numpy)
    ((64, 48), (64, 40), (48, 40), "lhs_contracting_dims={0}, rhs_contracting_dims={0}",
     lambda a, b: a.T @ b),
    ((48, 64), (40, 64), (48, 40), "lhs_contracting_dims={1}, rhs_contracting_dims={1}",
     lambda a, b: a @ b.T),
    ((64, 48), (40, 64), (48, 40), "lhs_contracting_dims={0}, rhs_contracting_dims={1}",
     lambda a, b: a.T @ b.T),
    ((300, 200), (300,), (200,), "lhs_contracting_dims={0}, rhs_contracting_dims={0}",
     lambda a, b: a.T @ b),
    ((3, 64, 48), (3, 40, 64), (3, 48, 40),
     "lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={1}, rhs_contracting_dims={2}",
     lambda a, b: np.swapaxes(a, 1, 2) @ np.swapaxes(b, 1, 2)),
]


@pytest.mark.parametrize("et", ["f32", "f64", "c64", "s32"])
@pytest.mark.parametrize("lhs,rhs,out,dims,ref", CASES)
def test_transposed_operands_are_read_in_place(lhs, rhs, out, dims, ref, et):
    exe = compile_dot(lhs, rhs, out, dims, et)
    ops = [i.opcode for i in exe.module.entry.instructions]
    assert "transpose" not in ops and "fusion" not in ops, ops
    assert "bitcast" in ops
    assert f"__xla_cpu_matmul_{et}" in exe.ir_text
    rng = np.random.default_rng(len(lhs) + len(rhs))
    a, b = values(lhs, et, rng), values(rhs, et, rng)
    got = np.asarray(exe.execute(a, b))
    want = ref(a.astype(np.complex128 if et == "c64" else np.float64),
               b.astype(np.complex128 if et == "c64" else np.float64))
    if et == "s32":
        np.testing.assert_array_equal(got, want.astype(np.int64))
    else:
        np.testing.assert_allclose(got, want, rtol=1e-4 if et in ("f32", "c64") else 1e-12,
                                   atol=1e-4 if et in ("f32", "c64") else 1e-12)


def test_a_transpose_with_other_users_stays_for_them():
    text = """HloModule m
ENTRY e {
  a = f32[8,6] parameter(0)
  b = f32[8,5] parameter(1)
  t = f32[6,8] transpose(a), dimensions={1,0}
  d = f32[6,5] dot(t, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  n = f32[6,8] negate(t)
  ROOT r = (f32[6,5], f32[6,8]) tuple(d, n)
}
"""
    exe = xla.compile(parse_hlo_module(text), "cpu")
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((8, 6)).astype(np.float32), rng.standard_normal((8, 5)).astype(np.float32)
    d, n = (np.asarray(x) for x in exe.execute(a, b))
    np.testing.assert_allclose(d, a.T @ b, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(n, -a.T)


# A transformer's attention gradient as XLA's passes leave it: the heads of
# a [1024, 512] activation, transposed so that layout assignment made the
# transpose free ({2,1,3,0}: batch dimensions not major), times a batched
# [256, 256]. Too large for the tiled kernel (64 x 256 x 256 per product),
# unreadable for the runtime's matmul: without dot-operand-copies it ran
# as a loop per output element (88 ms; a copy and the matmul take ~1.5).
HEAD_GRADIENT = """HloModule m
ENTRY e {
  p0 = f32[1024,512]{1,0} parameter(0)
  b = f32[4,256,8,64]{3,2,1,0} bitcast(p0)
  t = f32[4,8,64,256]{2,1,3,0} transpose(b), dimensions={0,2,3,1}
  r = f32[4,8,256,256]{3,2,1,0} parameter(1)
  ROOT d = f32[4,8,64,256]{3,2,1,0} dot(t, r), lhs_batch_dims={0,1}, lhs_contracting_dims={3}, rhs_batch_dims={0,1}, rhs_contracting_dims={2}
}
"""


def test_an_operand_layout_the_matmul_cannot_read_is_copied_for_it(llvm_tiled_gemm):
    # Without the runtime's strided GEMM (objects compiled ahead of time),
    # 64 x 256 x 256 per product is beyond the tiled kernel's limits: the
    # matmul computes it from a row-major copy of the transposed operand.
    exe = xla.compile(parse_hlo_module(HEAD_GRADIENT), "cpu")
    assert "__xla_cpu_matmul_f32" in exe.ir_text
    rng = np.random.default_rng(3)
    p0 = rng.standard_normal((1024, 512)).astype(np.float32)
    r = rng.standard_normal((4, 8, 256, 256)).astype(np.float32)
    want = p0.reshape(4, 256, 8, 64).transpose(0, 2, 3, 1).astype(np.float64) @ r
    np.testing.assert_allclose(np.asarray(exe.execute(p0, r)), want, rtol=1e-4, atol=1e-3)


def test_a_result_layout_the_matmul_cannot_write_is_copied_from_its_result():
    # The dot's result asked for with batch dimensions minor: the matmul
    # writes row-major and a copy gives the layout asked for.
    text = """HloModule m
ENTRY e {
  a = f32[6,96,80]{2,1,0} parameter(0)
  b = f32[6,80,72]{2,1,0} parameter(1)
  d = f32[6,96,72]{0,2,1} dot(a, b), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}
  ROOT c = f32[6,96,72]{2,1,0} copy(d)
}
"""
    from xla.backends.cpu.dot_operand_layouts import DotOperandCopies
    module = parse_hlo_module(text)
    assert DotOperandCopies(plan=lambda dot: None).run(module)
    dot = next(i for i in module.entry.instructions if i.opcode == "dot")
    assert list(dot.shape.layout.minor_to_major) == [2, 1, 0]
    (user,) = [i for i in module.entry.instructions if dot in i.operands]
    assert user.opcode == "copy" and list(user.shape.layout.minor_to_major) == [0, 2, 1]
    exe = xla.compile(parse_hlo_module(text), "cpu")
    rng = np.random.default_rng(4)
    a = rng.standard_normal((6, 96, 80)).astype(np.float32)
    b = rng.standard_normal((6, 80, 72)).astype(np.float32)
    np.testing.assert_allclose(np.asarray(exe.execute(a, b)), a.astype(np.float64) @ b,
                               rtol=1e-4, atol=1e-3)


def test_a_reshaped_transpose_is_read_in_place():
    # The weight gradient of a dense layer over [batch, seq, features]:
    # activations [2, 8, 48] transposed to [48, 2, 8] and reshaped to
    # [48, 16] are the [16, 48] matrix read transposed: a bitcast of it
    # the matmul reads with its transpose flag, no transposing kernel.
    text = """HloModule m
ENTRY e {
  h = f32[2,8,48] parameter(0)
  g = f32[16,40] parameter(1)
  t = f32[48,2,8] transpose(h), dimensions={2,0,1}
  r = f32[48,16] reshape(t)
  ROOT d = f32[48,40] dot(r, g), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""
    exe = xla.compile(parse_hlo_module(text), "cpu")
    ops = [i.opcode for i in exe.module.entry.instructions]
    assert "transpose" not in ops and "fusion" not in ops, ops
    assert "__xla_cpu_matmul_f32" in exe.ir_text
    rng = np.random.default_rng(6)
    h = rng.standard_normal((2, 8, 48)).astype(np.float32)
    g = rng.standard_normal((16, 40)).astype(np.float32)
    want = h.reshape(16, 48).T.astype(np.float64) @ g
    np.testing.assert_allclose(np.asarray(exe.execute(h, g)), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("perm,shape", [((1, 0, 2), (2, 16, 8)), ((0, 2, 1), (16, 8, 2))])
def test_a_reshaped_transpose_that_is_no_matrix_transpose_is_computed(perm, shape):
    # Transposes whose reshape is not a matrix read in place (the groups of
    # the reshape are not together in the source's order): the product is
    # still right, through a kernel that moves the elements.
    s = lambda d: ",".join(map(str, d))  # noqa: E731
    t_dims = tuple(shape[p] for p in perm)
    rows = t_dims[0] * t_dims[1]
    text = f"""HloModule m
ENTRY e {{
  h = f32[{s(shape)}] parameter(0)
  g = f32[{t_dims[2]},24] parameter(1)
  t = f32[{s(t_dims)}] transpose(h), dimensions={{{s(perm)}}}
  r = f32[{rows},{t_dims[2]}] reshape(t)
  ROOT d = f32[{rows},24] dot(r, g), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
}}
"""
    exe = xla.compile(parse_hlo_module(text), "cpu")
    rng = np.random.default_rng(7)
    h = rng.standard_normal(shape).astype(np.float32)
    g = rng.standard_normal((t_dims[2], 24)).astype(np.float32)
    want = h.transpose(perm).reshape(rows, t_dims[2]).astype(np.float64) @ g
    np.testing.assert_allclose(np.asarray(exe.execute(h, g)), want, rtol=1e-4, atol=1e-4)


# A weight update as JAX lowers a training step: the gradient dW is a dot
# laid out [out, in], transposed to the weight's [in, out] with the
# transpose and the scaling in the dot's order ({0,1}), and a copy to the
# weight's row-major layout before the subtract.
WEIGHT_UPDATE = """HloModule m
ENTRY e {
  x = f32[128,256]{1,0} parameter(0)
  g = f32[128,512]{1,0} parameter(1)
  w = f32[256,512]{1,0} parameter(2)
  d = f32[512,256]{1,0} dot(g, x), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  t = f32[256,512]{0,1} transpose(d), dimensions={1,0}
  lr = f32[] constant(0.01)
  b = f32[256,512]{0,1} broadcast(lr), dimensions={}
  m = f32[256,512]{0,1} multiply(t, b)
  ROOT u = f32[256,512]{1,0} subtract(w, m)
}
"""


def test_a_transposed_weight_gradient_is_written_in_the_weights_order():
    exe = xla.compile(parse_hlo_module(WEIGHT_UPDATE), "cpu")
    (dot,) = [i for i in exe.module.all_instructions() if i.opcode == "dot"]
    # The product written transposed: its bytes are the weight's order.
    assert list(dot.shape.layout.minor_to_major) == [0, 1]
    # No copy, and the update reads the product in its own order (its
    # transpose is of the bytes as they lie): no tiles, and the matmul
    # adds w as it stores the product (dot-addend-fusion).
    assert not any(i.opcode == "copy" for i in exe.module.all_instructions())
    assert ".tile.header" not in exe.ir_text
    assert '@"__xla_cpu_matmul_addend_f32"' in exe.ir_text
    rng = np.random.default_rng(8)
    x = rng.standard_normal((128, 256)).astype(np.float32)
    g = rng.standard_normal((128, 512)).astype(np.float32)
    w = rng.standard_normal((256, 512)).astype(np.float32)
    want = w - 0.01 * (g.T.astype(np.float64) @ x).T
    np.testing.assert_allclose(np.asarray(exe.execute(x, g, w)), want, rtol=1e-5, atol=1e-5)


def test_a_bf16_weight_gradient_is_written_in_the_weights_order():
    # bf16 weights: the bf16 x bf16 -> bf16 product is computed in f32 and
    # converted (dot-type-widening), the convert before the transpose; it
    # follows the product's layout, as the scaling follows the transpose's.
    text = WEIGHT_UPDATE.replace("f32[", "bf16[")
    exe = xla.compile(parse_hlo_module(text), "cpu")
    (dot,) = [i for i in exe.module.entry.instructions if i.opcode == "dot"]
    assert list(dot.shape.layout.minor_to_major) == [0, 1]
    assert not any(i.opcode == "copy" for i in exe.module.all_instructions())
    assert ".tile.header" not in exe.ir_text
    rng = np.random.default_rng(8)
    x, g, w = (rng.standard_normal(s).astype(ml_dtypes.bfloat16)
               for s in ((128, 256), (128, 512), (256, 512)))
    # The product rounded to bf16 once (the dot's result type), the update
    # in bf16 arithmetic: within a few bf16 roundings of the exact value.
    want = (w.astype(np.float64)
            - 0.01 * (g.T.astype(np.float64) @ x.astype(np.float64)).T)
    np.testing.assert_allclose(np.asarray(exe.execute(x, g, w), np.float64), want,
                               rtol=2e-2, atol=0.05)


@pytest.mark.parametrize("other", ["x", "broadcast"])
def test_a_chain_with_other_array_operands_keeps_its_copy(other):
    # An elementwise op in the chain reading another array (here x, laid
    # out {0,1} too): the copy stays and the product is right.
    operand = "x2" if other == "x" else "b"
    text = WEIGHT_UPDATE.replace(
        "  m = f32[256,512]{0,1} multiply(t, b)",
        "  x2 = f32[256,512]{0,1} parameter(3)\n"
        f"  m = f32[256,512]{{0,1}} multiply(t, {operand})")
    exe = xla.compile(parse_hlo_module(text), "cpu")
    rng = np.random.default_rng(9)
    x = rng.standard_normal((128, 256)).astype(np.float32)
    g = rng.standard_normal((128, 512)).astype(np.float32)
    w = rng.standard_normal((256, 512)).astype(np.float32)
    x2 = rng.standard_normal((256, 512)).astype(np.float32)
    scale = x2 if other == "x" else 0.01
    want = w - scale * (g.T.astype(np.float64) @ x).T
    np.testing.assert_allclose(np.asarray(exe.execute(x, g, w, x2)), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("et", ["f32", "f64"])
def test_a_batched_result_stored_transposed_is_written_by_the_matmul(et):
    # The runtime's matmul writes rhs^T x lhs^T for a result whose matrices
    # are stored transposed ({1,2,0}: batch major, then N, then M).
    text = f"""HloModule m
ENTRY e {{
  a = {et}[3,64,48] parameter(0)
  b = {et}[3,48,40] parameter(1)
  ROOT d = {et}[3,64,40]{{1,2,0}} dot(a, b), lhs_batch_dims={{0}}, lhs_contracting_dims={{2}}, rhs_batch_dims={{0}}, rhs_contracting_dims={{1}}
}}
"""
    exe = xla.compile(parse_hlo_module(text), "cpu")
    assert not any(i.opcode == "copy" for i in exe.module.all_instructions())
    assert f"__xla_cpu_matmul_{et}" in exe.ir_text
    rng = np.random.default_rng(10)
    a = rng.standard_normal((3, 64, 48)).astype(NP[et])
    b = rng.standard_normal((3, 48, 40)).astype(NP[et])
    np.testing.assert_allclose(np.asarray(exe.execute(a, b)), a.astype(np.float64) @ b,
                               rtol=1e-5, atol=1e-4)
