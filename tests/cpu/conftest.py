"""Fixtures shared by the CPU backend's tests."""
import pytest

from gemm_paths import use_llvm_kernel


@pytest.fixture
def llvm_tiled_gemm(monkeypatch):
    """Small and strided products compiled as the LLVM tiled kernel (as
    objects compiled ahead of time do) instead of runtime calls."""
    use_llvm_kernel(monkeypatch)


@pytest.fixture(params=["runtime", "llvm_kernel"])
def tiled_gemm_path(request, monkeypatch):
    """Each test that takes it runs twice: products through the runtime's
    tiled GEMM, then through the LLVM tiled kernel."""
    if request.param == "llvm_kernel":
        use_llvm_kernel(monkeypatch)
    return request.param
