"""Helpers shared by the interpreter's op handlers (ops_*.py); registers nothing."""
import numpy as np

from xla.hlo.types import MINIFLOAT_FORMATS, PrimitiveType, from_dtype

# Elementwise binary opcodes a two-parameter scalar computation may consist
# of, with the NumPy ufunc that computes them (used for fast paths only; the
# general path evaluates the computation through ctx.call_elementwise).
_UFUNC_OF = {
    "add": np.add,
    "multiply": np.multiply,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "and": np.bitwise_and,
    "or": np.bitwise_or,
    "xor": np.bitwise_xor,
}


def reducer_kind(comp):
    """Classifies a scalar computation of two parameters.

    Returns ``(opcode, swapped)`` when the root is ``opcode(p0, p1)`` (or
    ``opcode(p1, p0)``: swapped=True) for an opcode in ``_UFUNC_OF``;
    ``("assign", False)`` when the root is parameter 1 (scatter's
    "replace" combiner); ``("keep", False)`` when it is parameter 0;
    otherwise None.
    """
    if comp is None or comp.num_parameters != 2:
        return None
    root = comp.root_instruction
    if not root.shape.is_array or root.shape.rank != 0:
        return None
    if root.opcode == "parameter":
        return ("assign", False) if root.parameter_number == 1 else ("keep", False)
    if root.opcode not in _UFUNC_OF or len(root.operands) != 2:
        return None
    a, b = root.operands
    if a.opcode != "parameter" or b.opcode != "parameter":
        return None
    if (a.parameter_number, b.parameter_number) == (0, 1):
        return root.opcode, False
    if (a.parameter_number, b.parameter_number) == (1, 0):
        return root.opcode, True
    return None


def ufunc_for(kind, dtype):
    """The ufunc of a reducer kind for arrays of ``dtype`` (pred: logical ops)."""
    ufunc = _UFUNC_OF[kind]
    if np.dtype(dtype) == np.bool_:
        ufunc = {np.add: np.logical_or, np.maximum: np.logical_or, np.minimum: np.logical_and,
                 np.multiply: np.logical_and, np.bitwise_and: np.logical_and,
                 np.bitwise_or: np.logical_or, np.bitwise_xor: np.logical_xor}[ufunc]
    return ufunc


def call_elementwise(ctx, comp, arrays):
    """ctx.call_elementwise, always returning a list of arrays."""
    out = ctx.call_elementwise(comp, list(arrays))
    if isinstance(out, (tuple, list)):
        return [np.asarray(o) for o in out]
    return [np.asarray(out)]


def make_combiner(ctx, comp, dtypes):
    """A function (currents, updates) -> new currents for a reducer computation.

    ``currents`` and ``updates`` are lists of equally shaped arrays (one per
    operand of a variadic op). Uses a NumPy ufunc when the computation is a
    single recognized binary op, else evaluates ``comp`` vectorized.
    """
    kind = reducer_kind(comp) if len(dtypes) == 1 else None
    if kind is not None:
        op, swapped = kind
        dtype = np.dtype(dtypes[0])
        if op == "assign":
            return lambda cur, upd: [np.asarray(upd[0], dtype)]
        if op == "keep":
            return lambda cur, upd: [np.asarray(cur[0], dtype)]
        ufunc = ufunc_for(op, dtype)
        if swapped:
            fn = lambda cur, upd: [np.asarray(ufunc(upd[0], cur[0]), dtype)]  # noqa: E731
        else:
            fn = lambda cur, upd: [np.asarray(ufunc(cur[0], upd[0]), dtype)]  # noqa: E731
        # Commutative (bitwise-exactly, NaN payloads aside): ufunc.at may be used.
        fn.ufunc = ufunc
        return fn

    def combine(cur, upd):
        outs = call_elementwise(ctx, comp, list(cur) + list(upd))
        return [np.asarray(o, dt) for o, dt in zip(outs, dtypes)]
    return combine


def occurrence_rank(idx):
    """For each position of 1-D ``idx``, how many earlier positions hold the same value."""
    n = idx.shape[0]
    if n == 0:
        return np.zeros(0, np.int64)
    order = np.argsort(idx, kind="stable")
    sorted_idx = idx[order]
    is_start = np.ones(n, bool)
    is_start[1:] = sorted_idx[1:] != sorted_idx[:-1]
    group_start = np.maximum.accumulate(np.where(is_start, np.arange(n), 0))
    rank = np.empty(n, np.int64)
    rank[order] = np.arange(n) - group_start
    return rank


def apply_updates_in_order(targets, idx, updates, combine):
    """targets[k][idx[i]] = combine(targets[idx[i]], updates[i]) for i in order.

    ``targets`` are flat arrays updated in place; ``idx`` a 1-D int64 array;
    ``updates`` flat arrays aligned with idx. Updates to distinct positions
    are combined in one vectorized call; repeated positions are handled in
    rounds so that each position sees its updates in their original order.
    """
    if idx.size == 0:
        return
    ufunc = getattr(combine, "ufunc", None)
    if ufunc is not None and len(targets) == 1:
        # ufunc.at is unbuffered and applies repeated indices in order.
        ufunc.at(targets[0], idx, np.asarray(updates[0], targets[0].dtype))
        return
    rank = occurrence_rank(idx)
    max_rank = int(rank.max())
    for r in range(max_rank + 1):
        sel = rank == r if max_rank else slice(None)
        where = idx[sel]
        cur = [t[where] for t in targets]
        new = combine(cur, [u[sel] for u in updates])
        for t, v in zip(targets, new):
            t[where] = v


def compute_dtype(result_dtype, *operand_dtypes):
    """The NumPy dtype an arithmetic op computes in before casting to the result.

    Integers compute in 64 bits (wraparound, then truncation to the result
    type gives XLA's modular result); narrow floats in f32.
    """
    result_dtype = np.dtype(result_dtype)
    if result_dtype == np.bool_:
        return np.dtype(np.int64)
    if result_dtype.kind in "iu" or from_dtype(result_dtype).is_integer:
        unsigned = from_dtype(result_dtype).is_unsigned_integer
        return np.dtype(np.uint64) if unsigned else np.dtype(np.int64)
    if result_dtype.kind == "c":
        return result_dtype
    if result_dtype.kind == "V" or result_dtype.itemsize < 4 or result_dtype not in (
            np.dtype(np.float32), np.dtype(np.float64)):
        # bf16, f16, f8 ...: compute in f32 (or f64 if an operand is f64).
        if any(np.dtype(d) == np.float64 for d in operand_dtypes):
            return np.dtype(np.float64)
        return np.dtype(np.float32)
    return result_dtype


def to_compute(x, dtype):
    """Converts an operand to the compute dtype, keeping integer values exact."""
    x = np.asarray(x)
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        if x.dtype.kind == "V" and from_dtype(x.dtype).is_integer:  # ml_dtypes' int1..uint4
            return x.astype(np.int64).astype(dtype)
        if x.dtype.kind == "f" or x.dtype.kind == "V":
            return x.astype(np.float64).astype(np.int64).astype(dtype)
        if x.dtype.kind == "c":
            return x.real.astype(np.int64).astype(dtype)
        # int -> int64/uint64: value preserving, or modular for negative -> uint64.
        return x.astype(np.int64).astype(dtype) if dtype == np.uint64 and x.dtype.kind == "i" else x.astype(dtype)
    if x.dtype.kind == "c" and dtype.kind != "c":
        return x.real.astype(dtype)
    return x.astype(dtype)


def from_compute(x, result_dtype):
    """Casts a computed value to the result dtype (integers: modular truncation)."""
    result_dtype = np.dtype(result_dtype)
    x = np.asarray(x)
    if result_dtype == np.bool_:
        return x != 0
    if x.dtype.kind in "iu" and result_dtype.kind == "V":  # to int1..uint4: modular
        return x.astype(np.int64).astype(result_dtype)
    return x.astype(result_dtype)


def window_indices(in_size, wd, out_size, k):
    """Input positions of window offset ``k`` for every output position.

    For one dimension of a window ``wd`` (a WindowDimension) over an input
    of ``in_size`` elements: output position o covers position
    ``o*stride + k*window_dilation`` of the padded, base-dilated input.
    Returns (index, valid): valid is False where that position is padding
    or a hole of the base dilation (index is then clipped to 0).
    """
    o = np.arange(out_size, dtype=np.int64)
    pos = o * wd.stride + k * wd.window_dilation - wd.padding_low
    dilated = (in_size - 1) * wd.base_dilation + 1 if in_size > 0 else 0
    valid = (pos >= 0) & (pos < dilated) & (pos % wd.base_dilation == 0)
    idx = np.where(valid, pos // wd.base_dilation, 0)
    return idx, valid


def window_output_size(in_size, wd):
    padded = ((in_size - 1) * wd.base_dilation + 1 if in_size > 0 else 0) + wd.padding_low + wd.padding_high
    eff = (wd.size - 1) * wd.window_dilation + 1
    if padded < eff:
        return 0
    return (padded - eff) // wd.stride + 1


def total_order_key(x):
    """Integer keys ordering floats like XLA's TOTALORDER comparison.

    -NaN < -inf < ... < -0 < +0 < ... < +inf < +NaN; integers map to
    themselves (as int64/uint64) and pred to 0/1.
    """
    x = np.asarray(x)
    if x.dtype == np.bool_:
        return x.astype(np.int8)
    if x.dtype.kind in "iu":
        return x
    if x.dtype.kind == "c":
        raise TypeError("no total order key for complex values")
    et = from_dtype(x.dtype)
    if et.is_integer:  # ml_dtypes' int1..uint4
        return x.astype(np.int64)
    if et in MINIFLOAT_FORMATS:
        return MINIFLOAT_FORMATS[et].total_order_keys(x.view(np.uint8))
    if x.dtype.kind == "V":  # bf16: sign and magnitude
        u = x.view(np.uint16).astype(np.int64)
        return np.where(u >> 15, -(u & 0x7FFF) - 1, u & 0x7FFF)
    itype = {2: np.int16, 4: np.int32, 8: np.int64}[x.dtype.itemsize]
    s = x.view(itype)
    return np.where(s < 0, s ^ np.array(np.iinfo(itype).max, itype), s)


def primitive_type_of(shape):
    return shape.element_type if shape.element_type is not PrimitiveType.TUPLE else None
