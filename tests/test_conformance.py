"""The built-in platforms against the conformance suites (tests/conformance.py).
The JAX corpus runs for them in test_corpus_interpreter.py and
cpu/test_cpu_corpus.py."""
import pytest
from conformance import DonationConformance, JitConformance

from xla.backends.gpu.driver import cuda_unavailable_reason


class TestCpuJit(JitConformance):
    platform = "cpu"


class TestCpuDonation(DonationConformance):
    platform = "cpu"


class TestInterpreterJit(JitConformance):
    platform = "interpreter"


class TestInterpreterDonation(DonationConformance):
    platform = "interpreter"


class TestGpuEmulatorJit(JitConformance):
    platform = "gpu_emulator"


class TestGpuEmulatorDonation(DonationConformance):
    platform = "gpu_emulator"


_NO_GPU = cuda_unavailable_reason()
_needs_gpu = pytest.mark.skipif(_NO_GPU is not None, reason=f"needs an NVIDIA GPU: {_NO_GPU}")


@_needs_gpu
class TestGpuJit(JitConformance):
    platform = "gpu"


@_needs_gpu
class TestGpuDonation(DonationConformance):
    platform = "gpu"
