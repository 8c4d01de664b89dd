"""What a dynamic argument contributes to a jit signature (the cache key):
shape, dtype and weak-typedness, as JAX's abstract values. The dtype is in
the machine's byte order: a big-endian array (``np.dtype('>f4')``) is a
float32 parameter, the call computes on a native copy of it (NumPy
computes with it as with any other), and an update in place is written
back into the caller's array in its own byte order."""
from typing import NamedTuple

import numpy as np

from xla.errors import InvalidArgumentError

_WEAK_DTYPES = {bool: np.dtype(np.bool_), int: np.dtype(np.int64), float: np.dtype(np.float64),
                complex: np.dtype(np.complex128)}


class ArgSpec(NamedTuple):
    """What a dynamic argument leaf contributes to the cache key."""
    shape: tuple
    dtype: np.dtype
    weak: bool


def native(dtype):
    """``dtype`` in the machine's byte order."""
    return dtype if dtype.isnative else dtype.newbyteorder("=")


def native_array(a):
    """``a`` (a NumPy array), or a copy of it in the machine's byte order."""
    return a if a.dtype.isnative else a.astype(native(a.dtype))


def arg_spec(x, where):
    if isinstance(x, np.ndarray):
        return ArgSpec(x.shape, native(x.dtype), False)
    if isinstance(x, np.generic):
        return ArgSpec((), native(x.dtype), False)
    if isinstance(x, (bool, int, float, complex)):
        dtype = _WEAK_DTYPES[type(x)] if type(x) in _WEAK_DTYPES else np.asarray(x).dtype
        if isinstance(x, int) and not isinstance(x, bool) and not -2**63 <= x < 2**63:
            raise InvalidArgumentError(f"{where}: Python int {x} does not fit in int64")
        return ArgSpec((), dtype, not isinstance(x, bool))
    if hasattr(x, "__array__") and hasattr(x, "shape") and hasattr(x, "dtype"):
        return ArgSpec(tuple(x.shape), native(np.dtype(x.dtype)), False)
    raise InvalidArgumentError(
        f"{where} is a {type(x).__name__}, not an array or scalar; pass it as a static argument "
        "(static_argnums/static_argnames) if it is configuration")


