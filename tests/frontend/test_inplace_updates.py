"""In-place operators in jitted NumPy code keep NumPy's semantics: the
caller's array is updated (never a silent lost update), aliases see the
update, dtypes follow NumPy's 'same_kind' rule, and what cannot be kept
(updates through reshaped views, or of arrays with such live views) raises."""
import numpy as np
import pytest

import xla
from xla.errors import InvalidArgumentError, TracingError


def run_both(fn, *args):
    """(jitted result, jitted args after), (NumPy result, NumPy args after)."""
    ours_args = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    ref_args = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    return (xla.jit(fn)(*ours_args), ours_args), (fn(*ref_args), ref_args)


def test_augmented_assignment_to_an_argument_updates_the_callers_array():
    def step(x, y):
        x += y
        x *= 2
        x -= 1
        return x.sum()
    (ours, ours_args), (ref, ref_args) = run_both(step, np.ones(5, np.float32),
                                                  np.arange(5, dtype=np.float32))
    assert ours == ref
    np.testing.assert_array_equal(ours_args[0], ref_args[0])
    np.testing.assert_array_equal(ours_args[1], np.arange(5))


def test_updates_are_seen_through_aliases_and_in_pytrees():
    def f(params, lr):
        w = params["w"]          # the same array object
        w -= lr * params["g"]
        return params["w"] * 1
    params = {"w": np.ones(3), "g": np.arange(3.0)}
    out = xla.jit(f)(params, 0.5)
    np.testing.assert_array_equal(out, [1, 0.5, 0])
    np.testing.assert_array_equal(params["w"], [1, 0.5, 0])


def test_scalars_rebind_and_dtypes_follow_numpy():
    def f(x, n):
        n += 1                   # a Python int: rebinding, no caller effect
        x += n
        return n
    x = np.zeros(2, np.int32)
    assert int(xla.jit(f)(x, 1)) == 2
    np.testing.assert_array_equal(x, [2, 2])
    assert x.dtype == np.int32
    with pytest.raises(TracingError, match="cannot cast the result from float64 to int32"):
        xla.jit(lambda x: x.__iadd__(1.5))(np.zeros(2, np.int32))


def test_updates_through_slices_reach_the_array_as_in_numpy():
    def through_view(x):
        v = x[1:]
        v += 1               # NumPy updates x as well
        first = v[0] * 1
        del v
        x[0] += first        # x[idx] += v: its own view assigned back
        return x * 1
    (ours, ours_args), (ref, ref_args) = run_both(through_view, np.arange(4.0))
    np.testing.assert_array_equal(ours, ref)
    np.testing.assert_array_equal(ours_args[0], ref_args[0])


def test_what_numpy_would_do_differently_raises():
    def through_reshape(x):
        v = x.reshape(3, 1)
        v += 1               # NumPy would update x as well
        return x
    with pytest.raises(TracingError, match="updates a view of another traced array"):
        xla.jit(through_reshape)(np.zeros(3))

    def with_live_view(x):
        v = x.reshape(3, 1)
        x += 1               # NumPy's v would see this
        return v
    with pytest.raises(TracingError, match="has live views"):
        xla.jit(with_live_view)(np.zeros(3))

    read_only = np.zeros(3)
    read_only.flags.writeable = False

    def bump(x):
        x += 1
    with pytest.raises(InvalidArgumentError, match="read-only"):
        xla.jit(bump)(read_only)


def test_a_copy_is_not_a_view():
    def f(x):
        c = x[[0, 2]]        # advanced indexing copies
        c += 10
        return c
    x = np.arange(3.0)
    np.testing.assert_array_equal(xla.jit(f)(x), [10, 12])
    np.testing.assert_array_equal(x, [0, 1, 2])


def test_ufunc_at_is_unbuffered_and_updates_the_argument():
    def f(x, idx, v):
        np.add.at(x, idx, v)            # index 1 three times: all three apply
        np.subtract.at(x, [4, 4], 1.0)
        np.maximum.at(x, [0, 0], 100.0)
        return x.sum()

    idx, v = np.array([0, 1, 1, 3, 1]), np.arange(5.0)
    want_x = np.zeros(5)
    want = f(want_x, idx, v)
    got_x = np.zeros(5)
    got = xla.jit(f)(got_x, idx, v)
    assert float(got) == float(want)
    np.testing.assert_array_equal(got_x, want_x)   # the caller's array, updated as NumPy does
    np.testing.assert_array_equal(got_x, [100.0, 7.0, 0.0, 3.0, -2.0])


def test_ufunc_at_counts_into_an_array_made_inside():
    def counts(n):
        h = np.zeros(4)
        np.add.at(h, n % 4, 1.0)
        return h

    n = np.array([1, 2, 3, 5, 9, 2, 2])
    np.testing.assert_array_equal(xla.jit(counts)(n), counts(n))
    np.testing.assert_array_equal(counts(n), [0, 3, 3, 1])


def test_a_slice_read_after_its_array_was_written_sees_the_write():
    # Straight-line code (static bounds): v is a view that follows A
    # (test_static_views.py), so it sees the write through another index,
    # as NumPy's does (this used to raise).
    def write_back(A):
        v = A[0, 0:]
        v -= 1
        A[0, 0] = 5
        A[0, 0:] = v
        return A

    def read(A):
        v = A[0, 1:]
        A[0, 1] = 5
        return v.sum()

    for fn in (write_back, read):
        (ours, ours_args), (ref, ref_args) = run_both(fn, np.arange(12.0).reshape(3, 4))
        np.testing.assert_array_equal(ours, ref)
        np.testing.assert_array_equal(ours_args[0], ref_args[0])
    assert float(xla.jit(read)(np.arange(12.0).reshape(3, 4))) == 5 + 2 + 3


# ----- np.put, np.putmask, np.place, np.copyto: NumPy's functions that write in place -----

INPLACE_FUNCTIONS = {
    "put": lambda a, v: np.put(a, [0, -1, 5], v[:2]),
    "put_wrap": lambda a, v: np.put(a, np.array([13, -20, 2]), v[:3], mode="wrap"),
    "put_clip": lambda a, v: np.put(a, [100, -100], v[:2], mode="clip"),
    "put_scalar": lambda a, v: np.put(a, [1, 2, 3], 9),
    "putmask": lambda a, v: np.putmask(a, a > 3, v[:5]),
    "putmask_scalar": lambda a, v: np.putmask(a, a % 2 == 0, -1),
    "putmask_flat_mask": lambda a, v: np.putmask(a, np.arange(12) % 5 == 1, v[:4]),
    "place": lambda a, v: np.place(a, a > 2, v[:3]),
    "place_none_selected": lambda a, v: np.place(a, a > 100, v[:0]),
    "copyto": lambda a, v: np.copyto(a, v[:4]),
    "copyto_where": lambda a, v: np.copyto(a, v[:4], where=a > 5),
    "copyto_scalar": lambda a, v: np.copyto(a, 2, where=a < 4),
}


@pytest.mark.parametrize("case", sorted(INPLACE_FUNCTIONS))
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32])
def test_numpy_functions_that_write_in_place(case, dtype):
    f = INPLACE_FUNCTIONS[case]

    def g(a, v):
        assert f(a, v) is None
        return a + 0

    a = np.arange(12).reshape(3, 4).astype(dtype)
    v = (np.arange(10) * 1.5 - 4).astype(dtype)
    if case.startswith("copyto") and dtype == np.float32:
        v = v.astype(np.float32)
    (ours, ours_args), (ref, ref_args) = run_both(g, a, v)
    assert ours.dtype == ref.dtype
    np.testing.assert_array_equal(ours, ref)
    np.testing.assert_array_equal(ours_args[0], ref_args[0])     # the caller's array, as NumPy's


def test_in_place_functions_raise_as_numpy():
    with pytest.raises(TypeError, match="same_kind"):
        xla.jit(lambda a, v: np.copyto(a, v))(np.zeros(3, np.int32), np.ones(3))
    with pytest.raises(ValueError, match="Cannot insert from an empty array"):
        xla.jit(lambda a: np.place(a, a > 0, []))(np.ones(3))
    with pytest.raises(IndexError, match="index out of range"):
        xla.jit(lambda a, i: np.put(a, i, 1.0))(np.ones(3), np.array([3]))
    with pytest.raises(ValueError, match="same size"):
        xla.jit(lambda a: np.putmask(a, np.array([True, False]), 0.0))(np.ones(3))
    constant = np.zeros(3)
    with pytest.raises(TracingError, match="constant"):
        xla.jit(lambda v: np.putmask(constant, v > 0, v))(np.ones(3))
