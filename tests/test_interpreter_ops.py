"""Direct tests of the interpreter's op handlers (ops_*.py) against values
derived independently: hand-computed cases and slow loop references."""
import itertools

import ml_dtypes
import numpy as np
import pytest

from xla.hlo.evaluator.evaluator import Evaluator
from xla.hlo.evaluator import ops_collectives, ops_custom_call, ops_gather_scatter  # noqa: F401
from xla.hlo.evaluator import ops_linalg, ops_rng, ops_sort, ops_window  # noqa: F401
from xla.hlo.evaluator.registry import HANDLERS
from xla.errors import UnimplementedError
from xla.hlo.attributes import ConvDimensionNumbers, Window, WindowDimension
from xla.hlo.ir import HloComputation, HloInstruction
from xla.hlo.shape import Shape
from xla.hlo.types import from_dtype

# ----- building small IR by hand ------------------------------------------


def shape_of(dtype, dims):
    return Shape.array(from_dtype(np.dtype(dtype)), tuple(dims))


def tuple_shape(*shapes):
    return Shape.tuple(list(shapes))


def scalar_comp(opcode, dtype=np.float32, attrs=None, name=None, swapped=False):
    """Computation (p0, p1) -> opcode(p0, p1) on scalars (pred result for compare)."""
    s = shape_of(dtype, ())
    p0 = HloInstruction.create_parameter(0, s, "p0")
    p1 = HloInstruction.create_parameter(1, s, "p1")
    out = shape_of(np.bool_, ()) if opcode == "compare" else s
    if opcode == "param1":
        return HloComputation(name or "assign", [p0, p1], root=p1)
    ops = [p1, p0] if swapped else [p0, p1]
    root = HloInstruction(opcode, out, ops, attrs=attrs or {})
    return HloComputation(name or opcode, [p0, p1, root])


def sort_comp(dtypes, keys):
    """Comparator over len(dtypes) operands; keys: [(operand, direction, type)], lexicographic like JAX."""
    params = []
    for i, dt in enumerate(dtypes):
        params += [HloInstruction.create_parameter(2 * i, shape_of(dt, ()), f"p{2*i}"),
                   HloInstruction.create_parameter(2 * i + 1, shape_of(dt, ()), f"p{2*i+1}")]
    instrs = list(params)
    pred = shape_of(np.bool_, ())

    def cmp(m, direction, ctype):
        c = HloInstruction("compare", pred, [params[2 * m], params[2 * m + 1]],
                           attrs={"direction": direction, "type": ctype})
        instrs.append(c)
        return c
    p = None
    for m, direction, ctype in reversed(keys):
        lt = cmp(m, direction, ctype)
        if p is None:
            p = lt
        else:
            eq = cmp(m, "EQ", ctype)
            a = HloInstruction("and", pred, [eq, p])
            instrs.append(a)
            p = HloInstruction("or", pred, [lt, a])
            instrs.append(p)
    return HloComputation("cmp", instrs, root=p)


def window(*dims):
    return Window([WindowDimension(**d) if isinstance(d, dict) else WindowDimension(*d) for d in dims])


def instr(opcode, shape, attrs=None, n_operands=0):
    return HloInstruction(opcode, shape, [], attrs=attrs or {})


CTX = Evaluator()


def run(opcode, shape, operands, **attrs):
    return HANDLERS[opcode](instr(opcode, shape, attrs), [np.asarray(o) for o in operands], CTX)


# ----------------------------------------------------------------------------
# dot
# ----------------------------------------------------------------------------

def test_dot_batch_and_contracting_dims():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((2, 3, 4)).astype(np.float32)   # [k, b, m]? dims: b=1, contract=0
    b = rng.standard_normal((4, 3, 5)).astype(np.float32)   # contract=0... batch=1
    # lhs: batch dim 1, contracting 2; rhs: batch dim 1, contracting 0.
    out = run("dot", shape_of(np.float32, (3, 2, 5)), [a, b], lhs_batch_dims=(1,), rhs_batch_dims=(1,),
              lhs_contracting_dims=(2,), rhs_contracting_dims=(0,))
    ref = np.zeros((3, 2, 5))
    for bb, m, n, k in itertools.product(range(3), range(2), range(5), range(4)):
        ref[bb, m, n] += float(a[m, bb, k]) * float(b[k, bb, n])
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)
    assert out.dtype == np.float32


def test_dot_integer_wraparound_and_mixed_types():
    a = np.array([[100, 100]], np.int8)
    b = np.array([[100], [100]], np.int8)
    out = run("dot", shape_of(np.int32, (1, 1)), [a, b], lhs_contracting_dims=(1,), rhs_contracting_dims=(0,))
    assert out.dtype == np.int32 and out[0, 0] == 20000
    out8 = run("dot", shape_of(np.int8, (1, 1)), [a, b], lhs_contracting_dims=(1,), rhs_contracting_dims=(0,))
    assert out8[0, 0] == np.int8(20000 - 78 * 256)  # 20000 mod 256 as signed = 32
    big = np.array([[2**31 - 1, 2**31 - 1]], np.int32)
    out32 = run("dot", shape_of(np.int32, (1, 1)), [big, np.array([[3], [5]], np.int32)],
                lhs_contracting_dims=(1,), rhs_contracting_dims=(0,))
    assert out32[0, 0] == np.int32(((2**31 - 1) * 8) % 2**32 - 2**32 if ((2**31 - 1) * 8) % 2**32 >= 2**31
                                   else ((2**31 - 1) * 8) % 2**32)
    u = np.array([[255]], np.uint8)
    outu = run("dot", shape_of(np.int32, (1, 1)), [u, u], lhs_contracting_dims=(1,), rhs_contracting_dims=(0,))
    assert outu[0, 0] == 255 * 255


def test_dot_bf16_result_and_outer_product():
    a = np.array([1.5, 2.0], ml_dtypes.bfloat16)
    b = np.array([3.0, 0.5, 1.0], ml_dtypes.bfloat16)
    out = run("dot", shape_of(np.float32, (2, 3)), [a, b])
    np.testing.assert_array_equal(out, np.outer([1.5, 2.0], [3.0, 0.5, 1.0]).astype(np.float32))
    out = run("dot", shape_of(ml_dtypes.bfloat16, ()), [a, a], lhs_contracting_dims=(0,),
              rhs_contracting_dims=(0,))
    assert out.dtype == ml_dtypes.bfloat16 and float(out) == 6.25


# ----------------------------------------------------------------------------
# convolution
# ----------------------------------------------------------------------------

def ref_conv(x, w, strides, pads, lhs_dil, rhs_dil, G=1, Bg=1, reversal=None):
    """Loop reference on canonical layouts x (N,C,S...), w (O,I,K...)."""
    N, C = x.shape[:2]
    O, I = w.shape[:2]
    nsp = x.ndim - 2
    if reversal:
        for d, r in enumerate(reversal):
            if r:
                w = np.flip(w, 2 + d)
    # dilate
    dshape = [N, C] + [(s - 1) * l + 1 for s, l in zip(x.shape[2:], lhs_dil)]
    xd = np.zeros(dshape)
    xd[(slice(None), slice(None)) + tuple(slice(None, None, l) for l in lhs_dil)] = x
    # pad (negative crops)
    for d, (lo, hi) in enumerate(pads):
        ax = 2 + d
        if lo >= 0:
            xd = np.concatenate([np.zeros(xd.shape[:ax] + (lo,) + xd.shape[ax + 1:]), xd], ax)
        else:
            xd = np.take(xd, range(-lo, xd.shape[ax]), axis=ax)
        if hi >= 0:
            xd = np.concatenate([xd, np.zeros(xd.shape[:ax] + (hi,) + xd.shape[ax + 1:])], ax)
        else:
            xd = np.take(xd, range(0, xd.shape[ax] + hi), axis=ax)
    ks = w.shape[2:]
    outsp = [(xd.shape[2 + d] - ((ks[d] - 1) * rhs_dil[d] + 1)) // strides[d] + 1 for d in range(nsp)]
    out = np.zeros([N // Bg, O] + outsp)
    for n, o in itertools.product(range(N // Bg), range(O)):
        g = o // (O // G)
        b = o // (O // Bg)
        nin = b * (N // Bg) + n
        for pos in itertools.product(*[range(s) for s in outsp]):
            acc = 0.0
            for i in range(I):
                for k in itertools.product(*[range(s) for s in ks]):
                    idx = tuple(p * s + kk * r for p, s, kk, r in zip(pos, strides, k, rhs_dil))
                    acc += xd[(nin, g * I + i) + idx] * w[(o, i) + k]
            out[(n, o) + pos] = acc
    return out


def conv_instr_run(x, w, out_shape_canon, strides, pads, lhs_dil, rhs_dil, G=1, Bg=1, reversal=None,
                   labels="bf01_oi01->bf01", dtype=np.float32, out_dtype=None):
    dn = ConvDimensionNumbers.from_text(labels)
    nsp = len(strides)
    # Transpose canonical inputs into the labelled layouts.
    xin = np.transpose(x, np.argsort([dn.input_batch_dimension, dn.input_feature_dimension]
                                     + list(dn.input_spatial_dimensions)))
    win = np.transpose(w, np.argsort([dn.kernel_output_feature_dimension, dn.kernel_input_feature_dimension]
                                     + list(dn.kernel_spatial_dimensions)))
    order = [dn.output_batch_dimension, dn.output_feature_dimension] + list(dn.output_spatial_dimensions)
    out_dims = [0] * (nsp + 2)
    for canon_axis, d in enumerate(order):
        out_dims[d] = out_shape_canon[canon_axis]
    wdims = [dict(size=w.shape[2 + d], stride=strides[d], padding_low=pads[d][0], padding_high=pads[d][1],
                  base_dilation=lhs_dil[d], window_dilation=rhs_dil[d],
                  window_reversal=bool(reversal[d]) if reversal else False) for d in range(nsp)]
    out = run("convolution", shape_of(out_dtype or dtype, out_dims), [xin.astype(dtype), win.astype(dtype)],
              dim_labels=dn, window=window(*wdims), feature_group_count=G, batch_group_count=Bg)
    return np.transpose(out, order)


@pytest.mark.parametrize("case", [
    dict(xs=(2, 3, 7), ws=(4, 3, 3), strides=(2,), pads=((1, 2),), ld=(1,), rd=(1,)),
    dict(xs=(1, 2, 5, 6), ws=(3, 2, 2, 3), strides=(1, 2), pads=((0, 1), (2, 0)), ld=(2, 1), rd=(1, 2)),
    dict(xs=(1, 2, 6, 5), ws=(2, 2, 3, 2), strides=(1, 1), pads=((-1, 1), (1, -1)), ld=(1, 1), rd=(1, 1)),
    dict(xs=(2, 4, 6), ws=(6, 2, 3), strides=(1,), pads=((1, 1),), ld=(1,), rd=(2,), G=2),
    dict(xs=(2, 4, 5), ws=(4, 1, 2), strides=(1,), pads=((0, 0),), ld=(1,), rd=(1,), G=4),
    dict(xs=(4, 3, 5), ws=(4, 3, 2), strides=(1,), pads=((1, 0),), ld=(1,), rd=(1,), Bg=2),
    dict(xs=(2, 2, 4, 4), ws=(2, 2, 2, 2), strides=(1, 1), pads=((0, 0), (0, 0)), ld=(1, 1), rd=(1, 1),
         rev=(1, 0)),
])
@pytest.mark.parametrize("labels", ["bf01_oi01->bf01", "b01f_01io->b01f", "f01b_i01o->01bf"])
def test_convolution_matches_loop_reference(case, labels):
    rng = np.random.default_rng(1)
    x = rng.integers(-3, 4, case["xs"]).astype(np.float64)
    w = rng.integers(-3, 4, case["ws"]).astype(np.float64)
    nsp = len(case["strides"])
    if nsp == 1:
        labels = labels.replace("01", "0").replace("1", "") if False else {
            "bf01_oi01->bf01": "bf0_oi0->bf0", "b01f_01io->b01f": "b0f_0io->b0f",
            "f01b_i01o->01bf": "f0b_i0o->0bf"}[labels]
    G, Bg = case.get("G", 1), case.get("Bg", 1)
    ref = ref_conv(x, w, case["strides"], case["pads"], case["ld"], case["rd"], G, Bg, case.get("rev"))
    out = conv_instr_run(x, w, ref.shape, case["strides"], case["pads"], case["ld"], case["rd"], G, Bg,
                         case.get("rev"), labels=labels)
    np.testing.assert_allclose(out, ref, rtol=1e-6)


def test_convolution_int8_to_int32():
    x = np.full((1, 1, 4), 100, np.int8)
    w = np.full((1, 1, 3), 100, np.int8)
    out = conv_instr_run(x, w, (1, 1, 2), (1,), ((0, 0),), (1,), (1,), labels="bf0_oi0->bf0",
                         dtype=np.int8, out_dtype=np.int32)
    np.testing.assert_array_equal(out, [[[30000, 30000]]])


# ----------------------------------------------------------------------------
# reduce-window, select-and-scatter
# ----------------------------------------------------------------------------

def ref_reduce_window(x, init, fn, wdims):
    """Loop reference: skip padding and holes, acc = fn(acc, x)."""
    outs = []
    for n, wd in zip(x.shape, wdims):
        size, stride, lo, hi, wdil, bdil = wd
        padded = (n - 1) * bdil + 1 + lo + hi
        outs.append((padded - ((size - 1) * wdil + 1)) // stride + 1)
    out = np.empty(outs, x.dtype)
    for o in itertools.product(*[range(s) for s in outs]):
        acc = init
        for k in itertools.product(*[range(wd[0]) for wd in wdims]):
            idx = []
            for oo, kk, n, (size, stride, lo, hi, wdil, bdil) in zip(o, k, x.shape, wdims):
                p = oo * stride + kk * wdil - lo
                if p < 0 or p % bdil or p // bdil >= n:
                    break
                idx.append(p // bdil)
            else:
                acc = fn(acc, x[tuple(idx)])
        out[o] = acc
    return out


@pytest.mark.parametrize("wdims", [
    [(2, 1, 0, 0, 1, 1), (3, 2, 1, 1, 1, 1)],
    [(3, 2, 2, 1, 2, 1), (2, 1, 0, 0, 1, 2)],
    [(2, 3, -1, 2, 1, 3), (1, 1, 0, 0, 1, 1)],
])
@pytest.mark.parametrize("op", ["add", "maximum"])
def test_reduce_window_padding_and_dilation(wdims, op):
    x = np.arange(20, dtype=np.float32).reshape(4, 5) * np.float32(1.5) - 7
    init = np.float32(1.0) if op == "add" else np.float32(-100.0)  # non-identity init for add
    fn = {"add": lambda a, b: a + b, "maximum": max}[op]
    ref = ref_reduce_window(x, init, fn, wdims)
    w = window(*[dict(size=s, stride=st, padding_low=lo, padding_high=hi, window_dilation=wd, base_dilation=bd)
                 for s, st, lo, hi, wd, bd in wdims])
    out = run("reduce-window", shape_of(np.float32, ref.shape), [x, init], window=w, to_apply=scalar_comp(op))
    np.testing.assert_allclose(out, ref)
    # The generic path (computation evaluated elementwise) agrees.
    from xla.hlo.evaluator import ops_common
    saved = ops_common.reducer_kind
    ops_common.reducer_kind = lambda comp: None
    try:
        out2 = run("reduce-window", shape_of(np.float32, ref.shape), [x, init], window=w,
                   to_apply=scalar_comp(op, swapped=True))
    finally:
        ops_common.reducer_kind = saved
    np.testing.assert_allclose(out2, ref)


def test_reduce_window_variadic_argmax():
    # (value, index) max reduction with a generic comparator-based computation.
    from xla.hlo.ir import HloComputation, HloInstruction
    f, i = shape_of(np.float32, ()), shape_of(np.int32, ())
    p = [HloInstruction.create_parameter(n, s) for n, s in enumerate([f, i, f, i])]
    gt = HloInstruction("compare", shape_of(np.bool_, ()), [p[0], p[2]], attrs={"direction": "GE"})
    sv = HloInstruction("select", f, [gt, p[0], p[2]])
    si = HloInstruction("select", i, [gt, p[1], p[3]])
    t = HloInstruction("tuple", tuple_shape(f, i), [sv, si])
    comp = HloComputation("argmax", p + [gt, sv, si, t])
    x = np.array([3, 1, 4, 1, 5, 9, 2, 6], np.float32)
    idx = np.arange(8, dtype=np.int32)
    out = run("reduce-window", tuple_shape(shape_of(np.float32, (3,)), shape_of(np.int32, (3,))),
              [x, idx, np.float32(-np.inf), np.int32(-1)], window=window(dict(size=3, stride=3, padding_high=1)),
              to_apply=comp)
    np.testing.assert_array_equal(out[0], [4, 9, 6])
    np.testing.assert_array_equal(out[1], [2, 5, 7])


def test_select_and_scatter_max_pool_grad_with_ties():
    x = np.array([[1, 5, 5, 2],
                  [5, 3, 0, 5],
                  [7, 7, 1, 1]], np.float32)
    src = np.array([[10, 20, 30], [40, 50, 60]], np.float32)
    w = window(dict(size=2, stride=1), dict(size=2, stride=1))
    out = run("select-and-scatter", shape_of(np.float32, x.shape), [x, src, np.float32(0)], window=w,
              select=scalar_comp("compare", attrs={"direction": "GE"}), scatter=scalar_comp("add"))
    # Windows (row-major) pick the first maximum: (0,1) (0,1) (0,2)... computed by hand:
    # w00 {1,5,5,3}->(0,1); w01 {5,5,3,0}->(0,1); w02 {5,2,0,5}->(0,2);
    # w10 {5,3,7,7}->(2,0); w11 {3,0,7,1}->(2,1); w12 {0,5,1,1}->(1,3)
    ref = np.zeros_like(x)
    ref[0, 1] = 30
    ref[0, 2] = 30
    ref[2, 0] = 40
    ref[2, 1] = 50
    ref[1, 3] = 60
    np.testing.assert_array_equal(out, ref)


def test_select_and_scatter_padding_never_selected():
    x = np.array([-5, -3, -4], np.float32)
    src = np.array([1, 2], np.float32)
    w = window(dict(size=2, stride=2, padding_low=1, padding_high=0))
    out = run("select-and-scatter", shape_of(np.float32, (3,)), [x, src, np.float32(0.5)], window=w,
              select=scalar_comp("compare", attrs={"direction": "GE"}), scatter=scalar_comp("add"))
    # window 0 = {pad, -5} -> index 0; window 1 = {-3, -4} -> index 1
    np.testing.assert_array_equal(out, [1.5, 2.5, 0.5])


# ----------------------------------------------------------------------------
# gather, scatter
# ----------------------------------------------------------------------------

def test_gather_clamps_out_of_bounds_starts():
    op = np.arange(12, dtype=np.int32).reshape(3, 4)
    idx = np.array([[0, 0], [2, 3], [-1, 1], [1, 9]], np.int32)
    out = run("gather", shape_of(np.int32, (4, 2, 2)), [op, idx], offset_dims=(1, 2), collapsed_slice_dims=(),
              start_index_map=(0, 1), index_vector_dim=1, slice_sizes=(2, 2))
    ref = []
    for r, c in idx:
        r = min(max(r, 0), 1)
        c = min(max(c, 0), 2)
        ref.append(op[r:r + 2, c:c + 2])
    np.testing.assert_array_equal(out, np.array(ref))


def test_gather_take_along_rows_collapsed_and_offset_dims_first():
    op = np.arange(15, dtype=np.float32).reshape(5, 3)
    idx = np.array([4, 0, 2], np.int32)
    # jnp.take(op, idx, axis=0) with the offset dim placed first: out[j, i] = op[idx[i], j]
    out = run("gather", shape_of(np.float32, (3, 3)), [op, idx], offset_dims=(0,), collapsed_slice_dims=(0,),
              start_index_map=(0,), index_vector_dim=1, slice_sizes=(1, 3))
    np.testing.assert_array_equal(out, op[idx].T)


def test_gather_batching_dims():
    op = np.arange(24, dtype=np.int32).reshape(2, 3, 4)   # batch dim 0
    idx = np.array([[1, 3], [2, 0]], np.int32)            # (batch=2, n=2), index_vector_dim=2 (implicit)
    out = run("gather", shape_of(np.int32, (2, 2, 4)), [op, idx], offset_dims=(2,), collapsed_slice_dims=(1,),
              start_index_map=(1,), index_vector_dim=2, slice_sizes=(1, 1, 4), operand_batching_dims=(0,),
              start_indices_batching_dims=(0,))
    ref = np.array([[op[b, min(idx[b, n], 2)] for n in range(2)] for b in range(2)])
    np.testing.assert_array_equal(out, ref)


def test_scatter_add_duplicates_and_oob_skipped():
    op = np.zeros((5,), np.float32)
    idx = np.array([[1], [3], [1], [5], [-1], [4]], np.int32)
    upd = np.array([1, 2, 3, 4, 5, 6], np.float32)
    out = run("scatter", shape_of(np.float32, (5,)), [op, idx, upd], update_window_dims=(),
              inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,), index_vector_dim=1,
              to_apply=scalar_comp("add"))
    np.testing.assert_array_equal(out, [0, 4, 0, 2, 6])


def test_scatter_window_partially_out_of_bounds_is_skipped_whole():
    op = np.zeros((3, 4), np.int32)
    idx = np.array([[0, 0], [2, 3], [1, 2]], np.int32)
    upd = np.ones((3, 2, 2), np.int32) * np.array([1, 10, 100], np.int32)[:, None, None]
    out = run("scatter", shape_of(np.int32, (3, 4)), [op, idx, upd], update_window_dims=(1, 2),
              inserted_window_dims=(), scatter_dims_to_operand_dims=(0, 1), index_vector_dim=1,
              to_apply=scalar_comp("add", np.int32))
    ref = np.zeros((3, 4), np.int32)
    ref[0:2, 0:2] += 1
    ref[1:3, 2:4] += 100    # (2,3) does not fit: skipped
    np.testing.assert_array_equal(out, ref)


def test_scatter_in_order_generic_and_assign():
    op = np.array([1.0, 1.0, 1.0], np.float32)
    idx = np.array([[0], [0], [2], [0]], np.int32)
    upd = np.array([2.0, 3.0, 4.0, 5.0], np.float32)
    kw = dict(update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,),
              index_vector_dim=1)
    # subtract is not commutative: ((1-2)-3)-5 = -9 proves the in-order, current-first rule.
    out = run("scatter", shape_of(np.float32, (3,)), [op, idx, upd], to_apply=scalar_comp("subtract"), **kw)
    np.testing.assert_array_equal(out, [-9, 1, -3])
    out = run("scatter", shape_of(np.float32, (3,)), [op, idx, upd], to_apply=scalar_comp("param1"), **kw)
    np.testing.assert_array_equal(out, [5, 1, 4])


def test_scatter_batching_dims_and_variadic():
    op = np.zeros((2, 4), np.int32)
    op2 = np.zeros((2, 4), np.float32)
    idx = np.array([[1, 1], [3, 0]], np.int32)   # batch b, n
    upd = np.array([[1, 2], [3, 4]], np.int32)
    upd2 = upd.astype(np.float32) * 10
    from xla.hlo.ir import HloComputation, HloInstruction
    si, sf = shape_of(np.int32, ()), shape_of(np.float32, ())
    p = [HloInstruction.create_parameter(n, s) for n, s in enumerate([si, sf, si, sf])]
    a = HloInstruction("add", si, [p[0], p[2]])
    m = HloInstruction("maximum", sf, [p[1], p[3]])
    t = HloInstruction("tuple", tuple_shape(si, sf), [a, m])
    comp = HloComputation("comb", p + [a, m, t])
    out = run("scatter", tuple_shape(shape_of(np.int32, (2, 4)), shape_of(np.float32, (2, 4))),
              [op, op2, idx, upd, upd2], update_window_dims=(), inserted_window_dims=(1,),
              scatter_dims_to_operand_dims=(1,), index_vector_dim=2, input_batching_dims=(0,),
              scatter_indices_batching_dims=(0,), to_apply=comp)
    np.testing.assert_array_equal(out[0], [[0, 3, 0, 0], [4, 0, 0, 3]])
    np.testing.assert_array_equal(out[1], [[0, 20, 0, 0], [40, 0, 0, 30]])


# ----------------------------------------------------------------------------
# sort, topk
# ----------------------------------------------------------------------------

def _sort(operands, dtypes, keys, dim=0, generic=False):
    comp = sort_comp(dtypes, keys)
    if generic:
        from xla.hlo.evaluator import ops_sort as m
        saved = m._comparator_keys
        m._comparator_keys = lambda c: None
    try:
        shapes = [shape_of(dt, np.shape(o)) for o, dt in zip(operands, dtypes)]
        shape = tuple_shape(*shapes) if len(operands) > 1 else shapes[0]
        out = run("sort", shape, operands, dimensions=(dim,), to_apply=comp, is_stable=True)
    finally:
        if generic:
            m._comparator_keys = saved
    return out if isinstance(out, tuple) else (out,)


@pytest.mark.parametrize("generic", [False, True])
def test_sort_stable_multi_operand(generic):
    keys = np.array([3, 1, 3, 2, 1, 3], np.int32)
    vals = np.arange(6, dtype=np.int32)
    k, v = _sort([keys, vals], [np.int32, np.int32], [(0, "LT", "SIGNED")], generic=generic)
    np.testing.assert_array_equal(k, [1, 1, 2, 3, 3, 3])
    np.testing.assert_array_equal(v, [1, 4, 3, 0, 2, 5])
    k, v = _sort([keys, vals], [np.int32, np.int32], [(0, "GT", "SIGNED")], generic=generic)
    np.testing.assert_array_equal(k, [3, 3, 3, 2, 1, 1])
    np.testing.assert_array_equal(v, [0, 2, 5, 3, 1, 4])


@pytest.mark.parametrize("generic", [False, True])
def test_sort_lexicographic_two_keys_along_dim1(generic):
    a = np.array([[2, 1, 2, 1], [0, 0, 0, 0]], np.int32)
    b = np.array([[5, 7, 4, 6], [3, 1, 2, 1]], np.uint8)
    c = np.arange(8, dtype=np.float32).reshape(2, 4)
    ka, kb, kc = _sort([a, b, c], [np.int32, np.uint8, np.float32],
                       [(0, "LT", "SIGNED"), (1, "LT", "UNSIGNED")], dim=1, generic=generic)
    np.testing.assert_array_equal(ka, [[1, 1, 2, 2], [0, 0, 0, 0]])
    np.testing.assert_array_equal(kb, [[6, 7, 4, 5], [1, 1, 2, 3]])
    np.testing.assert_array_equal(kc, [[3, 1, 2, 0], [5, 7, 6, 4]])


def test_sort_totalorder_nans_and_signed_zeros():
    nan = np.float32(np.nan)
    neg_nan = np.array([0xFFC00000], np.uint32).view(np.float32)[0]
    x = np.array([1.0, nan, -0.0, 0.0, -np.inf, neg_nan, 2.0, -0.0], np.float32)
    (out,) = _sort([x], [np.float32], [(0, "LT", "TOTALORDER")])
    bits = out.view(np.uint32)
    assert bits[0] == 0xFFC00000                        # -NaN first
    assert out[1] == -np.inf
    assert np.signbit(out[2]) and np.signbit(out[3]) and out[2] == 0 and out[3] == 0
    assert out[4] == 0 and not np.signbit(out[4])
    np.testing.assert_array_equal(out[5:7], [1.0, 2.0])
    assert np.isnan(out[7]) and not np.signbit(out[7])   # +NaN last
    (desc,) = _sort([x], [np.float32], [(0, "GT", "TOTALORDER")])
    assert np.isnan(desc[0]) and not np.signbit(desc[0])
    assert desc.view(np.uint32)[-1] == 0xFFC00000


def test_sort_float_compare_treats_signed_zeros_equal():
    x = np.array([0.0, -0.0, -1.0, 0.0], np.float32)
    i = np.arange(4, dtype=np.int32)
    _, order = _sort([x, i], [np.float32, np.int32], [(0, "LT", "FLOAT")])
    np.testing.assert_array_equal(order, [2, 0, 1, 3])


def test_topk_ties_lower_index_first():
    x = np.array([[1, 3, 3, 2, 3], [5, 4, 5, 1, 0]], np.float32)
    out = run("topk", tuple_shape(shape_of(np.float32, (2, 3)), shape_of(np.int32, (2, 3))), [x], k=3,
              largest=True)
    np.testing.assert_array_equal(out[0], [[3, 3, 3], [5, 5, 4]])
    np.testing.assert_array_equal(out[1], [[1, 2, 4], [0, 2, 1]])
    out = run("topk", tuple_shape(shape_of(np.float32, (2, 2)), shape_of(np.int32, (2, 2))), [x], k=2,
              largest=False)
    np.testing.assert_array_equal(out[1], [[0, 3], [4, 3]])


# ----------------------------------------------------------------------------
# rng-bit-generator
# ----------------------------------------------------------------------------

def test_threefry2x32_known_answers():
    # Random123 known-answer vectors for threefry2x32_20 (also in JAX's random tests).
    cases = [((0, 0), (0, 0), (0x6B200159, 0x99BA4EFE)),
             ((0xFFFFFFFF, 0xFFFFFFFF), (0xFFFFFFFF, 0xFFFFFFFF), (0x1CB996FC, 0xBB002BE7)),
             ((0x13198A2E, 0x03707344), (0x243F6A88, 0x85A308D3), (0xC4923A9C, 0x483DF7A0))]
    for key, ctr, expect in cases:
        out = ops_rng.threefry2x32(np.array(key, np.uint32), np.array(ctr, np.uint32).reshape(2, 1))
        assert (int(out[0][0]), int(out[1][0])) == expect


def test_philox4x32_known_answers():
    # Random123 known-answer vectors for philox4x32_10.
    cases = [((0, 0), (0, 0, 0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
             ((0xFFFFFFFF, 0xFFFFFFFF), (0xFFFFFFFF,) * 4, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
             ((0xA4093822, 0x299F31D0), (0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344),
              (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1))]
    for key, ctr, expect in cases:
        out = ops_rng.philox4x32(np.array(key, np.uint32), [np.array([c], np.uint32) for c in ctr])
        assert tuple(int(o[0]) for o in out) == expect


def _threefry_words(key, ctrs):
    k = (np.uint32(key & 0xFFFFFFFF), np.uint32(key >> 32))
    ctrs = np.asarray(ctrs, np.uint64)
    y0, y1 = ops_rng.threefry2x32(k, ((ctrs & 0xFFFFFFFF).astype(np.uint32), (ctrs >> 32).astype(np.uint32)))
    return [int(v) for v in y0], [int(v) for v in y1]


def test_rng_bit_generator_threefry_layout_and_state():
    key, ctr = 0x0370734413198A2E, 5
    state = np.array([key, ctr], np.uint64)
    # (3, 2): split along dim 1 (first even dim): row r = both words of counter ctr + r.
    new_state, bits = run("rng-bit-generator", tuple_shape(shape_of(np.uint64, (2,)), shape_of(np.uint32, (3, 2))),
                          [state], algorithm="rng_three_fry")
    y0, y1 = _threefry_words(key, [ctr, ctr + 1, ctr + 2])
    np.testing.assert_array_equal(bits, np.array([y0, y1]).T)
    np.testing.assert_array_equal(new_state, [key, ctr + 3])
    # (3, 5): no even dim, split the largest (dim 1): 3 x ceil(5/2) counters, row-major.
    new_state, bits = run("rng-bit-generator", tuple_shape(shape_of(np.uint64, (2,)), shape_of(np.uint32, (3, 5))),
                          [state], algorithm="rng_three_fry")
    y0, y1 = _threefry_words(key, ctr + np.arange(9))
    for r, c in itertools.product(range(3), range(5)):
        h = r * 3 + c // 2
        assert int(bits[r, c]) == (y0 if c % 2 == 0 else y1)[h]
    np.testing.assert_array_equal(new_state, [key, ctr + 9])
    # 64-bit: element i = word0 | word1 << 32 of counter ctr + i.
    _, bits64 = run("rng-bit-generator", tuple_shape(shape_of(np.uint64, (2,)), shape_of(np.uint64, (2,))),
                    [state], algorithm="rng_three_fry")
    y0, y1 = _threefry_words(key, [ctr, ctr + 1])
    assert [int(b) for b in bits64] == [y0[i] | (y1[i] << 32) for i in range(2)]


def test_rng_bit_generator_threefry_matches_published_xla_output():
    # state [0, 0], u32[3,2] with THREE_FRY as printed by a third-party XLA binding (r-xla/anvil docs,
    # 5 significant digits): [[1.7973e9, 2.5791e9], [1.3515e9, 3.2358e9], [1.6886e9, 4.2293e9]].
    new_state, bits = run("rng-bit-generator", tuple_shape(shape_of(np.uint64, (2,)), shape_of(np.uint32, (3, 2))),
                          [np.zeros(2, np.uint64)], algorithm="rng_three_fry")
    np.testing.assert_allclose(bits.astype(np.float64), [[1.7973e9, 2.5791e9], [1.3515e9, 3.2358e9],
                                                         [1.6886e9, 4.2293e9]], rtol=1e-4)
    np.testing.assert_array_equal(new_state, [0, 3])


def test_rng_bit_generator_philox_layout_and_state():
    state = np.array([7, 2**64 - 1, 3], np.uint64)
    new_state, bits = run("rng-bit-generator", tuple_shape(shape_of(np.uint64, (3,)), shape_of(np.uint32, (2, 3))),
                          [state], algorithm="rng_philox")
    c0 = ops_rng.philox4x32((7, 0), [np.array([v], np.uint32) for v in (0xFFFFFFFF, 0xFFFFFFFF, 3, 0)])
    c1 = ops_rng.philox4x32((7, 0), [np.array([v], np.uint32) for v in (0, 0, 4, 0)])
    expect = [int(v[0]) for v in c0] + [int(v[0]) for v in c1][:2]
    np.testing.assert_array_equal(bits.reshape(-1), expect)
    np.testing.assert_array_equal(new_state, [7, 1, 4])
    _, bits64 = run("rng-bit-generator", tuple_shape(shape_of(np.uint64, (3,)), shape_of(np.uint64, (3,))),
                    [state], algorithm="rng_default")
    assert int(bits64[0]) == int(c0[0][0]) | (int(c0[1][0]) << 32)
    assert int(bits64[1]) == int(c0[2][0]) | (int(c0[3][0]) << 32)
    assert int(bits64[2]) == int(c1[0][0]) | (int(c1[1][0]) << 32)
    # A u64[2] state: the counter is (low, high) = (state[1], state[0]); only the low word is kept.
    state2 = np.array([9, 2**64 - 1], np.uint64)
    new_state, bits = run("rng-bit-generator", tuple_shape(shape_of(np.uint64, (2,)), shape_of(np.uint32, (4,))),
                          [state2], algorithm="rng_philox")
    c = ops_rng.philox4x32((9, 0), [np.array([v], np.uint32) for v in (0xFFFFFFFF, 0xFFFFFFFF, 9, 0)])
    np.testing.assert_array_equal(bits, [int(v[0]) for v in c])
    np.testing.assert_array_equal(new_state, [9, 0])


def test_rng_get_and_update_state_counts():
    from xla.hlo.attributes import RawAttr
    ctx = Evaluator()
    ins = instr("rng-get-and-update-state", shape_of(np.uint64, (2,)), {"delta": RawAttr("5")})
    a = HANDLERS["rng-get-and-update-state"](ins, [], ctx)
    b = HANDLERS["rng-get-and-update-state"](ins, [], ctx)
    np.testing.assert_array_equal(a, [0, 0])
    np.testing.assert_array_equal(b, [5, 0])


# ----------------------------------------------------------------------------
# cholesky, triangular-solve, fft
# ----------------------------------------------------------------------------

def test_cholesky_lower_upper_and_non_pd():
    rng = np.random.default_rng(3)
    m = rng.standard_normal((2, 4, 4))
    a = (m @ np.swapaxes(m, -1, -2) + 4 * np.eye(4)).astype(np.float32)
    garbage = a.copy()
    garbage[:, 0, 3] = 1e6   # upper triangle is ignored with lower=true
    low = run("cholesky", shape_of(np.float32, a.shape), [garbage], lower=True)
    np.testing.assert_allclose(low @ np.swapaxes(low, -1, -2), a, rtol=1e-4, atol=1e-4)
    assert np.all(np.triu(low, 1) == 0)
    up = run("cholesky", shape_of(np.float32, a.shape), [a], lower=False)
    np.testing.assert_allclose(np.swapaxes(up, -1, -2) @ up, a, rtol=1e-4, atol=1e-4)
    bad = a.copy()
    bad[1] = -np.eye(4)
    out = run("cholesky", shape_of(np.float32, a.shape), [bad], lower=True)
    assert np.isnan(out[1]).any() and not np.isnan(out[0]).any()


@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("trans", ["NO_TRANSPOSE", "TRANSPOSE", "ADJOINT"])
@pytest.mark.parametrize("unit", [False, True])
def test_triangular_solve(left, lower, trans, unit):
    rng = np.random.default_rng(4)
    a = rng.standard_normal((2, 3, 3)) + 3 * np.eye(3)
    b = rng.standard_normal((2, 3, 2) if left else (2, 2, 3))
    out = run("triangular-solve", shape_of(np.float64, b.shape), [a, b], left_side=left, lower=lower,
              unit_diagonal=unit, transpose_a=trans)
    t = np.tril(a) if lower else np.triu(a)
    if unit:
        t = np.where(np.eye(3, dtype=bool), 1.0, t)
    op = t if trans == "NO_TRANSPOSE" else np.swapaxes(t, -1, -2)
    res = op @ out if left else out @ op
    np.testing.assert_allclose(res, b, rtol=1e-10, atol=1e-10)


def test_fft_kinds():
    x = np.random.default_rng(5).standard_normal((2, 8)).astype(np.float32)
    r = run("fft", shape_of(np.complex64, (2, 5)), [x], fft_type="RFFT", fft_length=(8,))
    np.testing.assert_allclose(r, np.fft.rfft(x), rtol=1e-5, atol=1e-5)
    back = run("fft", shape_of(np.float32, (2, 8)), [r], fft_type="IRFFT", fft_length=(8,))
    np.testing.assert_allclose(back, x, rtol=1e-5, atol=1e-5)
    c = x.astype(np.complex64)
    f = run("fft", shape_of(np.complex64, (2, 8)), [c], fft_type="FFT", fft_length=(2, 8))
    np.testing.assert_allclose(f, np.fft.fft2(c), rtol=1e-5, atol=1e-5)


# ----------------------------------------------------------------------------
# custom-call, collectives, dynamic shapes
# ----------------------------------------------------------------------------

def test_unknown_custom_call_target_names_it():
    with pytest.raises(UnimplementedError, match="my_mystery_target"):
        run("custom-call", shape_of(np.float32, (2,)), [np.zeros(2, np.float32)],
            custom_call_target="my_mystery_target")


def test_custom_call_topk():
    x = np.array([[1, 9, 9, 3]], np.float32)
    v, i = run("custom-call", tuple_shape(shape_of(np.float32, (1, 2)), shape_of(np.int32, (1, 2))), [x],
               custom_call_target="TopK")
    np.testing.assert_array_equal(v, [[9, 9]])
    np.testing.assert_array_equal(i, [[1, 2]])


def test_single_replica_collectives():
    from xla.hlo.attributes import RawAttr
    x = np.arange(4, dtype=np.float32)
    s = shape_of(np.float32, (4,))
    np.testing.assert_array_equal(run("all-reduce", s, [x], to_apply=scalar_comp("add")), x)
    np.testing.assert_array_equal(run("all-gather", s, [x], all_gather_dimension=0), x)
    np.testing.assert_array_equal(run("collective-permute", s, [x], source_target_pairs=RawAttr("{{0,0}}")), x)
    np.testing.assert_array_equal(run("collective-permute", s, [x], source_target_pairs=RawAttr("{{0,1}}")),
                                  np.zeros(4))
    with pytest.raises(UnimplementedError):
        run("all-gather", shape_of(np.float32, (8,)), [x], all_gather_dimension=0)


def test_dimension_size_ops():
    x = np.zeros((3, 5), np.float32)
    out = run("dynamic-reshape", shape_of(np.float32, (5, 3)), [x, np.int32(5), np.int32(3)])
    assert out.shape == (5, 3)
