"""Statistics: ``np.average``, quantiles, percentiles and medians (linear
interpolation between sorted values; their NaN-aware forms), ``np.cov``,
``np.corrcoef``, ``np.histogram``, ``np.histogram2d`` and ``np.histogramdd``."""
import builtins
import operator

import numpy as np

from xla.errors import ShapeError
from xla.frontend import tracing
from xla.frontend.lax import checks
from xla.frontend.numpy._common import check_no_out, implements, normalize_axis
from xla.frontend.numpy.elementwise import clip
from xla.frontend.numpy.indexing_routines import diagonal, take, take_along_axis, where
from xla.frontend.numpy.manipulation import (atleast_2d, concatenate, expand_dims, moveaxis, ravel,
                                             reshape, squeeze, transpose)
from xla.frontend.numpy.products import matmul
from xla.frontend.numpy.reductions import any, mean, sum
from xla.frontend.numpy.sorting import searchsorted, sort
from xla.frontend.tracing import (Tracer, as_tracer, broadcast_to, convert, result_type,
                                  tracing_error)


# ----- averages and variances -------------------------------------------------------------

@implements(np.average)
def average(a, axis=None, weights=None, returned=False, *, keepdims=False):
    a = as_tracer(a)
    if weights is None:
        avg = mean(a, axis=axis, keepdims=keepdims)
        count = np.asarray(a.size // builtins.max(avg.size, 1), dtype=avg.dtype)
        return (avg, broadcast_to(count, avg.shape)) if returned else avg
    w = as_tracer(weights)
    if w.shape != a.shape:
        if axis is None or w.ndim != 1:
            raise ShapeError("Axis must be specified when shapes of a and weights differ.")
        ax = normalize_axis(axis, a.ndim)
        w = reshape(w, [w.shape[0] if i == ax else 1 for i in range(a.ndim)])
        w = broadcast_to(w, a.shape)
    dt = result_type(a, w, 1.0)
    scl = sum(convert(w, dt), axis=axis, keepdims=keepdims)
    avg = np.true_divide(sum(np.multiply(convert(a, dt), convert(w, dt)), axis=axis,
                             keepdims=keepdims), scl)
    return (avg, scl) if returned else avg


# ----- quantiles --------------------------------------------------------------------------

def _quantile_dtype(a, q):
    """NumPy's result dtype: the float type of ``a`` promoted with ``q`` (a
    Python number is weak)."""
    dt = a.dtype if a.dtype.kind in "fc" else np.dtype(np.float64)
    if type(q) in tracing.PYTHON_SCALARS:
        return dt
    return np.result_type(dt, np.asarray(q).dtype)


def _hyndman_fan(alpha, beta):
    return lambda n, q: n * q + (alpha + q * (1 - alpha - beta)) - 1


def _to_boundaries(index, condition):
    """NumPy's discrete rule: ``floor(index)`` where ``condition(gamma,
    index)`` holds, the next index elsewhere, none below 0."""
    previous = np.floor(index)
    chosen = np.where(condition(index - previous, index), previous, previous + 1).astype(np.intp)
    return np.maximum(chosen, 0)


# NumPy's quantile methods (numpy.quantile's documentation; Hyndman & Fan):
# a discrete one gives the index of the order statistic (the input's
# dtype), an interpolating one the virtual index and how gamma is fixed.
_DISCRETE_QUANTILES = {
    "lower": lambda n, q: np.floor((n - 1) * q).astype(np.intp),
    "higher": lambda n, q: np.ceil((n - 1) * q).astype(np.intp),
    "nearest": lambda n, q: np.around((n - 1) * q).astype(np.intp),
    "inverted_cdf": lambda n, q: np.clip(_to_boundaries(n * q - 1, lambda g, _: g == 0), 0, n - 1),
    "closest_observation": lambda n, q: _to_boundaries(
        n * q - 1 - 0.5, lambda g, i: (g == 0) & (np.floor(i) % 2 == 1)),
}
_INTERPOLATED_QUANTILES = {
    "linear": (lambda n, q: (n - 1) * q, None),
    "midpoint": (lambda n, q: 0.5 * (np.floor((n - 1) * q) + np.ceil((n - 1) * q)),
                 lambda gamma, index: np.where(index % 1 == 0, 0.0, 0.5)),
    "averaged_inverted_cdf": (lambda n, q: n * q - 1, lambda gamma, _: np.where(gamma == 0, 0.5, 1.0)),
    "interpolated_inverted_cdf": (_hyndman_fan(0, 1), None),
    "hazen": (_hyndman_fan(0.5, 0.5), None),
    "weibull": (_hyndman_fan(0, 0), None),
    "median_unbiased": (_hyndman_fan(1 / 3.0, 1 / 3.0), None),
    "normal_unbiased": (_hyndman_fan(3 / 8.0, 3 / 8.0), None),
}


def _quantile(a, q, axis, keepdims, name, q_src=None, method="linear"):
    q_src = q if q_src is None else q_src
    a = as_tracer(a)
    if axis is None:
        r = _quantile(ravel(a), q, 0, False, name, q_src, method)
        return reshape(r, r.shape + (1,) * a.ndim) if keepdims else r
    axis = normalize_axis(axis, a.ndim)
    if isinstance(q, Tracer):
        raise tracing_error(f"np.{name} with a traced q is not supported; pass q as a constant")
    if method not in _DISCRETE_QUANTILES and method not in _INTERPOLATED_QUANTILES:
        raise ValueError(f"{method!r} is not a valid method. Use one of: "
                         f"{sorted(_DISCRETE_QUANTILES) + sorted(_INTERPOLATED_QUANTILES)}")
    q = np.asarray(q, dtype=np.float64)
    if np.any((q < 0) | (q > 1)):
        raise ValueError("Quantiles must be in the range [0, 1]")
    n = a.shape[axis]
    shape = [1] * a.ndim
    shape[axis] = q.size
    if method in _DISCRETE_QUANTILES:
        # The order statistic itself, in the input's dtype.
        s = sort(a, axis=axis)
        r = take(s, _DISCRETE_QUANTILES[method](n, q).reshape(-1), axis=axis)
    else:
        s = convert(sort(a, axis=axis), _quantile_dtype(a, q_src))
        virtual_index, fix_gamma = _INTERPOLATED_QUANTILES[method]
        v = np.asarray(virtual_index(n, q), dtype=np.float64).reshape(-1)
        lo = np.floor(v)
        above, below = v >= n - 1, v < 0
        lo = np.where(above, -1, np.where(below, 0, lo))      # (NumPy's -1: the last)
        hi = np.where(above, -1, np.where(below, 0, lo + 1))
        gamma = v - lo
        if fix_gamma is not None:
            gamma = fix_gamma(gamma, v)
        gamma = np.asarray(gamma, np.float64).reshape(shape)
        vlo = take(s, (lo % n).astype(np.intp), axis=axis)
        vhi = take(s, (hi % n).astype(np.intp), axis=axis)
        # NumPy's lerp: from the nearer end (b - d * (1 - t) from t = 0.5
        # on), t and 1 - t rounded from float64 to the result's type.
        d = vhi - vlo
        r = where(gamma >= 0.5, vhi - d * (1 - gamma).astype(s.dtype), vlo + d * gamma.astype(s.dtype))
    # NaNs propagate as in NumPy.
    if s.dtype.kind == "f":
        has_nan = any(np.isnan(s), axis=axis, keepdims=True)
        r = where(has_nan, np.asarray(np.nan, s.dtype), r)
    r = moveaxis(r, axis, 0)
    r = reshape(r, q.shape + r.shape[1:])
    if keepdims:
        r = expand_dims(r, q.ndim + axis)
    return r


def _quantile_functions(kernel, prefix):
    """np.{prefix}quantile, np.{prefix}percentile and np.{prefix}median over
    ``kernel(a, q, axis, keepdims, name[, q as given])``."""
    def check(name, out, method, weights=None):
        check_no_out(name, out)
        if weights is not None:
            raise tracing_error(f"np.{name}(weights=...) is not supported under xla.jit")
        if prefix and method != "linear":
            raise tracing_error(f"np.{name}(method={method!r}) is not supported under xla.jit "
                                "(linear is)")
        return method

    def quantile_(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False,
                  *, weights=None):
        method = check(prefix + "quantile", out, method, weights)
        return kernel(a, q, axis, keepdims, prefix + "quantile", method=method)

    def percentile_(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False,
                    *, weights=None):
        method = check(prefix + "percentile", out, method, weights)
        return kernel(a, np.asarray(q) / 100.0, axis, keepdims, prefix + "percentile", q,
                      method=method)

    def median_(a, axis=None, out=None, overwrite_input=False, keepdims=False):
        check_no_out(prefix + "median", out)
        return kernel(a, 0.5, axis, keepdims, prefix + "median")

    for fn, name in ((quantile_, "quantile"), (percentile_, "percentile"), (median_, "median")):
        fn.__name__ = fn.__qualname__ = prefix + name
        implements(getattr(np, prefix + name))(fn)
    return quantile_, percentile_, median_


quantile, percentile, median = _quantile_functions(_quantile, "")


def _nan_quantile(a, q, axis, keepdims, name, q_src=None, method="linear"):
    """Linear-interpolation quantiles of the non-NaN values: NaNs sort last,
    so each slice's count of numbers picks the positions (traced)."""
    q_src = q if q_src is None else q_src
    a = as_tracer(a)
    if a.dtype.kind != "f":
        return _quantile(a, q, axis, keepdims, name, q_src)
    if axis is None:
        r = _nan_quantile(ravel(a), q, 0, False, name, q_src)
        return reshape(r, r.shape + (1,) * a.ndim) if keepdims else r
    axis = normalize_axis(axis, a.ndim)
    q = np.asarray(q, dtype=np.float64)
    if np.any((q < 0) | (q > 1)):
        raise ValueError("Quantiles must be in the range [0, 1]")
    s = moveaxis(convert(sort(a, axis=axis), _quantile_dtype(a, q_src)), axis, -1)
    n = sum(np.logical_not(np.isnan(s)), axis=-1, keepdims=True)        # int64
    last = np.maximum(n - 1, 0)
    results = []
    for qv in q.reshape(-1):
        pos = np.multiply(last.astype(s.dtype), np.asarray(qv, s.dtype))
        lo = np.floor(pos)
        frac = pos - lo
        lo_i = lo.astype(np.int64)
        hi_i = np.minimum(lo_i + 1, last)
        vlo = take_along_axis(s, lo_i, axis=-1)
        vhi = take_along_axis(s, hi_i, axis=-1)
        r = vlo + (vhi - vlo) * frac
        r = where(np.equal(n, 0), np.asarray(np.nan, s.dtype), r)   # all-NaN slice
        results.append(r)
    r = concatenate(results, axis=-1)                                # (..., len(q))
    r = moveaxis(r, -1, 0)
    r = reshape(r, q.shape + r.shape[1:])
    if keepdims:
        r = expand_dims(r, q.ndim + axis)
    return r


nanquantile, nanpercentile, nanmedian = _quantile_functions(_nan_quantile, "nan")


# ----- correlations -----------------------------------------------------------------------

@implements(np.cov)
def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, *, dtype=None):
    if fweights is not None or aweights is not None:
        raise tracing_error("np.cov(fweights=/aweights=) is not supported under xla.jit")
    x = atleast_2d(as_tracer(m))
    if not rowvar and x.shape[0] != 1:
        x = transpose(x)
    if y is not None:
        yt = atleast_2d(as_tracer(y))
        if not rowvar and yt.shape[0] != 1:
            yt = transpose(yt)
        x = concatenate([x, yt], axis=0)
    dt = np.dtype(dtype) if dtype is not None else np.result_type(x.dtype, np.float64)
    x = convert(x, dt)
    if ddof is None:
        ddof = 0 if bias else 1
    n = x.shape[1]
    x = x - mean(x, axis=1, keepdims=True)
    c = matmul(x, np.conjugate(transpose(x)))
    c = np.true_divide(c, np.asarray(builtins.max(n - ddof, 0), dt))
    return squeeze(c)


@implements(np.corrcoef)
def corrcoef(x, y=None, rowvar=True, *, dtype=None):
    c = cov(x, y, rowvar, dtype=dtype)
    if c.ndim == 0:
        return np.true_divide(c, c)
    d = np.real(diagonal(c))
    sd = np.sqrt(d)
    c = np.true_divide(np.true_divide(c, reshape(sd, (-1, 1))), reshape(sd, (1, -1)))
    if c.dtype.kind == "c":
        return c
    return clip(c, -1, 1)


# ----- histograms --------------------------------------------------------------------------
# NumPy's algorithm for a number of equal bins, on traced values.
#
# The range is the data's min and max unless given (equal ends widen by 0.5
# each way, as NumPy); edges are ``lo + i * (hi - lo) / bins`` with the last
# one ``hi`` exactly, in NumPy's edge type (the data's float type, float64 for
# integers). Each value's bin is ``floor((x - lo) / (hi - lo) * bins)``,
# corrected against the edges as NumPy corrects it (the last bin includes
# ``hi``); values outside the range count nothing. Counts are a scatter-add
# (``np.add.at``); ``weights`` and ``density`` as in NumPy. Edges given as an
# array (``bins=[...]``) and string bin rules raise a TracingError naming them.

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



# ----- multidimensional histograms -------------------------------------------------------
# NumPy's histogramdd on traced samples. Per dimension, bins are a number
# (equal bins over ``range``, or the data's min and max when no range is
# given, widened by 0.5 each way when they are equal; edges by np.linspace,
# so in the data's float type from its min and max, float64 from a range)
# or the edges themselves (a 1-D array, increasing). A sample's bin is
# ``searchsorted(edges, v, side='right')``, the last edge counted in the
# last bin; samples outside the edges count nothing. Counts are a
# scatter-add into the flattened histogram, always float64 (NumPy's
# bincount), ``weights`` cast to float64; ``density`` divides by the total
# and each dimension's bin widths. What NumPy raises on for values (an
# autodetected range that is not finite, traced edges that decrease) raises
# NumPy's ValueError after the call (``xla.lax.checks``).

def _outer_edges(column, rng, i):
    """``(first, last, finite)``: the ends of dimension ``i``, and whether
    they are finite (a traced bool for ends read from the data)."""
    if rng is not None:
        first, last = rng
        if isinstance(first, Tracer) or isinstance(last, Tracer):
            raise tracing_error(f"np.histogramdd: range[{i}] must be constants under xla.jit, not "
                                "traced values")
        if first > last:
            raise ValueError("max must be larger than min in range parameter.")
        if not (np.isfinite(first) and np.isfinite(last)):
            raise ValueError(f"supplied range of [{first}, {last}] is not finite")
        if first == last:
            first, last = first - 0.5, last + 0.5
        return first, last, True
    if column.shape[0] == 0:
        return 0, 1, True
    first, last = np.min(column), np.max(column)
    finite = np.isfinite(first) & np.isfinite(last)
    same = np.equal(first, last)
    return np.where(same, first - 0.5, first), np.where(same, last + 0.5, last), finite


@implements(np.histogramdd)
def histogramdd(sample, bins=10, range=None, density=None, weights=None):  # noqa: A002
    if isinstance(sample, (np.ndarray, Tracer)) and sample.ndim == 2:
        sample = as_tracer(sample)
    else:
        parts = sample if isinstance(sample, (list, tuple)) else [sample]
        sample = transpose(atleast_2d(_stack_columns(parts)))
    n_samples, d = sample.shape
    if isinstance(bins, (list, tuple)) or isinstance(bins, (np.ndarray, Tracer)) and bins.ndim > 0:
        if len(bins) != d:
            raise ValueError("The dimension of bins must be equal to the dimension of the sample x.")
    else:
        bins = d * [bins]
    if range is None:
        range = (None,) * d
    elif len(range) != d:
        raise ValueError("range argument must have one entry per dimension")
    edges, checks_ = [], []
    for i in builtins.range(d):
        b = bins[i]
        bdim = b.ndim if isinstance(b, (Tracer, np.ndarray)) else np.ndim(b)
        if bdim == 0:
            if isinstance(b, Tracer):
                raise tracing_error(f"np.histogramdd: bins[{i}] is a traced number; the number of "
                                    "bins sets the output shape, so it must be a Python int")
            if b < 1:
                raise ValueError(f"`bins[{i}]` must be positive, when an integer")
            try:
                n = operator.index(b)
            except TypeError as e:
                raise TypeError(f"`bins[{i}]` must be an integer, when a scalar") from e
            lo, hi, ok = _outer_edges(sample[:, i], range[i], i)
            if isinstance(lo, Tracer) or isinstance(hi, Tracer):
                e = np.linspace(lo, hi, n + 1)
            else:
                e = as_tracer(np.linspace(lo, hi, n + 1))
            if isinstance(ok, Tracer):
                checks_.append((np.logical_not(ok), "autodetected range of [min, max] is not finite"))
        elif bdim == 1:
            if isinstance(b, Tracer):
                e = b
                checks_.append((np.any(np.greater(e[:-1], e[1:])),
                                f"`bins[{i}]` must be monotonically increasing, when an array"))
            else:
                e = np.asarray(b)
                if np.any(e[:-1] > e[1:]):
                    raise ValueError(f"`bins[{i}]` must be monotonically increasing, when an array")
                e = as_tracer(e)
        else:
            raise ValueError(f"`bins[{i}]` must be a scalar or 1d array")
        edges.append(e)
    for failed, message in checks_:
        checks.error_if(failed, ValueError, message)
    nbin = [e.shape[0] + 1 for e in edges]      # with an outlier bin at each end
    flat = as_tracer(np.zeros((), np.intp))
    for i, e in enumerate(edges):
        column = sample[:, i]
        k = searchsorted(e, column, side="right")
        k = np.where(np.equal(column, e[-1]), k - 1, k)
        flat = flat * nbin[i] + k
    if weights is None:
        w = as_tracer(np.ones((), np.float64))
        w = np.broadcast_to(w, (n_samples,))
    else:
        w = as_tracer(weights)
        if w.shape != (n_samples,):
            raise ValueError("The weights and list don't have the same length.")
        if w.dtype.kind == "c":
            raise TypeError("Cannot cast array data from dtype('complex128') to dtype('float64') "
                            "according to the rule 'safe'")
        w = convert(w, np.float64)
    size = 1
    for nb in nbin:
        size *= nb
    hist = as_tracer(np.zeros(size, np.float64))
    np.add.at(hist, flat, w)
    hist = reshape(hist, nbin)[(slice(1, -1),) * d]
    if density:
        s = sum(hist)
        for i, e in enumerate(edges):
            shape = [1] * d
            shape[i] = nbin[i] - 2
            hist = np.true_divide(hist, reshape(np.diff(e), shape))
        hist = np.true_divide(hist, s)
    return hist, edges


def _stack_columns(parts):
    """The sample of ``histogramdd([x, y, ...])``: the arrays as rows of one
    array, in their common dtype (``np.atleast_2d(list)``)."""
    parts = [as_tracer(p) for p in parts]
    dt = result_type(*parts)
    return concatenate([reshape(convert(p, dt), (1, -1)) for p in parts], axis=0)


@implements(np.histogram2d)
def histogram2d(x, y, bins=10, range=None, density=None, weights=None):  # noqa: A002
    """``np.histogramdd([x, y], ...)`` as NumPy calls it: ``(H, xedges,
    yedges)``; ``bins`` an int, a pair (ints or edges), or one array of
    edges for both (unless it has length 2: NumPy reads a pair then)."""
    if len(x) != len(y):
        raise ValueError("x and y must have the same length.")
    try:
        n = len(bins)
    except TypeError:
        n = 1
    if n != 1 and n != 2:
        bins = [bins, bins]
    hist, edges = histogramdd([x, y], bins, range, density, weights)
    return hist, edges[0], edges[1]


@implements(np.histogram_bin_edges)
def histogram_bin_edges(a, bins=10, range=None, weights=None):  # noqa: A002
    """The edges ``np.histogram`` computes (a number of bins; edges given as
    an array are returned as they are, as NumPy)."""
    if isinstance(bins, (np.ndarray, Tracer, list, tuple)) and np.ndim(bins) == 1:
        e = as_tracer(bins)
        if not isinstance(bins, Tracer) and np.any(np.diff(np.asarray(bins)) < 0):
            raise ValueError("`bins` must increase monotonically, when an array")
        return e
    return histogram(a, bins=bins, range=range, weights=weights)[1]
