"""JAX equivalents of some kernels of tests/frontend/numpy_programs.py,
written as JAX asks (functional ``.at[]`` updates, ``lax.fori_loop`` and
``lax.cond`` for Python loops and branches), for benchmarks/
numpy_programs.py's jax.jit column. Each takes the kernel's arguments and
returns what the NumPy kernel returns (unless None), then the arguments it
updates in place, in order. Imported only where jax is installed (never a dependency).
"""
import jax
import jax.numpy as jnp
from jax import lax

jax.config.update("jax_enable_x64", True)   # the kernels are float64, as NumPy's


def jacobi_1d(TSTEPS, A, B):
    def step(t, ab):
        A, B = ab
        B = B.at[1:-1].set(0.33333 * (A[:-2] + A[1:-1] + A[2:]))
        A = A.at[1:-1].set(0.33333 * (B[:-2] + B[1:-1] + B[2:]))
        return A, B
    return lax.fori_loop(1, TSTEPS, step, (A, B))


def jacobi_2d(TSTEPS, A, B):
    def step(t, ab):
        A, B = ab
        B = B.at[1:-1, 1:-1].set(0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1]
                                        + A[:-2, 1:-1]))
        A = A.at[1:-1, 1:-1].set(0.2 * (B[1:-1, 1:-1] + B[1:-1, :-2] + B[1:-1, 2:] + B[2:, 1:-1]
                                        + B[:-2, 1:-1]))
        return A, B
    return lax.fori_loop(1, TSTEPS, step, (A, B))


def heat_3d(TSTEPS, A, B):
    def lap(X):
        return (0.125 * (X[2:, 1:-1, 1:-1] - 2.0 * X[1:-1, 1:-1, 1:-1] + X[:-2, 1:-1, 1:-1])
                + 0.125 * (X[1:-1, 2:, 1:-1] - 2.0 * X[1:-1, 1:-1, 1:-1] + X[1:-1, :-2, 1:-1])
                + 0.125 * (X[1:-1, 1:-1, 2:] - 2.0 * X[1:-1, 1:-1, 1:-1] + X[1:-1, 1:-1, :-2])
                + X[1:-1, 1:-1, 1:-1])

    def step(t, ab):
        A, B = ab
        B = B.at[1:-1, 1:-1, 1:-1].set(lap(A))
        A = A.at[1:-1, 1:-1, 1:-1].set(lap(B))
        return A, B
    return lax.fori_loop(1, TSTEPS, step, (A, B))


def floyd_warshall(path):
    def step(k, p):
        return jnp.minimum(p, p[:, k][:, None] + p[k, :][None, :])
    return (lax.fori_loop(0, path.shape[0], step, path),)


def prefix_sum(x):
    return (lax.fori_loop(1, x.shape[0], lambda i, x: x.at[i].add(x[i - 1]), x),)


def lcs_length(a, b):
    D = jnp.zeros((a.shape[0] + 1, b.shape[0] + 1))

    def row(i, D):
        def col(j, D):
            return D.at[i, j].set(lax.cond(a[i - 1] == b[j - 1],
                                           lambda: D[i - 1, j - 1] + 1,
                                           lambda: jnp.maximum(D[i - 1, j], D[i, j - 1])))
        return lax.fori_loop(1, b.shape[0] + 1, col, D)
    return lax.fori_loop(1, a.shape[0] + 1, row, D)[-1, -1]


def edit_distance(a, b):
    n, m = a.shape[0], b.shape[0]
    D = jnp.zeros((n + 1, m + 1)).at[:, 0].set(jnp.arange(n + 1)).at[0, :].set(jnp.arange(m + 1))

    def row(i, D):
        def col(j, D):
            cost = jnp.where(a[i - 1] == b[j - 1], 0.0, 1.0)
            return D.at[i, j].set(jnp.minimum(jnp.minimum(D[i - 1, j] + 1, D[i, j - 1] + 1),
                                              D[i - 1, j - 1] + cost))
        return lax.fori_loop(1, m + 1, col, D)
    return lax.fori_loop(1, n + 1, row, D)[n, m]


def max_subarray(x):
    def step(i, bc):
        best, cur = bc
        cur = jnp.maximum(x[i], cur + x[i])
        return jnp.maximum(best, cur), cur
    return lax.fori_loop(1, x.shape[0], step, (x[0], x[0]))[0]


def nbody(pos, vel, mass, steps, dt):
    def step(_, pv):
        pos, vel = pv
        d = pos[None, :, :] - pos[:, None, :]
        r2 = (d * d).sum(-1) + 0.01
        acc = (d * (mass[None, :, None] / r2[:, :, None] ** 1.5)).sum(1)
        vel = vel + dt * acc
        return pos + dt * vel, vel
    return lax.fori_loop(0, steps, step, (pos, vel))


def lorenz_rk4(state, steps, dt):
    def f(s):
        x, y, z = s[0], s[1], s[2]
        return jnp.stack([10.0 * (y - x), x * (28.0 - z) - y, x * y - 8.0 / 3.0 * z])

    def step(t, st):
        state, traj = st
        k1 = f(state)
        k2 = f(state + 0.5 * dt * k1)
        k3 = f(state + 0.5 * dt * k2)
        k4 = f(state + dt * k3)
        state = state + dt / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)
        return state, traj.at[t].set(state)
    return lax.fori_loop(0, steps, step, (state, jnp.zeros((steps, 3))))[1]


def conjugate_gradient(A, b, iters):
    def step(_, st):
        x, r, p, rs = st
        Ap = A @ p
        alpha = rs / (p @ Ap)
        x = x + alpha * p
        r = r - alpha * Ap
        rs_new = r @ r
        return x, r, r + (rs_new / rs) * p, rs_new
    x = jnp.zeros_like(b)
    r = b - A @ x
    return lax.fori_loop(0, iters, step, (x, r, r, r @ r))[0]


def moving_average(x, window):
    n = x.shape[0] - window + 1
    return lax.fori_loop(0, n, lambda i, out: out.at[i].set(
        lax.dynamic_slice(x, (i,), (window,)).mean()), jnp.empty(n))


def mandelbrot(c_re, c_im, iters):
    def step(_, st):
        zr, zi, count = st
        inside = zr * zr + zi * zi <= 4.0
        return (jnp.where(inside, zr * zr - zi * zi + c_re, zr),
                jnp.where(inside, 2 * zr * zi + c_im, zi), count + inside)
    return lax.fori_loop(0, iters, step, (jnp.zeros_like(c_re), jnp.zeros_like(c_im),
                                          jnp.zeros(c_re.shape)))[2]


def logistic_regression(X, y, w, steps, lr):
    def step(_, w):
        p = 1.0 / (1.0 + jnp.exp(-(X @ w)))
        return w - lr * X.T @ (p - y) / X.shape[0]
    return (lax.fori_loop(0, steps, step, w),)


def gemver(alpha, beta, A, u1, v1, u2, v2, w, x, y, z):
    A = A + jnp.outer(u1, v1) + jnp.outer(u2, v2)
    x = x + beta * y @ A + z
    w = w + alpha * A @ x
    return A, w, x


# name -> (function, static argument numbers)
KERNELS = {
    "jacobi_1d": (jacobi_1d, (0,)), "jacobi_2d": (jacobi_2d, (0,)), "heat_3d": (heat_3d, (0,)),
    "floyd_warshall": (floyd_warshall, ()), "prefix_sum": (prefix_sum, ()),
    "lcs_length": (lcs_length, ()), "edit_distance": (edit_distance, ()),
    "max_subarray": (max_subarray, ()), "nbody": (nbody, (3,)), "lorenz_rk4": (lorenz_rk4, (1,)),
    "conjugate_gradient": (conjugate_gradient, (2,)), "moving_average": (moving_average, (1,)),
    "mandelbrot": (mandelbrot, (2,)), "logistic_regression": (logistic_regression, (3,)),
    "gemver": (gemver, ()),
}
