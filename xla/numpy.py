"""``xla.numpy``: NumPy's names for traced code, for what NumPy's dispatch
protocols cannot reach inside a trace (``xla.numpy.array([t0, t1])``, the
creation functions ``zeros``, ``ones``, ``full``, ``arange``...); everything
else is plain ``numpy`` on traced values, which lands in the same
implementations (``xla.frontend.numpy``, one module per topic).

Every name in ``__all__`` is a top-level NumPy name with NumPy's signature
and semantics; ``np.linalg`` and ``np.fft`` functions are reached through
``numpy`` itself (``np.linalg.solve(t, b)`` inside ``xla.jit``).
"""
from xla.frontend.numpy.creation import (arange, array, asarray, empty_like, eye, full, full_like,
                                         geomspace, identity, linspace, logspace, meshgrid, ones,
                                         ones_like, zeros, zeros_like)
from xla.frontend.numpy.differences import (convolve, correlate, diff, ediff1d, gradient, interp,
                                            polyval, trapezoid, unwrap)
from xla.frontend.numpy.elementwise import (allclose, angle, array_equal, clip, conj, fix, i0, imag,
                                            isclose, iscomplex, iscomplexobj, isin, isneginf,
                                            isposinf, isreal, isrealobj, nan_to_num, real, round,
                                            sinc)
from xla.frontend.numpy.elementwise import conj as conjugate, round as around
from xla.frontend.numpy.indexing_routines import (choose, copyto, delete, diag, diag_indices_from,
                                                  diagflat, diagonal, fill_diagonal, insert, pad,
                                                  piecewise, place, put, putmask, ravel_multi_index,
                                                  repeat, resize, select, take, take_along_axis,
                                                  tile, tril, tril_indices_from, triu,
                                                  triu_indices_from, unravel_index, where)
from xla.frontend.numpy.manipulation import (append, apply_along_axis, array_split, atleast_1d,
                                             atleast_2d, atleast_3d, block, broadcast_arrays,
                                             broadcast_to, column_stack, concatenate, copy, dsplit,
                                             dstack, expand_dims, flip, fliplr, flipud, hsplit,
                                             hstack, matrix_transpose, moveaxis, ndim, permute_dims,
                                             ravel, reshape, roll, rollaxis, rot90, shape, size,
                                             split, squeeze, stack, swapaxes, transpose, vsplit,
                                             vstack)
from xla.frontend.numpy.polynomials import (polyadd, polyder, polyfit, polyint, polymul, polysub,
                                            roots, vander)
from xla.frontend.numpy.products import (cross, dot, einsum, inner, kron, matmul, outer, tensordot,
                                         vdot, vecdot)
from xla.frontend.numpy.reductions import (all, any, count_nonzero, cumprod, cumsum, max, mean, min,
                                           nancumprod, nancumsum, nanmax, nanmean, nanmin, nanprod,
                                           nanstd, nansum, nanvar, prod, ptp, std, sum, trace, var)
from xla.frontend.numpy.reductions import max as amax, min as amin
from xla.frontend.numpy.sorting import (argmax, argmin, argpartition, argsort, digitize, lexsort,
                                        nanargmax, nanargmin, partition, searchsorted, sort,
                                        sort_complex)
from xla.frontend.numpy.statistics import (average, corrcoef, cov, histogram, histogram2d,
                                           histogram_bin_edges, histogramdd, median, nanmedian,
                                           nanpercentile, nanquantile, percentile, quantile)

__all__ = [
    # creation
    "arange", "array", "asarray", "empty_like", "eye", "full", "full_like", "geomspace", "identity",
    "linspace", "logspace", "meshgrid", "ones", "ones_like", "zeros", "zeros_like",
    # array manipulation
    "append", "apply_along_axis", "array_split", "atleast_1d", "atleast_2d", "atleast_3d", "block",
    "broadcast_arrays", "broadcast_to", "column_stack", "concatenate", "copy", "dsplit", "dstack",
    "expand_dims", "flip", "fliplr", "flipud", "hsplit", "hstack", "matrix_transpose", "moveaxis",
    "ndim", "permute_dims", "ravel", "reshape", "roll", "rollaxis", "rot90", "shape", "size",
    "split", "squeeze", "stack", "swapaxes", "transpose", "vsplit", "vstack",
    # indexing routines
    "choose", "copyto", "delete", "diag", "diag_indices_from", "diagflat", "diagonal",
    "fill_diagonal", "insert", "pad", "piecewise", "place", "put", "putmask", "ravel_multi_index",
    "repeat", "resize", "select", "take", "take_along_axis", "tile", "tril", "tril_indices_from",
    "triu", "triu_indices_from", "unravel_index", "where",
    # reductions
    "all", "amax", "amin", "any", "count_nonzero", "cumprod", "cumsum", "max", "mean", "min",
    "nancumprod", "nancumsum", "nanmax", "nanmean", "nanmin", "nanprod", "nanstd", "nansum",
    "nanvar", "prod", "ptp", "std", "sum", "trace", "var",
    # elementwise functions and comparisons
    "allclose", "angle", "around", "array_equal", "clip", "conj", "conjugate", "fix", "i0", "imag",
    "isclose", "iscomplex", "iscomplexobj", "isin", "isneginf", "isposinf", "isreal", "isrealobj",
    "nan_to_num", "real", "round", "sinc",
    # sorting and searching
    "argmax", "argmin", "argpartition", "argsort", "digitize", "lexsort", "nanargmax", "nanargmin",
    "partition", "searchsorted", "sort", "sort_complex",
    # products
    "cross", "dot", "einsum", "inner", "kron", "matmul", "outer", "tensordot", "vdot", "vecdot",
    # statistics
    "average", "corrcoef", "cov", "histogram", "histogram2d", "histogram_bin_edges", "histogramdd",
    "median", "nanmedian", "nanpercentile", "nanquantile", "percentile", "quantile",
    # differences, convolution, interpolation
    "convolve", "correlate", "diff", "ediff1d", "gradient", "interp", "polyval", "trapezoid",
    "unwrap",
    # polynomials
    "polyadd", "polyder", "polyfit", "polyint", "polymul", "polysub", "roots", "vander",
]

# NumPy 2.1's cumulative_sum and cumulative_prod, where this NumPy has them.
try:
    from xla.frontend.numpy.reductions import cumulative_prod, cumulative_sum  # noqa: F401
    __all__ += ["cumulative_prod", "cumulative_sum"]
except ImportError:
    pass
# NumPy 2.1's unstack.
try:
    from xla.frontend.numpy.manipulation import unstack  # noqa: F401
    __all__ += ["unstack"]
except ImportError:
    pass
