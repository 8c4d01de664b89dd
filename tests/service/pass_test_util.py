"""Helpers for pass tests: parse HLO text, run one pass, compare numbers.

A pass test reads like XLA's: the input module as HLO text, the pass, and
the printed result or a structural property, plus a check that the
interpreter computes the same values before and after the pass.
"""
import numpy as np

from xla.backends.interpreter.evaluator import Evaluator
from xla.hlo.parser import parse_hlo_module
from xla.hlo.verifier import verify_module
from xla.tools.arrays import flatten_result, random_args


def run_pass(hlo_pass, text, verify=True):
    """Parses ``text``, runs ``hlo_pass`` on it; returns (module, changed)."""
    module = parse_hlo_module(text)
    changed = hlo_pass.run(module)
    for comp in module.computations:
        comp.sort_post_order()
    if verify:
        verify_module(module)
    return module, changed


def evaluate(module, args):
    return flatten_result(Evaluator().evaluate(module, list(args)))


def assert_same_results(text_before, module_after, seed=0, args=None, rtol=1e-6, atol=1e-6):
    """The interpreter gives the same numbers on the module before and after."""
    before = parse_hlo_module(text_before)
    if args is None:
        args = random_args([p.shape for p in before.entry.parameters], seed=seed)
    expected = evaluate(before, args)
    actual = evaluate(module_after, args)
    assert len(expected) == len(actual)
    for e, a in zip(expected, actual):
        e = np.asarray(e)
        a = np.asarray(a)
        assert e.shape == a.shape and e.dtype == a.dtype, (e.shape, e.dtype, a.shape, a.dtype)
        if e.dtype.kind in "fc":
            np.testing.assert_allclose(a.astype(np.complex128 if e.dtype.kind == "c" else np.float64),
                                       e.astype(np.complex128 if e.dtype.kind == "c" else np.float64),
                                       rtol=rtol, atol=atol, equal_nan=True)
        else:
            np.testing.assert_array_equal(a, e)


def opcodes(module, computation=None):
    """Opcodes of the entry computation's instructions (or a named one), in order."""
    comp = module.entry if computation is None else module.computation(computation)
    return [i.opcode for i in comp.instructions]
