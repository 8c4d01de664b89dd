"""Slices whose length depends on a loop index: ``x[:i]``, ``x[i + 1:]``,
``L[i, :i]`` inside a loop converted to an HLO while (control_flow.py).

Their shape is not static, but the loop index carries its range, so every
such slice lies inside one static window of the array (``x[lo:hi]``, from
the smallest start to the largest stop the index allows). A
``MaskedSlice`` is that window and the traced bounds: the elements outside
``[start, stop)`` are there but not part of the value. It supports exactly
what a triangular solve or a factorization does with such slices, each
computed as NumPy computes it:

- elementwise ufuncs with scalars or with other masked slices of the same
  bounds (a masked result);
- ``np.dot``/``@``/``np.inner``/``np.vdot`` contracting the masked axis of
  two slices with the same bounds (the elements outside are zeros in the
  products), or keeping it (a masked result); ``np.sum`` over it (zeros
  outside) and ``np.mean`` (divided by the traced length); ``np.flip`` of a
  1-D slice (the reversed window shifted into the same bounds);
- assignment into a slice with the same bounds (``x[:i] = v``,
  ``x[:i] -= s * y[:i]``): the window is written with the new values where
  the mask holds and its old ones elsewhere.

Anything else (its shape, ``len``, indexing it, a NumPy function not
listed, a comparison's truth value) is a TracingError, so the loop unrolls
(when its trip count is known) and the slice is an ordinary one again:
never a value computed over elements that are not in the slice.
"""
import operator
import sys

import numpy as np

from xla.errors import TracingError
from xla.frontend.tracing import (Tracer, as_tracer, current_builder, current_context,
                                  install_table, tracing_error)


def _bound_range(v, size):
    """(smallest, largest) value of a slice bound: an int (NumPy's negative
    wrap applied), or a Tracer that is a loop index plus an offset; None
    when it is unknown."""
    if v is None:
        return None
    if isinstance(v, Tracer):
        if v._affine is None:
            return None
        _, offset, lo, hi = v._affine
        return lo + offset, hi + offset
    k = int(v)
    if k < 0:
        k += size
    k = min(max(k, 0), size)
    return k, k


def masked_window(i, size):
    """For a slice ``i`` with a traced bound of a dimension of ``size``:
    ``(lo, hi, start, stop)``, the static window and the traced (or int)
    bounds, when the bounds stay inside ``[0, size]`` for every value of the
    loop index (so NumPy neither wraps nor clips them); None otherwise."""
    if not isinstance(i, slice) or not (isinstance(i.start, Tracer) or isinstance(i.stop, Tracer)):
        return None
    if i.step is not None and (isinstance(i.step, Tracer) or int(i.step) != 1):
        return None
    start = 0 if i.start is None else i.start
    stop = size if i.stop is None else i.stop
    rs, re = _bound_range(start, size), _bound_range(stop, size)
    # A traced bound that can be negative would wrap around in NumPy
    # (x[:i - 1] at i = 0 is x[:-1]); one past the end would be clipped.
    if rs is None or re is None or rs[0] < 0 or re[0] < 0 or re[1] > size:
        return None
    lo, hi = rs[0], max(re[1], rs[0])
    if isinstance(start, int) and start < 0:
        start += size
    if isinstance(stop, int) and stop < 0:
        stop += size
    return lo, hi, start, stop


def _same_bound(a, b):
    if isinstance(a, Tracer) or isinstance(b, Tracer):
        if not (isinstance(a, Tracer) and isinstance(b, Tracer)):
            return False
        return a is b or (a._affine is not None and b._affine is not None and
                          a._affine[0] is b._affine[0] and a._affine[1] == b._affine[1])
    return int(a) == int(b)


def _same_index(a, b):
    return len(a) == len(b) and all(
        (x is y) or (isinstance(x, slice) and isinstance(y, slice)
                     and all(_same_bound(p, q) if p is not None and q is not None else p is q
                             for p, q in ((x.start, y.start), (x.stop, y.stop), (x.step, y.step))))
        or (not isinstance(x, (slice, Tracer)) and not isinstance(y, (slice, Tracer))
            and x is not None and y is not None and int(x) == int(y))
        for x, y in zip(a, b))


def _refuse(what):
    return tracing_error(f"{what} of a slice whose length depends on the loop index (x[:i]) is not "
                         "supported inside a compiled loop; the loop is unrolled instead")


class MaskedSlice:
    """A window of an array with traced bounds along one axis (see the module
    docstring). ``data``: the window (a Tracer); ``axis``: the masked axis
    of ``data``; ``lo``: the window's first position in the array;
    ``start``/``stop``: the slice's bounds (array positions)."""

    __slots__ = ("_data", "_read", "axis", "lo", "start", "stop", "base", "index", "window",
                 "written")
    _xla_masked = True     # Tracers' operators and NumPy protocols defer to it

    def __init__(self, data, axis, lo, start, stop, base=None, index=None, window=None):
        self.base, self.index = base, index    # where it came from (in-place updates go there)
        self.window = window                   # the static index of the window in ``base``
        self.written = None                    # ``base``'s op right after an in-place update wrote it
        self.data, self.axis, self.lo, self.start, self.stop = data, axis, lo, start, stop

    # -- a view: its values are its array's, as they are when it is used ---------------
    def array(self):
        """The array the slice views, as it is in the current trace: ``base``,
        or the parameter standing for it in a loop or branch body traced
        since (TraceContext.current_array)."""
        return current_context().current_array(self.base)

    @property
    def data(self):
        """The window's values. A slice taken from an array (``base``) is a
        NumPy view: when the array was written after its values were read
        (``x[0] = 5`` after ``v = x[k:]``: the array's op is then another
        one), they are read again from the array, so ``v`` sees the write as
        in NumPy; in a nested loop or branch body, from the parameter that
        stands for the array there. A read of an array of an enclosing
        trace is not kept: the next use reads again."""
        if self.base is None:
            return self._data
        array = self.array()
        if array.op is self._read:
            return self._data
        from xla.frontend import indexing
        data = indexing.getitem(array, tuple(self.window))
        if array.op.builder is current_builder():
            self._data, self._read = data, array.op
        return data

    @data.setter
    def data(self, value):
        # Values of the array as it is now (the slice's own in-place update
        # writes them there first).
        self._data = value
        self._read = None if self.base is None else self.array().op

    # -- what it is ---------------------------------------------------------------------
    def mask(self):
        """Where the slice's elements are: a bool Tracer of ``data``'s shape."""
        b = current_builder()
        pos = Tracer(b.iota(np.int64, self.data.shape, self.axis)) + self.lo
        inside = (pos >= as_tracer(self.start)) & (pos < as_tracer(self.stop))
        return inside

    def filled(self, value):
        return np.where(self.mask(), self.data, np.asarray(value, self.data.dtype))

    def length(self):
        return np.maximum(as_tracer(self.stop) - as_tracer(self.start), 0)

    def same_bounds(self, other):
        return (isinstance(other, MaskedSlice) and other.axis == self.axis and other.lo == self.lo
                and other.data.shape[other.axis] == self.data.shape[self.axis]
                and _same_bound(self.start, other.start) and _same_bound(self.stop, other.stop))

    def _like(self, data):
        return MaskedSlice(data, self.axis, self.lo, self.start, self.stop)

    @property
    def dtype(self):
        return self.data.dtype

    @property
    def ndim(self):
        return self.data.ndim

    # -- everything not listed is refused -----------------------------------------------
    @property
    def shape(self):
        raise _refuse("the shape")

    def __len__(self):
        raise _refuse("len()")

    def __iter__(self):
        raise _refuse("iterating")

    def __getitem__(self, index):
        raise _refuse("indexing")

    def __setitem__(self, index, value):
        raise _refuse("assigning into")

    def __bool__(self):
        raise _refuse("the truth value")

    def __array__(self, dtype=None, copy=None):
        raise _refuse("conversion to an array")

    def __getattr__(self, name):
        raise _refuse(f"the attribute .{name}")

    # -- elementwise ----------------------------------------------------------------------
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method != "__call__" or kwargs or ufunc.nout != 1:
            raise _refuse(f"np.{ufunc.__name__}.{method}" if method != "__call__"
                          else f"np.{ufunc.__name__} with keywords")
        if ufunc is np.matmul:
            return _dot(*inputs)
        masked = [x for x in inputs if isinstance(x, MaskedSlice)]
        if not all(m.same_bounds(masked[0]) for m in masked[1:]):
            raise _refuse("combining slices of different bounds")
        args = []
        for x in inputs:
            if isinstance(x, MaskedSlice):
                args.append(x.data)
            elif np.ndim(x) == 0:
                args.append(x)
            else:
                raise _refuse(f"np.{ufunc.__name__} with an array")
        return masked[0]._like(ufunc(*args))

    def _binary(name, reflected=False):
        def op(self, other):
            ufunc = getattr(np, name)
            return self.__array_ufunc__(ufunc, "__call__", *((other, self) if reflected else (self, other)))
        return op

    __add__, __radd__ = _binary("add"), _binary("add", True)
    __sub__, __rsub__ = _binary("subtract"), _binary("subtract", True)
    __mul__, __rmul__ = _binary("multiply"), _binary("multiply", True)
    __truediv__, __rtruediv__ = _binary("true_divide"), _binary("true_divide", True)
    __pow__, __rpow__ = _binary("power"), _binary("power", True)

    def __neg__(self):
        return self._like(-self.data)

    def __abs__(self):
        return self._like(abs(self.data))

    def __matmul__(self, other):
        return _dot(self, other)

    def __rmatmul__(self, other):
        return _dot(other, self)

    def _inplace(name):
        def op(self, other):
            # A NumPy view: the array it came from is updated too. Python
            # then assigns it again (x[:i] += v is x[:i] = x[:i].__iadd__(v)),
            # the same values: ``written`` lets masked_update skip that write.
            result = getattr(self, f"__{name}__")(other)
            if self.base is None:
                raise _refuse("updating in place")
            array = self.array()
            array[self.index] = result
            self.data = result.data
            self.written = array.op
            return self
        return op

    __iadd__, __isub__ = _inplace("add"), _inplace("sub")
    __imul__, __itruediv__ = _inplace("mul"), _inplace("truediv")

    # -- NumPy functions --------------------------------------------------------------------
    def __array_function__(self, func, types, args, kwargs):
        if func in (np.dot, np.matmul, np.inner, np.vdot) and len(args) == 2 and not kwargs:
            a, b = args
            if func in (np.inner, np.vdot) and any(np.ndim(x.data if isinstance(x, MaskedSlice) else x)
                                                   != 1 for x in (a, b)):
                raise _refuse(f"np.{func.__name__} of more than one dimension")
            if func is np.vdot:
                a = np.conj(a)
            return _dot(a, b)
        if func is np.flip and len(args) == 1 and (not kwargs or kwargs == {"axis": None} and
                                                   args[0].ndim == 1):
            if args[0].ndim != 1:
                raise _refuse("np.flip of more than one dimension")
            return args[0]._flipped()
        if func in (np.sum, np.mean) and len(args) == 1 and set(kwargs) <= {"axis"}:
            return args[0]._reduce(func, kwargs.get("axis"))
        raise _refuse(f"np.{getattr(func, '__name__', func)}")

    def _reduce(self, func, axis):
        if axis is not None and operator.index(axis) % self.ndim != self.axis:
            raise _refuse(f"np.{func.__name__} along another axis")
        total = np.sum(self.filled(0), axis=axis)
        if func is np.sum:
            return total
        count = self.length()
        if axis is None:
            count = count * int(np.prod([d for k, d in enumerate(self.data.shape) if k != self.axis]))
        return total / count.astype(total.dtype if total.dtype.kind in "fc" else np.float64)

    def _flipped(self):
        """``np.flip`` of a 1-D slice: the same bounds, element ``p`` of the
        window holding the array's ``start + stop - 1 - p``: the reversed
        window shifted by ``extent - (start - lo) - (stop - lo)`` (zeros
        around it, where the mask holds nothing)."""
        extent = self.data.shape[0]
        rev = np.flip(self.data)
        zeros = np.zeros(extent, self.data.dtype)
        padded = np.concatenate([zeros, rev, zeros])
        start, stop = as_tracer(self.start), as_tracer(self.stop)
        offset = extent - (start - self.lo) - (stop - self.lo)
        from xla.frontend import lax
        shifted = lax.dynamic_slice(padded, (offset + extent,), (extent,))
        return self._like(shifted)

    def sum(self, axis=None):
        return self._reduce(np.sum, axis)

    def mean(self, axis=None):
        return self._reduce(np.mean, axis)

    def dot(self, other):
        return _dot(self, other)

    def _compare(name):
        def op(self, other):
            return self.__array_ufunc__(getattr(np, name), "__call__", self, other)
        return op

    __lt__, __le__ = _compare("less"), _compare("less_equal")
    __gt__, __ge__ = _compare("greater"), _compare("greater_equal")
    __eq__, __ne__ = _compare("equal"), _compare("not_equal")
    __hash__ = None


def _dot(a, b):
    """``a @ b`` (ranks 1 and 2) with masked operands."""
    ma, mb = isinstance(a, MaskedSlice), isinstance(b, MaskedSlice)
    da, db = (a.data if ma else as_tracer(a)), (b.data if mb else as_tracer(b))
    if da.ndim > 2 or db.ndim > 2 or da.ndim == 0 or db.ndim == 0:
        raise _refuse("a product of these ranks")
    ka, kb = da.ndim - 1, 0           # the contracted axes
    a_contracted = ma and a.axis == ka
    b_contracted = mb and b.axis == kb
    if a_contracted or b_contracted:
        if not (a_contracted and b_contracted and a.same_bounds(b) if ma and mb else False):
            raise _refuse("a product contracting a slice with another array")
        return np.matmul(a.filled(0), b.filled(0))
    out = np.matmul(da, db)
    if ma:     # a's masked axis is its rows: the result's axis 0
        return MaskedSlice(out, 0, a.lo, a.start, a.stop)
    if mb:     # b's masked axis is its columns: the result's last axis
        return MaskedSlice(out, out.ndim - 1, b.lo, b.start, b.stop)
    return out


def masked_getitem(t, idx):
    """``t[idx]`` for an expanded basic index with one slice whose bounds are
    traced and whose length is not static: a MaskedSlice, or None when the
    index is not of that kind (TracingError when it has such a slice that
    cannot be masked)."""
    from xla.frontend import indexing
    found = None
    dim = 0
    out_axis = 0
    for k, i in enumerate(idx):
        if i is None:
            out_axis += 1
            continue
        if isinstance(i, slice) and (isinstance(i.start, Tracer) or isinstance(i.stop, Tracer)):
            try:
                if indexing._traced_slice(i, t.shape[dim], dim) is not None:
                    dim += 1
                    out_axis += 1
                    continue
            except TracingError:
                pass
            window = masked_window(i, t.shape[dim])
            if window is None or found is not None:
                return None
            found = (k, out_axis, window)
        if isinstance(i, slice):
            out_axis += 1
        dim += 1
    if found is None:
        return None
    k, axis, (lo, hi, start, stop) = found
    static = list(idx)
    static[k] = slice(lo, hi)
    data = indexing.getitem(t, tuple(static))
    return MaskedSlice(data, axis, lo, start, stop, base=t, index=tuple(idx), window=static)


def masked_update(t, idx, values, how):
    """``t[idx] = values`` (``how`` "set", or a combiner) for an index with a
    maskable slice: the window's old values where the mask does not hold.
    None when the index has no such slice."""
    from xla.frontend import indexing
    target = masked_getitem(t, idx)
    if target is None:
        return None
    if (how == "set" and isinstance(values, MaskedSlice) and values.base is not None
            and values.array() is t and values.written is t.op
            and _same_index(values.index, target.index)):
        # ``x[:i] op= v``'s assignment of the view its in-place update has
        # just written into ``t`` (unchanged since): the values are there.
        return t
    if isinstance(values, MaskedSlice):
        if not values.same_bounds(target):
            raise _refuse("assigning a slice of other bounds")
        new = values.data
    elif np.ndim(values) == 0:
        new = np.broadcast_to(as_tracer(values), target.data.shape)
    else:
        raise _refuse("assigning an array")
    old = target.data
    if how != "set":
        combine = {"add": np.add, "multiply": np.multiply, "min": np.minimum, "max": np.maximum}
        new = combine[how](old, new)
    if new.dtype != old.dtype:
        new = new.astype(old.dtype)
    merged = np.where(target.mask(), new, old)
    return indexing._update_basic(t, target.window, merged, "set")


install_table("masked_slice", sys.modules[__name__])
