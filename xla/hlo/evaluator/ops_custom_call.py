"""Interpreter handler: custom-call, dispatched on ``custom_call_target``.

``CUSTOM_CALL_TARGETS`` maps a target name to a function
``fn(instr, operands, ctx) -> value`` with the handler contract of
registry.py. The targets are those XLA:CPU dumps of JAX programs contain;
an unknown target raises UnimplementedError naming it.
"""

import math

import numpy as np

from xla.hlo.custom_call_signatures import backend_config_attrs
from xla.hlo.evaluator import ops_linalg
from xla.hlo.evaluator.ops_sort import top_k
from xla.hlo.evaluator.registry import register
from xla.errors import UnimplementedError

CUSTOM_CALL_TARGETS = {}


def custom_call_target(*names):
    def wrap(fn):
        for name in names:
            if name in CUSTOM_CALL_TARGETS:
                raise ValueError(f"custom-call target {name} registered twice")
            CUSTOM_CALL_TARGETS[name] = fn
        return fn
    return wrap


@register("custom-call")
def custom_call(instr, operands, ctx):
    target = instr.attr("custom_call_target")
    fn = CUSTOM_CALL_TARGETS.get(target)
    if fn is None:
        raise UnimplementedError(
            f"custom-call target {target!r} ({instr.name}) is not implemented on the interpreter")
    return fn(instr, operands, ctx)


@custom_call_target("TopK", "__cpu$TopK")
def _topk(instr, operands, ctx):
    """TopK as XLA's TopkRewriter emits it: (values, s32 indices) of the k
    largest along the last dimension, k from the result shape."""
    (x,) = operands
    values_shape, indices_shape = instr.shape.tuple_shapes
    k = values_shape.dimensions[-1]
    values, indices = top_k(x, k, largest=True)
    return values.astype(values_shape.dtype), indices.astype(indices_shape.dtype)


@custom_call_target("Sharding", "SPMDFullToShardShape", "SPMDShardToFullShape",
                    "MoveToHost", "MoveToDevice", "annotate_device_placement")
def _identity(instr, operands, ctx):
    """Annotations that do not change values on a single device."""
    return np.asarray(operands[0]).astype(instr.shape.dtype, copy=False)


# ----------------------------------------------------------------------------
# LAPACK targets of jaxlib's CPU kernels (``lapack_<t><routine>_ffi``, t in
# s/d/c/z). Attributes come in backend_config as an MLIR dictionary such as
# ``{uplo = 76 : ui8}`` (character codes: 'L' = 76, 'U' = 85, 'N' = 78,
# 'T' = 84, 'C' = 67, 'R' = 82). Results follow LAPACK: potrf leaves the
# other triangle as it was and reports a positive info for a matrix that
# is not positive definite; getrf returns 1-based pivots.
# ----------------------------------------------------------------------------


def _char(attrs, name, default):
    v = attrs.get(name)
    return chr(v) if v is not None else default


def _results(instr):
    return list(instr.shape.tuple_shapes) if instr.shape.is_tuple else [instr.shape]


def _lapack_targets(routine):
    return [f"lapack_{t}{routine}{suffix}" for t in "sdcz" for suffix in ("_ffi", "")]


def _factor(m):
    """The lower Cholesky factor of ``m``, or None where a pivot is not > 0
    or is NaN (LAPACK's check; NumPy's factorization lets NaN through)."""
    try:
        with np.errstate(invalid="ignore"):
            L = np.linalg.cholesky(m)
    except np.linalg.LinAlgError:
        return None
    return None if np.isnan(np.diagonal(L)).any() else L


def _leading_minor_failure(m):
    """LAPACK potrf's info for a matrix that is not positive definite (1-based order)."""
    n = m.shape[-1]
    for k in range(1, n + 1):
        if _factor(m[:k, :k]) is None:
            return k
    return n


def _matrices(x):
    """``x`` as one batch dimension of matrices (its size computed, as
    NumPy cannot infer a -1 where a matrix has no elements)."""
    return x.reshape((math.prod(x.shape[:-2]),) + x.shape[-2:])


@custom_call_target(*_lapack_targets("potrf"))
def _potrf(instr, operands, ctx):
    a = np.asarray(operands[0])
    attrs = backend_config_attrs(instr)
    lower = _char(attrs, "uplo", "L") == "L"
    shapes = _results(instr)
    n = a.shape[-1]
    x = a.astype(ops_linalg._linalg_dtype(a.dtype))
    tri = np.tril(x) if lower else np.triu(x)
    strict = np.tril(x, -1) if lower else np.triu(x, 1)
    herm = _matrices(tri + np.conj(np.swapaxes(strict, -1, -2)))
    fac = np.array(_matrices(x), copy=True)
    info = np.zeros(herm.shape[0], np.int32)
    mask = np.tril(np.ones((n, n), bool)) if lower else np.triu(np.ones((n, n), bool))
    for i in range(herm.shape[0]):
        L = _factor(herm[i])
        if L is None:
            info[i] = _leading_minor_failure(herm[i])
            continue
        f = L if lower else np.conj(L.T)
        fac[i] = np.where(mask, f, fac[i])
    out = [fac.reshape(a.shape).astype(shapes[0].dtype)]
    if len(shapes) > 1:
        out.append(info.reshape(shapes[1].dimensions).astype(shapes[1].dtype))
    return tuple(out) if instr.shape.is_tuple else out[0]


@custom_call_target(*_lapack_targets("trsm"))
def _trsm(instr, operands, ctx):
    a, b = np.asarray(operands[0]), np.asarray(operands[1])
    attrs = backend_config_attrs(instr)
    left = _char(attrs, "side", "L") == "L"
    lower = _char(attrs, "uplo", "L") == "L"
    trans = {"N": "NO_TRANSPOSE", "T": "TRANSPOSE", "C": "ADJOINT"}[_char(attrs, "trans_x", "N")]
    unit = _char(attrs, "diag", "N") == "U"
    shapes = _results(instr)
    from xla.hlo.ir import HloInstruction
    fake = HloInstruction("triangular-solve", shapes[0], attrs={
        "left_side": left, "lower": lower, "unit_diagonal": unit, "transpose_a": trans})
    x = ops_linalg.triangular_solve(fake, [a, b], ctx)
    if len(operands) > 2 and np.ndim(operands[2]) == 0:
        x = x * np.asarray(operands[2])   # alpha
    return x if not instr.shape.is_tuple else (x,)


@custom_call_target(*_lapack_targets("getrf"))
def _getrf(instr, operands, ctx):
    """LU with partial pivoting (pivot = first entry of largest |.|), 1-based ipiv."""
    a = np.asarray(operands[0])
    shapes = _results(instr)
    m, n = a.shape[-2:]
    x = np.array(_matrices(a.astype(ops_linalg._linalg_dtype(a.dtype))), copy=True)
    B = x.shape[0]
    k = min(m, n)
    ipiv = np.zeros((B, k), np.int32)
    info = np.zeros(B, np.int32)
    rows = np.arange(B)
    with np.errstate(all="ignore"):
        for j in range(k):
            col = np.abs(x[:, j:, j])
            p = j + np.argmax(col, axis=1)
            ipiv[:, j] = p + 1
            pr = x[rows, p, :].copy()
            x[rows, p, :] = x[:, j, :]
            x[:, j, :] = pr
            piv = x[:, j, j]
            zero = piv == 0
            info = np.where(zero & (info == 0), j + 1, info)
            scale = np.where(zero, 1, piv)
            x[:, j + 1:, j] = np.where(zero[:, None], x[:, j + 1:, j], x[:, j + 1:, j] / scale[:, None])
            x[:, j + 1:, j + 1:] -= x[:, j + 1:, j:j + 1] * x[:, j:j + 1, j + 1:]
    out = [x.reshape(a.shape).astype(shapes[0].dtype),
           ipiv.reshape(shapes[1].dimensions).astype(shapes[1].dtype)]
    if len(shapes) > 2:
        out.append(info.reshape(shapes[2].dimensions).astype(shapes[2].dtype))
    return tuple(out)


@custom_call_target(*_lapack_targets("geqrf"))
def _geqrf(instr, operands, ctx):
    """Householder QR in LAPACK's (a, tau) form, via numpy's geqrf (mode='raw')."""
    a = np.asarray(operands[0])
    shapes = _results(instr)
    m, n = a.shape[-2:]
    x = _matrices(a.astype(ops_linalg._linalg_dtype(a.dtype)))
    hs, taus = [], []
    for i in range(x.shape[0]):
        h, tau = np.linalg.qr(x[i], mode="raw")
        hs.append(h.T)
        taus.append(tau)
    h = np.stack(hs) if hs else np.zeros_like(x)
    tau = np.stack(taus) if taus else np.zeros((0, min(m, n)), x.dtype)
    return (h.reshape(a.shape).astype(shapes[0].dtype),
            tau.reshape(shapes[1].dimensions).astype(shapes[1].dtype))


@custom_call_target(*_lapack_targets("orgqr"), *_lapack_targets("ungqr"))
def _orgqr(instr, operands, ctx):
    """Q = H_1 ... H_k (first n columns) from Householder vectors and taus."""
    a, tau = np.asarray(operands[0]), np.asarray(operands[1])
    shapes = _results(instr)
    m, n = a.shape[-2:]
    k = tau.shape[-1]
    dt = ops_linalg._linalg_dtype(a.dtype)
    v = np.tril(_matrices(a.astype(dt))[..., :k], -1)
    idx = np.arange(min(m, k))
    v[:, idx, idx] = 1
    t = tau.astype(dt).reshape((v.shape[0], k))
    q = np.broadcast_to(np.eye(m, n, dtype=dt), v.shape[:1] + (m, n)).copy()
    for j in range(k - 1, -1, -1):
        vj = v[:, :, j]                                          # (B, m)
        w = np.einsum("bm,bmn->bn", np.conj(vj), q)
        q -= t[:, j, None, None] * vj[:, :, None] * w[:, None, :]
    q = q.reshape(a.shape).astype(shapes[0].dtype)
    return q if not instr.shape.is_tuple else (q,)


@custom_call_target(*_lapack_targets("syevd"), *_lapack_targets("heevd"))
def _syevd(instr, operands, ctx):
    """Symmetric eigendecomposition: (eigenvectors as columns, ascending
    eigenvalues, info); ``mode`` 'N': no vectors (the first result is the
    operand)."""
    a = np.asarray(operands[0])
    attrs = backend_config_attrs(instr)
    lower = _char(attrs, "uplo", "L") == "L"
    shapes = _results(instr)
    dt = ops_linalg._linalg_dtype(a.dtype)
    w, v = np.linalg.eigh(a.astype(dt), UPLO="L" if lower else "U")
    if _char(attrs, "mode", "V") == "N":
        v = a   # no vectors: the operand, as the CPU runtime leaves it
    out = [v.astype(shapes[0].dtype), w.reshape(shapes[1].dimensions).astype(shapes[1].dtype)]
    for s in shapes[2:]:
        out.append(np.zeros(s.dimensions, s.dtype))
    return tuple(out)


@custom_call_target(*_lapack_targets("gesdd"))
def _gesdd(instr, operands, ctx):
    """SVD: (a, s descending, u, vt, info); ``mode`` 'A' full u and vt,
    'S' reduced, 'N' singular values only (u and vt zero). A matrix NumPy's
    SVD does not converge on gives info 1 and NaN."""
    a = np.asarray(operands[0])
    shapes = _results(instr)
    attrs = backend_config_attrs(instr)
    mode = _char(attrs, "mode", "A")
    m, n = a.shape[-2:]
    k = min(m, n)
    x = _matrices(a.astype(ops_linalg._linalg_dtype(a.dtype)))
    s = np.full((x.shape[0], k), np.nan, _real_dtype(x.dtype))
    u = np.full((x.shape[0],) + shapes[2].dimensions[-2:], np.nan, x.dtype)
    vt = np.full((x.shape[0],) + shapes[3].dimensions[-2:], np.nan, x.dtype)
    info = np.zeros(x.shape[0], np.int32)
    for i in range(x.shape[0]):
        try:
            if mode == "N":
                s[i] = np.linalg.svd(x[i], compute_uv=False)
                u[i], vt[i] = 0, 0
            else:
                u[i], s[i], vt[i] = np.linalg.svd(x[i], full_matrices=mode == "A")
        except np.linalg.LinAlgError:
            info[i] = 1
    return (a.astype(shapes[0].dtype, copy=True),
            s.reshape(shapes[1].dimensions).astype(shapes[1].dtype),
            u.reshape(shapes[2].dimensions).astype(shapes[2].dtype),
            vt.reshape(shapes[3].dimensions).astype(shapes[3].dtype),
            info.reshape(shapes[4].dimensions).astype(shapes[4].dtype))


def _real_dtype(dt):
    return np.empty((), dt).real.dtype


def _geev_scale(v):
    """The columns of ``v`` (..., n, n) at unit 2-norm with their largest
    component (the first of largest magnitude) real and positive: LAPACK's
    geev leaves them of unit norm with that component real, of either sign;
    the CPU runtime's scaling, kept alike here."""
    norm = np.linalg.norm(v, axis=-2, keepdims=True)
    v = v / np.where(norm > 0, norm, 1)
    k = np.argmax(np.abs(v), axis=-2)[..., None, :]
    big = np.take_along_axis(v, k, axis=-2)
    phase = np.conj(big) / np.where(big != 0, np.abs(big), 1)
    return v * np.where(big != 0, phase, 1)


@custom_call_target(*_lapack_targets("geev"))
def _geev(instr, operands, ctx):
    """General eigendecomposition, NumPy's (LAPACK's geev): the eigenvalues
    in its order, as (wr, wi) of a real matrix or w of a complex one, and
    the right eigenvectors as columns (``_geev_scale``), when
    ``compute_right`` is 'V' (else zero); ``vl`` is zero. ``info`` -4 for
    a matrix with a NaN or an infinity (jaxlib's kernel), 1 where the
    solver does not converge; the results are then NaN. Left eigenvectors
    (``compute_left`` 'V') are refused."""
    a = np.asarray(operands[0])
    shapes = _results(instr)
    attrs = backend_config_attrs(instr)
    if _char(attrs, "compute_left", "N") == "V":
        raise UnimplementedError(f"{instr.attr('custom_call_target')} ({instr.name}): left "
                                 "eigenvectors (compute_left 'V') are not computed")
    right = _char(attrs, "compute_right", "V") == "V"
    n = a.shape[-1]
    x = _matrices(a)
    cdt = shapes[-2].dtype
    w = np.full((x.shape[0], n), np.nan, cdt)
    vr = np.zeros((x.shape[0], n, n), cdt)
    info = np.zeros(x.shape[0], np.int32)
    for i in range(x.shape[0]):
        if not np.isfinite(x[i]).all():
            info[i] = -4
        else:
            try:
                if right:
                    w[i], vr[i] = np.linalg.eig(x[i])
                else:
                    w[i] = np.linalg.eigvals(x[i])
                continue
            except np.linalg.LinAlgError:
                info[i] = 1
        if right:
            vr[i] = np.nan
    if right and n:
        vr = _geev_scale(vr)
    batch = a.shape[:-2]
    vr = vr.reshape(batch + (n, n))
    w = w.reshape(batch + (n,))
    vl = np.zeros(batch + (n, n), cdt)
    info = info.reshape(batch)
    if len(shapes) == 5:
        wr_dt = shapes[0].dtype
        return (w.real.astype(wr_dt), w.imag.astype(wr_dt), vl, vr, info)
    return (w.astype(shapes[0].dtype), vl, vr, info)
