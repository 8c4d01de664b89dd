"""xla.autojit: mixed programs equal plain NumPy; clusters, cuts, caching."""
import math
import os

import numpy as np
import pytest

import xla
from xla import debug_options as d
from xla.errors import TracingError
from xla.frontend.autojit import autojit


def mixed(x, y):
    z = np.exp(x) + y
    u = np.unique(np.round(z))            # data-dependent shape: eager
    s = np.sum(u) * 2
    if s > 10:                            # Python branch on a value
        w = z * s
    else:
        w = z - s
    return w.mean() + math.sqrt(abs(float(s))), u


def plain_python_helper(values):
    return sorted(values.tolist())        # not NumPy: needs concrete data


def with_helper(x):
    y = x * 3
    ordered = np.asarray(plain_python_helper(y))
    return ordered + np.tanh(y).sum()


@pytest.mark.parametrize("fn,args", [
    (mixed, (np.linspace(0, 2, 7), np.ones(7))),
    (mixed, (np.linspace(-3, -2, 5), np.zeros(5))),
    (with_helper, (np.array([3.0, -1.0, 2.0]),)),
])
def test_results_equal_plain_numpy(fn, args):
    got = autojit(fn)(*args)
    want = fn(*args)
    for g, w in zip(got if isinstance(got, tuple) else [got], want if isinstance(want, tuple) else [want]):
        np.testing.assert_allclose(g, w, rtol=1e-12)
        assert np.asarray(g).dtype == np.asarray(w).dtype


def test_cluster_report_names_each_cut_and_clusters_are_cached():
    f = autojit(mixed)
    f(np.linspace(0, 2, 7), np.ones(7))
    records = f.last_records
    assert len(records) == 4
    reasons = [r.reason for r in records]
    assert reasons[0].startswith("np.unique runs eagerly (np.unique has an output shape that depends")
    assert reasons[1].startswith("bool()")
    assert reasons[2].startswith("float()")
    assert reasons[3] == "end of function"
    assert all(r.instructions > 0 for r in records)
    assert __file__ in records[0].location
    report = f.cluster_report()
    assert "np.unique runs eagerly (" in report and "4 clusters" in report
    compiled = f.compilations
    f(np.linspace(0, 2, 7) + 0.01, np.ones(7))    # same path, same shapes
    assert f.compilations == compiled
    assert "(cached)" in f.cluster_report()


def test_debug_dir_gets_report_and_graph(tmp_path):
    f = autojit(mixed, debug_dir=str(tmp_path))
    f(np.linspace(0, 2, 7), np.ones(7))
    assert (tmp_path / "mixed.clusters.txt").read_text().count("cluster ") == 4
    dot = (tmp_path / "mixed.clusters.dot").read_text()
    assert dot.startswith('digraph "mixed"') and dot.count("->") == 3


def test_compilable_function_is_one_cluster():
    f = autojit(lambda x: np.sum(np.sin(x) ** 2))
    x = np.linspace(0, 1, 100)
    np.testing.assert_allclose(f(x), np.sum(np.sin(x) ** 2))
    assert len(f.last_records) == 1


def test_xla_auto_jit_flag_makes_jit_cluster_instead_of_failing():
    def f(x):
        return np.unique(x) * 2, x.sum()

    with pytest.raises(TracingError):
        xla.jit(f)(np.array([3, 1, 3]))
    with d.override(xla_auto_jit=2):
        g = xla.jit(f)
        u, s = g(np.array([3, 1, 3]))
    np.testing.assert_array_equal(u, [2, 6])
    assert s == 7


def test_a_data_dependent_shape_cut_says_so_in_the_report():
    def f(x):
        y = np.sin(x) * 2
        z = y[y > 0]                 # marker-mask
        return np.unique(z).sum() + 1

    af = xla.autojit(f)
    x = np.random.default_rng(0).standard_normal(16)
    np.testing.assert_allclose(af(x), f(x))
    report = af.cluster_report()
    assert "indexing runs eagerly (boolean mask indexing selects a number of elements that " \
           "depends on the data" in report
    assert "np.unique runs eagerly (np.unique has an output shape that depends on the data" in report


def test_a_singular_matrix_raises_numpys_error_at_the_clusters_cut():
    # np.linalg.solve's check (xla/frontend/lax/checks.py): the cluster's
    # error code is read when it runs, before the Python branch that cut it.
    def f(a, b):
        x = np.linalg.solve(a, b)
        if x[0] > 0:
            x = x * 2
        return np.linalg.cholesky(a) @ x

    g = xla.autojit(f)
    a = np.array([[4.0, 1.0], [1.0, 3.0]])
    np.testing.assert_allclose(g(a, np.ones(2)), f(a, np.ones(2)), rtol=1e-12)
    for bad, message in ((np.ones((2, 2)), "Singular matrix"),
                         (-a, "Matrix is not positive definite")):
        with pytest.raises(np.linalg.LinAlgError) as numpy_error:
            f(bad, np.ones(2))
        assert str(numpy_error.value) == message
        with pytest.raises(np.linalg.LinAlgError, match=f"^{message}$"):
            g(bad, np.ones(2))
