"""Arguments and results of tool runs: .npz files and random arguments.

Convention (shared with the test corpus): inputs are ``arg0..argN`` in
parameter order; results are the leaves of the result, a tuple flattened
depth-first, as ``out0..outM``. NumPy cannot name ml_dtypes types in .npz
files, so bf16 and friends load back as raw void data (``|V2``); they are
reinterpreted here by the parameter's element type.
"""
import tokenize
import zipfile
import zlib

import numpy as np

from xla.errors import InvalidArgumentError
from xla.hlo.types import PrimitiveType
from xla.hlo.values import flatten_result  # noqa: F401  (results are flattened as in snapshots)


def restore_dtype(value, dtype):
    """Reinterprets raw void data saved from an ml_dtypes array as ``dtype``."""
    value = np.asarray(value)
    if value.dtype.kind == "V" and value.dtype.itemsize == np.dtype(dtype).itemsize:
        return value.view(dtype)
    return value


# What NumPy raises on a damaged .npy header or member (its header parser
# tokenizes the header: a broken one is a TokenError or SyntaxError).
_NPZ_ERRORS = (OSError, ValueError, EOFError, KeyError, RuntimeError, zipfile.BadZipFile, zlib.error,
               tokenize.TokenError, SyntaxError, OverflowError)


def open_npz(path, what="arguments"):
    """``np.load(path)`` of an .npz file without pickles; a file that is not
    one is an InvalidArgumentError naming it."""
    from xla.tools.outputs import check_input_path
    check_input_path(path, what)
    try:
        data = np.load(path, allow_pickle=False)
    except _NPZ_ERRORS as e:
        raise InvalidArgumentError(f"cannot read {what} from {path}: {e}") from None
    if not isinstance(data, np.lib.npyio.NpzFile):
        raise InvalidArgumentError(f"cannot read {what} from {path}: not an .npz file")
    return data


def npz_entry(data, name, path):
    """Entry ``name`` of an open .npz file (a truncated or corrupt member, an
    object array: InvalidArgumentError)."""
    try:
        return data[name]
    except _NPZ_ERRORS as e:
        raise InvalidArgumentError(f"cannot read {name} from {path}: {e}") from None


def load_args(path, parameter_shapes):
    """Loads ``arg0..argN`` from ``path`` and checks them against the parameters."""
    with open_npz(path) as data:
        names = [f"arg{i}" for i in range(len(parameter_shapes))]
        missing = [n for n in names if n not in data.files]
        if missing:
            raise InvalidArgumentError(
                f"{path} lacks {', '.join(missing)}: the module takes {len(names)} arguments "
                f"(found {', '.join(sorted(data.files)) or 'none'})")
        extra = sorted(set(f for f in data.files if f.startswith("arg")) - set(names))
        if extra:
            raise InvalidArgumentError(
                f"{path} has {', '.join(extra)} but the module takes only {len(names)} arguments")
        args = []
        for name, shape in zip(names, parameter_shapes):
            value = npz_entry(data, name, path)
            if shape.is_array:
                value = restore_dtype(value, shape.dtype)
            args.append(value)
        return args


def random_args(parameter_shapes, seed=0):
    """Deterministic random arguments of the right shapes and dtypes.

    Floats are standard normal; signed integers lie in [-8, 8], unsigned in
    [0, 16], preds are fair coin flips; complex values have normal parts.
    The same seed and shapes always give the same values.
    """
    if not 0 <= seed < 2**32:
        raise InvalidArgumentError(f"--random_seed must be in [0, 2^32), got {seed}")
    rng = np.random.RandomState(seed)
    out = []
    for i, shape in enumerate(parameter_shapes):
        try:
            out.append(_random_value(shape, rng))
        except (MemoryError, ValueError) as e:
            raise InvalidArgumentError(f"cannot make a random argument {i} of shape {shape}: "
                                       f"{e}") from None
    return out


def _random_value(shape, rng):
    if shape.is_tuple:
        return tuple(_random_value(s, rng) for s in shape.tuple_shapes)
    if not shape.is_array:
        raise InvalidArgumentError(f"cannot make a random argument of shape {shape}")
    et = shape.element_type
    dims = shape.dimensions
    if et.is_pred:
        return rng.randint(0, 2, size=dims).astype(np.bool_)
    if et.is_signed_integer:
        lo, hi = (-8, 8) if et.bits > 4 else (-2, 1) if et.bits > 1 else (-1, 0)
        return rng.randint(lo, hi + 1, size=dims).astype(shape.dtype)
    if et.is_unsigned_integer:
        hi = 16 if et.bits > 4 else 3 if et.bits > 1 else 1
        return rng.randint(0, hi + 1, size=dims).astype(shape.dtype)
    if et.is_complex:
        return (rng.standard_normal(dims) + 1j * rng.standard_normal(dims)).astype(shape.dtype)
    if et is PrimitiveType.F8E8M0FNU:  # no sign and no zero: powers of two
        return np.exp2(rng.randint(-8, 9, size=dims)).astype(shape.dtype)
    return rng.standard_normal(dims).astype(shape.dtype)


def save_outputs(path, leaves, overwrite=False):
    """Writes ``out0..outM`` atomically (``xla.tools.outputs.write_atomically``)."""
    from xla.tools.outputs import write_atomically
    arrays = {f"out{i}": np.asarray(v) for i, v in enumerate(leaves)}
    write_atomically(path, lambda f: np.savez(f, **arrays), overwrite=overwrite)


def summarize(name, value):
    """One line describing an array result: shape, dtype, and a few statistics."""
    value = np.asarray(value)
    head = f"{name}: {value.dtype}{list(value.shape)}"
    if value.size == 0:
        return head + " (empty)"
    flat = value.reshape(-1)
    if value.dtype.kind == "V":
        return head
    shown = np.array2string(flat[:6], separator=", ", threshold=6)
    if value.dtype.kind in "fc" or str(value.dtype) in ("bfloat16",):
        wide = flat.astype(np.complex128 if value.dtype.kind == "c" else np.float64)
        if value.dtype.kind == "c":
            stats = f"mean={wide.mean():.6g}"
        else:
            finite = wide[np.isfinite(wide)]
            stats = (f"min={finite.min():.6g} max={finite.max():.6g} mean={finite.mean():.6g}"
                     if finite.size else "no finite values")
            nonfinite = wide.size - finite.size
            if nonfinite:
                stats += f" non-finite={nonfinite}"
    elif value.dtype.kind == "b":
        stats = f"true={int(flat.sum())}/{flat.size}"
    else:
        stats = f"min={flat.min()} max={flat.max()}"
    more = " ..." if flat.size > 6 else ""
    return f"{head} {stats} values={shown}{more}"
