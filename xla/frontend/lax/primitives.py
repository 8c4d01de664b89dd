"""Elementwise, shape and type primitives, as ``jax.lax``: each is one HLO
instruction (after a broadcast of a scalar operand), with JAX's rules
rather than NumPy's: the operands of an elementwise operation have one
dtype and one shape (a scalar operand is broadcast); anything else is a
ShapeError. As in JAX with 64-bit types enabled, a Python scalar is a
float64 or int64 operand: ``lax.add(float32_array, 2.0)`` is an error
(``np.float32(2.0)`` is not). ``xla.frontend.numpy`` adds NumPy's promotion
and broadcasting on top of these.

A result is weak only when every operand was (JAX's weak typing); a
comparison's result never is.
"""
import builtins

import numpy as np

from xla.errors import InvalidArgumentError, ShapeError
from xla.frontend import tracing
from xla.frontend.builder import element_type
from xla.frontend.lax.eager import eager
from xla.frontend.lax.subcomputation import type_text
from xla.frontend.tracing import Tracer, as_tracer, convert, current_context


def _builder():
    return current_context().builder


# ----- operands: one dtype, one shape ---------------------------------------------------

def _one_dtype(what, ts):
    """``ts``, checked to have one dtype (JAX's rule: weak or not)."""
    if len({t.dtype for t in ts}) > 1:
        raise ShapeError(f"lax.{what} requires its operands to have one dtype, got "
                         + ", ".join(type_text(t) for t in ts)
                         + " (convert them with lax.convert_element_type)")
    return ts


def _one_shape(what, ts):
    """``ts`` with scalar operands broadcast to the one shape of the others."""
    shapes = {t.shape for t in ts if t.shape != ()}
    if len(shapes) > 1:
        raise ShapeError(f"lax.{what} requires its operands to have one shape (or be scalars), got "
                         + ", ".join(type_text(t) for t in ts)
                         + " (broadcast them with lax.broadcast_in_dim)")
    if not shapes:
        return ts
    shape = shapes.pop()
    return [t if t.shape == shape else
            Tracer(_builder().broadcast_in_dim(t.op, shape, ()), weak=t.weak) for t in ts]


_ML_KINDS = {"pred": "b", "s": "i", "u": "u", "f": "f", "c": "c"}


def _kind(dtype):
    """NumPy's kind letter of ``dtype``, also for ml_dtypes' bfloat16,
    float8 and int4 types (NumPy kind 'V'), which JAX counts as floats and
    integers."""
    if dtype.kind != "V":
        return dtype.kind
    return _ML_KINDS.get(element_type(dtype).kind, "V")


def _check_kind(what, t, kinds, accepts):
    if _kind(t.dtype) not in kinds:
        raise InvalidArgumentError(f"lax.{what} does not accept dtype {t.dtype} (it takes {accepts})")


# Dtype kinds each family accepts (JAX's): NumPy kind letters.
_NUMBER, _ANY, _ORDERED, _INTEGER = "iufc", "biufc", "biuf", "biu"
_ACCEPTS = {_NUMBER: "numbers", _ANY: "any dtype", _ORDERED: "bools, integers and reals",
            _INTEGER: "bools and integers", "f": "floats", "fc": "floats and complex numbers",
            "iu": "integers", "iuf": "integers and floats",
            "ifc": "signed integers, floats and complex numbers"}


def _binary(name, opcode, kinds, doc, direction=None):
    """A JAX binary primitive: HLO ``opcode`` (a compare in ``direction``)."""
    @eager
    def op(x, y):
        x, y = _one_shape(name, _one_dtype(name, [as_tracer(x), as_tracer(y)]))
        _check_kind(name, x, kinds, _ACCEPTS[kinds])
        if direction is not None:
            return Tracer(_builder().compare(x.op, y.op, direction))
        return Tracer(_builder().binary(opcode, x.op, y.op), weak=x.weak and y.weak)
    op.__name__ = op.__qualname__ = name
    op.__doc__ = doc
    return op


add = _binary("add", "add", _NUMBER, "x + y (HLO add).")
sub = _binary("sub", "subtract", _NUMBER, "x - y (HLO subtract).")
mul = _binary("mul", "multiply", _NUMBER, "x * y (HLO multiply).")
max = _binary("max", "maximum", _ANY, "Elementwise maximum; NaN if either is NaN (HLO maximum).")
min = _binary("min", "minimum", _ANY, "Elementwise minimum; NaN if either is NaN (HLO minimum).")
bitwise_and = _binary("bitwise_and", "and", _INTEGER, "x & y; logical and of bools (HLO and).")
bitwise_or = _binary("bitwise_or", "or", _INTEGER, "x | y; logical or of bools (HLO or).")
bitwise_xor = _binary("bitwise_xor", "xor", _INTEGER, "x ^ y; logical xor of bools (HLO xor).")
eq = _binary("eq", None, _ANY, "x == y (HLO compare EQ).", "EQ")
ne = _binary("ne", None, _ANY, "x != y (HLO compare NE; true where either is NaN).", "NE")
lt = _binary("lt", None, _ORDERED, "x < y (HLO compare LT; not for complex numbers).", "LT")
le = _binary("le", None, _ORDERED, "x <= y (HLO compare LE; not for complex numbers).", "LE")
gt = _binary("gt", None, _ORDERED, "x > y (HLO compare GT; not for complex numbers).", "GT")
ge = _binary("ge", None, _ORDERED, "x >= y (HLO compare GE; not for complex numbers).", "GE")


@eager
def bitwise_not(x):
    """~x; logical not of bools (HLO not)."""
    t = as_tracer(x)
    _check_kind("bitwise_not", t, _INTEGER, _ACCEPTS[_INTEGER])
    return Tracer(_builder().unary("not", t.op), weak=t.weak)


@eager
def neg(x):
    """-x (HLO negate)."""
    t = as_tracer(x)
    _check_kind("neg", t, _NUMBER, _ACCEPTS[_NUMBER])
    return Tracer(_builder().unary("negate", t.op), weak=t.weak)


@eager
def real(x):
    """The real part of a complex array (HLO real)."""
    t = as_tracer(x)
    _check_kind("real", t, "c", "complex numbers")
    return Tracer(_builder().unary("real", t.op))


@eager
def imag(x):
    """The imaginary part of a complex array (HLO imag)."""
    t = as_tracer(x)
    _check_kind("imag", t, "c", "complex numbers")
    return Tracer(_builder().unary("imag", t.op))


@eager
def complex(x, y):
    """``x + 1j * y`` from two float arrays of one dtype (HLO complex)."""
    x, y = _one_shape("complex", _one_dtype("complex", [as_tracer(x), as_tracer(y)]))
    if x.dtype not in (np.float32, np.float64):
        raise InvalidArgumentError(f"lax.complex takes float32 or float64 parts, got {x.dtype}")
    return Tracer(_builder().binary("complex", x.op, y.op))


def _unary_float(opcode, name, doc):
    @eager
    def op(x):
        t = as_tracer(x)
        if t.dtype.kind not in "fc":
            t = convert(t, np.float64 if t.dtype.itemsize > 4 or t.dtype.kind == "b" else np.float32)
        return Tracer(_builder().unary(opcode, t.op))
    op.__name__ = op.__qualname__ = name
    op.__doc__ = doc
    return op


rsqrt = _unary_float("rsqrt", "rsqrt", "1 / sqrt(x) (HLO rsqrt).")
logistic = _unary_float("logistic", "logistic", "1 / (1 + exp(-x)) (HLO logistic).")
erf = _unary_float("erf", "erf", "The error function (HLO erf).")


@eager
def select(pred, on_true, on_false):
    """Elementwise ``on_true if pred else on_false``; unlike ``np.where`` the
    three have one shape (a scalar ``pred`` is allowed, as in JAX). Where
    JAX requires one dtype, ``on_true`` and ``on_false`` of two dtypes
    promote as in ``np.where`` (as this function always has here)."""
    p = as_tracer(pred)
    t, f = as_tracer(on_true), as_tracer(on_false)
    if t.dtype != f.dtype:
        dt = tracing.result_type(t, f)
        t, f = convert(t, dt), convert(f, dt)
    if t.shape != f.shape or (p.shape != () and p.shape != t.shape):
        raise ShapeError((
            f"select: pred {type_text(p)}, on_true {type_text(t)} and on_false {type_text(f)} "
            "must have one shape"))
    if p.dtype != np.bool_:
        raise ShapeError((f"select: pred must be boolean, got {type_text(p)}"))
    b = _builder()
    pred_op = p.op if p.shape == t.shape else b.broadcast_in_dim(p.op, t.shape, ())
    return Tracer(b.select(pred_op, t.op, f.op), weak=t.weak and f.weak)


@eager
def clamp(min, x, max):
    """``min <= x <= max`` elementwise (``min``/``max`` scalars or x's shape)."""
    return np.clip(x, min, max)


# ----- shapes ---------------------------------------------------------------------------

@eager
def broadcast_in_dim(operand, shape, broadcast_dimensions):
    """Operand dimension i becomes output dimension ``broadcast_dimensions[i]``;
    a size-1 operand dimension may grow, as in JAX."""
    x = as_tracer(operand)
    shape = tuple(int(d) for d in shape)
    bdims = tuple(int(d) for d in broadcast_dimensions)
    if len(bdims) != x.ndim:
        raise ShapeError((
            f"broadcast_in_dim: {len(bdims)} broadcast_dimensions for an operand of rank {x.ndim}"))
    b = _builder()
    keep = [i for i, d in enumerate(x.shape) if not (d == 1 and shape[bdims[i]] != 1)]
    op = x.op
    if len(keep) != x.ndim:
        op = b.reshape(op, [x.shape[i] for i in keep])
    return Tracer(b.broadcast_in_dim(op, shape, [bdims[i] for i in keep]), weak=x.weak)


@eager
def reshape(operand, new_sizes, dimensions=None):
    """Row-major reshape, after transposing by ``dimensions`` if given."""
    x = as_tracer(operand)
    if dimensions is not None:
        x = transpose(x, dimensions)
    new_sizes = tuple(int(d) for d in new_sizes)
    if new_sizes == x.shape:
        return x
    return Tracer(_builder().reshape(x.op, new_sizes), weak=x.weak)


@eager
def transpose(operand, permutation):
    """Output dimension i is operand dimension ``permutation[i]`` (negative
    ones count from the end, as ``np.transpose`` and this function always
    took them)."""
    x = as_tracer(operand)
    perm = tuple(int(d) + x.ndim if -x.ndim <= int(d) < 0 else int(d) for d in permutation)
    if sorted(perm) != list(range(x.ndim)):
        raise ShapeError(f"transpose: permutation {perm} is not a permutation of the dimensions of "
                         f"{type_text(x)}")
    if perm == tuple(range(x.ndim)):
        return x
    return Tracer(_builder().transpose(x.op, perm), weak=x.weak)


@eager
def rev(operand, dimensions):
    """``operand`` reversed along ``dimensions`` (HLO reverse)."""
    x = as_tracer(operand)
    dims = tuple(int(d) for d in dimensions)
    if any(not 0 <= d < x.ndim for d in dims) or len(set(dims)) != len(dims):
        raise ShapeError(f"rev: dimensions {dims} are not distinct dimensions of {type_text(x)}")
    if not dims:
        return x
    return Tracer(_builder().reverse(x.op, dims), weak=x.weak)


@eager
def concatenate(operands, dimension):
    """The operands (one dtype and rank, equal but for ``dimension``) joined
    along ``dimension`` (HLO concatenate)."""
    ts = _one_dtype("concatenate", [as_tracer(o) for o in operands])
    if not ts:
        raise InvalidArgumentError("lax.concatenate needs at least one operand")
    nd = ts[0].ndim
    dim = int(dimension)
    if not 0 <= dim < nd:
        raise ShapeError(f"concatenate: dimension {dim} is out of range for rank {nd}")
    for t in ts[1:]:
        if t.ndim != nd or any(a != c for i, (a, c) in enumerate(zip(t.shape, ts[0].shape))
                               if i != dim):
            raise ShapeError(f"concatenate: operands {type_text(ts[0])} and {type_text(t)} differ "
                             f"outside dimension {dim}")
    if len(ts) == 1:
        return ts[0]
    return Tracer(_builder().concatenate([t.op for t in ts], dim), weak=all(t.weak for t in ts))


@eager
def pad(operand, padding_value, padding_config):
    """``operand`` with ``padding_value`` (a scalar of its dtype) added:
    ``padding_config`` holds one ``(low, high, interior)`` per dimension;
    a negative ``low`` or ``high`` removes elements (HLO pad)."""
    x, v = as_tracer(operand), as_tracer(padding_value)
    if v.shape != ():
        raise ShapeError(f"pad: padding_value must be a scalar, got {type_text(v)}")
    if v.dtype != x.dtype:
        raise ShapeError(f"pad: padding_value {type_text(v)} must have the operand's dtype "
                         f"{x.dtype}")
    config = [tuple(int(c) for c in p) for p in padding_config]
    if len(config) != x.ndim or any(len(p) != 3 for p in config):
        raise ShapeError(f"pad: padding_config needs one (low, high, interior) per dimension of "
                         f"{type_text(x)}, got {padding_config!r}")
    for d, (lo, hi, interior) in zip(x.shape, config):
        if interior < 0 or lo + hi + d + builtins.max(d - 1, 0) * interior < 0:
            raise ShapeError(f"pad: padding_config {padding_config!r} gives a negative size for "
                             f"{type_text(x)}")
    return Tracer(_builder().pad(x.op, v.op, config), weak=x.weak)


# ----- creation and types ---------------------------------------------------------------

@eager
def iota(dtype, size):
    return Tracer(_builder().iota(np.dtype(dtype), (int(size),), 0))


@eager
def broadcasted_iota(dtype, shape, dimension):
    return Tracer(_builder().iota(np.dtype(dtype), tuple(int(d) for d in shape), int(dimension)))


@eager
def convert_element_type(operand, new_dtype):
    """``operand`` as ``new_dtype`` (HLO convert), with JAX's (and NumPy's)
    conversions where HLO has none: to bool is ``x != 0``, complex to real
    keeps the real part."""
    return convert(as_tracer(operand), np.dtype(new_dtype))


@eager
def full(shape, fill_value, dtype=None):
    """An array of ``shape`` filled with ``fill_value`` (a scalar; of its own
    dtype if ``dtype`` is None): a constant, broadcast unless ``shape`` is
    ``()``."""
    shape = tuple(int(d) for d in shape)
    if isinstance(fill_value, Tracer):
        v = fill_value if dtype is None else convert(fill_value, np.dtype(dtype))
    else:
        v = as_tracer(fill_value, dtype)
    if v.shape != ():
        raise ShapeError(f"full: fill_value must be a scalar, got {type_text(v)}")
    if not shape:
        return v
    return Tracer(_builder().broadcast_in_dim(v.op, shape, ()), weak=v.weak)


@eager
def full_like(x, fill_value, dtype=None, shape=None):
    """``full`` with the shape and dtype of ``x`` unless given; weak when
    ``x`` is and no ``dtype`` is given (as in JAX)."""
    t = x if isinstance(x, Tracer) else as_tracer(x)
    dt = t.dtype if dtype is None else np.dtype(dtype)
    out = full(t.shape if shape is None else shape, np.asarray(fill_value, dt)
               if not isinstance(fill_value, Tracer) else fill_value, dt)
    return Tracer(out.op, weak=t.weak and dtype is None)
