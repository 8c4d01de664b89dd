"""Must-compile errors of the NumPy surface: data-dependent shapes and
unsupported functions raise TracingError naming the NumPy function and the
user's own file and line, with the static-shape alternative."""
import inspect

import numpy as np
import pytest

import xla
from xla.errors import TracingError

X = np.arange(12.0).reshape(3, 4)
N = np.arange(6)


def _f_unique(x):
    return np.unique(x)


def _f_nonzero(x):
    return np.nonzero(x)


def _f_argwhere(x):
    return np.argwhere(x)


def _f_flatnonzero(x):
    return np.flatnonzero(x)


def _f_where1(x):
    return np.where(x > 1)


def _f_mask(x):
    return x[x > 1]


def _f_bincount(n):
    return np.bincount(n)


def _f_repeat_traced(x, n):
    return np.repeat(x, n)


def _f_arange_traced(n):
    return xla.numpy.arange(n)


def _f_unsupported(x):
    return np.einsum_path("ij,jk", x, x)


def _f_int_of_traced(x):
    return np.zeros(int(x.sum()))


CASES = [
    (_f_unique, (X,), r"np\.unique has an output shape that depends on the data"),
    (_f_nonzero, (X,), r"np\.nonzero has an output shape that depends on the data.*np\.where"),
    (_f_argwhere, (X,), r"np\.argwhere has an output shape that depends on the data"),
    (_f_flatnonzero, (X,), r"np\.flatnonzero has an output shape"),
    (_f_where1, (X,), r"np\.where\(condition\) with one argument.*np\.where\(condition, x, y\)"),
    (_f_mask, (X,), r"boolean mask indexing.*np\.where\(mask, x, fill\)"),
    (_f_bincount, (N,), r"np\.bincount has an output shape that depends on the data.*np\.arange\(n\)"),
    (_f_repeat_traced, (X, N[2]), r"np\.repeat with traced repeats"),
    (_f_arange_traced, (N[2],), r"np\.arange with traced bounds"),
    (_f_unsupported, (X[:3, :3],), r"np\.einsum_path is not supported under xla\.jit"),
    (_f_int_of_traced, (X,), r"int\(\) of a traced array.*static argument"),
]


@pytest.mark.parametrize("fn,args,pattern", CASES, ids=[c[0].__name__ for c in CASES])
def test_error_names_the_function_and_the_users_line(fn, args, pattern):
    line = inspect.getsourcelines(fn)[1] + 1          # the body's return line
    with pytest.raises(TracingError, match=pattern) as e:
        xla.jit(fn)(*args)
    assert f"test_numpy_errors.py:{line}:" in str(e.value)


def test_out_argument_writes_into_traced_arrays_only():
    x = np.arange(3.0)
    np.testing.assert_array_equal(xla.jit(lambda x: np.add(x, 1, out=x))(x), [1, 2, 3])
    np.testing.assert_array_equal(x, [1, 2, 3])   # the caller's array, as with NumPy
    outside = np.zeros(3)
    with pytest.raises(TracingError, match=r"out must be arrays of this traced function"):
        xla.jit(lambda x: np.add(x, 1, out=outside))(X)
