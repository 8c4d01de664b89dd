"""Scientific NumPy kernels written as people write them: time loops over
stencils, in-place row updates of factorizations, dynamic programming,
integrators mutating their state, iterative solvers, small networks. Each
is plain NumPy (run as it is by NumPy, and unmodified under ``xla.jit``).

``KERNELS``: name -> (function, make(rng, size) -> arguments, static
argument numbers). ``size`` is "test" (small, for tests/frontend/
test_numpy_programs.py) or "bench" (benchmarks/numpy_programs.py).
"""
import numpy as np


# ----- stencils with time loops ----------------------------------------------------------

def jacobi_1d(TSTEPS, A, B):
    for t in range(1, TSTEPS):
        B[1:-1] = 0.33333 * (A[:-2] + A[1:-1] + A[2:])
        A[1:-1] = 0.33333 * (B[:-2] + B[1:-1] + B[2:])


def jacobi_2d(TSTEPS, A, B):
    for t in range(1, TSTEPS):
        B[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1] + A[:-2, 1:-1])
        A[1:-1, 1:-1] = 0.2 * (B[1:-1, 1:-1] + B[1:-1, :-2] + B[1:-1, 2:] + B[2:, 1:-1] + B[:-2, 1:-1])


def heat_3d(TSTEPS, A, B):
    for t in range(1, TSTEPS):
        B[1:-1, 1:-1, 1:-1] = (
            0.125 * (A[2:, 1:-1, 1:-1] - 2.0 * A[1:-1, 1:-1, 1:-1] + A[:-2, 1:-1, 1:-1])
            + 0.125 * (A[1:-1, 2:, 1:-1] - 2.0 * A[1:-1, 1:-1, 1:-1] + A[1:-1, :-2, 1:-1])
            + 0.125 * (A[1:-1, 1:-1, 2:] - 2.0 * A[1:-1, 1:-1, 1:-1] + A[1:-1, 1:-1, :-2])
            + A[1:-1, 1:-1, 1:-1])
        A[1:-1, 1:-1, 1:-1] = (
            0.125 * (B[2:, 1:-1, 1:-1] - 2.0 * B[1:-1, 1:-1, 1:-1] + B[:-2, 1:-1, 1:-1])
            + 0.125 * (B[1:-1, 2:, 1:-1] - 2.0 * B[1:-1, 1:-1, 1:-1] + B[1:-1, :-2, 1:-1])
            + 0.125 * (B[1:-1, 1:-1, 2:] - 2.0 * B[1:-1, 1:-1, 1:-1] + B[1:-1, 1:-1, :-2])
            + B[1:-1, 1:-1, 1:-1])


def seidel_2d(TSTEPS, A):
    n = A.shape[0]
    for t in range(TSTEPS):
        for i in range(1, n - 1):
            A[i, 1:-1] += (A[i - 1, :-2] + A[i - 1, 1:-1] + A[i - 1, 2:] + A[i, 2:]
                           + A[i + 1, :-2] + A[i + 1, 1:-1] + A[i + 1, 2:])
            A[i, 1:-1] /= 9.0


def fdtd_2d(TMAX, ex, ey, hz, fict):
    for t in range(TMAX):
        ey[0, :] = fict[t]
        ey[1:, :] -= 0.5 * (hz[1:, :] - hz[:-1, :])
        ex[:, 1:] -= 0.5 * (hz[:, 1:] - hz[:, :-1])
        hz[:-1, :-1] -= 0.7 * (ex[:-1, 1:] - ex[:-1, :-1] + ey[1:, :-1] - ey[:-1, :-1])


def wave_2d(steps, u, u_prev, c):
    for _ in range(steps):
        lap = np.zeros_like(u)
        lap[1:-1, 1:-1] = u[2:, 1:-1] + u[:-2, 1:-1] + u[1:-1, 2:] + u[1:-1, :-2] - 4 * u[1:-1, 1:-1]
        u_next = 2 * u - u_prev + c * c * lap
        u_prev[:] = u
        u[:] = u_next
    return u


def game_of_life(steps, grid):
    for _ in range(steps):
        n = sum(np.roll(np.roll(grid, dy, 0), dx, 1)
                for dy in (-1, 0, 1) for dx in (-1, 0, 1) if (dy, dx) != (0, 0))
        grid = ((n == 3) | ((grid == 1) & (n == 2))).astype(grid.dtype)
    return grid


def rule30(steps, cells):
    out = np.zeros((steps, cells.shape[0]), dtype=cells.dtype)
    for t in range(steps):
        out[t] = cells
        left, right = np.roll(cells, 1), np.roll(cells, -1)
        cells = left ^ (cells | right)
    return out


# ----- dense linear algebra --------------------------------------------------------------

def gemm(alpha, beta, C, A, B):
    C[:] = alpha * A @ B + beta * C


def gemver(alpha, beta, A, u1, v1, u2, v2, w, x, y, z):
    A += np.outer(u1, v1) + np.outer(u2, v2)
    x += beta * y @ A + z
    w += alpha * A @ x


def gesummv(alpha, beta, A, B, x):
    return alpha * A @ x + beta * B @ x


def atax(A, x):
    return (A @ x) @ A


def bicg(A, p, r):
    return r @ A, A @ p


def mvt(x1, x2, y_1, y_2, A):
    x1 += A @ y_1
    x2 += y_2 @ A


def syrk(alpha, beta, C, A):
    for i in range(A.shape[0]):
        C[i, :i + 1] *= beta
        for k in range(A.shape[1]):
            C[i, :i + 1] += alpha * A[i, k] * A[:i + 1, k]


def trmm(alpha, A, B):
    for i in range(B.shape[0]):
        for j in range(B.shape[1]):
            B[i, j] += np.dot(A[i + 1:, i], B[i + 1:, j])
    B *= alpha


def cholesky(A):
    A[0, 0] = np.sqrt(A[0, 0])
    for i in range(1, A.shape[0]):
        for j in range(i):
            A[i, j] -= np.dot(A[i, :j], A[j, :j])
            A[i, j] /= A[j, j]
        A[i, i] -= np.dot(A[i, :i], A[i, :i])
        A[i, i] = np.sqrt(A[i, i])


def lu(A):
    for i in range(A.shape[0]):
        for j in range(i):
            A[i, j] -= A[i, :j] @ A[:j, j]
            A[i, j] /= A[j, j]
        for j in range(i, A.shape[0]):
            A[i, j] -= A[i, :i] @ A[:i, j]


def trisolv(L, x, b):
    for i in range(x.shape[0]):
        x[i] = (b[i] - L[i, :i] @ x[:i]) / L[i, i]


def forward_substitution(L, b):
    n = b.shape[0]
    x = np.zeros_like(b)
    for i in range(n):
        s = b[i]
        for j in range(i):
            s -= L[i, j] * x[j]
        x[i] = s / L[i, i]
    return x


def gauss_elimination(A, b):
    n = b.shape[0]
    for k in range(n - 1):
        for i in range(k + 1, n):
            f = A[i, k] / A[k, k]
            A[i, k:] -= f * A[k, k:]
            b[i] -= f * b[k]
    x = np.zeros_like(b)
    for i in range(n - 1, -1, -1):
        x[i] = (b[i] - A[i, i + 1:] @ x[i + 1:]) / A[i, i]
    return x


def durbin(r):
    y = np.empty_like(r)
    alpha = -r[0]
    beta = 1.0
    y[0] = -r[0]
    for k in range(1, r.shape[0]):
        beta *= 1.0 - alpha * alpha
        alpha = -(r[k] + np.dot(np.flip(r[:k]), y[:k])) / beta
        y[:k] += alpha * np.flip(y[:k])
        y[k] = alpha
    return y


def floyd_warshall(path):
    for k in range(path.shape[0]):
        path[:] = np.minimum(path[:], np.add.outer(path[:, k], path[k, :]))


# ----- iterative solvers ----------------------------------------------------------------

def power_iteration(A, iters):
    v = np.ones(A.shape[0]) / np.sqrt(A.shape[0])
    lam = 0.0
    for _ in range(iters):
        w = A @ v
        lam = v @ w
        v = w / np.linalg.norm(w)
    return lam, v


def conjugate_gradient(A, b, iters):
    x = np.zeros_like(b)
    r = b - A @ x
    p = r.copy()
    rs = r @ r
    for _ in range(iters):
        Ap = A @ p
        alpha = rs / (p @ Ap)
        x += alpha * p
        r -= alpha * Ap
        rs_new = r @ r
        p = r + (rs_new / rs) * p
        rs = rs_new
    return x


def jacobi_solver(A, b, iters):
    D = np.diag(A)
    R = A - np.diag(D)
    x = np.zeros_like(b)
    for _ in range(iters):
        x = (b - R @ x) / D
    return x


def newton_sqrt(x):
    y = x.copy()
    while np.max(np.abs(y * y - x)) > 1e-12:
        y = 0.5 * (y + x / y)
    return y


def bisection(c):
    lo, hi = np.zeros_like(c), np.maximum(c, 1.0)
    while np.max(hi - lo) > 1e-10:
        mid = 0.5 * (lo + hi)
        too_big = mid ** 3 > c
        hi = np.where(too_big, mid, hi)
        lo = np.where(too_big, lo, mid)
    return 0.5 * (lo + hi)


# ----- dynamic programming ---------------------------------------------------------------

def lcs_length(a, b):
    D = np.zeros((a.shape[0] + 1, b.shape[0] + 1))
    for i in range(1, a.shape[0] + 1):
        for j in range(1, b.shape[0] + 1):
            if a[i - 1] == b[j - 1]:
                D[i, j] = D[i - 1, j - 1] + 1
            else:
                D[i, j] = max(D[i - 1, j], D[i, j - 1])
    return D[-1, -1]


def edit_distance(a, b):
    n, m = a.shape[0], b.shape[0]
    D = np.zeros((n + 1, m + 1))
    D[:, 0] = np.arange(n + 1)
    D[0, :] = np.arange(m + 1)
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            cost = np.where(a[i - 1] == b[j - 1], 0.0, 1.0)
            D[i, j] = np.minimum(np.minimum(D[i - 1, j] + 1, D[i, j - 1] + 1), D[i - 1, j - 1] + cost)
    return D[n, m]


def max_subarray(x):
    best = x[0]
    cur = x[0]
    for i in range(1, x.shape[0]):
        cur = max(x[i], cur + x[i])
        best = max(best, cur)
    return best


def prefix_sum(x):
    for i in range(1, x.shape[0]):
        x[i] += x[i - 1]


# ----- integrators mutating state -------------------------------------------------------

def nbody(pos, vel, mass, steps, dt):
    for _ in range(steps):
        d = pos[None, :, :] - pos[:, None, :]
        r2 = (d * d).sum(-1) + 0.01
        acc = (d * (mass[None, :, None] / r2[:, :, None] ** 1.5)).sum(1)
        vel += dt * acc
        pos += dt * vel


def leapfrog_oscillator(x, v, k, steps, dt):
    for _ in range(steps):
        v -= 0.5 * dt * k * x
        x += dt * v
        v -= 0.5 * dt * k * x
    return 0.5 * (v * v + k * x * x)


def lorenz_rk4(state, steps, dt):
    def f(s):
        x, y, z = s[0], s[1], s[2]
        return np.stack([10.0 * (y - x), x * (28.0 - z) - y, x * y - 8.0 / 3.0 * z])
    traj = np.zeros((steps, 3))
    for t in range(steps):
        k1 = f(state)
        k2 = f(state + 0.5 * dt * k1)
        k3 = f(state + 0.5 * dt * k2)
        k4 = f(state + dt * k3)
        state = state + dt / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)
        traj[t] = state
    return traj


def sir_model(S, I, R, beta, gamma, steps):
    for _ in range(steps):
        new_inf = beta * S * I
        new_rec = gamma * I
        S -= new_inf
        I += new_inf - new_rec
        R += new_rec


# ----- signal processing and statistics -------------------------------------------------

def conv1d_taps(x, w):
    out = np.zeros(x.shape[0] - w.shape[0] + 1)
    for k in range(w.shape[0]):
        out += w[k] * x[k:k + out.shape[0]]
    return out


def moving_average(x, window):
    out = np.empty(x.shape[0] - window + 1)
    for i in range(out.shape[0]):
        out[i] = x[i:i + window].mean()
    return out


def horner(coeffs, x):
    y = np.zeros_like(x)
    for c in coeffs:
        y = y * x + c
    return y


def histogram_add_at(values, nbins):
    counts = np.zeros(nbins)
    idx = np.clip((values * nbins).astype(np.int64), 0, nbins - 1)
    np.add.at(counts, idx, 1.0)
    return counts


def mandelbrot(c_re, c_im, iters):
    zr, zi = np.zeros_like(c_re), np.zeros_like(c_im)
    count = np.zeros(c_re.shape)
    for _ in range(iters):
        inside = zr * zr + zi * zi <= 4.0
        zr, zi = np.where(inside, zr * zr - zi * zi + c_re, zr), np.where(inside, 2 * zr * zi + c_im, zi)
        count += inside
    return count


def odd_even_sort(x):
    n = x.shape[0]
    for p in range(n):
        s = p % 2
        a, b = x[s:n - 1:2].copy(), x[s + 1:n:2].copy()
        x[s:n - 1:2] = np.minimum(a, b)
        x[s + 1:n:2] = np.maximum(a, b)


# ----- small networks and learning --------------------------------------------------------

def mlp_forward(x, W1, b1, W2, b2):
    h = np.maximum(x @ W1 + b1, 0.0)
    z = h @ W2 + b2
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def logistic_regression(X, y, w, steps, lr):
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-(X @ w)))
        w -= lr * X.T @ (p - y) / X.shape[0]


def mlp_sgd(X, Y, W1, W2, steps, lr):
    for _ in range(steps):
        h = np.tanh(X @ W1)
        out = h @ W2
        g_out = 2 * (out - Y) / X.shape[0]
        g_W2 = h.T @ g_out
        g_h = g_out @ W2.T * (1 - h * h)
        g_W1 = X.T @ g_h
        W1 -= lr * g_W1
        W2 -= lr * g_W2
    return ((np.tanh(X @ W1) @ W2 - Y) ** 2).mean()


def kmeans(X, centers, iters):
    k = centers.shape[0]
    for _ in range(iters):
        d = ((X[:, None, :] - centers[None, :, :]) ** 2).sum(-1)
        labels = d.argmin(1)
        for c in range(k):
            mask = (labels == c)[:, None]
            n = mask.sum()
            if n > 0:
                centers[c] = (X * mask).sum(0) / n
    return centers


def matrix_power(A, n):
    result = np.eye(A.shape[0])
    base = A.copy()
    while n > 0:
        if n % 2 == 1:
            result = result @ base
        base = base @ base
        n //= 2
    return result


def _vandermonde(x, deg):
    V = np.ones((x.shape[0], deg + 1))
    for k in range(1, deg + 1):
        V[:, k] = V[:, k - 1] * x
    return V


def polyfit_lstsq(x, y, deg):
    coef, resid, rank, sv = np.linalg.lstsq(_vandermonde(x, deg), y, rcond=None)
    return coef, resid, sv


def low_rank_approx(A, k):
    U, s, Vt = np.linalg.svd(A, full_matrices=False)
    return (U[:, :k] * s[:k]) @ Vt[:k]


def clip_outliers(x, k):
    m, s = x.mean(), x.std()
    x[x > m + k * s] = m + k * s
    x[x < m - k * s] = m - k * s


def select_positive(x):
    return x[x > 0]        # a data-dependent shape: cannot compile


def _rand(rng, *shape):
    return rng.random(shape)


def _spd(rng, n):
    a = rng.random((n, n))
    return a @ a.T + n * np.eye(n)


def _sizes(size, test, bench):
    return test if size == "test" else bench


KERNELS = {
    "jacobi_1d": (jacobi_1d, lambda r, s: (_sizes(s, 50, 1000), _rand(r, _sizes(s, 30, 4000)),
                                           _rand(r, _sizes(s, 30, 4000))), (0,)),
    "jacobi_2d": (jacobi_2d, lambda r, s: (_sizes(s, 20, 100), _rand(r, *(_sizes(s, (12, 12), (250, 250)))),
                                           _rand(r, *(_sizes(s, (12, 12), (250, 250))))), (0,)),
    "heat_3d": (heat_3d, lambda r, s: (_sizes(s, 12, 50), _rand(r, *(_sizes(s, (6, 6, 6), (40, 40, 40)))),
                                       _rand(r, *(_sizes(s, (6, 6, 6), (40, 40, 40))))), (0,)),
    "seidel_2d": (seidel_2d, lambda r, s: (_sizes(s, 3, 10), _rand(r, *(_sizes(s, (10, 10), (120, 120))))),
                  (0,)),
    "fdtd_2d": (fdtd_2d, lambda r, s: (_sizes(s, 10, 100), *[_rand(r, *(_sizes(s, (8, 9), (200, 220))))
                                                           for _ in range(3)],
                                       _rand(r, _sizes(s, 10, 100))), (0,)),
    "wave_2d": (wave_2d, lambda r, s: (_sizes(s, 15, 200), _rand(r, *(_sizes(s, (10, 10), (200, 200)))),
                                       _rand(r, *(_sizes(s, (10, 10), (200, 200)))), 0.3), (0,)),
    "game_of_life": (game_of_life, lambda r, s: (_sizes(s, 10, 100),
                                                 (r.random(_sizes(s, (12, 12), (256, 256))) < 0.3)
                                                 .astype(np.int32)), (0,)),
    "rule30": (rule30, lambda r, s: (_sizes(s, 12, 200), (r.random(_sizes(s, 20, 1000)) < 0.5)
                                     .astype(np.int32)), (0,)),
    "gemm": (gemm, lambda r, s: (1.5, 1.2, *[_rand(r, *(_sizes(s, sh, tuple(10 * d for d in sh))))
                                             for sh in ((6, 7), (6, 5), (5, 7))]), ()),
    "gemver": (gemver, lambda r, s: (1.5, 1.2, _rand(r, *(_sizes(s, (8, 8), (1000, 1000)))),
                                     *[_rand(r, _sizes(s, 8, 1000)) for _ in range(8)]), ()),
    "gesummv": (gesummv, lambda r, s: (1.5, 1.2, _rand(r, *(_sizes(s, (9, 9), (1000, 1000)))),
                                       _rand(r, *(_sizes(s, (9, 9), (1000, 1000)))),
                                       _rand(r, _sizes(s, 9, 1000))), ()),
    "atax": (atax, lambda r, s: (_rand(r, *(_sizes(s, (9, 7), (1200, 1000)))),
                                 _rand(r, _sizes(s, 7, 1000))), ()),
    "bicg": (bicg, lambda r, s: (_rand(r, *(_sizes(s, (9, 7), (1200, 1000)))),
                                 _rand(r, _sizes(s, 7, 1000)), _rand(r, _sizes(s, 9, 1200))), ()),
    "mvt": (mvt, lambda r, s: (*[_rand(r, _sizes(s, 8, 1000)) for _ in range(4)],
                               _rand(r, *(_sizes(s, (8, 8), (1000, 1000))))), ()),
    "syrk": (syrk, lambda r, s: (1.5, 1.2, _rand(r, *(_sizes(s, (7, 7), (60, 60)))),
                                 _rand(r, *(_sizes(s, (7, 5), (60, 40))))), ()),
    "trmm": (trmm, lambda r, s: (1.5, _rand(r, *(_sizes(s, (7, 7), (50, 50)))),
                                 _rand(r, *(_sizes(s, (7, 6), (50, 40))))), ()),
    "cholesky": (cholesky, lambda r, s: (_spd(r, _sizes(s, 8, 60)),), ()),
    "lu": (lu, lambda r, s: (_spd(r, _sizes(s, 8, 50)),), ()),
    "trisolv": (trisolv, lambda r, s: (np.tril(_rand(r, *(_sizes(s, (10, 10), (200, 200)))))
                                       + _sizes(s, 10, 200) * np.eye(_sizes(s, 10, 200)),
                                       np.zeros(_sizes(s, 10, 200)), _rand(r, _sizes(s, 10, 200))), ()),
    "forward_substitution": (forward_substitution,
                             lambda r, s: (np.tril(_rand(r, *(_sizes(s, (12, 12), (150, 150)))))
                                           + _sizes(s, 12, 150) * np.eye(_sizes(s, 12, 150)),
                                           _rand(r, _sizes(s, 12, 150))), ()),
    "gauss_elimination": (gauss_elimination, lambda r, s: (_spd(r, _sizes(s, 9, 60)),
                                                           _rand(r, _sizes(s, 9, 60))), ()),
    "durbin": (durbin, lambda r, s: (_rand(r, _sizes(s, 10, 200)) * 0.1,), ()),
    "floyd_warshall": (floyd_warshall, lambda r, s: (r.integers(1, 20, _sizes(s, (9, 9), (200, 200)))
                                                     .astype(np.int32),), ()),
    "power_iteration": (power_iteration, lambda r, s: (_spd(r, _sizes(s, 8, 400)), _sizes(s, 30, 100)),
                        (1,)),
    "conjugate_gradient": (conjugate_gradient, lambda r, s: (_spd(r, _sizes(s, 8, 400)),
                                                             _rand(r, _sizes(s, 8, 400)),
                                                             _sizes(s, 12, 60)), (2,)),
    "jacobi_solver": (jacobi_solver, lambda r, s: (_spd(r, _sizes(s, 8, 400)),
                                                   _rand(r, _sizes(s, 8, 400)), _sizes(s, 20, 100)), (2,)),
    "newton_sqrt": (newton_sqrt, lambda r, s: (_rand(r, _sizes(s, 10, 100000)) + 0.5,), ()),
    "bisection": (bisection, lambda r, s: (_rand(r, _sizes(s, 10, 100000)) * 5,), ()),
    "lcs_length": (lcs_length, lambda r, s: (r.integers(0, 4, _sizes(s, 9, 60)),
                                             r.integers(0, 4, _sizes(s, 11, 70))), ()),
    "edit_distance": (edit_distance, lambda r, s: (r.integers(0, 4, _sizes(s, 9, 60)),
                                                   r.integers(0, 4, _sizes(s, 10, 70))), ()),
    "max_subarray": (max_subarray, lambda r, s: (r.standard_normal(_sizes(s, 30, 2000)),), ()),
    "prefix_sum": (prefix_sum, lambda r, s: (_rand(r, _sizes(s, 30, 5000)),), ()),
    "nbody": (nbody, lambda r, s: (_rand(r, _sizes(s, 8, 100), 3), _rand(r, _sizes(s, 8, 100), 3) * 0.1,
                                   _rand(r, _sizes(s, 8, 100)), _sizes(s, 12, 50), 0.01), (3,)),
    "leapfrog_oscillator": (leapfrog_oscillator, lambda r, s: (_rand(r, _sizes(s, 10, 10000)),
                                                               _rand(r, _sizes(s, 10, 10000)), 2.0,
                                                               _sizes(s, 40, 1000), 0.01), (3,)),
    "lorenz_rk4": (lorenz_rk4, lambda r, s: (_rand(r, 3) + 1.0, _sizes(s, 30, 2000), 0.005), (1,)),
    "sir_model": (sir_model, lambda r, s: (np.full(_sizes(s, 6, 10000), 0.99), np.full(_sizes(s, 6, 10000), 0.01),
                                           np.zeros(_sizes(s, 6, 10000)), 0.3, 0.1,
                                           _sizes(s, 40, 500)), (5,)),
    "conv1d_taps": (conv1d_taps, lambda r, s: (_rand(r, _sizes(s, 40, 100000)), _rand(r, _sizes(s, 12, 31))),
                    ()),
    "moving_average": (moving_average, lambda r, s: (_rand(r, _sizes(s, 30, 3000)), 5), (1,)),
    "horner": (horner, lambda r, s: (_rand(r, 12), _rand(r, _sizes(s, 20, 100000))), ()),
    "histogram_add_at": (histogram_add_at, lambda r, s: (_rand(r, _sizes(s, 100, 100000)), 16), (1,)),
    "mandelbrot": (mandelbrot, lambda r, s: (_rand(r, *(_sizes(s, (8, 8), (200, 200)))) * 3 - 2,
                                             _rand(r, *(_sizes(s, (8, 8), (200, 200)))) * 3 - 1.5,
                                             _sizes(s, 20, 50)), (2,)),
    "odd_even_sort": (odd_even_sort, lambda r, s: (_rand(r, _sizes(s, 12, 300)),), ()),
    "mlp_forward": (mlp_forward, lambda r, s: (_rand(r, *(_sizes(s, (6, 8), (512, 256)))) - 0.5,
                                               _rand(r, *(_sizes(s, (8, 5), (256, 128)))) - 0.5,
                                               _rand(r, _sizes(s, 5, 128)),
                                               _rand(r, *(_sizes(s, (5, 3), (128, 10)))) - 0.5,
                                               _rand(r, _sizes(s, 3, 10))), ()),
    "logistic_regression": (logistic_regression,
                            lambda r, s: (_rand(r, *(_sizes(s, (20, 4), (2000, 50)))) - 0.5,
                                          (r.random(_sizes(s, 20, 2000)) < 0.5).astype(np.float64),
                                          np.zeros(_sizes(s, 4, 50)), _sizes(s, 30, 200), 0.5), (3,)),
    "mlp_sgd": (mlp_sgd, lambda r, s: (_rand(r, *(_sizes(s, (16, 4), (256, 32)))),
                                       _rand(r, *(_sizes(s, (16, 2), (256, 8)))),
                                       _rand(r, *(_sizes(s, (4, 6), (32, 64)))) - 0.5,
                                       _rand(r, *(_sizes(s, (6, 2), (64, 8)))) - 0.5,
                                       _sizes(s, 20, 200), _sizes(s, 0.1, 0.005)), (4,)),
    "kmeans": (kmeans, lambda r, s: (_rand(r, *(_sizes(s, (30, 2), (5000, 4)))),
                                     _rand(r, *(_sizes(s, (3, 2), (8, 4)))), _sizes(s, 5, 20)), (2,)),
    "matrix_power": (matrix_power, lambda r, s: (_rand(r, *(_sizes(s, (5, 5), (100, 100)))) * 0.2,
                                                 _sizes(s, 13, 100)), (1,)),
    "polyfit_lstsq": (polyfit_lstsq, lambda r, s: (_rand(r, _sizes(s, 20, 2000)),
                                                   _rand(r, _sizes(s, 20, 2000)), _sizes(s, 3, 5)),
                      (2,)),
    "low_rank_approx": (low_rank_approx, lambda r, s: (_rand(r, *(_sizes(s, (8, 6), (60, 40)))),
                                                       _sizes(s, 2, 5)), (1,)),
    "clip_outliers": (clip_outliers, lambda r, s: (r.standard_normal(_sizes(s, 50, 100000)), 1.5), (1,)),
}

# Kernels that must not compile, and the reason the error must give.
REFUSED = {
    "select_positive": (select_positive, lambda r, s: (r.standard_normal(20),), (),
                        "depends on the data"),
}
