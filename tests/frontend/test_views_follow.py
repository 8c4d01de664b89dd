"""Views taken with a traced integer index (``v = A[i]``, ``A[i, 2:5]``,
``A[:, j]`` with a loop index) in a loop converted to an HLO while loop
follow their array as NumPy's views do (tracing.py, Tracer._mark_follower):
updating ``v`` in place updates ``A``, and a later use of ``v`` sees the
updates of ``A`` made after it was taken, in the same body, in a nested
loop or branch body, or through the loop's own state. Before, such a view
was a copy: both silently differed from NumPy. The expected values are the
same functions run by NumPy, on copies of the arguments."""
import re

import numpy as np
import pytest

import xla


def same_as_numpy(fn, *args):
    ref = [a.copy() for a in args]
    ours = [a.copy() for a in args]
    want = fn(*ref)
    got = xla.jit(fn, unroll=False)(*ours)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    for r, o in zip(ref, ours):
        np.testing.assert_allclose(o, r, rtol=1e-12, atol=1e-12)


def whiles(fn, *args):
    return len(re.findall(r" while\(", xla.jit(fn, unroll=False).lower(*args).as_hlo_text()))


def updated_through_a_row(A, b):
    for i in range(A.shape[0]):
        v = A[i]
        v *= b[i]              # row i of A
        A[i, 0] += 1.0         # seen by v
        b[i] = v.sum()
    return b


def read_after_a_write(A, b):
    for i in range(A.shape[0]):
        v = A[i, 1:4]
        A[i, 2] = 100.0 + i    # inside v
        b[i] = v.sum()
    return b


def a_column(A, b):
    for j in range(A.shape[1]):
        c = A[:, j]
        A[0, j] = 100.0 + j
        b[j] = c @ A[:, 0]
    return b


def written_by_a_nested_loop(A, b):
    for i in range(A.shape[0]):
        v = A[i]
        s = b[0] * 0.0
        for j in range(7):
            A[i, j % 3] += 1.0
            s = s + v[0] + v[1]
        b[i] = s + v.sum()
    return b


def written_in_a_branch(A, b):
    for i in range(A.shape[0]):
        v = A[i]
        if A[i, 0] > 0.5:
            A[i, 1] += 10.0
            b[i] = v.sum()
        else:
            v -= 1.0
            b[i] = A[i].sum()
    return b


def a_slice_of_a_row(A, b):
    for i in range(A.shape[0]):
        row = A[i]
        head = row[:3]         # a view of A[i, :3]
        A[i, 5] = 0.0
        A[i, 1] = 7.0          # seen by head and row
        b[i] = head.sum() + row.sum()
    return b


def a_pivot_row(A, b):
    # Gauss-Jordan's scaling of the pivot row through a view of it.
    n = A.shape[0]
    for k in range(n):
        p = A[k]
        p /= p[k] + 3.0
        for i in range(n):
            A[i] -= b[i] * A[i, k] * p
    return A


@pytest.mark.parametrize("fn", [updated_through_a_row, read_after_a_write, a_column,
                                written_by_a_nested_loop, written_in_a_branch,
                                a_slice_of_a_row, a_pivot_row],
                         ids=lambda f: f.__name__)
def test_a_row_view_follows_its_array(fn):
    rng = np.random.default_rng(11)
    for n in (1, 4, 9):
        shape = (9, n) if fn is a_column else (9, 9) if fn is a_pivot_row else (n, 9)
        same_as_numpy(fn, rng.random(shape), 0.1 * rng.random(9))
    # Still while loops (none unrolled or refused).
    expected = 2 if fn in (written_by_a_nested_loop, a_pivot_row) else 1
    assert whiles(fn, np.ones((9, 9)), np.ones(9)) == expected


def test_a_row_view_of_an_array_a_nested_loop_rebinds_keeps_the_array():
    # B = B + 1 is a new array each iteration: v still views A, unchanged.
    def kernel(A, b):
        for i in range(A.shape[0]):
            v = A[i]
            B = A
            s = b[0] * 0.0
            for j in range(7):
                B = B + 1.0
                s = s + v.sum() + B[i, 0]
            b[i] = s
        return b

    rng = np.random.default_rng(12)
    same_as_numpy(kernel, rng.random((9, 9)), rng.random(9))
    assert whiles(kernel, np.ones((9, 9)), np.ones(9)) == 2


def test_an_augmented_row_assignment_writes_the_array_once():
    # A[i] -= v runs as t = A[i]; t -= v (which writes A, t following it);
    # A[i] = t, which stores the values just written: nothing more.
    def kernel(A, b):
        for i in range(A.shape[0]):
            A[i] -= b[i] * A[0]
        return A

    rng = np.random.default_rng(13)
    same_as_numpy(kernel, rng.random((9, 5)), rng.random(9))
    text = xla.jit(kernel, unroll=False).lower(np.ones((9, 5)), np.ones(9)).as_hlo_text()
    assert len(re.findall(r"= [^=]* dynamic-update-slice\(", text)) == 1


def test_a_reshaped_row_that_cannot_follow_raises_naming_the_line():
    def kernel(A, b):
        for i in range(A.shape[0]):
            row = A[i].reshape(2, 3)
            A[i, 1] = 7.0                # the line named: NumPy's row would see it
            b[i] = row[0].sum()
        return b

    line = kernel.__code__.co_firstlineno + 3
    with pytest.raises(xla.errors.TracingError, match=rf"test_views_follow.py:{line}: .*live views"):
        xla.jit(kernel, unroll=False)(np.ones((9, 6)), np.ones(9))


def a_copied_index_incremented(A, b):
    for i in range(A.shape[0]):
        j = i
        j += 1
        b[i] = i * 10 + j
    return b


def a_scalar_argument_scaled(A, b, alpha):
    beta = alpha
    beta *= 2.0
    for i in range(A.shape[0]):
        b[i] = alpha + beta * A[i, 0]
    return b


@pytest.mark.parametrize("fn", [a_copied_index_incremented, a_scalar_argument_scaled])
def test_augmented_assignment_to_a_python_scalar_rebinds_the_name(fn):
    # The loop index and a scalar argument stand for Python numbers, which
    # are immutable: ``j += 1`` after ``j = i`` rebinds j and leaves i (it
    # changed i, whose uses then read i + 1).
    rng = np.random.default_rng(3)
    A, b = rng.random((12, 3)), rng.random(12)
    extra = (0.5,) if fn is a_scalar_argument_scaled else ()
    want = fn(A.copy(), b.copy(), *extra)
    got = xla.jit(fn, unroll=False)(A.copy(), b.copy(), *extra)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
