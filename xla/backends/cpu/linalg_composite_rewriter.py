"""LinalgCompositeRewriter: the composite calls the CPU runtime implements
become the LAPACK custom calls the CPU backend emits as runtime calls
(``emit_spectral.py``), before ``call-inliner`` would inline their
decompositions.

A composite call is a ``call`` with ``is_composite=true`` and
``frontend_attributes={composite.name=..., composite.attributes={...},
composite.version=...}`` (``xla.lax.composite``; XLA writes them so). This
pass rewrites, for version 0 and an f32/f64 operand with no zero-sized
dimension:

* ``xla.eigh`` (attribute ``lower``), ``a[..., n, n] -> (w, v)``: a
  ``lapack_{s,d}syevd_ffi`` custom call ``a -> (v, w, info)`` (mode 'V',
  uplo 'L'/'U'), and ``tuple(w, v)`` of its elements.
* ``xla.svd`` (attributes ``full_matrices``, ``compute_uv``), ``a[m, n] ->
  (u, s, vh)`` or ``s``: a ``lapack_{s,d}gesdd_ffi`` custom call ``a -> (a,
  s, u, vt, info)`` (mode 'A', 'S' or 'N'), and ``tuple(u, s, vt)`` or
  ``s``.

* ``xla.solve``, ``(a[..., n, n], b[..., n, k]) -> (x, info)`` with ``a x
  == b``: a ``lapack_{s,d}getrf_ffi`` custom call on ``concatenate(a, b)``
  (n rows, n + k columns: pivots from a's columns only, so b's columns come
  out as ``L^-1 P b``, as LAPACK's gesv forward-substitutes them), then an
  upper ``triangular-solve`` of U with them, and getrf's ``info`` (0, or
  the first zero on U's diagonal, 1-based). A singular ``a`` gives
  infinities or NaNs, as the decomposition does.

* ``xla.lu``, ``a[..., n, n] -> (lu, pivots)`` (``jax.lax.linalg.lu``'s
  first two results, 0-based pivots): a ``lapack_{s,d}getrf_ffi`` custom
  call, its 1-based ``ipiv`` less one.

* ``xla.geqrf``, ``a[..., m, n] -> (a, tau)``: ``lapack_{s,d}geqrf_ffi``
  (R and the reflectors packed, as LAPACK's geqrf).
* ``xla.householder_product``, ``(a[..., m, c], tau[..., k]) -> q``:
  ``lapack_{s,d}orgqr_ffi`` (LAPACK's orgqr: Q's first c columns).

The runtime gives NaN where the solver fails (info != 0), as jaxlib's
lowering selects. The decomposition computations no longer called are
removed. Everything else is left alone: other composites, other versions
or element types, and calls that are not composites (call-inliner inlines
them). The composite's contract is its decomposition's results, to rounding
and up to the signs of singular vectors and eigenvectors (and the bases of
repeated values' spaces), as LAPACK's differ from Jacobi's.
"""
import re

from xla.hlo.attributes import RawAttr, SliceDim
from xla.hlo.shape import Shape
from xla.hlo.types import PrimitiveType as PT
from xla.service.algebraic_simplifier import remove_unused
from xla.service.hlo_pass import HloPass
from xla.service.pass_utils import Emitter, remove_unreferenced

_PREFIX = {PT.F32: "s", PT.F64: "d"}


def _composite(instr):
    """(name, attributes dict) of a composite call, or None."""
    if instr.opcode != "call":
        return None
    flag = instr.attr("is_composite")
    if str(getattr(flag, "text", flag)).strip().lower() != "true":
        return None
    from xla.hlo.sdy import attribute_dict   # here: sdy (and shardings) only for a composite
    attrs = attribute_dict(instr.attr("frontend_attributes"))
    if attrs.get("composite.version", "0") != "0":
        return None
    values = {}
    for key, value in re.findall(r"(\w+)\s*=\s*(true|false|-?\d+)", attrs.get("composite.attributes", "")):
        values[key] = {"true": True, "false": False}.get(value, value)
    return attrs.get("composite.name"), values


def _letters(**chars):
    return RawAttr("{" + ", ".join(f"{k} = {ord(v)} : ui8" for k, v in sorted(chars.items())) + "}")


def _lapack_call(b, instr, routine, results, **chars):
    a = instr.operands[0]
    target = f"lapack_{_PREFIX[a.shape.element_type]}{routine}_ffi"
    return b.add("custom-call", Shape.tuple(results), [a], custom_call_target=target,
                 api_version=RawAttr("API_VERSION_TYPED_FFI"), backend_config=_letters(**chars))


def _gte(b, t, i):
    return b.add("get-tuple-element", t.shape.tuple_shapes[i], [t], index=i)


def _eigh(b, instr, attrs):
    a = instr.operands[0].shape
    if a.rank < 2 or a.dimensions[-1] != a.dimensions[-2]:
        return None
    et, batch, n = a.element_type, a.dimensions[:-2], a.dimensions[-1]
    cc = _lapack_call(b, instr, "syevd", [Shape.array(et, a.dimensions),
                                          Shape.array(et, batch + (n,)), Shape.array(PT.S32, batch)],
                      mode="V", uplo="L" if attrs.get("lower", True) else "U")
    w, v = _gte(b, cc, 1), _gte(b, cc, 0)
    return b.add("tuple", Shape.tuple([w.shape, v.shape]), [w, v])


def _svd(b, instr, attrs):
    a = instr.operands[0].shape
    if a.rank != 2:
        return None
    et, (m, n) = a.element_type, a.dimensions
    k = min(m, n)
    full, vectors = attrs.get("full_matrices", True), attrs.get("compute_uv", True)
    ku, kv = (m, n) if full and vectors else (k, k)
    cc = _lapack_call(b, instr, "gesdd", [Shape.array(et, (m, n)), Shape.array(et, (k,)),
                                          Shape.array(et, (m, ku)), Shape.array(et, (kv, n)),
                                          Shape.array(PT.S32, ())],
                      mode="N" if not vectors else "A" if full else "S")
    s = _gte(b, cc, 1)
    if not vectors:
        return s
    u, vt = _gte(b, cc, 2), _gte(b, cc, 3)
    return b.add("tuple", Shape.tuple([u.shape, s.shape, vt.shape]), [u, s, vt])


def _solve(b, instr, attrs):
    a, rhs = (o.shape for o in instr.operands)
    if a.rank < 2 or a.dimensions[-1] != a.dimensions[-2] or rhs.rank != a.rank or \
            rhs.dimensions[:-1] != a.dimensions[:-1] or rhs.element_type is not a.element_type:
        return None
    et, batch, n, k = a.element_type, a.dimensions[:-2], a.dimensions[-1], rhs.dimensions[-1]
    both = b.add("concatenate", Shape.array(et, batch + (n, n + k)), list(instr.operands),
                 dimensions=(a.rank - 1,))
    cc = b.add("custom-call", Shape.tuple([both.shape, Shape.array(PT.S32, batch + (n,)),
                                           Shape.array(PT.S32, batch)]), [both],
               custom_call_target=f"lapack_{_PREFIX[et]}getrf_ffi",
               api_version=RawAttr("API_VERSION_TYPED_FFI"))
    lu = _gte(b, cc, 0)
    keep = tuple(SliceDim(0, d, 1) for d in batch)
    u = b.add("slice", Shape.array(et, a.dimensions), [lu], slice=keep + (SliceDim(0, n, 1), SliceDim(0, n, 1)))
    y = b.add("slice", Shape.array(et, rhs.dimensions), [lu],
              slice=keep + (SliceDim(0, n, 1), SliceDim(n, n + k, 1)))
    x = b.add("triangular-solve", Shape.array(et, rhs.dimensions), [u, y], left_side=True,
              lower=False, unit_diagonal=False, transpose_a="NO_TRANSPOSE")
    info = _gte(b, cc, 2)
    return b.add("tuple", Shape.tuple([x.shape, info.shape]), [x, info])


def _lu(b, instr, attrs):
    a = instr.operands[0].shape
    if a.rank < 2 or a.dimensions[-1] != a.dimensions[-2]:
        return None
    et, batch, n = a.element_type, a.dimensions[:-2], a.dimensions[-1]
    pivots = Shape.array(PT.S32, batch + (n,))
    cc = b.add("custom-call", Shape.tuple([Shape.array(et, a.dimensions), pivots,
                                           Shape.array(PT.S32, batch)]), list(instr.operands),
               custom_call_target=f"lapack_{_PREFIX[et]}getrf_ffi",
               api_version=RawAttr("API_VERSION_TYPED_FFI"))
    lu, ipiv = _gte(b, cc, 0), _gte(b, cc, 1)
    one = b.add("broadcast", pivots, [b.constant(1, PT.S32)], dimensions=())
    zero_based = b.add("subtract", pivots, [ipiv, one])
    return b.add("tuple", Shape.tuple([lu.shape, pivots]), [lu, zero_based])


def _geqrf(b, instr, attrs):
    a = instr.operands[0].shape
    if a.rank < 2:
        return None
    et, batch, (m, n) = a.element_type, a.dimensions[:-2], a.dimensions[-2:]
    return b.add("custom-call", Shape.tuple([Shape.array(et, a.dimensions),
                                             Shape.array(et, batch + (min(m, n),))]),
                 list(instr.operands), custom_call_target=f"lapack_{_PREFIX[et]}geqrf_ffi",
                 api_version=RawAttr("API_VERSION_TYPED_FFI"))


def _householder_product(b, instr, attrs):
    a, tau = (o.shape for o in instr.operands)
    if a.rank < 2 or tau.rank != a.rank - 1 or tau.dimensions[:-1] != a.dimensions[:-2] or \
            tau.element_type is not a.element_type or tau.dimensions[-1] > a.dimensions[-1]:
        return None
    return b.add("custom-call", Shape.array(a.element_type, a.dimensions), list(instr.operands),
                 custom_call_target=f"lapack_{_PREFIX[a.element_type]}orgqr_ffi",
                 api_version=RawAttr("API_VERSION_TYPED_FFI"))


_REWRITES = {"xla.eigh": _eigh, "xla.svd": _svd, "xla.solve": _solve, "xla.lu": _lu,
             "xla.geqrf": _geqrf, "xla.householder_product": _householder_product}


_OPERANDS = {"xla.solve": 2, "xla.householder_product": 2}


class LinalgCompositeRewriter(HloPass):
    name = "linalg-composite-rewriter"

    def run(self, module):
        replaced = []
        for comp in module.computations:
            for instr in list(comp.instructions):
                found = _composite(instr)
                rewrite = _REWRITES.get(found[0]) if found else None
                if rewrite is None or not all(
                        o.shape.is_array and o.shape.element_type in _PREFIX and 0 not in o.shape.dimensions
                        for o in instr.operands) or len(instr.operands) != _OPERANDS.get(found[0], 1):
                    continue
                new = rewrite(Emitter(module, comp, instr), instr, found[1])
                if new is None:
                    continue
                if new.shape.to_text(False) != instr.shape.to_text(False):
                    # Not the results the name promises (a module written
                    # elsewhere): its decomposition defines it, and stays.
                    remove_unused(comp, new)
                    continue
                replaced.append(instr.attr("to_apply"))
                comp.replace_instruction(instr, new)
        if replaced:
            remove_unreferenced(module, replaced)
        return bool(replaced)
