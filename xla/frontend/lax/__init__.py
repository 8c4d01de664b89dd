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
- ``primitives``: elementwise, shape and type primitives
- ``fft``, ``linalg``: the FFT and ``linalg.cholesky``
- ``slicing``: ``dynamic_slice`` and ``dynamic_update_slice``
- ``convolution``: ``dot_general`` and ``conv_general_dilated``
- ``reductions``: ``reduce``, ``reduce_window``, ``sort``, ``top_k``
- ``control_flow``: loops and branches
"""
from xla.frontend.lax import linalg  # noqa: F401  (lax.linalg.cholesky, as in JAX)
from xla.frontend.lax.control_flow import cond, fori_loop, scan, switch, while_loop  # noqa: F401
from xla.frontend.lax.convolution import conv_general_dilated, dot_general  # noqa: F401
from xla.frontend.lax.fft import FftType, fft  # noqa: F401
from xla.frontend.lax.primitives import (  # noqa: F401
    add, bitwise_and, bitwise_not, bitwise_or, bitwise_xor, broadcast_in_dim, broadcasted_iota, clamp, complex,
    concatenate, convert_element_type, eq, erf, ge, gt, imag, iota, le, logistic, lt, max, min, mul,
    ne, neg, pad, real, reshape, rev, rsqrt, select, sub, transpose)
from xla.frontend.lax.reductions import reduce, reduce_window, sort, top_k  # noqa: F401
from xla.frontend.lax.slicing import (dynamic_index_in_dim, dynamic_slice,  # noqa: F401
                                      dynamic_update_index_in_dim, dynamic_update_slice)

__all__ = [
    'FftType', 'add', 'bitwise_and', 'bitwise_not', 'bitwise_or', 'bitwise_xor', 'broadcast_in_dim',
    'broadcasted_iota', 'clamp', 'complex', 'concatenate', 'cond', 'conv_general_dilated',
    'convert_element_type', 'dot_general', 'dynamic_index_in_dim', 'dynamic_slice',
    'dynamic_update_index_in_dim', 'dynamic_update_slice', 'eq', 'erf', 'fft', 'fori_loop', 'ge',
    'gt', 'imag', 'iota', 'le', 'linalg', 'logistic', 'lt', 'max', 'min', 'mul', 'ne', 'neg', 'pad',
    'real', 'reduce', 'reduce_window', 'reshape', 'rev', 'rsqrt', 'scan', 'select', 'sort', 'sub',
    'switch', 'top_k', 'transpose', 'while_loop']
