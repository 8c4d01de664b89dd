"""argmax / argmin rows as JAX lowers them (a variadic reduce of the values
and an iota with JAX's reducer) run on the CPU in two vectorized passes
(arg_reduce.py) and give XLA:CPU's indices (fixtures/arg_reduce_jax.npz,
written by gen_arg_reduce_jax.py) and the interpreter's results bit for
bit, values included (the first NaN, the last of equal zeros: the fold's,
in order or pairwise alike for this reducer);
reducers, indices and inits of other forms keep the fold."""
import ml_dtypes
import numpy as np
import pytest

import xla
from lapack_fixtures import load, program, run
from xla.backends.cpu.arg_reduce import arg_reducer
from xla.hlo.parser import parse_hlo_module
from xla.tools.arrays import flatten_result

DATA, NAMES = load("arg_reduce_jax.npz")


# Reduced along columns (kept minor dimension, f32/f64 values): folded row by
# row into runs of outputs (column_reduce.py), every load contiguous.
COLUMNS = ("argmax_f64_axis0", "argmax_f32_middle", "argmin_f32_axis0_specials",
           "argmax_f32_axis0_large")


@pytest.mark.parametrize("name", NAMES)
def test_jax_argmax_runs_in_two_passes(name):
    text, args, want = program(DATA, name)
    exe = xla.compile(parse_hlo_module(text), "cpu")
    # (rows of one element: the iota is a constant 0 after simplification)
    two_passes = name != "argmax_one_element_rows" and name not in COLUMNS
    assert ("arg.find" in exe.ir_text) == two_passes
    assert ("col.body:" in exe.ir_text) == (name in COLUMNS)
    got = [np.asarray(g) for g in flatten_result(exe.execute(*args))]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)


REDUCER = """
r {{
  a = {t}[] parameter(0)
  ai = s32[] parameter(1)
  x = {t}[] parameter(2)
  xi = s32[] parameter(3)
  cmp = pred[] compare(a, x), direction={direction}{ctype}
  nan = pred[] compare(a, a), direction=NE
  pick = pred[] or({pick})
  v = {t}[] select(pick, a, x)
  eq = pred[] compare(a, x), direction=EQ
  lt = pred[] compare(ai, xi), direction=LT
  tie = pred[] and(eq, lt)
  pi = pred[] or(pick, tie)
  i = s32[] select(pi, ai, xi)
  ROOT t = ({t}[], s32[]) tuple(v, i)
}}
"""


def _module(rows, n, t="f32", direction="GT", init=None, index="iota", ctype="",
            pick="cmp, nan", init_index="0"):
    init = init or ("-inf" if direction == "GT" else "inf")
    shape = f"{t}[{rows},{n}]"
    idx = (f"io = s32[{n}] iota(), iota_dimension=0\n  k = s32[{rows},{n}] broadcast(io), "
           f"dimensions={{1}}" if index == "iota" else f"k = s32[{rows},{n}] parameter(1)")
    params = f"x0 = {shape} parameter(0)"
    return "HloModule m\n" + REDUCER.format(t=t, direction=direction, ctype=ctype, pick=pick) + f"""
ENTRY e {{
  {params}
  {idx}
  c = {t}[] constant({init})
  z = s32[] constant({init_index})
  ROOT w = ({t}[{rows}], s32[{rows}]) reduce(x0, k, c, z), dimensions={{1}}, to_apply=r
}}
"""


def _bits_equal(text, args):
    exe = xla.compile(parse_hlo_module(text), "cpu")
    got = [np.asarray(g) for g in flatten_result(exe.execute(*args))]
    ref = [np.asarray(r) for r in run(text, args, "interpreter")]
    for g, r in zip(got, ref):
        assert g.tobytes() == r.astype(g.dtype).tobytes()
    return exe, got


def _special_rows(n, dtype=np.float32):
    rng = np.random.default_rng(11)
    x = rng.integers(-3, 1, (10, n)).astype(dtype)
    x[x == 0] = np.where(rng.random((x == 0).sum()) < 0.5, 0.0, -0.0)
    x[0, :] = -np.inf                           # every element the init value
    x[1, :] = -0.0
    x[1, [4, n - 1]] = 0.0                      # the value: the last zero's sign
    x[2, :] = 0.0
    x[2, 6] = -0.0
    nan = np.array([np.nan], dtype)
    payload = nan.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[nan.itemsize]) | 5
    x[3, 9] = payload.view(dtype)[0]            # the first NaN's payload
    x[3, 2] = -np.nan
    x[4, -1] = np.nan
    x[5, 0] = np.inf
    x[5, 3] = np.inf
    return x


@pytest.mark.parametrize("t,dtype", [("f32", np.float32), ("f64", np.float64),
                                     ("bf16", ml_dtypes.bfloat16)])
@pytest.mark.parametrize("direction", ["GT", "LT"])
def test_values_and_indices_are_the_folds(t, dtype, direction):
    x = _special_rows(70, dtype)
    if direction == "LT":
        x = -x
    exe, (values, indices) = _bits_equal(_module(10, 70, t, direction), [x])
    assert "arg.find" in exe.ir_text
    # the fold's rules, spelled out for a few rows
    assert indices[1] == 0 and np.signbit(values[1]) == (direction == "LT")
    assert indices[3] == 2 and np.isnan(values[3])
    assert indices[5] == 0


@pytest.mark.parametrize("form", [
    dict(ctype=", type=TOTALORDER"),     # another comparison
    dict(pick="cmp, cmp"),               # no NaN rule
    dict(index="parameter"),             # indices from memory: unknown order
    dict(init_index="1"),                # the init's index is not the first's
    dict(init="3"),                      # an init value that can win
])
def test_other_forms_keep_the_fold(form):
    text = _module(6, 40, **form)
    # No NaN: the fold without the NaN rule depends on its order with one
    # (the CPU folds in order, the interpreter pairwise: XLA leaves it open).
    x = np.nan_to_num(_special_rows(40)[:6], nan=-1.0, posinf=np.inf, neginf=-np.inf)
    args = [x] + ([np.tile(np.arange(40, dtype=np.int32)[::-1], (6, 1))]
                  if form.get("index") == "parameter" else [])
    exe, _ = _bits_equal(text, args)
    assert "arg.find" not in exe.ir_text


def test_reducer_recognition():
    def comp(**kw):
        m = parse_hlo_module(_module(2, 8, **kw))
        return next(c for c in m.computations if c.name == "r")
    assert arg_reducer(comp()) == "max"
    assert arg_reducer(comp(direction="LT")) == "min"
    assert arg_reducer(comp(pick="nan, cmp")) == "max"   # operands of or in either order
    assert arg_reducer(comp(direction="GE")) is None
    assert arg_reducer(comp(ctype=", type=TOTALORDER")) is None
