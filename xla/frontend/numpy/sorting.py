"""Sorting, searching and index-producing reductions: ``np.sort`` and
``np.argsort`` through ``xla.lax.sort`` (complex numbers in NumPy's
lexicographic order), ``np.argmax``/``np.argmin`` as a variadic reduce,
``np.searchsorted`` by compare-and-count."""
import numpy as np

from xla.errors import ShapeError
from xla.frontend import lax
from xla.frontend.numpy._common import check_no_out, implements, normalize_axis
from xla.frontend.numpy.elementwise import imag, real
from xla.frontend.numpy.indexing_routines import take
from xla.frontend.numpy.manipulation import expand_dims, flip, ravel
from xla.frontend.numpy.reductions import reduction_identity, replace_nan, sum
from xla.frontend.tracing import (Tracer, as_tracer, broadcast_arrays, convert,
                                  result_type)


# ----- index-producing reductions ---------------------------------------------------------

def _strictly_better(direction, complex_):
    """x > y (direction "GT") or x < y ("LT"); complex numbers in NumPy's
    lexicographic order (real part first), which lax's comparisons refuse."""
    strict = lax.gt if direction == "GT" else lax.lt
    if not complex_:
        return strict

    def better(x, y):
        xr, xi, yr, yi = lax.real(x), lax.imag(x), lax.real(y), lax.imag(y)
        return lax.bitwise_or(strict(xr, yr), lax.bitwise_and(lax.eq(xr, yr), strict(xi, yi)))
    return better


def _arg_reducer(dtype, direction):
    """The reducer of (value, index) pairs: the better value, or on a tie the
    first index; NaN beats numbers and, between NaNs, the first index wins."""
    better_than = _strictly_better(direction, dtype.kind == "c")

    def reducer(acc, x):
        (av, ai), (xv, xi) = acc, x
        better = better_than(xv, av)
        same = lax.eq(xv, av)
        if dtype.kind in "fc":
            x_nan = lax.ne(xv, xv)
            a_nan = lax.ne(av, av)
            better = lax.bitwise_or(lax.bitwise_and(x_nan, lax.bitwise_not(a_nan)),
                                    lax.bitwise_and(better, lax.bitwise_not(a_nan)))
            same = lax.bitwise_or(same, lax.bitwise_and(x_nan, a_nan))
        take_x = lax.bitwise_or(better, lax.bitwise_and(same, lax.lt(xi, ai)))
        return lax.select(take_x, xv, av), lax.select(take_x, xi, ai)
    return reducer


def _arg_reduce(a, axis, keepdims, direction):
    """argmax/argmax as a variadic reduce over (value, index); the first
    index wins ties and NaN wins everything, as in NumPy."""
    a = as_tracer(a)
    if axis is None:
        a = ravel(a)
        axis = 0
    axis = normalize_axis(axis, a.ndim)
    if a.shape[axis] == 0:
        raise ShapeError(f"attempt to get arg{'max' if direction == 'GT' else 'min'} of an empty sequence")
    idx = lax.broadcasted_iota(np.int64, a.shape, axis)
    if a.dtype.kind == "c":
        inf = -np.inf if direction == "GT" else np.inf
        init_v = np.asarray(complex(inf, inf), a.dtype)
    else:
        init_v = reduction_identity("maximum" if direction == "GT" else "minimum", a.dtype)
    # The largest index, so that any element equal to the init value wins the tie.
    init_i = np.int64(np.iinfo(np.int64).max)
    _, t = lax.reduce((a, idx), (init_v, init_i), _arg_reducer(a.dtype, direction), (axis,))
    if keepdims:
        t = expand_dims(t, axis)
    return t


@implements(np.argmax)
def argmax(a, axis=None, out=None, *, keepdims=False):
    check_no_out("argmax", out)
    return _arg_reduce(a, axis, keepdims, "GT")


@implements(np.argmin)
def argmin(a, axis=None, out=None, *, keepdims=False):
    check_no_out("argmin", out)
    return _arg_reduce(a, axis, keepdims, "LT")


@implements(np.nanargmax)
def nanargmax(a, axis=None, out=None, *, keepdims=False):
    """NaNs are skipped; an all-NaN slice gives index 0 (NumPy raises)."""
    return argmax(replace_nan(a, -np.inf), axis=axis, out=out, keepdims=keepdims)


@implements(np.nanargmin)
def nanargmin(a, axis=None, out=None, *, keepdims=False):
    """NaNs are skipped; an all-NaN slice gives index 0 (NumPy raises)."""
    return argmin(replace_nan(a, np.inf), axis=axis, out=out, keepdims=keepdims)


# ----- sorting ----------------------------------------------------------------------------

@implements(np.sort)
def sort(a, axis=-1, kind=None, order=None, *, stable=None):
    a = as_tracer(a)
    if axis is None:
        a, axis = ravel(a), 0
    if a.ndim == 0:
        raise ShapeError("Cannot sort a 0-d array")
    axis = normalize_axis(axis, a.ndim)
    if a.dtype.kind == "c":   # NumPy orders complex numbers lexicographically
        return lax.sort((real(a), imag(a), a), dimension=axis, num_keys=2)[2]
    return lax.sort(a, dimension=axis)


@implements(np.argsort)
def argsort(a, axis=-1, kind=None, order=None, *, stable=None):
    a = as_tracer(a)
    if axis is None:
        a, axis = ravel(a), 0
    axis = normalize_axis(axis, a.ndim)
    idx = lax.broadcasted_iota(np.int64, a.shape, axis)
    if a.dtype.kind == "c":
        return lax.sort((real(a), imag(a), idx), dimension=axis, is_stable=True, num_keys=2)[2]
    return lax.sort((a, idx), dimension=axis, is_stable=True, num_keys=1)[1]


@implements(np.partition)
def partition(a, kth, axis=-1, kind="introselect", order=None):
    """A full sort, which is one valid partition (NumPy leaves the order
    within each side unspecified)."""
    return sort(a, axis=axis)


@implements(np.argpartition)
def argpartition(a, kth, axis=-1, kind="introselect", order=None):
    return argsort(a, axis=axis)


@implements(np.lexsort)
def lexsort(keys, axis=-1):
    ks = [as_tracer(k) for k in keys] if not isinstance(keys, Tracer) else \
        [keys[i] for i in range(keys.shape[0])]
    ks = broadcast_arrays(*ks)
    axis = normalize_axis(axis, ks[0].ndim)
    idx = lax.broadcasted_iota(np.int64, ks[0].shape, axis)
    out = lax.sort(tuple(reversed(ks)) + (idx,), dimension=axis, is_stable=True, num_keys=len(ks))
    return out[-1]


# ----- searching --------------------------------------------------------------------------

@implements(np.searchsorted)
def searchsorted(a, v, side="left", sorter=None):
    a = as_tracer(a)
    if sorter is not None:
        a = take(a, sorter)
    v = as_tracer(v)
    dt = result_type(a, v)
    a, v = convert(a, dt), convert(v, dt)
    va = expand_dims(v, -1)
    cmp = np.less(a, va) if side == "left" else np.less_equal(a, va)
    return sum(cmp, axis=-1, dtype=np.int64)


@implements(np.digitize)
def digitize(x, bins, right=False):
    """Bins must be monotonic; NumPy checks, and so do we when they are a
    NumPy array (traced bins are taken as increasing)."""
    if isinstance(bins, Tracer):
        increasing = True
    else:
        bins_np = np.asarray(bins)
        d = np.diff(bins_np)
        if np.all(d >= 0):
            increasing = True
        elif np.all(d <= 0):
            increasing = False
        else:
            raise ValueError("bins must be monotonically increasing or decreasing")
    side = "left" if right else "right"
    if increasing:
        return searchsorted(bins, x, side=side)
    b = flip(as_tracer(bins))
    return np.subtract(b.shape[0], searchsorted(b, x, side=side))


@implements(np.sort_complex)
def sort_complex(a):
    """Sorted by real part, then imaginary part, as complex: complex64 for
    the 8- and 16-bit integers, complex128 for other real types."""
    b = sort(as_tracer(a))
    if b.dtype.kind != "c":
        b = convert(b, np.complex64 if b.dtype.char in "bhBH" else np.complex128)
    return b
