"""Python control flow under xla.jit (xla/frontend/control_flow.py): range
loops over traced values become one HLO while loop, traced conditions a
conditional or a while, and everything else keeps Python's semantics. The
expected values are the same functions run by Python and NumPy."""
import inspect
import re
import warnings

import numpy as np
import pytest

import xla
from xla.errors import TracingError

from numpy_programs import cholesky, durbin   # the kernel suite's, written as NumPy code is


def hlo(fn, *args, **jit_kwargs):
    return xla.jit(fn, **jit_kwargs).lower(*args).as_hlo_text()


def count(text, opcode):
    return len(re.findall(rf"= [^=]* {opcode}\(", text))


def line_of(marker, fn):
    src, start = inspect.getsourcelines(fn)
    return start + next(k for k, line in enumerate(src) if marker in line)


def same_as_numpy(fn, *args, **jit_kwargs):
    """Runs ``fn`` by NumPy and compiled on copies of ``args``: results and
    arguments after the call must agree."""
    ref = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    ours = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    want = fn(*ref)
    got = xla.jit(fn, **jit_kwargs)(*ours)
    if want is not None:
        for w, g in zip(want if isinstance(want, tuple) else (want,),
                        got if isinstance(got, tuple) else (got,)):
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)
    for i, (r, o) in enumerate(zip(ref, ours)):
        if isinstance(r, np.ndarray):
            np.testing.assert_allclose(o, r, rtol=1e-12, atol=1e-12, err_msg=f"argument {i}")
    return got


# ----- for i in range(...) -------------------------------------------------------------

def stencil(A, B, T):
    for t in range(T):
        B[1:-1] = 0.5 * (A[:-2] + A[2:])
        A[1:-1] = 0.5 * (B[:-2] + B[2:])


@pytest.mark.parametrize("T", [0, 1, 8, 9, 100])
def test_a_range_loop_mutating_arguments_matches_python(T):
    rng = np.random.default_rng(T)
    same_as_numpy(stencil, rng.random(20), rng.random(20), T, static_argnums=2)


def test_loops_of_few_operations_in_all_unroll():
    def taps(x, w):
        out = np.zeros(x.shape[0] - w.shape[0] + 1)
        for k in range(w.shape[0]):                 # 31 taps of 5 operations: one fusion
            out += w[k] * x[k:k + out.shape[0]]
        return out

    rng = np.random.default_rng(10)
    x, w = rng.random(200), rng.random(31)
    same_as_numpy(taps, x, w)
    assert count(hlo(taps, x, w), "while") == 0
    assert count(hlo(taps, x, w, unroll=8), "while") == 1     # an explicit threshold only


def test_a_long_loop_is_one_while_and_short_ones_unroll():
    a, b = np.ones(20), np.ones(20)
    text = hlo(stencil, a, b, 800, static_argnums=2)
    assert count(text, "while") == 1
    assert len(text.splitlines()) < 60        # not 800 copies of the body
    assert '"known_trip_count":{"n":"800"}' in text
    assert count(hlo(stencil, a, b, 8, static_argnums=2), "while") == 0
    assert count(hlo(stencil, a, b, 3, static_argnums=2, unroll=False), "while") == 1
    assert count(hlo(stencil, a, b, 800, static_argnums=2, unroll=True), "while") == 0
    assert count(hlo(stencil, a, b, 5, static_argnums=2, unroll=4), "while") == 1


def test_two_thousand_steps_compile_and_run():
    # (unrolled, 2,000 steps raised RecursionError in the CPU backend)
    rng = np.random.default_rng(1)
    same_as_numpy(stencil, rng.random(50), rng.random(50), 2000, static_argnums=2)


def test_the_index_is_traced_reads_and_writes_and_promotes_as_a_python_int():
    def f(x, out):
        acc = 0.0
        for i in range(2, x.shape[0], 3):
            acc = acc + x[i] * i
            out[i] = x[i - 1] + i
        return acc

    x = np.arange(40, dtype=np.float32)
    for unroll in (None, False):        # unrolled (12 iterations, a few operations each), a while
        got = same_as_numpy(f, x, np.zeros(40, np.float32), unroll=unroll)
        assert got.dtype == np.float32  # i promotes as a Python int, not as int64
    assert count(hlo(f, x, np.zeros(40, np.float32)), "while") == 0
    assert count(hlo(f, x, np.zeros(40, np.float32), unroll=False), "while") == 1


def test_negative_steps_and_the_index_after_the_loop():
    def f(x):
        s = x[0] * 0
        for i in range(x.shape[0] - 1, 0, -2):
            s = s * 2 + x[i]
        return s, i

    x = np.random.default_rng(2).random(33)
    s, i = same_as_numpy(f, x)
    assert i == 2


def test_bounds_from_traced_values():
    def f(x, n):
        s = np.zeros_like(x)
        for i in range(n):
            s = s + x * i
        return s

    x = np.arange(4.0)
    for n in (0, 1, 7):
        same_as_numpy(f, x, np.int32(n))
    assert count(hlo(f, x, np.int32(3)), "while") == 1


def test_nested_loops_with_an_inner_bound_from_the_outer_index():
    def f(L, b):
        x = np.zeros_like(b)
        for i in range(b.shape[0]):
            s = b[i]
            for j in range(i):
                s = s - L[i, j] * x[j]
            x[i] = s / L[i, i]
        return x

    rng = np.random.default_rng(3)
    n = 12
    L = np.tril(rng.random((n, n))) + n * np.eye(n)
    same_as_numpy(f, L, rng.random(n))
    same_as_numpy(f, L, rng.random(n), unroll=False)
    assert count(hlo(f, L, rng.random(n), unroll=False), "while") == 2


def test_a_temporary_read_after_the_loop_and_a_value_from_the_last_iteration():
    def f(x):
        total = np.zeros(3)
        for i in range(x.shape[0]):
            if i > 0:
                step = x[i] - prev        # noqa: F821 - bound by the previous iteration
                total = total + step
            prev = x[i]
            last = prev * 2
        return total, last

    same_as_numpy(f, np.random.default_rng(4).random((20, 3)))


def test_a_value_starting_as_none_is_carried_after_one_iteration():
    def f(x):
        best = None
        for i in range(x.shape[0]):
            best = x[i] if best is None else np.maximum(best, x[i])
        return best

    x = np.random.default_rng(5).random((30, 4))
    same_as_numpy(f, x, unroll=False)
    assert count(hlo(f, x, unroll=False), "while") == 1


def test_loops_that_cannot_be_one_while_unroll_and_say_so_when_long():
    def grows(x):
        out = x[:1]
        for i in range(1, 12):
            out = np.concatenate([out, x[i:i + 1] * i])   # the shape changes every iteration
        return out

    def appends(x):
        parts = []
        for i in range(20):
            parts.append(x * i)
        return sum(parts)

    def triangular(L, b):
        x = np.zeros_like(b)
        for i in range(b.shape[0]):
            x[i] = (b[i] - np.cumsum(L[i, :i] * x[:i])[-1:].sum()) / L[i, i]   # cumsum: needs the real slice
        return x

    x = np.arange(12.0)
    same_as_numpy(grows, x)
    same_as_numpy(appends, x)
    rng = np.random.default_rng(6)
    n = 70
    L = np.tril(rng.random((n, n))) + n * np.eye(n)
    b = rng.random(n)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        same_as_numpy(triangular, L, b)
    msg = [str(w.message) for w in caught if "unrolled" in str(w.message)]
    where = f"{__file__}:{line_of('for i in range(b.shape[0])', triangular)}"
    assert msg and msg[0].startswith(where), msg
    assert "70 iterations" in msg[0]


def test_a_loop_over_traced_bounds_that_cannot_be_a_while_names_why():
    def f(x, n):
        out = x[:1]
        for i in range(n):                         # marker-loop
            out = np.concatenate([out, x[:1]])
        return out

    with pytest.raises(xla.errors.XlaError) as e:
        xla.jit(f)(np.ones(3), np.int32(2))
    assert "shape" in str(e.value)

    def g(x, n):
        for i in range(n):                         # marker-temp
            y = x * i
        return y

    with pytest.raises(TracingError, match="`y` is assigned in the loop.*assign it before") as e:
        xla.jit(g)(np.ones(3), np.int32(2))
    assert str(e.value).startswith(f"{__file__}:{line_of('marker-temp', g)}:")


# ----- while ------------------------------------------------------------------------------

def test_a_while_on_a_traced_condition_is_one_while_loop():
    def newton(x):
        y = x.copy()
        it = 0
        while np.abs(y * y - x).max() > 1e-10:
            y = 0.5 * (y + x / y)
            it += 1
        return y, it

    x = np.random.default_rng(7).random(6) + 0.5
    same_as_numpy(newton, x)
    assert count(hlo(newton, x), "while") == 1


def test_a_while_on_a_python_condition_stays_python():
    def f(x, n):
        k = 0
        while k < n:
            x = x + k
            k += 1
        return x

    same_as_numpy(f, np.ones(3), 5, static_argnums=1)
    assert count(hlo(f, np.ones(3), 5, static_argnums=1), "while") == 0


# ----- if ---------------------------------------------------------------------------------

def test_an_if_on_a_traced_value_is_a_conditional():
    def f(x):
        if x.sum() > 0:
            y = x * 2
            z = 1.0
        elif x.sum() > -5:
            y = x + 1
            z = 2.0
        else:
            y = -x
            z = 3.0
        return y * z

    for x in (np.ones(3), -np.ones(3), -3 * np.ones(3)):
        same_as_numpy(f, x)
    assert count(hlo(f, np.ones(3)), "conditional") == 2


def test_an_update_in_place_under_a_traced_condition_reaches_the_caller():
    def f(x, out):
        for i in range(x.shape[0]):
            if x[i] > 0.5:
                out[i] = x[i]
            else:
                out[i] += 1

    x = np.random.default_rng(8).random(20)
    same_as_numpy(f, x, np.zeros(20))


def test_an_if_on_a_python_value_stays_exact_python():
    def f(x, mode):
        if mode == "double":
            return x * 2
        if x.ndim == 1:
            y = x + 1
        return y

    same_as_numpy(f, np.ones(3), "double", static_argnums=1)
    same_as_numpy(f, np.ones(3), "other", static_argnums=1)


def test_what_a_traced_condition_cannot_express_is_named_with_its_line():
    def one_branch(x):
        if x.sum() > 0:                    # marker-one
            y = x * 2
        return y

    with pytest.raises(TracingError, match="`y` is assigned an array only in the `if` branch") as e:
        xla.jit(one_branch)(np.ones(3))
    assert str(e.value).startswith(f"{__file__}:{line_of('marker-one', one_branch)}:")

    def mixed(x, out):
        if x.sum() > 0:                    # marker-mixed
            out[0] = 1.0
        else:
            out = out * 2
        return out

    with pytest.raises(TracingError, match="updated in place in one branch .* and rebound"):
        xla.jit(mixed)(np.ones(3), np.ones(3))

    def early_return(x):
        for i in range(3):
            if x[i] > 0:                   # marker-return
                return x
        return -x

    with pytest.raises(TracingError) as e:
        xla.jit(early_return)(np.ones(3))
    assert f"{__file__}:{line_of('marker-return', early_return)}" in str(e.value)
    assert "contains `return`" in str(e.value)

    def with_break(x):
        s = x[0]
        for i in range(20):
            if s > 10:                     # marker-break
                break
            s = s * 2
        return s

    with pytest.raises(TracingError, match="contains `break`"):
        xla.jit(with_break)(np.ones(3))


def test_errors_inside_converted_bodies_point_at_the_users_line():
    def f(x):
        s = np.zeros(3)
        for i in range(20):
            s = s + x[i] @ np.ones((4, 4))   # marker-shape
        return s

    with pytest.raises(xla.errors.XlaError) as e:
        xla.jit(f)(np.ones((20, 3)))
    assert f"{__file__}:{line_of('marker-shape', f)}" in str(e.value)


def test_the_hlo_metadata_names_the_users_lines_inside_loops():
    def f(x):
        for i in range(20):
            x = np.sin(x) + i               # marker-sin
        return x

    text = hlo(f, np.ones(3))
    line = line_of("marker-sin", f)
    assert re.search(rf'sine\(.*source_file="{re.escape(__file__)}" source_line={line}\}}', text)


def test_closures_and_defaults_are_kept():
    scale = 3.0

    def f(x, k=2):
        for i in range(10):
            x = x * scale + k
        return x

    same_as_numpy(f, np.ones(2))


def test_slices_a_fixed_width_from_the_index_stay_in_the_while_loop():
    def windows(x, out):
        for i in range(1, x.shape[0] - 2):
            out[i] = x[i - 1:i + 2].sum()          # three elements around i
            out[i:i + 2] += x[i:i + 2] * 0.5      # an update of two
        return out

    x = np.random.default_rng(9).random(40)
    same_as_numpy(windows, x, np.zeros(40))
    assert count(hlo(windows, x, np.zeros(40)), "while") == 1

    def wraps(x):
        s = x[0] * 0
        for i in range(20):
            s = s + x[i - 1:i + 1].sum()           # at i = 0, NumPy's x[-1:1] is empty
        return s

    same_as_numpy(wraps, x)                        # unrolled: exact NumPy slicing
    assert count(hlo(wraps, x), "while") == 0


def test_slices_bounded_by_the_index_stay_in_the_while_loop_masked():
    def back_substitution(U, b):
        x = np.zeros_like(b)
        for i in range(b.shape[0] - 1, -1, -1):
            x[i] = (b[i] - U[i, i + 1:] @ x[i + 1:]) / U[i, i]
        return x

    def row_updates(C, A, alpha):
        for i in range(A.shape[0]):
            C[i, :i + 1] *= 0.5
            C[i, :i + 1] += alpha * A[i, 0] * A[:i + 1, 1]
            C[i, i + 1:] = -1.0
        return np.mean(C[2, :3]), np.sum(C)

    rng = np.random.default_rng(11)
    n = 24
    a = rng.random((n, n))
    spd = a @ a.T + n * np.eye(n)
    for unroll in (None, False):
        same_as_numpy(cholesky, spd, unroll=unroll)
        same_as_numpy(back_substitution, np.triu(spd), rng.random(n), unroll=unroll)
        same_as_numpy(row_updates, rng.random((n, n)), rng.random((n, 2)), 1.5, unroll=unroll)
    assert count(hlo(cholesky, spd, unroll=False), "while") == 2
    assert count(hlo(back_substitution, np.triu(spd), np.ones(n), unroll=False), "while") == 1
    assert count(hlo(row_updates, np.ones((n, n)), np.ones((n, 2)), 1.5, unroll=False), "while") == 1


def test_what_a_masked_slice_cannot_do_unrolls_the_loop():
    def lengths(x):
        out = np.zeros(x.shape[0])
        for i in range(x.shape[0]):
            out[i] = len(x[:i]) + np.flip(x[:i]).sum()     # len and flip need the real slice
        return out

    def compare(x):
        c = 0
        for i in range(1, x.shape[0]):
            c += (x[:i] > 0.5).sum()                        # a comparison of the slice: masked
        return c

    x = np.random.default_rng(12).random(30)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        same_as_numpy(lengths, x, unroll=False)
        same_as_numpy(compare, x, unroll=False)
    assert count(hlo(lengths, x, unroll=False), "while") == 0


def test_loops_over_the_rows_of_a_traced_array():
    def rows(X, c):
        total = np.zeros(X.shape[1])
        for x in X:
            total += (x - c) ** 2
        return total, x                       # the last row, as Python leaves it

    def enumerated(X):
        out = np.zeros(X.shape[0])
        for k, x in enumerate(X):
            out[k] = x.sum() * k
        return out, k

    def python_iterables(X, a, b):
        s = X * 0
        for w in [1.0, 2.0, 3.0]:             # a list: Python's loop
            s = s + X * w
        for x, y in zip(a, b):                # zip of traced arrays: their rows
            s = s + x * y
        for x, w in zip(a, [1.0, 2.0]):       # zip with a list: Python's loop (2 steps)
            s = s + x * w
        return s

    rng = np.random.default_rng(13)
    X, c = rng.random((50, 3)), rng.random(3)
    for unroll in (None, False):
        same_as_numpy(rows, X, c, unroll=unroll)
        same_as_numpy(enumerated, X, unroll=unroll)
        same_as_numpy(python_iterables, X, X[:, 0], X[:, 1], unroll=unroll)
    assert count(hlo(rows, X, c, unroll=False), "while") == 1
    assert count(hlo(enumerated, X, unroll=False), "while") == 1
    assert count(hlo(rows, np.ones((500, 3)), c), "while") == 1     # 500 rows: a while by default
    assert count(hlo(python_iterables, X, X[:, 0], X[:, 1], unroll=False), "while") == 1

    def empty(X, y):
        for x in X:                           # no rows: y keeps its value, x stays unbound
            y = y + x
        return y

    same_as_numpy(empty, np.ones((0, 3)), np.ones(3))


class _Base:
    def scale(self):
        return 2.0


class _Model(_Base):
    def __init__(self, steps):
        self.steps = steps

    def step(self, x):
        for i in range(self.steps):
            x = x * 0.5 + i
        return x

    def step_to(self, x, n):
        for i in range(self.steps, n):     # a traced bound, called as a method
            x = x * 0.5 + i
        return x

    def with_super(self, x):
        s = super().scale()           # needs its class cell: traced as written
        for i in range(20):
            x = x + s
        return x


def test_methods_are_converted_and_super_keeps_working():
    m, x = _Model(30), np.ones(3)
    same_as_numpy(m.step, x, unroll=False)
    assert count(hlo(m.step, x, unroll=False), "while") == 1
    same_as_numpy(m.with_super, x)


def test_an_unrolled_loop_warns_at_the_users_line():
    def flips(x):
        s = x[0] * 0
        for i in range(100):                       # marker-flips
            s = s + np.flip(x[:i // 20 + 1]).sum()
        return s

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        same_as_numpy(flips, np.arange(10.0))
    (w,) = [w for w in caught if "unrolled" in str(w.message)]
    assert (w.filename, w.lineno) == (__file__, line_of("marker-flips", flips))


def test_a_loop_unrolled_after_a_failed_conversion_runs_each_iteration_once():
    # `prev` starts as None, so the first iteration runs in Python before the
    # while loop is tried; the slice's size depends on i, so the while loop
    # fails and the loop is unrolled from its start. The first iteration's
    # update in place must not be applied twice (it was: x[0] ended at 401).
    def counts(x):
        prev = None
        for i in range(400):
            x[0] += 1.0
            prev = x[:i // 100 + 1].sum()
        return prev

    def through_a_view(x):
        v = x[2:]
        prev = None
        for i in range(400):
            v[0] += 1.0
            prev = v[:i // 100 + 1].sum()
        return prev

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        same_as_numpy(counts, np.zeros(8))
        same_as_numpy(through_a_view, np.zeros(8))


def test_masked_slices_reduce_compare_and_refuse_what_they_cannot_do():
    def reductions(X, v):
        out = np.zeros(X.shape[0])
        for i in range(1, X.shape[0]):
            out[i] = (X[:i, :].mean() + v[:i].mean() + (v[:i] > 0.5).sum()
                      + X[:i, 1].sum() + v[:i].dot(v[:i]) + np.inner(v[:i], v[:i]))
        return out

    def two_d_inner(X):
        s = X[0, 0] * 0
        for i in range(1, X.shape[0]):
            s = s + np.inner(X[:i, :], X[:i, :]).sum()    # inner of 2-D: not a product here
        return s

    rng = np.random.default_rng(14)
    X, v = rng.random((30, 3)), rng.random(30)
    same_as_numpy(reductions, X, v, unroll=False)
    assert count(hlo(reductions, X, v, unroll=False), "while") == 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        same_as_numpy(two_d_inner, X, unroll=False)
    assert count(hlo(two_d_inner, X, unroll=False), "while") == 0


def test_a_masked_bound_that_could_wrap_around_unrolls():
    def f(x):
        s = x[0] * 0
        for i in range(20):
            s = s + x[:i - 1].sum()      # at i = 0, NumPy's x[:-1]: almost all of x
        return s

    x = np.random.default_rng(15).random(30)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        same_as_numpy(f, x, unroll=False)
    assert count(hlo(f, x, unroll=False), "while") == 0


def test_a_fixed_width_slice_that_could_wrap_around_unrolls():
    def f(x):
        s = x[0] * 0
        for i in range(20):
            s = s + x[i:i - 1].sum()     # empty for i >= 1; at i = 0, NumPy's x[0:-1]
        return s

    x = np.random.default_rng(16).random(30)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        same_as_numpy(f, x, unroll=False)


def test_an_index_past_the_end_raises_as_numpy_does():
    def reads(x):
        s = x[0] * 0
        for i in range(x.shape[0] + 1):
            s = s + x[i]                 # i = len(x): IndexError in NumPy
        return s

    def writes(x):
        for i in range(1, x.shape[0] + 1):
            x[i] = x[i - 1]              # the last write is past the end
        return x

    x = np.arange(20.0)
    for f in (reads, writes):
        with pytest.raises(IndexError):
            f(x.copy())
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(IndexError, match="out of bounds"):
                xla.jit(f, unroll=False)(x.copy())


def test_a_list_in_the_state_is_never_run_twice():
    def f(x):
        parts = []
        for i in range(20):
            parts += [x * i]             # in place on the list (no .append to see)
        return np.stack(parts)

    x = np.arange(3.0)
    got = same_as_numpy(f, x, unroll=False)
    assert got.shape == (20, 3)


def test_a_branch_temporary_needs_no_twin_and_the_index_survives_an_empty_loop():
    def temporaries(x):
        if x.sum() > 0:
            tmp = x * 2                  # only in this branch, never read after
            y = tmp + 1
        else:
            y = -x
        return y

    for x in (np.ones(3), -np.ones(3)):
        same_as_numpy(temporaries, x)

    def keeps(x, n):
        i = 7
        for i in range(n):               # n traced: no iteration when n == 0
            x = x + i
        return x, i

    for n in (0, 3):
        same_as_numpy(keeps, np.ones(2), np.int64(n))


def test_early_returns_under_a_traced_condition_are_one_conditional():
    def sign_flip(x):
        if x.sum() > 0:
            return x * 2
        return -x

    def chain(x):
        y = x + 1
        if y.max() > 5:
            return y, y.sum()
        elif y.min() < 0:
            z = y * 3
            return z, z.sum()
        return x, x.sum()

    def static_first(x, mode):
        if mode == "a":                  # a Python condition: exact Python
            return x + 1
        if x.sum() > 0:
            return x
        return x - 1

    for x in (np.ones(3), -np.ones(3)):
        same_as_numpy(sign_flip, x)
    assert count(hlo(sign_flip, np.ones(3)), "conditional") == 1
    for x in (np.arange(8.0), -3 * np.ones(3), np.zeros(3)):
        same_as_numpy(chain, x)
    assert count(hlo(chain, np.ones(3)), "conditional") == 2
    for mode in ("a", "b"):
        for x in (np.ones(2), -np.ones(2)):
            same_as_numpy(static_first, x, mode, static_argnums=1)

    def falls_off(x):
        if x.sum() > 0:
            return x                     # the other path returns None: not foldable
        x = x * 2

    with pytest.raises(TracingError, match="contains `return`"):
        xla.jit(falls_off)(np.ones(2))


def test_a_flipped_masked_slice_stays_in_the_loop():
    def offsets(x):
        out = np.zeros(x.shape[0])
        for i in range(3, x.shape[0] - 1):
            out[i] = np.dot(np.flip(x[2:i]), x[2:i]) + np.flip(x[i - 2:]).sum()
        return out

    r = np.random.default_rng(17).random(40) * 0.1
    same_as_numpy(durbin, r, unroll=False)           # np.flip(r[:k]) in its loop
    assert count(hlo(durbin, r, unroll=False), "while") == 1
    x = np.random.default_rng(18).random(30)
    same_as_numpy(offsets, x, unroll=False)
    assert count(hlo(offsets, x, unroll=False), "while") == 1


def test_conversion_status_says_why_a_function_is_traced_as_written():
    from xla.frontend.control_flow import conversion_status

    def loops(x):
        for i in range(3):
            x = x + i
        return x

    assert conversion_status(loops) is None
    assert conversion_status(lambda x: x) == "no control flow and no calls"
    assert conversion_status(lambda x: np.sin(x)) is None      # its calls are converted
    pair = (lambda x: np.sin(x), lambda x: np.cos(x))          # which is which: not known
    assert conversion_status(pair[0]) == "its lambda is not the only one of its arguments on its line"
    scope = {}
    exec("def made(x):\n    for i in range(3):\n        x = x + i\n    return x", scope)
    assert conversion_status(scope["made"]) == "its source is not available"
    assert conversion_status(_Model(1).with_super.__func__) == \
        "it uses zero-argument super() (its class cell)"

