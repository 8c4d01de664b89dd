"""``xla.lax``: control flow and XLA primitives for traced code (see
``xla.frontend.lax``)."""
from xla.frontend.lax import (  # noqa: F401
    FftType, add, bitwise_and, bitwise_not, bitwise_or, bitwise_xor, broadcast_in_dim, broadcasted_iota, clamp,
    complex, concatenate, cond, conv_general_dilated, convert_element_type, dot_general,
    dynamic_index_in_dim, dynamic_slice, dynamic_update_index_in_dim, dynamic_update_slice, eq, erf,
    fft, fori_loop, ge, gt, imag, iota, le, linalg, logistic, lt, max, min, mul, ne, neg, pad, real,
    reduce, reduce_window, reshape, rev, rsqrt, scan, select, sort, sub, switch, top_k, transpose,
    while_loop)
from xla.frontend.parallel import (all_gather, axis_index, pmax, pmean, pmin, ppermute,  # noqa: F401,E402
                                   psum, psum_scatter)
from xla.frontend.sharding import with_sharding_constraint  # noqa: F401,E402

__all__ = [
    'FftType', 'add', 'all_gather', 'axis_index', 'bitwise_and', 'bitwise_not', 'bitwise_or', 'bitwise_xor',
    'broadcast_in_dim', 'broadcasted_iota', 'clamp', 'complex', 'concatenate', 'cond',
    'conv_general_dilated', 'convert_element_type', 'dot_general', 'dynamic_index_in_dim',
    'dynamic_slice', 'dynamic_update_index_in_dim', 'dynamic_update_slice', 'eq', 'erf', 'fft',
    'fori_loop', 'ge', 'gt', 'imag', 'iota', 'le', 'linalg', 'logistic', 'lt', 'max', 'min', 'mul',
    'ne', 'neg', 'pad', 'pmax', 'pmean', 'pmin', 'ppermute', 'psum', 'psum_scatter', 'real',
    'reduce', 'reduce_window', 'reshape', 'rev', 'rsqrt', 'scan', 'select', 'sort', 'sub', 'switch',
    'top_k', 'transpose', 'while_loop', 'with_sharding_constraint']
