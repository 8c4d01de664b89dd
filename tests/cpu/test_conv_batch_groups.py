"""Convolutions with batch groups (``batch_group_count``: JAX's kernel
gradients of grouped convolutions) on the cpu backend: the
``convolution-batch-group-splitter`` pass makes one convolution per group
(slices of the input batch and of the kernel's output features) and a
concatenate of their results, which the runtime's conv2d computes; a
depthwise layer's gradient keeps its batch groups (the runtime takes it).
The JAX programs (fixtures/grouped_conv_grads_jax.npz, from
gen_grouped_conv_grads_jax.py) against XLA:CPU's results, hand-written
ones against the interpreter."""
import numpy as np
import pytest

from xla import runtime
from xla.hlo.evaluator.evaluator import Evaluator
from xla.hlo.parser import parse_hlo_module
from xla.tools.arrays import flatten_result

from lapack_fixtures import load, program, run

DATA, NAMES = load("grouped_conv_grads_jax.npz")


def _batch_groups(exe):
    return [int(i.attr("batch_group_count", 1) or 1) for c in exe.module.computations
            for i in c.instructions if i.opcode == "convolution"]


def test_fixture_has_every_program():
    assert NAMES == ["groups2_strided", "groups4_3x3", "groups8_1x1"]
    assert "batch_group_count=4" in str(DATA["groups4_3x3.hlo"])


@pytest.mark.parametrize("name", NAMES)
def test_matches_jax_with_one_convolution_per_group(name):
    text, args, want = program(DATA, name)
    exe = runtime.compile(parse_hlo_module(text), "cpu")
    groups = int(str(DATA[f"{name}.hlo"]).split("batch_group_count=")[1].split()[0].strip(","))
    assert _batch_groups(exe) == [1] * groups
    got = run(text, args, "cpu")
    np.testing.assert_allclose(got[0], want[0], rtol=1e-4, atol=1e-4 * np.abs(want[0]).max())


@pytest.mark.parametrize("dims,labels,groups", [
    # lhs, rhs, out dimensions: 2-D NHWC-style kernel gradients and a 1-D
    # convolution whose batch dimension is the lhs's first.
    (([6, 7, 7, 8], [6, 5, 5, 12], [3, 3, 2, 12]), "f01b_i01o->01bf", 4),
    (([2, 9, 6], [3, 6, 4], [1, 7, 4]), "b0f_0io->b0f", 2),
])
def test_hand_written_batch_groups_match_the_interpreter(dims, labels, groups):
    lhs, rhs, out = dims
    s = lambda d: ",".join(map(str, d))  # noqa: E731
    window = "size=5x5" if len(lhs) == 4 else "size=3"
    text = f"""HloModule m
ENTRY e {{
  a = f32[{s(lhs)}] parameter(0)
  k = f32[{s(rhs)}] parameter(1)
  ROOT c = f32[{s(out)}] convolution(a, k), window={{{window}}}, dim_labels={labels}, batch_group_count={groups}
}}"""
    rng = np.random.default_rng(3)
    a = rng.standard_normal(lhs).astype(np.float32)
    k = rng.standard_normal(rhs).astype(np.float32)
    exe = runtime.compile(parse_hlo_module(text), "cpu")
    assert _batch_groups(exe) == [1] * groups
    got = np.asarray(exe.execute(a, k))
    want = np.asarray(flatten_result(Evaluator().evaluate(parse_hlo_module(text), [a, k]))[0])
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


def test_depthwise_gradient_keeps_its_batch_groups():
    # One input batch entry and one output feature per group: the runtime's
    # depthwise kernel gradient (layout_constraints.depthwise_filter).
    text = """HloModule m
ENTRY e {
  a = f32[4,8,8,6] parameter(0)
  k = f32[4,8,8,6] parameter(1)
  ROOT c = f32[3,3,1,6] convolution(a, k), window={size=8x8 pad=1_1x1_1}, dim_labels=f01b_i01o->01bf, batch_group_count=6
}"""
    rng = np.random.default_rng(4)
    a = rng.standard_normal((4, 8, 8, 6)).astype(np.float32)
    k = rng.standard_normal((4, 8, 8, 6)).astype(np.float32)
    exe = runtime.compile(parse_hlo_module(text), "cpu")
    assert _batch_groups(exe) == [6]
    want = np.asarray(flatten_result(Evaluator().evaluate(parse_hlo_module(text), [a, k]))[0])
    np.testing.assert_allclose(np.asarray(exe.execute(a, k)), want, rtol=1e-4,
                               atol=1e-4 * np.abs(want).max())
