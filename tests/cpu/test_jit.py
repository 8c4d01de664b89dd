"""jit.py: host compilation, symbol resolution, runtime symbols, threads."""
import ctypes
import math
import os
import threading

import numpy as np
import pytest

from xla.backends.cpu import jit


def test_compiles_and_calls_libm():
    text = r"""
declare float @tanhf(float)
declare double @llvm.exp.f64(double)
declare double @atan2(double, double)
define float @f(float %x) {
  %r = call float @tanhf(float %x)
  ret float %r
}
define double @g(double %x, double %y) {
  %e = call double @llvm.exp.f64(double %x)
  %r = call double @atan2(double %e, double %y)
  ret double %r
}
"""
    module = jit.JitModule(text)
    f = module.function("f", ctypes.c_float, ctypes.c_float)
    g = module.function("g", ctypes.c_double, ctypes.c_double, ctypes.c_double)
    assert f(0.5) == pytest.approx(math.tanh(0.5), rel=1e-6)
    assert g(1.0, 2.0) == pytest.approx(math.atan2(math.e, 2.0), rel=1e-15)


def test_add_symbol_resolves_runtime_function():
    callback_type = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64)
    callback = callback_type(lambda x: 3 * x + 1)
    jit.add_symbol("xla_test_runtime_fn", callback)
    text = r"""
declare i64 @xla_test_runtime_fn(i64)
define i64 @f(i64 %x) {
  %r = call i64 @xla_test_runtime_fn(i64 %x)
  ret i64 %r
}
"""
    module = jit.JitModule(text)
    assert module.function("f", ctypes.c_int64, ctypes.c_int64)(5) == 16


def test_unresolved_symbol_is_an_error():
    text = r"""
declare i64 @xla_no_such_symbol_anywhere(i64)
define i64 @f(i64 %x) {
  %r = call i64 @xla_no_such_symbol_anywhere(i64 %x)
  ret i64 %r
}
"""
    with pytest.raises(RuntimeError, match="xla_no_such_symbol_anywhere"):
        jit.JitModule(text)


def test_missing_function_name():
    module = jit.JitModule("define void @f() {\n  ret void\n}\n")
    with pytest.raises(KeyError):
        module.address("g")


def test_half_and_bfloat_truncations_resolve():
    """fptrunc double -> half/bfloat may become compiler-runtime calls."""
    text = r"""
define i16 @h(double %x) {
  %t = fptrunc double %x to half
  %b = bitcast half %t to i16
  ret i16 %b
}
define i16 @bf(double %x) {
  %t = fptrunc double %x to bfloat
  %b = bitcast bfloat %t to i16
  ret i16 %b
}
define i16 @bf32(float %x) {
  %t = fptrunc float %x to bfloat
  %b = bitcast bfloat %t to i16
  ret i16 %b
}
"""
    import ml_dtypes
    module = jit.JitModule(text, opt_level=0)
    h = module.function("h", ctypes.c_uint16, ctypes.c_double)
    bf = module.function("bf", ctypes.c_uint16, ctypes.c_double)
    bf32 = module.function("bf32", ctypes.c_uint16, ctypes.c_float)
    for x in [1.0, 1 + 2.0 ** -11 + 2.0 ** -40, 65519.0, 1e-8, -3.75, 1 + 2.0 ** -8 + 2.0 ** -40]:
        assert h(x) == int(np.array(x).astype(np.float16).view(np.uint16))
        correct = np.array(x, np.float64)
        # correctly rounded: the nearer of the two bf16 neighbours
        got = np.array(bf(x), np.uint16).view(ml_dtypes.bfloat16).astype(np.float64)
        assert abs(got - correct) <= abs(
            np.array(x).astype(np.float32).astype(ml_dtypes.bfloat16).astype(np.float64) - correct)
        assert bf32(np.float32(x)) == int(
            np.array(np.float32(x)).astype(ml_dtypes.bfloat16).view(np.uint16))


def test_vectorizes_a_simple_loop():
    text = r"""
define void @axpy(ptr noalias %x, ptr noalias %y, i64 %n) {
entry:
  %c = icmp sgt i64 %n, 0
  br i1 %c, label %loop, label %done
loop:
  %i = phi i64 [0, %entry], [%next, %loop]
  %px = getelementptr float, ptr %x, i64 %i
  %py = getelementptr float, ptr %y, i64 %i
  %a = load float, ptr %px
  %b = load float, ptr %py
  %m = fmul float %a, 2.0
  %s = fadd float %m, %b
  store float %s, ptr %py
  %next = add i64 %i, 1
  %more = icmp slt i64 %next, %n
  br i1 %more, label %loop, label %done
done:
  ret void
}
"""
    module = jit.JitModule(text)
    assert "<4 x float>" in module.optimized_ir or "<8 x float>" in module.optimized_ir
    x = np.arange(100, dtype=np.float32)
    y = np.ones(100, np.float32)
    fn = module.function("axpy", None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)
    fn(x.ctypes.data, y.ctypes.data, 100)
    assert np.array_equal(y, 2 * np.arange(100, dtype=np.float32) + 1)


def test_concurrent_compiles():
    errors = []
    results = {}

    def work(k):
        try:
            text = f"define i64 @f(i64 %x) {{\n  %r = mul i64 %x, {k}\n  ret i64 %r\n}}\n"
            module = jit.JitModule(text)
            results[k] = module.function("f", ctypes.c_int64, ctypes.c_int64)(7)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert results == {k: 7 * k for k in range(8)}


def _resident_mib():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs Linux /proc to read memory use")
def test_compiling_many_modules_does_not_grow_memory():
    # Each optimization built a pass manager llvmlite never freed (~30 KB):
    # the 1-hour fuzz run grew past 3 GB. 300 modules now stay within a few MB.
    def compile_one(i):
        jit.compile_to_object(f"define void @f{i}(float* %p) {{ store float {i}.0, float* %p ret void }}")
    for i in range(50):
        compile_one(i)
    before = _resident_mib()
    for i in range(300):
        compile_one(i)
    assert _resident_mib() - before < 4


# compile_objects: kernels compiled on threads, LLVM's long steps outside
# llvmlite's lock.

def _kernel_text(i):
    # A loop LLVM vectorizes, so the optimization pipeline and code
    # generation both have work to do.
    return f"""
define void @k{i}(ptr noalias %out, ptr noalias %in) {{
entry:
  br label %loop
loop:
  %j = phi i64 [0, %entry], [%next, %loop]
  %p = getelementptr float, ptr %in, i64 %j
  %x = load float, ptr %p
  %y = fmul float %x, {i + 1}.0
  %q = getelementptr float, ptr %out, i64 %j
  store float %y, ptr %q
  %next = add i64 %j, 1
  %done = icmp eq i64 %next, 1024
  br i1 %done, label %exit, label %loop
exit:
  ret void
}}
"""


def test_the_installed_llvmlite_has_the_unlocked_entry_points():
    # Without them compile_objects compiles serially: correct, but the
    # threads would not be used; this llvmlite must keep them.
    assert jit._unlocked_entry_points() is not None   # noqa: SLF001


def test_compile_objects_on_threads_gives_the_objects_compiled_one_by_one():
    texts = [_kernel_text(i) for i in range(6)] + [[_kernel_text(6), _kernel_text(7)]]
    serial = [jit.compile_to_object(t) for t in texts]
    threaded = jit.compile_objects(texts, threads=3)
    assert [len(o) for o in threaded] == [len(o) for o in serial]
    assert threaded == serial
    assert sorted(jit.defined_symbols(threaded[-1])) == ["k6", "k7"]


def test_compile_objects_code_runs():
    objects = jit.compile_objects([_kernel_text(i) for i in range(4)], threads=2)
    driver = """
declare void @k3(ptr, ptr)
define void @run(ptr %out, ptr %in) {
  call void @k3(ptr %out, ptr %in)
  ret void
}
"""
    module = jit.JitModule.link(driver, objects)
    run = module.function("run", None, ctypes.c_void_p, ctypes.c_void_p)
    x = np.arange(1024, dtype=np.float32)
    out = np.zeros_like(x)
    run(out.ctypes.data, x.ctypes.data)
    np.testing.assert_array_equal(out, x * 4)


def test_compile_objects_reports_bad_ir_from_a_thread():
    texts = [_kernel_text(0), "define void @broken( {", _kernel_text(1)]
    with pytest.raises(RuntimeError):
        jit.compile_objects(texts, threads=3)


def test_compile_objects_beside_the_global_context():
    # Threads compiling in contexts of their own while another thread uses
    # the JIT (llvmlite's global context, under the locks) and two more
    # threads compile with compile_objects: every object as compiled alone.
    texts = [_kernel_text(i) for i in range(8)]
    expected = [jit.compile_to_object(t) for t in texts]
    errors, results = [], []

    def compile_many():
        try:
            for _ in range(3):
                results.append(jit.compile_objects(texts, threads=2))
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    def jit_many():
        try:
            for i in range(10):
                m = jit.JitModule(f"define i64 @f(i64 %x) {{ %r = mul i64 %x, {i} ret i64 %r }}")
                assert m.function("f", ctypes.c_int64, ctypes.c_int64)(7) == 7 * i
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=compile_many), threading.Thread(target=compile_many),
               threading.Thread(target=jit_many)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert results == [expected] * 6
