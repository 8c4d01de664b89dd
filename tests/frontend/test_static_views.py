"""Views taken by static basic indexing (``v = x[1:]``, ``x[2]``,
``x[:, 3]``, ``x[::2]``, ``x[..., 1:3]``) follow their array both ways, as
NumPy's views do (tracing.py, Tracer._mark_follower): updating ``x`` makes
``v``'s next use read ``x`` again, and updating ``v`` updates ``x``. Before,
updating an array with such a live view raised. The expected values are
the same functions run by NumPy on copies of the arguments (results and
arguments after the call); what cannot follow (a reshape of a view whose
array is then written) still raises, naming the line."""
import re

import numpy as np
import pytest

import xla
from xla.errors import TracingError


def same_as_numpy(fn, *args, **jit_kwargs):
    ref = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    ours = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    want = fn(*ref)
    got = xla.jit(fn, **jit_kwargs)(*ours)
    for w, g in zip(want if isinstance(want, tuple) else (want,),
                    got if isinstance(got, tuple) else (got,)):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)
    for r, o in zip(ref, ours):
        if isinstance(r, np.ndarray):
            np.testing.assert_allclose(o, r, rtol=1e-12, atol=1e-12)
    return got


# ----- straight-line code --------------------------------------------------------------

def the_issue(x):
    v = x[1:]
    x[2] = 5.0                 # v[1] is now 5.0
    return v.sum()


def a_row(x):
    r = x[2]
    x[2, 1] = -1.0
    x += 1.0                   # the whole array: r sees it too
    return r * 1.0


def a_column(x):
    c = x[:, 3]
    x[1:, 2:] = 7.0
    return c.sum(), c[1] * 1.0


def a_strided_view(x):
    e = x[::2]
    x[2] *= 10.0
    return e * 1.0


def an_ellipsis_view(x):
    m = x[..., 1:3]
    x[0] = 3.0
    x[:, 2] -= 1.0
    return m * 1.0


def a_view_of_a_view(x):
    v = x[1:]
    w = v[::2]                 # x[1::2]
    x[3] = 100.0               # seen by v and w
    w += 1.0                   # updates v and x
    v[0] = -5.0                # seen by w and x
    return w * 1.0, v.sum()


def two_overlapping_views(x):
    a = x[1:5]
    b = x[3:7]
    a += 1.0                   # b[0], b[1] see it
    b[1] = 50.0                # a[3] sees it
    b *= 2.0
    return a * 1.0, b * 1.0


def used_after_several_updates(x):
    v = x[2:6]
    s = v.sum()
    x[3] = 1.0
    s = s + v.sum()
    x[4:] += 2.0
    s = s + v.sum()
    np.add(x, 1.0, out=x)
    return s + v.sum()


def in_place_through_the_view(x):
    v = x[1:-1]
    v += 1.0
    v *= x[:-2]                # reads x after v's update
    v -= v[::-1]               # a view of v on the right
    return x * 1.0


def an_argument_written_through_views(x, y):
    top = x[0]
    col = x[:, -1]
    top[:] = y                 # the caller's x[0]
    col += 1.0                 # the caller's x[:, -1], and top[-1]
    return top.sum() + col.sum()


def a_scalar_read_of_a_view(x):
    v = x[1:]
    t = v[0] * 1.0             # a copy: keeps its value
    x[1] = 9.0
    return t + v[0]


@pytest.mark.parametrize("fn", [the_issue, a_row, a_column, a_strided_view, an_ellipsis_view,
                                a_view_of_a_view, two_overlapping_views,
                                used_after_several_updates, in_place_through_the_view,
                                a_scalar_read_of_a_view],
                         ids=lambda f: f.__name__)
def test_a_static_view_follows_its_array(fn):
    rng = np.random.default_rng(5)
    shape = (8,) if fn in (the_issue, a_strided_view, a_view_of_a_view, two_overlapping_views,
                          used_after_several_updates, in_place_through_the_view,
                          a_scalar_read_of_a_view) else (4, 5)
    same_as_numpy(fn, rng.random(shape))


def test_views_of_an_argument_update_the_callers_array():
    rng = np.random.default_rng(6)
    same_as_numpy(an_argument_written_through_views, rng.random((4, 5)), rng.random(5))


def test_a_stale_view_would_give_a_different_value():
    # Hand-derived: x = [0, 1, 2, 3, 4]; v = x[1:] sees x[2] = 5, so
    # v.sum() = 1 + 5 + 3 + 4 = 13 (a copy taken at the view would give 10).
    x = np.arange(5.0)
    assert float(xla.jit(the_issue)(x)) == 13.0
    np.testing.assert_array_equal(x, [0, 1, 5, 3, 4])
    # a_view_of_a_view on zeros: x[3] = 100, then w = x[1::2] += 1 gives
    # x = [0, 1, 0, 101, 0, 1, 0, 1], then v[0] = x[1] = -5.
    got_w, got_s = xla.jit(a_view_of_a_view)(np.zeros(8))
    np.testing.assert_array_equal(got_w, [-5.0, 101.0, 1.0, 1.0])
    assert float(got_s) == -5.0 + 101.0 + 1.0 + 1.0


def test_no_extra_operations_without_live_views():
    # A view that died before the update is not read again: the same
    # module as without it.
    def dead_view(x):
        s = x[1:].sum()
        x[0] = 1.0
        return s + x.sum()

    def live_view(x):
        v = x[1:]
        s = v.sum()
        x[0] = 1.0
        return s + x.sum() + v.sum()

    def count(fn):
        text = xla.jit(fn).lower(np.ones(6)).as_hlo_text()
        return len(re.findall(r"= \S+ slice\(", text))
    assert count(dead_view) == 1
    assert count(live_view) == 2          # v read again after the update


# ----- loops and branches --------------------------------------------------------------

def a_view_before_a_loop(x, b):
    v = x[1:4]
    w = v[1:]                  # x[2:4]
    for i in range(x.shape[0]):
        x[i % 5] += b[i]
        b[i] = v.sum() + w[0]  # the body's x, updated
    return v * 1.0, w.sum()    # x after the loop


def a_view_updated_in_a_loop(x, b):
    v = x[2:]
    for i in range(b.shape[0]):
        v[i % 3] += b[i]
        b[i] = x.sum()
    return x[2:].sum() + v[0]


def views_in_the_body(x, b):
    for i in range(b.shape[0]):
        x[5] += 1.0            # (x carried: a while loop)
        head = x[:3]
        tail = x[2:]           # overlaps head at x[2]
        head += b[i]
        tail *= 0.5
        b[i] = head.sum() - tail[0]
    return b


def in_a_branch(x, b):
    v = x[1:3]
    for i in range(b.shape[0]):
        if x[0] > b[i]:
            x[1] = b[i]
            b[i] = v.sum()
        else:
            v -= 1.0
            b[i] = x[2] * 1.0
    return v.sum()


@pytest.mark.parametrize("fn", [a_view_before_a_loop, a_view_updated_in_a_loop, views_in_the_body,
                                in_a_branch], ids=lambda f: f.__name__)
def test_a_static_view_follows_its_array_in_converted_loops(fn):
    rng = np.random.default_rng(7)
    for _ in range(3):
        same_as_numpy(fn, rng.random(6), rng.random(12), unroll=False)
    text = xla.jit(fn, unroll=False).lower(np.ones(6), np.ones(12)).as_hlo_text()
    assert len(re.findall(r" while\(", text)) == 1     # a while loop, not unrolled


def test_a_reshaped_view_of_a_written_array_raises_naming_the_line():
    def kernel(x):
        m = x[1:].reshape(2, 3)
        x[2] = 5.0                 # the line named: NumPy's m would see it
        return m.sum()

    line = kernel.__code__.co_firstlineno + 2
    with pytest.raises(TracingError, match=rf"test_static_views.py:{line}: .*live views"):
        xla.jit(kernel)(np.ones(7))


def a_view_rebound_in_a_loop(x, b):
    v = x[1:4]
    for i in range(b.shape[0]):
        v = v + b[i]           # a new array, no longer a view: x keeps its values
        b[i] = x.sum() + v[0]
    return v.sum() + x.sum()


def two_carried_views(x, b):
    a = x[:4]
    c = x[2:]                  # overlaps a at x[2:4]
    for i in range(b.shape[0]):
        a[i % 4] += b[i]       # seen by c and x
        c[i % 4] *= 0.5        # seen by a and x
        b[i] = x.sum() + a[2] - c[0]
    return x * 1.0


def a_view_of_a_view_in_nested_loops(x, b):
    v = x[1:]
    w = v[::2]                 # x[1::2]
    for i in range(b.shape[0]):
        x[0] += 1.0
        s = b[i] * 0.0
        for j in range(5):
            x[(i + j) % 6] += 0.25
            s = s + w.sum() + v[0]
        b[i] = s
    return w * 1.0


def a_row_written_by_an_inner_loop(A, b):
    # A traced-index view updated in a nested loop that does not carry A:
    # A's reads there see the update.
    for i in range(A.shape[0]):
        A[i, -1] += b[i]       # (A carried by the outer loop)
        v = A[i]
        s = b[i] * 0.0
        for j in range(5):
            v[j % 3] += 1.0
            s = s + A[i].sum()
        b[i] = s
    return b


@pytest.mark.parametrize("fn", [a_view_rebound_in_a_loop, two_carried_views,
                                a_view_of_a_view_in_nested_loops],
                         ids=lambda f: f.__name__)
def test_views_carried_through_converted_loops(fn):
    rng = np.random.default_rng(8)
    for _ in range(3):
        same_as_numpy(fn, rng.random(6), rng.random(12), unroll=False)


def test_a_row_view_updated_by_an_inner_loop_is_seen_by_its_array():
    rng = np.random.default_rng(9)
    same_as_numpy(a_row_written_by_an_inner_loop, rng.random((6, 4)), rng.random(6), unroll=False)
    text = xla.jit(a_row_written_by_an_inner_loop, unroll=False).lower(
        np.ones((6, 4)), np.ones(6)).as_hlo_text()
    assert len(re.findall(r" while\(", text)) == 2


def a_view_updated_in_a_branch(x, y):
    v = x[1:3]
    if y[0] > 0.5:             # a conditional: the branch carries v, not x
        v += 1.0
        s = x.sum()            # sees v's update
    else:
        v *= 2.0
        s = x[1] * 1.0
    return s + v.sum()


def test_a_view_updated_in_a_branch_is_seen_by_its_array():
    for y0 in (0.2, 0.8):
        same_as_numpy(a_view_updated_in_a_branch, np.arange(5.0), np.array([y0]))
    text = xla.jit(a_view_updated_in_a_branch).lower(np.ones(5), np.ones(1)).as_hlo_text()
    assert " conditional(" in text


# ----- more combinations ---------------------------------------------------------------

def a_chained_view(x):
    w = x[1:][::2]             # the middle view is a temporary
    x[3] = 9.0
    return w * 1.0


def written_by_out(x):
    v = x[2:]
    np.add(v, 1.0, out=v)
    np.multiply(x[:3], 2.0, out=x[:3])     # seen by v[0]
    return v * 1.0


def a_shift_through_a_view(x):
    v = x[1:]
    x[:-1] = v                 # overlapping: NumPy copies first
    return v * 1.0


def a_reversed_view(x):
    v = x[::-1]
    v += x                     # x[k] + x[n-1-k], both through x
    return v * 1.0


def with_a_new_axis(x):
    v = x[None, 1:]
    x[1] = 7.0
    v += 1.0
    return v * 1.0


def a_column_and_a_row(A):
    c = A[:, 1]
    r = A[2]                   # crosses c at A[2, 1]
    c += r[1]
    r[0] = c[0]
    return c * 1.0 + A.sum()


def a_view_then_the_name_rebound(x):
    v = x[1:]
    x = x + 1.0                # a new array: v keeps the argument
    x[0] = 5.0
    return v * 1.0


@pytest.mark.parametrize("fn", [a_chained_view, written_by_out, a_shift_through_a_view,
                                a_reversed_view, with_a_new_axis, a_view_then_the_name_rebound],
                         ids=lambda f: f.__name__)
def test_combinations_match_numpy(fn):
    same_as_numpy(fn, np.random.default_rng(10).random(6))


def test_a_column_and_a_row_match_numpy():
    same_as_numpy(a_column_and_a_row, np.random.default_rng(11).random((4, 3)))


def a_row_view_carried_by_a_loop(A, b):
    top = A[0]
    for i in range(1, A.shape[0]):
        A[i] += top
        top += b[i]            # A[0], read by the next iteration's A[i] += top
    return A * 1.0


def a_view_in_a_while_condition(x):
    v = x[2:]
    while x[0] < 5.0:
        x[0] += v[0]
        v[0] += 0.5
    return v * 1.0


def test_views_carried_by_while_loops():
    rng = np.random.default_rng(12)
    same_as_numpy(a_row_view_carried_by_a_loop, rng.random((12, 2)), rng.random(12), unroll=False)
    same_as_numpy(a_view_in_a_while_condition, np.array([0.0, 1.0, 0.3, 1.0]))
    for fn, args in ((a_row_view_carried_by_a_loop, (np.ones((12, 2)), np.ones(12))),
                     (a_view_in_a_while_condition, (np.ones(4),))):
        text = xla.jit(fn, unroll=False).lower(*args).as_hlo_text()
        assert len(re.findall(r" while\(", text)) == 1
