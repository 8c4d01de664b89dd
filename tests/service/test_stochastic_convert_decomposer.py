"""stochastic_convert_decomposer: the CPU runs stochastic-convert as XLA:CPU
does (fixtures/stochastic_convert_xla.npz, from gen_stochastic_convert.py)."""
import os

import numpy as np
import pytest

import xla
from pass_test_util import opcodes, run_pass
from xla.service.stochastic_convert_decomposer import StochasticConvertDecomposer

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures",
                        "stochastic_convert_xla.npz")


def module(src, rnd, dst, n):
    return (f"HloModule m\nENTRY e {{\n  x = {src}[{n}] parameter(0)\n  r = {rnd}[{n}] parameter(1)\n"
            f"  ROOT c = {dst}[{n}] stochastic-convert(x, r)\n}}")


@pytest.mark.parametrize("src,rnd,dst", [("f32", "u32", "s32"), ("f32", "u32", "s8"),
                                         ("f16", "u16", "s16")])
def test_the_cpu_matches_xla(src, rnd, dst):
    # Was: "the cpu backend does not support stochastic-convert".
    fixture = np.load(FIXTURES)
    key = f"{src}_{dst}"
    x, r = fixture[key + "_x"], fixture[key + "_r"]
    got = xla.compile(module(src, rnd, dst, x.size), "cpu").execute(x, r)
    np.testing.assert_array_equal(got, fixture[key + "_out"])


def test_the_decomposition_leaves_no_stochastic_convert():
    m, changed = run_pass(StochasticConvertDecomposer(), module("f32", "u32", "s32", 4))
    assert changed and "stochastic-convert" not in opcodes(m)
    assert m.entry.root_instruction.name == "c"
