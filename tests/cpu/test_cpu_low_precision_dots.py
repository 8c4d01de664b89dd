"""s8 x s8 and bf16 x bf16 dots on the CPU: the pipeline leaves their
operands narrow and the runtime's low-precision matmuls
(``__xla_cpu_matmul_s8_s32``/``_bf16_f32``) compute them, for every operand
form dot_decomposer and dot-operand-layouts produce (transposes read in
place, batch dimensions, matrix-vector products).

Expected values are NumPy's: int64 sums reduced modulo 2^bits of the
result type (exact, extremes included: all -128, -128 x 127, where the
runtime's +128 offset would overflow if it were not corrected exactly),
and bf16 products summed in float64, within f32 summation's error bound
and then rounded once to the result type.
"""
import ml_dtypes
import numpy as np
import pytest

import xla
from xla.hlo.parser import parse_hlo_module

BF16 = ml_dtypes.bfloat16


def compile_dot(lhs, rhs, out, dims, lt, ot):
    s = lambda d: ",".join(map(str, d))  # noqa: E731
    text = (f"HloModule m\nENTRY e {{\n  a = {lt}[{s(lhs)}] parameter(0)\n"
            f"  b = {lt}[{s(rhs)}] parameter(1)\n"
            f"  ROOT d = {ot}[{s(out)}] dot(a, b), {dims}\n}}\n")
    return xla.compile(parse_hlo_module(text), "cpu")


PLAIN = "lhs_contracting_dims={1}, rhs_contracting_dims={0}"

# (m, k, n): single elements, tails of the 8 x 32 micro-tile, of the 64-row
# blocks and of the k groups (4 bytes, 2 bf16) and blocks (512, 256); one
# row against a rhs packed as it goes, 8 strips at a time, with and
# without tails; matrix-vector products whose rows are whole 256-byte steps
# of four vectors, and steps followed by whole and partial vectors.
SIZES = [(1, 1, 1), (7, 7, 7), (67, 67, 67), (1, 300, 70), (300, 64, 1), (130, 1030, 150),
         (65, 513, 97), (8, 3, 32), (512, 512, 512), (1, 1030, 300), (1, 512, 1024),
         (257, 700, 1), (33, 1024, 1)]


def s8_values(shape, kind, rng):
    if kind == "random":
        return rng.integers(-128, 128, shape).astype(np.int8)
    return np.full(shape, -128 if kind == "min" else 127, np.int8)


def wrapped(x, dtype):
    """int64 ``x`` modulo 2^bits of ``dtype``, as ``dtype``."""
    bits = np.iinfo(dtype).bits
    return (x.astype(np.uint64) & np.uint64(2 ** bits - 1)).astype(
        np.dtype(f"u{bits // 8}")).view(dtype)


@pytest.mark.parametrize("m,k,n", SIZES)
@pytest.mark.parametrize("lhs_kind,rhs_kind", [("random", "random"), ("min", "min"),
                                               ("min", "max")])
def test_s8_dot_is_exact(m, k, n, lhs_kind, rhs_kind):
    exe = compile_dot((m, k), (k, n), (m, n), PLAIN, "s8", "s32")
    # (1 x 1 x 1 is an elementwise multiply by then.)
    assert ("__xla_cpu_matmul_s8_s32" in exe.ir_text) is (m * k * n > 1)
    rng = np.random.default_rng(m * k + n)
    a, b = s8_values((m, k), lhs_kind, rng), s8_values((k, n), rhs_kind, rng)
    got = np.asarray(exe.execute(a, b))
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, a.astype(np.int64) @ b.astype(np.int64))


def test_s8_dot_with_empty_contraction_is_zero():
    exe = compile_dot((5, 0), (0, 3), (5, 3), PLAIN, "s8", "s32")
    got = np.asarray(exe.execute(np.zeros((5, 0), np.int8), np.zeros((0, 3), np.int8)))
    np.testing.assert_array_equal(got, np.zeros((5, 3), np.int32))


@pytest.mark.parametrize("ot,dtype", [("s8", np.int8), ("s16", np.int16), ("u8", np.uint8)])
def test_s8_dot_into_narrow_results_wraps(ot, dtype):
    exe = compile_dot((9, 70), (70, 33), (9, 33), PLAIN, "s8", ot)
    assert "__xla_cpu_matmul_s8_s32" in exe.ir_text
    rng = np.random.default_rng(3)
    a, b = s8_values((9, 70), "random", rng), s8_values((70, 33), "random", rng)
    got = np.asarray(exe.execute(a, b))
    np.testing.assert_array_equal(got, wrapped(a.astype(np.int64) @ b.astype(np.int64), dtype))


def bf16_reference(a, b):
    """(f64 result, f32 summation error bound) of bf16 ``a @ b``."""
    a, b = a.astype(np.float64), b.astype(np.float64)
    k = a.shape[-1]
    return a @ b, (k + 1) * 2.0 ** -24 * (np.abs(a) @ np.abs(b))


@pytest.mark.parametrize("m,k,n", SIZES)
def test_bf16_dot_into_f32(m, k, n):
    exe = compile_dot((m, k), (k, n), (m, n), PLAIN, "bf16", "f32")
    assert ("__xla_cpu_matmul_bf16_f32" in exe.ir_text) is (m * k * n > 1)
    rng = np.random.default_rng(m + k * n)
    a = rng.standard_normal((m, k)).astype(BF16)
    b = rng.standard_normal((k, n)).astype(BF16)
    got = np.asarray(exe.execute(a, b))
    assert got.dtype == np.float32
    want, bound = bf16_reference(a, b)
    assert np.all(np.abs(got - want) <= bound)


@pytest.mark.parametrize("m,k,n", [(7, 7, 7), (130, 1030, 150), (512, 512, 512)])
def test_bf16_dot_into_bf16_is_rounded_once(m, k, n):
    exe = compile_dot((m, k), (k, n), (m, n), PLAIN, "bf16", "bf16")
    assert "__xla_cpu_matmul_bf16_f32" in exe.ir_text
    rng = np.random.default_rng(k)
    a = rng.standard_normal((m, k)).astype(BF16)
    b = rng.standard_normal((k, n)).astype(BF16)
    got = np.asarray(exe.execute(a, b))
    assert got.dtype == BF16
    want, bound = bf16_reference(a, b)
    # The f32 sum is within `bound` of the exact one; its bf16 rounding
    # within half a bf16 ulp (2^-8 relative) of that.
    tol = bound + (np.abs(want) + bound) * 2.0 ** -8
    assert np.all(np.abs(got.astype(np.float64) - want) <= tol)


def test_bf16_dot_keeps_denormal_products():
    # 2^-70 * 2^-70 = 2^-140: an f32 denormal, which the dot-product
    # instructions would flush to zero; the runtime widens such operands.
    exe = compile_dot((9, 40), (40, 33), (9, 33), PLAIN, "bf16", "f32")
    a = np.full((9, 40), 2.0 ** -70, BF16)
    got = np.asarray(exe.execute(a, np.full((40, 33), 2.0 ** -70, BF16)))
    np.testing.assert_array_equal(got, np.full((9, 33), 40 * 2.0 ** -140, np.float32))


FORMS = [
    # (lhs, rhs, out, dims, numpy)
    ((64, 48), (64, 40), (48, 40), "lhs_contracting_dims={0}, rhs_contracting_dims={0}",
     lambda a, b: a.T @ b),
    ((48, 64), (40, 64), (48, 40), "lhs_contracting_dims={1}, rhs_contracting_dims={1}",
     lambda a, b: a @ b.T),
    ((67, 49), (41, 67), (49, 41), "lhs_contracting_dims={0}, rhs_contracting_dims={1}",
     lambda a, b: a.T @ b.T),
    ((300, 200), (300,), (200,), "lhs_contracting_dims={0}, rhs_contracting_dims={0}",
     lambda a, b: a.T @ b),
    ((200, 300), (300,), (200,), "lhs_contracting_dims={1}, rhs_contracting_dims={0}",
     lambda a, b: a @ b),
    ((300,), (300, 200), (200,), "lhs_contracting_dims={0}, rhs_contracting_dims={0}",
     lambda a, b: a @ b),
    # A transposed lhs over several k blocks (256 bf16 / 512 s8 per block),
    # rows in whole panels of 8 but the last.
    ((1100, 44), (1100, 24), (44, 24), "lhs_contracting_dims={0}, rhs_contracting_dims={0}",
     lambda a, b: a.T @ b),
    # A transposed rhs over several k blocks, k groups not a multiple of 16
    # in the last, two whole strips of 32 columns and part of one.
    ((44, 1100), (70, 1100), (44, 70), "lhs_contracting_dims={1}, rhs_contracting_dims={1}",
     lambda a, b: a @ b.T),
    ((3, 64, 48), (3, 40, 64), (3, 48, 40),
     "lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={1}, rhs_contracting_dims={2}",
     lambda a, b: np.swapaxes(a, 1, 2) @ np.swapaxes(b, 1, 2)),
    ((5, 17, 33), (5, 33, 9), (5, 17, 9),
     "lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}",
     lambda a, b: a @ b),
]


@pytest.mark.parametrize("lhs,rhs,out,dims,ref", FORMS)
def test_every_operand_form(lhs, rhs, out, dims, ref):
    rng = np.random.default_rng(len(lhs) * 10 + len(rhs))
    exe = compile_dot(lhs, rhs, out, dims, "s8", "s32")
    assert "__xla_cpu_matmul_s8_s32" in exe.ir_text
    ops = [i.opcode for i in exe.module.entry.instructions]
    assert "transpose" not in ops, ops
    a, b = s8_values(lhs, "random", rng), s8_values(rhs, "random", rng)
    np.testing.assert_array_equal(np.asarray(exe.execute(a, b)),
                                  ref(a.astype(np.int64), b.astype(np.int64)))
    exe = compile_dot(lhs, rhs, out, dims, "bf16", "f32")
    assert "__xla_cpu_matmul_bf16_f32" in exe.ir_text
    a = rng.standard_normal(lhs).astype(BF16)
    b = rng.standard_normal(rhs).astype(BF16)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    bound = (max(lhs) + 1) * 2.0 ** -24 * ref(np.abs(a64), np.abs(b64))
    assert np.all(np.abs(np.asarray(exe.execute(a, b)) - ref(a64, b64)) <= bound)


@pytest.mark.parametrize("form", ["A x", "x^T A^T"])
def test_bf16_matrix_vector_product_keeps_rows_of_denormals(form):
    # A matrix-vector product streams the matrix once, checking its rows as
    # they pass (the dot-product instruction would read the bf16 denormal
    # 2^-130 as zero); a row holding one is recomputed exactly. Rows 5
    # and 133 hold denormals, row 6 a 2^-60 (tiny for the check, normal for
    # the instruction), the others random values.
    rows, k = 300, 200
    rng = np.random.default_rng(7)
    a = rng.standard_normal((rows, k)).astype(BF16)
    a[5] = 2.0 ** -130
    a[133, ::7] = -(2.0 ** -131)
    a[6, 3] = 2.0 ** -60
    x = (rng.standard_normal(k) * 1024).astype(BF16)
    if form == "A x":
        exe = compile_dot((rows, k), (k,), (rows,), PLAIN, "bf16", "f32")
        got = np.asarray(exe.execute(a, x))
    else:
        exe = compile_dot((k,), (rows, k), (rows,),
                          "lhs_contracting_dims={0}, rhs_contracting_dims={1}", "bf16", "f32")
        got = np.asarray(exe.execute(x, a))
    want, bound = bf16_reference(a, x[:, None])
    want, bound = want[:, 0], bound[:, 0]
    assert want[5] != 0 and want[133] != 0
    assert np.all(np.abs(got - want) <= bound), np.flatnonzero(np.abs(got - want) > bound)


@pytest.mark.parametrize("column", [40, 110, 127, 270, 299])
def test_bf16_matrix_vector_product_finds_a_denormal_anywhere_in_a_row(column):
    # Rows of 300 bf16 stream as two steps of four 32-element vectors, then
    # one whole vector and 12 elements: the one denormal of row 9 sits in
    # a step's second or last vector, the last element of a step, the whole
    # vector after them or the partial one.
    rows, k = 20, 300
    rng = np.random.default_rng(column)
    a = rng.standard_normal((rows, k)).astype(BF16)
    a[9] = 0
    a[9, column] = 2.0 ** -130
    x = rng.standard_normal(k).astype(BF16)
    x[column] = 2.0 ** 100
    exe = compile_dot((rows, k), (k,), (rows,), PLAIN, "bf16", "f32")
    got = np.asarray(exe.execute(a, x))
    want, bound = bf16_reference(a, x[:, None])
    want, bound = want[:, 0], bound[:, 0]
    # Row 9 is 2^-130 * 2^100 = 2^-30 exactly; the denormal read as zero
    # would make it 0.
    assert got[9] == want[9] == 2.0 ** -30
    assert np.all(np.abs(got - want) <= bound), np.flatnonzero(np.abs(got - want) > bound)


def test_bf16_matrix_vector_product_with_a_denormal_vector_is_widened():
    rows, k = 64, 100
    a = np.full((rows, k), 2.0 ** 100, BF16)
    x = np.full(k, 2.0 ** -130, BF16)
    exe = compile_dot((rows, k), (k,), (rows,), PLAIN, "bf16", "f32")
    np.testing.assert_array_equal(np.asarray(exe.execute(a, x)),
                                  np.full(rows, k * 2.0 ** -30, np.float32))


def test_bf16_dot_finds_a_denormal_in_the_operands_last_partial_vector():
    # The scan for values the dot-product instruction would flush reads 32
    # bf16 at a time; 9 x 40 = 360 elements leave 8 past the last whole
    # vector, and the only denormal is the very last element.
    rng = np.random.default_rng(11)
    a = rng.standard_normal((9, 40)).astype(BF16)
    a[8] = 0
    a[8, 39] = 2.0 ** -130
    b = (rng.standard_normal((40, 33)) * 1024).astype(BF16)
    exe = compile_dot((9, 40), (40, 33), (9, 33), PLAIN, "bf16", "f32")
    got = np.asarray(exe.execute(a, b))
    want, bound = bf16_reference(a, b)
    assert np.all(want[8] != 0)
    assert np.all(np.abs(got - want) <= bound)


@pytest.mark.parametrize("scale,want", [(1, 2.0 ** -127), (2, 2.0 ** -126)])
def test_bf16_dot_keeps_partial_sums_below_the_smallest_normal(scale, want):
    # The dot-product instruction flushes denormal sums. Row 0 of a and
    # column 5 of b: (1 + 2^-7) 2^-100 * (1 + 2^-7) 2^-13 s - 2^-100 *
    # (1 + 2^-6) 2^-13 s = 2^-127 s, every product normal. The smallest
    # magnitudes' biased exponents sum to 141 at s = 1 (a sum of products can
    # be denormal: the widened path keeps 2^-127) and to 142 at s = 2 (no
    # partial sum can be: the dot-product path, 2^-126). Everything else
    # is 1.
    a = np.ones((9, 40), BF16)
    b = np.ones((40, 33), BF16)
    a[0] = 0
    a[0, 3], a[0, 4] = (1 + 2.0 ** -7) * 2.0 ** -100, 2.0 ** -100
    b[3, 5] = (1 + 2.0 ** -7) * 2.0 ** -13 * scale
    b[4, 5] = -(1 + 2.0 ** -6) * 2.0 ** -13 * scale
    exe = compile_dot((9, 40), (40, 33), (9, 33), PLAIN, "bf16", "f32")
    got = np.asarray(exe.execute(a, b))
    assert got[0, 5] == np.float32(want)
    ref, bound = bf16_reference(a, b)
    assert np.all(np.abs(got - ref) <= bound)


def test_bf16_dot_with_tiny_probabilities_stays_exact():
    # Softmax-like rows (values down to 2^-120, far below what the
    # instruction could flush were both operands that small) times values
    # of ordinary size: every product is normal, the product exact.
    rng = np.random.default_rng(12)
    p = np.exp2(-rng.uniform(0, 120, (64, 96))).astype(BF16)
    v = rng.standard_normal((96, 48)).astype(BF16)
    v[np.abs(v.astype(np.float32)) < 2.0 ** -6] = 0.5
    exe = compile_dot((64, 96), (96, 48), (64, 48), PLAIN, "bf16", "f32")
    got = np.asarray(exe.execute(p, v))
    ref, bound = bf16_reference(p, v)
    assert np.all(np.abs(got - ref) <= bound)


@pytest.mark.parametrize("tiny_in", ["lhs", "rhs"])
def test_bf16_dot_finds_a_tiny_element_in_the_last_chunk_of_a_large_operand(tiny_in):
    # Operands of 512 K elements are scanned in 128 K-element chunks across
    # the pool; the one element that makes a product denormal (2^-110 *
    # 2^-30 = 2^-140) is the operand's last, in the last chunk. Found, the
    # product is widened and keeps it; missed, the instruction flushes it.
    m, k, n = 1024, 512, 1024
    a = np.ones((m, k), BF16)
    b = np.ones((k, n), BF16)
    if tiny_in == "lhs":
        b[:] = 2.0 ** -30
        a[-1] = 0
        a[-1, -1] = 2.0 ** -110
        want_index, want_other = np.s_[-1, :], k * 2.0 ** -30
    else:
        a[:] = 2.0 ** -30
        b[:, -1] = 0
        b[-1, -1] = 2.0 ** -110
        want_index, want_other = np.s_[:, -1], k * 2.0 ** -30
    exe = compile_dot((m, k), (k, n), (m, n), PLAIN, "bf16", "f32")
    got = np.asarray(exe.execute(a, b))
    assert np.all(got[want_index] == np.float32(2.0 ** -140))
    rest = np.delete(got, -1, axis=0 if tiny_in == "lhs" else 1)
    assert np.all(rest == np.float32(want_other))
