"""The CUDA driver, as far as this backend knows it: whether it is here."""
import ctypes.util
import functools


@functools.lru_cache(maxsize=None)
def cuda_unavailable_reason():
    """Why the CUDA platform cannot run here (always a reason today: the
    driver-side runtime is not written yet)."""
    name = ctypes.util.find_library("cuda")
    if name is None:
        return "no NVIDIA driver: libcuda.so.1 (the CUDA driver library) is not installed"
    try:
        import cuda.bindings  # noqa: F401  (present or not is the question)
    except ImportError:
        return "the CUDA driver is present but cuda-python (cuda-bindings) is not installed"
    return "the CUDA driver runtime of this backend is not implemented yet"
