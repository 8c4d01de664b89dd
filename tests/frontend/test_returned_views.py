"""An output that is a view of an argument by static basic indexing
(``return x[1:]``) is that view of the caller's array, as NumPy returns it
(jit.py ``_with_views``), so a later write into either shows in the other;
before, it was a fresh array and such a write was lost. Other outputs stay
fresh arrays (docs/frontend.md, "Views of arguments returned"). Expected
values and aliasing: NumPy's, on copies of the same arguments."""
import numpy as np
import pytest

import xla

BACKENDS = ["cpu", "interpreter"]


def tail(x):
    return x[1:]


def views_and_a_scalar(x):
    return x[1:][::2], x[0], x[..., 2], x[:, None]


def updated_after_the_view(x):
    v = x[1:]
    x += 1.0
    return v


def view_updated_then_array_rebound(x):
    v = x[1:]
    v[0] = 100.0
    x = x * 2.0
    return v, x


def view_updated_in_a_loop(x, n):
    v = x[1:]
    for i in range(n):
        v[i % 3] += 1.0
    return v


CASES = [(tail, (np.arange(5.0),)), (views_and_a_scalar, (np.arange(5.0),)),
         (updated_after_the_view, (np.arange(5.0),)),
         (view_updated_then_array_rebound, (np.arange(5.0),)),
         (view_updated_in_a_loop, (np.arange(5.0), 20)),
         (tail, (np.arange(5.0).astype(">f4"),))]


def leaves(out):
    return list(out) if isinstance(out, tuple) else [out]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn,args", CASES, ids=lambda c: getattr(c, "__name__", ""))
def test_views_of_arguments_alias_the_callers_array_as_in_numpy(backend, fn, args):
    f = xla.jit(fn, backend=backend)
    for _ in range(3):           # the first call compiles, the next ones take the call plan
        ours = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        ref = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        got, want = leaves(f(*ours)), leaves(fn(*ref))
        np.testing.assert_array_equal(ours[0], ref[0])
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
            assert np.shares_memory(g, ours[0]) == np.shares_memory(w, ref[0])
        # A write into a result afterwards: the caller's array sees it
        # exactly where NumPy's does.
        for g, w in zip(got, want):
            if isinstance(w, np.ndarray) and w.size:
                g.flat[0] = w.flat[0] = -7.0
        np.testing.assert_array_equal(ours[0], ref[0])
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)


def test_other_outputs_stay_fresh_arrays():
    def f(x, xs):
        return x[[0, 2]], x[1:] * 1.0, x[2], xs[1:]

    x = np.arange(5.0)
    got = xla.jit(f)(x, [1.0, 2.0, 3.0])
    want = f(x, [1.0, 2.0, 3.0])
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
        assert not np.shares_memory(g, x)      # a copy in NumPy too, or a list's slice


def test_a_donated_argument_gives_no_view():
    # Its memory may hold an output: the view stays a computed array.
    f = xla.jit(lambda x: (x[1:], x * 2.0), donate_argnums=0)
    x = np.arange(5.0)
    v, y = f(x.copy())
    np.testing.assert_array_equal(v, np.arange(1.0, 5.0))
    np.testing.assert_array_equal(y, 2 * x)
