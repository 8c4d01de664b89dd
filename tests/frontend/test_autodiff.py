"""Gradients against central finite differences, in float64, one row per
differentiation rule (and the structured ops: loops, branches, scan)."""
import numpy as np
import pytest

import xla
from xla import lax
from xla.errors import TracingError
from xla.frontend.autodiff import grad, jvp, value_and_grad, vjp

rng = np.random.default_rng(0)
A = rng.standard_normal((3, 4))
B = rng.standard_normal((3, 4))
POS = rng.random((3, 4)) + 0.5
UNIT = rng.random((3, 4)) * 1.6 - 0.8
M = rng.standard_normal((4, 5))
IMG = rng.standard_normal((2, 3, 6, 5))
KER = rng.standard_normal((4, 3, 3, 2))
KER_G = rng.standard_normal((6, 1, 3, 3))
IMG_G = rng.standard_normal((1, 3, 5, 5))
W = rng.standard_normal(4)


def _pool_max(x):
    return lax.reduce_window(x, -np.inf, "max", (1, 1, 2, 2), (1, 1, 2, 2))


ROWS = {
    "add": (lambda a, b: np.sum(a + b * 3), (A, B)),
    "subtract": (lambda a, b: np.sum((a - b) ** 2), (A, B)),
    "multiply": (lambda a, b: np.sum(a * b * a), (A, B)),
    "divide": (lambda a, b: np.sum(a / b), (A, POS)),
    "negate": (lambda a: np.sum(-a * a), (A,)),
    "exp": (lambda a: np.sum(np.exp(a)), (A,)),
    "expm1": (lambda a: np.sum(np.expm1(a)), (A,)),
    "log": (lambda a: np.sum(np.log(a)), (POS,)),
    "log1p": (lambda a: np.sum(np.log1p(a)), (POS,)),
    "sqrt": (lambda a: np.sum(np.sqrt(a)), (POS,)),
    "cbrt": (lambda a: np.sum(np.cbrt(a)), (POS,)),
    "tanh": (lambda a: np.sum(np.tanh(a)), (A,)),
    "sin_cos": (lambda a: np.sum(np.sin(a) * np.cos(a)), (A,)),
    "tan": (lambda a: np.sum(np.tan(a)), (UNIT,)),
    "atan2": (lambda a, b: np.sum(np.arctan2(a, b)), (A, POS)),
    "rsqrt": (lambda a: np.sum(lax.rsqrt(a)), (POS,)),
    "logistic": (lambda a: np.sum(lax.logistic(a) * a), (A,)),
    "erf": (lambda a: np.sum(lax.erf(a) ** 2), (A,)),
    "round_floor_ceil": (lambda a: np.sum(np.floor(a) * a + np.ceil(a) + np.rint(a) * a), (A * 3,)),
    "complex_real_imag": (lambda a, b: np.sum(np.real((a + 1j * b) * (a - 2j * b))), (A, B)),
    "exp2_log2_log10": (lambda a: np.sum(np.exp2(a) + np.log2(a) * np.log10(a)), (POS,)),
    "arcsin_arccos": (lambda a: np.sum(np.arcsin(a) + 2 * np.arccos(a)), (UNIT,)),
    "sinh_cosh": (lambda a: np.sum(np.sinh(a) * np.cosh(a)), (A,)),
    "power": (lambda a, b: np.sum(a ** b), (POS, B)),
    "maximum": (lambda a, b: np.sum(np.maximum(a, b)), (A, B)),
    "minimum": (lambda a, b: np.sum(np.minimum(a, b) ** 2), (A, B)),
    "abs": (lambda a: np.sum(np.abs(a) * a), (A,)),
    "where_select": (lambda a, b: np.sum(np.where(a > b, a * a, b)), (A, B)),
    "clip_clamp": (lambda a: np.sum(np.clip(a, -0.5, 0.5) * a), (A,)),
    "logistic_like": (lambda a: np.sum(1 / (1 + np.exp(-a))), (A,)),
    "softplus": (lambda a: np.sum(np.logaddexp(a, 0.0)), (A,)),
    "erf_free_gelu": (lambda a: np.sum(0.5 * a * (1 + np.tanh(0.79788456 * (a + 0.044715 * a ** 3)))), (A,)),
    "astype_int_is_constant": (lambda a: np.sum((a * 3).astype(np.int32) * a), (A,)),
    "broadcast": (lambda a, w: np.sum((a + w) ** 2), (A, W)),
    "reshape_transpose": (lambda a: np.sum(a.T.reshape(2, 6) * np.arange(12.0).reshape(2, 6)), (A,)),
    "slice": (lambda a: np.sum(a[1:, ::2] ** 2), (A,)),
    "reverse": (lambda a: np.sum(a[::-1, ::-2] * a[:, :2].sum()), (A,)),
    "pad": (lambda a: np.sum(np.pad(a, ((1, 2), (0, 1))) * np.arange(30.0).reshape(6, 5)), (A,)),
    "concatenate": (lambda a, b: np.sum(np.concatenate([a, b * 2], axis=1) ** 2), (A, B)),
    "sum_axis": (lambda a: np.sum(np.sum(a, axis=0) ** 2), (A,)),
    "mean_var": (lambda a: np.var(a, axis=1).sum() + a.mean(), (A,)),
    "max_reduce": (lambda a: np.sum(np.max(a, axis=1)), (A,)),
    "min_reduce": (lambda a: np.min(a), (A,)),
    "prod_reduce": (lambda a: np.sum(np.prod(a, axis=0)), (POS,)),
    "matmul": (lambda a, m: np.sum(np.tanh(a @ m)), (A, M)),
    "batched_dot": (lambda a, b: np.sum(np.einsum("ij,ik->jk", a, b) ** 2), (A, B)),
    "einsum_bmm": (lambda a: np.sum(np.einsum("bij,bjk->bik", a.reshape(3, 2, 2), a.reshape(3, 2, 2))), (A,)),
    "softmax_xent": (lambda a: -np.sum(np.log(np.exp(a) / np.exp(a).sum(axis=1, keepdims=True))[:, 0]), (A,)),
    "index_int": (lambda a: np.sum(a[1] * a[2]), (A,)),
    "gather": (lambda a: np.sum(a[np.array([0, 2, 2]), 1:] ** 2), (A,)),
    "take_along": (lambda a: np.sum(np.take_along_axis(a, np.argsort(a, axis=1), axis=1) * np.arange(4.0)), (A,)),
    "at_add_scatter": (lambda a, b: np.sum(a.at[np.array([0, 0, 2])].add(b[:3] * 2) ** 2), (A, B)),
    "at_set_scatter": (lambda a, b: np.sum(a.at[np.array([1, 2])].set(b[:2]) ** 2), (A, B)),
    "dynamic_slice": (lambda a: np.sum(lax.dynamic_slice(a, [np.int32(1), np.int32(1)], [2, 2]) ** 3), (A,)),
    "dynamic_update_slice": (lambda a, b: np.sum(lax.dynamic_update_slice(a, b[:2, :2] * 3, [np.int32(1), np.int32(2)]) ** 2), (A, B)),
    "sort": (lambda a: np.sum(np.sort(a, axis=1) * np.arange(4.0)), (A,)),
    "conv": (lambda x, k: np.sum(lax.conv_general_dilated(x, k, (1, 1), "SAME") ** 2), (IMG, KER)),
    "conv_strided_dilated": (lambda x, k: np.sum(np.tanh(lax.conv_general_dilated(
        x, k, (2, 1), ((1, 0), (2, 1)), rhs_dilation=(1, 2)))), (IMG, KER)),
    "conv_groups": (lambda x, k: np.sum(lax.conv_general_dilated(x, k, (1, 1), "VALID", feature_group_count=3) ** 2),
                    (IMG_G, KER_G)),
    "max_pool": (lambda x: np.sum(_pool_max(x) ** 2), (IMG,)),
    "avg_pool": (lambda x: np.sum(lax.reduce_window(x, 0.0, "add", (1, 1, 3, 2), (1, 1, 2, 1), "SAME") ** 2), (IMG,)),
    "fori_loop": (lambda a: np.sum(lax.fori_loop(0, 4, lambda i, h: np.tanh(h * a + 0.1), a)), (A,)),
    "scan_rnn": (lambda a, m: np.sum(lax.scan(lambda h, x: (np.tanh(h @ m[:, :4] + x), h.sum() * x[0]),
                                              np.ones(4), a)[1]), (A, M)),
    "cond": (lambda a, b: lax.cond(np.sum(b) > 0, lambda x: np.sum(np.sin(x)), lambda x: np.sum(x ** 3), a), (A, B)),
    "switch": (lambda a: lax.switch(np.int32(1), [lambda x: np.sum(x), lambda x: np.sum(x * x * x), lambda x: 0.0 * np.sum(x)], a), (A,)),
}


def _numeric_grad(f, args, k, eps=1e-6):
    x = args[k]
    g = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        plus = [a.copy() for a in args]
        minus = [a.copy() for a in args]
        plus[k][idx] += eps
        minus[k][idx] -= eps
        g[idx] = (f(*plus) - f(*minus)) / (2 * eps)
    return g


@pytest.mark.parametrize("name", sorted(ROWS))
def test_gradient_matches_finite_differences(name):
    fn, args = ROWS[name]
    f = xla.jit(fn)
    argnums = tuple(range(len(args)))
    grads = grad(fn, argnums=argnums)(*args)
    for k in argnums:
        want = _numeric_grad(f, args, k)
        np.testing.assert_allclose(grads[k], want, rtol=1e-5, atol=1e-6, err_msg=f"argument {k}")


def test_value_and_grad_with_aux_and_pytrees():
    def loss(params, x):
        h = np.tanh(x @ params["w"] + params["b"])
        return np.mean(h ** 2), {"h": h}

    params = {"w": M, "b": rng.standard_normal(5)}
    (value, aux), g = value_and_grad(loss, has_aux=True)(params, A)
    h = np.tanh(A @ M + params["b"])
    np.testing.assert_allclose(value, np.mean(h ** 2))
    np.testing.assert_allclose(aux["h"], h)
    assert set(g) == {"w", "b"}
    dh = 2 * h / h.size * (1 - h ** 2)
    np.testing.assert_allclose(g["w"], A.T @ dh, rtol=1e-10)
    np.testing.assert_allclose(g["b"], dh.sum(axis=0), rtol=1e-10)


def test_grad_under_jit_and_jit_under_grad_agree():
    f = lambda a: np.sum(np.sin(a) * a)
    inside = xla.jit(grad(f))(A)
    outside = grad(xla.jit(f))(A)
    np.testing.assert_allclose(inside, np.cos(A) * A + np.sin(A), rtol=1e-12)
    np.testing.assert_allclose(outside, inside, rtol=1e-12)


def test_vjp_and_jvp():
    f = lambda a, b: np.tanh(a) * b
    out, pullback = vjp(f, A, B)
    np.testing.assert_allclose(out, np.tanh(A) * B)
    ct = rng.standard_normal(A.shape)
    da, db = pullback(ct)
    np.testing.assert_allclose(da, ct * (1 - np.tanh(A) ** 2) * B, rtol=1e-12)
    np.testing.assert_allclose(db, ct * np.tanh(A), rtol=1e-12)
    ta, tb = rng.standard_normal(A.shape), rng.standard_normal(B.shape)
    out, tangent = jvp(f, (A, B), (ta, tb))
    np.testing.assert_allclose(tangent, ta * (1 - np.tanh(A) ** 2) * B + tb * np.tanh(A), rtol=1e-10)


def test_closed_over_values_are_constants():
    def outer(x):
        y = x * 2
        return grad(lambda z: np.sum(z * y))(x)   # y depends on x but is closed over

    np.testing.assert_allclose(xla.jit(outer)(A), 2 * A)


def test_integer_inputs_and_non_scalar_outputs_are_errors():
    with pytest.raises(TracingError, match="float inputs"):
        grad(lambda a: np.sum(a))(np.arange(3))
    with pytest.raises(TracingError, match="real scalar output"):
        grad(lambda a: a * 2)(A)


def test_while_loop_without_trip_count_is_a_clear_error():
    f = lambda a: np.sum(lax.while_loop(lambda s: s[1] < 3, lambda s: (s[0] * 2, s[1] + 1), (a, 0))[0])
    with pytest.raises(TracingError, match="fori_loop with static bounds or xla.lax.scan"):
        grad(f)(A)
