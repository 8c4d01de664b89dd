"""Functions a converted function calls are converted too
(``_Runtime.call`` in xla/frontend/control_flow.py): loops and branches in
helpers, closures, lambdas and methods, recursion, and the functions called
as written. The expected values are the same functions run by NumPy."""
import re

import numpy as np
import pytest

import xla
from xla.errors import TracingError

from test_control_flow import _Model, count, hlo, line_of, same_as_numpy


def _halve_and_shift(x, n):
    for i in range(n):
        x = x * 0.5 + i                         # marker-helper-loop
    return x


def _fold(x):
    if x.sum() > 0:                             # a traced condition, in a helper
        y = x * 2
    else:
        y = -x
    return y


def _outer_helper(x, n):
    return _fold(_halve_and_shift(x, n)) + 1    # helpers calling helpers


def test_a_loop_and_a_branch_inside_called_helpers_are_converted():
    def kernel(x, n):
        return _outer_helper(x, n)

    x = np.linspace(-1.0, 1.0, 5)
    for n in (0, 3, 20):
        for sign in (1, -1):
            same_as_numpy(kernel, sign * x, np.int64(n))     # traced trip count
    text = hlo(kernel, x, np.int64(20))
    assert count(text, "while") == 1 and count(text, "conditional") == 1
    # The HLO's metadata names the helper's own line.
    line = line_of("marker-helper-loop", _halve_and_shift)
    assert re.search(rf'multiply\(.*source_line={line}\}}', text)


def _fill_rows(x):
    out = np.zeros(x.shape)             # traced (the jitted function's stand-in NumPy)
    for i in range(x.shape[0]):
        out[i] = x[i] * (i + 1)
    return out


def test_a_helper_filling_an_array_it_creates_is_one_while_loop():
    def kernel(x):
        return _fill_rows(x).sum(axis=1)

    x = np.random.default_rng(3).random((40, 3))
    same_as_numpy(kernel, x, unroll=False)
    assert count(hlo(kernel, x, unroll=False), "while") == 1


def test_closures_lambdas_and_methods_are_converted_when_called():
    def kernel(x, n):
        scale = x.max()

        def scaled(v):                  # a closure over `scale`
            for i in range(n):
                v = v * 0.9 + scale
            return v

        clip = lambda v: _fold(v) - 1   # noqa: E731 - a lambda calling a helper
        m = _Model(0)
        return clip(scaled(x)) + m.step_to(x, n)

    x = np.linspace(-1.0, 1.0, 4)
    for n in (0, 2, 30):
        for sign in (1, -1):
            same_as_numpy(kernel, sign * x, np.int64(n))
    text = hlo(kernel, x, np.int64(30))
    assert count(text, "while") == 2 and count(text, "conditional") == 1


class _Smoother:
    def __init__(self, weight):
        self.weight = weight

    def __call__(self, x, n):
        for i in range(n):
            x = x * self.weight + (1 - self.weight) * np.roll(x, 1)
        return x


def test_a_callable_objects_call_is_converted():
    smooth = _Smoother(0.7)

    def kernel(x, n):
        return smooth(x, n)

    x = np.arange(6.0)
    for n in (0, 3, 25):
        same_as_numpy(kernel, x, np.int64(n))
    assert count(hlo(kernel, x, np.int64(25)), "while") == 1


_double_then_fold = lambda x, n: _fold(_halve_and_shift(x, n)) * 2   # noqa: E731


def test_a_module_level_lambda_is_converted():
    def kernel(x, n):
        return _double_then_fold(x, n)

    x = np.linspace(-1.0, 1.0, 4)
    for sign in (1, -1):
        same_as_numpy(kernel, sign * x, np.int64(12))
        same_as_numpy(_double_then_fold, sign * x, np.int64(12))
    assert count(hlo(kernel, x, np.int64(12)), "conditional") == 1


def _power(x, k):
    """Recursion on a Python int: runs as Python, one conversion of the code."""
    if k == 0:
        return np.ones_like(x)
    return x * _power(x, k - 1)


def _countdown(x, k):
    if k.sum() > 0:                    # recursion on a traced value: no end in sight
        return _countdown(x * 2, k - 1)
    return x


def test_recursive_helpers_run_as_python_or_fail_clearly():
    def kernel(x):
        return _power(x, 5) + _fold(x)

    same_as_numpy(kernel, np.array([0.5, -2.0, 3.0]))

    def endless(x, k):
        return _countdown(x, k)

    with pytest.raises(TracingError, match="`_countdown` calls itself past Python's recursion"):
        xla.jit(endless)(np.ones(2), np.int64(3))


def _generated(x, n):
    for i in range(n):
        yield x * i


_CALLS = 0


def _counts_calls(x):
    global _CALLS
    _CALLS += 1                         # assigns a module global: called as written
    for i in range(3):
        x = x + i
    return x


def test_helpers_the_rewrite_cannot_take_are_called_as_written():
    def kernel(x):
        total = x * 0
        for v in _generated(x, 3):      # a generator: Python iteration, unrolled
            total = total + v
        return total + _Model(0).with_super(x) + _counts_calls(x)

    global _CALLS
    _CALLS = 0
    x = np.array([1.0, 2.0])
    got = xla.jit(kernel)(x.copy())
    np.testing.assert_allclose(got, kernel(x.copy()))
    assert _CALLS == 2                   # once traced, once by NumPy: the real global


def test_an_error_inside_a_helper_names_the_helpers_line():
    def bad_helper(x):
        while x.sum() > 0:
            x = x[:1]                    # marker-shape-change
        return x

    def kernel(x):
        return bad_helper(x)

    with pytest.raises(xla.errors.XlaError) as e:
        xla.jit(kernel)(np.ones(3))
    assert f"{__file__}:{line_of('marker-shape-change', bad_helper)}:" in str(e.value)
