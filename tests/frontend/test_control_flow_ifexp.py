"""Conditional expressions (``a if c else b``) in converted code
(``_Runtime.if_exp``): Python's choice, lazily, when ``c`` is a Python
value; with a traced ``c``, both branches and a select when they are pure
expressions of one shape and dtype (or Python numbers of one type, which
stay weak); anything else is an error naming the line. The expected values
are the same functions run by NumPy."""
import re

import numpy as np
import pytest

import xla
from xla.errors import TracingError

from test_control_flow import count, hlo, line_of, same_as_numpy


def _soft_sign(x, t):
    y = np.sqrt(np.abs(x)) if t > 0 else -x
    return y * (2.0 if x.sum() > 0 else 3.0)


@pytest.mark.parametrize("t", [1.5, -1.5])
def test_a_traced_condition_selects_between_pure_branches(t):
    x = np.linspace(-2, 3, 7)
    same_as_numpy(_soft_sign, x, np.float64(t))
    assert count(hlo(_soft_sign, x, np.float64(t)), "select") == 2


def _scaled(x):
    return x * (0.5 if x[0] > 0 else 2.0)


def test_python_numbers_in_both_branches_stay_weak():
    x = np.array([1.0, -2.0, 4.0], np.float32)
    got = xla.jit(_scaled)(x)
    assert np.asarray(got).dtype == np.float32 == _scaled(x).dtype
    np.testing.assert_array_equal(np.asarray(got), _scaled(x))


def _abs_sum(x, n):
    acc = 0.0 * x[0]
    for i in range(n):
        acc = acc + (x[i] if x[i] > 0 else -x[i])
    return acc


def test_inside_a_converted_loop():
    x = np.array([1.0, -2.0, 3.0, -4.0, 5.0])
    same_as_numpy(_abs_sum, x, 5, unroll=False)
    assert count(hlo(_abs_sum, x, 5, unroll=False), "while") == 1


def _helper(v):
    return v * 2 if v.max() > 1 else v + 1


def _calls_a_helper(x):
    return _helper(x) + _helper(-x)


def test_in_a_called_helper():
    same_as_numpy(_calls_a_helper, np.array([0.5, 3.0, -1.0]))


SEEN = []


def _python_condition(x, flag):
    return x * 2 if flag else SEEN.append(1)


def test_a_python_condition_evaluates_one_branch_as_python_does():
    x = np.arange(3.0)
    np.testing.assert_array_equal(np.asarray(xla.jit(_python_condition, static_argnums=1)(x, True)),
                                  x * 2)
    assert SEEN == []


def _impure(x):
    return x if x.sum() > 0 else SEEN.append(1)          # marker-impure


def _mismatched(x):
    return x if x.sum() > 0 else x.astype(np.float32)    # marker-mismatch


def _array_or_number(x):
    return x if x.sum() > 0 else 0.0                     # marker-number


@pytest.mark.parametrize("fn,marker,words", [
    (_impure, "marker-impure", "a branch here calls a function that may have effects"),
    (_mismatched, "marker-mismatch", "are float64[3] and float32[3]"),
    (_array_or_number, "marker-number", "are float64[3] and float"),
])
def test_what_cannot_be_a_select_names_its_line(fn, marker, words):
    with pytest.raises(TracingError, match=rf":{line_of(marker, fn)}: .*{re.escape(words)}"):
        xla.jit(fn)(np.arange(3.0))
    assert SEEN == []
