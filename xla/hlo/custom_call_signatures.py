"""The operand and result signatures of the custom-call targets the backends
implement, declared once and checked by the verifier before any backend sees
a module. A custom-call's shapes are whatever its text declares: a TopK
declaring k larger than its row, or a LAPACK result too small for its
operand, would otherwise reach code that trusts them (the CPU backend's
kernels write where the declared shapes say).

``SIGNATURES[target](instr)`` returns what is wrong, or None. Every target a
backend implements has an entry (tests/test_custom_call_signatures.py checks
the interpreter's and the CPU backend's tables against this one); targets
not listed are unchecked here, and a backend that does not implement one
rejects it by name.

The LAPACK targets are jaxlib's CPU kernels, ``lapack_<t><routine>_ffi``
(and the older names without ``_ffi``, which the backends treat alike), t in
s/d/c/z for f32/f64/c64/c128, batched over leading dimensions:

==================  ====================  ======================================
routine             operands              results
==================  ====================  ======================================
potrf               a[..., n, n]          a[..., n, n] or (a, info s32[...])
trsm                a[..., n, n], b,      b's shape (or a 1-tuple of it); b is
                    [alpha: scalar]       [..., n, k] (side L) or [..., k, n] (R)
getrf               a[..., m, n]          (a, ipiv s32[..., min(m,n)], [info s32[...]])
geqrf               a[..., m, n]          (a, tau[..., min(m,n)])
orgqr, ungqr        a[..., m, n],         a's shape (or a 1-tuple of it), k <= n
                    tau[..., k]
syevd, heevd        a[..., n, n]          (v[..., n, n], w real[..., n], [info s32[...]])
gesdd               a[..., m, n]          (a, s real[..., k], u[..., m, ku], vt[..., kv, n],
                                          info s32[...]); k = min(m, n), ku = m and
                                          kv = n for mode 'A', else k (either for 'N')
geev                a[..., n, n]          s/d: (wr real[..., n], wi real[..., n], vl, vr,
                                          info s32[...]); c/z: (w[..., n], vl, vr,
                                          info s32[...]); vl and vr complex[..., n, n]
==================  ====================  ======================================

Their attributes come in ``backend_config`` as an MLIR dictionary
(``{uplo = 76 : ui8}``; character codes); those the backends read must be
one of the letters they understand.
"""
import re

from xla.hlo.types import PrimitiveType as PT

_LAPACK_TYPES = {"s": PT.F32, "d": PT.F64, "c": PT.C64, "z": PT.C128}
_REAL_PART = {PT.F32: PT.F32, PT.F64: PT.F64, PT.C64: PT.F32, PT.C128: PT.F64}

# backend_config entry -> the letters the backends understand.
_LAPACK_LETTERS = {"uplo": "LU", "side": "LR", "trans_x": "NTC", "diag": "NU",
                   "compute_left": "NV", "compute_right": "NV"}
_COMPLEX = {PT.F32: PT.C64, PT.F64: PT.C128, PT.C64: PT.C64, PT.C128: PT.C128}


def backend_config_attrs(instr):
    """The integer (and character) entries of an FFI backend_config dictionary."""
    raw = instr.attr("backend_config")
    text = getattr(raw, "text", raw) or ""
    if not isinstance(text, str):
        return {}
    out = {}
    for name, value in re.findall(r"(\w+)\s*=\s*(-?\d+)", text):
        out[name] = int(value)
    for name, value in re.findall(r"(\w+)\s*=\s*\"?'?([A-Za-z])'?\"?\s*[,}]", text):
        out.setdefault(name, ord(value))
    return out


def lapack_letter(instr, name, default):
    """A LAPACK character attribute from ``backend_config`` (``default`` when absent)."""
    value = backend_config_attrs(instr).get(name)
    if value is None:
        return default
    return chr(value) if 0 <= value < 0x110000 else "?"


def _leaves(shape):
    return list(shape.tuple_shapes) if shape.is_tuple else [shape]


def _text(shape):
    return shape.to_text(False)


def _operands(instr, counts, what):
    if len(instr.operands) not in counts:
        return f"takes {what}, has {len(instr.operands)} operand(s)"
    for i, o in enumerate(instr.operands):
        if not o.shape.is_array:
            return f"operand {i} must be an array, is {_text(o.shape)}"
    return None


def _results(instr, counts, what):
    """The result leaves when their number is one of ``counts`` (and none
    is itself a tuple), else a message."""
    leaves = _leaves(instr.shape)
    if len(leaves) not in counts or any(not s.is_array for s in leaves):
        return None, f"the result must be {what}, is {_text(instr.shape)}"
    return leaves, None


def _array(shape, dims, element_type, what):
    if tuple(shape.dimensions) != tuple(dims) or shape.element_type is not element_type:
        want = f"{element_type.text}[{','.join(map(str, dims))}]"
        return f"{what} must be {want}, is {_text(shape)}"
    return None


# ----------------------------------------------------------------------------
# TopK (XLA's TopkRewriter): (values, s32 indices) of the k largest along
# the last dimension, k from the result shape.
# ----------------------------------------------------------------------------

def _topk(instr):
    problem = _operands(instr, (1,), "one operand")
    if problem:
        return problem
    x = instr.operands[0].shape
    if x.rank < 1:
        return f"the operand must be an array of rank >= 1, is {_text(x)}"
    out = instr.shape
    if not out.is_tuple or len(out.tuple_shapes) != 2:
        return f"the result must be (values, indices), is {_text(out)}"
    values, indices = out.tuple_shapes
    if not (values.is_array and indices.is_array):
        return f"the result must be (values, indices) arrays, is {_text(out)}"
    if values.element_type is not x.element_type:
        return (f"values must have the operand's element type {x.element_type.text}, "
                f"have {values.element_type.text}")
    if indices.element_type is not PT.S32:
        return f"indices must be s32, are {indices.element_type.text}"
    if values.dimensions != indices.dimensions:
        return f"values {_text(values)} and indices {_text(indices)} differ in shape"
    if values.rank != x.rank or values.dimensions[:-1] != x.dimensions[:-1]:
        return f"the results must have the operand's leading dimensions: {_text(x)} -> {_text(values)}"
    k = values.dimensions[-1]
    if k > x.dimensions[-1]:
        return f"k = {k} is larger than the operand's last dimension {x.dimensions[-1]}"
    return None


# ----------------------------------------------------------------------------
# Annotations that are the identity on one device.
# ----------------------------------------------------------------------------

def _identity(instr):
    problem = _operands(instr, (1,), "one operand")
    if problem:
        return problem
    x = instr.operands[0].shape
    out = instr.shape
    if not out.is_array or out.dimensions != x.dimensions or out.element_type is not x.element_type:
        return f"the result must have the operand's shape {_text(x)}, is {_text(out)}"
    return None


# ----------------------------------------------------------------------------
# LAPACK.
# ----------------------------------------------------------------------------

def _lapack_type(instr):
    return _LAPACK_TYPES[instr.attr("custom_call_target")[len("lapack_")]]


def _letters(instr):
    attrs = backend_config_attrs(instr)
    for name, allowed in _LAPACK_LETTERS.items():
        if name in attrs:
            value = attrs[name]
            letter = chr(value) if 0 <= value < 0x110000 else None
            if letter is None or letter not in allowed:
                return f"backend_config {name} = {value} is not one of " + \
                       ", ".join(f"{ord(c)} ('{c}')" for c in allowed)
    return None


def _matrices(shape, what, et, square=False):
    if shape.rank < 2:
        return f"{what} must be a batch of matrices (rank >= 2), is {_text(shape)}"
    if square and shape.dimensions[-1] != shape.dimensions[-2]:
        return f"{what} must be a batch of square matrices, is {_text(shape)}"
    if shape.element_type is not et:
        return f"{what} must be {et.text}, is {shape.element_type.text}"
    return None


def _matrix_operand(instr, et, square=False):
    """The shape of ``instr``'s one operand, a batch of ``et`` matrices
    (``square``: square ones), and None; or None and a message."""
    problem = _operands(instr, (1,), "one operand (the matrix)")
    if problem:
        return None, problem
    a = instr.operands[0].shape
    return a, _matrices(a, "the operand", et, square)


def _lapack(check):
    """``check(instr, et)`` after the checks every LAPACK target shares."""
    def checker(instr):
        return _letters(instr) or check(instr, _lapack_type(instr))
    return checker


@_lapack
def _potrf(instr, et):
    a, problem = _matrix_operand(instr, et, square=True)
    if problem:
        return problem
    results, problem = _results(instr, (1, 2), "the factor, or (factor, info)")
    if problem:
        return problem
    return (_array(results[0], a.dimensions, et, "the factor") or
            (_array(results[1], a.dimensions[:-2], PT.S32, "info") if len(results) > 1 else None))


@_lapack
def _trsm(instr, et):
    problem = _operands(instr, (2, 3), "(a, b) or (a, b, alpha)")
    if problem:
        return problem
    a, b = instr.operands[0].shape, instr.operands[1].shape
    problem = _matrices(a, "a", et, square=True) or _matrices(b, "b", et)
    if problem:
        return problem
    if b.rank != a.rank or b.dimensions[:-2] != a.dimensions[:-2]:
        return f"b must be a batch of matrices like a's, is {_text(b)} for a {_text(a)}"
    left = lapack_letter(instr, "side", "L") == "L"
    n = a.dimensions[-1]
    if (b.dimensions[-2] if left else b.dimensions[-1]) != n:
        side = "rows" if left else "columns"
        return f"b {_text(b)} must have a's {n} {side} (side {'L' if left else 'R'})"
    if len(instr.operands) == 3:
        problem = _array(instr.operands[2].shape, (), et, "alpha")
        if problem:
            return problem
    results, problem = _results(instr, (1,), "b's shape")
    if problem:
        return problem
    return _array(results[0], b.dimensions, et, "the result")


@_lapack
def _getrf(instr, et):
    a, problem = _matrix_operand(instr, et)
    if problem:
        return problem
    results, problem = _results(instr, (2, 3), "(lu, ipiv) or (lu, ipiv, info)")
    if problem:
        return problem
    batch, (m, n) = a.dimensions[:-2], a.dimensions[-2:]
    return (_array(results[0], a.dimensions, et, "lu") or
            _array(results[1], batch + (min(m, n),), PT.S32, "ipiv") or
            (_array(results[2], batch, PT.S32, "info") if len(results) > 2 else None))


@_lapack
def _geqrf(instr, et):
    a, problem = _matrix_operand(instr, et)
    if problem:
        return problem
    results, problem = _results(instr, (2,), "(a, tau)")
    if problem:
        return problem
    m, n = a.dimensions[-2:]
    return (_array(results[0], a.dimensions, et, "a") or
            _array(results[1], a.dimensions[:-2] + (min(m, n),), et, "tau"))


@_lapack
def _orgqr(instr, et):
    problem = _operands(instr, (2,), "(a, tau)")
    if problem:
        return problem
    a, tau = instr.operands[0].shape, instr.operands[1].shape
    problem = _matrices(a, "a", et)
    if problem:
        return problem
    if tau.rank != a.rank - 1 or tau.dimensions[:-1] != a.dimensions[:-2] or \
            tau.element_type is not et or tau.dimensions[-1] > a.dimensions[-1]:
        return f"tau must be {et.text}[batch..., k] with k <= {a.dimensions[-1]}, is {_text(tau)}"
    results, problem = _results(instr, (1,), "a's shape")
    if problem:
        return problem
    return _array(results[0], a.dimensions, et, "q")


@_lapack
def _syevd(instr, et):
    a, problem = _matrix_operand(instr, et, square=True)
    if problem:
        return problem
    if lapack_letter(instr, "mode", "V") not in "VN":
        return f"backend_config mode = {ord(lapack_letter(instr, 'mode', 'V'))} is not one of " \
               "86 ('V'), 78 ('N')"
    results, problem = _results(instr, (2, 3), "(v, w) or (v, w, info)")
    if problem:
        return problem
    return (_array(results[0], a.dimensions, et, "v") or
            _array(results[1], a.dimensions[:-1], _REAL_PART[et], "w") or
            (_array(results[2], a.dimensions[:-2], PT.S32, "info") if len(results) > 2 else None))


@_lapack
def _gesdd(instr, et):
    a, problem = _matrix_operand(instr, et)
    if problem:
        return problem
    mode = lapack_letter(instr, "mode", "A")
    if mode not in "ASN":
        return f"backend_config mode = {ord(mode)} is not one of 65 ('A'), 83 ('S'), 78 ('N')"
    results, problem = _results(instr, (5,), "(a, s, u, vt, info)")
    if problem:
        return problem
    batch, (m, n) = a.dimensions[:-2], a.dimensions[-2:]
    k = min(m, n)
    full = results[2].dimensions[-1:] == (m,) and results[3].dimensions[-2:-1] == (n,)
    ku, kv = (m, n) if mode == "A" or (mode == "N" and full) else (k, k)
    return (_array(results[0], a.dimensions, et, "a") or
            _array(results[1], batch + (k,), _REAL_PART[et], "s") or
            _array(results[2], batch + (m, ku), et, "u") or
            _array(results[3], batch + (kv, n), et, "vt") or
            _array(results[4], batch, PT.S32, "info"))


@_lapack
def _geev(instr, et):
    a, problem = _matrix_operand(instr, et, square=True)
    if problem:
        return problem
    batch, n = a.dimensions[:-2], a.dimensions[-1]
    real = et in (PT.F32, PT.F64)
    results, problem = _results(instr, (5,) if real else (4,),
                                "(wr, wi, vl, vr, info)" if real else "(w, vl, vr, info)")
    if problem:
        return problem
    if real:
        problem = (_array(results[0], batch + (n,), et, "wr") or
                   _array(results[1], batch + (n,), et, "wi"))
    else:
        problem = _array(results[0], batch + (n,), et, "w")
    vl, vr, info = results[-3:]
    return (problem or _array(vl, a.dimensions, _COMPLEX[et], "vl") or
            _array(vr, a.dimensions, _COMPLEX[et], "vr") or _array(info, batch, PT.S32, "info"))


SIGNATURES = {"TopK": _topk, "__cpu$TopK": _topk}
for _name in ("Sharding", "SPMDFullToShardShape", "SPMDShardToFullShape", "MoveToHost",
              "MoveToDevice", "annotate_device_placement"):
    SIGNATURES[_name] = _identity
_ROUTINES = {"potrf": _potrf, "trsm": _trsm, "getrf": _getrf, "geqrf": _geqrf,
             "orgqr": _orgqr, "ungqr": _orgqr, "syevd": _syevd, "heevd": _syevd,
             "gesdd": _gesdd, "geev": _geev}
for _routine, _checker in _ROUTINES.items():
    for _t in "sdcz":
        for _suffix in ("_ffi", ""):
            SIGNATURES[f"lapack_{_t}{_routine}{_suffix}"] = _checker


def check(instr):
    """What is wrong with custom-call ``instr``'s signature, or None."""
    checker = SIGNATURES.get(instr.attr("custom_call_target"))
    return None if checker is None else checker(instr)
