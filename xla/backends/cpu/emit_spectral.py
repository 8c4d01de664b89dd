"""jaxlib's LAPACK eigendecomposition, SVD, LU and QR custom calls
(``lapack_{s,d}syevd_ffi``, ``gesdd_ffi``, ``getrf_ffi``, ``geqrf_ffi``,
``orgqr_ffi``, ``lapack_{s,d,c,z}geev_ffi``, and the names without ``_ffi``) as one call each to the
runtime's ``__xla_cpu_<routine>_{f32,f64}`` (Eigen's tridiagonalization and
bidiagonalization then QR iterations, ``givens_qr.h``; Eigen's
partial-pivoting LU and Householder QR, ``xla/backends/cpu/runtime/spectral.cc``), with LAPACK's results (the
signatures are in ``xla/hlo/custom_call_signatures.py``):

* syevd ``a -> (v, w[, info])``: eigenvalues ``w`` ascending, eigenvectors
  the columns of ``v``, read from the ``uplo`` triangle of ``a``
  (backend_config, default 'L'); ``mode`` 'N' computes no vectors (``v``
  is then a copy of ``a``).
* gesdd ``a -> (a, s, u, vt, info)``: singular values descending,
  ``a == u[:, :k] * s @ vt[:k]``; ``mode`` 'A' full ``u`` and ``vt``, 'S'
  the first min(m, n) columns / rows, 'N' singular values only (``u`` and
  ``vt`` zero). The first result is a copy of ``a`` (LAPACK destroys it).

* getrf ``a -> (lu, ipiv[, info])`` (``__xla_cpu_getrf_*``, Eigen's
  blocked partial-pivoting LU): L below the diagonal and U on and above
  it, 1-based pivot rows, info the 1-based index of the first zero pivot.

* geqrf ``a -> (a, tau)`` and orgqr ``(a, tau) -> q`` (``__xla_cpu_geqrf_*``,
  ``__xla_cpu_orgqr_*``, Eigen's HouseholderQR, whose reflectors are
  LAPACK's: ``H = I - tau v v^T``, ``v[0] = 1``, R on and above the
  diagonal): Q's first n columns from the first k reflectors.

* geev ``a -> (wr, wi, vl, vr, info)`` (s, d) or ``(w, vl, vr, info)``
  (c, z) (``__xla_cpu_geev_{f32,f64,c64,c128}``, Eigen's EigenSolver and
  ComplexEigenSolver, ``xla/backends/cpu/runtime/eig.cc``): eigenvalues in
  the order of the real Schur form's diagonal (s, d) or by ascending
  magnitude (c, z: ComplexEigenSolver sorts them), right eigenvectors the columns
  of ``vr`` (complex, unit 2-norm, largest component real and positive)
  where ``compute_right`` is 'V' (else zero), ``vl`` zero (``compute_left``
  'V' is refused); ``info`` -4 for a matrix with a NaN or an infinity (as
  jaxlib's kernel), 1 where the QR iterations did not converge, the values
  then NaN. Complex element types too.

For syevd and gesdd ``info`` is 0, or 1 where the solver did not converge or (gesdd) the matrix
is not finite, and the values are then NaN. Matrices are batched over the
leading dimensions; they and the vector results must all be row-major, or
the matrices all column-major with the batch dimensions major (the layout
jaxlib's lowering asks for): other layouts, complex and narrow element
types (geev aside) and ahead-of-time objects (whose C runtime has no solvers) are
refused, naming the op.
"""
import math

from llvmlite import ir

from xla.backends.cpu import loop_emitter as le
from xla.backends.cpu.emit_control_flow import _copy
from xla.backends.cpu.emit_sort import CUSTOM_CALL_TARGETS
from xla.backends.cpu.ir_emitter import PTR, VOID, Slice, unsupported
from xla.backends.cpu.llvm_types import I32
from xla.backends.cpu.loop_emitter import i64
from xla.hlo.custom_call_signatures import lapack_letter

_TYPES = {"s": "f32", "d": "f64"}


def _layout_of(h, matrices, others):
    """True for column-major matrices, False for row-major; refuses others."""
    if not all(le.is_row_major(s) for s in others):
        raise unsupported(h, "a non-row-major vector result")
    if all(le.is_row_major(s) for s in matrices):
        return False
    if all(le.is_column_major_matrices(s) for s in matrices):
        return True
    layouts = ", ".join(s.to_text() for s in matrices)
    raise unsupported(h, f"matrices in mixed or non-dense layouts ({layouts})")


def _runtime(me, h, routine, types=_TYPES):
    """The runtime function computing ``h`` (``types``: its element types
    by LAPACK's routine letter), or an error naming what is missing."""
    target = h.attr("custom_call_target")
    et = types.get(target[len("lapack_")])
    if et is None:
        raise unsupported(h, f"{target} of {h.operands[0].shape.element_type.text} matrices "
                             "(the runtime's take f32 and f64)")
    name = f"__xla_cpu_{routine}_{et}"
    if name not in me.runtime_symbols:
        raise unsupported(h, f"no {routine} in this runtime (ahead-of-time objects)")
    return name


def _slices(me, h):
    leaves = range(len(h.shape.tuple_shapes)) if h.shape.is_tuple else [None]
    return [Slice(me.assignment.buffer(h, () if i is None else (i,))) for i in leaves]


def _call(me, name, pointers, scalars):
    b = me.builder
    ptrs = [ir.Constant(PTR, None) if s is None else me.slice_pointer(b, me.table, s.key)
            for s in pointers]
    fn = me.declare(name, ir.FunctionType(VOID, [PTR] * len(ptrs) + [v.type for v in scalars]))
    b.call(fn, ptrs + scalars)


def _lapack_syevd(me, h):
    name = _runtime(me, h, "syevd")
    a = h.operands[0]
    shapes = list(h.shape.tuple_shapes)
    col_major = _layout_of(h, [a.shape, shapes[0]], shapes[1:])
    mode = lapack_letter(h, "mode", "V")
    if mode not in "VN":
        raise unsupported(h, f"mode {mode!r}")
    lower = lapack_letter(h, "uplo", "L") == "L"
    n = a.shape.dimensions[-1]
    batch = math.prod(a.shape.dimensions[:-2])
    out = _slices(me, h)
    sa = Slice(me.assignment.buffer(a, ()))
    flags = int(lower) | 2 * int(col_major) | 4 * int(mode == "V")
    _call(me, name, [sa, out[0], out[1], out[2] if len(out) > 2 else None],
          [i64(batch), i64(n), ir.Constant(I32, flags)])


def _lapack_gesdd(me, h):
    name = _runtime(me, h, "gesdd")
    a = h.operands[0]
    shapes = list(h.shape.tuple_shapes)
    col_major = _layout_of(h, [a.shape, shapes[0], shapes[2], shapes[3]], [shapes[1], shapes[4]])
    mode = lapack_letter(h, "mode", "A")
    if mode not in "ASN":
        raise unsupported(h, f"mode {mode!r}")
    m, n = a.shape.dimensions[-2:]
    batch = math.prod(a.shape.dimensions[:-2])
    out = _slices(me, h)
    sa = Slice(me.assignment.buffer(a, ()))
    # LAPACK leaves its work in a: the first result is a's copy.
    _copy(me, me.assignment.buffer(h, (0,)), me.assignment.buffer(a, ()))
    flags = int(mode != "N") | 2 * int(mode == "A") | 4 * int(col_major)
    _call(me, name, [sa, out[1], out[2], out[3], out[4]],
          [i64(batch), i64(m), i64(n), ir.Constant(I32, flags)])


def _lapack_getrf(me, h):
    name = _runtime(me, h, "getrf")
    a = h.operands[0]
    shapes = list(h.shape.tuple_shapes)
    col_major = _layout_of(h, [a.shape, shapes[0]], shapes[1:])
    m, n = a.shape.dimensions[-2:]
    batch = math.prod(a.shape.dimensions[:-2])
    out = _slices(me, h)
    sa = Slice(me.assignment.buffer(a, ()))
    _call(me, name, [sa, out[0], out[1], out[2] if len(out) > 2 else None],
          [i64(batch), i64(m), i64(n), ir.Constant(I32, int(col_major))])


def _lapack_geqrf(me, h):
    name = _runtime(me, h, "geqrf")
    a = h.operands[0]
    shapes = list(h.shape.tuple_shapes)
    col_major = _layout_of(h, [a.shape, shapes[0]], shapes[1:])
    m, n = a.shape.dimensions[-2:]
    batch = math.prod(a.shape.dimensions[:-2])
    out = _slices(me, h)
    _call(me, name, [Slice(me.assignment.buffer(a, ())), out[0], out[1]],
          [i64(batch), i64(m), i64(n), ir.Constant(I32, int(col_major))])


def _lapack_orgqr(me, h):
    name = _runtime(me, h, "orgqr")
    a, tau = h.operands
    q_shape = h.shape.tuple_shapes[0] if h.shape.is_tuple else h.shape
    col_major = _layout_of(h, [a.shape, q_shape], [tau.shape])
    m, n = a.shape.dimensions[-2:]
    batch = math.prod(a.shape.dimensions[:-2])
    out = _slices(me, h)
    _call(me, name, [Slice(me.assignment.buffer(a, ())), Slice(me.assignment.buffer(tau, ())), out[0]],
          [i64(batch), i64(m), i64(n), i64(tau.shape.dimensions[-1]),
           ir.Constant(I32, int(col_major))])


_GEEV_TYPES = dict(_TYPES, c="c64", z="c128")


def _lapack_geev(me, h):
    name = _runtime(me, h, "geev", _GEEV_TYPES)
    if lapack_letter(h, "compute_left", "N") != "N":
        raise unsupported(h, "left eigenvectors (compute_left 'V')")
    right = lapack_letter(h, "compute_right", "V") == "V"
    a = h.operands[0]
    shapes = list(h.shape.tuple_shapes)
    col_major = _layout_of(h, [a.shape] + shapes[-3:-1], shapes[:-3] + shapes[-1:])
    n = a.shape.dimensions[-1]
    batch = math.prod(a.shape.dimensions[:-2])
    out = _slices(me, h)
    values = out[:2] if len(out) == 5 else [out[0], None]
    _call(me, name, [Slice(me.assignment.buffer(a, ()))] + values + out[-3:],
          [i64(batch), i64(n), ir.Constant(I32, int(col_major) | 2 * int(right))])


# The complex routines are named, to be refused by name.
for _suffix in ("_ffi", ""):
    for _t in "sdcz":
        CUSTOM_CALL_TARGETS[f"lapack_{_t}gesdd{_suffix}"] = _lapack_gesdd
        CUSTOM_CALL_TARGETS[f"lapack_{_t}getrf{_suffix}"] = _lapack_getrf
        CUSTOM_CALL_TARGETS[f"lapack_{_t}geqrf{_suffix}"] = _lapack_geqrf
    for _t, _routine in (("s", "orgqr"), ("d", "orgqr"), ("c", "ungqr"), ("z", "ungqr")):
        CUSTOM_CALL_TARGETS[f"lapack_{_t}{_routine}{_suffix}"] = _lapack_orgqr
        CUSTOM_CALL_TARGETS[f"lapack_{_t}geev{_suffix}"] = _lapack_geev
    for _t, _routine in (("s", "syevd"), ("d", "syevd"), ("c", "heevd"), ("z", "heevd")):
        CUSTOM_CALL_TARGETS[f"lapack_{_t}{_routine}{_suffix}"] = _lapack_syevd
