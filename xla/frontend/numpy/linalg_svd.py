"""``np.linalg.svd`` and ``np.linalg.lstsq`` under ``xla.jit``: a composite
call ``xla.svd`` (``xla.lax.composite``; lstsq through it), which backends
that implement it run with their solver (the CPU's runtime), and the others
by its decomposition, one-sided (Hestenes) Jacobi rotations in an HLO while
loop. ``pinv``, ``matrix_rank``, ``cond``, ``svdvals`` and ``matrix_norm``'s
spectral norms are NumPy's formulas over it. Registration only, as
``linalg.py``.

One-sided Jacobi, for ``a`` (m, n) with m >= n (a wider matrix is done
transposed; a tall one, m > 2n, is first reduced to the n x n R of its QR
factorization): the columns of ``u = a`` are rotated in pairs, each
rotation making a pair orthogonal, and every rotation applied to ``v = I``
too, so ``a @ v == u`` throughout. A pair (p, q) is rotated when ``|u_p .
u_q| > m * eps * |u_p| |u_q|``; the sweeps stop after one that rotates
nothing (at most 40). Each sweep is n - 1 rounds of n / 2 disjoint pairs
rotated at once (a round-robin tournament, ``_jacobi``; an odd n plays
against a zero column). The singular values are then the column norms,
``u``'s columns divided by them are the left singular vectors and ``v``
the right ones. The rotations act on ``a`` itself, not on ``a.T @ a``
(whose rounding, ``eps * s[0]**2``, loses the singular values below
``sqrt(eps) * s[0]``): the singular values agree with LAPACK's to
rounding of ``s[0]``, small ones included.

Left singular vectors for zero singular values, and the rest of a full
``u``, are completed by a Householder QR of the normalized columns
(``linalg.qr``), signed so that ``a @ v == u * s`` still holds. Singular
vectors are determined up to sign (and within repeated singular values),
as LAPACK's are: compare reconstructions, not vectors. 2-D real matrices.
"""
import builtins

import numpy as np

from xla.frontend import lax
from xla.frontend.numpy._common import implements
from xla.frontend.numpy.linalg import _solve, norm, qr
from xla.frontend.tracing import as_tracer, convert, tracing_error

_MAX_SWEEPS = 40


def _jacobi(a):
    """``(u, v)`` with ``a @ v == u``, ``v`` orthogonal and ``u``'s columns
    orthogonal; ``a`` (m, n), n >= 2 even (padded by the caller).

    The columns are kept in tournament order (the circle method): in every
    round, position ``i`` plays position ``n - 1 - i``, and between rounds
    positions 1 .. n-1 shift left by one, so every pair meets once in n - 1
    rounds and the order is back where it started after a sweep. Static
    slices only: no gather."""
    m, n = a.shape
    half = n // 2
    tol = np.asarray(m * np.finfo(a.dtype).eps, a.dtype)

    # Transposed: the columns are rows, contiguous, reduced along the last axis.
    def rotate(_, state):
        ut, vt, rotated = state
        up, uq = ut[:half], np.flip(ut[half:], axis=0)
        alpha, beta = np.sum(up * up, axis=1), np.sum(uq * uq, axis=1)
        gamma = np.sum(up * uq, axis=1)
        act = np.abs(gamma) > tol * np.sqrt(alpha) * np.sqrt(beta)
        zeta = (beta - alpha) / np.where(act, 2 * gamma, np.ones_like(gamma))
        sign = np.where(zeta >= 0, np.ones_like(zeta), -np.ones_like(zeta))
        t = sign / (np.abs(zeta) + np.sqrt(1 + zeta * zeta))
        t = np.where(act, t, np.zeros_like(t))
        c = (1 / np.sqrt(1 + t * t))[:, None]
        s = c * t[:, None]

        def turn(x):
            xp, xq = x[:half], np.flip(x[half:], axis=0)
            x = np.concatenate([c * xp - s * xq, np.flip(s * xp + c * xq, axis=0)], axis=0)
            return np.concatenate([x[:1], x[2:], x[1:2]], axis=0)

        return turn(ut), turn(vt), rotated | np.any(act)

    def sweep(state):
        ut, vt, _, count = state
        ut, vt, rotated = lax.fori_loop(0, n - 1, rotate, (ut, vt, np.asarray(False)))
        return ut, vt, rotated, count + 1

    def more(state):
        return state[2] & (state[3] < _MAX_SWEEPS)

    ut, vt, _, _ = lax.while_loop(more, sweep, (np.swapaxes(a, 0, 1), np.eye(n, dtype=a.dtype),
                                                np.asarray(True), np.asarray(0)))
    return np.swapaxes(ut, 0, 1), np.swapaxes(vt, 0, 1)


def _svd(a, full_matrices, compute_uv):
    """``a`` (m, n) real float, m >= n."""
    m, n = a.shape
    if n == 0:
        s = np.zeros((0,), a.dtype)
        return s, np.eye(m, m if full_matrices else 0, dtype=a.dtype), np.zeros((0, 0), a.dtype)
    factor = None
    if n >= 2 and m > 2 * n:
        # Tall: the rotations work on R of a = QR (n x n), and U = Q @ U_R.
        factor, a = qr(a, mode="reduced") if compute_uv else (None, qr(a, mode="r"))
    if n == 1:
        u, v = a, as_tracer(np.ones((1, 1), a.dtype))
    else:
        rows = a.shape[0]
        padded = a if n % 2 == 0 else np.concatenate([a, np.zeros((rows, 1), a.dtype)], axis=1)
        u, v = _jacobi(padded)
        u, v = u[:, :n], v[:n, :n]     # the zero column is never rotated
    s = np.sqrt(np.sum(u * u, axis=0))
    if factor is not None:
        u = factor @ u
    order = np.argsort(-s, kind="stable")
    s = np.take(s, order)
    if not compute_uv:
        return s, None, None
    u, v = np.take(u, order, axis=1), np.take(v, order, axis=1)
    zero = s == 0
    u = u / np.where(zero, np.ones_like(s), s)
    q, r = qr(u, mode="complete" if full_matrices else "reduced")
    d = np.diagonal(r)
    signs = np.where(d < 0, -np.ones_like(d), np.ones_like(d))
    if q.shape[1] > n:
        signs = np.concatenate([signs, np.ones((q.shape[1] - n,), a.dtype)])
    return s, q * signs, np.swapaxes(v, 0, 1)


def _real_matrix(a, what):
    a = as_tracer(a)
    if a.ndim != 2:
        raise tracing_error(f"{what} under xla.jit takes a 2-D matrix (a stack: loop over it)")
    if a.dtype.kind in "iub":
        a = convert(a, np.float64)
    if a.dtype.kind != "f":
        raise tracing_error(f"{what} under xla.jit takes real matrices (complex is not supported)")
    return a


@implements(np.linalg.svd)
def svd(a, full_matrices=True, compute_uv=True, hermitian=False):
    """NumPy's ``svd``: ``(U, S, Vh)`` with ``a == U[:, :k] * S @ Vh[:k]``, or
    ``S`` alone; singular values descending. ``hermitian=True`` (where NumPy
    uses eigh) takes the general method: the same factorization, up to
    the signs of the vectors. A composite call ``xla.svd`` (attributes
    ``full_matrices``, ``compute_uv``; ``xla.lax.composite``): backends that
    implement it call their solver (the CPU's runtime: LAPACK's gesdd
    semantics), the others run the Jacobi decomposition above."""
    a = _real_matrix(a, "np.linalg.svd")
    return lax.composite(_svd_decomposition, "xla.svd")(
        a, full_matrices=bool(full_matrices), compute_uv=bool(compute_uv))


def _svd_decomposition(a, full_matrices, compute_uv):
    """The decomposition of ``xla.svd``: ``(u, s, vh)``, or ``s``."""
    m, n = a.shape
    if m >= n:
        s, u, vh = _svd(a, full_matrices, compute_uv)
    else:
        s, v, uh = _svd(np.swapaxes(a, 0, 1), full_matrices, compute_uv)
        if compute_uv:
            u, vh = np.swapaxes(uh, 0, 1), np.swapaxes(v, 0, 1)
    if not compute_uv:
        return s
    return u, s, vh


@implements(np.linalg.lstsq)
def lstsq(a, b, rcond=None):
    """NumPy's ``lstsq``: ``(x, residuals, rank, s)``, the minimum-norm
    least-squares solution through the SVD, singular values at most ``rcond
    * s[0]`` counting as zero (``rcond=None``: ``eps * max(m, n)``; a
    negative ``rcond``: ``eps``, as LAPACK's gelsd). ``rank`` is a 0-d int64
    array. The residuals are the squared column norms of ``b - a @ x`` when
    m > n, and empty when m <= n, as NumPy's; NumPy also returns an empty
    array when the rank is below n, a shape that depends on the values, so
    they are NaN there instead."""
    a = _real_matrix(a, "np.linalg.lstsq")
    b = as_tracer(b)
    if b.dtype.kind in "iub":
        b = convert(b, np.float64)
    if b.dtype.kind != "f":
        raise tracing_error("np.linalg.lstsq under xla.jit takes real right-hand sides")
    vector = b.ndim == 1
    if b.ndim not in (1, 2):
        raise tracing_error("np.linalg.lstsq under xla.jit takes a 1-D or 2-D b")
    m, n = a.shape
    if b.shape[0] != m:
        raise np.linalg.LinAlgError("Incompatible dimensions")
    dt = np.result_type(a.dtype, b.dtype)
    a, b = a.astype(dt), b.astype(dt)
    b2 = b[:, None] if vector else b
    k = builtins.min(m, n)
    eps = np.finfo(dt).eps
    cut = eps * builtins.max(m, n) if rcond is None else eps if rcond < 0 else rcond
    if k == 0:
        x = np.zeros((n, b2.shape[1]), dt)
        s = np.zeros((0,), dt)
        rank = np.asarray(0)
    else:
        u, s, vh = svd(a, full_matrices=False)
        keep = s > np.asarray(cut, dt) * s[0]
        inv = np.where(keep, 1 / np.where(keep, s, np.ones_like(s)), np.zeros_like(s))
        x = np.swapaxes(vh, 0, 1) @ (inv[:, None] * (np.swapaxes(u, 0, 1) @ b2))
        rank = np.sum(keep.astype(np.int64))
    if m > n:
        r = b2 - a @ x
        resid = np.sum(r * r, axis=0)
        resid = np.where(rank == n, resid, np.full_like(resid, np.nan))
    else:
        resid = np.zeros((0,), dt)
    return (x[:, 0] if vector else x), resid, rank, s


# ----- through the singular values -------------------------------------------------------

@implements(np.linalg.svdvals)
def svdvals(x, /):
    return svd(x, compute_uv=False)


@implements(np.linalg.matrix_norm)
def matrix_norm(x, /, *, keepdims=False, ord="fro"):
    """``norm`` over the last two axes; ``ord`` 2, -2 and 'nuc' (the largest,
    smallest and summed singular values) through ``svd`` (2-D matrices)."""
    x = as_tracer(x)
    if ord in (2, -2, "nuc"):
        s = svdvals(x)
        r = np.max(s) if ord == 2 else np.min(s) if ord == -2 else np.sum(s)
        return np.reshape(r, (1, 1)) if keepdims else r
    return norm(x, axis=(-2, -1), keepdims=keepdims, ord=ord)


@implements(np.linalg.pinv)
def pinv(a, rcond=None, hermitian=False, *, rtol=np._NoValue):
    """NumPy's pseudo-inverse: ``vt.T @ (s⁺[:, None] * u.T)`` of the reduced
    SVD, singular values at most ``rcond * max(s)`` taken as zero (``rcond``
    1e-15 by default; ``rtol=None``: ``max(m, n) * eps``). 2-D real
    matrices (``svd``'s)."""
    if rcond is None:
        if rtol is np._NoValue:
            rcond = 1e-15
        elif rtol is None:
            rcond = builtins.max(a.shape[-2:]) * np.finfo(as_tracer(a).dtype).eps   # (ints raise, as NumPy)
        else:
            rcond = rtol
    elif rtol is not np._NoValue:
        raise ValueError("`rtol` and `rcond` can't be both set.")
    a = _real_matrix(a, "np.linalg.pinv")
    m, n = a.shape
    if m == 0 or n == 0:
        return np.zeros((n, m), a.dtype)
    u, s, vt = svd(a, full_matrices=False)
    cutoff = np.multiply(rcond, np.max(s, axis=-1, keepdims=True))
    large = s > cutoff
    s = np.where(large, 1 / np.where(large, s, np.ones_like(s)), np.zeros_like(s))
    return np.matmul(np.transpose(vt), np.multiply(s[:, None], np.transpose(u)))


@implements(np.linalg.matrix_rank)
def matrix_rank(A, tol=None, hermitian=False, *, rtol=None):
    """The number of singular values above ``tol`` (default ``max(s) *
    max(m, n) * eps``; ``rtol``: ``max(s) * rtol``), an int64 0-d array: the
    count is a fact of the values. Arrays of fewer than two dimensions:
    whether any element is nonzero (NumPy returns a Python int there)."""
    if rtol is not None and tol is not None:
        raise ValueError("`tol` and `rtol` can't be both set.")
    A = as_tracer(A)
    if A.ndim < 2:
        return np.logical_not(np.all(np.equal(A, 0))).astype(np.int64)
    s = svd(A, compute_uv=False)
    if tol is None:
        if rtol is None:
            rtol = builtins.max(A.shape[-2:]) * np.finfo(s.dtype).eps
        tol = np.multiply(np.max(s, axis=-1, keepdims=True, initial=0), rtol)
    return np.count_nonzero(s > tol, axis=-1)


@implements(np.linalg.cond)
def cond(x, p=None):
    """NumPy's condition number: ``s[0] / s[-1]`` (``p`` None or 2; -2 the
    inverse) from ``svd``, otherwise ``norm(x, p) * norm(inv(x), p)`` with
    a singular matrix giving inf as NumPy's; a NaN result is inf unless
    ``x`` holds a NaN. 2-D real matrices."""
    x = _real_matrix(x, "np.linalg.cond")
    if x.size == 0:
        raise np.linalg.LinAlgError("cond is not defined on empty arrays")
    if p is None or p in (2, -2):
        s = svd(x, compute_uv=False)
        r = s[-1] / s[0] if p == -2 else s[0] / s[-1]
    else:
        if x.shape[0] != x.shape[1]:
            raise np.linalg.LinAlgError("Last 2 dimensions of the array must be square")
        inverse, info = lax.composite(_solve, "xla.solve")(x, np.eye(x.shape[0], dtype=x.dtype))
        r = norm(x, p, axis=(-2, -1)) * norm(inverse, p, axis=(-2, -1))
        r = np.where(info != 0, np.asarray(np.inf, r.dtype), r)
    nan = np.isnan(r) & np.logical_not(np.any(np.isnan(x)))
    return np.where(nan, np.asarray(np.inf, r.dtype), r)
