"""JitModule.object_code and JitModule.from_object: native code out of the
JIT and back in without LLVM (what the persistent cache and the ``.o`` dump
rely on)."""
import ctypes
import os

import numpy as np
import pytest

import xla
from xla.backends.cpu import jit

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

_SAXPY = r"""
declare float @tanhf(float)
define void @saxpy(float* noalias %out, float* noalias %x, float* noalias %y, float %a, i64 %n) {
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %next, %loop ]
  %px = getelementptr float, float* %x, i64 %i
  %py = getelementptr float, float* %y, i64 %i
  %vx = load float, float* %px
  %vy = load float, float* %py
  %m = fmul float %a, %vx
  %s = fadd float %m, %vy
  %t = call float @tanhf(float %s)
  %po = getelementptr float, float* %out, i64 %i
  store float %t, float* %po
  %next = add i64 %i, 1
  %done = icmp eq i64 %next, %n
  br i1 %done, label %exit, label %loop
exit:
  ret void
}
"""

_FLOAT_P = ctypes.POINTER(ctypes.c_float)


def _call_saxpy(module, x, y, a):
    fn = module.function("saxpy", None, _FLOAT_P, _FLOAT_P, _FLOAT_P, ctypes.c_float, ctypes.c_int64)
    out = np.empty_like(x)
    fn(out.ctypes.data_as(_FLOAT_P), x.ctypes.data_as(_FLOAT_P), y.ctypes.data_as(_FLOAT_P), a, x.size)
    return out


def test_object_code_round_trips_without_llvm():
    compiled = jit.JitModule(_SAXPY)
    code = compiled.object_code
    assert isinstance(code, bytes) and code[:4] == b"\x7fELF"
    assert "tanhf" in jit.undefined_symbols(code)
    loaded = jit.JitModule.from_object(code)
    assert loaded.optimized_ir is None and loaded.object_code == code
    rng = np.random.default_rng(0)
    x = rng.standard_normal(1000).astype(np.float32)
    y = rng.standard_normal(1000).astype(np.float32)
    want = np.tanh(np.float32(0.5) * x + y)
    got_compiled = _call_saxpy(compiled, x, y, 0.5)
    got_loaded = _call_saxpy(loaded, x, y, 0.5)
    np.testing.assert_array_equal(got_loaded, got_compiled)
    np.testing.assert_allclose(got_loaded, want, rtol=1e-6, atol=1e-7)


def test_from_object_rejects_bad_objects():
    with pytest.raises(RuntimeError, match="malformed"):
        jit.JitModule.from_object(b"\x7fELF" + b"\0" * 10)
    code = bytearray(jit.JitModule(_SAXPY).object_code)
    with pytest.raises(RuntimeError, match="malformed"):
        jit.JitModule.from_object(bytes(code[:len(code) // 2]))
    text = ("declare i64 @xla_test_not_defined_anywhere(i64)\n"
            "define i64 @f(i64 %x) {\n  %r = call i64 @xla_test_not_defined_anywhere(i64 %x)\n  ret i64 %r\n}\n")
    with pytest.raises(RuntimeError, match="xla_test_not_defined_anywhere"):
        jit.JitModule(text)


def test_cpu_executable_from_object_code_matches():
    from xla.backends.cpu.executable import CpuExecutable
    text = open(os.path.join(ROOT, "examples", "softmax.hlo")).read()
    exe = xla.compile(xla.parse_hlo_module(text), "cpu")
    # The optimized module and its buffer assignment, with code loaded from
    # bytes: the driver's object and the kernels' (each batch's object once).
    kernels = list({id(o): o for o in exe.kernel_objects.values()}.values())
    reloaded = CpuExecutable(exe.module, exe.assignment,
                             jit.JitModule.from_object(exe.jit_module.object_code, 0, kernels), None)
    args = [np.random.default_rng(1).standard_normal(p.shape.dimensions).astype(p.shape.dtype)
            for p in exe.module.entry.parameters]
    want = xla.compile(xla.parse_hlo_module(text), "interpreter").execute(*args)
    got = reloaded.execute(*args)
    np.testing.assert_array_equal(got, exe.execute(*args))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
