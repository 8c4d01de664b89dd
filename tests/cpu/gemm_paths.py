"""Test-only helpers for the two ways the CPU backend computes small and
strided products: calls to the runtime's tiled GEMM (the JIT's default) and
the LLVM tiled kernel (emit_small_gemm.py; objects compiled ahead of time)."""
import re

_TILED_GEMM = "__xla_cpu_tiled_gemm_"
_SPLIT_CALL = re.compile(r'call void @"?' + _TILED_GEMM + r'\w+"?\(.*, i64 [1-9]\d*\)')


def use_llvm_kernel(monkeypatch):
    """Until the test ends, compile such products as the LLVM kernel: the
    runtime's tiled GEMM left out of the symbols the code may call."""
    from xla.backends.cpu import compiler
    symbols = {name: address for name, address in compiler.runtime_symbols().items()
               if not name.startswith(_TILED_GEMM)}
    monkeypatch.setattr(compiler, "runtime_symbols", lambda: symbols)


def calls_runtime_tiled_gemm(exe):
    return _TILED_GEMM in exe.ir_text


def splits_over_the_pool(exe):
    """Whether the tiled product spreads its row blocks over the pool: the
    kernel through __xla_cpu_parallel_for, the runtime's tiled GEMM with a
    chunk size (its last argument) above 0."""
    return "__xla_cpu_parallel_for" in exe.ir_text or _SPLIT_CALL.search(exe.ir_text) is not None
