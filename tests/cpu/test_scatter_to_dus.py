"""``scatter-to-dynamic-update-slice``: JAX's ``x.at[...].set(...)`` (a
scatter of one window that keeps the update) becomes a
dynamic-update-slice, updated in place, with scatter's out-of-bounds rule
kept (a window that does not fit is dropped, not clamped): JAX-lowered
programs with XLA:CPU's results (fixtures/scatter_set_jax.npz, written by
gen_scatter_set_jax.py), hand-written scatters against the interpreter,
and the scatters the pass leaves alone."""
import numpy as np
import pytest

import xla
from lapack_fixtures import load, program, run
from xla.hlo.parser import parse_hlo_module
from xla.service.pass_registry import make_pass
from xla.service.scatter_to_dus import plan
from xla.tools.arrays import flatten_result

DATA, NAMES = load("scatter_set_jax.npz")


def _opcodes(module):
    return [i.opcode for i in module.all_instructions()]


@pytest.mark.parametrize("name", NAMES)
def test_jax_set_becomes_a_dynamic_update_slice(name):
    text, args, want = program(DATA, name)
    exe = xla.compile(parse_hlo_module(text), "cpu")
    ops = _opcodes(exe.module)
    assert "scatter" not in ops and "dynamic-update-slice" in ops
    got = [np.asarray(g) for g in flatten_result(exe.execute(*args))]
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.tobytes() == w.tobytes()


def _scatter(operand="f32[6,5]", indices="s32[1]", updates="f32[5]", uwd="0", inserted="0",
             sd2od="0", ivd="0", combiner="ROOT b = f32[] parameter(1)", extra=""):
    return f"""HloModule m
r {{
  a = f32[] parameter(0)
  {combiner}
}}
ENTRY e {{
  x = {operand} parameter(0)
  i = {indices} parameter(1)
  u = {updates} parameter(2)
  ROOT s = {operand} scatter(x, i, u), update_window_dims={{{uwd}}}, inserted_window_dims={{{inserted}}}, scatter_dims_to_operand_dims={{{sd2od}}}, index_vector_dim={ivd}{extra}, to_apply=r
}}
"""


ROW = dict()   # a row of f32[6, 5] at a start along dimension 0
BLOCK = dict(operand="f32[7,9]", indices="s32[2]", updates="f32[3,4]", uwd="0,1", inserted="",
             sd2od="0,1")
UNSIGNED = dict(indices="u32[1]")
WINDOWS = {id(ROW): (1, 5), id(BLOCK): (3, 4), id(UNSIGNED): (1, 5)}


@pytest.mark.parametrize("form,index", [
    (ROW, [4]), (ROW, [0]), (ROW, [5]), (ROW, [6]), (ROW, [-1]), (ROW, [2**31 - 1]),
    (ROW, [-2**31]),
    (BLOCK, [4, 5]), (BLOCK, [5, 5]), (BLOCK, [4, 6]), (BLOCK, [-1, 2]), (BLOCK, [0, 0]),
    (UNSIGNED, [5]), (UNSIGNED, [6]), (UNSIGNED, [2**32 - 1]),
])
def test_out_of_bounds_windows_are_dropped(form, index):
    text = _scatter(**form)
    module = parse_hlo_module(text)
    shapes = [p.shape for p in module.entry.parameters]
    rng = np.random.default_rng(3)
    x = rng.standard_normal(shapes[0].dimensions).astype(np.float32)
    i = np.array(index, shapes[1].element_type.dtype)
    u = rng.standard_normal(shapes[2].dimensions).astype(np.float32)
    exe = xla.compile(parse_hlo_module(text), "cpu")
    assert "scatter" not in _opcodes(exe.module)
    got = np.asarray(exe.execute(x, i, u))
    want = np.asarray(run(text, [x, i, u], "interpreter")[0])
    assert got.tobytes() == want.tobytes()
    inside = all(0 <= v <= n - w for v, n, w in zip(index, shapes[0].dimensions, WINDOWS[id(form)]))
    assert (got.tobytes() == x.tobytes()) == (not inside)


@pytest.mark.parametrize("form", [
    dict(combiner="b = f32[] parameter(1)\n  ROOT c = f32[] add(a, b)"),       # an add
    dict(indices="s32[2,1]", updates="f32[2,5]", uwd="1", ivd="1"),          # two windows
    dict(operand="f32[300,5]", indices="s8[1]"),                             # 295 not in s8
    dict(indices="s4[1]"),                                                   # a sub-byte index
])
def test_other_scatters_stay(form):
    text = _scatter(**form)
    module = parse_hlo_module(text)
    (scatter,) = [i for i in module.all_instructions() if i.opcode == "scatter"]
    assert plan(scatter) is None
    assert not make_pass("scatter-to-dynamic-update-slice").run(module)
    assert "scatter" in _opcodes(xla.compile(text, "cpu").module)


def test_the_rewrite_in_hlo():
    module = parse_hlo_module(_scatter())
    assert make_pass("scatter-to-dynamic-update-slice").run(module)
    ops = _opcodes(module)
    # the start's bounds checked, the old row written back out of bounds
    assert "scatter" not in ops
    assert ops.count("compare") == 2 and "select" in ops and "dynamic-slice" in ops
    assert module.entry.root_instruction.opcode == "dynamic-update-slice"
