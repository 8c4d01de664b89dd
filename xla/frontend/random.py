"""``xla.random``: counter-based random numbers from explicit keys, as in JAX.

A key is a ``uint64[2]`` array (a Threefry-2x32 key and a counter), the state
HLO's ``rng-bit-generator`` with ``algorithm=rng_three_fry`` takes. Every
function is pure: the same key gives the same random bits on every backend
(the interpreter and the CPU backend implement the same bit-exact
Threefry), inside ``xla.jit`` or outside it (then a small jitted function
runs); ``uniform`` and ``randint`` are exact functions of the bits, while
``normal`` goes through ``log`` and ``cos`` and may differ in the last bit
between backends. Use ``split`` to get independent keys instead of reusing one.
"""
import numpy as np

from xla.frontend import tracing
from xla.frontend.builder import element_type
from xla.frontend.tracing import Tracer, as_tracer, convert, current_context
from xla.hlo.shape import Shape

KEY_SHAPE = (2,)


_compiled = {}


def _static(value):
    if isinstance(value, list):
        return tuple(value)
    if isinstance(value, np.ndarray):
        return value.item() if value.ndim == 0 else tuple(value.tolist())
    if isinstance(value, type) or isinstance(value, np.dtype):
        return np.dtype(value).name
    return value


def _traced(fn):
    """Runs ``fn`` in the current trace, or compiled when there is none."""
    def wrapper(*args, **kwargs):
        if tracing.current_context(required=False) is not None:
            return fn(*args, **kwargs)
        from xla.frontend.jit import jit
        # Only the key is an array argument; shapes, bounds and dtypes are static.
        cached = _compiled.get(fn)
        if cached is None:
            cached = _compiled[fn] = jit(lambda k, rest, kw: fn(k, *rest, **dict(kw)),
                                         static_argnums=(1, 2))
        return cached(args[0], tuple(_static(a) for a in args[1:]),
                      tuple(sorted((k, _static(v)) for k, v in kwargs.items())))
    wrapper.__name__ = fn.__name__
    wrapper.__doc__ = fn.__doc__
    return wrapper


def key(seed):
    """A key from an integer seed (a NumPy array, usable anywhere)."""
    seed = int(seed) & 0xFFFFFFFFFFFFFFFF
    # Spread the seed over the key's high and low words as JAX's key does.
    return np.array([seed, 0], dtype=np.uint64)


PRNGKey = key


def _bits(k, shape, dtype):
    k = convert(as_tracer(k), np.uint64)
    if k.shape != KEY_SHAPE:
        raise tracing.tracing_error(f"a random key is a uint64[2] array, got {k.dtype}{list(k.shape)}")
    b = current_context().builder
    out = b.rng_bit_generator(k.op, Shape.array(element_type(dtype), tuple(shape)), "rng_three_fry")
    return Tracer(b.get_tuple_element(out, 1))


@_traced
def split(key, num=2):
    """``num`` new keys (an array ``uint64[num, 2]``), independent of ``key``'s numbers."""
    return _bits(key, (num, 2), np.uint64)


@_traced
def fold_in(key, data):
    """A new key from ``key`` and an integer."""
    d = convert(as_tracer(data), np.uint64)
    mixed = as_tracer(key) ^ (d * np.uint64(0x9E3779B97F4A7C15))
    return _bits(mixed, (2,), np.uint64)


def _uniform01(key, shape, dtype):
    dtype = np.dtype(dtype)
    if dtype == np.float64:
        bits = _bits(key, shape, np.uint64)
        mant = (bits >> np.uint64(12)) | np.uint64(0x3FF0000000000000)
        f = Tracer(current_context().builder.bitcast_convert(mant.op, np.float64))
        return f - np.float64(1.0)
    bits = _bits(key, shape, np.uint32)
    mant = (bits >> np.uint32(9)) | np.uint32(0x3F800000)
    f = Tracer(current_context().builder.bitcast_convert(mant.op, np.float32))
    return convert(f - np.float32(1.0), dtype)


@_traced
def uniform(key, shape=(), dtype=np.float32, minval=0.0, maxval=1.0):
    """Uniform numbers in ``[minval, maxval)``."""
    shape = tuple(shape)
    u = _uniform01(key, shape, dtype)
    lo = convert(as_tracer(minval), np.dtype(dtype))
    hi = convert(as_tracer(maxval), np.dtype(dtype))
    return np.maximum(lo, u * (hi - lo) + lo)


@_traced
def normal(key, shape=(), dtype=np.float32):
    """Standard normal numbers (Box-Muller on two uniform draws)."""
    shape = tuple(shape)
    n = int(np.prod(shape, dtype=np.int64))
    u = _uniform01(key, (2, n), dtype)
    u1 = np.float32(1) - u[0] if np.dtype(dtype) == np.float32 else 1.0 - u[0]   # (0, 1]
    u2 = u[1]
    z = np.sqrt(-2 * np.log(u1)) * np.cos(2 * np.pi * u2)
    return convert(z.reshape(shape), dtype)


@_traced
def randint(key, shape, minval, maxval, dtype=np.int32):
    """Integers in ``[minval, maxval)``."""
    shape = tuple(shape)
    bits = _bits(key, shape, np.uint64)
    lo = convert(as_tracer(minval), np.int64)
    hi = convert(as_tracer(maxval), np.int64)
    span = convert(np.maximum(hi - lo, 1), np.uint64)
    return convert(convert(bits % span, np.int64) + lo, dtype)


@_traced
def bernoulli(key, p=0.5, shape=()):
    return np.less(uniform(key, tuple(shape), np.float32), p)


@_traced
def permutation(key, n):
    """A random permutation of ``range(n)`` (``n`` a Python int)."""
    from xla.frontend import lax
    r = _bits(key, (int(n),), np.uint32)
    idx = Tracer(current_context().builder.iota(np.int64, (int(n),), 0))
    return lax.sort((r, idx), num_keys=1)[1]
