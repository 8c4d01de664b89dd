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
def test_dynamic_slices_clamp_like_xla(backend):
    x = np.arange(10.0)
    ds = xla.jit(lambda x, i: lax.dynamic_slice(x, [i], [3]), backend=backend)
    dus = xla.jit(lambda x, i: lax.dynamic_update_slice(x, np.full(3, -1.0), [i]), backend=backend)
    for i in (-5, 0, 4, 8, 100):
        start = min(max(i, 0), 7)
        np.testing.assert_array_equal(ds(x, np.int32(i)), x[start:start + 3])
        want = x.copy()
        want[start:start + 3] = -1
        np.testing.assert_array_equal(dus(x, np.int32(i)), want)


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
