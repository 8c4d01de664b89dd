"""np.linalg.solve, inv and cholesky raise NumPy's LinAlgError under
xla.jit, as NumPy does, where the matrix is singular / not positive
definite (xla/frontend/lax/checks.py): in straight-line code, in converted
loops and branches, in lax's loops; on every host backend. Expected
values are NumPy's on the same inputs; the exceptions are NumPy's own
(type and message, read from NumPy here)."""
import re

import numpy as np
import pytest

import xla

BACKENDS = ["cpu", "interpreter"]
SINGULAR = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [0.0, 1.0, 1.0]])   # row 1 = 2 * row 0
GOOD = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]])      # positive definite
B = np.array([1.0, -2.0, 0.5])


def numpy_error(fn, *args):
    with pytest.raises(np.linalg.LinAlgError) as info:
        fn(*args)
    return str(info.value)


def raises_as_numpy(jitted, fn, *args):
    """The jitted call raises NumPy's LinAlgError with NumPy's message."""
    message = numpy_error(fn, *args)
    with pytest.raises(np.linalg.LinAlgError) as info:
        jitted(*args)
    assert type(info.value) is np.linalg.LinAlgError
    assert str(info.value) == message
    return message


@pytest.mark.parametrize("backend", BACKENDS + ["gpu_emulator"])   # results stay on its device
def test_singular_solve_and_inv_raise_as_numpy_and_regular_ones_match(backend):
    solve = xla.jit(np.linalg.solve, backend=backend)
    inv = xla.jit(np.linalg.inv, backend=backend)
    assert raises_as_numpy(solve, np.linalg.solve, SINGULAR, B) == "Singular matrix"
    assert raises_as_numpy(inv, np.linalg.inv, SINGULAR) == "Singular matrix"
    # The same signature, a regular matrix: NumPy's values, no error.
    np.testing.assert_allclose(np.asarray(solve(GOOD, B)), np.linalg.solve(GOOD, B), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(inv(GOOD)), np.linalg.inv(GOOD), rtol=1e-12)
    # A zero matrix, and a singular float32 one.
    raises_as_numpy(solve, np.linalg.solve, np.zeros((3, 3)), B)
    raises_as_numpy(xla.jit(np.linalg.inv, backend=backend), np.linalg.inv,
                    SINGULAR.astype(np.float32))


@pytest.mark.parametrize("backend", BACKENDS)
def test_empty_matrices_raise_nothing(backend):
    # NumPy: 0 x 0 matrices solve, invert and factor to empty arrays.
    # (The check of cholesky's diagonal made a 0 x 0 one fail to compile;
    # solve / inv of one did not compile before, nor cholesky on the
    # interpreter.)
    for fn, args in ((np.linalg.solve, (np.zeros((0, 0)), np.zeros(0))),
                     (np.linalg.solve, (np.zeros((2, 0, 0)), np.zeros((2, 0, 3)))),
                     (np.linalg.inv, (np.zeros((2, 0, 0)),)),
                     (np.linalg.cholesky, (np.zeros((0, 0)),))):
        got = xla.jit(fn, backend=backend)(*args)
        want = fn(*args)
        assert got.shape == want.shape and got.dtype == want.dtype


@pytest.mark.parametrize("backend", BACKENDS)
def test_one_singular_matrix_of_a_stack_raises(backend):
    stack = np.stack([GOOD, SINGULAR, 2 * GOOD])
    rhs = np.ones((3, 3, 2))
    solve = xla.jit(np.linalg.solve, backend=backend)
    raises_as_numpy(solve, np.linalg.solve, stack, rhs)
    raises_as_numpy(xla.jit(np.linalg.inv, backend=backend), np.linalg.inv, stack)
    stack[1] = GOOD.T
    np.testing.assert_allclose(solve(stack, rhs), np.linalg.solve(stack, rhs), rtol=1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
def test_cholesky_of_a_matrix_not_positive_definite_raises_as_numpy(backend):
    chol = xla.jit(np.linalg.cholesky, backend=backend)
    indefinite = np.array([[1.0, 2.0], [2.0, 1.0]])
    assert raises_as_numpy(chol, np.linalg.cholesky, indefinite) == \
        "Matrix is not positive definite"
    raises_as_numpy(chol, np.linalg.cholesky, -np.eye(2))
    raises_as_numpy(chol, np.linalg.cholesky, np.zeros((2, 2)))
    raises_as_numpy(xla.jit(lambda a: np.linalg.cholesky(a, upper=True), backend=backend),
                    lambda a: np.linalg.cholesky(a, upper=True), np.stack([GOOD, -GOOD]))
    np.testing.assert_allclose(xla.jit(np.linalg.cholesky, backend=backend)(GOOD),
                               np.linalg.cholesky(GOOD), rtol=1e-12)
    # NumPy's factorization lets a NaN through without raising: NaNs, as NumPy.
    nan = np.array([[np.nan, 0.0], [0.0, 1.0]])
    out = chol(nan)
    np.testing.assert_array_equal(np.isnan(out), np.isnan(np.linalg.cholesky(nan)))


@pytest.mark.parametrize("backend", BACKENDS)
def test_det_of_a_singular_matrix_is_zero_and_the_first_failed_check_wins(backend):
    @xla.jit(backend=backend)
    def f(a, b, c):
        d = np.linalg.det(a)                   # 0: NumPy's det does not raise
        y = np.linalg.solve(a, b)              # a is singular: raises here first
        return d, y, np.linalg.cholesky(c)

    def numpy_f(a, b, c):
        return np.linalg.det(a), np.linalg.solve(a, b), np.linalg.cholesky(c)

    assert raises_as_numpy(f, numpy_f, SINGULAR, B, -GOOD) == "Singular matrix"
    assert raises_as_numpy(f, numpy_f, GOOD, B, -GOOD) == "Matrix is not positive definite"
    assert xla.jit(np.linalg.det, backend=backend)(SINGULAR) == np.linalg.det(SINGULAR) == 0.0
    sign, logdet = xla.jit(np.linalg.slogdet, backend=backend)(SINGULAR)
    assert (sign, logdet) == tuple(np.linalg.slogdet(SINGULAR)) == (0.0, -np.inf)


def stack_of_50(singular_at=None):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((50, 3, 3)) + 4 * np.eye(3)
    if singular_at is not None:
        a[singular_at] = SINGULAR
    return a


def accumulate(a, b):
    x = np.zeros_like(b)
    for i in range(a.shape[0]):
        x = x + np.linalg.solve(a[i], b)
    return x


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_converted_for_loop_raises_when_one_iteration_is_singular(backend):
    f = xla.jit(accumulate, backend=backend, unroll=False)
    text = f.lower(stack_of_50(), B).as_hlo_text()
    assert text.count(" while(") == 3           # the loop, and the solve's two in its body
    raises_as_numpy(f, accumulate, stack_of_50(37), B)
    raises_as_numpy(f, accumulate, stack_of_50(0), B)
    raises_as_numpy(f, accumulate, stack_of_50(49), B)
    np.testing.assert_allclose(f(stack_of_50(), B), accumulate(stack_of_50(), B), rtol=1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
def test_repeated_calls_through_the_call_plan_raise(backend):
    f = xla.jit(accumulate, backend=backend, unroll=False)
    good = stack_of_50()
    for _ in range(3):     # the first call compiles, the next ones take the call plan
        np.testing.assert_allclose(f(good, B), accumulate(good, B), rtol=1e-12)
    raises_as_numpy(f, accumulate, stack_of_50(11), B)
    assert f.cache_info().compilations == 1


def newton_steps(a, b, tol):
    # A traced while loop: without the check a NaN residual never ends it
    # (``~(r < tol)`` holds for NaN) before its step limit.
    x = np.zeros_like(b)
    r = np.linalg.norm(b)
    k = 0
    while ~(r < tol) & (k < 200):
        x = x + np.linalg.solve(a, b - a @ x)
        r = np.linalg.norm(b - a @ x)
        k += 1
    return x


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_converted_while_loop_raises(backend):
    f = xla.jit(newton_steps, backend=backend)
    assert " while(" in f.lower(GOOD, B, 1e-9).as_hlo_text()
    raises_as_numpy(f, newton_steps, SINGULAR, B, 1e-9)
    np.testing.assert_allclose(f(GOOD, B, 1e-9), newton_steps(GOOD, B, 1e-9), rtol=1e-12)


def invert_if(a, b, c):
    if c > 0:
        y = np.linalg.inv(a) @ b
    else:
        y = b * 2
    return y


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_if_on_a_traced_value_raises_only_when_its_branch_runs(backend):
    f = xla.jit(invert_if, backend=backend)
    assert "conditional(" in f.lower(SINGULAR, B, 1.0).as_hlo_text()
    raises_as_numpy(f, invert_if, SINGULAR, B, 1.0)
    # The branch that inverts does not run: NumPy does not raise, nor does this.
    np.testing.assert_array_equal(f(SINGULAR, B, -1.0), invert_if(SINGULAR, B, -1.0))
    np.testing.assert_allclose(f(GOOD, B, 1.0), invert_if(GOOD, B, 1.0), rtol=1e-12)


def branch_in_loop(a, b, flags):
    x = np.zeros_like(b)
    for i in range(a.shape[0]):
        if flags[i] > 0:
            x = x + np.linalg.solve(a[i], b)
        else:
            x = x - b
    return x


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_branch_inside_a_converted_loop(backend):
    f = xla.jit(branch_in_loop, backend=backend, unroll=False)
    flags = np.ones(50)
    flags[37] = -1.0
    # Iteration 37's matrix is singular, but its branch does not solve.
    a = stack_of_50(37)
    np.testing.assert_allclose(f(a, B, flags), branch_in_loop(a, B, flags), rtol=1e-12)
    flags[37] = 1.0
    raises_as_numpy(f, branch_in_loop, a, B, flags)


def nested(a, b, c):
    x = np.zeros_like(b)
    if c > 0:
        for k in range(10):
            for i in range(a.shape[0]):
                x = x + np.linalg.solve(a[i], b)
    return x


@pytest.mark.parametrize("backend", BACKENDS)
def test_nested_loops_in_a_branch(backend):
    f = xla.jit(nested, backend=backend, unroll=False)
    a = stack_of_50(23)
    assert f.lower(a, B, 1.0).as_hlo_text().count(" while(") == 4
    raises_as_numpy(f, nested, a, B, 1.0)
    np.testing.assert_array_equal(f(a, B, -1.0), nested(a, B, -1.0))
    np.testing.assert_allclose(f(stack_of_50(), B, 1.0), nested(stack_of_50(), B, 1.0),
                               rtol=1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
def test_lax_loops_and_branches_carry_the_error_out(backend):
    def body(i, x):
        return x + np.linalg.solve(a_of(i), B)

    def a_of(i):
        return np.eye(3) * (i - 5.0)           # singular at i == 5

    def f(lo):
        return xla.lax.fori_loop(lo, 8, body, np.zeros(3))

    def g(p, a):
        return xla.lax.cond(p > 0, lambda a: np.linalg.inv(a), lambda a: a, a)

    def h(stack):
        return xla.lax.scan(lambda c, a: (c + np.linalg.inv(a)[0, 0], c), 0.0, stack)

    message = numpy_error(np.linalg.solve, a_of(5), B)
    for fn, good, bad in ((f, (6,), (0,)), (g, (1.0, GOOD), (1.0, SINGULAR)),
                          (h, (stack_of_50(),), (stack_of_50(44),))):
        jitted = xla.jit(fn, backend=backend)
        jitted(*good)
        with pytest.raises(np.linalg.LinAlgError, match=message):
            jitted(*bad)


def shrink_while_solvable(x, t):
    # m's first pivot is 3, 2, 1, then 0 (singular) at the fourth test.
    m = np.diag([3.0, 2.0, 1.0])
    while np.linalg.solve(m, x)[0] > t:
        x = x / 4
        m = m - np.diag([1.0, 0.0, 0.0])
    return x, m


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_while_condition_that_raises_on_values_raises_as_numpy(backend):
    f = xla.jit(shrink_while_solvable, backend=backend)
    ones = np.ones(3)
    # The loop state carries the test's outcome, computed before the loop
    # and at the end of the body: the condition only reads it (and the code).
    text = f.lower(ones, 0.1).as_hlo_text()
    entry = text[text.index("\nENTRY"):]
    (cond,) = re.findall(r" while\(.*condition=(%[\w.]+)", entry)
    body = text[text.index(f"\n{cond} "):].split("\n}")[0]
    assert " while(" not in body and "custom-call" not in body
    assert body.count(" get-tuple-element(") == 2
    assert re.search(r"ROOT %\S+ = pred\[\] and\(", body)
    # Tests 1/3, 1/8, 1/16: two iterations, no error.
    for got, want in zip(f(ones, 0.1), shrink_while_solvable(ones, 0.1)):
        np.testing.assert_array_equal(got, want)
    # The first test fails: no iteration.
    for got, want in zip(f(ones, 0.5), shrink_while_solvable(ones, 0.5)):
        np.testing.assert_array_equal(got, want)
    # Three iterations, then the fourth test solves a singular matrix.
    raises_as_numpy(f, shrink_while_solvable, ones, 0.01)
    # Singular at the first test (m's pivot is 3: x = 0 keeps it solvable,
    # and a NaN threshold ends it: no error where NumPy has none).
    for got, want in zip(f(np.zeros(3), np.nan), shrink_while_solvable(np.zeros(3), np.nan)):
        np.testing.assert_array_equal(got, want)


def while_in_a_branch_in_a_loop(xs, t, c):
    out = np.zeros(3)
    for k in range(xs.shape[0]):
        x = xs[k]
        m = np.diag([3.0, 2.0, 1.0])
        if c > 0:
            while np.linalg.solve(m, x)[0] > t:
                x = x / 4
                m = m - np.diag([1.0, 0.0, 0.0])
        out = out + x
    return out


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_while_condition_check_in_a_branch_in_a_converted_loop(backend):
    f = xla.jit(while_in_a_branch_in_a_loop, backend=backend, unroll=False)
    xs = np.ones((12, 3))
    xs[7] = 0.1             # row 7 ends before its singular test; the others do not
    assert "conditional(" in f.lower(xs, 0.1, 1.0).as_hlo_text()
    raises_as_numpy(f, while_in_a_branch_in_a_loop, xs, 0.01, 1.0)
    for t, c in ((0.1, 1.0), (0.01, -1.0)):
        np.testing.assert_array_equal(f(xs, t, c), while_in_a_branch_in_a_loop(xs, t, c))
    xs[:] = 0.1             # every row ends in time at t = 0.01
    np.testing.assert_array_equal(f(xs, 0.01, 1.0), while_in_a_branch_in_a_loop(xs, 0.01, 1.0))


def cholesky_in_body_solve_in_test(x, t, c):
    # NumPy runs the test, then the body, then the test again: which of
    # the two raises first depends on where each fails.
    m = np.diag([3.0, 2.0, 1.0])
    k = 0.0
    while np.linalg.solve(m, x)[0] > t:
        x = x / 4 + np.linalg.cholesky(c - k * np.eye(3))[0, 1]    # 0: L is lower
        m = m - np.diag([1.0, 0.0, 0.0])
        k += 1.0
    return x


@pytest.mark.parametrize("backend", BACKENDS)
def test_checks_in_a_while_body_and_its_condition_raise_in_numpys_order(backend):
    f = xla.jit(cholesky_in_body_solve_in_test, backend=backend)
    ones = np.ones(3)
    spd = np.diag([10.0, 10.0, 10.0])
    # The body's factor fails at its second iteration (k = 1), before the
    # condition's singular test (the fourth).
    assert raises_as_numpy(f, cholesky_in_body_solve_in_test, ones, -1e9,
                           np.diag([10.0, 10.0, 0.5])) == "Matrix is not positive definite"
    # The body's factor would fail at k = 5, after the singular test.
    assert raises_as_numpy(f, cholesky_in_body_solve_in_test, ones, -1e9,
                           np.diag([10.0, 10.0, 4.5])) == "Singular matrix"
    np.testing.assert_allclose(f(ones, 0.1, spd), cholesky_in_body_solve_in_test(ones, 0.1, spd),
                               rtol=1e-14)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_check_in_lax_while_loops_cond_fun(backend):
    def f(m, x):
        return xla.lax.while_loop(lambda s: np.linalg.solve(s[0], s[1])[0] > 0.01,
                                  lambda s: (s[0] - np.diag([1.0, 0.0, 0.0]), s[1] / 4),
                                  (m, x))

    def numpy_f(m, x):
        while np.linalg.solve(m, x)[0] > 0.01:
            m, x = m - np.diag([1.0, 0.0, 0.0]), x / 4
        return m, x

    jitted = xla.jit(f, backend=backend)
    raises_as_numpy(jitted, numpy_f, np.diag([3.0, 2.0, 1.0]), np.ones(3))
    m = np.diag([9.0, 2.0, 1.0])
    for got, want in zip(jitted(m, np.ones(3)), numpy_f(m, np.ones(3))):
        np.testing.assert_array_equal(got, want)


def branch_on_solve(a, b, t):
    if t > 5.0:
        y = b
    elif np.linalg.solve(a, b)[0] < t:
        y = b * 2.0
    else:
        y = b - 1.0
    return y


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_check_in_an_if_or_elif_condition_raises_when_numpy_evaluates_it(backend):
    f = xla.jit(branch_on_solve, backend=backend)
    assert "conditional(" in f.lower(GOOD, B, 1.0).as_hlo_text()
    raises_as_numpy(f, branch_on_solve, SINGULAR, B, 1.0)
    # t > 5: NumPy never tests the elif, so a singular matrix raises nothing.
    np.testing.assert_array_equal(f(SINGULAR, B, 6.0), branch_on_solve(SINGULAR, B, 6.0))
    for t in (1.0, -1.0):
        np.testing.assert_array_equal(f(GOOD, B, t), branch_on_solve(GOOD, B, t))


def double_then_solve(x, a):
    x *= 2.0
    return np.linalg.solve(a, x)


@pytest.mark.parametrize("backend", BACKENDS)
def test_arguments_written_in_place_are_left_unchanged_when_the_call_raises(backend):
    f = xla.jit(double_then_solve, backend=backend)
    x = B.copy()
    with pytest.raises(np.linalg.LinAlgError, match="Singular matrix"):
        f(x, SINGULAR)
    np.testing.assert_array_equal(x, B)     # NumPy would have doubled it before raising
    expected = B.copy()
    y = double_then_solve(expected, GOOD)
    for _ in range(2):                      # the call plan too
        x = B.copy()
        np.testing.assert_allclose(f(x, GOOD), y, rtol=1e-12)
        np.testing.assert_array_equal(x, expected)
    x = B.copy()
    with pytest.raises(np.linalg.LinAlgError):
        f(x, SINGULAR)
    np.testing.assert_array_equal(x, B)


def root_and_whiles(lowered):
    """The entry's root shape and the shapes of every while loop, as text."""
    module = lowered.module
    whiles = [i for c in module.computations for i in c.instructions if i.opcode == "while"]
    return (module.entry.root_instruction.shape.to_text(False),
            [(w.shape.to_text(False), str(w.attr("backend_config"))) for w in whiles])


def test_a_function_without_checks_gets_no_hidden_output_or_state():
    # Guards the cost: nothing is added where no operation registers a check
    # (det's LU registers none).
    def f(m, x, n):
        for i in range(n):
            x = x * 2.0 + np.linalg.det(m)
        if x[0] > 0:
            x = x - 1.0
        return x
    root, whiles = root_and_whiles(xla.jit(f, static_argnums=2, unroll=False).lower(
        GOOD, np.ones(3), 20))
    assert root == "f64[3]"                      # the user's output alone
    assert len(whiles) == 2                      # the loop, and det's LU in it
    # The loop's state: its index, x and the captured matrix, nothing more.
    assert [w for w, config in whiles if '"n":"20"' in config] == ["(s64[], f64[3], f64[3,3])"]


def test_a_function_with_checks_has_one_hidden_s32_output():
    root, _ = root_and_whiles(xla.jit(np.linalg.inv).lower(GOOD))
    assert root == "(f64[3,3], s32[])"
    root, whiles = root_and_whiles(xla.jit(accumulate, unroll=False).lower(stack_of_50(), B))
    assert root == "(f64[3], s32[])"
    # The loop's state gains the code: index, x, the stack, b, the code.
    assert [w for w, config in whiles if '"n":"50"' in config] == \
        ["(s64[], f64[3], f64[50,3,3], f64[3], s32[])"]
