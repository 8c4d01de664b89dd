"""Linear algebra primitives, as ``jax.lax.linalg``: ``cholesky``."""
import numpy as np

from xla.errors import InvalidArgumentError, ShapeError
from xla.frontend.lax.eager import eager
from xla.frontend.lax.primitives import (add, broadcast_in_dim, broadcasted_iota, complex, imag,
                                         le, mul, neg, real, select, transpose)
from xla.frontend.lax.subcomputation import type_text
from xla.frontend.tracing import Tracer, as_tracer, current_context


def _swap_last(x):
    return transpose(x, tuple(range(x.ndim - 2)) + (x.ndim - 1, x.ndim - 2))


def symmetrize(x):
    """(x + x^H) / 2 over the last two dimensions."""
    xt = _swap_last(x)
    if x.dtype.kind == "c":
        xt = complex(real(xt), neg(imag(xt)))
    return mul(add(x, xt), np.asarray(0.5, x.dtype))


def _lower_triangle(x):
    """``x`` with zeros above the diagonal of its last two dimensions."""
    n, m = x.shape[-2:]
    mask = le(broadcasted_iota(np.int64, (n, m), 1), broadcasted_iota(np.int64, (n, m), 0))
    mask = broadcast_in_dim(mask, x.shape, (x.ndim - 2, x.ndim - 1))
    return select(mask, x, broadcast_in_dim(np.zeros((), x.dtype), x.shape, ()))


@eager
def cholesky(x, *, symmetrize_input=True):
    """The lower-triangular ``L`` with ``L @ L^H == x`` for each matrix of the
    stack ``x`` (``[..., n, n]``, Hermitian positive definite; a matrix that
    is not gives NaNs), zeros above the diagonal (HLO cholesky). With
    ``symmetrize_input``, of ``(x + x^H) / 2``; without, only the lower
    triangle of ``x`` is read."""
    a = as_tracer(x)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ShapeError(f"lax.linalg.cholesky takes a stack of square matrices, got {type_text(a)}")
    if a.dtype.kind not in "fc":
        raise InvalidArgumentError(f"lax.linalg.cholesky takes floats or complex numbers, got "
                                   f"{type_text(a)}")
    if symmetrize_input:
        a = symmetrize(a)
    low = Tracer(current_context().builder.add_instruction("cholesky", (a.op,), lower=True))
    return _lower_triangle(low)   # HLO leaves the other triangle unspecified
