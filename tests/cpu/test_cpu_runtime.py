"""Tests of the CPU runtime bindings: calling JIT-compiled code (cpu_execute,
ExecutableState) and the runtime's entry points, called from JIT-compiled code
the way the CPU backend's generated code calls them.

The compiled functions are small textual LLVM IR modules JIT-compiled here
with llvmlite's MCJIT, each `void f(ptr buffer_table)`.
"""
import ctypes
import threading

import llvmlite.binding as llvm
import numpy as np
import pytest

from xla import _core

EXPECTED_SYMBOLS = {
    "__xla_cpu_parallel_for",
    "__xla_cpu_matmul_f32",
    "__xla_cpu_matmul_addend_f32",
    "__xla_cpu_matmul_f64",
    "__xla_cpu_tiled_gemm_f32",
    "__xla_cpu_tiled_gemm_f64",
    "__xla_cpu_matmul_s32",
    "__xla_cpu_matmul_s8_s32",
    "__xla_cpu_matmul_bf16_f32",
    "__xla_cpu_matmul_c64",
    "__xla_cpu_matmul_c128",
    "__xla_cpu_conv2d_f32",
    "__xla_cpu_conv2d_f64",
    "__xla_cpu_conv2d_filter_f32",
    "__xla_cpu_conv2d_filter_f64",
    "__xla_cpu_conv2d_depthwise_filter_f32",
    "__xla_cpu_conv2d_depthwise_filter_f64",
    "__xla_cpu_cholesky_f32",
    "__xla_cpu_cholesky_f64",
    "__xla_cpu_trsm_f32",
    "__xla_cpu_trsm_f64",
    "__xla_cpu_syevd_f32",
    "__xla_cpu_syevd_f64",
    "__xla_cpu_gesdd_f32",
    "__xla_cpu_gesdd_f64",
    "__xla_cpu_getrf_f32",
    "__xla_cpu_getrf_f64",
    "__xla_cpu_geqrf_f32",
    "__xla_cpu_geqrf_f64",
    "__xla_cpu_orgqr_f32",
    "__xla_cpu_orgqr_f64",
    "__xla_cpu_geev_f32",
    "__xla_cpu_geev_f64",
    "__xla_cpu_geev_c64",
    "__xla_cpu_geev_c128",
    "__xla_cpu_cholesky_c64",
    "__xla_cpu_cholesky_c128",
    "__xla_cpu_trsm_c64",
    "__xla_cpu_trsm_c128",
    "__xla_cpu_fft_f32",
    "__xla_cpu_fft_f64",
    "__xla_cpu_runtime_num_threads",
}

# table = [a: f32*, b: f32*, out: f32*, n: i64*]; out[i] = a[i] + b[i].
ADD_F32_IR = r"""
define void @add_f32(ptr noalias %table) {
entry:
  %a = load ptr, ptr %table
  %pb = getelementptr ptr, ptr %table, i64 1
  %b = load ptr, ptr %pb
  %po = getelementptr ptr, ptr %table, i64 2
  %out = load ptr, ptr %po
  %pn = getelementptr ptr, ptr %table, i64 3
  %np = load ptr, ptr %pn
  %n = load i64, ptr %np
  %empty = icmp sle i64 %n, 0
  br i1 %empty, label %exit, label %loop
loop:
  %i = phi i64 [0, %entry], [%next, %loop]
  %ai = getelementptr float, ptr %a, i64 %i
  %bi = getelementptr float, ptr %b, i64 %i
  %oi = getelementptr float, ptr %out, i64 %i
  %x = load float, ptr %ai
  %y = load float, ptr %bi
  %s = fadd float %x, %y
  store float %s, ptr %oi
  %next = add i64 %i, 1
  %done = icmp eq i64 %next, %n
  br i1 %done, label %exit, label %loop
exit:
  ret void
}

; table = [lhs, rhs, out, dims: i64[4] = (batch, m, k, n)]: a batched matmul by
; the runtime.
declare void @__xla_cpu_matmul_f32(ptr, ptr, ptr, i64, i64, i64, i64, i32, i32)

define void @matmul_f32(ptr noalias %table) {
entry:
  %lhs = load ptr, ptr %table
  %p1 = getelementptr ptr, ptr %table, i64 1
  %rhs = load ptr, ptr %p1
  %p2 = getelementptr ptr, ptr %table, i64 2
  %out = load ptr, ptr %p2
  %p3 = getelementptr ptr, ptr %table, i64 3
  %dims = load ptr, ptr %p3
  %batch = load i64, ptr %dims
  %pm = getelementptr i64, ptr %dims, i64 1
  %m = load i64, ptr %pm
  %pk = getelementptr i64, ptr %dims, i64 2
  %k = load i64, ptr %pk
  %pn = getelementptr i64, ptr %dims, i64 3
  %n = load i64, ptr %pn
  call void @__xla_cpu_matmul_f32(ptr %lhs, ptr %rhs, ptr %out, i64 %batch, i64 %m, i64 %k, i64 %n, i32 0, i32 1)
  ret void
}

; table = [x: f64*, out: f64*, n: i64*]; out[i] = 2 * x[i] + 1 in a
; __xla_cpu_parallel_for over an outlined body whose context is the table.
declare void @__xla_cpu_parallel_for(ptr, ptr, i64, i64)

define internal void @scale_body(ptr %ctx, i64 %begin, i64 %end) {
entry:
  %x = load ptr, ptr %ctx
  %p1 = getelementptr ptr, ptr %ctx, i64 1
  %out = load ptr, ptr %p1
  %empty = icmp sge i64 %begin, %end
  br i1 %empty, label %exit, label %loop
loop:
  %i = phi i64 [%begin, %entry], [%next, %loop]
  %xi = getelementptr double, ptr %x, i64 %i
  %oi = getelementptr double, ptr %out, i64 %i
  %v = load double, ptr %xi
  %t = fmul double %v, 2.0
  %r = fadd double %t, 1.0
  store double %r, ptr %oi
  %next = add i64 %i, 1
  %done = icmp eq i64 %next, %end
  br i1 %done, label %exit, label %loop
exit:
  ret void
}

define void @scale_parallel(ptr noalias %table) {
entry:
  %p2 = getelementptr ptr, ptr %table, i64 2
  %np = load ptr, ptr %p2
  %n = load i64, ptr %np
  call void @__xla_cpu_parallel_for(ptr @scale_body, ptr %table, i64 %n, i64 1000)
  ret void
}

; Does nothing: for the dispatch overhead.
define void @noop(ptr %table) {
entry:
  ret void
}
"""


@pytest.fixture(scope="module")
def jit():
    """{function name: address} of ADD_F32_IR's functions, JIT-compiled."""
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    for name, address in _core.cpu_runtime_symbols().items():
        llvm.add_symbol(name, address)
    target_machine = llvm.Target.from_default_triple().create_target_machine(opt=2)
    module = llvm.parse_assembly(ADD_F32_IR)
    module.verify()
    engine = llvm.create_mcjit_compiler(module, target_machine)
    engine.finalize_object()
    addresses = {
        name: engine.get_function_address(name)
        for name in ("add_f32", "matmul_f32", "scale_parallel", "noop")
    }
    yield addresses
    del engine


def test_runtime_symbols_have_expected_names():
    symbols = _core.cpu_runtime_symbols()
    assert set(symbols) == EXPECTED_SYMBOLS
    assert all(isinstance(address, int) and address > 0 for address in symbols.values())
    assert len(set(symbols.values())) == len(symbols)


def test_num_threads_is_positive_and_settable():
    default = _core.cpu_runtime_num_threads()
    assert default >= 1
    try:
        _core.set_cpu_runtime_num_threads(3)
        assert _core.cpu_runtime_num_threads() == 3
    finally:
        _core.set_cpu_runtime_num_threads(0)
    assert _core.cpu_runtime_num_threads() == default


def test_cpu_execute_adds_arrays(jit):
    rng = np.random.default_rng(0)
    for size in (1, 7, 1000):
        a = rng.standard_normal(size).astype(np.float32)
        b = rng.standard_normal(size).astype(np.float32)
        out = np.zeros(size, np.float32)
        _core.cpu_execute(jit["add_f32"], [a, b, out, np.array([size], np.int64)])
        np.testing.assert_array_equal(out, a + b)


def test_cpu_execute_accepts_int_addresses_and_tuples(jit):
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.full((2, 3), 10, np.float32)
    out = np.zeros((2, 3), np.float32)
    n = np.array([6], np.int64)
    _core.cpu_execute(jit["add_f32"], (a, b.ctypes.data, out, n.ctypes.data))
    np.testing.assert_array_equal(out, a + b)


def test_cpu_execute_rejects_bad_buffers(jit):
    a = np.zeros((4, 4), np.float32)
    n = np.array([4], np.int64)
    with pytest.raises(ValueError, match="C-contiguous"):
        _core.cpu_execute(jit["add_f32"], [a[:, 0], a[:, 1], a[:, 2], n])
    with pytest.raises(ValueError, match="C-contiguous"):
        _core.cpu_execute(jit["add_f32"], [a.T, a, a, n])
    raw = np.zeros(4 * 4 + 1, np.uint8)
    unaligned = raw[1:].view(np.float32)
    assert not unaligned.flags.aligned
    with pytest.raises(ValueError, match="aligned"):
        _core.cpu_execute(jit["add_f32"], [unaligned, a, a, n])
    with pytest.raises(TypeError, match="NumPy array or an int"):
        _core.cpu_execute(jit["add_f32"], [[1.0], a, a, n])
    with pytest.raises(TypeError, match="list or tuple"):
        _core.cpu_execute(jit["add_f32"], a)
    with pytest.raises(ValueError, match="fn_address"):
        _core.cpu_execute(0, [a, a, a, n])


def test_jit_code_calls_runtime_matmul(jit):
    rng = np.random.default_rng(1)
    batch, m, k, n = 3, 70, 50, 90
    lhs = rng.standard_normal((batch, m, k)).astype(np.float32)
    rhs_t = rng.standard_normal((batch, n, k)).astype(np.float32)  # transpose_rhs = 1
    out = np.zeros((batch, m, n), np.float32)
    _core.cpu_execute(jit["matmul_f32"], [lhs, rhs_t, out, np.array([batch, m, k, n], np.int64)])
    np.testing.assert_allclose(out, lhs @ rhs_t.transpose(0, 2, 1), rtol=1e-4, atol=1e-4)


def test_runtime_matmul_large_uses_threads(jit):
    rng = np.random.default_rng(2)
    m = k = n = 256
    lhs = rng.standard_normal((1, m, k)).astype(np.float32)
    rhs_t = rng.standard_normal((1, n, k)).astype(np.float32)
    out = np.zeros((1, m, n), np.float32)
    _core.cpu_execute(jit["matmul_f32"], [lhs, rhs_t, out, np.array([1, m, k, n], np.int64)])
    np.testing.assert_allclose(out, lhs @ rhs_t.transpose(0, 2, 1), rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("threads", [1, 2, 4])
def test_jit_code_calls_parallel_for(jit, threads):
    try:
        _core.set_cpu_runtime_num_threads(threads)
        for size in (0, 5, 999, 1000, 1001, 100_003):
            x = np.linspace(-3, 3, size)
            out = np.full(size, np.nan)
            _core.cpu_execute(jit["scale_parallel"], [x, out, np.array([size], np.int64)])
            np.testing.assert_array_equal(out, 2 * x + 1)
    finally:
        _core.set_cpu_runtime_num_threads(0)


def test_executable_state_runs_with_arena_and_constants(jit):
    # Slots: 0 = a (arg), 1 = b (constant), 2 = out (output), 3 = n (in the arena).
    state = _core.ExecutableState(
        jit["add_f32"], num_slots=4, arg_slots=[0], output_slots=[2],
        arena_size=8, arena_slots=[(3, 0)], arg_nbytes=[16], output_nbytes=[16], alignment=4)
    assert state.num_slots == 4 and state.arena_size == 8
    assert state.arena_address % 64 == 0
    ctypes.c_int64.from_address(state.arena_address).value = 4  # n, in the arena
    b = np.array([10, 20, 30, 40], np.float32)
    state.set_slot(1, b)
    del b  # kept alive by the state
    for trial in range(3):
        a = np.arange(4, dtype=np.float32) * trial
        out = np.zeros(4, np.float32)
        state.run([a], [out])
        np.testing.assert_array_equal(out, a + np.array([10, 20, 30, 40], np.float32))


def test_executable_state_errors(jit):
    with pytest.raises(ValueError, match="more than once"):
        _core.ExecutableState(jit["add_f32"], 4, [0, 1], [1])
    with pytest.raises(ValueError, match="outside the table"):
        _core.ExecutableState(jit["add_f32"], 4, [0, 1], [4])
    with pytest.raises(ValueError, match="outside the arena"):
        _core.ExecutableState(jit["add_f32"], 4, [0], [2], arena_size=8, arena_slots=[(3, 9)])
    state = _core.ExecutableState(jit["add_f32"], 4, [0, 1], [2], arena_size=8,
                                  arena_slots=[(3, 0)], output_nbytes=[16], alignment=16)
    a = np.zeros(4, np.float32)
    with pytest.raises(ValueError, match="expected 2 args"):
        state.run([a], [a.copy()])
    with pytest.raises(ValueError, match="expected 1 outputs"):
        state.run([a, a], [])
    with pytest.raises(ValueError, match="has 32 bytes; expected 16"):
        state.run([a, a], [np.zeros(8, np.float32)])
    readonly = np.zeros(4, np.float32)
    readonly.flags.writeable = False
    with pytest.raises(ValueError, match="writable"):
        state.run([a, a], [readonly])
    with pytest.raises(ValueError, match="C-contiguous"):
        state.run([np.zeros(8, np.float32)[::2], a], [a.copy()])
    with pytest.raises(ValueError, match="not aligned to 16"):
        state.run([np.zeros(5, np.float32)[1:], a], [a.copy()])
    with pytest.raises(ValueError, match="argument, output or arena"):
        state.set_slot(3, a)


def test_executable_state_try_run_declines_instead_of_raising(jit):
    # run's checks, answered: False and nothing run where run would raise.
    state = _core.ExecutableState(jit["add_f32"], 4, [0, 1], [2], arena_size=8,
                                  arena_slots=[(3, 0)], output_nbytes=[16], alignment=16)
    ctypes.c_int64.from_address(state.arena_address).value = 4  # n, in the arena
    a, b = np.arange(4, dtype=np.float32), np.full(4, 10, np.float32)
    out = np.full(4, np.nan, np.float32)
    assert state.try_run([a, b], (out,)) is True
    np.testing.assert_array_equal(out, a + b)
    readonly = np.full(4, np.nan, np.float32)
    readonly.flags.writeable = False
    declined = {
        "strided": ([np.zeros(8, np.float32)[::2], b], None),
        "not aligned to 16": ([np.zeros(5, np.float32)[1:], b], None),
        "not an array": ([[0.0] * 4, b], None),
        "read-only output": ([a, b], readonly),
        "output of 32 bytes": ([a, b], np.full(8, np.nan, np.float32)),
    }
    for what, (args, output) in declined.items():
        output = np.full(4, np.nan, np.float32) if output is None else output
        assert state.try_run(args, [output]) is False, what
        assert np.isnan(output).all(), what    # nothing ran
    with pytest.raises(ValueError, match="expected 2 args and 1 outputs; got 1 and 1"):
        state.try_run([a], [out])


def test_executable_state_concurrent_runs(jit):
    # n lives in the arena; concurrent runs that find the state busy use a
    # private table and arena, so every result must be right.
    size = 200_000
    n_holder = np.array([size], np.int64)
    state = _core.ExecutableState(jit["add_f32"], 4, [0, 1], [2])
    state.set_slot(3, n_holder)
    errors = []

    def worker(seed):
        rng = np.random.default_rng(seed)
        for _ in range(20):
            a = rng.standard_normal(size).astype(np.float32)
            b = rng.standard_normal(size).astype(np.float32)
            out = np.empty(size, np.float32)
            state.run((a, b), (out,))
            if not np.array_equal(out, a + b):
                errors.append(seed)

    threads = [threading.Thread(target=worker, args=(seed,)) for seed in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


_THIN_PRODUCT_FAULTS = """
import resource, numpy as np, xla
m, k, n = 256, 1024, 2048
text = (f"HloModule thin\\nENTRY e {{\\n  a = f32[{m},{k}] parameter(0)\\n"
        f"  b = f32[{k},{n}] parameter(1)\\n  ROOT d = f32[{m},{n}] dot(a, b), "
        "lhs_contracting_dims={1}, rhs_contracting_dims={0}\\n}")
rng = np.random.default_rng(5)
# Made as float32 directly: freeing a large float64 temporary would raise
# glibc's dynamic trim threshold, after which no arena trims (nor faults).
a = rng.standard_normal((m, k), np.float32)
b = rng.standard_normal((k, n), np.float32)
exe = xla.compile(xla.parse_hlo_module(text), "cpu")
for _ in range(3):
    out = exe.execute(a, b)
calls = 10
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(calls):
    out = exe.execute(a, b)
faults = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / calls
np.testing.assert_allclose(out, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-3)
print(faults)
"""


def test_repeated_thin_products_fault_in_no_new_pages():
    # A wide, thin product runs as one serial GEMM per thread on a slab; its
    # packing buffers are kept per thread between calls. With Eigen's own
    # product, which allocates and frees them at every call, a pool
    # worker's malloc arena gave the pages back and faulted them in again:
    # about 800 minor faults per call of this shape on two threads in a
    # fresh process (one that has freed a large block has raised glibc's
    # trim threshold and stopped trimming, hence a process of its own),
    # where now there are none.
    import os
    import pathlib
    import subprocess
    import sys
    root = pathlib.Path(_core.__file__).resolve().parents[1]   # the one this test imports
    env = dict(os.environ, XLA_CPU_NUM_THREADS="2",
               PYTHONPATH=os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]))
    run = subprocess.run([sys.executable, "-c", _THIN_PRODUCT_FAULTS], env=env,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    faults = float(run.stdout.split()[-1])
    assert faults < 200, faults


# f32 products the packed GEMM computes (2^23 multiply-adds or more), row-
# or column-major B: split over any number of threads, each slab takes the
# whole product's path, so every element has the bits one thread computes.
# (Slabs below the threshold used to run Eigen's GEMM, and products of
# 2^23-2^24 multiply-adds Eigen's tensor contraction: 64x256x512 differed in
# 1,876 elements between one and two threads.)
@pytest.mark.skipif(not _core.cpu_runtime_isa().startswith("avx512"),
                    reason="the packed f32 GEMM is the AVX-512 variants' (this CPU runs "
                           "another): other variants' products may depend on the thread count")
@pytest.mark.parametrize("m,k,n,transposed_b", [
    (64, 256, 512, False), (64, 256, 512, True), (200, 200, 210, True), (100, 1000, 100, False),
    (96, 1024, 96, True), (300, 300, 100, True), (64, 4096, 64, False)])
def test_f32_matmul_bits_do_not_depend_on_the_thread_count(m, k, n, transposed_b):
    import xla
    b_dims = f"{n},{k}" if transposed_b else f"{k},{n}"
    exe = xla.compile(f"""HloModule m
ENTRY e {{
  a = f32[{m},{k}] parameter(0)
  b = f32[{b_dims}] parameter(1)
  ROOT d = f32[{m},{n}] dot(a, b), lhs_contracting_dims={{1}}, rhs_contracting_dims={{{int(transposed_b)}}}
}}""", "cpu")
    rng = np.random.default_rng(m + n)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((n, k) if transposed_b else (k, n)).astype(np.float32)
    outs = []
    try:
        for threads in (1, 2, 3, 4):
            _core.set_cpu_runtime_num_threads(threads)
            outs.append(np.asarray(exe.execute(a, b)))
    finally:
        _core.set_cpu_runtime_num_threads(0)
    for threads, out in zip((2, 3, 4), outs[1:]):
        assert np.array_equal(out.view(np.uint32), outs[0].view(np.uint32)), threads
    want = a.astype(np.float64) @ (b.T if transposed_b else b).astype(np.float64)
    np.testing.assert_allclose(outs[0], want, rtol=1e-4, atol=1e-3)
