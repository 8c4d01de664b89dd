"""NumPy's functions on traced arrays, one module per topic.

Each topic module registers its implementations in ``_common.FUNCTIONS``
(``@implements(np.sum)``), where ``Tracer.__array_function__`` looks calls
up, so ``np.sum(t, axis=0)`` in user code lands in ``reductions.sum``. Each
implementation takes NumPy's signature and follows NumPy's semantics and
dtype rules (a float64 program stays float64; ``np.sum`` of int32 gives the
platform integer, as NumPy does). ``xla.numpy`` exports them under NumPy's
names, for what NumPy's protocols cannot reach (creating arrays inside a
trace, ``np.array([tracer, ...])``).

The modules import one another in one direction only, each from those
listed before it, never back:

- ``_common``: the registry, ``unsupported``, the axis and ``out=`` checks,
  ``strong``
- ``manipulation``: reshapes, transposes, joining, splitting, flips
- ``creation``: ``array``, the ``_like`` functions, ``zeros``, ``arange``...
- ``indexing_routines``: ``where``, ``take``, diagonals, ``pad``, ``repeat``
- ``reductions``: sums, means, variances, cumulative and NaN-aware forms,
  the ufunc methods (``np.add.reduce``, ``np.add.at``...)
- ``elementwise``: ``round``, ``clip``, complex parts, ``isclose``
- ``sorting``: ``sort``, ``argmax``, ``searchsorted``
- ``products``: ``matmul``, ``dot``, ``tensordot``, ``einsum``
- ``statistics``, ``differences``, ``linalg`` (``np.linalg``) and ``fft``
  (``np.fft``): on top, independent of one another; ``linalg_svd`` (``svd``,
  ``lstsq``) and ``linalg_eig`` (``eig``, ``eigvals``) on ``linalg``;
  ``polynomials`` (``vander``, ``polyfit``, ``roots``...) on ``differences``,
  ``linalg_svd`` and ``linalg_eig``

Importing the package registers every module and installs the table the
Tracer and ``xla.frontend.ufuncs`` reach it through
(``tracing.table("numpy")``), so that neither imports it back.
"""
import types

from xla.frontend import tracing
from xla.frontend.numpy import (creation, differences, elementwise, fft, indexing_routines,
                                linalg, linalg_eig, linalg_svd, manipulation, polynomials, products,
                                reductions, sorting, statistics)
from xla.frontend.numpy._common import FUNCTIONS, unsupported

# The topic modules, each importing only from those before it.
TOPICS = (manipulation, creation, indexing_routines, reductions, elementwise, sorting, products,
          statistics, differences, linalg, linalg_svd, linalg_eig, polynomials, fft)

tracing.install_table("numpy", types.SimpleNamespace(
    FUNCTIONS=FUNCTIONS,                    # __array_function__: NumPy function -> implementation
    unsupported=unsupported,                # raises, saying why a function is not implemented
    array=creation.array,                   # as_tracer of a list holding Tracers
    ufunc_method=reductions.ufunc_method,   # np.add.reduce, .accumulate, .outer, .at
    matmul=products.matmul,                 # the matmul and vecdot gufuncs
    vecdot=products.vecdot))
