"""The built-in platforms against the conformance suites (tests/conformance.py).
The JAX corpus runs for them in test_corpus_interpreter.py and
cpu/test_cpu_corpus.py."""
from conformance import DonationConformance, JitConformance


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
