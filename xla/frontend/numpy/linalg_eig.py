"""``np.linalg.eig`` and ``np.linalg.eigvals`` under ``xla.jit``: general
(non-symmetric) square matrices, real or complex, stacks ``(..., n, n)``
too; integer and bool matrices as float64, as NumPy computes them.
Registration only, as ``linalg.py``.

Both are the custom call ``lapack_<t>geev_ffi`` that JAX's
``jnp.linalg.eig`` lowers to on the CPU (``xla.lax.linalg.geev``): the
interpreter computes it with NumPy's ``eig`` (LAPACK's geev), the CPU
backend with Eigen's solvers (``xla/backends/cpu/runtime/eig.cc``); other
backends refuse it by name.

* dtype: complex always, ``complex64`` for float32 and complex64 input,
  ``complex128`` otherwise, as ``jax.numpy``'s. NumPy returns a real array
  when every eigenvalue of a real matrix happens to be real, a dtype that
  depends on the values and so cannot be traced: take ``.real`` where
  the eigenvalues are known to be real.
* order: NumPy leaves it unspecified, and so does this. The interpreter
  gives NumPy's (LAPACK's: the computed Schur form's diagonal); the CPU
  the diagonal of Eigen's real Schur form for a real matrix (the same
  Hessenberg QR algorithm, deflating in its own order; a complex conjugate
  pair together, positive imaginary part first) and ascending magnitude
  for a complex one (Eigen's ComplexEigenSolver sorts them). Compare
  eigenvalues as multisets, and eigenvectors through ``a @ v == v * w``.
* eigenvectors: the columns of ``v``, each of unit 2-norm with its
  largest component (the first of largest magnitude) real and positive;
  LAPACK's (NumPy's) are of unit norm with that component real, of
  either sign. Within a repeated eigenvalue the basis is the solver's,
  and for a defective matrix the computed vectors are (nearly) parallel,
  as LAPACK's are.
* errors: a NaN or an infinity in a matrix raises NumPy's
  ``LinAlgError("Array must not contain infs or NaNs")`` after the call,
  a matrix the QR iterations do not converge on ``LinAlgError("Eigenvalues
  did not converge")`` (``xla.lax.checks``; where nothing checks, in a
  composite's decomposition, the values are NaN).
"""
import numpy as np

from xla.frontend import lax
from xla.frontend.lax import checks
from xla.frontend.numpy._common import implements
from xla.frontend.numpy.linalg import _float_matrix, square_stack
from xla.frontend.tracing import broadcast_to, tracing_error


def _complex_dtype(dt):
    return np.dtype(np.complex64) if dt in (np.float32, np.complex64) else \
        np.dtype(np.complex128)


def _geev(a, what, vectors):
    """``(w, v)`` (``v`` None unless ``vectors``) of ``a``, NumPy's errors
    registered after the call."""
    a = _float_matrix(a)
    square_stack(a)
    if a.dtype not in (np.float32, np.float64, np.complex64, np.complex128):
        raise tracing_error(f"{what} under xla.jit takes float32, float64, complex64 or complex128 "
                            f"matrices (and integers, as float64), got {a.dtype}; NumPy's linalg "
                            "refuses it too")
    n, cdt = a.shape[-1], _complex_dtype(a.dtype)
    if n == 0:
        w = broadcast_to(np.zeros((), cdt), a.shape[:-1])
        return w, (broadcast_to(np.zeros((), cdt), a.shape) if vectors else None)
    w, v, info = lax.linalg.geev(a, compute_right_eigenvectors=vectors)
    checks.error_if(info < 0, np.linalg.LinAlgError, "Array must not contain infs or NaNs")
    checks.error_if(info > 0, np.linalg.LinAlgError, "Eigenvalues did not converge")
    return w, v


@implements(np.linalg.eig)
def eig(a):
    """``(eigenvalues, eigenvectors)``, NumPy's ``EigResult`` fields in
    order (the module docstring: complex dtype, order, scaling, errors)."""
    w, v = _geev(a, "np.linalg.eig", vectors=True)
    return w, v


@implements(np.linalg.eigvals)
def eigvals(a):
    """The eigenvalues of ``eig``, without its eigenvectors."""
    return _geev(a, "np.linalg.eigvals", vectors=False)[0]
