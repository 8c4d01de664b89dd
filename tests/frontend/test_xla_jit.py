"""xla.jit: caching per signature, static arguments, pytrees, weak scalars,
must-compile errors that name the user's line."""
import collections
import inspect

import numpy as np
import pytest

import xla
from xla.errors import InvalidArgumentError, ShapeError, TracingError


def _line_of(marker, fn):
    src, start = inspect.getsourcelines(fn)
    for k, line in enumerate(src):
        if marker in line:
            return start + k
    raise AssertionError(marker)


def test_seed_model_fn_compiles_once_per_signature():
    @xla.jit
    def model_fn(x, y, z):
        return np.sum(x + y * z)

    rng = np.random.default_rng(1)
    x, y, z = (rng.standard_normal(1000).astype(np.float32) for _ in range(3))
    for _ in range(3):
        np.testing.assert_allclose(model_fn(x, y, z), np.sum(x + y * z), rtol=1e-5)
    assert model_fn.cache_info().compilations == 1
    assert model_fn.cache_info().hits == 2
    # recompiled_on_launch: a new shape compiles again, the old one is kept.
    model_fn(x[:10], y[:10], z[:10])
    model_fn(x, y, z)
    info = model_fn.cache_info()
    assert (info.compilations, info.currsize, info.misses) == (2, 2, 2)
    model_fn(x.astype(np.float64), y, z)
    assert model_fn.cache_info().compilations == 3


def test_weak_python_scalar_keeps_float32_and_is_part_of_the_key():
    f = xla.jit(lambda x, s: x * s)
    x = np.ones(3, np.float32)
    out = f(x, 2.0)
    assert out.dtype == np.float32 and np.all(out == 2)
    f(x, 3.0)          # same signature: weak float64 scalar
    assert f.cache_info().compilations == 1
    out = f(x, np.float64(2.0))   # a NumPy scalar is not weak: float64 result
    assert out.dtype == np.float64
    assert f.cache_info().compilations == 2


def test_static_arguments_by_number_and_name():
    def power_sum(x, n, axis=0):
        out = x
        for _ in range(n - 1):     # a Python loop over a static value
            out = out * x
        return np.sum(out, axis=axis)

    f = xla.jit(power_sum, static_argnums=(1,), static_argnames=("axis",))
    x = np.arange(6.0).reshape(2, 3)
    np.testing.assert_allclose(f(x, 3), np.sum(x ** 3, axis=0))
    np.testing.assert_allclose(f(x, 2, axis=1), np.sum(x ** 2, axis=1))
    np.testing.assert_allclose(f(x, n=2, axis=1), np.sum(x ** 2, axis=1))
    # f(x, 2, axis=1) and f(x, n=2, axis=1) are one signature.
    assert f.cache_info().compilations == 2
    f(x, 3)
    assert f.cache_info().compilations == 2


def test_unhashable_static_argument_is_a_clear_error():
    f = xla.jit(lambda x, cfg: x * len(cfg), static_argnums=1)
    with pytest.raises(InvalidArgumentError, match="static argument 1"):
        f(np.ones(2), np.ones(2))


def test_pytrees_in_and_out():
    Pair = collections.namedtuple("Pair", "a b")

    @xla.jit
    def f(params, xs):
        h = xs[0] @ params["w"] + params["b"]
        return {"h": h, "pair": Pair(h.sum(), [xs[1] * 2, None])}

    rng = np.random.default_rng(2)
    params = {"w": rng.standard_normal((3, 2)), "b": rng.standard_normal(2)}
    xs = (rng.standard_normal((4, 3)), rng.standard_normal(5))
    out = f(params, xs)
    h = xs[0] @ params["w"] + params["b"]
    np.testing.assert_allclose(out["h"], h)
    assert isinstance(out["pair"], Pair)
    np.testing.assert_allclose(out["pair"].a, h.sum())
    np.testing.assert_allclose(out["pair"].b[0], xs[1] * 2)
    assert out["pair"].b[1] is None


def test_outputs_that_are_inputs_or_constants():
    f = xla.jit(lambda x: (x, np.float32(3), 2 * x))
    x = np.arange(3, dtype=np.float32)
    a, c, d = f(x)
    np.testing.assert_array_equal(a, x)
    assert c == 3 and np.asarray(c).dtype == np.float32
    np.testing.assert_array_equal(d, 2 * x)


def test_nested_jit_is_inlined():
    inner = xla.jit(lambda x: np.exp(x))
    outer = xla.jit(lambda x: inner(x) + 1)
    x = np.linspace(0, 1, 5)
    np.testing.assert_allclose(outer(x), np.exp(x) + 1)
    assert inner.cache_info().compilations == 0
    assert outer.cache_info().compilations == 1


def test_python_if_on_traced_value_names_the_line_and_points_to_cond():
    # (an if that returns inside a loop stays Python: its traced condition
    # is an error; early returns at the top level are converted)
    def f(x):
        for i in range(3):
            if np.sum(x) > i:   # marker-if
                return x
        return -x

    with pytest.raises(TracingError) as e:
        xla.jit(f)(np.ones(3))
    msg = str(e.value)
    assert f"{__file__}:{_line_of('marker-if', f)}" in msg
    assert "xla.lax.cond" in msg


def test_data_dependent_shape_names_function_and_line():
    def f(x):
        return np.unique(x)   # marker-unique

    with pytest.raises(TracingError) as e:
        xla.jit(f)(np.array([1, 2, 2]))
    msg = str(e.value)
    assert "np.unique" in msg and "depends on the data" in msg
    assert f"{__file__}:{_line_of('marker-unique', f)}" in msg

    def g(x):
        return x[x > 0]   # marker-mask

    with pytest.raises(TracingError) as e:
        xla.jit(g)(np.array([1.0, -2.0]))
    assert "np.where" in str(e.value)
    assert f":{_line_of('marker-mask', g)}" in str(e.value)


@pytest.mark.parametrize("body,pattern", [
    (lambda a, b: a + b, "could not be broadcast together with shapes"),
    (lambda a, b: a @ b, "matmul"),
    (lambda a, b: a.reshape(7), "cannot reshape array of size 6"),
])
def test_shape_errors_are_reported_at_trace_time_with_the_users_line(body, pattern):
    with pytest.raises(ShapeError, match=pattern) as e:
        xla.jit(body)(np.ones((2, 3)), np.ones((4,)))
    assert __file__ in str(e.value)


def test_item_assignment_updates_the_array_as_in_numpy():
    def f(x):
        x[0] = 1.0
        return x

    x = np.zeros(3)
    out = xla.jit(f)(x)
    np.testing.assert_array_equal(out, [1, 0, 0])
    np.testing.assert_array_equal(x, [1, 0, 0])   # the caller's array, as NumPy updates it


def test_non_array_argument_is_a_clear_error():
    with pytest.raises(InvalidArgumentError, match="static"):
        xla.jit(lambda x, name: x)(np.ones(2), "hello")


def test_user_exceptions_propagate_unchanged():
    def f(x):
        raise KeyError("mine")

    with pytest.raises(KeyError, match="mine"):
        xla.jit(f)(np.ones(2))


def test_lower_shows_the_traced_module():
    lowered = xla.jit(lambda x, y: np.sum(x + y * 2)).lower(np.ones(4, np.float32), np.ones(4, np.float32))
    text = lowered.as_hlo_text()
    assert "reduce(" in text and "multiply(" in text and "f32[4]" in text
    module = xla.parse_hlo_module(text)
    xla.verify_module(module)


def test_float64_program_stays_float64():
    f = xla.jit(lambda x: np.tanh(x) * 0.5 + np.mean(x))
    out = f(np.linspace(-1, 1, 7))
    assert out.dtype == np.float64
    np.testing.assert_allclose(out, np.tanh(np.linspace(-1, 1, 7)) * 0.5, atol=1e-15)


def test_interpreter_backend_matches_cpu():
    def f(x):
        e = np.exp(x - x.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    x = np.random.default_rng(3).standard_normal((3, 8)).astype(np.float32)
    a = xla.jit(f, backend="cpu")(x)
    b = xla.jit(f, backend="interpreter")(x)
    np.testing.assert_allclose(a, b, rtol=1e-6)


def test_unknown_backend_and_option_are_clear_errors_at_jit_time():
    with pytest.raises(InvalidArgumentError, match="unknown backend 'tpu'; available platforms: .*cpu"):
        xla.jit(lambda x: x, backend="tpu")
    with pytest.raises(InvalidArgumentError, match="unknown option.*disk_cach\\b.*disk_cache"):
        xla.jit(lambda x: x, disk_cach=False)


def test_xla_errors_keep_the_traceback_through_user_code():
    def helper(a):
        return a @ a   # marker-matmul

    def f(x):
        return helper(x)

    with pytest.raises(ShapeError) as e:
        xla.jit(f)(np.ones((2, 3)))
    lines = {tb.lineno + 1 for tb in e.traceback if tb.path == __file__ or str(tb.path) == __file__}
    assert _line_of("marker-matmul", helper) in lines


# ----- donation -------------------------------------------------------------------

def test_donated_array_receives_the_output():
    f = xla.jit(lambda x, y: x * 2 + y, donate_argnums=0)
    x = np.arange(8, dtype=np.float32)
    y = np.ones(8, np.float32)
    want = x * 2 + y
    assert "input_output_alias={ {}: (0, {}, may-alias) }" in f.lower(x, y).as_hlo_text()
    out = f(x, y)
    np.testing.assert_array_equal(out, want)
    assert out is x          # written in place: no new buffer
    np.testing.assert_array_equal(y, np.ones(8, np.float32))
    # Without donation the input is untouched and the output is new memory.
    x2 = np.arange(8, dtype=np.float32)
    out2 = xla.jit(lambda x, y: x * 2 + y)(x2, y)
    assert not np.shares_memory(out2, x2)
    np.testing.assert_array_equal(x2, np.arange(8, dtype=np.float32))


def test_donation_in_a_pytree_training_step():
    def step(params, grads, lr):
        return {k: params[k] - lr * grads[k] for k in params}, sum(np.sum(g * g) for g in grads.values())

    f = xla.jit(step, donate_argnums=0)
    rng = np.random.default_rng(4)
    params = {"w": rng.standard_normal((4, 3)), "b": rng.standard_normal(3)}
    grads = {"w": rng.standard_normal((4, 3)), "b": rng.standard_normal(3)}
    want_params, want_norm = step({k: v.copy() for k, v in params.items()}, grads, 0.1)
    originals = dict(params)
    new, norm = f(params, grads, 0.1)
    for k in params:
        np.testing.assert_allclose(new[k], want_params[k], rtol=1e-15)
        assert new[k] is originals[k]
    np.testing.assert_allclose(norm, want_norm, rtol=1e-12)


@pytest.mark.parametrize("fn", [
    lambda x: x[::-1] * 1.0,               # reads x out of order while writing the output
    lambda x: (x + 1, x),                  # x itself is an output too
    lambda x: x @ x,                       # a dot reads all of x for every element
    lambda x: np.tanh(x.T) + 1,            # transposed reads
    lambda x: np.cumsum(x, axis=0),
])
def test_unsafe_aliases_are_dropped_and_results_stay_correct(fn):
    x = np.random.default_rng(5).standard_normal((4, 4))
    want = fn(x.copy())
    got = xla.jit(fn, donate_argnums=0)(x.copy())
    for g, w in zip(got if isinstance(want, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)


def test_unsafe_alias_in_an_hlo_module_is_not_honoured():
    text = """HloModule m, input_output_alias={ {}: (0, {}, may-alias) }

ENTRY main {
  p = f32[8] parameter(0)
  ROOT r = f32[8] reverse(p), dimensions={0}
}
"""
    x = np.arange(8, dtype=np.float32)
    exe = xla.compile(xla.parse_hlo_module(text), "cpu")
    np.testing.assert_array_equal(exe.execute(x, donated=(0,)), x[::-1])
    np.testing.assert_array_equal(x, np.arange(8, dtype=np.float32))


def test_aliased_module_without_donation_leaves_the_argument_alone():
    text = """HloModule m, input_output_alias={ {}: (0, {}, may-alias) }

ENTRY main {
  p = f32[8] parameter(0)
  ROOT r = f32[8] negate(p)
}
"""
    exe = xla.compile(xla.parse_hlo_module(text), "cpu")
    x = np.arange(8, dtype=np.float32)
    np.testing.assert_array_equal(exe.execute(x), -np.arange(8, dtype=np.float32))
    np.testing.assert_array_equal(x, np.arange(8, dtype=np.float32))   # replaying a dump: inputs kept


def test_donating_an_argument_passed_twice_copies_it():
    f = xla.jit(lambda x, y: x + y * 2, donate_argnums=0)
    x = np.arange(6.0)
    out = f(x, x)
    np.testing.assert_array_equal(out, np.arange(6.0) * 3)
    np.testing.assert_array_equal(x, np.arange(6.0))
    view = np.arange(6.0)
    out = f(view[:3], view[3:])      # disjoint views of one array: still safe to write
    np.testing.assert_array_equal(out, np.arange(3.0) + np.arange(3.0, 6.0) * 2)


def test_donating_readonly_or_noncontiguous_arrays_copies():
    f = xla.jit(lambda x: x * 3, donate_argnums=0)
    ro = np.arange(4.0)
    ro.flags.writeable = False
    np.testing.assert_array_equal(f(ro), np.arange(4.0) * 3)
    strided = np.arange(8.0)[::2]
    np.testing.assert_array_equal(f(strided), np.arange(0.0, 8.0, 2) * 3)
    np.testing.assert_array_equal(strided, np.arange(0.0, 8.0, 2))


def test_interpreter_accepts_donation_and_computes_the_same():
    f = xla.jit(lambda x: np.exp(x), backend="interpreter", donate_argnums=(0,))
    x = np.linspace(0, 1, 5)
    np.testing.assert_allclose(f(x), np.exp(np.linspace(0, 1, 5)))


def test_donation_errors():
    with pytest.raises(InvalidArgumentError, match="both static and donated"):
        xla.jit(lambda x, n: x, static_argnums=1, donate_argnums=1)
    with pytest.raises(InvalidArgumentError, match="both static and donated"):
        xla.jit(lambda x, n: x, static_argnames="n", donate_argnums=1)
    with pytest.raises(InvalidArgumentError, match="non-negative ints"):
        xla.jit(lambda x: x, donate_argnums="x")
    f = xla.jit(lambda x, s: x * s, donate_argnums=1)
    with pytest.raises(InvalidArgumentError, match="argument 1 of <lambda> is a float, not a NumPy array"):
        f(np.ones(2), 2.0)
    with pytest.raises(InvalidArgumentError, match="names argument 1 of <lambda>, which was called with 1"):
        xla.jit(lambda x, s=1.0: x * s, donate_argnums=1)(np.ones(2))


def test_keyword_arguments_and_defaults():
    def f(x, y=None, *, scale=2.0):
        out = x * scale
        return out if y is None else out + y

    jf = xla.jit(f)
    x, y = np.arange(3.0), np.ones(3)
    np.testing.assert_array_equal(jf(x), f(x))                 # defaults apply while tracing
    np.testing.assert_array_equal(jf(x, y), f(x, y))
    np.testing.assert_array_equal(jf(x, y=y), f(x, y))         # moved to its position: same entry
    np.testing.assert_array_equal(jf(x, scale=np.float64(5)), f(x, scale=5.0))
    assert jf.cache_info().compilations == 3
    with pytest.raises(TypeError, match="f\\(\\).*unexpected keyword argument 'bogus'"):
        jf(x, bogus=1)


def test_clear_cache_recompiles():
    f = xla.jit(lambda x: x + 1)
    f(np.ones(2))
    f(np.ones(2))
    f.clear_cache()
    assert f.cache_info().currsize == 0
    np.testing.assert_array_equal(f(np.ones(2)), np.full(2, 2.0))
    info = f.cache_info()
    assert (info.compilations, info.hits, info.currsize) == (2, 1, 1)


def test_a_call_under_other_debug_options_compiles_under_them():
    # bf16 arithmetic: with excess precision (the default) the chain is
    # computed in f32 and rounded once; without, every op rounds (as
    # ml_dtypes' bfloat16 arrays compute it in NumPy).
    from ml_dtypes import bfloat16
    from xla import debug_options

    def f(x, y):
        return (x * y + x) * y - x

    rng = np.random.default_rng(0)
    x, y = (rng.standard_normal(256).astype(bfloat16) for _ in range(2))
    once = f(x.astype(np.float32), y.astype(np.float32)).astype(bfloat16)
    per_op = f(x, y)
    assert np.count_nonzero(once != per_op) > 10     # the two differ here

    jf = xla.jit(f)
    np.testing.assert_array_equal(jf(x, y), once)
    np.testing.assert_array_equal(jf(x, y), once)    # the fast path
    with debug_options.override(xla_allow_excess_precision=False):
        np.testing.assert_array_equal(jf(x, y), per_op)
        np.testing.assert_array_equal(jf(x, y), per_op)
    np.testing.assert_array_equal(jf(x, y), once)
    with debug_options.override(xla_allow_excess_precision=False):
        np.testing.assert_array_equal(jf(x, y), per_op)
    assert jf.cache_info().compilations == 2         # equal overrides share an entry


def test_repeated_array_calls_take_the_fast_path_without_mixing_signatures():
    f = xla.jit(lambda x, y: x * 2 + y)
    a32, b32 = np.arange(4, dtype=np.float32), np.ones(4, np.float32)
    a64 = np.arange(4.0)
    for _ in range(3):
        r1 = f(a32, b32)
        r2 = f(a32, a64)
        r3 = f(a32, 1.5)
        r4 = f(a32[:2], b32[:2])
    assert r1.dtype == np.float32 and r2.dtype == np.float64 and r3.dtype == np.float32
    np.testing.assert_array_equal(r1, a32 * 2 + 1)
    np.testing.assert_array_equal(r2, a32 * 2 + a64)
    np.testing.assert_array_equal(r3, a32 * 2 + 1.5)
    np.testing.assert_array_equal(r4, a32[:2] * 2 + 1)
    info = f.cache_info()
    assert info.compilations == 4 and info.hits == 8
    f.clear_cache()
    f(a32, b32)
    assert f.cache_info().compilations == 5


def test_the_fast_path_takes_python_scalars_and_arguments_updated_in_place():
    x = np.arange(4, dtype=np.float32)
    scale = xla.jit(lambda a, s: a * s)
    for s in (2.0, 3.5, -1.0):
        np.testing.assert_array_equal(scale(x, s), x * np.float32(s))
    assert scale._fast          # the repeated calls took the shortcut
    for s in (2, 7, True, 1 + 2j):
        np.testing.assert_allclose(scale(x, s), x * s)
    # An int beyond int64 is not a fast-path key: the full path handles it.
    with pytest.raises(Exception):
        scale(x, 1 << 70)

    def accumulate(acc, v):
        acc += v

    jitted = xla.jit(accumulate)
    acc = np.zeros(4, np.float32)
    for k in range(3):
        jitted(acc, x)
    np.testing.assert_array_equal(acc, 3 * x)
    assert jitted._fast
