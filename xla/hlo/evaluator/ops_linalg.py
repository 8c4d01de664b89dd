"""Interpreter handlers: dot, ragged-dot, scaled-dot, convolution, cholesky, triangular-solve, fft.

Precision: integer results are computed in 64-bit integers and truncated to
the result type, which is exactly XLA's wraparound arithmetic in the result
type (operands are first converted, value-preserving, to the result type).
bf16/f16/f8 results are computed in f32 and rounded once at the end, as
XLA:CPU does after its float-normalization passes. The result element type
is the preferred element type (mixed dots such as s8 x s8 -> s32 or
bf16 x bf16 -> f32). ``operand_precision`` and ``algorithm`` are ignored.
"""
import math

import numpy as np

from xla.hlo.evaluator.ops_common import compute_dtype, from_compute, to_compute
from xla.hlo.evaluator.registry import register
from xla.errors import UnimplementedError


def _matmul(a, b):
    """Batched matmul; on int64/uint64 NumPy wraps modulo 2**64 (no overflow checks)."""
    return np.matmul(a, b)


def _dot_dims(instr):
    return (tuple(instr.attr("lhs_batch_dims", ())), tuple(instr.attr("rhs_batch_dims", ())),
            tuple(instr.attr("lhs_contracting_dims", ())),
            tuple(instr.attr("rhs_contracting_dims", ())))


@register("dot")
def dot(instr, operands, ctx):
    lhs, rhs = operands
    lb, rb, lc, rc = _dot_dims(instr)
    out_dtype = instr.shape.dtype
    cdt = compute_dtype(out_dtype, lhs.dtype, rhs.dtype)
    return from_compute(_dot_general(to_compute(lhs, cdt), to_compute(rhs, cdt), lb, rb, lc, rc),
                        out_dtype)


def _dot_general(lhs, rhs, lb, rb, lc, rc):
    """The dot of two arrays of one compute dtype: batch, lhs free, rhs free dimensions."""
    cdt = lhs.dtype
    lf = [d for d in range(lhs.ndim) if d not in lb and d not in lc]
    rf = [d for d in range(rhs.ndim) if d not in rb and d not in rc]
    bshape = [lhs.shape[d] for d in lb]
    B = int(np.prod(bshape, dtype=np.int64))
    M = int(np.prod([lhs.shape[d] for d in lf], dtype=np.int64))
    N = int(np.prod([rhs.shape[d] for d in rf], dtype=np.int64))
    K = int(np.prod([lhs.shape[d] for d in lc], dtype=np.int64))
    a = np.transpose(lhs, list(lb) + lf + list(lc)).reshape(B, M, K)
    b = np.transpose(rhs, list(rb) + list(rc) + rf).reshape(B, K, N)
    if K == 0:
        out = np.zeros((B, M, N), cdt)
    else:
        out = _matmul(a, b)
    return out.reshape(bshape + [lhs.shape[d] for d in lf] + [rhs.shape[d] for d in rf])


@register("scaled-dot")
def scaled_dot(instr, operands, ctx):
    """XLA's ScaledDot (operands lhs, lhs_scale, rhs, rhs_scale, as jaxlib
    0.10.2 orders them): each scale element multiplies its block of the
    operand (``infer_scaled_dot_shape``), in the compute type, then the dot."""
    lhs, lhs_scale, rhs, rhs_scale = operands
    lb, rb, lc, rc = _dot_dims(instr)
    out_dtype = instr.shape.dtype
    cdt = compute_dtype(out_dtype, lhs.dtype, rhs.dtype)

    def scaled(x, scale):
        x, scale = to_compute(x, cdt), to_compute(np.asarray(scale), cdt)
        for d in range(scale.ndim):
            scale = np.repeat(scale, x.shape[d] // scale.shape[d], axis=d)
        return x * scale

    return from_compute(_dot_general(scaled(lhs, lhs_scale), scaled(rhs, rhs_scale), lb, rb, lc, rc),
                        out_dtype)


@register("ragged-dot")
def ragged_dot(instr, operands, ctx):
    """XLA's RaggedDot. group_sizes splits the lhs ragged dimension into
    consecutive groups (group i covers [sum of sizes before i, that + size
    i)); positions past the last group belong to none. A group_sizes of
    rank 1 applies to every position of its prefix dimensions
    (``ragged_dot_mode``). By the kind of ragged dimension:

    - non-contracting: a row of group i is multiplied with slice i of rhs
      along the rhs group dimension; a row in no group is zero;
    - contracting: result slice i is the dot over group i's part of the
      contracting dimension only;
    - batch: the dot itself: every batch position is computed, in a group
      or not (as XLA computes jax.lax.ragged_dot_general, the reference of
      tests/service/fixtures/gen_ragged_dot.py).

    Entries outside a group are selected out, never multiplied by zero, so
    an inf or NaN there does not reach the result.
    """
    from xla.hlo.shape_functions_compute import ragged_dot_mode
    lhs, rhs, group_sizes = operands
    lb, rb, lc, rc = _dot_dims(instr)
    mode = ragged_dot_mode(lhs.ndim, lc, lb, tuple(instr.attr("lhs_ragged_dims", ())),
                           tuple(instr.attr("rhs_group_dims", ())))
    out_dtype = instr.shape.dtype
    cdt = compute_dtype(out_dtype, lhs.dtype, rhs.dtype)
    lhs, rhs = to_compute(lhs, cdt), to_compute(rhs, cdt)
    sizes = np.asarray(group_sizes).astype(np.int64)
    g = sizes.shape[-1]
    prefix = list(mode.group_prefix)
    sizes = np.broadcast_to(sizes, [lhs.shape[d] for d in prefix] + [g])
    ends = np.cumsum(sizes, axis=-1)
    starts = ends - sizes
    # in_group[i]: over the lhs dimensions prefix + [ragged], then moved to
    # their lhs positions (other lhs dimensions of size 1).
    pos = np.arange(lhs.shape[mode.ragged])
    in_group = (starts[..., None] <= pos) & (pos < ends[..., None])   # prefix..., g, R
    in_group = np.moveaxis(in_group, -2, 0)                           # g, prefix..., R
    axes = prefix + [mode.ragged]
    in_group = np.transpose(in_group, [0] + [1 + axes.index(d) for d in sorted(axes)])
    in_group = in_group.reshape((g,) + tuple(lhs.shape[d] if d in axes else 1
                                             for d in range(lhs.ndim)))

    def on_rhs(mask):
        """A mask over lhs batch/contracting dimensions, laid out for rhs."""
        lhs_axes = [d for d in range(lhs.ndim) if mask.shape[d] != 1 or d in axes]
        to_rhs = dict(zip(lb + lc, rb + rc))
        m = np.transpose(mask, lhs_axes + [d for d in range(lhs.ndim) if d not in lhs_axes])
        m = m.reshape([mask.shape[d] for d in lhs_axes])
        rhs_axes = [to_rhs[d] for d in lhs_axes]
        order = sorted(range(len(rhs_axes)), key=lambda k: rhs_axes[k])
        m = np.transpose(m, order)
        return m.reshape([rhs.shape[d] if d in rhs_axes else 1 for d in range(rhs.ndim)])

    zero = np.zeros((), cdt)
    if mode.kind == "noncontracting":
        gd = mode.group_dim
        rb2 = tuple(d - (d > gd) for d in rb)
        rc2 = tuple(d - (d > gd) for d in rc)
        lf = [d for d in range(lhs.ndim) if d not in lb and d not in lc]
        out = None
        for i in range(g):
            part = _dot_general(lhs, np.take(rhs, i, axis=gd), lb, rb2, lc, rc2)
            # in_group[i] over lhs dimensions, as the result's: batch, lhs free, rhs free.
            rows = np.transpose(in_group[i], list(lb) + lf + list(lc))
            rows = rows.reshape(rows.shape[:len(lb) + len(lf)] + (1,) * (part.ndim - len(lb) - len(lf)))
            out = np.where(rows, part, zero if out is None else out)
        if out is None:
            out = np.zeros(instr.shape.dimensions, cdt)
    elif mode.kind == "contracting":
        parts = [_dot_general(np.where(in_group[i], lhs, zero), np.where(on_rhs(in_group[i]), rhs, zero),
                              lb, rb, lc, rc) for i in range(g)]
        out = np.stack(parts) if parts else np.zeros(instr.shape.dimensions, cdt)
    else:
        out = _dot_general(lhs, rhs, lb, rb, lc, rc)
    return from_compute(out, out_dtype)


# ----------------------------------------------------------------------------
# convolution
# ----------------------------------------------------------------------------

@register("convolution")
def convolution(instr, operands, ctx):
    """XLA's ConvGeneralDilated.

    With input batch N, input features C, kernel output features O:
    feature_group_count G splits C into G groups of C/G (the kernel's input
    feature dimension is C/G) and O into G groups; output feature o uses
    input feature group o // (O/G). batch_group_count Bg splits the input
    batch into Bg contiguous groups of N/Bg (the output batch is N/Bg) and
    O into Bg groups; output feature o reads input batch group o // (O/Bg).
    Spatially, output position o of a dimension covers the positions
    ``o*stride + k*rhs_dilate`` (k over the kernel, reversed if
    rhs_reversal) of the input dilated by lhs_dilate and padded by pad
    (negative padding crops).
    """
    lhs, rhs = operands
    dn = instr.attr("dim_labels")
    window = instr.attr("window")
    G = int(instr.attr("feature_group_count", 1) or 1)
    Bg = int(instr.attr("batch_group_count", 1) or 1)
    out_dtype = instr.shape.dtype
    cdt = compute_dtype(out_dtype, lhs.dtype, rhs.dtype)
    nsp = len(dn.input_spatial_dimensions)
    wdims = list(window.dimensions) if window is not None else []
    if not wdims and nsp:
        raise UnimplementedError("convolution without a window on the interpreter")

    # Canonical layouts: x (N, C, S...), w (O, I, K...).
    x = np.transpose(to_compute(lhs, cdt), [dn.input_batch_dimension, dn.input_feature_dimension]
                     + list(dn.input_spatial_dimensions))
    w = np.transpose(to_compute(rhs, cdt), [dn.kernel_output_feature_dimension,
                                            dn.kernel_input_feature_dimension]
                     + list(dn.kernel_spatial_dimensions))
    N, C = x.shape[:2]
    O, I = w.shape[:2]
    ksizes = w.shape[2:]
    for d, wd in enumerate(wdims):
        if wd.window_reversal:
            w = np.flip(w, axis=2 + d)

    out_sp = [instr.shape.dimensions[d] for d in dn.output_spatial_dimensions]
    P = int(np.prod(out_sp, dtype=np.int64))

    if G > 1 and Bg > 1:
        raise UnimplementedError("convolution with both feature_group_count and batch_group_count > 1")
    if Bg > 1:
        Nb = N // Bg
        Ob = O // Bg
        # x: (Bg, Nb, C, S...) ; w: (Bg, Ob, C, K...)
        xg = x.reshape((Bg, Nb, C) + x.shape[2:])
        wg = w.reshape((Bg, Ob, C) + tuple(ksizes))
        acc = np.zeros((Bg, Ob, Nb * P), cdt)
        groups, Ig = Bg, C
    else:
        Ig = C // G
        Og = O // G
        # x: (G, Ig, N, S...) as groups; w: (G, Og, Ig, K...)
        xg = np.moveaxis(x.reshape((N, G, Ig) + x.shape[2:]), 0, 2)  # (G, Ig, N, S...)
        wg = w.reshape((G, Og, Ig) + tuple(ksizes))
        acc = np.zeros((G, Og, N * P), cdt)
        groups = G

    if P > 0 and N > 0:
        per_dim = []
        for d in range(nsp):
            in_size = x.shape[2 + d]
            per_dim.append([_conv_positions(in_size, wdims[d], out_sp[d], k) for k in range(ksizes[d])])
        for koff in np.ndindex(*ksizes):
            idxs = [per_dim[d][k][0] for d, k in enumerate(koff)]
            valids = [per_dim[d][k][1] for d, k in enumerate(koff)]
            if not all(v.any() for v in valids):
                continue
            mask = None
            for d, v in enumerate(valids):
                if not v.all():
                    shape = [1] * nsp
                    shape[d] = -1
                    m = v.reshape(shape)
                    mask = m if mask is None else (mask & m)
            if Bg > 1:
                sl = xg[(slice(None), slice(None), slice(None)) + np.ix_(*idxs)] if nsp else xg
                if mask is not None:
                    sl = np.where(mask, sl, np.zeros((), cdt))
                # (Bg, Nb, C, P) -> (Bg, C, Nb*P)
                sl = np.moveaxis(sl.reshape(Bg, Nb, C, P), 2, 1).reshape(Bg, C, Nb * P)
                wk = wg[(slice(None), slice(None), slice(None)) + tuple(koff)]  # (Bg, Ob, C)
            else:
                sl = xg[(slice(None), slice(None), slice(None)) + np.ix_(*idxs)] if nsp else xg
                if mask is not None:
                    sl = np.where(mask, sl, np.zeros((), cdt))
                sl = sl.reshape(groups, Ig, N * P)
                wk = wg[(slice(None), slice(None), slice(None)) + tuple(koff)]  # (G, Og, Ig)
            acc += np.matmul(wk, sl)

    if Bg > 1:
        out = acc.reshape(Bg * Ob, Nb, *out_sp)            # (O, Nb, S...)
        out = np.moveaxis(out, 1, 0)                       # (Nb, O, S...)
    else:
        out = acc.reshape(groups * (O // groups), N, *out_sp)
        out = np.moveaxis(out, 1, 0)                       # (N, O, S...)
    # Canonical (N, O, S...) -> the output's dimension order.
    perm = [0] * (2 + nsp)
    perm[dn.output_batch_dimension] = 0
    perm[dn.output_feature_dimension] = 1
    for i, d in enumerate(dn.output_spatial_dimensions):
        perm[d] = 2 + i
    out = np.transpose(out, perm)
    return from_compute(out, out_dtype)


def _conv_positions(in_size, wd, out_size, k):
    o = np.arange(out_size, dtype=np.int64)
    pos = o * wd.stride + k * wd.window_dilation - wd.padding_low
    dilated = (in_size - 1) * wd.base_dilation + 1 if in_size > 0 else 0
    valid = (pos >= 0) & (pos < dilated) & (pos % wd.base_dilation == 0)
    return np.where(valid, pos // wd.base_dilation, 0), valid


# ----------------------------------------------------------------------------
# cholesky, triangular-solve
# ----------------------------------------------------------------------------

def _linalg_dtype(dtype):
    dtype = np.dtype(dtype)
    if dtype.kind == "c":
        return dtype
    if dtype == np.float64:
        return dtype
    return np.dtype(np.float32)


@register("cholesky")
def cholesky(instr, operands, ctx):
    """Batched Cholesky; reads only the ``lower`` (or upper) triangle.

    lower=true gives L with a = L L^H, else U with a = U^H U; the other
    triangle of the result is zero. A matrix that is not positive definite
    gives an all-NaN result for that matrix (XLA leaves NaNs in it): a
    pivot that is not > 0, or is NaN (LAPACK's potrf checks for NaN too;
    NumPy's factorization lets it through, leaving NaN on the diagonal).
    """
    (a,) = operands
    lower = bool(instr.attr("lower", False))
    out_dtype = instr.shape.dtype
    x = a.astype(_linalg_dtype(a.dtype))
    n = x.shape[-1]
    tri = np.tril(x) if lower else np.triu(x)
    strict = np.tril(x, -1) if lower else np.triu(x, 1)
    herm = tri + np.conj(np.swapaxes(strict, -1, -2))
    # (the batch size, not -1: NumPy cannot infer it where n is 0)
    flat = herm.reshape((math.prod(x.shape[:-2]), n, n))
    out = np.empty_like(flat)
    try:
        with np.errstate(all="ignore"):
            out[...] = np.linalg.cholesky(flat) if flat.shape[0] else flat
    except np.linalg.LinAlgError:
        for i in range(flat.shape[0]):
            try:
                with np.errstate(all="ignore"):
                    out[i] = np.linalg.cholesky(flat[i])
            except np.linalg.LinAlgError:
                out[i] = np.nan
    out[np.isnan(np.diagonal(out, axis1=-2, axis2=-1)).any(axis=-1)] = np.nan
    out = out.reshape(x.shape)
    if not lower:
        out = np.conj(np.swapaxes(out, -1, -2))  # a = L L^H = U^H U with U = L^H
    return out.astype(out_dtype)


@register("triangular-solve")
def triangular_solve(instr, operands, ctx):
    """Solves op(a) x = b (left_side) or x op(a) = b, batched.

    Only the ``lower`` (or upper) triangle of a is read; with unit_diagonal
    its diagonal is taken as ones. op is the identity, transpose or
    conjugate transpose (transpose_a NO_TRANSPOSE/TRANSPOSE/ADJOINT).
    A zero on the diagonal gives inf/NaN, as plain substitution does.
    """
    a, b = operands
    left = bool(instr.attr("left_side", False))
    lower = bool(instr.attr("lower", False))
    unit = bool(instr.attr("unit_diagonal", False))
    trans = instr.attr("transpose_a", "NO_TRANSPOSE") or "NO_TRANSPOSE"
    trans = getattr(trans, "text", trans)  # a builder's RawAttr, the parser's str
    out_dtype = instr.shape.dtype
    cdt = _linalg_dtype(out_dtype)
    A = a.astype(cdt)
    B = b.astype(cdt)
    A = np.tril(A) if lower else np.triu(A)
    if unit:
        n = A.shape[-1]
        eye = np.eye(n, dtype=bool)
        A = np.where(eye, np.ones((), cdt), A)
    is_lower = lower
    if trans in ("TRANSPOSE", "ADJOINT"):
        A = np.swapaxes(A, -1, -2)
        if trans == "ADJOINT":
            A = np.conj(A)
        is_lower = not is_lower
    if left:
        x = _solve_left(A, B, is_lower)
    else:
        # x A = b  <=>  A^T x^T = b^T
        At = np.swapaxes(A, -1, -2)
        x = np.swapaxes(_solve_left(At, np.swapaxes(B, -1, -2), not is_lower), -1, -2)
    return x.astype(out_dtype)


def _solve_left(A, B, lower):
    """Solves A X = B for triangular A by substitution, vectorized over batch and columns."""
    n = A.shape[-1]
    X = np.zeros(np.broadcast_shapes(A.shape[:-2], B.shape[:-2]) + B.shape[-2:], A.dtype)
    rows = range(n) if lower else range(n - 1, -1, -1)
    with np.errstate(all="ignore"):
        for i in rows:
            if lower:
                s = np.einsum("...j,...jk->...k", A[..., i, :i], X[..., :i, :]) if i else 0
            else:
                s = np.einsum("...j,...jk->...k", A[..., i, i + 1:], X[..., i + 1:, :]) if i < n - 1 else 0
            X[..., i, :] = (B[..., i, :] - s) / A[..., i, i][..., None]
    return X


# ----------------------------------------------------------------------------
# fft
# ----------------------------------------------------------------------------

@register("fft")
def fft(instr, operands, ctx):
    """FFT over the last len(fft_length) dimensions (numpy.fft, computed in f64/c128)."""
    (x,) = operands
    kind = instr.attr("fft_type", "FFT")
    lengths = [int(v) for v in instr.attr("fft_length", ())]
    axes = tuple(range(x.ndim - len(lengths), x.ndim))
    out_dtype = instr.shape.dtype
    if kind == "FFT":
        out = np.fft.fftn(x.astype(np.complex128), axes=axes)
    elif kind == "IFFT":
        out = np.fft.ifftn(x.astype(np.complex128), axes=axes)
    elif kind == "RFFT":
        out = np.fft.rfftn(x.astype(np.float64), s=lengths, axes=axes)
    elif kind == "IRFFT":
        out = np.fft.irfftn(x.astype(np.complex128), s=lengths, axes=axes)
    else:
        raise UnimplementedError(f"fft_type {kind} on the interpreter")
    return out.astype(out_dtype)
