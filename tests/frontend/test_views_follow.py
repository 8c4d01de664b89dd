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


@pytest.mark.parametrize("fn", [updated_through_a_row, read_after_a_write, a_column,
                                written_by_a_nested_loop, written_in_a_branch],
                         ids=lambda f: f.__name__)
def test_a_row_view_follows_its_array(fn):
    rng = np.random.default_rng(11)
    for n in (1, 4, 9):
        same_as_numpy(fn, rng.random((n, 9)) if fn is not a_column else rng.random((9, n)),
                      rng.random(9))
    # Still while loops (none unrolled or refused).
    expected = 2 if fn is written_by_a_nested_loop else 1
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
