"""Slices whose length depends on a loop index (xla/frontend/masked_slice.py)
updated in place: ``x[i, k:] -= v`` writes the array once. The expected
values are the same functions run by NumPy."""
import re

import numpy as np
import pytest

import xla

from numpy_programs import gauss_elimination   # the kernel suite's, written as NumPy code is


def body_of(text, name):
    """The text of computation ``name`` in an HLO module's text."""
    return re.search(rf"^%{re.escape(name)} .*?^}}", text, re.M | re.S).group(0)


def while_bodies(text):
    return [body_of(text, m) for m in re.findall(r"body=%([\w.\-]+)", text)]


def dus_count(text):
    return len(re.findall(r"= [^=]* dynamic-update-slice\(", text))


def same_as_numpy(fn, *args):
    ref = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    ours = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    want = fn(*ref)
    got = xla.jit(fn, unroll=False)(*ours)
    if want is not None:
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    for r, o in zip(ref, ours):
        if isinstance(r, np.ndarray):
            np.testing.assert_allclose(o, r, rtol=1e-12, atol=1e-12)


def test_augmented_assignment_of_a_masked_slice_writes_the_array_once():
    # Python runs A[i, k:] -= v as t = A[i, k:]; t -= v (which writes the
    # view's array, as NumPy's views do); A[i, k:] = t. The last assignment
    # stores the values just written: it adds no second dynamic-update-slice
    # (whose recomputed update, once fused, read the matrix after the first
    # one wrote it, so the first one could not update it in place: a copy
    # of the matrix per inner iteration, 35x slower).
    n = 12
    rng = np.random.default_rng(3)
    a = rng.random((n, n)) + n * np.eye(n)
    text = xla.jit(gauss_elimination, unroll=False).lower(a, np.ones(n)).as_hlo_text()
    bodies = while_bodies(text)
    # The k = 0 loop over i (k static), the loop over k and its loop over i
    # (k traced: the masked row update), back substitution.
    assert len(bodies) == 4
    inner = [b for b in bodies if "f64[1,11]" in b and " while(" not in b and " dot(" not in b]
    assert len(inner) == 1
    # One for the row of A, one for b[i].
    assert dus_count(inner[0]) == 2
    same_as_numpy(gauss_elimination, a, rng.random(n))


def test_masked_slices_assigned_new_values_are_written():
    def kernel(C, s):
        for i in range(C.shape[0]):
            C[i, i:] *= s                  # one write
            C[i, i:] = C[i, i:] * 2.0      # a new value: one write
            C[i, :i + 1] += 1.0            # one write
        return C.sum()

    rng = np.random.default_rng(5)
    for n in (1, 2, 9):
        same_as_numpy(kernel, rng.random((n, n)), 1.5)
    text = xla.jit(kernel, unroll=False).lower(np.ones((9, 9)), 1.5).as_hlo_text()
    (body,) = while_bodies(text)
    assert dus_count(body) == 3


# A masked slice held in a variable is a NumPy view: a write of its array
# through another index after it was taken (x[i, 0] = 5 after v = x[i, k:])
# is seen by its next use, as it is in NumPy (before, it kept the values
# from when it was taken: at k = 0, A[i, k:] = v overwrote the 5).

def write_back_after_a_write(A):
    n = A.shape[1]
    for i in range(A.shape[0]):
        for k in range(n - 1):
            v = A[i, k:]
            v -= 1.0
            A[i, 0] = 5.0              # inside v when k == 0
            A[i, n - 1] = 50.0 + k     # inside v for every k
            A[i, k:] = v
    return A


def read_after_a_write(A):
    n = A.shape[1]
    out = np.zeros(n)
    for k in range(n):
        v = A[0, k:]
        A[0, n - 1] = 5.0 + k
        out[k] = v.sum() + v.mean()
    return out


def written_by_a_nested_loop(A):
    n = A.shape[1]
    out = np.zeros(n)
    for k in range(n):
        v = A[0, k:]
        for j in range(7):
            A[0, n - 1] += j
        out[k] = v @ A[1, k:]
    return out


def written_by_a_conditional(A):
    n = A.shape[1]
    out = np.zeros(n)
    for k in range(n):
        v = A[0, k:]
        if A[1, k] > 0.5:
            A[0, n - 1] += 100.0
        out[k] = v.sum()
    return out


def read_in_a_nested_loop(A):
    n = A.shape[1]
    out = np.zeros(n)
    for k in range(n):
        v = A[0, :k + 1]
        A[0, 0] = 1.0 + k
        s = A[2, 0] * 0.0
        for j in range(7):
            s = s + j * v.sum()
        out[k] = s
    return out


def written_and_read_in_a_nested_loop(A):
    # The nested loop's body updates its parameter for A in place; v reads
    # that parameter, so each iteration sees the previous ones' writes.
    n = A.shape[1]
    out = np.zeros(n)
    for k in range(n):
        v = A[0, k:]
        s = A[2, 0] * 0.0
        for j in range(7):
            A[0, n - 1] += 1.0
            s = s + v.sum()
        out[k] = s
    return out


def written_and_read_in_a_branch(A):
    n = A.shape[1]
    out = np.zeros(n)
    for k in range(n):
        v = A[0, k:]
        if A[1, k] > 0.5:
            A[0, n - 1] += 1.0
            out[k] = v.sum()
        else:
            out[k] = v.mean()
    return out


def written_in_a_branch_of_a_nested_loop(A):
    n = A.shape[1]
    out = np.zeros(n)
    for k in range(n):
        v = A[0, k:]
        for j in range(7):
            if A[1, j % n] > 0.5:
                A[0, n - 1] += 1.0
            else:
                A[0, n - 1] -= 0.25
            out[k] += v.sum()
    return out


VIEW_KERNELS = [write_back_after_a_write, read_after_a_write, written_by_a_nested_loop,
                written_by_a_conditional, read_in_a_nested_loop,
                written_and_read_in_a_nested_loop, written_and_read_in_a_branch,
                written_in_a_branch_of_a_nested_loop]


@pytest.mark.parametrize("fn", VIEW_KERNELS, ids=lambda f: f.__name__)
def test_a_masked_slice_sees_writes_to_its_array_after_it_was_taken(fn):
    rng = np.random.default_rng(7)
    for n in (2, 9):
        same_as_numpy(fn, rng.random((3, n)))
    # Still a while loop over k (not unrolled, not refused).
    text = xla.jit(fn, unroll=False).lower(np.ones((3, 9))).as_hlo_text()
    assert while_bodies(text)


def test_a_masked_slice_of_an_array_a_nested_loop_rebinds_keeps_the_array():
    # B = B + 1 makes B a new array each iteration; v still views A (the
    # array B named when the loop started), which the loop never changes.
    # Both loops stay while loops (the nested one is traced again with v
    # reading A from before it).
    def kernel(A):
        n = A.shape[1]
        out = np.zeros(n)
        for k in range(n):
            v = A[0, k:]
            s = A[2, 0] * 0.0
            B = A
            for j in range(7):
                B = B + 1.0
                s = s + v.sum() + B[0, 0]
            out[k] = s
        return out

    rng = np.random.default_rng(9)
    for n in (2, 9):
        same_as_numpy(kernel, rng.random((3, n)))
    text = xla.jit(kernel, unroll=False).lower(np.ones((3, 9))).as_hlo_text()
    assert len(while_bodies(text)) == 2
