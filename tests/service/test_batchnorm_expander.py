"""batchnorm_expander and the interpreter's batch-norm handlers, against
XLA:CPU's own results (fixtures/batch_norm_xla.npz, from gen_batch_norm.py)."""
import os

import numpy as np
import pytest

import xla
from batch_norm_modules import T
from pass_test_util import run_pass
from xla.service.batchnorm_expander import BatchNormExpander

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "batch_norm_xla.npz")
ARITY = {"training": 3, "inference": 5, "grad": 5}


@pytest.mark.parametrize("platform", ["cpu", "interpreter"])
@pytest.mark.parametrize("kind", sorted(T))
def test_batch_norm_matches_xla(kind, platform):
    # Both backends refused these ops before.
    want = np.load(FIXTURES)
    args = [want[f"{kind}_arg{i}"] for i in range(ARITY[kind])]
    got = xla.compile(T[kind], platform).execute(*args)
    got = got if isinstance(got, tuple) else (got,)
    assert len(got) == (1 if kind == "inference" else 3)
    for i, value in enumerate(got):
        expected = want[f"{kind}_out{i}"]
        np.testing.assert_allclose(np.asarray(value), expected, rtol=2e-6,
                                   atol=2e-6 * float(np.max(np.abs(expected))))


def test_the_expander_leaves_no_batch_norm():
    for text in T.values():
        module, changed = run_pass(BatchNormExpander(), text)
        assert changed
        ops = {i.opcode for c in module.computations for i in c.instructions}
        assert not ops & {"batch-norm-training", "batch-norm-inference", "batch-norm-grad"}
        assert "rsqrt" in ops
