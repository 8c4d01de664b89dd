"""``xla.lax``: structured control flow and XLA primitives for traced code.

What NumPy has no words for: loops and branches on traced values
(``while_loop``, ``fori_loop``, ``cond``, ``switch``, ``scan``) and XLA's
own operations (``dot_general``, ``conv_general_dilated``,
``reduce_window``, ``dynamic_slice``, ``sort`` of several operands, ``pad``
with interior padding, ``fft``, ``linalg.cholesky``...). The names,
signatures and semantics are JAX's ``jax.lax``: one dtype per operation
(no NumPy promotion) and one shape (no NumPy broadcasting, but scalars).

``xla.frontend.numpy`` is built on this package: NumPy's functions are
NumPy's argument handling, promotion and broadcasting around calls to these
primitives, never the builder itself (tests/frontend/test_numpy_on_lax.py).

One module per topic, each importing only from those before it:

- ``eager``: outside a trace, every function runs as a small ``xla.jit``
  program
- ``subcomputation``: tracing Python functions into sub-computations
- ``checks``: errors on values (``error_if``: NumPy's ``LinAlgError`` of a
  singular matrix), raised after the compiled call
- ``primitives``: elementwise arithmetic, compares, shape and type primitives
- ``math``: elementwise math (exp, log, trigonometry, rounding, div, rem,
  pow, shifts, bit counts, bitcasts)
- ``fft``, ``linalg``: the FFT, ``linalg.cholesky`` and ``linalg.eig`` (``geev``)
- ``slicing``: ``slice``, ``dynamic_slice``, ``dynamic_update_slice``,
  ``gather`` and the ``scatter`` family
- ``convolution``: ``dot_general`` and ``conv_general_dilated``
- ``reductions``: ``reduce``, ``reduce_window``, ``sort``, ``top_k``
- ``control_flow``: loops and branches
- ``composite``: a named operation with a decomposition (``jax.lax.composite``)
"""
from xla.frontend.lax import linalg  # noqa: F401  (lax.linalg.cholesky, as in JAX)
from xla.frontend.lax.composite import composite  # noqa: F401
from xla.frontend.lax.control_flow import cond, fori_loop, scan, switch, while_loop  # noqa: F401
from xla.frontend.lax.convolution import conv_general_dilated, dot_general  # noqa: F401
from xla.frontend.lax.fft import FftType, fft  # noqa: F401
from xla.frontend.lax.primitives import (  # noqa: F401
    add, bitwise_and, bitwise_not, bitwise_or, bitwise_xor, broadcast_in_dim, broadcasted_iota,
    clamp, complex, concatenate, convert_element_type, eq, erf, full, full_like, ge, gt, imag,
    iota, le, logistic, lt, max, min, mul, ne, neg, pad, real, reshape, rev, rsqrt, select, sub,
    transpose)
from xla.frontend.lax.math import (  # noqa: F401
    RoundingMethod, abs, acos, acosh, asin, asinh, atan, atan2, atanh, bitcast_convert_type, cbrt,
    ceil, clz, cos, cosh, div, exp, exp2, expm1, floor, is_finite, log, log1p, nextafter,
    population_count, pow, rem, round, shift_left, shift_right_arithmetic, shift_right_logical,
    sign, sin, sinh, sqrt, tan, tanh)
from xla.frontend.lax.reductions import reduce, reduce_window, sort, top_k  # noqa: F401
from xla.frontend.lax.slicing import (  # noqa: F401
    dynamic_index_in_dim, dynamic_slice, dynamic_update_index_in_dim, dynamic_update_slice, gather,
    GatherDimensionNumbers, GatherScatterMode, scatter, scatter_add, scatter_max, scatter_min,
    scatter_mul, ScatterDimensionNumbers, slice)

__all__ = [
    'abs', 'acos', 'acosh', 'add', 'asin', 'asinh', 'atan', 'atan2', 'atanh',
    'bitcast_convert_type', 'bitwise_and', 'bitwise_not', 'bitwise_or', 'bitwise_xor',
    'broadcast_in_dim', 'broadcasted_iota', 'cbrt', 'ceil', 'clamp', 'clz', 'complex',
    'composite', 'concatenate', 'cond', 'conv_general_dilated', 'convert_element_type', 'cos', 'cosh', 'div',
    'dot_general', 'dynamic_index_in_dim', 'dynamic_slice', 'dynamic_update_index_in_dim',
    'dynamic_update_slice', 'eq', 'erf', 'exp', 'exp2', 'expm1', 'fft', 'FftType', 'floor',
    'fori_loop', 'full', 'full_like', 'gather', 'GatherDimensionNumbers', 'GatherScatterMode',
    'ge', 'gt', 'imag', 'iota', 'is_finite', 'le', 'linalg', 'log', 'log1p', 'logistic', 'lt',
    'max', 'min', 'mul', 'ne', 'neg', 'nextafter', 'pad', 'population_count', 'pow', 'real',
    'reduce', 'reduce_window', 'rem', 'reshape', 'rev', 'round', 'RoundingMethod', 'rsqrt', 'scan',
    'scatter', 'scatter_add', 'scatter_max', 'scatter_min', 'scatter_mul',
    'ScatterDimensionNumbers', 'select', 'shift_left', 'shift_right_arithmetic',
    'shift_right_logical', 'sign', 'sin', 'sinh', 'slice', 'sort', 'sqrt', 'sub', 'switch', 'tan',
    'tanh', 'top_k', 'transpose', 'while_loop']
