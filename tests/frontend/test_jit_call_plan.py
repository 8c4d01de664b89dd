"""The per-signature call plan of ``xla.jit`` (xla/frontend/call_plan.py
``CallPlan``, the CPU executable's ``prepared_call``): a repeated call
trusts its key (each array's shape and dtype, each scalar's type, each
static argument's type and value) and checks nothing else, so what the key
leaves out (strides, alignment, writeability, memory shared
between arguments, hooks) must still be handled, by the C++ call or by the
general path. Expected values: NumPy's, on copies of the same arguments."""
import numpy as np
import pytest

import xla
from xla import _core
from xla.errors import InvalidArgumentError


def add(x, y):
    return x + y


def gemm(alpha, beta, C, A, B):
    C[:] = alpha * A @ B + beta * C


def _plan(f):
    (plan,) = f._fast.values()
    return plan


def test_the_repeated_call_runs_the_prepared_call():
    f = xla.jit(add)
    x, y = np.arange(4, dtype=np.float32), np.ones(4, np.float32)
    f(x, y)
    assert _plan(f).run is not None      # the CPU offers a prepared call for it
    for k in range(3):
        np.testing.assert_array_equal(f(x, y + k), x + (y + k))
    info = f.cache_info()
    assert (info.misses, info.hits, info.compilations) == (1, 3, 1)


def test_results_are_new_arrays_on_every_call():
    f = xla.jit(add)
    x, y = np.arange(4, dtype=np.float32), np.ones(4, np.float32)
    f(x, y)                                   # compiles; the plan serves the next calls
    first, second = f(x, y), f(x, y)
    assert first is not second and not np.shares_memory(first, second)
    first[:] = -1
    np.testing.assert_array_equal(second, x + y)


@pytest.mark.parametrize("layout", ["strided", "fortran", "unaligned", "broadcast"])
def test_an_argument_of_another_layout_after_a_contiguous_one(layout):
    rng = np.random.default_rng(0)
    f = xla.jit(add)
    x, y = rng.random((6, 5)).astype(np.float32), rng.random((6, 5)).astype(np.float32)
    np.testing.assert_array_equal(f(x, y), x + y)
    if layout == "strided":
        other = rng.random((12, 5)).astype(np.float32)[::2]
    elif layout == "fortran":
        other = np.asfortranarray(rng.random((6, 5)).astype(np.float32))
    elif layout == "unaligned":   # 4-byte aligned for NumPy, not to the 16 bytes the C++ call needs
        raw = np.zeros(6 * 5 * 4 + 16, np.uint8)
        start = (4 - raw.ctypes.data) % 16     # the view starts 4 bytes past a 16-byte boundary
        other = raw[start:start + 6 * 5 * 4].view(np.float32).reshape(6, 5)
        other[:] = rng.random((6, 5))
        assert other.ctypes.data % 16 and other.flags.aligned
    else:
        other = np.broadcast_to(rng.random(5).astype(np.float32), (6, 5))   # strides (0, 4)
    for _ in range(2):
        np.testing.assert_array_equal(f(other, y), other.astype(np.float32) + y)
        np.testing.assert_array_equal(f(x, y), x + y)


def test_a_new_dtype_or_shape_recompiles():
    f = xla.jit(add)
    x32 = np.arange(4, dtype=np.float32)
    f(x32, x32)
    f(x32, x32)
    r64 = f(x32.astype(np.float64), x32.astype(np.float64))
    assert r64.dtype == np.float64
    r3 = f(x32[:3].copy(), x32[:3].copy())
    assert r3.shape == (3,)
    ri = f(np.arange(4), np.arange(4))
    assert ri.dtype == np.int64
    np.testing.assert_array_equal(ri, 2 * np.arange(4))
    assert f.cache_info().compilations == 4


def test_python_scalars_convert_to_their_parameters_dtype():
    f = xla.jit(lambda x, s: x * s)
    x = np.arange(4, dtype=np.float32)
    f(x, 2.0)
    np.testing.assert_array_equal(f(x, 3.5), x * np.float32(3.5))
    np.testing.assert_array_equal(f(x, 3), x * 3)       # an int: its own signature
    np.testing.assert_array_equal(f(x, True), x * True)
    assert f.cache_info().compilations == 3


def test_static_arguments_take_the_plan_and_new_values_recompile():
    f = xla.jit(lambda x, n: x * n + n, static_argnums=(1,))
    x = np.arange(4, dtype=np.float64)
    for n in (2, 3, 2, 3):
        np.testing.assert_array_equal(f(x, n), x * n + n)
    assert f.cache_info().compilations == 2
    assert len(f._fast) == 2
    # 2.0 equals 2 (the full key shares the entry) but is another plan's key
    np.testing.assert_array_equal(f(x, 2.0), x * 2.0 + 2.0)
    with pytest.raises(InvalidArgumentError, match="not hashable"):
        f(x, np.arange(2))


def test_in_place_updates_through_the_plan():
    rng = np.random.default_rng(1)
    C, A, B = rng.random((6, 7)), rng.random((6, 5)), rng.random((5, 7))
    f = xla.jit(gemm)
    for _ in range(2):
        ours, ref = C.copy(), C.copy()
        assert f(1.5, 1.2, ours, A, B) is None
        gemm(1.5, 1.2, ref, A, B)
        np.testing.assert_allclose(ours, ref, rtol=1e-12)
    # A non-contiguous C after contiguous ones: written through the view.
    base = np.zeros((12, 7))
    view = base[::2]
    view[:] = C
    ref = C.copy()
    gemm(1.5, 1.2, ref, A, B)
    f(1.5, 1.2, view, A, B)
    np.testing.assert_allclose(view, ref, rtol=1e-12)
    np.testing.assert_array_equal(base[1::2], 0)
    # C passed as A too (shapes permitting): read while written, NumPy's values.
    S = rng.random((6, 6))
    g = xla.jit(gemm)
    g(1.0, 0.5, S.copy(), rng.random((6, 6)), rng.random((6, 6)))
    ours, ref = S.copy(), S.copy()
    g(1.0, 0.5, ours, ours, S)
    gemm(1.0, 0.5, ref, ref, S)
    np.testing.assert_allclose(ours, ref, rtol=1e-12)
    # A read-only C: refused as NumPy refuses it.
    ro = C.copy()
    ro.flags.writeable = False
    with pytest.raises(InvalidArgumentError, match="read-only"):
        f(1.5, 1.2, ro, A, B)
    np.testing.assert_array_equal(ro, C)


def test_an_execute_hook_added_later_sees_the_calls():
    f = xla.jit(add)
    x = np.arange(4, dtype=np.float32)
    f(x, x)
    (entry,) = f._cache.values()
    seen = []
    entry.executable.add_execute_hook(lambda args, result: seen.append(np.array(result)))
    f(x, x)
    assert len(seen) == 1
    np.testing.assert_array_equal(seen[0], 2 * x)


def test_inside_a_trace_the_function_is_inlined_not_run():
    f = xla.jit(add)
    a, b = np.ones(4, np.float32), np.arange(4, dtype=np.float32)
    f(a, b)
    hits = f.cache_info().hits
    g = xla.jit(lambda x: f(a, b) * x)
    np.testing.assert_array_equal(g(b), (a + b) * b)
    assert f.cache_info().hits == hits     # traced into g, not executed


def test_a_prepared_call_declines_what_it_cannot_run():
    f = xla.jit(add)
    x = np.arange(8, dtype=np.float32)
    f(x, x)
    run = _plan(f).run
    np.testing.assert_array_equal(run([x, x]), 2 * x)
    assert run([x[::-1], x]) is None          # not C-contiguous: execute copies it
    y = np.zeros_like(x)
    y.flags.writeable = False
    np.testing.assert_array_equal(run([x, y]), x)   # read, not written: fine


def test_overlapping_arguments_after_distinct_ones_keep_numpys_values():
    def add_into(x, y):
        x += y

    f = xla.jit(add_into)
    for _ in range(2):                       # the plan is made with distinct arrays
        x = np.zeros(62)
        f(x, np.ones(62))
        np.testing.assert_array_equal(x, 1)
    ref = np.arange(64.0)
    ours = np.zeros(64 + 2)
    start = (-ours.ctypes.data % 16) // 8    # ours[start:] is 16-byte aligned, as is [start + 2:]
    ours = ours[start:start + 64]
    ours[:] = ref
    add_into(ref[2:], ref[:-2])              # NumPy reads y before writing x
    f(ours[2:], ours[:-2])
    np.testing.assert_array_equal(ours, ref)


# ----- the plans in C++ (JitDispatch, python/jit_call_bindings.cc) ---------------
native = pytest.mark.skipif(getattr(_core, "JitDispatch", None) is None,
                            reason="an extension built before JitDispatch")


def _python_plans_refused(f, monkeypatch):
    """The Python plans of ``f`` fail if called: what runs is the C++ plan."""
    def refuse(self, args):
        raise AssertionError("the Python plan ran")
    monkeypatch.setattr(type(_plan(f)), "__call__", refuse)


@native
def test_the_repeated_call_runs_in_cpp(monkeypatch):
    f = xla.jit(gemm)
    rng = np.random.default_rng(2)
    C, A, B = rng.random((6, 7)), rng.random((6, 5)), rng.random((5, 7))
    f(1.5, 1.2, C.copy(), A, B)
    assert len(f._native) == 1
    _python_plans_refused(f, monkeypatch)
    ours, ref = C.copy(), C.copy()
    assert f(1.5, 1.2, ours, A, B) is None
    gemm(1.5, 1.2, ref, A, B)
    np.testing.assert_allclose(ours, ref, rtol=1e-12)
    assert f.cache_info().hits == 1


@native
@pytest.mark.parametrize("kind", ["leaf", "none", "flat", "tree", "flat+written", "leaf+written"])
def test_each_kind_of_result_in_cpp(kind, monkeypatch):
    def fn(x, y):
        if kind == "leaf":
            return x * y
        if kind == "none":
            return None
        if kind == "flat":
            return x + y, x - y
        if kind == "tree":
            return {"sum": x + y, "pair": [x * y, (x - y,)]}
        x += y
        return (x * 2, y + 1) if kind == "flat+written" else x * 2

    f = xla.jit(fn)
    rng = np.random.default_rng(3)
    x, y = rng.random(5), rng.random(5)
    f(x.copy(), y)
    _python_plans_refused(f, monkeypatch)
    for _ in range(2):
        ours, ref = x.copy(), x.copy()
        got, want = f(ours, y), fn(ref, y)
        np.testing.assert_array_equal(ours, ref)
        assert type(got) is type(want)
        if kind == "tree":
            assert got.keys() == want.keys() and type(got["pair"]) is list
            got = [got["sum"], got["pair"][0], got["pair"][1][0]]
            want = [want["sum"], want["pair"][0], want["pair"][1][0]]
        for g, w in zip(got if isinstance(got, (tuple, list)) else [got],
                        want if isinstance(want, (tuple, list)) else [want]):
            if w is None:
                assert g is None
            else:
                np.testing.assert_array_equal(g, w)
                assert not np.shares_memory(g, ours) and not np.shares_memory(g, y)


@native
def test_scalars_and_statics_in_cpp_match_their_own_signature():
    f = xla.jit(lambda x, s, n: x * s + n, static_argnums=(2,))
    x = np.arange(4, dtype=np.float32)
    for s, n in [(2.5, 1), (3, 1), (True, 1), (1 + 2j, 1), (2.5, 2), (2.5, 1.0), (-(2 ** 63), 1),
                 (2 ** 63 - 1, 1), (False, 1), (2.5, True)]:
        for _ in range(2):
            want = x * s + n
            got = f(x, s, n)
            assert got.dtype == want.dtype, (s, n)
            np.testing.assert_array_equal(got, want)
    # compiled per scalar type and static value; the statics 1, 1.0 and True
    # share one (equal, of equal hash: one full key), each its own plan
    assert f.cache_info().compilations == 5
    assert len(f._native) == 7
    with pytest.raises(InvalidArgumentError, match="does not fit in int64"):
        f(x, 2 ** 63, 1)
    with pytest.raises(InvalidArgumentError, match="not hashable"):
        f(x, 2.5, {1})


@native
def test_what_the_key_leaves_out_takes_the_python_path():
    f = xla.jit(add)
    x = np.arange(6, dtype=np.float64)
    f(x, x)

    class Sub(np.ndarray):
        pass

    sub = x.view(Sub)
    np.testing.assert_array_equal(f(sub, x), 2 * x)
    np.testing.assert_array_equal(f(np.float64(2.0), x), 2 + x)
    # the plan of (f8, f8) only: a subclass and a NumPy scalar have no short key
    assert len(f._native) == 1


@native
def test_an_argument_written_in_place_that_is_shared_in_cpp():
    def add_into(x, y):
        x += y

    f = xla.jit(add_into)
    f(np.zeros(64), np.ones(64))
    # the same array, equal views, disjoint views (the plan may run them),
    # views that overlap in part (NumPy reads y before writing x: copied)
    for make in [lambda a: (a, a), lambda a: (a[:64], a[:64]), lambda a: (a[64:], a[:64]),
                 lambda a: (a[:64], a[64:]), lambda a: (a[2:66], a[:64]),
                 lambda a: (a[:64], a[2:66])] * 2:
        ref = np.arange(128.0)
        ours = np.arange(128.0)
        add_into(*make(ref))
        f(*make(ours))
        np.testing.assert_array_equal(ours, ref)


@native
def test_calls_from_several_threads():
    import threading
    f = xla.jit(gemm)
    rng = np.random.default_rng(4)
    A, B = rng.random((6, 5)), rng.random((5, 7))
    f(1.0, 1.0, np.zeros((6, 7)), A, B)
    errors = []

    def work(k):
        try:
            for i in range(200):
                ours, ref = np.full((6, 7), float(k)), np.full((6, 7), float(k))
                f(1.0 + i, 0.5, ours, A, B)
                gemm(1.0 + i, 0.5, ref, A, B)
                np.testing.assert_allclose(ours, ref, rtol=1e-12)
                if i == 100 and k == 0:
                    f.clear_cache()
        except Exception as e:   # noqa: BLE001 (reported below)
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]


# ----- big-endian arguments ---------------------------------------------------------------
# NumPy computes with a big-endian array as with any other (its results are
# native); xla.jit computes on a native copy and writes an update in place
# back into the caller's array, in its own byte order.

def scale_in_place(x, y):
    x *= y
    x[1:3] = x[0] + 10.0
    return x.sum(), x * 2


@pytest.mark.parametrize("backend", ["cpu", "interpreter", "gpu_emulator"])
def test_big_endian_arguments_compute_and_are_written_back_as_numpy(backend):
    f = xla.jit(scale_in_place, backend=backend)
    y = np.array([3.0, -1.0, 0.5, 2.0], ">f8")
    # Native first (the plan for native arrays, in C++ on the CPU), then
    # big-endian ones of the same shape, each twice (a plan of their own).
    for dtype in ("<f8", ">f8", ">f8", "<f8", ">f8", ">f4", ">f4"):
        ours, ref = np.arange(1.0, 5.0).astype(dtype), np.arange(1.0, 5.0).astype(dtype)
        got, want = f(ours, y), scale_in_place(ref, y)
        assert ours.dtype == ref.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(ours, ref)
        for g, w in zip(got, want):
            g = np.asarray(g)
            assert g.dtype == w.dtype and g.dtype.isnative
            np.testing.assert_array_equal(g, w)
    assert f.cache_info().compilations == 2               # f8 and f4


@native
def test_the_cpp_plans_take_no_big_endian_array():
    f = xla.jit(add)
    x = np.arange(6.0)
    f(x, x)
    big = x.astype(">f8")
    for _ in range(3):
        np.testing.assert_array_equal(f(big, x), 2 * x)
        np.testing.assert_array_equal(f(x, big), 2 * x)
    assert len(f._native) == 1          # the native plan; big-endian ones run in Python
    assert all(plan.run is None for key, plan in f._fast.items()
               if any(not k[1].isnative for k in key))
    assert f.cache_info().compilations == 1


def test_big_endian_arguments_of_pmap_and_autojit():
    x = np.arange(8.0).reshape(1, 8).astype(">f4")
    np.testing.assert_array_equal(xla.pmap(lambda a: a * 2)(x), x * 2)
    np.testing.assert_array_equal(xla.autojit(lambda a: a * 2)(x), x * 2)
