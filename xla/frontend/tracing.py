"""Traced values: NumPy code runs on ``Tracer`` objects and records HLO.

A ``Tracer`` stands for an array inside a function being traced. It has a
static ``shape`` and ``dtype`` and no value; every operation on it appends an
instruction to the ``XlaBuilder`` of the trace it belongs to. NumPy's own
dispatch protocols route ``np.exp(t)``, ``t + 1``, ``np.sum(t, axis=0)`` to
the tables in ``xla.frontend.ufuncs`` (``__array_ufunc__``) and
``xla.frontend.numpy`` (``__array_function__``), so unmodified NumPy code
traces.

Dtypes follow NumPy 2 exactly: ufunc loops are chosen with
``ufunc.resolve_dtypes`` and everything else with ``np.result_type``. A
Python scalar is *weak* (NEP 50): ``float32_array * 2.0`` stays float32. A
Tracer made from a Python scalar argument is weak too.

Traces nest (loop bodies, branches): their contexts, the user's file and
line in errors and the dispatch tables are ``xla.frontend.trace_context``'s.
"""
import operator

import numpy as np

from xla.errors import ShapeError, TracingError
from xla.frontend.builder import XlaOp, element_type
# install_table: for the modules that may import only this one (the numpy
# package, ufuncs and indexing: tests/frontend/test_numpy_on_lax.py).
from xla.frontend.trace_context import (current_builder, current_context,  # noqa: F401
                                        install_table, table, tracing_error)
from xla.hlo.opcodes import ELEMENTWISE
from xla.hlo.shape import Shape

# Python scalars are weakly typed (NEP 50); NumPy scalars (np.float64 is a
# float subclass) are not.
PYTHON_SCALARS = (bool, int, float, complex)


# ----- values --------------------------------------------------------------------

def _pytype_of(dtype):
    """The weak Python scalar type standing for ``dtype`` in promotion."""
    kind = dtype.kind
    if kind == "b":
        return bool
    if kind in "iu":
        return int
    if kind == "f":
        return float
    return complex


# The operators whose result for an int ``i`` and an int ``m`` depends only
# on ``i`` modulo the modulus given here (0: no such modulus): ``i % m``,
# and ``i & m`` for a mask m = 2**k - 1 (Python's ints are two's complement).
_MODULAR = {
    "remainder": (operator.mod, lambda m: m),
    "bitwise_and": (operator.and_, lambda m: m + 1 if m > 0 and m & (m + 1) == 0 else 0),
}


class Tracer:
    """An array being traced: static shape and dtype, value unknown."""

    __slots__ = ("op", "weak", "_base", "_views", "_follow", "_followers",
                 "_affine", "_residue", "_moduli", "__weakref__")
    __array_priority__ = 1000

    def __init__(self, op, weak=False):
        assert isinstance(op, XlaOp)
        self.op = op
        self.weak = weak
        # The array this one is a view of that cannot follow it (a reshape,
        # a transpose: see _mark_view), and such views of this array.
        self._base = None
        self._views = None        # weak references
        # [array, index, array's op when this was last read from it or
        # written into it]: a view taken by basic indexing (``x[1:]``,
        # ``x[i]`` with a traced ``i``) that follows its array (see
        # _mark_follower).
        self._follow = None
        self._followers = None    # weak references to the views that follow this array
        # (base, offset, lo, hi): this integer scalar is base + offset, where
        # base is a loop index known to lie in [lo, hi] (control_flow.py), so
        # x[i:i + w] has a static size and stays inside x (indexing.py).
        self._affine = None
        # (c, r): this loop index (or offset of one) is r modulo c, in a loop
        # body unrolled by c (control_flow.py), so ``i % c`` is the Python int r.
        self._residue = None
        # On a loop index, the set of the moduli ``i % c`` the body took of it
        # (or of an offset of it): the loop can be unrolled by them.
        self._moduli = None
        # Under xla.autojit the builder tracks its live values (a cut
        # computes them); it is None otherwise.
        live = op.builder.live_tracers
        if live is not None:
            live[id(self)] = self

    def _session(self):
        """The autojit session that may run this value eagerly, or None."""
        ctx = current_context(required=False)
        session = getattr(ctx, "autojit", None)
        if session is not None and self.op.builder is ctx.builder:
            return session
        return None

    # ----- static facts ---------------------------------------------------------
    @property
    def shape(self):
        return self.op.dims

    @property
    def dtype(self):
        return self.op.dtype

    @property
    def ndim(self):
        return len(self.op.dims)

    @property
    def size(self):
        n = 1
        for d in self.op.dims:
            n *= d
        return n

    @property
    def itemsize(self):
        return self.dtype.itemsize

    @property
    def nbytes(self):
        return self.size * self.dtype.itemsize

    @property
    def T(self):
        return np.transpose(self)

    @property
    def mT(self):
        return np.swapaxes(self, -1, -2)

    @property
    def real(self):
        return np.real(self)

    @property
    def imag(self):
        return np.imag(self)

    @property
    def promotion_type(self):
        """What NumPy's promotion sees: a dtype, or a Python type when weak."""
        return _pytype_of(self.dtype) if self.weak else self.dtype

    def __repr__(self):
        weak = ", weak" if self.weak else ""
        return f"Tracer({self.dtype}{list(self.shape)}{weak})"

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of a 0-d traced array")
        return self.shape[0]

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d traced array")
        return (self[i] for i in range(self.shape[0]))

    def __hash__(self):
        raise TypeError("traced arrays are unhashable")

    # ----- concretization: what must-compile forbids ------------------------------
    def __bool__(self):
        session = self._session()
        if session is not None:
            return bool(session.value_of(self, "bool() of a traced value (a Python branch)"))
        raise tracing_error(
            "the truth value of a traced array is not known while compiling (a Python `if`, "
            "`while`, `and`/`or` or assert on a traced value); use xla.lax.cond / xla.lax.switch "
            "for branches, xla.lax.while_loop / fori_loop for loops, or np.where to select values")

    def _concrete(self, what):
        session = self._session()
        if session is not None:
            return session.value_of(self, what)
        raise tracing_error(
            f"{what} of a traced array needs its value, which is not known while compiling; "
            "keep it an array, or pass the value as a static argument (static_argnums/static_argnames)")

    def __int__(self):
        return int(self._concrete("int()"))

    def __float__(self):
        return float(self._concrete("float()"))

    def __complex__(self):
        return complex(self._concrete("complex()"))

    def __index__(self):
        return operator.index(self._concrete("using as an index (operator.index)"))

    def item(self, *args):
        return self._concrete(".item()").item(*args)

    def tolist(self):
        return self._concrete(".tolist()").tolist()

    def __array__(self, dtype=None, copy=None):
        value = self._concrete("np.asarray()/np.array() (conversion to a NumPy array)")
        return value if dtype is None else value.astype(dtype)

    # ----- in-place operators: x += y updates the array itself, as NumPy does ---
    def _assign(self, value, what, keep=None):
        """Makes ``value`` this array's new value, as NumPy's in-place ops
        write into an array: same shape, cast with NumPy's 'same_kind'
        rule. Every name bound to this array sees the update (it is the same
        object); a jitted function's argument updated this way is written
        back into the caller's array. A view taken by basic indexing
        (``v = x[1:]``, ``x[i]``; a view of one, ``v[::2]``) follows its
        array both ways, as in NumPy: its update is passed on to the array,
        and an update of the array makes it read the array again
        (_mark_follower). Other views (a reshape, a transpose) cannot, so
        updating them in place, or updating an array while such views of it
        are alive, raises instead of computing something NumPy would not.
        ``keep``: a view that stays consistent with this update (the view
        whose own update this is)."""
        value = as_tracer(value)
        ctx = current_context()
        if self.op.builder is not ctx.builder:
            raise tracing_error(f"{what}: updates in place a value from outside this loop or branch "
                                "body; carry it through the loop state (or return it) instead")
        if value.shape != self.shape:
            raise tracing_error(f"{what}: the result's shape {value.shape} cannot be written into "
                                f"an array of shape {self.shape} (non-broadcastable output operand)")
        if value.dtype != self.dtype:
            if not np.can_cast(value.dtype, self.dtype, casting="same_kind"):
                raise tracing_error(f"{what}: cannot cast the result from {value.dtype} to "
                                    f"{self.dtype} with casting rule 'same_kind' (as NumPy)")
            value = convert(value, self.dtype)
        if self._follow is not None:
            self._check_no_live_views(what, keep)
            array, index = self._follow[0], self._follow[1]
            array._assign(table("indexing").AtIndexer(array)[index].set(value), what, keep=self)
            self.op = value.op
            self._follow[2] = array.op
            self._refresh_followers(what, keep)
            return self
        if self._base is not None:
            raise tracing_error(f"{what}: updates a view of another traced array (a reshape or "
                                "transpose) in place; NumPy would update the original too, which "
                                "is not supported for such views here: update the original "
                                "(x[idx] += v) or copy the view first")
        self._check_no_live_views(what, keep)
        self.op = value.op
        self._refresh_followers(what, keep)
        return self

    def _check_no_live_views(self, what, keep=None):
        live = [r() for r in (self._views or ()) if r() is not None and r() is not keep]
        if live:
            raise tracing_error(f"{what}: updates in place an array that has live views that "
                                "cannot follow it (reshapes or transposes of it or of a slice of "
                                "it), which NumPy would update too; this is not supported here: "
                                "take the views after the update, or copy them")

    def _refresh_followers(self, what, keep=None):
        """After an update in place: the views that follow this array
        (``v = x[1:]``, ``x[i]``) read it again, and so do the views that
        follow them (``v[:3]``), so they see the update as NumPy's views do
        (a slice each, only for views still alive). Their other views (a
        reshape) cannot, and raise as views of an updated array do. Views of
        another trace (a body's) cannot be used here and are left alone."""
        if not self._followers:
            return
        getitem = table("indexing").getitem
        alive = [r for r in self._followers if r() is not None]
        self._followers = alive
        for r in alive:
            view = r()
            if view is None or view is keep or view.op.builder is not self.op.builder:
                continue
            view._check_no_live_views(what)
            view.op = getitem(self, view._follow[1]).op
            view._follow[2] = self.op
            view._refresh_followers(what)

    def _inplace(name, symbol):
        def op(self, other):
            value = table("ufuncs").dispatch(getattr(np, name), "__call__", (self, other), {})
            if self.weak and self.shape == ():
                # A weak scalar stands for a Python int or float (a loop
                # index, a scalar argument), which is immutable: ``j += 1``
                # rebinds ``j`` and leaves every other name (``i`` after
                # ``j = i``) as it was.
                return value
            return self._assign(value, f"x {symbol}= ...")
        op.__name__ = f"__i{name}__"
        return op

    __iadd__ = _inplace("add", "+")
    __isub__ = _inplace("subtract", "-")
    __imul__ = _inplace("multiply", "*")
    __itruediv__ = _inplace("true_divide", "/")
    __ifloordiv__ = _inplace("floor_divide", "//")
    __imod__ = _inplace("remainder", "%")
    __ipow__ = _inplace("power", "**")
    __iand__ = _inplace("bitwise_and", "&")
    __ior__ = _inplace("bitwise_or", "|")
    __ixor__ = _inplace("bitwise_xor", "^")
    __ilshift__ = _inplace("left_shift", "<<")
    __irshift__ = _inplace("right_shift", ">>")
    __imatmul__ = _inplace("matmul", "@")
    del _inplace

    def _mark_view(self, view):
        """Records that ``view`` is a NumPy view of this array that cannot
        follow its updates (a reshape, a transpose): updating either while
        the view is alive raises (_assign)."""
        if isinstance(view, Tracer) and view is not self:
            base = self._base if self._base is not None else self
            view._base = base
            if base._views is None:
                base._views = []
            import weakref
            base._views.append(weakref.ref(view))
        return view

    def _mark_follower(self, view, index):
        """Records that ``view`` is this array viewed through ``index``, a
        basic index (``x[1:]``, ``x[:, 3]``, ``x[..., ::2]``, or with a
        traced integer: ``x[i]``, ``x[i, 2:5]``), which NumPy's view would
        follow: updating ``view`` in place updates this array, and updating
        this array makes ``view`` read it again. Its views by basic
        indexing follow it in turn; its other views (a reshape) cannot, and
        raise as the views of any array do."""
        if isinstance(view, Tracer) and view is not self:
            import weakref
            view._follow = [self, index, self.op]
            if self._followers is None:
                self._followers = []
            self._followers.append(weakref.ref(view))
        return view

    def static_view_of(self):
        """(array, indices) where this array is ``array[indices[0]][indices[1]]...``
        by basic indexing with Python ints and slices only (``x[1:]``,
        ``x[1:][::2]``), each view reading the current value of the array
        it follows (_mark_follower): NumPy's view of ``array`` through the
        same indices has this array's values. None otherwise."""
        if self._follow is None:
            return None
        indices, t = [], self
        while t._follow is not None:
            base, index, base_op = t._follow
            if base_op is not base.op or not _static_basic_index(index):
                return None
            indices.append(index)
            t = base
        return t, tuple(reversed(indices))

    def __setitem__(self, index, value):
        """``x[idx] = v`` as in NumPy: the array is updated (functionally, a
        dynamic-update-slice or scatter, through ``x.at[idx].set(v)``)."""
        indexing = table("indexing")
        follow = value._follow if isinstance(value, Tracer) else None
        if follow is not None and follow[0] is self and follow[2] is self.op and \
                _same_index(follow[1], index):
            # ``x[i] op= v``'s assignment of the row its in-place update has
            # just written into x (unchanged since): the values are there.
            return
        masked = _mask_assignment(self, index, value)
        if masked is not None:
            self._assign(masked, "x[mask] = v")
            return
        new = indexing.AtIndexer(self)[index].set(value)
        self._assign(new, "x[idx] = v")

    # ----- NumPy dispatch -------------------------------------------------------
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if any(getattr(type(x), "_xla_masked", False) for x in inputs):
            return NotImplemented         # the masked slice's own __array_ufunc__ decides
        ufuncs = table("ufuncs")
        session = self._session()
        if session is None:
            return ufuncs.dispatch(ufunc, method, inputs, kwargs)
        try:
            return ufuncs.dispatch(ufunc, method, inputs, dict(kwargs))
        except TracingError as e:
            return session.eager(getattr(ufunc, method) if method != "__call__" else ufunc,
                                 inputs, kwargs, f"np.{ufunc.__name__}", why=str(e))

    def __array_function__(self, func, types, args, kwargs):
        if any(getattr(t, "_xla_masked", False) for t in types):
            return NotImplemented         # the masked slice's own __array_function__ decides
        numpy_functions = table("numpy")
        impl = numpy_functions.FUNCTIONS.get(func)
        session = self._session()
        if session is None:
            if impl is None:
                return numpy_functions.unsupported(func)
            result = impl(*args, **kwargs)
            if func in _VIEW_FUNCTIONS and args and isinstance(args[0], Tracer):
                args[0]._mark_view(result)
            return result
        # Under autojit, what can't be traced runs eagerly in NumPy.
        try:
            if impl is None:
                numpy_functions.unsupported(func)      # raises, saying why (a data-dependent shape...)
            return impl(*args, **kwargs)
        except TracingError as e:
            why = str(e)    # not the exception: its traceback would keep tracers alive
        return session.eager(func, args, kwargs, f"np.{getattr(func, '__name__', func)}", why=why)

    # ----- operators (through the ufunc table, as NumPy arrays do) -----------------
    def _u(name, reflected=False):
        def op(self, other):
            if getattr(type(other), "_xla_masked", False):
                return NotImplemented     # a masked slice (masked_slice.py) knows both
            ufuncs = table("ufuncs")
            ufunc = getattr(np, name)
            args = (other, self) if reflected else (self, other)
            integer = isinstance(other, (int, np.integer)) and not isinstance(other, bool)
            if integer and not reflected and name in _MODULAR:
                python_op, modulus = _MODULAR[name]
                known = self._modulo(modulus(int(other)))
                if known is not None:     # a Python int, or NumPy's integer type as NumPy gives
                    value = python_op(known, int(other))
                    return type(other)(value) if isinstance(other, np.integer) else value
            result = ufuncs.dispatch(ufunc, "__call__", args, {})
            if self._affine is not None and isinstance(result, Tracer) and integer:
                base, offset, lo, hi = self._affine
                shift = (int(other) if name == "add" else
                         -int(other) if name == "subtract" and not reflected else None)
                if shift is not None:
                    result._affine = (base, offset + shift, lo, hi)
                    if self._residue is not None:
                        c, r = self._residue
                        result._residue = (c, (r + shift) % c)
            return result
        op.__name__ = f"__{'r' if reflected else ''}{name}__"
        return op

    def _modulo(self, m):
        """For a loop index (or an offset of one) and a nonzero int ``m``:
        the Python int this value is congruent to modulo ``m`` when the loop
        was unrolled so that it is known (``_residue``), else None, noting
        ``m`` on the loop index so the loop can be unrolled by it."""
        if self._affine is None or not m:
            return None
        if self._residue is not None:
            c, r = self._residue
            if c % m == 0:
                return r
        base = self._affine[0]
        if base._moduli is not None:
            base._moduli.add(abs(m))
        return None

    __add__, __radd__ = _u("add"), _u("add", True)
    __sub__, __rsub__ = _u("subtract"), _u("subtract", True)
    __mul__, __rmul__ = _u("multiply"), _u("multiply", True)
    __truediv__, __rtruediv__ = _u("true_divide"), _u("true_divide", True)
    __floordiv__, __rfloordiv__ = _u("floor_divide"), _u("floor_divide", True)
    __mod__, __rmod__ = _u("remainder"), _u("remainder", True)
    __pow__, __rpow__ = _u("power"), _u("power", True)
    __and__, __rand__ = _u("bitwise_and"), _u("bitwise_and", True)
    __or__, __ror__ = _u("bitwise_or"), _u("bitwise_or", True)
    __xor__, __rxor__ = _u("bitwise_xor"), _u("bitwise_xor", True)
    __lshift__, __rlshift__ = _u("left_shift"), _u("left_shift", True)
    __rshift__, __rrshift__ = _u("right_shift"), _u("right_shift", True)
    __lt__, __le__ = _u("less"), _u("less_equal")
    __gt__, __ge__ = _u("greater"), _u("greater_equal")
    __eq__, __ne__ = _u("equal"), _u("not_equal")
    __matmul__, __rmatmul__ = _u("matmul"), _u("matmul", True)
    del _u

    def __divmod__(self, other):
        return np.divmod(self, other)

    def __rdivmod__(self, other):
        return np.divmod(other, self)

    def __neg__(self):
        return np.negative(self)

    def __pos__(self):
        return np.positive(self)

    def __abs__(self):
        return np.absolute(self)

    def __invert__(self):
        return np.invert(self)

    def __getitem__(self, index):
        indexing = table("indexing")
        session = self._session()
        if session is None:
            result = indexing.getitem(self, index)
            if _basic_index(index, self.ndim) or _traced_basic_index(index, self.ndim):
                return self._mark_follower(result, index)
            return result
        try:
            return indexing.getitem(self, index)
        except TracingError as e:
            return session.eager(lambda a, i: a[i], (self, index), {}, "indexing", why=str(e))

    @property
    def at(self):
        indexing = table("indexing")
        return indexing.AtIndexer(self)

    # ----- methods (NumPy's ndarray methods, through the function table) ---------
    def reshape(self, *shape, order="C"):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        return np.reshape(self, shape, order=order)

    def astype(self, dtype, order="K", casting="unsafe", subok=True, copy=True):
        return convert(self, np.dtype(dtype))

    def flatten(self, order="C"):   # an ndarray method with no np.flatten function
        return np.ravel(self, order=order)

    def transpose(self, *axes):
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = tuple(axes[0])
        return np.transpose(self, axes or None)

    def __getattr__(self, name):
        # ndarray methods that are NumPy functions of the same name
        # (sum, mean, max, argmax, cumsum, clip, ...).
        if name in _METHOD_FUNCTIONS:
            func = getattr(np, name)
            return lambda *args, **kwargs: func(self, *args, **kwargs)
        raise AttributeError(f"traced array has no attribute {name!r}")


def _same_index(a, b):
    try:
        return a is not None and (a is b or bool(a == b))
    except Exception:   # noqa: BLE001 - indices that do not compare are not the same
        return False


def _mask_assignment(x, index, value):
    """``x[mask] = v`` with a boolean ``mask`` over x's leading dimensions and
    a scalar ``v``: ``where(mask, v, x)``, the shape kept (None otherwise;
    an array ``v`` has one value per selected element, a data-dependent
    count, which indexing names)."""
    mask = index
    if not (isinstance(mask, (Tracer, np.ndarray)) and mask.dtype == np.bool_ and mask.ndim >= 1
            and tuple(mask.shape) == tuple(x.shape[:mask.ndim])):
        return None
    if isinstance(value, Tracer) and value.ndim != 0 or \
            not isinstance(value, Tracer) and np.ndim(value) != 0:
        return None
    m = as_tracer(mask)
    if m.ndim < x.ndim:
        m = m.reshape(tuple(m.shape) + (1,) * (x.ndim - m.ndim))
    return np.where(m, value, x)


def _basic_index(index, ndim=None):
    """Whether NumPy indexing with ``index`` gives a view (basic indexing; an
    integer for every dimension gives a scalar, a copy)."""
    parts = index if isinstance(index, tuple) else (index,)
    if ndim is not None and len(parts) == ndim and \
            all(isinstance(p, (int, np.integer)) and not isinstance(p, bool) for p in parts):
        return False
    return all(p is None or p is Ellipsis or isinstance(p, (slice, int, np.integer))
               and not isinstance(p, bool) for p in parts)


def _static_basic_index(index):
    """Whether ``index`` is a basic index of Python (or NumPy) ints, slices
    of them, None and Ellipsis only: one a NumPy array can be indexed with."""
    def integer(p):
        return isinstance(p, (int, np.integer)) and not isinstance(p, bool)
    parts = index if isinstance(index, tuple) else (index,)
    return all(p is None or p is Ellipsis or integer(p) or isinstance(p, slice) and all(
        v is None or integer(v) for v in (p.start, p.stop, p.step)) for p in parts)


def _traced_basic_index(index, ndim):
    """Whether ``index`` is a basic index but for traced integer scalars
    (``x[i]``, ``x[i, 2:5]`` with a loop index ``i``): a view in NumPy
    (an integer for every dimension gives a scalar, a copy)."""
    parts = index if isinstance(index, tuple) else (index,)
    traced = [isinstance(p, Tracer) and p.ndim == 0 and p.dtype.kind in "iu" for p in parts]
    if not any(traced):
        return False
    if len(parts) == ndim and all(t or isinstance(p, (int, np.integer)) and not isinstance(p, bool)
                                  for p, t in zip(parts, traced)):
        return False
    return all(t or p is None or p is Ellipsis or isinstance(p, slice) or
               isinstance(p, (int, np.integer)) and not isinstance(p, bool)
               for p, t in zip(parts, traced))


# NumPy functions whose result is a view of their first argument.
_VIEW_FUNCTIONS = frozenset(getattr(np, n) for n in """reshape ravel transpose squeeze swapaxes
moveaxis expand_dims atleast_1d atleast_2d atleast_3d broadcast_to diagonal real imag
""".split() if hasattr(np, n))

_METHOD_FUNCTIONS = frozenset("""sum mean max min prod any all argmax argmin cumsum cumprod
clip std var round flatten ravel squeeze swapaxes conj conjugate dot repeat take sort argsort
nonzero trace diagonal copy ptp""".split())


# ----- building blocks for the ufunc and function tables ----------------------------

def is_traced(x):
    return isinstance(x, Tracer)


def as_tracer(x, dtype=None):
    """``x`` as a Tracer of the current trace: Tracers pass through (captured
    from an enclosing trace if needed), anything array-like becomes a
    constant (a Python scalar a weak one). ``dtype`` converts it."""
    ctx = current_context()
    if isinstance(x, Tracer):
        if x.op.builder is not ctx.builder:
            x = ctx.capture(x)
        return x if dtype is None else convert(x, dtype)
    weak = type(x) in PYTHON_SCALARS and dtype is None
    if isinstance(x, (list, tuple)) and any(isinstance(e, Tracer) for e in _flat(x)):
        return table("numpy").array(x, dtype=dtype)
    try:
        value = np.asarray(x, dtype=dtype)
    except (TypeError, ValueError) as e:
        raise tracing_error(f"cannot use {type(x).__name__} as an array in a traced function: {e}") from None
    if value.dtype == object:
        raise tracing_error(f"cannot use {type(x).__name__} as an array in a traced function")
    return Tracer(ctx.builder.constant(value), weak=weak)


def _flat(x):
    for e in x:
        if isinstance(e, (list, tuple)):
            yield from _flat(e)
        else:
            yield e


def promotion_type(x):
    """What NumPy's promotion rules see for ``x``."""
    if isinstance(x, Tracer):
        return x.promotion_type
    if type(x) in PYTHON_SCALARS:
        return type(x)
    return np.asarray(x).dtype


def result_type(*xs):
    """NumPy's result dtype of ``xs`` (Tracers, arrays, weak Python scalars)."""
    types = []
    for x in xs:
        t = promotion_type(x)
        # np.result_type treats Python *values* as weak, not Python types.
        types.append({bool: False, int: 0, float: 0.0, complex: 0j}.get(t, t))
    return np.result_type(*types)


def convert(x, dtype):
    x = as_tracer(x)
    dtype = np.dtype(dtype)
    if x.dtype == dtype:
        return Tracer(x.op) if x.weak else x
    b = x.op.builder
    if x.dtype.kind == "c" and dtype.kind != "c":
        # NumPy drops the imaginary part (with a ComplexWarning); HLO convert refuses.
        x = Tracer(b.unary("real", x.op))
    if dtype.kind == "b" and x.dtype.kind != "b":
        zero = b.broadcast_in_dim(b.constant(np.zeros((), x.dtype)), x.shape, ())
        return Tracer(b.compare(x.op, zero, "NE"))
    return Tracer(b.convert(x.op, dtype))


def broadcast_shapes(*shapes):
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        text = " ".join(str(tuple(s)) for s in shapes)
        raise ShapeError(f"operands could not be broadcast together with shapes {text}") from None


def broadcast_to(x, shape):
    x = as_tracer(x)
    shape = tuple(int(d) for d in shape)
    if x.shape == shape:
        return x
    if len(shape) < x.ndim or broadcast_shapes(x.shape, shape) != shape:
        raise ShapeError(f"cannot broadcast a traced array of shape {x.shape} to {shape}")
    b = x.op.builder
    lead = len(shape) - x.ndim
    # Size-1 dimensions that grow are dropped first: HLO broadcast maps
    # operand dims to equal output dims.
    keep = [i for i, d in enumerate(x.shape) if d == shape[lead + i]]
    op = x.op
    if len(keep) != x.ndim:
        op = b.reshape(op, [x.shape[i] for i in keep])
    return Tracer(b.broadcast_in_dim(op, shape, [lead + i for i in keep]), weak=x.weak)


def broadcast_arrays(*xs):
    shape = broadcast_shapes(*(x.shape for x in xs))
    return [broadcast_to(x, shape) for x in xs]


def full(shape, value, dtype):
    b = current_builder()
    c = b.constant(np.asarray(value, dtype=dtype))
    return Tracer(b.broadcast_in_dim(c, tuple(shape), ()))


def to_shape(dtype, dims):
    return Shape.array(element_type(np.dtype(dtype)), tuple(dims))


def alias(ctx, operands, params, rebound=(), carried=False):
    """Records in ``ctx`` (a TraceContext) that ``params`` stand for
    ``operands`` (a loop's or branch's, traced in ``ctx``), except the
    ``rebound`` ones (see ``TraceContext.current_array``). An operand that
    follows an array (``v = x[1:]``, ``x[i]``: Tracer._mark_follower) gets a
    parameter that follows the body's value of that array: the body's
    parameter for it, or, when it is not an operand, the captured array,
    with the view's value written in for a loop's (``carried``: an earlier
    iteration may have updated it), so the body's updates of either reach
    the other. Such parameters count as read through a view: a loop whose body
    rebinds one (``v = v + 1``, no longer a view) is traced again without
    this (lax/control_flow.py, _views_follow)."""
    for k, (o, p) in enumerate(zip(operands, params)):
        if isinstance(o, Tracer) and k not in rebound:
            ctx.aliases[id(o)] = (o, p)
    for k, (o, p) in enumerate(zip(operands, params)):
        if not isinstance(o, Tracer) or o._follow is None or k in rebound:
            continue
        array, index = o._follow[0], o._follow[1]
        hit = ctx.aliases.get(id(array))
        if hit is not None and hit[0] is array:
            inner = hit[1]
        else:
            inner = ctx.capture(array)
            if carried:
                inner._assign(table("indexing").AtIndexer(inner)[index].set(p), "a loop's view")
        inner._mark_follower(p, index)
        ctx.view_reads.add(id(p))


def first_positional_op(value, source):
    """The opcode of an instruction between Tracer ``source`` and Tracer
    ``value`` (one that depends on ``source``) that does not keep element
    positions, or None where every one is elementwise, a convert, or a
    broadcast that adds no dimension: then each element of ``value``
    depends on the element of ``source`` at its position (and on what does
    not depend on ``source``) alone."""
    source = source.op.instr
    depends = {}
    stack = [(value.op.instr, False)]
    while stack:
        instr, expanded = stack.pop()
        if instr in depends:
            continue
        if instr is source:
            depends[instr] = True
            continue
        if not expanded:
            stack.append((instr, True))
            stack.extend((o, False) for o in instr.operands if o not in depends)
            continue
        depends[instr] = any(depends.get(o, False) for o in instr.operands)
        if depends[instr] and not (instr.opcode in ELEMENTWISE or (
                instr.opcode == "broadcast"
                and instr.shape.dimensions == instr.operands[0].shape.dimensions)):
            return instr.opcode
    return None
