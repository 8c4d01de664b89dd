"""Test-only helper: results of xla.jit compared with NumPy's."""
import numpy as np


def assert_results_match(got, want, rtol=None, atol=0.0):
    """``got`` and ``want`` (an array or a tuple of arrays): as many, each
    with the same dtype and shape, and the same values: exactly for
    integers and bools, and for every dtype when ``rtol`` is None; else
    floating-point values within ``rtol``/``atol``."""
    got_t = got if isinstance(got, tuple) else (got,)
    want_t = want if isinstance(want, tuple) else (want,)
    assert len(got_t) == len(want_t)
    for g, w in zip(got_t, want_t):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, w.dtype, g.shape, w.shape)
        if rtol is None or w.dtype.kind in "iub":
            np.testing.assert_array_equal(g, w)
        else:
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)
