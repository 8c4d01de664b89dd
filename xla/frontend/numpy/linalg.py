"""``numpy.linalg`` under ``xla.jit``: ``norm`` from reductions,
``cholesky`` as HLO's own op, ``solve``, ``inv``, ``det``, ``slogdet`` and
``qr`` as composite calls whose decompositions are HLO while loops, and
``eigh`` as a composite call whose decomposition is Jacobi rotations in HLO
while loops (qr and eigh: their own docstrings); ``eigvalsh``,
``matrix_power``, ``multi_dot`` and ``vector_norm`` on top. Registration only: NumPy keeps these names under
``np.linalg``, so ``xla.numpy`` does not export them.

``solve`` and ``inv`` (``solve`` with the identity) are a composite call
``xla.solve`` (``xla.lax.composite``), ``(a, b) -> (x, info)``, whose
decomposition is the loops below: backends that implement it call their
solver (the CPU's runtime: LAPACK's getrf of ``[a | b]``, then a
triangular solve), the others inline it. ``info`` is getrf's: per matrix,
0, or the 1-based index of the first exact zero on U's diagonal. ``det`` and ``slogdet`` read U's diagonal and the pivots of a
composite ``xla.lu`` (``jax.lax.linalg.lu``'s ``(lu, pivots)``; the CPU:
getrf), decomposed by ``_lu``.

``solve``, ``inv``, ``det`` and ``slogdet``: LU
factorization with partial pivoting, as LAPACK's gesv computes it, on
traced values (an HLO while loop over the columns, then one over the rows
for the back substitution).

Column ``k``: the row with the largest ``|a[i, k]|`` for ``i >= k`` (the
first such row on ties, as LAPACK's ``idamax``) is swapped with row ``k``;
the rows below subtract ``a[i, k] / a[k, k]`` times row ``k``. The right
hand sides ride along as extra columns. Every step is written with selects
over the whole (batched) matrix, so stacks ``(..., n, n)`` work as NumPy's
do. Results agree with NumPy's to rounding (LAPACK blocks the same
operations differently). A singular matrix (``info`` not 0, as NumPy's
gesv reports it) makes ``solve`` and ``inv`` raise NumPy's
``LinAlgError("Singular matrix")`` after the call (``xla.lax.checks``;
the values are infinities or NaNs); ``det`` is then 0 and ``slogdet``
(0, -inf), as NumPy's (``_lu`` divides by no zero pivot, as getrf). The determinant is the
product of U's diagonal, negated once per row swap.
"""
import builtins  # sum, max and min are NumPy's here (from reductions)
import operator

import numpy as np

from xla.errors import ShapeError
from xla.frontend import lax
from xla.frontend.lax import checks
from xla.frontend.numpy._common import implements, normalize_axis
from xla.frontend.numpy.manipulation import squeeze, swapaxes
from xla.frontend.numpy.reductions import max, min, sum
from xla.frontend.tracing import as_tracer, convert, tracing_error


# ----- norms and HLO's cholesky ------------------------------------------------------------

@implements(np.linalg.norm)
def norm(x, ord=None, axis=None, keepdims=False):
    x = as_tracer(x)
    if x.dtype.kind not in "fc":
        x = convert(x, np.float64)
    absx = np.abs(x)
    if axis is None and ord is None:
        return np.sqrt(sum(np.real(x * np.conjugate(x)) if x.dtype.kind == "c" else x * x,
                           keepdims=keepdims) if not keepdims else
                       sum(absx * absx, axis=None, keepdims=True))
    if axis is None:
        axis = tuple(range(x.ndim))
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    if len(axes) == 1:
        if ord is None or ord == 2:
            return np.sqrt(sum(absx * absx, axis=axes, keepdims=keepdims))
        if ord == np.inf:
            return max(absx, axis=axes, keepdims=keepdims)
        if ord == -np.inf:
            return min(absx, axis=axes, keepdims=keepdims)
        if ord == 0:
            return sum(np.not_equal(x, 0).astype(absx.dtype), axis=axes, keepdims=keepdims)
        if ord == 1:
            return sum(absx, axis=axes, keepdims=keepdims)
        p = np.asarray(ord, absx.dtype)
        return sum(absx ** p, axis=axes, keepdims=keepdims) ** (1 / p)
    if len(axes) == 2:
        r, c = (normalize_axis(a, x.ndim) for a in axes)
        if ord in (None, "fro"):
            return np.sqrt(sum(absx * absx, axis=axes, keepdims=keepdims))
        if ord == 1:
            out = max(sum(absx, axis=r, keepdims=True), axis=c, keepdims=True)
        elif ord == -1:
            out = min(sum(absx, axis=r, keepdims=True), axis=c, keepdims=True)
        elif ord == np.inf:
            out = max(sum(absx, axis=c, keepdims=True), axis=r, keepdims=True)
        elif ord == -np.inf:
            out = min(sum(absx, axis=c, keepdims=True), axis=r, keepdims=True)
        else:
            raise tracing_error(f"np.linalg.norm(ord={ord!r}) for matrices is not supported under "
                                "xla.jit (None, 'fro', 1, -1, inf, -inf are)")
        return out if keepdims else squeeze(out, axis=(r, c))
    raise ValueError("Improper number of dimensions to norm.")


@implements(np.linalg.cholesky)
def cholesky(a, /, *, upper=False):
    """HLO cholesky. A matrix that is not positive definite (a pivot that
    is not > 0) makes the call raise NumPy's ``LinAlgError("Matrix is not
    positive definite")`` (``xla.lax.checks``): HLO's cholesky leaves that
    matrix all NaN, and its lower triangle, which is what is read, was
    finite (NumPy's factorization lets a NaN through without raising)."""
    a = as_tracer(a)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ShapeError(f"Last 2 dimensions of the array must be square, got {a.shape}")
    if a.dtype.kind not in "fc":
        a = convert(a, np.float64)
    if a.shape[-1] == 0:     # no pivot to fail (nor to compute: the interpreter's cholesky refuses)
        return np.zeros(a.shape, a.dtype)
    low = lax.linalg.cholesky(a, symmetrize_input=False)
    failed = np.any(np.isnan(np.diagonal(low, axis1=-2, axis2=-1)), axis=-1) & \
        np.all(np.isfinite(np.tril(a)), axis=(-2, -1))
    checks.error_if(failed, np.linalg.LinAlgError, "Matrix is not positive definite")
    return np.conjugate(swapaxes(low, -1, -2)) if upper else low


# ----- LU, QR and Jacobi -------------------------------------------------------------------


def _float_matrix(a):
    """``a`` as a Tracer, integers and bools as float64 (NumPy's linalg
    computes them in double)."""
    a = as_tracer(a)
    return convert(a, np.float64) if a.dtype.kind in "iub" else a


def square_stack(a):
    """NumPy's LinAlgErrors for what is not a stack of square matrices."""
    if a.ndim < 2:
        raise np.linalg.LinAlgError(f"{a.ndim}-dimensional array given. Array must be at least "
                                    "two-dimensional")
    if a.shape[-1] != a.shape[-2]:
        raise np.linalg.LinAlgError("Last 2 dimensions of the array must be square")


def _check_square(a, what):
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise np.linalg.LinAlgError(f"Last 2 dimensions of the array must be square ({what})")
    if a.dtype.kind not in "fc":
        raise tracing_error(f"{what}: integer matrices are converted by NumPy to float64; "
                            "convert with .astype(np.float64) first under xla.jit")


def _solve(a, b):
    """The decomposition of ``xla.solve``: ``(x, info)``, ``x`` with ``a @ x
    == b``, ``a`` (..., n, n), ``b`` (..., n, k) of one float dtype and
    batch, ``info`` int32 (...) getrf's (module docstring)."""
    n = a.shape[-1]
    # Eliminating a's columns of [a | b] carries b along: U and L^-1 P b.
    m, _ = _lu(np.concatenate([a, b], axis=-1))            # (..., n, n + k)
    u, y = m[..., :n], m[..., n:]
    rows = np.arange(n).reshape((n, 1))                   # (n, 1)
    ucols = np.arange(n)

    def substitute(j, x):
        i = n - 1 - j
        is_i = rows == i
        u_i = _pick_row(u, is_i)                          # (..., 1, n)
        diag = np.sum(np.where(ucols == i, u_i, np.zeros_like(u_i)), axis=-1, keepdims=True)
        upper = np.where(ucols > i, u_i, np.zeros_like(u_i))
        s = _pick_row(y, is_i) - upper @ x                # (..., 1, k)
        return np.where(is_i, s / diag, x)

    zero = np.diagonal(u, axis1=-2, axis2=-1) == 0
    info = np.where(np.any(zero, axis=-1), np.argmax(zero, axis=-1).astype(np.int32) + 1, 0)
    return lax.fori_loop(0, n, substitute, np.zeros_like(y)), info


def _solved(a, b):
    """``xla.solve`` of ``a`` and ``b``, raising NumPy's error after the
    call where ``a`` is singular; 0 x 0 matrices solve to an empty ``x``
    (as NumPy's), without a call."""
    if a.shape[-1] == 0:
        return np.zeros(b.shape, b.dtype)
    x, info = lax.composite(_solve, "xla.solve")(a, b)
    checks.error_if(info != 0, np.linalg.LinAlgError, "Singular matrix")
    return x


@implements(np.linalg.solve)
def solve(a, b):
    a, b = _float_matrix(a), as_tracer(b)
    _check_square(a, "np.linalg.solve")
    dt = np.result_type(a.dtype, b.dtype)
    vector = b.ndim == 1
    if vector:
        if b.shape[0] != a.shape[-1]:
            raise ValueError(f"solve: Input operand 1 has a mismatch in its core dimension 0 "
                             f"({b.shape[0]} is different from {a.shape[-1]})")
        b = np.broadcast_to(b[:, None], a.shape[:-2] + (a.shape[-1], 1))
    elif b.shape[-2] != a.shape[-1]:
        raise ValueError(f"solve: Input operand 1 has a mismatch in its core dimension 0 "
                         f"({b.shape[-2]} is different from {a.shape[-1]})")
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = np.broadcast_to(a.astype(dt), batch + a.shape[-2:])
    b = np.broadcast_to(b.astype(dt), batch + b.shape[-2:])
    x = _solved(a, b)
    return x[..., 0] if vector else x


@implements(np.linalg.inv)
def inv(a):
    a = _float_matrix(a)
    _check_square(a, "np.linalg.inv")
    n = a.shape[-1]
    eye = np.broadcast_to(np.eye(n, dtype=a.dtype), a.shape)
    return _solved(a, eye)


def _pick_row(x, index_mask):
    """The row of ``x`` (..., n, c) where ``index_mask`` (..., n, 1) holds."""
    return np.sum(np.where(index_mask, x, np.zeros_like(x)), axis=-2, keepdims=True)


def _lu(a):
    """The decomposition of ``xla.lu``: LAPACK's getrf of ``a`` (..., n, n),
    as ``jax.lax.linalg.lu``'s first two results: ``(lu, pivots)``, L
    (unit diagonal) below the diagonal and U on and above it, ``pivots``
    int32 (..., n) the 0-based row swapped with row ``k`` at step ``k``. A
    zero pivot eliminates nothing (as getrf: no division by it). Columns of
    ``a`` (..., n, c) past the n-th are carried along (``_solve``)."""
    n = a.shape[-2]
    rows = np.arange(n).reshape((n, 1))
    cols = np.arange(a.shape[-1])
    steps = np.arange(n)

    def eliminate(k, state):
        m, pivots = state
        col = np.sum(np.where(cols == k, m, np.zeros_like(m)), axis=-1, keepdims=True)  # (..., n, 1)
        size = np.where(rows >= k, np.abs(col), -np.ones_like(np.abs(col)))
        p = np.argmax(size, axis=-2)[..., None]           # (..., 1, 1)
        is_k, is_p = rows == k, rows == p
        row_k, row_p = _pick_row(m, is_k), _pick_row(m, is_p)
        m = np.where(is_k, row_p, np.where(is_p, row_k, m))
        pivot = np.sum(np.where(cols == k, row_p, np.zeros_like(row_p)), axis=-1, keepdims=True)
        col = np.sum(np.where(cols == k, m, np.zeros_like(m)), axis=-1, keepdims=True)
        zero = pivot == 0
        factor = np.where((rows > k) & ~zero, col / np.where(zero, np.ones_like(pivot), pivot),
                          np.zeros_like(col))
        upper = np.where(cols > k, row_p, np.zeros_like(row_p))
        m = np.where((rows > k) & (cols == k), factor, m - factor * upper)
        pivots = np.where(steps == k, p[..., 0].astype(np.int32), pivots)
        return m, pivots

    return lax.fori_loop(0, n, eliminate, (a, np.zeros(a.shape[:-1], dtype=np.int32)))


def _diagonal_and_sign(a, what):
    a = as_tracer(a)
    _check_square(a, what)
    n = a.shape[-1]
    if n == 0:
        return None, a.shape[:-2]
    lu, pivots = lax.composite(_lu, "xla.lu")(a)
    diag = np.diagonal(lu, axis1=-2, axis2=-1)
    swaps = np.sum((pivots != np.arange(n, dtype=np.int32)).astype(np.int64), axis=-1)
    sign = 1 - 2 * (swaps % 2)
    return (diag, sign), None


@implements(np.linalg.det)
def det(a):
    a = _float_matrix(a)
    parts, batch = _diagonal_and_sign(a, "np.linalg.det")
    if parts is None:
        return np.ones(batch, dtype=as_tracer(a).dtype)
    diag, sign = parts
    return np.prod(diag, axis=-1) * sign.astype(diag.dtype)


@implements(np.linalg.slogdet)
def slogdet(a):
    a = _float_matrix(a)
    parts, batch = _diagonal_and_sign(a, "np.linalg.slogdet")
    dt = as_tracer(a).dtype
    if parts is None:
        return np.ones(batch, dtype=dt), np.zeros(batch, dtype=np.abs(np.zeros((), dt)).dtype)
    diag, sign = parts
    mag = np.abs(diag)
    logabs = np.sum(np.log(mag), axis=-1)
    unit = diag / np.where(mag == 0, np.ones_like(mag), mag).astype(diag.dtype)
    s = np.prod(unit, axis=-1) * sign.astype(diag.dtype)
    s = np.where(np.any(mag == 0, axis=-1), np.zeros_like(s), s)
    return s, logabs


@implements(np.linalg.qr)
def qr(a, mode="reduced"):
    """Householder QR as LAPACK's geqrf and orgqr compute it (dlarfg's sign
    choice: R's diagonal is ``-sign(alpha) * ||column||``, a column already
    zero below the diagonal is left as it is), so Q and R agree with NumPy's
    to rounding. Real matrices, stacks ``(..., m, n)`` too (each matrix of
    the stack reflected at once); ``mode`` "reduced", "complete" or "r".
    Two composite calls, as ``jax.lax.linalg.qr``: ``xla.geqrf`` (``_geqrf``)
    and ``xla.householder_product`` (orgqr; ``_householder_product``), which
    the CPU runs in its runtime and other backends inline."""
    a = _float_matrix(a)
    if a.ndim < 2:
        raise tracing_error("np.linalg.qr under xla.jit takes a matrix or a stack of them "
                            f"(..., m, n), got {a.ndim} dimension(s)")
    if a.dtype.kind not in "f":
        raise tracing_error("np.linalg.qr under xla.jit takes float matrices (convert integers "
                            "with .astype(np.float64), as NumPy does; complex is not supported)")
    if mode not in ("reduced", "complete", "r"):
        raise ValueError(f"Unrecognized mode '{mode}'")
    batch, (m, n) = a.shape[:-2], a.shape[-2:]
    k = builtins.min(m, n)
    packed, taus = lax.composite(_geqrf, "xla.geqrf")(a)
    r_rows = m if mode == "complete" else k
    r = np.triu(packed[..., :r_rows, :])
    if mode == "r":
        return r
    q_cols = m if mode == "complete" else k
    if q_cols <= n:
        reflectors = packed[..., :, :q_cols]
    else:
        reflectors = np.concatenate([packed, np.zeros(batch + (m, q_cols - n), a.dtype)], axis=-1)
    q = lax.composite(_householder_product, "xla.householder_product")(reflectors, taus)
    return q, r


def _geqrf(a):
    """The decomposition of ``xla.geqrf``: LAPACK's geqrf of ``a`` (..., m,
    n): ``(packed, taus)``, R on and above the diagonal, below it the
    reflectors ``v`` (``v[j] = 1`` implied) of ``H_j = I - tau_j v v^T``."""
    batch, (m, n) = a.shape[:-2], a.shape[-2:]
    k = builtins.min(m, n)
    rows = np.arange(m)
    cols = np.arange(n)
    ks = np.arange(k)

    def reflect(j, state):
        r, vs, taus = state
        col = np.sum(np.where(cols == j, r, np.zeros_like(r)), axis=-1)            # r[..., :, j]
        alpha = np.sum(np.where(rows == j, col, np.zeros_like(col)), axis=-1)
        x = np.where(rows > j, col, np.zeros_like(col))
        xnorm = np.sqrt(np.sum(x * x, axis=-1))
        still = xnorm == 0
        beta = np.where(still, alpha, -np.copysign(np.hypot(alpha, xnorm), alpha))
        safe = np.where(still, np.ones_like(beta), beta)
        tau = np.where(still, np.zeros_like(beta), (beta - alpha) / safe)
        scale = np.where(still, np.ones_like(beta), alpha - beta)[..., None]
        v = np.where(rows == j, np.ones_like(col), np.where(rows > j, x / scale, np.zeros_like(col)))
        w = (v[..., None, :] @ r)[..., 0, :]
        w = np.where(cols >= j, w, np.zeros_like(w))
        r = r - tau[..., None, None] * (v[..., :, None] * w[..., None, :])
        # Column j: beta on the diagonal, zeros below (as LAPACK leaves R).
        r = np.where((cols == j) & (rows[:, None] > j), np.zeros_like(r), r)
        r = np.where((cols == j) & (rows[:, None] == j), beta[..., None, None], r)
        vs = np.where(ks == j, v[..., :, None], vs)
        taus = np.where(ks == j, tau[..., None], taus)
        return r, vs, taus

    r, vs, taus = lax.fori_loop(0, k, reflect, (a, np.zeros(batch + (m, k), a.dtype),
                                                np.zeros(batch + (k,), a.dtype)))
    if k < n:
        vs = np.concatenate([vs, np.zeros(batch + (m, n - k), a.dtype)], axis=-1)
    below = rows[:, None] > cols
    return np.where(below, vs, r), taus


def _householder_product(packed, taus):
    """The decomposition of ``xla.householder_product``: LAPACK's orgqr, the
    first ``c`` columns of ``H_0 ... H_{k-1}`` for ``packed`` (..., m, c)
    (the reflectors below its diagonal, as geqrf leaves them) and ``taus``
    (..., k), k <= c."""
    batch, (m, c) = packed.shape[:-2], packed.shape[-2:]
    k = taus.shape[-1]
    rows = np.arange(m)
    cols = np.arange(c)
    ks = np.arange(k)

    def accumulate(step, q):
        j = k - 1 - step
        col = np.sum(np.where(cols == j, packed, np.zeros_like(packed)), axis=-1)
        v = np.where(rows == j, np.ones_like(col), np.where(rows > j, col, np.zeros_like(col)))
        tau = np.sum(np.where(ks == j, taus, np.zeros_like(taus)), axis=-1)
        vq = (v[..., None, :] @ q)[..., 0, :]
        return q - tau[..., None, None] * (v[..., :, None] * vq[..., None, :])

    eye = np.broadcast_to(np.eye(m, c, dtype=packed.dtype), batch + (m, c))
    return lax.fori_loop(0, k, accumulate, eye)


@implements(np.linalg.eigh)
def eigh(a, UPLO="L"):
    """Eigenvalues (ascending) and eigenvectors (columns) of a real symmetric
    matrix, read from the ``UPLO`` triangle as in NumPy; real matrices,
    stacks ``(..., n, n)`` too. A composite call ``xla.eigh`` (attribute
    ``lower``; ``xla.lax.composite``): backends that implement it call
    their solver (the CPU's runtime: LAPACK's syevd semantics), the others
    run ``_jacobi_eigh``. The eigenvalues agree with LAPACK's to rounding;
    each eigenvector is determined up to its sign, which LAPACK does not fix
    either: this one makes its largest component positive, whichever way
    it was computed."""
    a = _float_matrix(a)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise tracing_error("np.linalg.eigh under xla.jit takes square matrices (..., n, n), "
                            f"got shape {a.shape}")
    if a.dtype.kind != "f":
        raise tracing_error("np.linalg.eigh under xla.jit takes real float matrices")
    if UPLO not in ("L", "U"):
        raise ValueError("UPLO argument must be 'L' or 'U'")
    w, v = lax.composite(_jacobi_eigh, "xla.eigh")(a, lower=UPLO == "L")
    # A sign per eigenvector: its largest component positive.
    big = np.take_along_axis(v, np.argmax(np.abs(v), axis=-2)[..., None, :], axis=-2)
    v = v * np.where(big < 0, -np.ones_like(big), np.ones_like(big))
    return w, v


def _jacobi_eigh(a, lower):
    """The decomposition of ``xla.eigh``: ``(w, v)`` by cyclic Jacobi
    rotations, sweeps until the off-diagonal part is below the rounding of
    the diagonal (at most 60; every matrix of a stack rotated at once,
    sweeps until all have converged)."""
    n = a.shape[-1]
    low = np.tril(a) if lower else np.triu(a)
    diagonal = np.diagonal(low, axis1=-2, axis2=-1)
    a = low + np.swapaxes(low, -1, -2) - diagonal[..., None] * np.eye(n, dtype=a.dtype)
    if n == 1:
        return diagonal, np.ones(a.shape, a.dtype)
    pairs = [(p, q) for p in range(n) for q in range(p + 1, n)]
    ps = np.array([p for p, _ in pairs])
    qs = np.array([q for _, q in pairs])
    idx = np.arange(n)
    eps = np.finfo(a.dtype).eps

    def pick(x, mask):
        """The entries of ``x`` where ``mask`` holds, summed along the last axis."""
        return np.sum(np.where(mask, x, np.zeros_like(x)), axis=-1)

    def rotate(k, state):
        m, v = state
        p = np.sum(np.where(np.arange(len(pairs)) == k, ps, 0))
        q = np.sum(np.where(np.arange(len(pairs)) == k, qs, 0))
        is_p, is_q = idx == p, idx == q
        col_p, col_q = pick(m, is_p), pick(m, is_q)              # (..., n)
        app, aqq, apq = pick(col_p, is_p), pick(col_q, is_q), pick(col_q, is_p)
        zero = apq == 0
        theta = (aqq - app) / np.where(zero, np.ones_like(apq), 2 * apq)
        t = np.where(theta >= 0, np.ones_like(theta), -np.ones_like(theta)) / (
            np.abs(theta) + np.sqrt(theta * theta + 1))
        t = np.where(zero, np.zeros_like(t), t)
        c = (1 / np.sqrt(t * t + 1))[..., None]
        s = t[..., None] * c

        def columns(x):
            xp, xq = pick(x, is_p), pick(x, is_q)
            x = np.where(is_p, (c * xp - s * xq)[..., :, None], x)
            return np.where(is_q, (s * xp + c * xq)[..., :, None], x)

        m = columns(m)
        rp, rq = pick(np.swapaxes(m, -1, -2), is_p), pick(np.swapaxes(m, -1, -2), is_q)
        m = np.where(is_p[:, None], (c * rp - s * rq)[..., None, :], m)
        m = np.where(is_q[:, None], (s * rp + c * rq)[..., None, :], m)
        return m, columns(v)

    off_diagonal = idx[:, None] != idx[None, :]

    def cond(state):
        m, _, sweep = state
        sq = m * m
        off = np.sum(np.where(off_diagonal, sq, np.zeros_like(sq)), axis=(-2, -1))
        diag = np.sum(np.where(off_diagonal, np.zeros_like(sq), sq), axis=(-2, -1))
        return np.any(off > (eps * eps) * diag) & (sweep < 60)

    def sweep(state):
        m, v, count = state
        m, v = lax.fori_loop(0, len(pairs), rotate, (m, v))
        return m, v, count + 1

    eye = np.broadcast_to(np.eye(n, dtype=a.dtype), a.shape)
    m, v, _ = lax.while_loop(cond, sweep, (a, eye, np.asarray(0)))
    w = np.diagonal(m, axis1=-2, axis2=-1)
    order = np.argsort(w, axis=-1)
    w = np.take_along_axis(w, order, axis=-1)
    v = np.take_along_axis(v, order[..., None, :], axis=-1)
    return w, v


@implements(np.linalg.eigvalsh)
def eigvalsh(a, UPLO="L"):
    """The eigenvalues of ``eigh`` (integer matrices as float64, as NumPy)."""
    a = as_tracer(a)
    if a.dtype.kind in "iub":
        a = convert(a, np.float64)
    return eigh(a, UPLO)[0]


# ----- products of matrices ---------------------------------------------------------------

@implements(np.linalg.matrix_power)
def matrix_power(a, n):
    """NumPy's order of products: ``a @ a`` for 2, ``(a @ a) @ a`` for 3,
    binary powers after (the squares, multiplied in from the lowest bit);
    ``n == 0`` the identity in ``a``'s dtype, ``n < 0`` powers of
    ``inv(a)``."""
    a = as_tracer(a)
    square_stack(a)
    try:
        n = operator.index(n)
    except TypeError as e:
        raise TypeError("exponent must be an integer") from e
    if n == 0:
        return np.broadcast_to(np.eye(a.shape[-1], dtype=a.dtype), a.shape) + np.zeros_like(a)
    if n < 0:
        a, n = inv(a), -n
    if n == 1:
        return a
    if n == 2:
        return np.matmul(a, a)
    if n == 3:
        return np.matmul(np.matmul(a, a), a)
    z = result = None
    while n > 0:
        z = a if z is None else np.matmul(z, z)
        n, bit = divmod(n, 2)
        if bit:
            result = z if result is None else np.matmul(result, z)
    return result


def _chain_order(shapes):
    """The matrix-chain split points minimizing multiplications (the
    textbook dynamic programme; NumPy's choice, ties to the first split):
    ``split[i][j]`` is where the product of matrices i..j divides."""
    n = len(shapes)
    dims = [s[0] for s in shapes] + [shapes[-1][1]]
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = float("inf")
            for k in range(i, j):
                q = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if q < cost[i][j]:
                    cost[i][j], split[i][j] = q, k
    return split


@implements(np.linalg.multi_dot)
def multi_dot(arrays, *, out=None):
    if out is not None:
        raise tracing_error("np.linalg.multi_dot(..., out=...) writes into an array in place; "
                            "traced arrays are immutable, use the return value")
    n = len(arrays)
    if n < 2:
        raise ValueError("Expecting at least two arrays.")
    if n == 2:
        return np.dot(arrays[0], arrays[1])
    arrays = [as_tracer(a) for a in arrays]
    first_1d, last_1d = arrays[0].ndim == 1, arrays[-1].ndim == 1
    if first_1d:
        arrays[0] = np.reshape(arrays[0], (1, -1))
    if last_1d:
        arrays[-1] = np.reshape(arrays[-1], (-1, 1))
    for a in arrays:
        if a.ndim != 2:
            raise np.linalg.LinAlgError(f"{a.ndim}-dimensional array given. Array must be "
                                        "two-dimensional")
    if n == 3:
        (a0, a1b0), (b1c0, c1) = arrays[0].shape, arrays[2].shape
        a, b, c = arrays
        left_first = a0 * b1c0 * (a1b0 + c1) < a1b0 * c1 * (a0 + b1c0)
        result = np.dot(np.dot(a, b), c) if left_first else np.dot(a, np.dot(b, c))
    else:
        split = _chain_order([a.shape for a in arrays])

        def product(i, j):
            if i == j:
                return arrays[i]
            k = split[i][j]
            return np.dot(product(i, k), product(k + 1, j))

        result = product(0, n - 1)
    if first_1d and last_1d:
        return result[0, 0]
    return np.ravel(result) if first_1d or last_1d else result


@implements(np.linalg.vector_norm)
def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
    """``norm`` over ``axis`` taken as one vector (all of ``x`` for None, the
    axes of a tuple joined)."""
    x = as_tracer(x)
    shape = list(x.shape)
    if axis is None:
        y, along = np.ravel(x), 0
    elif isinstance(axis, tuple):
        axes = tuple(normalize_axis(a, x.ndim) for a in axis)
        rest = tuple(i for i in range(x.ndim) if i not in axes)
        y = np.reshape(np.transpose(x, axes + rest),
                       (int(np.prod([x.shape[i] for i in axes])),) + tuple(x.shape[i] for i in rest))
        along = 0
    else:
        y, along = x, axis
    res = norm(y, axis=along, ord=ord)
    if keepdims:
        for i in (range(len(shape)) if axis is None else
                  [normalize_axis(a, len(shape)) for a in (axis if isinstance(axis, tuple) else (axis,))]):
            shape[i] = 1
        res = np.reshape(res, tuple(shape))
    return res


# ----- the array API's names in np.linalg ---------------------------------------------------

@implements(np.linalg.outer)
def linalg_outer(x1, x2, /):
    x1, x2 = as_tracer(x1), as_tracer(x2)
    if x1.ndim != 1 or x2.ndim != 1:
        raise ValueError(f"Input arrays must be one-dimensional, but they are x1.ndim={x1.ndim} "
                         f"and x2.ndim={x2.ndim}.")
    return np.outer(x1, x2)


@implements(np.linalg.cross)
def linalg_cross(x1, x2, /, *, axis=-1):
    x1, x2 = as_tracer(x1), as_tracer(x2)
    if x1.shape[axis] != 3 or x2.shape[axis] != 3:
        raise ValueError("Both input arrays must be (arrays of) 3-dimensional vectors, but they are "
                         f"{x1.shape[axis]} and {x2.shape[axis]} dimensional instead.")
    return np.cross(x1, x2, axis=axis)


@implements(np.linalg.diagonal)
def linalg_diagonal(x, /, *, offset=0):
    return np.diagonal(x, offset=offset, axis1=-2, axis2=-1)


@implements(np.linalg.trace)
def linalg_trace(x, /, *, offset=0, dtype=None):
    return np.trace(x, offset=offset, axis1=-2, axis2=-1, dtype=dtype)


@implements(np.linalg.matmul)
def linalg_matmul(x1, x2, /):
    return np.matmul(x1, x2)


@implements(np.linalg.vecdot)
def linalg_vecdot(x1, x2, /, *, axis=-1):
    return np.vecdot(x1, x2, axis=axis)


@implements(np.linalg.matrix_transpose)
def linalg_matrix_transpose(x, /):
    return np.matrix_transpose(x)


@implements(np.linalg.tensordot)
def linalg_tensordot(x1, x2, /, *, axes=2):
    return np.tensordot(x1, x2, axes=axes)


@implements(np.linalg.tensorinv)
def tensorinv(a, ind=2):
    """NumPy's: ``inv`` of ``a`` reshaped to a square matrix, the result
    shaped ``a.shape[ind:] + a.shape[:ind]``."""
    a = as_tracer(a)
    if ind <= 0:
        raise ValueError("Invalid ind argument.")
    old_shape = a.shape
    prod = 1
    for k in old_shape[ind:]:
        prod *= k
    inverse = inv(np.reshape(a, (prod, -1)))
    return np.reshape(inverse, old_shape[ind:] + old_shape[:ind])


@implements(np.linalg.tensorsolve)
def tensorsolve(a, b, axes=None):
    """NumPy's: ``solve`` of ``a`` (its ``axes`` moved last) reshaped to a
    square matrix, against ``b`` flattened; the result of shape
    ``a.shape[b.ndim:]``."""
    a, b = as_tracer(a), as_tracer(b)
    an = a.ndim
    if axes is not None:
        allaxes = list(range(an))
        for k in axes:
            allaxes.remove(k)
            allaxes.insert(an, k)
        a = np.transpose(a, allaxes)
    oldshape = a.shape[-(an - b.ndim):]
    prod = 1
    for k in oldshape:
        prod *= k
    if a.size != prod ** 2:
        raise np.linalg.LinAlgError("Input arrays must satisfy the requirement "
                                    "prod(a.shape[b.ndim:]) == prod(a.shape[:b.ndim])")
    x = solve(np.reshape(a, (prod, prod)), np.ravel(b))
    return np.reshape(x, oldshape)
