"""xla.pmap and the named-axis collectives of xla.lax, against NumPy."""
import functools

import numpy as np
import pytest

import xla
from xla import lax
from xla.errors import InvalidArgumentError, TracingError


@pytest.mark.parametrize("backend", ["cpu", "interpreter"])
def test_collectives_over_a_named_axis(backend):
    @functools.partial(xla.pmap, axis_name="i", backend=backend)
    def f(x, y):
        return (lax.psum(x, "i"), lax.pmean(y, "i"), lax.pmax(x, "i"), lax.pmin(y, "i"),
                lax.all_gather(x, "i"), lax.all_gather(x, "i", axis=1, tiled=True),
                lax.ppermute(x, "i", [(0, 1), (1, 2), (2, 0)]), lax.axis_index("i"),
                lax.psum_scatter(y, "i", tiled=True))
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 2, 3)).astype(np.float32)
    y = rng.integers(-50, 50, (4, 8)).astype(np.int32)
    s, m, mx, mn, g, gt, p, idx, rs = f(x, y)
    np.testing.assert_allclose(s, np.broadcast_to(x.sum(0), x.shape), rtol=1e-6)
    np.testing.assert_allclose(m, np.broadcast_to(y.sum(0) / 4, y.shape))   # true division, as NumPy
    np.testing.assert_array_equal(mx, np.broadcast_to(x.max(0), x.shape))
    np.testing.assert_array_equal(mn, np.broadcast_to(y.min(0), y.shape))
    np.testing.assert_array_equal(g, np.broadcast_to(x, (4,) + x.shape))
    np.testing.assert_array_equal(gt, np.broadcast_to(np.concatenate(list(x), axis=1), (4, 2, 12)))
    np.testing.assert_array_equal(p, np.stack([x[2], x[0], x[1], np.zeros_like(x[0])]))
    np.testing.assert_array_equal(idx, [0, 1, 2, 3])
    assert idx.dtype == np.int32
    np.testing.assert_array_equal(rs, y.sum(0).reshape(4, 2))


def test_data_parallel_training_step_matches_the_full_batch():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((32, 5)).astype(np.float32)
    w_true = rng.standard_normal(5).astype(np.float32)
    Y = X @ w_true

    def loss(w, x, y):
        return np.mean((x @ w - y) ** 2)

    @functools.partial(xla.pmap, axis_name="batch")
    def step(w, x, y):
        return w - 0.1 * lax.pmean(xla.grad(loss)(w, x, y), "batch")

    w = np.zeros((4, 5), np.float32)
    w_ref = np.zeros(5, np.float64)
    for _ in range(5):
        w = step(w, X.reshape(4, 8, 5), Y.reshape(4, 8))
        w_ref = w_ref - 0.1 * (2 / 32) * X.T.astype(np.float64) @ (X @ w_ref - Y)
    for d in range(4):
        np.testing.assert_allclose(w[d], w_ref, rtol=1e-4, atol=1e-5)
    assert step.compilations == 1


def test_errors_name_the_problem():
    with pytest.raises(TracingError, match="axis name 'j' is not bound by an enclosing xla.pmap"):
        xla.pmap(lambda x: lax.psum(x, "j"), axis_name="i")(np.ones((2, 3)))
    with pytest.raises(InvalidArgumentError, match="same leading"):
        xla.pmap(lambda x, y: x + y, axis_name="i")(np.ones((2, 3)), np.ones((3, 3)))
    with pytest.raises(InvalidArgumentError, match="distinct targets"):
        xla.pmap(lambda x: lax.ppermute(x, "i", [(0, 1), (1, 1)]), axis_name="i")(np.ones((2, 3)))
    with pytest.raises(InvalidArgumentError, match="does not split into 3"):
        xla.pmap(lambda x: lax.psum_scatter(x, "i", tiled=True), axis_name="i")(np.ones((3, 4)))


@pytest.mark.parametrize("backend", ["cpu", "interpreter"])
def test_a_singular_matrix_on_one_device_raises_numpys_error(backend):
    # np.linalg.inv's check (xla/frontend/lax/checks.py): each device's
    # code comes back with its results; NumPy's loop over the matrices raises.
    f = xla.pmap(lambda a: np.linalg.inv(a) @ a[0], backend=backend)
    a = np.stack([np.eye(3) * (k + 2) + 0.5 for k in range(3)])
    np.testing.assert_allclose(f(a), [np.linalg.inv(m) @ m[0] for m in a], atol=1e-12)
    a[2] = np.outer([1.0, 2.0, 3.0], [1.0, 1.0, 1.0])          # rank 1
    with pytest.raises(np.linalg.LinAlgError, match="^Singular matrix$"):
        f(a)
    np.testing.assert_array_equal(xla.pmap(lambda x: x + 1, backend=backend)(a), a + 1)
