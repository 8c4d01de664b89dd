"""The corpus on the GPU backend: every corpus module either runs on the
emulator and matches JAX, or is rejected at compile time with an error
naming the op and "gpu" (the list below: what the GPU backend does not
generate yet; a module leaving it must be removed from it). Where a GPU
and its driver are present, the same corpus runs on the real device; where
not, that test skips saying why. Their kernels' PTX: test_gpu_ptxas.py."""
import pytest

import xla
from xla.backends.gpu.driver import cuda_unavailable_reason
from xla.errors import UnimplementedError

from test_corpus_interpreter import FILES, _ids, check_against_jax

NO_GPU = cuda_unavailable_reason()
needs_gpu = pytest.mark.skipif(NO_GPU is not None, reason=f"needs an NVIDIA GPU: {NO_GPU}")

# corpus module -> the op the GPU backend names as unsupported
UNSUPPORTED = {
}


def compile_gpu(path):
    return xla.compile(xla.parse_hlo_module(path.read_text(), filename=str(path)), "gpu_emulator")


@pytest.mark.parametrize("path", FILES or [None], ids=_ids(FILES))
def test_corpus_on_the_emulator(path):
    assert path is not None
    if path.name in UNSUPPORTED:
        with pytest.raises(UnimplementedError, match=f"the gpu backend does not support "
                                                     f"{UNSUPPORTED[path.name]}"):
            compile_gpu(path)
        return
    check_against_jax(path, lambda module, args: xla.compile(module, "gpu_emulator").execute(*args))


def test_most_of_the_corpus_runs():
    assert len(FILES) - len(UNSUPPORTED) >= 144


@needs_gpu
def test_corpus_on_a_real_gpu():
    """Every corpus module the emulator runs, run on the device and compared
    with JAX's results (one test, so that every mismatch is listed)."""
    failures, ran = [], 0
    for path in FILES:
        if path.name in UNSUPPORTED:
            continue
        try:
            check_against_jax(path, lambda module, args: xla.compile(module, "gpu").execute(*args))
            ran += 1
        except pytest.skip.Exception:
            continue
        except Exception as e:   # collected, reported below
            failures.append(f"{path.name}: {type(e).__name__}: {str(e)[:300]}")
    assert not failures, f"{len(failures)} of {ran + len(failures)} modules:\n" + "\n".join(failures)
    assert ran >= 126, ran
