"""Linear algebra primitives, as ``jax.lax.linalg``: ``cholesky`` and
``eig`` (with ``geev``, the call it makes and its ``info``)."""
import numpy as np

from xla.errors import InvalidArgumentError, ShapeError
from xla.frontend.builder import element_type
from xla.frontend.lax.eager import eager
from xla.frontend.lax.primitives import (add, broadcast_in_dim, broadcasted_iota, complex, eq,
                                         imag, le, mul, neg, real, select, transpose)
from xla.frontend.lax.subcomputation import type_text
from xla.frontend.tracing import Tracer, as_tracer, current_context
from xla.hlo.attributes import RawAttr
from xla.hlo.shape import Shape


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


_GEEV_LETTER = {np.dtype(np.float32): "s", np.dtype(np.float64): "d",
                np.dtype(np.complex64): "c", np.dtype(np.complex128): "z"}
_COMPLEX = {"s": np.complex64, "d": np.complex128, "c": np.complex64, "z": np.complex128}


def geev(x, *, compute_right_eigenvectors=True):
    """``(w, vr, info)`` of each matrix of the stack ``x`` (``[..., n, n]``,
    f32, f64, c64 or c128): the custom call ``lapack_<t>geev_ffi`` that
    JAX's ``eig`` lowers to on the CPU (jaxlib's LAPACK kernel; the
    interpreter and the CPU backend implement it, other backends refuse it
    by name). ``w`` the eigenvalues and ``vr`` the right eigenvectors as
    columns (None unless ``compute_right_eigenvectors``), complex of
    ``x``'s precision whatever the values; ``info`` int32 ``[...]``: 0,
    -4 for a matrix with a NaN or an infinity, > 0 where the solver did not
    converge (``w`` and ``vr`` are then NaN). Left eigenvectors are not
    computed (``compute_left = 'N'``)."""
    a = as_tracer(x)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ShapeError(f"lax.linalg.eig takes a stack of square matrices, got {type_text(a)}")
    t = _GEEV_LETTER.get(a.dtype)
    if t is None:
        raise InvalidArgumentError("lax.linalg.eig takes f32, f64, c64 or c128 matrices, got "
                                   f"{type_text(a)}")
    batch, n = a.shape[:-2], a.shape[-1]
    real_et = element_type(a.dtype) if t in "sd" else None
    cplx = Shape.array(element_type(_COMPLEX[t]), a.shape)
    values = ([Shape.array(real_et, batch + (n,))] * 2 if real_et is not None else
              [Shape.array(element_type(_COMPLEX[t]), batch + (n,))])
    info_shape = Shape.array(element_type(np.int32), batch)
    b = current_context().builder
    right = "V" if compute_right_eigenvectors else "N"
    call = b.custom_call(
        f"lapack_{t}geev_ffi", (a.op,), Shape.tuple(values + [cplx, cplx, info_shape]),
        api_version=RawAttr("API_VERSION_TYPED_FFI"),
        backend_config=RawAttr(f"{{compute_left = {ord('N')} : ui8, "
                               f"compute_right = {ord(right)} : ui8}}"))
    parts = [Tracer(b.get_tuple_element(call, i)) for i in range(len(values) + 3)]
    w = complex(parts[0], parts[1]) if real_et is not None else parts[0]
    vr = parts[-2] if compute_right_eigenvectors else None
    return w, vr, parts[-1]


@eager
def eig(x, *, compute_left_eigenvectors=False, compute_right_eigenvectors=True):
    """The eigenvalues ``w`` and, with ``compute_right_eigenvectors``, the
    right eigenvectors ``vr`` (columns, unit 2-norm) of each matrix of
    ``x`` (``geev``), as ``jax.lax.linalg.eig``'s list ``[w]`` or ``[w,
    vr]``: NaN where the solver failed (a NaN or an infinity in the matrix,
    or no convergence), as JAX's lowering selects. Left eigenvectors are
    not computed: ``compute_left_eigenvectors=True`` (JAX's default) is
    refused."""
    if compute_left_eigenvectors:
        raise InvalidArgumentError("lax.linalg.eig: left eigenvectors are not computed; pass "
                                   "compute_left_eigenvectors=False")
    w, vr, info = geev(x, compute_right_eigenvectors=compute_right_eigenvectors)
    ok = eq(info, broadcast_in_dim(np.zeros((), np.int32), info.shape, ()))
    nan = np.full((), np.nan, w.dtype)
    out = [select(broadcast_in_dim(ok, w.shape, tuple(range(info.ndim))), w,
                  broadcast_in_dim(nan, w.shape, ()))]
    if vr is not None:
        out.append(select(broadcast_in_dim(ok, vr.shape, tuple(range(info.ndim))), vr,
                          broadcast_in_dim(nan, vr.shape, ())))
    return out
