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
    """A key from an integer seed: ``[seed mod 2**64, 0]`` (the Threefry key
    word and the counter). A NumPy array for a Python or NumPy integer; a
    traced key for a traced seed."""
    if isinstance(seed, Tracer):
        if seed.shape != () or seed.dtype.kind not in "iu":
            raise tracing.tracing_error(f"random.key: the seed must be an integer scalar, got "
                                        f"{seed.dtype}{list(seed.shape)}")
        return np.stack([convert(seed, np.uint64), as_tracer(np.uint64(0))])
    seed = int(seed) & 0xFFFFFFFFFFFFFFFF
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


# float dtype -> (bits of the uint it is made from, mantissa bits, the bits of 1.0)
_FLOAT_BITS = {np.dtype(np.float64): (np.uint64, 52, 0x3FF0000000000000),
               np.dtype(np.float32): (np.uint32, 23, 0x3F800000),
               np.dtype(np.float16): (np.uint16, 10, 0x3C00)}
try:
    import ml_dtypes
    _FLOAT_BITS[np.dtype(ml_dtypes.bfloat16)] = (np.uint16, 7, 0x3F80)
except ImportError:     # pragma: no cover
    pass


def _uniform01(key, shape, dtype):
    """Uniform in [0, 1) exactly in ``dtype``: random mantissa bits under the
    exponent of 1.0 give [1, 2), minus 1 (as JAX does)."""
    dtype = np.dtype(dtype)
    if dtype not in _FLOAT_BITS:
        raise tracing.tracing_error(f"random: {dtype} is not a supported floating-point dtype "
                                    f"({', '.join(str(d) for d in _FLOAT_BITS)})")
    utype, nmant, one = _FLOAT_BITS[dtype]
    nbits = np.dtype(utype).itemsize * 8
    if nbits == 64:
        bits = _bits(key, shape, np.uint64)
    else:
        # 16-bit floats take the high bits of 32-bit draws.
        bits = _bits(key, shape, np.uint32) >> np.uint32(32 - nbits)
        bits = convert(bits, utype)
    mant = (bits >> utype(nbits - nmant)) | utype(one)
    f = Tracer(current_context().builder.bitcast_convert(mant.op, dtype))
    return f - np.asarray(1, dtype)


@_traced
def uniform(key, shape=(), dtype=np.float32, minval=0.0, maxval=1.0):
    """Uniform numbers in ``[minval, maxval)``."""
    shape = tuple(shape)
    u = _uniform01(key, shape, dtype)
    lo = convert(as_tracer(minval), np.dtype(dtype))
    hi = convert(as_tracer(maxval), np.dtype(dtype))
    # Rounding of u * (hi - lo) + lo may reach either bound; keep [lo, hi).
    return np.minimum(np.maximum(lo, u * (hi - lo) + lo), _next_below(hi))


def _next_below(x):
    """The largest float of x's dtype below the scalar ``x`` (NumPy's
    ``nextafter(x, -inf)``), by stepping its bit pattern."""
    utype, _, _ = _FLOAT_BITS[x.dtype]
    b = current_context().builder
    bits = Tracer(b.bitcast_convert(x.op, utype))
    one = utype(1)
    sign = utype(1 << (np.dtype(utype).itemsize * 8 - 1))
    stepped = np.where(x > 0, bits - one, np.where(x < 0, bits + one, sign | one))
    return Tracer(b.bitcast_convert(convert(stepped, utype).op, x.dtype))


@_traced
def normal(key, shape=(), dtype=np.float32):
    """Standard normal numbers (Box-Muller on two uniform draws)."""
    shape = tuple(shape)
    dtype = np.dtype(dtype)
    n = int(np.prod(shape, dtype=np.int64))
    # 16-bit floats draw in float32: their few mantissa bits would clip the tails.
    cdt = dtype if dtype.itemsize >= 4 else np.dtype(np.float32)
    u = _uniform01(key, (2, n), cdt)
    u1 = np.asarray(1, cdt) - u[0]          # (0, 1]: log stays finite
    u2 = u[1]
    z = np.sqrt(np.asarray(-2, cdt) * np.log(u1)) * np.cos(np.asarray(2 * np.pi, cdt) * u2)
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
def bernoulli(key, p=0.5, shape=None):
    """Booleans that are True with probability ``p``; ``shape`` defaults to
    ``p``'s shape (one draw per element)."""
    p = as_tracer(p)
    shape = p.shape if shape is None else tuple(shape)
    return np.less(uniform(key, shape, np.float32), p)


@_traced
def permutation(key, x, axis=0):
    """A random permutation of ``range(x)`` for an integer ``x``, or ``x``
    shuffled along ``axis`` for an array."""
    from xla.frontend import lax
    if isinstance(x, (int, np.integer)):
        n, arr = int(x), None
    else:
        arr = as_tracer(x)
        if arr.ndim == 0:
            raise tracing.tracing_error("random.permutation: x must be an integer or an array with "
                                        "at least one dimension")
        axis = axis % arr.ndim
        n = arr.shape[axis]
    # Sorting by 64 random bits: ties, which would favour the original
    # order, have probability ~n**2 / 2**65.
    r = _bits(key, (n,), np.uint64)
    idx = Tracer(current_context().builder.iota(np.int64, (n,), 0))
    perm = lax.sort((r, idx), num_keys=1)[1]
    return perm if arr is None else np.take(arr, perm, axis=axis)
