"""Kernels compiled separately: deduplicated by fingerprint, cached in
memory and on disk per kernel, compiled by worker processes, linked under a
driver; progress on stderr; deep graphs. Results are checked against the
interpreter (the reference semantics)."""
import re

import numpy as np
import pytest

import xla
from xla import debug_options as d
from xla.backends.cpu import kernel_compiler
from xla.frontend.disk_cache import PersistentCache


def _layers(n, width=32, changed=None, distinct_ops=False):
    """An unrolled network: n layers of x = tanh(x . w_i + b_i) (or, with
    ``changed=k``, layer k uses exp instead; with ``distinct_ops``, each
    layer applies a different unary op, n <= 14, so no two kernels are
    alike)."""
    ops = ["tanh", "exponential", "sine", "cosine", "logistic", "negate", "abs", "sqrt",
           "cbrt", "floor", "ceil", "sign", "log-plus-one", "exponential-minus-one"]
    lines = ["HloModule layers", "", "ENTRY main {", f"  x0 = f32[{width},{width}] parameter(0)"]
    for i in range(n):
        lines.append(f"  w{i} = f32[{width},{width}] parameter({2 * i + 1})")
        lines.append(f"  b{i} = f32[{width},{width}] parameter({2 * i + 2})")
        lines.append(f"  m{i} = f32[{width},{width}] dot(x{i}, w{i}), lhs_contracting_dims={{1}}, "
                     "rhs_contracting_dims={0}")
        lines.append(f"  a{i} = f32[{width},{width}] add(m{i}, b{i})")
        op = ops[i % len(ops)] if distinct_ops else ("exponential" if i == changed else "tanh")
        lines.append(f"  x{i + 1} = f32[{width},{width}] {op}(a{i})")
    lines[-1] = "  ROOT" + lines[-1][1:]
    lines.append("}")
    return "\n".join(lines)


def _layers_then(n, more):
    """The ENTRY computation of ``_layers(n)`` with the lines ``more(last)``
    after the last layer (``last``: the name of its result, no longer the
    root); they end with the new ROOT."""
    text = _layers(n)
    lines = text[text.index("ENTRY main {"):].splitlines()
    root = next(i for i, line in enumerate(lines) if line.startswith("  ROOT"))
    last = lines[root].split("=")[0].replace("ROOT", "").strip()
    lines[root] = lines[root].replace("  ROOT ", "  ")
    lines[root + 1:root + 1] = more(last)
    return "\n".join(lines)


def _args(n, width=32, seed=0):
    rng = np.random.default_rng(seed)
    return [(rng.uniform(0.1, 0.9, (width, width)) / (width if k % 2 else 1)).astype(np.float32)
            for k in range(2 * n + 1)]


def _check(text, args, **compile_kwargs):
    exe = xla.compile(xla.parse_hlo_module(text), "cpu", **compile_kwargs)
    want = xla.compile(xla.parse_hlo_module(text), "interpreter").execute(*args)
    got = exe.execute(*args)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    return exe


def test_identical_layers_compile_one_kernel():
    kernel_compiler.memory_cache.clear()
    n = 12
    exe = _check(_layers(n), _args(n))
    t = exe.compile_timings
    # The 32x32 dots are calls to the runtime's tiled GEMM (no kernel);
    # each layer's add and tanh fuse into one kernel, which updates the
    # dot's result in place, except the last layer's, which writes the
    # module's result: 12 kernels run, 2 distinct ones are compiled.
    assert t["kernels"] == n, t
    assert t["kernels_distinct"] == 2, t
    assert t["kernels_compiled"] == 2, t
    assert len(exe.kernel_objects) == 2


def test_kernels_compiled_once_per_process():
    n = 8
    text = _layers(n)
    kernel_compiler.memory_cache.clear()
    first = _check(text, _args(n)).compile_timings
    second = _check(text, _args(n, seed=1)).compile_timings
    assert first["kernels_compiled"] == first["kernels_distinct"]
    assert second.get("kernels_compiled", 0) == 0, second
    assert second["kernels_memory_hits"] == second["kernels_distinct"], second


def test_workers_compile_distinct_kernels_in_parallel():
    n = 14
    text = _layers(n, distinct_ops=True)
    args = _args(n)
    kernel_compiler.memory_cache.clear()
    kernel_compiler.prestart(2)   # a running pool takes 4 kernels or more
    with d.override(xla_cpu_compile_workers=2):
        exe = _check(text, args)
    t = exe.compile_timings
    assert t["kernels_distinct"] >= kernel_compiler.PARALLEL_MIN_KERNELS
    assert t["kernels_compiled_in_workers"] == t["kernels_compiled"] == t["kernels_distinct"], t
    # Compiled in batches: kernels share objects, fewer than one each.
    objects = {id(o) for o in exe.kernel_objects.values()}
    assert 2 <= len(objects) < t["kernels_distinct"], (len(objects), t)


def test_in_process_compilation_when_workers_are_off():
    n = 14
    text = _layers(n, distinct_ops=True)
    kernel_compiler.memory_cache.clear()
    with d.override(xla_cpu_compile_workers=0):
        exe = _check(text, _args(n))
    t = exe.compile_timings
    assert t["kernels_compiled"] == t["kernels_distinct"] and "kernels_compiled_in_workers" not in t


@pytest.mark.parametrize("idle, workers, objects", [(4, 2, 2), (4, -1, 4), (1, -1, 1), (4, 0, 1)])
def test_in_process_kernels_compile_on_threads(monkeypatch, idle, workers, objects):
    # No pool runs and too few kernels to start one: they compile in this
    # process, one batch (one object) per thread, as many threads as idle
    # CPUs up to --xla_cpu_compile_workers (jit.compile_objects).
    kernel_compiler._shutdown()   # noqa: SLF001 - no running pool
    monkeypatch.setattr(kernel_compiler, "_idle_cpus", lambda: idle)
    n = 5
    text = _layers(n, distinct_ops=True)
    kernel_compiler.memory_cache.clear()
    with d.override(xla_cpu_compile_workers=workers):
        exe = _check(text, _args(n))
    t = exe.compile_timings
    assert t["kernels_compiled"] == t["kernels_distinct"] >= 4, t
    assert "kernels_compiled_in_workers" not in t and kernel_compiler._pool is None   # noqa: SLF001
    assert len({id(o) for o in exe.kernel_objects.values()}) == objects, t


@pytest.mark.parametrize("cpus, load, idle", [(2, 0.3, 2), (2, 0.6, 1), (2, 1.7, 1), (2, 4.5, 1),
                                              (16, 0.0, 16), (16, 6.0, 10)])
def test_idle_cpus_leave_out_what_the_load_keeps_busy(monkeypatch, cpus, load, idle):
    monkeypatch.setattr(kernel_compiler.os, "sched_getaffinity", lambda pid: set(range(cpus)))
    monkeypatch.setattr(kernel_compiler.os, "getloadavg", lambda: (load, load, load))
    monkeypatch.setattr(kernel_compiler, "_other_runnable", lambda: None)
    assert kernel_compiler._idle_cpus() == idle   # noqa: SLF001


@pytest.mark.parametrize("load, others, idle", [(1.0, 0, 2), (1.4, 0, 2), (1.0, 1, 1),
                                                (4.0, 3, 1), (0.2, 1, 2), (3.0, 0, 1)])
def test_idle_cpus_discount_this_process_from_the_load_average(monkeypatch, load, others, idle):
    # The load average also counts this process's own compiles of the last
    # minute: one CPU of it is discounted where nothing else runs now.
    monkeypatch.setattr(kernel_compiler.os, "sched_getaffinity", lambda pid: {0, 1})
    monkeypatch.setattr(kernel_compiler.os, "getloadavg", lambda: (load, load, load))
    monkeypatch.setattr(kernel_compiler, "_other_runnable", lambda: others)
    assert kernel_compiler._idle_cpus() == idle   # noqa: SLF001


def test_other_runnable_reads_this_machine():
    others = kernel_compiler._other_runnable()   # noqa: SLF001
    assert others is None or others >= 0


def test_dead_workers_are_replaced():
    n = 14
    text = _layers(n, distinct_ops=True)
    with d.override(xla_cpu_compile_workers=2):
        kernel_compiler.memory_cache.clear()
        kernel_compiler.prestart(2)
        _check(text, _args(n))
        pool = kernel_compiler._pool   # noqa: SLF001 - the process's worker pool
        for w in pool.workers:
            w.process.kill()
            w.process.wait()
        kernel_compiler.memory_cache.clear()
        exe = _check(text, _args(n))
    assert exe.compile_timings["kernels_compiled_in_workers"] == exe.compile_timings["kernels_distinct"]
    assert kernel_compiler._pool is not pool   # noqa: SLF001


def test_workers_that_cannot_start_mean_compiling_in_process(monkeypatch):
    n = 14
    kernel_compiler._shutdown()   # noqa: SLF001 - no running pool
    monkeypatch.setattr(kernel_compiler.sys, "executable", "/nonexistent/python")
    monkeypatch.setattr(kernel_compiler, "_pool_unavailable", False)
    kernel_compiler.memory_cache.clear()
    with d.override(xla_cpu_compile_workers=2), \
            pytest.warns(RuntimeWarning, match="workers cannot start"):
        kernel_compiler.prestart(2)
        exe = _check(_layers(n, distinct_ops=True), _args(n))
    t = exe.compile_timings
    assert t["kernels_compiled"] == t["kernels_distinct"] and "kernels_compiled_in_workers" not in t
    assert kernel_compiler._pool is None   # noqa: SLF001


def test_persistent_cache_recompiles_only_the_changed_layer(tmp_path):
    n = 10
    cache = PersistentCache(str(tmp_path))
    kernel_compiler.memory_cache.clear()
    first = _check(_layers(n), _args(n), cache=cache).compile_timings
    assert first["kernels_compiled"] == 2     # two fusions (the dots: runtime calls)
    kernel_compiler.memory_cache.clear()
    # Layer 3 changed: its kernel is new, the others come from the disk.
    second = _check(_layers(n, changed=3), _args(n), cache=cache).compile_timings
    assert second["kernels_distinct"] == 3, second
    assert second["kernels_compiled"] == 1, second
    assert second["kernels_disk_hits"] == 2, second
    # The same module again in a "new process" (memory cache empty): the
    # driver and every kernel load from disk, nothing is compiled.
    kernel_compiler.memory_cache.clear()
    exe = _check(_layers(n, changed=3), _args(n, seed=3), cache=cache)
    assert exe.from_disk_cache
    assert not exe.compile_timings.get("kernels_compiled")


def test_corrupt_kernel_entry_is_recompiled(tmp_path):
    n = 10
    cache = PersistentCache(str(tmp_path))
    kernel_compiler.memory_cache.clear()
    _check(_layers(n), _args(n), cache=cache)
    assert list(tmp_path.glob("kernel-*")) and list(tmp_path.glob("batch-*"))
    for path in list(tmp_path.glob("kernel-*")) + list(tmp_path.glob("batch-*")):
        path.write_bytes(path.read_bytes()[:40])
    for path in tmp_path.iterdir():
        if not path.name.startswith(("kernel-", "batch-")):
            path.unlink()   # the driver entry too, so the kernels are looked up
    kernel_compiler.memory_cache.clear()
    with pytest.warns(RuntimeWarning, match="truncated, corrupt"):
        t = _check(_layers(n), _args(n), cache=cache).compile_timings
    assert t["kernels_compiled"] == 2, t


def test_progress_on_stderr(capfd):
    n = 14
    kernel_compiler.memory_cache.clear()
    with d.override(xla_log_compile_progress=True):
        _check(_layers(n, distinct_ops=True), _args(n))
    err = capfd.readouterr().err
    for stage in ("stage passes", "stage codegen", "stage llvm"):
        assert stage in err, err
    assert "kernels compiled 14/14" in err, err     # 14 fusions (the dots: runtime calls)
    assert "done: passes" in err, err


def test_progress_after_each_batch_compiled_in_process(capfd, monkeypatch):
    # In this process, kernels compile a batch per thread at a time, and
    # the progress is reported after each: 14 distinct kernels on one
    # thread are two batches, each compiled, then counted.
    from xla.backends.cpu import compile_progress, jit
    monkeypatch.setattr(compile_progress, "REPORT_INTERVAL_S", 0.0)
    events = []
    compile_objects = jit.compile_objects

    def logged(texts, *args):
        events.append(("compile", len(texts)))
        return compile_objects(texts, *args)
    monkeypatch.setattr(jit, "compile_objects", logged)
    print_line = compile_progress.CompileProgress._print
    monkeypatch.setattr(compile_progress.CompileProgress, "_print",
                        lambda self, line: (events.append(("print", line)), print_line(self, line)))
    n = 14
    kernel_compiler.memory_cache.clear()
    with d.override(xla_log_compile_progress=True, xla_cpu_compile_workers=0):
        t = _check(_layers(n, distinct_ops=True), _args(n)).compile_timings
    total = t["kernels_compiled"]
    steps = [e if e[0] == "compile" else ("print", e[1].split()[-1]) for e in events
             if e[0] == "compile" or "kernels compiled" in e[1]]
    assert [kind for kind, _ in steps] == ["compile", "print", "compile", "print"], events
    assert steps[3][1] == f"{total}/{total}" and steps[1][1] != steps[3][1], steps


def test_small_module_is_one_function():
    text = """HloModule seed

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT sum = f32[] add(a, b)
}

ENTRY e {
  x = f32[64] parameter(0)
  y = f32[64] parameter(1)
  z = f32[64] parameter(2)
  m = f32[64] multiply(y, z)
  s = f32[64] add(x, m)
  c = f32[] constant(0)
  ROOT r = f32[] reduce(s, c), dimensions={0}, to_apply=add
}
"""
    args = [np.full(64, v, np.float32) for v in (1, 2, 3)]
    exe = _check(text, args)
    assert exe.kernel_objects == {}
    # The kernel was inlined into the driver: no call to it is left.
    assert 'call void @"xla_k_' in exe.ir_text
    assert 'call void @"xla_k_' not in exe.optimized_ir_text


@pytest.mark.parametrize("n", [245, 1000])
def test_deep_elementwise_chain(n):
    lines = ["HloModule chain", "", "ENTRY e {", "  v0 = f32[16] parameter(0)"]
    for i in range(n):
        lines.append(f"  v{i + 1} = f32[16] {'sine' if i % 2 else 'cosine'}(v{i})")
    lines[-1] = lines[-1].replace(f"  v{n} =", f"  ROOT v{n} =")
    lines.append("}")
    x = np.linspace(-1, 1, 16).astype(np.float32)
    want = x.astype(np.float64)
    for i in range(n):
        want = np.sin(want) if i % 2 else np.cos(want)
    exe = xla.compile(xla.parse_hlo_module("\n".join(lines)), "cpu")
    np.testing.assert_allclose(exe.execute(x), want, rtol=1e-4, atol=1e-5)


def test_long_driver_is_split_into_segments():
    """More than SEGMENT_INSTRUCTIONS top-level instructions: the driver
    calls segment functions in order; a chunked reduction (stack scratch in
    its segment) and a while loop run in later segments."""
    n = 40
    entry = _layers_then(n, lambda last: [
        f"  big = f32[512,256] parameter({2 * n + 1})",
        "  zero = f32[] constant(0)",
        "  total = f32[] reduce(big, zero), dimensions={0,1}, to_apply=add",
        "  start = s32[] constant(0)",
        "  init = (s32[], f32[]) tuple(start, total)",
        "  loop = (s32[], f32[]) while(init), condition=cond, body=step",
        "  halved = f32[] get-tuple-element(loop), index=1",
        f"  ROOT out = (f32[32,32], f32[], f32[]) tuple({last}, total, halved)",
    ])
    computations = """HloModule segments

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

cond {
  c = (s32[], f32[]) parameter(0)
  ci = s32[] get-tuple-element(c), index=0
  three = s32[] constant(3)
  ROOT lt = pred[] compare(ci, three), direction=LT
}

step {
  t = (s32[], f32[]) parameter(0)
  i = s32[] get-tuple-element(t), index=0
  v = f32[] get-tuple-element(t), index=1
  one = s32[] constant(1)
  half = f32[] constant(0.5)
  i1 = s32[] add(i, one)
  v1 = f32[] multiply(v, half)
  ROOT r = (s32[], f32[]) tuple(i1, v1)
}

"""
    text = computations + entry
    args = _args(n) + [np.random.default_rng(5).uniform(0, 1, (512, 256)).astype(np.float32)]
    exe = xla.compile(xla.parse_hlo_module(text), "cpu")
    want = xla.compile(xla.parse_hlo_module(text), "interpreter").execute(*args)
    got = exe.execute(*args)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
    assert 'define internal void @"entry.seg2"' in exe.ir_text
    assert float(got[2]) == float(got[1]) / 8


def test_jit_of_a_deep_python_loop():
    """`for _ in range(300): x = np.sin(x)` under xla.jit on the CPU (it
    raised RecursionError once 245 ops were fused into one kernel)."""
    def f(x):
        for _ in range(300):
            x = np.sin(x)
        return x

    x = np.linspace(-2, 2, 64).astype(np.float32)
    want = x.astype(np.float64)
    for _ in range(300):
        want = np.sin(want)
    np.testing.assert_allclose(xla.jit(f, backend="cpu")(x), want, rtol=1e-4, atol=1e-5)


def test_sort_and_cholesky_in_a_module_of_separate_kernels():
    """Sort and Cholesky read the buffer table themselves: they are compiled
    in the library module at the kernels' opt level, the driver at O0."""
    n = 8
    entry = _layers_then(n, lambda last: [
        f"  v = f32[64] parameter({2 * n + 1})",
        "  sorted = f32[64] sort(v), dimensions={0}, to_apply=less",
        f"  spd = f32[4,4] parameter({2 * n + 2})",
        "  chol = f32[4,4] cholesky(spd), lower=true",
        f"  ROOT out = (f32[32,32], f32[64], f32[4,4]) tuple({last}, sorted, chol)",
    ])
    text = ("HloModule with_library\n\nless {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
            "  ROOT lt = pred[] compare(a, b), direction=LT\n}\n\n" + entry)
    rng = np.random.default_rng(7)
    m = rng.uniform(0, 1, (4, 4)).astype(np.float32)
    args = _args(n) + [rng.uniform(-1, 1, 64).astype(np.float32), m @ m.T + 4 * np.eye(4, dtype=np.float32)]
    exe = xla.compile(xla.parse_hlo_module(text), "cpu")
    got = exe.execute(*args)
    want = xla.compile(xla.parse_hlo_module(text), "interpreter").execute(*args)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(got[1], np.sort(args[-2]))
    np.testing.assert_allclose(np.tril(got[2]), np.linalg.cholesky(args[-1]), rtol=1e-5, atol=1e-6)
    assert exe.kernel_objects and exe.jit_module.opt_level == 0
    assert "; ----- library" in exe.ir_text


def _softmax_rows(v, p):
    return f"""  m{p} = f32[512] reduce({v}, ninf), dimensions={{1}}, to_apply=max
  b{p} = f32[512,256] broadcast(m{p}), dimensions={{0}}
  s{p} = f32[512,256] subtract({v}, b{p})
  e{p} = f32[512,256] exponential(s{p})
  t{p} = f32[512] reduce(e{p}, zero), dimensions={{1}}, to_apply=add
  bt{p} = f32[512,256] broadcast(t{p}), dimensions={{0}}
  r{p} = f32[512,256] divide(e{p}, bt{p})
"""


def test_reused_kernels_join_row_groups():
    """Two identical softmaxes: the second reuses the first one's kernels
    (structural fingerprint) and its kernels still form a row group."""
    text = ("HloModule two_softmaxes\n\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
            "  ROOT s = f32[] add(a, b)\n}\n\nmax {\n  c = f32[] parameter(0)\n"
            "  d = f32[] parameter(1)\n  ROOT m = f32[] maximum(c, d)\n}\n\nENTRY e {\n"
            "  x = f32[512,256] parameter(0)\n  y = f32[512,256] parameter(1)\n"
            "  ninf = f32[] constant(-inf)\n  zero = f32[] constant(0)\n"
            + _softmax_rows("x", "x") + _softmax_rows("y", "y")
            + "  ROOT out = (f32[512,256], f32[512,256]) tuple(rx, ry)\n}\n")
    rng = np.random.default_rng(11)
    x, y = (rng.uniform(-3, 3, (512, 256)).astype(np.float32) for _ in range(2))
    exe = xla.compile(xla.parse_hlo_module(text), "cpu")
    got = exe.execute(x, y)
    for g, v in zip(got, (x, y)):
        e = np.exp(v.astype(np.float64) - v.max(axis=1, keepdims=True))
        np.testing.assert_allclose(g, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)
    t = exe.compile_timings
    assert t["kernels"] == 2 * t["kernels_distinct"], t
    # The six kernels (three of them reused) run as one row group: a single
    # parallel call, of a group function.
    calls = re.findall(r'call void @"__xla_cpu_parallel_for"\([^@]*@"([^"]+)"', exe.ir_text)
    assert len(calls) == 1 and calls[0].startswith("row_group"), calls


def test_sha256_hex_is_sha256_on_both_sides_of_the_hashlib_threshold():
    import hashlib
    from xla.backends.cpu import kernels
    for n in (0, 3, kernels._HASHLIB_MIN_BYTES - 1, kernels._HASHLIB_MIN_BYTES, 1 << 20):
        data = bytes(range(256)) * (n // 256) + bytes(n % 256)
        assert kernels.sha256_hex(data) == hashlib.sha256(data).hexdigest(), n
    # A known digest (FIPS 180-2's "abc" example).
    assert kernels.sha256_hex(b"abc") == \
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
