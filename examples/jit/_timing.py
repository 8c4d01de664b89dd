"""Shared by the examples: best-of-N wall time of a call."""
import time


def best_time(fn, *args, repeats=5):
    fn(*args)  # warm up (and compile, for jitted functions)
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        fn(*args)
        best = min(best, time.perf_counter() - t)
    return best


def report(name, fn, jitted, args, rtol):
    import numpy as np
    want = fn(*args)
    got = jitted(*args)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol)
    t_np = best_time(fn, *args)
    t_xla = best_time(jitted, *args)
    print(f"{name}: matches NumPy (rtol {rtol:g}); NumPy {t_np * 1e3:.2f} ms, xla.jit "
          f"{t_xla * 1e3:.2f} ms, speedup {t_np / t_xla:.2f}x; "
          f"compilations {jitted.cache_info().compilations}")
