"""Scientific NumPy kernels written as people write them (in the style of
public benchmark suites such as npbench): in-place updates of arguments and
of arrays created inside, slice assignment, augmented assignment through
indices, Python loops over static ranges. Each compiles under xla.jit and
matches the same function run by NumPy, results and arguments after the
call alike."""
import numpy as np
import pytest

import xla


def jacobi_1d(TSTEPS, A, B):
    for t in range(1, TSTEPS):
        B[1:-1] = 0.33333 * (A[:-2] + A[1:-1] + A[2:])
        A[1:-1] = 0.33333 * (B[:-2] + B[1:-1] + B[2:])


def jacobi_2d(TSTEPS, A, B):
    for t in range(1, TSTEPS):
        B[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1] + A[:-2, 1:-1])
        A[1:-1, 1:-1] = 0.2 * (B[1:-1, 1:-1] + B[1:-1, :-2] + B[1:-1, 2:] + B[2:, 1:-1] + B[:-2, 1:-1])


def gemm(alpha, beta, C, A, B):
    C[:] = alpha * A @ B + beta * C


def gemver(alpha, beta, A, u1, v1, u2, v2, w, x, y, z):
    A += np.outer(u1, v1) + np.outer(u2, v2)
    x += beta * y @ A + z
    w += alpha * A @ x


def heat_3d(TSTEPS, A, B):
    for t in range(1, TSTEPS):
        B[1:-1, 1:-1, 1:-1] = (0.125 * (A[2:, 1:-1, 1:-1] - 2.0 * A[1:-1, 1:-1, 1:-1] + A[:-2, 1:-1, 1:-1])
                               + 0.125 * (A[1:-1, 2:, 1:-1] - 2.0 * A[1:-1, 1:-1, 1:-1] + A[1:-1, :-2, 1:-1])
                               + 0.125 * (A[1:-1, 1:-1, 2:] - 2.0 * A[1:-1, 1:-1, 1:-1] + A[1:-1, 1:-1, :-2])
                               + A[1:-1, 1:-1, 1:-1])
        A[1:-1, 1:-1, 1:-1] = (0.125 * (B[2:, 1:-1, 1:-1] - 2.0 * B[1:-1, 1:-1, 1:-1] + B[:-2, 1:-1, 1:-1])
                               + 0.125 * (B[1:-1, 2:, 1:-1] - 2.0 * B[1:-1, 1:-1, 1:-1] + B[1:-1, :-2, 1:-1])
                               + 0.125 * (B[1:-1, 1:-1, 2:] - 2.0 * B[1:-1, 1:-1, 1:-1] + B[1:-1, 1:-1, :-2])
                               + B[1:-1, 1:-1, 1:-1])


def floyd_warshall(path):
    for k in range(path.shape[0]):
        path[:] = np.minimum(path[:], np.add.outer(path[:, k], path[k, :]))


def trisolv(L, x, b):
    for i in range(x.shape[0]):
        x[i] = (b[i] - L[i, :i] @ x[:i]) / L[i, i]


def histogram_fill(data):
    out = np.zeros((4, 5))
    for i in range(4):
        out[i, :] = data[i] * (i + 1)
    out[:, 2] += 10
    return out


CASES = [
    ("jacobi_1d", jacobi_1d, lambda r: (6, r.random(30), r.random(30)), (0,)),
    ("jacobi_2d", jacobi_2d, lambda r: (4, r.random((12, 12)), r.random((12, 12))), (0,)),
    ("gemm", gemm, lambda r: (1.5, 1.2, r.random((6, 7)), r.random((6, 5)), r.random((5, 7))), ()),
    ("gemver", gemver, lambda r: (1.5, 1.2, r.random((8, 8)), *[r.random(8) for _ in range(8)]), ()),
    ("heat_3d", heat_3d, lambda r: (3, r.random((6, 6, 6)), r.random((6, 6, 6))), (0,)),
    ("floyd_warshall", floyd_warshall, lambda r: (r.integers(1, 20, (7, 7)).astype(np.int32),), ()),
    ("trisolv", trisolv, lambda r: (np.tril(r.random((6, 6))) + 6 * np.eye(6), np.zeros(6),
                                    r.random(6)), ()),
    ("histogram_fill", histogram_fill, lambda r: (r.random((4, 5)),), ()),
]


@pytest.mark.parametrize("name,fn,make,static", CASES, ids=[c[0] for c in CASES])
def test_kernel_matches_numpy(name, fn, make, static):
    args = make(np.random.default_rng(0))
    ours = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    ref = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    out = xla.jit(fn, static_argnums=static)(*ours)
    expected = fn(*ref)
    if expected is not None:
        np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-12)
    for i, (a, b) in enumerate(zip(ours, ref)):
        if isinstance(b, np.ndarray):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12, err_msg=f"argument {i}")


@pytest.mark.parametrize("kwargs", [dict(bins=10), dict(bins=7, range=(-1, 2)), dict(bins=5, density=True),
                                    dict(bins=4, weights="linear")], ids=["bins", "range", "density",
                                                                          "weights"])
@pytest.mark.parametrize("data", ["normal64", "normal32", "ints", "constant"])
def test_histogram_matches_numpy(data, kwargs):
    rng = np.random.default_rng(0)
    x = {"normal64": rng.normal(size=1000), "normal32": rng.normal(size=777).astype(np.float32),
         "ints": rng.integers(0, 20, 300), "constant": np.array([3.0, 3.0, 3.0])}[data]
    kwargs = dict(kwargs)
    if kwargs.get("weights") == "linear":
        kwargs["weights"] = np.linspace(0, 1, x.size)

    def f(a):
        return np.histogram(a, **kwargs)

    (want_hist, want_edges), (got_hist, got_edges) = f(x), xla.jit(f)(x)
    assert got_hist.dtype == want_hist.dtype and got_edges.dtype == want_edges.dtype
    if "density" in kwargs or "weights" in kwargs:
        # (f32 edges may differ from NumPy's in the last bit: the densities then by ~1e-7)
        np.testing.assert_allclose(got_hist, want_hist, rtol=1e-6 if x.dtype == np.float32 else 1e-12)
    else:
        np.testing.assert_array_equal(got_hist, want_hist)
    np.testing.assert_allclose(got_edges, want_edges, rtol=1e-6)


def test_histogram_edges_as_an_array_are_named():
    with pytest.raises(xla.errors.TracingError, match="np.histogram under xla.jit takes the number of bins"):
        xla.jit(lambda a: np.histogram(a, bins=[0, 1, 2]))(np.arange(5.0))


HIST2D_CASES = {
    "bins": dict(bins=5),
    "range": dict(bins=4, range=[[-1, 1], [-2, 3]]),
    "pair": dict(bins=[3, 6], range=[[-2.0, 2.0], [-1.5, 1.5]]),
    "edges": dict(bins=np.array([-3.0, -1.0, 0.0, 0.5, 3.0])),
    "mixed": dict(bins=[np.array([-1.0, 0.0, 1.0]), 4]),
    "density": dict(bins=6, density=True),
    "weights": dict(bins=3, range=[[-1, 1], [-1, 1]], weights="linear"),
    "weights_density": dict(bins=[np.array([-2.0, 0.0, 0.3, 2.0]), 3], weights="linear", density=True),
}


@pytest.mark.parametrize("case", sorted(HIST2D_CASES))
@pytest.mark.parametrize("data", ["normal64", "normal32", "ints", "constant", "edge_values"])
def test_histogram2d_matches_numpy(case, data):
    rng = np.random.default_rng(1)
    x, y = {"normal64": lambda: (rng.normal(size=200), rng.normal(size=200)),
            "normal32": lambda: (rng.normal(size=77).astype(np.float32),
                                 rng.normal(size=77).astype(np.float32)),
            "ints": lambda: (rng.integers(-3, 4, 90), rng.integers(-2, 3, 90)),
            "constant": lambda: (np.full(5, 0.5), np.full(5, 0.5)),
            # values on the edges, the last edge included
            "edge_values": lambda: (np.array([-3.0, -1.0, 0.0, 0.5, 3.0, 1.0, -2.0]),
                                    np.array([3.0, 1.5, -1.5, 0.0, -1.0, 2.0, 1.0]))}[data]()
    kwargs = dict(HIST2D_CASES[case])
    if kwargs.get("weights") == "linear":
        kwargs["weights"] = np.linspace(0, 2, x.size)

    def f(x, y):
        return np.histogram2d(x, y, **kwargs)

    want, got = f(x, y), xla.jit(f)(x, y)
    assert len(got) == 3
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, w.dtype, g.shape, w.shape)
        # (edges from the data's min and max are np.linspace's in HLO: the cpu
        # backend contracts its multiply-add into an fma, an ulp off NumPy's)
        np.testing.assert_allclose(g, w, rtol=1e-5 if x.dtype == np.float32 else 1e-12, atol=1e-12)


@pytest.mark.parametrize("kwargs", [dict(bins=3), dict(bins=(2, 3, 4), range=[(-1, 1), (0, 2), (-3, 3)]),
                                    dict(bins=[np.linspace(-2, 2, 5), 2, 3], density=True)],
                         ids=["int", "range", "edges_density"])
@pytest.mark.parametrize("form", ["array", "list"])
def test_histogramdd_matches_numpy(kwargs, form):
    sample = np.random.default_rng(2).normal(size=(60, 3))

    def f(s):
        return np.histogramdd(s if form == "array" else [s[:, 0], s[:, 1], s[:, 2]], **kwargs)

    (want, want_edges), (got, got_edges) = f(sample), xla.jit(f)(sample)
    assert got.dtype == want.dtype == np.float64 and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-12)
    for g, w in zip(got_edges, want_edges):
        assert g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=1e-15)


def test_histogram2d_of_empty_arrays_and_what_cannot_compile():
    x = np.zeros(0)
    want, got = np.histogram2d(x, x, bins=3), xla.jit(lambda a, b: np.histogram2d(a, b, bins=3))(x, x)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g, w)
    with pytest.raises(xla.errors.TracingError, match="bins.*traced number"):
        xla.jit(lambda a, n: np.histogram2d(a, a, bins=n))(np.ones(3), np.int64(3))
    with pytest.raises(xla.errors.TracingError, match=r"range\[0\] must be constants"):
        xla.jit(lambda a, lo: np.histogram2d(a, a, range=[[lo, 1.0], [0, 1]]))(np.ones(3), np.float64(0))
    with pytest.raises(ValueError, match="monotonically increasing"):
        xla.jit(lambda a: np.histogram2d(a, a, bins=np.array([0.0, 2.0, 1.0])))(np.ones(3))
    with pytest.raises(ValueError, match="same length"):
        xla.jit(lambda a, b: np.histogram2d(a, b))(np.ones(3), np.ones(4))


def test_histogram2d_raises_after_the_call_where_numpy_raises_on_values():
    # An autodetected range that is not finite, traced edges that decrease:
    # NumPy's ValueError, raised by the jitted call after it ran.
    f = xla.jit(lambda a, b: np.histogram2d(a, b, bins=2)[0])
    with pytest.raises(ValueError, match="not finite"):
        np.histogram2d(np.array([0.0, np.inf]), np.ones(2), bins=2)
    with pytest.raises(ValueError, match="autodetected range .* is not finite"):
        f(np.array([0.0, np.inf]), np.ones(2))
    with pytest.raises(ValueError, match="autodetected range .* is not finite"):
        f(np.ones(2), np.array([np.nan, 1.0]))
    np.testing.assert_array_equal(f(np.array([0.0, 1.0]), np.ones(2)),
                                  np.histogram2d(np.array([0.0, 1.0]), np.ones(2), bins=2)[0])
    g = xla.jit(lambda a, e: np.histogram2d(a, a, bins=[e, e])[0])
    with pytest.raises(ValueError, match=r"`bins\[0\]` must be monotonically increasing"):
        g(np.ones(3), np.array([0.0, 2.0, 1.0]))
    np.testing.assert_array_equal(g(np.ones(3), np.array([0.0, 1.0, 2.0])),
                                  np.histogram2d(np.ones(3), np.ones(3), bins=[[0, 1, 2]] * 2)[0])
