"""The kernel suite of tests/frontend/numpy_programs.py under xla.jit: each
compiles unmodified and matches NumPy on copies of its inputs, results and
arguments after the call (which the kernels update in place) alike; what
cannot compile (an output shape that depends on the data) says so."""
import warnings

import numpy as np
import pytest

import xla

from numpy_programs import KERNELS, REFUSED


def copies(args):
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def leaves(x):
    return list(x) if isinstance(x, tuple) else [x]


def test_the_suite_is_large_enough():
    assert len(KERNELS) >= 40


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_kernel_matches_numpy(name):
    fn, make, static = KERNELS[name]
    args = make(np.random.default_rng(0), "test")
    ref, ours = copies(args), copies(args)
    want = fn(*ref)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # (loops that unroll say so)
        got = xla.jit(fn, static_argnums=static)(*ours)
    if want is None:
        assert got is None
    else:
        for w, g in zip(leaves(want), leaves(got)):
            w = np.asarray(w)
            assert np.asarray(g).dtype == w.dtype, (np.asarray(g).dtype, w.dtype)
            np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-12)
    for i, (r, o) in enumerate(zip(ref, ours)):
        if isinstance(r, np.ndarray):
            np.testing.assert_allclose(o, r, rtol=1e-9, atol=1e-12, err_msg=f"argument {i}")


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_data_dependent_shapes_are_refused_by_name(name):
    fn, make, static, reason = REFUSED[name]
    with pytest.raises(xla.errors.TracingError, match=reason):
        xla.jit(fn, static_argnums=static)(*make(np.random.default_rng(0), "test"))
