"""Test-only helpers for the JAX-lowered LAPACK custom-call fixtures
(fixtures/lapack_*_jax.npz, written by fixtures/gen_lapack_*_jax.py): the
programs of a fixture, and one run of a module on a backend."""
import os

import numpy as np

import xla
from xla.hlo.evaluator.evaluator import Evaluator
from xla.hlo.parser import parse_hlo_module
from xla.tools.arrays import flatten_result


def load(filename):
    """(every array of fixtures/``filename``, the names of its programs)."""
    with np.load(os.path.join(os.path.dirname(__file__), "fixtures", filename)) as f:
        data = dict(f)
    return data, sorted(k[:-4] for k in data if k.endswith(".hlo"))


def program(data, name):
    """(HLO text, arguments, jax's results) of program ``name``; bf16 arrays,
    which npz keeps as 2-byte voids, as bf16."""
    count = lambda what: int(data[f"{name}.num_{what}"])  # noqa: E731
    return (str(data[f"{name}.hlo"]),
            [_typed(data[f"{name}.arg{i}"]) for i in range(count("args"))],
            [_typed(data[f"{name}.result{i}"]) for i in range(count("results"))])


def _typed(a):
    if a.dtype == np.dtype("V2"):
        import ml_dtypes
        return a.view(ml_dtypes.bfloat16)
    return a


def run(text, args, backend):
    """The flattened results of module ``text`` on ``backend`` ("cpu" or
    the interpreter, the reference semantics)."""
    if backend == "cpu":
        return [np.asarray(r) for r in flatten_result(xla.compile(text, "cpu").execute(*args))]
    return [np.asarray(r) for r in flatten_result(Evaluator().evaluate(parse_hlo_module(text), list(args)))]


def cpu_and_interpreter(text, args, want):
    """[(the cpu backend's result, jax's ``want``, the interpreter's)] of
    module ``text`` on ``args``; each cpu result has jax's dtype and shape."""
    got, ref = run(text, args, "cpu"), run(text, args, "interpreter")
    assert len(got) == len(want) == len(ref)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
    return list(zip(got, want, ref))
