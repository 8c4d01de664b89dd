"""xla.lax control flow and primitives vs Python loops and NumPy, on cpu and
the interpreter."""
import numpy as np
import pytest

import xla
from xla import lax
from xla.errors import ShapeError

BACKENDS = ["cpu", "interpreter"]


def collatz_steps(n):
    steps = 0
    while n != 1:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        steps += 1
    return steps


@pytest.mark.parametrize("backend", BACKENDS)
def test_while_loop_collatz(backend):
    def f(n):
        def body(s):
            n, k = s
            return np.where(n % 2 == 0, n // 2, 3 * n + 1), k + 1
        return lax.while_loop(lambda s: s[0] != 1, body, (n, 0))[1]

    g = xla.jit(f, backend=backend)
    for n in (1, 6, 27, 97):
        assert int(g(np.int64(n))) == collatz_steps(n)
    assert g.cache_info().compilations == 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_fori_loop_with_closure_and_traced_bounds(backend):
    def f(x, k, hi):
        static = lax.fori_loop(0, 5, lambda i, acc: acc + x * i + k, np.zeros_like(x))
        traced = lax.fori_loop(np.int32(1), hi, lambda i, acc: acc * 2, x)
        return static, traced

    x = np.arange(3.0)
    a, b = xla.jit(f, backend=backend)(x, 2.0, np.int32(4))
    np.testing.assert_allclose(a, sum(x * i + 2.0 for i in range(5)))
    np.testing.assert_allclose(b, x * 8)


@pytest.mark.parametrize("backend", BACKENDS)
def test_newton_iteration_converges(backend):
    def sqrt_newton(a):
        def cond(s):
            x, it = s
            return (np.abs(x * x - a) > 1e-12 * a) & (it < 100)
        return lax.while_loop(cond, lambda s: ((s[0] + a / s[0]) / 2, s[1] + 1), (a, 0))[0]

    out = xla.jit(sqrt_newton, backend=backend)(np.float64(2.0))
    np.testing.assert_allclose(out, np.sqrt(2.0), rtol=1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
def test_cond_and_switch_with_pytrees_and_captures(backend):
    def f(p, x, y, i):
        a = lax.cond(p > 0, lambda v: {"s": v["a"] * y, "t": v["a"].sum()},
                     lambda v: {"s": v["a"] - y, "t": v["a"].max()}, {"a": x})
        b = lax.switch(i, [lambda v: v + 1, lambda v: v * 10, lambda v: -v], x)
        return a, b

    g = xla.jit(f, backend=backend)
    x, y = np.arange(1.0, 4.0), np.full(3, 2.0)
    for p in (1.0, -1.0):
        for i in (-3, 0, 1, 2, 9):
            a, b = g(p, x, y, np.int32(i))
            want_s = x * y if p > 0 else x - y
            want_t = x.sum() if p > 0 else x.max()
            np.testing.assert_allclose(a["s"], want_s)
            np.testing.assert_allclose(a["t"], want_t)
            branch = [x + 1, x * 10, -x][min(max(i, 0), 2)]    # JAX clamps the index
            np.testing.assert_allclose(b, branch)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("reverse", [False, True])
def test_scan_rnn(backend, reverse):
    rng = np.random.default_rng(0)
    w = rng.standard_normal((4, 4)) * 0.5
    xs = rng.standard_normal((6, 4))

    def f(w, xs):
        return lax.scan(lambda h, x: (np.tanh(h @ w + x), h.sum()), np.zeros(4), xs, reverse=reverse)

    h, ys = xla.jit(f, backend=backend)(w, xs)
    ref_h, ref_ys = np.zeros(4), []
    order = range(5, -1, -1) if reverse else range(6)
    ys_by_index = {}
    for t in order:
        ys_by_index[t] = ref_h.sum()
        ref_h = np.tanh(ref_h @ w + xs[t])
    ref_ys = [ys_by_index[t] for t in range(6)]
    np.testing.assert_allclose(h, ref_h, rtol=1e-12)
    np.testing.assert_allclose(ys, ref_ys, rtol=1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
def test_nested_control_flow(backend):
    def f(x):
        def outer(i, acc):
            return lax.cond(i % 2 == 0, lambda a: lax.fori_loop(0, 3, lambda j, b: b + x * j, a),
                            lambda a: a * 2, acc)
        return lax.fori_loop(0, 4, outer, x)

    x = np.array([1.0, -2.0])
    acc = x.copy()
    for i in range(4):
        acc = acc + 3 * x if i % 2 == 0 else acc * 2
    np.testing.assert_allclose(xla.jit(f, backend=backend)(x), acc)


def _conv_ref(x, w, stride, pad, dil, groups):
    n, c, h, wd = x.shape
    o, ci, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), pad[0], pad[1]))
    ekh, ekw = (kh - 1) * dil[0] + 1, (kw - 1) * dil[1] + 1
    oh = (xp.shape[2] - ekh) // stride[0] + 1
    ow = (xp.shape[3] - ekw) // stride[1] + 1
    out = np.zeros((n, o, oh, ow))
    og = o // groups
    for oc in range(o):
        g = oc // og
        xs = xp[:, g * ci:(g + 1) * ci]
        for i in range(oh):
            for j in range(ow):
                patch = xs[:, :, i * stride[0]:i * stride[0] + ekh:dil[0], j * stride[1]:j * stride[1] + ekw:dil[1]]
                out[:, oc, i, j] = np.sum(patch * w[oc], axis=(1, 2, 3))
    return out


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("stride,padding,dil,groups", [
    ((1, 1), "VALID", (1, 1), 1), ((2, 1), "SAME", (1, 1), 1),
    ((1, 1), ((1, 2), (0, 1)), (2, 1), 1), ((1, 2), "VALID", (1, 1), 2)])
def test_conv_general_dilated(backend, stride, padding, dil, groups):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 4, 7, 6))
    w = rng.standard_normal((4, 4 // groups, 3, 2))
    f = xla.jit(lambda x, w: lax.conv_general_dilated(x, w, stride, padding, rhs_dilation=dil,
                                                      feature_group_count=groups), backend=backend)
    if padding == "SAME":
        pads = []
        for d, k, s in zip((7, 6), (3, 2), stride):
            o = -(-d // s)
            total = max((o - 1) * s + k - d, 0)
            pads.append((total // 2, total - total // 2))
    elif padding == "VALID":
        pads = [(0, 0), (0, 0)]
    else:
        pads = padding
    np.testing.assert_allclose(f(x, w), _conv_ref(x, w, stride, pads, dil, groups), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("backend", BACKENDS)
def test_reduce_window_pooling(backend):
    x = np.random.default_rng(5).standard_normal((1, 6, 6))
    mx = xla.jit(lambda x: lax.reduce_window(x, -np.inf, "max", (1, 2, 2), (1, 2, 2)), backend=backend)(x)
    sm = xla.jit(lambda x: lax.reduce_window(x, 0.0, lambda a, b: a + b, (1, 3, 3), (1, 1, 1), "SAME"),
                 backend=backend)(x)
    np.testing.assert_allclose(mx, x.reshape(1, 3, 2, 3, 2).max(axis=(2, 4)))
    xp = np.pad(x, ((0, 0), (1, 1), (1, 1)))
    ref = np.array([[[xp[0, i:i + 3, j:j + 3].sum() for j in range(6)] for i in range(6)]])
    np.testing.assert_allclose(sm, ref, rtol=1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
def test_multi_operand_sort_and_top_k(backend):
    keys = np.array([3.0, np.nan, 1.0, 2.0, 1.0])
    vals = np.arange(5)
    k, v = xla.jit(lambda a, b: lax.sort((a, b), num_keys=1), backend=backend)(keys, vals)
    order = np.argsort(keys, kind="stable")
    np.testing.assert_array_equal(k, keys[order])
    np.testing.assert_array_equal(v, vals[order])
    top_v, top_i = xla.jit(lambda a: lax.top_k(a, 2), backend=backend)(np.array([1.0, 5.0, 3.0, 4.0]))
    np.testing.assert_array_equal(top_v, [5.0, 4.0])
    np.testing.assert_array_equal(top_i, [1, 3])


@pytest.mark.parametrize("backend", BACKENDS)
def test_dynamic_slices_wrap_negative_and_clamp_like_jax(backend):
    x = np.arange(10.0)
    ds = xla.jit(lambda x, i: lax.dynamic_slice(x, [i], [3]), backend=backend)
    dus = xla.jit(lambda x, i: lax.dynamic_update_slice(x, np.full(3, -1.0), [i]), backend=backend)
    ds_noneg = xla.jit(lambda x, i: lax.dynamic_slice(x, [i], [3], allow_negative_indices=False),
                       backend=backend)
    for i in (-100, -5, -1, 0, 4, 8, 100, 2**40):
        dtype = np.int64 if abs(i) > 2**31 else np.int32
        wrapped = i + 10 if i < 0 else i                 # JAX: negative counts from the end
        start = min(max(wrapped, 0), 7)                  # XLA: clamped so the slice fits
        np.testing.assert_array_equal(ds(x, dtype(i)), x[start:start + 3])
        want = x.copy()
        want[start:start + 3] = -1
        np.testing.assert_array_equal(dus(x, dtype(i)), want)
        start = min(max(i, 0), 7)
        np.testing.assert_array_equal(ds_noneg(x, dtype(i)), x[start:start + 3])


@pytest.mark.parametrize("backend", BACKENDS)
def test_dynamic_slices_2d_and_index_in_dim(backend):
    x = np.arange(30.0).reshape(5, 6)

    def f(x, i, j):
        return (lax.dynamic_slice(x, (i, j), (2, 4)), lax.dynamic_index_in_dim(x, j, axis=1, keepdims=False),
                lax.dynamic_update_slice(x, np.zeros((1, 2)), (i, 5)))

    g = xla.jit(f, backend=backend)
    for i, j in ((0, 0), (3, 1), (4, 5), (9, -2)):
        a, b, c = g(x, np.int32(i), np.int64(j))
        i0, j0 = min(max(i, 0), 3), min(max(j if j >= 0 else j + 6, 0), 2)
        np.testing.assert_array_equal(a, x[i0:i0 + 2, j0:j0 + 4])
        np.testing.assert_array_equal(b, x[:, j if j >= 0 else j + 6] if j < 6 else x[:, 5])
        want = x.copy()
        want[min(max(i, 0), 4), 4:6] = 0
        np.testing.assert_array_equal(c, want)


def test_reduce_with_python_reducer_and_dot_general():
    def f(x, y):
        s = lax.reduce(x, 0.0, lambda a, b: a + b * b, (1,))
        d = lax.dot_general(x, y, (((1,), (0,)), ((), ())))
        return s, d

    x, y = np.arange(6.0).reshape(2, 3), np.arange(12.0).reshape(3, 4)
    s, d = xla.jit(f)(x, y)
    np.testing.assert_allclose(s, (x * x).sum(axis=1))
    np.testing.assert_allclose(d, x @ y)


def test_body_returning_wrong_shape_is_a_clear_error():
    with pytest.raises(ShapeError, match=r"while_loop body_fun output: leaf 0 has shape float64\[2\], "
                                         r"expected float64\[3\]"):
        xla.jit(lambda x: lax.while_loop(lambda v: v.sum() < 10, lambda v: v[:2], x))(np.ones(3))


def test_branches_with_different_structures_are_a_clear_error():
    with pytest.raises(ShapeError, match="cond branch 1 output"):
        xla.jit(lambda p, x: lax.cond(p, lambda v: (v, v), lambda v: v, x))(True if False else np.bool_(True),
                                                                               np.ones(2))


def test_while_cond_must_return_a_boolean_scalar():
    with pytest.raises(ShapeError, match="boolean scalar"):
        xla.jit(lambda x: lax.while_loop(lambda v: v, lambda v: v, x))(np.ones(2))


# ----- weak types in carries and branches (JAX's rules) ------------------------------------

@pytest.mark.parametrize("backend", BACKENDS)
def test_weak_scalar_carries_take_the_bodys_dtype(backend):
    def f(x):
        total = lax.fori_loop(0, 4, lambda i, acc: acc + x.sum(), 0.0)      # 0.0 is weak
        steps = lax.while_loop(lambda s: (s[0] < 100) & (s[1] < 50), lambda s: (s[0] * 3, s[1] + 1),
                               (np.int32(1), 0))
        carry, ys = lax.scan(lambda c, v: (c + v, c), 0, x)
        return total, steps, carry, ys

    x = np.arange(1, 4, dtype=np.float32)
    total, (v, k), carry, ys = xla.jit(f, backend=backend)(x)
    assert total.dtype == np.float32 and total == 4 * x.sum()
    assert v.dtype == np.int32 and (int(v), int(k)) == (243, 5)
    assert carry.dtype == np.float32 and carry == x.sum()
    np.testing.assert_array_equal(ys, np.concatenate([[0], np.cumsum(x)[:-1]]))


@pytest.mark.parametrize("backend", BACKENDS)
def test_branches_differing_only_in_weak_leaves_are_joined(backend):
    f = xla.jit(lambda p, x: lax.cond(p, lambda v: v * 2, lambda v: 0.5, x), backend=backend)
    for p in (True, False):
        out = f(np.bool_(p), np.float32(3))
        assert out.dtype == np.float32 and out == (6 if p else 0.5)
    g = xla.jit(lambda i: lax.switch(i, [lambda: 1, lambda: np.int16(7), lambda: 3]), backend=backend)
    assert [(int(g(np.int32(i))), g(np.int32(i)).dtype) for i in range(3)] == [(1, np.int16), (7, np.int16),
                                                                              (3, np.int16)]


# ----- captures and nesting ------------------------------------------------------------

@pytest.mark.parametrize("backend", BACKENDS)
def test_captures_through_three_levels_of_nesting(backend):
    def f(x, scale, limit, shift):
        def outer_cond(s):
            return s[1] < limit                        # captured by cond only

        def outer_body(s):
            acc, k = s
            def inner(a):
                # a while inside a cond inside a while, capturing the outermost values
                return lax.while_loop(lambda t: t[1] < k, lambda t: (t[0] * scale + shift, t[1] + 1),
                                      (a, 0))[0]
            acc = lax.cond(k % 2 == 0, inner, lambda a: a - shift, acc)
            return acc, k + 1

        return lax.while_loop(outer_cond, outer_body, (x, np.int32(0)))[0]

    x = np.array([1.0, 2.0])
    scale, limit, shift = 1.5, np.int32(5), np.array([0.25, -0.5])
    acc = x.copy()
    for k in range(5):
        if k % 2 == 0:
            for _ in range(k):
                acc = acc * scale + shift
        else:
            acc = acc - shift
    np.testing.assert_allclose(xla.jit(f, backend=backend)(x, scale, limit, shift), acc)


@pytest.mark.parametrize("backend", BACKENDS)
def test_scan_over_pytrees_and_length_only(backend):
    def f(xs, w):
        carry, ys = lax.scan(lambda c, x: ({"h": c["h"] * w + x["a"], "n": c["n"] + 1},
                                           (x["a"] - x["b"], c["n"])),
                             {"h": np.zeros(2), "n": np.int32(0)}, {"a": xs, "b": xs * 2})
        _, counts = lax.scan(lambda c, _: (c + 1, c * c), np.int32(0), None, length=4)
        _, none = lax.scan(lambda c, x: (c, None), 0.0, xs)
        return carry, ys, counts, none

    xs = np.arange(6.0).reshape(3, 2)
    carry, (d, ns), counts, none = xla.jit(f, backend=backend)(xs, 0.5)
    h = np.zeros(2)
    for x in xs:
        h = h * 0.5 + x
    np.testing.assert_allclose(carry["h"], h)
    assert int(carry["n"]) == 3
    np.testing.assert_array_equal(d, -xs)
    np.testing.assert_array_equal(ns, [0, 1, 2])
    np.testing.assert_array_equal(counts, [0, 1, 4, 9])
    assert none is None


# ----- more primitives -----------------------------------------------------------------

def _conv_nd_ref(x, w, stride, pads, lhs_dil, rhs_dil, fgc=1, bgc=1):
    """Direct convolution, x (N, C, spatial...), w (O, I, spatial...)."""
    nsp = x.ndim - 2
    if any(d != 1 for d in lhs_dil):
        xd = np.zeros(x.shape[:2] + tuple((s - 1) * d + 1 for s, d in zip(x.shape[2:], lhs_dil)))
        xd[(slice(None), slice(None)) + tuple(slice(None, None, d) for d in lhs_dil)] = x
        x = xd
    x = np.pad(x, ((0, 0), (0, 0)) + tuple(tuple(p) for p in pads))
    o_count, i_count = w.shape[:2]
    ek = [(k - 1) * d + 1 for k, d in zip(w.shape[2:], rhs_dil)]
    out_sp = [(x.shape[2 + i] - ek[i]) // stride[i] + 1 for i in range(nsp)]
    n = x.shape[0] // bgc
    out = np.zeros((n, o_count) + tuple(out_sp))
    for o in range(o_count):
        g, bg = o // (o_count // fgc), o // (o_count // bgc)
        src = x[bg * n:(bg + 1) * n, g * i_count:(g + 1) * i_count]
        for pos in np.ndindex(*out_sp):
            win = tuple(slice(p * s, p * s + e, d) for p, s, e, d in zip(pos, stride, ek, rhs_dil))
            out[(slice(None), o) + pos] = np.sum(src[(slice(None), slice(None)) + win] * w[o],
                                                 axis=tuple(range(1, nsp + 2)))
    return out


@pytest.mark.parametrize("backend", BACKENDS)
def test_conv_nhwc_lhs_dilation_batch_groups_and_1d(backend):
    rng = np.random.default_rng(6)
    x = rng.standard_normal((2, 3, 5, 4))          # NCHW
    w = rng.standard_normal((4, 3, 2, 3))          # OIHW
    pads = ((1, 0), (2, 1))
    ref = _conv_nd_ref(x, w, (1, 2), pads, (2, 1), (1, 1))
    nhwc = xla.jit(lambda x, w: lax.conv_general_dilated(
        x, w, (1, 2), pads, lhs_dilation=(2, 1), dimension_numbers=("NHWC", "HWIO", "NHWC")),
        backend=backend)(x.transpose(0, 2, 3, 1), w.transpose(2, 3, 1, 0))
    np.testing.assert_allclose(nhwc, ref.transpose(0, 2, 3, 1), rtol=1e-10, atol=1e-10)
    # JAX's tuple form of dimension numbers: (batch, feature, spatial...) per operand.
    tup = xla.jit(lambda x, w: lax.conv_general_dilated(
        x, w, (1, 2), pads, lhs_dilation=(2, 1), dimension_numbers=((0, 1, 2, 3), (0, 1, 2, 3), (0, 1, 2, 3))),
        backend=backend)(x, w)
    np.testing.assert_allclose(tup, ref, rtol=1e-10, atol=1e-10)

    xb = rng.standard_normal((4, 3, 5, 4))
    wb = rng.standard_normal((6, 3, 2, 2))
    bg = xla.jit(lambda x, w: lax.conv_general_dilated(x, w, (1, 1), "VALID", batch_group_count=2),
                 backend=backend)(xb, wb)
    np.testing.assert_allclose(bg, _conv_nd_ref(xb, wb, (1, 1), ((0, 0), (0, 0)), (1, 1), (1, 1), bgc=2),
                               rtol=1e-10, atol=1e-10)

    x1 = rng.standard_normal((1, 2, 9)).astype(np.float32)
    w1 = rng.standard_normal((3, 2, 3)).astype(np.float32)
    out = xla.jit(lambda x, w: lax.conv_general_dilated(x, w, (2,), "SAME", rhs_dilation=(2,)),
                  backend=backend)(x1, w1)
    assert out.dtype == np.float32
    # SAME with stride 2 and an effective kernel of 5 over 9: 5 outputs, 2 + 2 padding.
    np.testing.assert_allclose(out, _conv_nd_ref(x1.astype(np.float64), w1.astype(np.float64), (2,),
                                                 ((2, 2),), (1,), (2,)), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("backend", BACKENDS)
def test_reduce_window_min_mul_and_padding(backend):
    x = np.random.default_rng(7).uniform(0.5, 1.5, (5, 7))
    f = xla.jit(lambda x: (lax.reduce_window(x, np.inf, "min", (2, 3), (2, 2), ((1, 0), (0, 2))),
                           lax.reduce_window(x, 1.0, "mul", (1, 2), (1, 1), "VALID"),
                           lax.reduce_window(x, -np.inf, np.maximum, (3, 3), (1, 1), "SAME")),
                backend=backend)
    mn, mul, mx = f(x)
    xp = np.pad(x, ((1, 0), (0, 2)), constant_values=np.inf)
    ref = np.array([[xp[i:i + 2, j:j + 3].min() for j in range(0, xp.shape[1] - 2, 2)]
                    for i in range(0, xp.shape[0] - 1, 2)])
    np.testing.assert_array_equal(mn, ref)
    np.testing.assert_allclose(mul, x[:, :-1] * x[:, 1:])
    xp = np.pad(x, 1, constant_values=-np.inf)
    np.testing.assert_array_equal(mx, [[xp[i:i + 3, j:j + 3].max() for j in range(7)] for i in range(5)])


@pytest.mark.parametrize("backend", BACKENDS)
def test_sort_with_two_keys_and_three_operands(backend):
    rng = np.random.default_rng(8)
    a = rng.integers(-2, 2, (4, 9)).astype(np.int32)
    b = rng.integers(0, 3, (4, 9)).astype(np.uint8)
    c = rng.standard_normal((4, 9))
    sa, sb, sc = xla.jit(lambda a, b, c: lax.sort((a, b, c), dimension=1, num_keys=2), backend=backend)(a, b, c)
    for r in range(4):
        order = sorted(range(9), key=lambda j: (a[r, j], b[r, j]))     # Python's sort is stable
        np.testing.assert_array_equal(sa[r], a[r, order])
        np.testing.assert_array_equal(sb[r], b[r, order])
        np.testing.assert_array_equal(sc[r], c[r, order])
    s0 = xla.jit(lambda c: lax.sort(c, dimension=0), backend=backend)(c)
    np.testing.assert_array_equal(s0, np.sort(c, axis=0))
    vals, idx = xla.jit(lambda a: lax.top_k(a, 3), backend=backend)(np.array([[2, 7, 7, 1, 7, 0]], np.int32))
    np.testing.assert_array_equal(vals, [[7, 7, 7]])
    np.testing.assert_array_equal(idx, [[1, 2, 4]])     # ties: lower index first


@pytest.mark.parametrize("backend", BACKENDS)
def test_variadic_reduce_with_pytree_reducer(backend):
    def argmax_reducer(acc, x):
        (av, ai), (xv, xi) = acc, x
        take = (xv > av) | ((xv == av) & (xi < ai))
        return np.where(take, xv, av), np.where(take, xi, ai)

    def f(x):
        idx = lax.broadcasted_iota(np.int32, x.shape, 1)
        v, i = lax.reduce((x, idx), (-np.inf, np.int32(2**31 - 1)), argmax_reducer, (-1,))
        m = lax.reduce(x, -np.inf, np.maximum, (0,))
        d = lax.reduce({"s": x, "q": x * x}, {"s": 0.0, "q": 0.0},
                       lambda a, b: {"s": a["s"] + b["s"], "q": a["q"] + b["q"]}, (0, 1))
        return v, i, m, d

    x = np.random.default_rng(9).standard_normal((3, 5))
    x[1, 3] = x[1, 1] = 9.0
    v, i, m, d = xla.jit(f, backend=backend)(x)
    np.testing.assert_array_equal(v, x.max(axis=1))
    np.testing.assert_array_equal(i, x.argmax(axis=1))
    np.testing.assert_array_equal(m, x.max(axis=0))
    np.testing.assert_allclose(d["s"], x.sum())
    np.testing.assert_allclose(d["q"], (x * x).sum())


@pytest.mark.parametrize("backend", BACKENDS)
def test_shape_and_type_primitives(backend):
    def f(x, p):
        return dict(
            sel=lax.select(p, x, -x),
            clamp=lax.clamp(0.0, x, 1.5),
            bcast=lax.broadcast_in_dim(x[:1], (4, 2, 3), (1, 2)),
            reshape=lax.reshape(x, (3, 2), dimensions=(1, 0)),
            transpose=lax.transpose(x, (1, 0)),
            iota=lax.iota(np.int16, 4),
            biota=lax.broadcasted_iota(np.float32, (2, 3), 1),
            conv=lax.convert_element_type(x * 2.6, np.int32),
            dot=lax.dot_general(x, x, (((1,), (1,)), ((0,), (0,)))),
        )

    x = np.array([[-1.0, 0.5, 2.0], [3.0, -0.25, 1.0]])
    p = x > 0
    out = xla.jit(f, backend=backend)(x, p)
    np.testing.assert_array_equal(out["sel"], np.where(p, x, -x))
    np.testing.assert_array_equal(out["clamp"], np.clip(x, 0.0, 1.5))
    np.testing.assert_array_equal(out["bcast"], np.broadcast_to(x[:1], (4, 2, 3)))
    np.testing.assert_array_equal(out["reshape"], x.T.reshape(3, 2))
    np.testing.assert_array_equal(out["transpose"], x.T)
    assert out["iota"].dtype == np.int16
    np.testing.assert_array_equal(out["iota"], np.arange(4))
    np.testing.assert_array_equal(out["biota"], np.broadcast_to(np.arange(3, dtype=np.float32), (2, 3)))
    assert out["conv"].dtype == np.int32
    np.testing.assert_array_equal(out["conv"], (x * 2.6).astype(np.int32))
    np.testing.assert_allclose(out["dot"], np.einsum("ij,ij->i", x, x))


@pytest.mark.parametrize("backend", BACKENDS)
def test_dot_general_batch_dims_and_preferred_type(backend):
    rng = np.random.default_rng(10)
    a = rng.integers(-100, 100, (2, 3, 4)).astype(np.int8)
    b = rng.integers(-100, 100, (4, 2, 5)).astype(np.int8)
    out = xla.jit(lambda a, b: lax.dot_general(a, b, (((2,), (0,)), ((0,), (1,))),
                                               preferred_element_type=np.int32), backend=backend)(a, b)
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, np.einsum("bij,jbk->bik", a.astype(np.int32), b.astype(np.int32)))


def test_lax_runs_outside_jit_as_a_small_program():
    assert lax.fori_loop(0, 5, lambda i, x: x + i, np.float64(1.0)) == 11.0
    np.testing.assert_array_equal(lax.dynamic_slice(np.arange(10), [np.int32(-3)], [2]), [7, 8])
    k, v = lax.sort((np.array([3, 1, 2]), np.array([0.0, 1.0, 2.0])))
    np.testing.assert_array_equal(k, [1, 2, 3])
    np.testing.assert_array_equal(v, [1.0, 2.0, 0.0])
    assert lax.cond(np.bool_(False), lambda x: x + 1, lambda x: x - 1, np.int32(5)) == 4


# ----- clear errors --------------------------------------------------------------------------

def test_carry_errors_name_the_leaf_path():
    with pytest.raises(ShapeError, match=r"fori_loop body_fun output: leaf 0 \(\['h'\]\) has dtype int32, "
                                         r"expected float64"):
        xla.jit(lambda x: lax.fori_loop(0, 2, lambda i, s: {"h": s["h"].astype(np.int32), "n": s["n"]},
                                        {"h": x, "n": np.int32(0)}))(np.ones(2))
    with pytest.raises(ShapeError, match=r"structure \(\*, \*\), expected \(\*, \*, \*\)"):
        xla.jit(lambda x: lax.while_loop(lambda s: s[2] < 3, lambda s: s[:2], (x, x, 0)))(np.ones(2))
    with pytest.raises(ShapeError, match=r"scan f output carry: leaf 0 has shape float64\[3\]"):
        xla.jit(lambda xs: lax.scan(lambda c, x: (c + x, x), 0.0, xs))(np.ones((4, 3)))


def test_branch_errors_name_the_branch_and_leaf():
    with pytest.raises(ShapeError, match=r"switch branch 2 output: leaf 1 \(\[1\]\) has dtype int32\[2\], but "
                                         r"branch 0 returned float64\[2\]"):
        xla.jit(lambda i, x: lax.switch(i, [lambda v: (v, v), lambda v: (v, v),
                                            lambda v: (v, v.astype(np.int32))], x))(np.int32(0), np.ones(2))
    with pytest.raises(ShapeError, match=r"cond branch 1 output: leaf 0 has shape float64\[1\], but branch 0 "
                                         r"returned float64\[2\]"):
        xla.jit(lambda p, x: lax.cond(p, lambda v: v, lambda v: v[:1], x))(np.bool_(True), np.ones(2))


def test_reducer_cannot_capture_traced_values():
    with pytest.raises(xla.errors.TracingError, match="reduce computation cannot use traced values"):
        xla.jit(lambda x, y: lax.reduce(x, 0.0, lambda a, b: a + b * y, (0,)))(np.ones(3), 2.0)
