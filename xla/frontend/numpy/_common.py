"""The registry every topic module of ``xla.frontend.numpy`` adds its rows
to, and the argument checks they share.

``FUNCTIONS`` maps a NumPy function (``np.sum``, ``np.concatenate``...) to
its implementation over Tracers; ``Tracer.__array_function__`` looks calls
up there (through ``tracing.table("numpy")``), so ``np.sum(t, axis=0)`` in
user code lands in ``reductions.sum``. Functions whose output shape depends
on the data (``np.unique``, ``np.nonzero``, ...) are not registered on
purpose: ``unsupported`` explains them and names the static-size
alternative.
"""
import operator

from xla.errors import InternalError, ShapeError
from xla.frontend.tracing import convert, tracing_error


FUNCTIONS = {}


def implements(*numpy_functions):
    """Registers the decorated function for ``numpy_functions``; one
    implementation per NumPy function (NumPy's aliases, such as
    ``np.permute_dims`` for ``np.transpose``, are the same function)."""
    def register(fn):
        for f in numpy_functions:
            if FUNCTIONS.get(f, fn) is not fn:
                raise InternalError(f"np.{getattr(f, '__name__', f)} is implemented twice: by "
                                    f"{FUNCTIONS[f].__module__}.{FUNCTIONS[f].__name__} and "
                                    f"{fn.__module__}.{fn.__name__}")
            FUNCTIONS[f] = fn
        return fn
    return register


# Data-dependent output shapes: why each can't compile, and what can.
_DATA_DEPENDENT = {
    "unique": "np.unique(x, size=N) is not NumPy; sort with np.sort and compare neighbours, "
              "or compute unique values outside the jitted function",
    "nonzero": "use np.where(condition, x, fill) to keep the shape, or count with np.sum(condition)",
    "flatnonzero": "use np.where(condition, x, fill) to keep the shape",
    "argwhere": "use np.where(condition, x, fill) to keep the shape",
    "extract": "use np.where(condition, x, fill) to keep the shape",
    "compress": "use np.where(condition, x, fill) to keep the shape",
    "trim_zeros": "slice with static bounds instead",
    "setdiff1d": "use np.isin with a static-size result",
    "union1d": "compute it outside the jitted function",
    "intersect1d": "compute it outside the jitted function",
    "bincount": "its length is max(x) + 1; count into a static number of bins n with "
                "np.sum(x[:, None] == np.arange(n), axis=0)",
}


# Result dtypes that depend on the values.
_VALUE_DEPENDENT_DTYPE = {
    "real_if_close": "use np.real(a) where the imaginary parts are known to be negligible",
}


def unsupported(func):
    name = getattr(func, "__name__", str(func))
    module = getattr(func, "__module__", "numpy") or "numpy"
    qual = "np." + name if module.startswith("numpy") and ".linalg" not in module else \
        module.replace("numpy", "np") + "." + name
    hint = _DATA_DEPENDENT.get(name)
    if hint is not None:
        raise tracing_error(f"{qual} has an output shape that depends on the data, so it cannot be "
                            f"compiled (must-compile semantics, like jit_compile=True); {hint}")
    hint = _VALUE_DEPENDENT_DTYPE.get(name)
    if hint is not None:
        raise tracing_error(f"{qual} returns a real or a complex array depending on the values, so "
                            f"its dtype is not known while compiling; {hint}")
    raise tracing_error(f"{qual} is not supported under xla.jit (no HLO lowering for it yet); "
                        "compute it outside the jitted function or use xla.numpy / xla.lax")


# ----- axes and arguments -----------------------------------------------------------------

def normalize_axis(axis, ndim, what="axis"):
    a = operator.index(axis)
    if not -ndim <= a < ndim:
        raise ShapeError(f"{what} {a} is out of bounds for an array of dimension {ndim}")
    return a % ndim


def normalize_axes(axis, ndim):
    """``axis`` (None, int or sequence) as a sorted tuple of non-negative axes."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (tuple, list)):
        axes = tuple(normalize_axis(a, ndim) for a in axis)
        if len(set(axes)) != len(axes):
            raise ShapeError(f"repeated axis in {tuple(axis)}")
        return tuple(sorted(axes))
    return (normalize_axis(axis, ndim),)


def strong(t):
    """Tracer ``t`` as an array, never weakly typed: what NumPy's functions
    return (``np.tile(2.0, 3)`` is a float64 array, which promotes a float32
    array added to it), where ``xla.lax`` keeps a Python scalar's weak type."""
    return convert(t, t.dtype)


def check_no_out(name, out):
    if out is not None:
        raise tracing_error(f"np.{name}(..., out=...) writes into an array in place; traced arrays "
                            "are immutable, use the return value")
