"""``xla.lax``: control flow and XLA primitives for traced code (see
``xla.frontend.lax``)."""
from xla.frontend.lax import (  # noqa: F401
    abs, acos, acosh, add, asin, asinh, atan, atan2, atanh, bitcast_convert_type, bitwise_and,
    bitwise_not, bitwise_or, bitwise_xor, broadcast_in_dim, broadcasted_iota, cbrt, ceil, clamp,
    clz, complex, composite, concatenate, cond, conv_general_dilated, convert_element_type, cos,
    cosh, div, dot_general, dynamic_index_in_dim, dynamic_slice, dynamic_update_index_in_dim,
    dynamic_update_slice, eq, erf, exp, exp2, expm1, fft, FftType, floor, fori_loop, full,
    full_like, gather, GatherDimensionNumbers, GatherScatterMode, ge, gt, imag, iota, is_finite,
    le, linalg, log, log1p, logistic, lt, max, min, mul, ne, neg, nextafter, pad, population_count,
    pow, real, reduce, reduce_window, rem, reshape, rev, round, RoundingMethod, rsqrt, scan,
    scatter, scatter_add, scatter_max, scatter_min, scatter_mul, ScatterDimensionNumbers, select,
    shift_left, shift_right_arithmetic, shift_right_logical, sign, sin, sinh, slice, sort, sqrt,
    sub, switch, tan, tanh, top_k, transpose, while_loop)
from xla.frontend.parallel import (all_gather, axis_index, pmax, pmean, pmin, ppermute,  # noqa: F401,E402
                                   psum, psum_scatter)
from xla.frontend.sharding import with_sharding_constraint  # noqa: F401,E402

__all__ = [
    'abs', 'acos', 'acosh', 'add', 'all_gather', 'asin', 'asinh', 'atan', 'atan2', 'atanh',
    'axis_index', 'bitcast_convert_type', 'bitwise_and', 'bitwise_not', 'bitwise_or',
    'bitwise_xor', 'broadcast_in_dim', 'broadcasted_iota', 'cbrt', 'ceil', 'clamp', 'clz',
    'complex', 'composite', 'concatenate', 'cond', 'conv_general_dilated', 'convert_element_type',
    'cos', 'cosh', 'div', 'dot_general', 'dynamic_index_in_dim', 'dynamic_slice',
    'dynamic_update_index_in_dim', 'dynamic_update_slice', 'eq', 'erf', 'exp', 'exp2', 'expm1',
    'fft', 'FftType', 'floor', 'fori_loop', 'full', 'full_like', 'gather',
    'GatherDimensionNumbers', 'GatherScatterMode', 'ge', 'gt', 'imag', 'iota', 'is_finite', 'le',
    'linalg', 'log', 'log1p', 'logistic', 'lt', 'max', 'min', 'mul', 'ne', 'neg', 'nextafter',
    'pad', 'pmax', 'pmean', 'pmin', 'population_count', 'pow', 'ppermute', 'psum', 'psum_scatter',
    'real', 'reduce', 'reduce_window', 'rem', 'reshape', 'rev', 'round', 'RoundingMethod', 'rsqrt',
    'scan', 'scatter', 'scatter_add', 'scatter_max', 'scatter_min', 'scatter_mul',
    'ScatterDimensionNumbers', 'select', 'shift_left', 'shift_right_arithmetic',
    'shift_right_logical', 'sign', 'sin', 'sinh', 'slice', 'sort', 'sqrt', 'sub', 'switch', 'tan',
    'tanh', 'top_k', 'transpose', 'while_loop', 'with_sharding_constraint']
