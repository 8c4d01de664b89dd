"""``np.histogram`` under ``xla.jit``: NumPy's algorithm for a number of
equal bins, on traced values.

The range is the data's min and max unless given (equal ends widen by 0.5
each way, as NumPy); edges are ``lo + i * (hi - lo) / bins`` with the last
one ``hi`` exactly, in NumPy's edge type (the data's float type, float64 for
integers). Each value's bin is ``floor((x - lo) / (hi - lo) * bins)``,
corrected against the edges as NumPy corrects it (the last bin includes
``hi``); values outside the range count nothing. Counts are a scatter-add
(``np.add.at``); ``weights`` and ``density`` as in NumPy. Edges given as an
array (``bins=[...]``) and string bin rules raise a TracingError naming them.
"""
import numpy as np

from xla.frontend.numpy_api import implements
from xla.frontend.tracing import as_tracer, convert, tracing_error


@implements(np.histogram)
def histogram(a, bins=10, range=None, density=None, weights=None):  # noqa: A002 - NumPy's names
    if isinstance(bins, str) or not isinstance(bins, (int, np.integer)):
        raise tracing_error("np.histogram under xla.jit takes the number of bins (an int); edges "
                            f"given as {type(bins).__name__} are not supported")
    n = int(bins)
    if n < 1:
        raise ValueError("`bins` must be positive, when an integer")
    a = np.reshape(as_tracer(a), (-1,))
    if range is not None:
        lo, hi = range
        if lo > hi:
            raise ValueError("max must be larger than min in range parameter.")
        if not (np.isfinite(lo) and np.isfinite(hi)):
            raise ValueError(f"supplied range of [{lo}, {hi}] is not finite")
    bin_type = np.result_type(a.dtype, *(() if range is None else range))
    if np.issubdtype(bin_type, np.integer) or bin_type == np.bool_:
        bin_type = np.result_type(bin_type, float)
    x = convert(a, bin_type)
    if range is None:
        lo, hi = (np.min(x), np.max(x)) if a.size else (0.0, 1.0)
    # The edges as np.linspace computes them for NumPy: in the data's type
    # from its min and max, in float64 from a given range (Python floats).
    edge_type = bin_type if range is None else np.dtype(np.float64)
    lo, hi = convert(as_tracer(lo), edge_type), convert(as_tracer(hi), edge_type)
    same = lo == hi
    lo = convert(np.where(same, lo - 0.5, lo), edge_type)
    hi = convert(np.where(same, hi + 0.5, hi), edge_type)
    steps = np.arange(n + 1, dtype=edge_type)
    step = convert((hi - lo) / edge_type.type(n), edge_type)
    edges = convert(np.where(steps == n, hi, convert(steps * step, edge_type) + lo), bin_type)
    lo, hi = convert(lo, np.float64), convert(hi, np.float64)

    keep = (x >= convert(lo, bin_type)) & (x <= convert(hi, bin_type))
    offset = convert(x - convert(lo, bin_type), np.float64)
    index = convert(offset / (hi - lo) * float(n), np.int64)
    index = np.clip(index, 0, n - 1)   # (NumPy: indices == n -> n - 1; outside ones are dropped)
    index = np.where(x < np.take(edges, index), index - 1, index)
    index = np.clip(index, 0, n - 1)
    index = np.where((x >= np.take(edges, index + 1)) & (index != n - 1), index + 1, index)
    if weights is None:
        counts_type = np.dtype(np.intp)
        w = np.where(keep, 1, 0).astype(counts_type)
    else:
        w = np.reshape(as_tracer(weights), (-1,))
        if w.shape != a.shape:
            raise ValueError("weights should have the same shape as a.")
        counts_type = w.dtype
        w = np.where(keep, w, 0).astype(counts_type)
    hist = np.zeros(n, counts_type)
    hist = as_tracer(hist)
    np.add.at(hist, index, w)
    if density:
        widths = convert(np.diff(edges), np.float64)   # (NumPy divides by float64 widths)
        return hist / widths / np.sum(hist), edges
    return hist, edges

