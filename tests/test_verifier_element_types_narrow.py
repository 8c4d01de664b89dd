"""The verifier over the sub-byte ints and the minifloats agrees with XLA
(tests/service/fixtures/element_type_verdicts_narrow.json, from jaxlib
0.10.2: ``gen_element_type_verdicts.py --narrow``): every unary and binary
elementwise op, compare, clamp, select and a dot of each type with itself.

Some refusals there are XLA:CPU's code generator failing, not its verifier
(BACKEND_LIMITS: "failed to legalize", a RET_CHECK, "unsupported operand
type S2 in op dot", and jaxlib 0.10.2 not knowing f6e3m2fn/f6e2m3fn at all):
this project accepts and runs those modules. Every module XLA accepts runs
on the CPU backend and gives the interpreter's bits."""
import json
import pathlib
import re

import ml_dtypes
import numpy as np
import pytest

import xla
from xla import runtime
from xla.errors import XlaError
from xla.hlo.evaluator.evaluator import Evaluator
from xla.hlo.parser import parse_hlo_module
from xla.tools.arrays import flatten_result

FIXTURE = (pathlib.Path(__file__).resolve().parent / "service" / "fixtures"
           / "element_type_verdicts_narrow.json")
VERDICTS = json.loads(FIXTURE.read_text())
BACKEND_LIMITS = re.compile(r'loc\(callsite\("|RET_CHECK|^UNIMPLEMENTED: unsupported operand type'
                            r'|Invalid XLA PrimitiveType')


def ours(text):
    try:
        xla.verify_module(xla.parse_hlo_module(text))
        return True
    except XlaError:
        return False


def test_the_verifier_agrees_with_xla():
    assert len(VERDICTS) == 598
    verifier_verdicts = [(key, text, accepted) for key, text, accepted, why in VERDICTS
                         if accepted or not BACKEND_LIMITS.search(why)]
    assert len(verifier_verdicts) == 526
    disagree = [(key, accepted) for key, text, accepted in verifier_verdicts if ours(text) != accepted]
    assert disagree == []


def test_backend_limits_are_accepted_here():
    limits = [key for key, text, accepted, why in VERDICTS if not accepted and BACKEND_LIMITS.search(why)]
    assert ["dot", "s2xs2->s2"] in limits and ["add", "f6e3m2fn"] in limits
    assert all(ours(text) for key, text, accepted, why in VERDICTS
               if not accepted and BACKEND_LIMITS.search(why))


def _argument(shape, rng):
    et = shape.element_type
    if et.is_float:
        return (rng.standard_normal(shape.dimensions) * 3).astype(et.dtype)
    if et.is_pred:
        return rng.integers(0, 2, shape.dimensions).astype(bool)
    info = ml_dtypes.iinfo(et.dtype)
    return rng.integers(int(info.min), int(info.max) + 1, shape.dimensions).astype(et.dtype)


def _values(a):
    """Values to compare: a NaN's sign is unspecified (log(-1)), and it
    decides between +0 and -0 in f4e2m1fn, which has no NaN."""
    a = np.asarray(a)
    if a.dtype.kind == "V":
        return a.astype(np.float32 if "float" in a.dtype.name else np.int64)
    return a


@pytest.mark.parametrize("t", sorted({key[1] for key, *_ in VERDICTS if key[0] != "dot"}))
def test_what_xla_accepts_runs_on_the_cpu_as_on_the_interpreter(t):
    rng = np.random.default_rng(0)
    mismatches = []
    for key, text, accepted, _ in VERDICTS:
        if not accepted or (key[1] != t and not key[1].startswith(f"{t}x")):
            continue
        module = parse_hlo_module(text)
        params = sorted((i for i in module.entry.instructions if i.opcode == "parameter"),
                        key=lambda i: i.parameter_number)
        args = [_argument(p.shape, rng) for p in params]
        cpu = np.asarray(flatten_result(runtime.compile(parse_hlo_module(text), "cpu").execute(*args))[0])
        ref = np.asarray(flatten_result(Evaluator().evaluate(parse_hlo_module(text), args))[0])
        cv, rv = _values(cpu), _values(ref)
        if cpu.dtype != ref.dtype or not np.array_equal(cv, rv, equal_nan=cv.dtype.kind in "fc"):
            mismatches.append(key[0])
    assert mismatches == []
