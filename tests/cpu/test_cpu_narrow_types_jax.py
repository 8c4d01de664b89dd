"""Small jax programs over int4/uint4/int2 and the minifloats (int4 weights
dequantized into a matmul, quantization, shapes, reduces, sort, gather, fp8
matmuls, MX-style scaling): the HLO text jax 0.10.2 lowers, run on the cpu
backend and the interpreter, against XLA:CPU's results
(fixtures/narrow_types_jax.npz, from gen_narrow_types_jax.py)."""
import os

import numpy as np
import pytest

from xla import runtime
from xla.hlo.evaluator.evaluator import Evaluator
from xla.hlo.parser import parse_hlo_module
from xla.tools.arrays import flatten_result, restore_dtype

_FIXTURE = os.path.join(os.path.dirname(__file__), "fixtures", "narrow_types_jax.npz")
with np.load(_FIXTURE) as _f:
    DATA = dict(_f)
NAMES = sorted(k[:-4] for k in DATA if k.endswith(".hlo") and not k.endswith(".optimized.hlo"))
# Float results of matmuls and sums: XLA:CPU may reassociate (as the
# project's own reduces do); everything else must be exact.
INEXACT = {"int4_dequant_matmul", "fp8_matmul", "f8e4m3_ops"}


def _case(name, optimized=False):
    text = str(DATA[f"{name}.optimized.hlo" if optimized else f"{name}.hlo"])
    module = parse_hlo_module(text)
    params = sorted((i for i in module.entry.instructions if i.opcode == "parameter"),
                    key=lambda i: i.parameter_number)
    args = [restore_dtype(DATA[f"{name}.arg{i}"], p.shape.dtype) for i, p in enumerate(params)]
    leaves = [s for _, s in module.entry.root_instruction.shape.leaves()]
    want = [restore_dtype(DATA[f"{name}.out{i}"], s.dtype) for i, s in enumerate(leaves)]
    return text, args, want


def test_fixture_has_every_program():
    assert len(NAMES) == 12 and "int4_dequant_matmul" in NAMES and "mx_scale" in NAMES


@pytest.mark.parametrize("form", ["lowered", "optimized"])
@pytest.mark.parametrize("backend", ["cpu", "interpreter"])
@pytest.mark.parametrize("name", NAMES)
def test_matches_xla(name, backend, form):
    # "optimized": XLA:CPU's own optimized module (E(4) layouts, its fusions).
    text, args, want = _case(name, optimized=form == "optimized")
    if backend == "cpu":
        got = flatten_result(runtime.compile(parse_hlo_module(text), "cpu").execute(*args))
    else:
        got = flatten_result(Evaluator().evaluate(parse_hlo_module(text), list(args)))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        g = np.asarray(g)
        assert g.dtype == w.dtype and g.shape == w.shape
        if w.dtype.kind == "V":  # ml_dtypes: compare values (NaNs as NaN)
            g, w = g.astype(np.float64), w.astype(np.float64)
        if name in INEXACT and w.dtype.kind == "f":
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
        else:
            np.testing.assert_array_equal(g, w)
