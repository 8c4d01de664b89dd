"""A 3-layer transformer's training step as JAX lowers it (a copy of
benchmarks/modules/transformer_train_L3.hlo.gz, gen_compile_modules.py:
1,224 instructions; Bazel's test sandbox has tests/ only) through the whole
CPU pipeline, against the interpreter. Its fusions once made a cycle the
scheduler refused (sibling reduces at depths phase 2 of csrc/fusion.cc
had computed too small; csrc/fusion_test.cc has the reduced case)."""
import gzip
import os

import numpy as np

import xla
from xla.tools.arrays import random_args

FIXTURE = os.path.join(os.path.dirname(__file__), "fixtures", "transformer_train_L3_jax.hlo.gz")


def test_transformer_training_step_matches_the_interpreter():
    text = gzip.open(FIXTURE, "rt").read()
    module = xla.parse_hlo_module(text)
    args = [a * np.asarray(0.1, a.dtype) if a.dtype.kind == "f" else a
            for a in random_args([p.shape for p in module.entry.parameters], seed=0)]
    got = xla.compile(xla.parse_hlo_module(text), "cpu").execute(*args)
    want = xla.compile(xla.parse_hlo_module(text), "interpreter").execute(*args)
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    assert len(got) == len(want) > 1
    for g, w in zip(got, want):
        g, w = np.asarray(g, np.float64), np.asarray(w, np.float64)
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5 * max(1.0, np.abs(w).max()))
