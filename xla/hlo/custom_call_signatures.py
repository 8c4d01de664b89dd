"""The operand and result signatures of the custom-call targets the backends
implement, checked by the verifier before any backend sees a module (a
custom-call's shapes are whatever its text declares: a TopK declaring k
larger than its row, or a LAPACK result too small for its operand, would
otherwise reach code that trusts them).

``SIGNATURES[target](instr)`` returns what is wrong, or None. Targets not
listed are unchecked here (a backend that does not implement one rejects it
by name).
"""
from xla.hlo.types import PrimitiveType as PT

_LAPACK_TYPES = {"s": PT.F32, "d": PT.F64, "c": PT.C64, "z": PT.C128}


def _leaves(shape):
    return list(shape.tuple_shapes) if shape.is_tuple else [shape]


def _text(shape):
    return shape.to_text(False)


def _topk(instr):
    if len(instr.operands) != 1:
        return f"takes one operand, has {len(instr.operands)}"
    x = instr.operands[0].shape
    if not x.is_array or x.rank < 1:
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


def _lapack_element_type(target):
    return _LAPACK_TYPES.get(target[len("lapack_")])


def _square_batch(shape, what):
    if not shape.is_array or shape.rank < 2 or shape.dimensions[-1] != shape.dimensions[-2]:
        return f"{what} must be a batch of square matrices, is {_text(shape)}"
    return None


def _potrf(instr):
    et = _lapack_element_type(instr.attr("custom_call_target"))
    if len(instr.operands) != 1:
        return f"takes one operand (the matrix), has {len(instr.operands)}"
    a = instr.operands[0].shape
    problem = _square_batch(a, "the operand")
    if problem:
        return problem
    if a.element_type is not et:
        return f"the operand must be {et.text}, is {a.element_type.text}"
    results = _leaves(instr.shape)
    if results[0].dimensions != a.dimensions or results[0].element_type is not et:
        return f"the factor must have the operand's shape {_text(a)}, is {_text(results[0])}"
    if len(results) > 1:
        info = results[1]
        if not info.is_array or info.element_type is not PT.S32 or \
                info.num_elements() != max(1, a.num_elements() // max(1, a.dimensions[-1] ** 2)):
            return f"info must be s32 with one entry per matrix, is {_text(info)}"
    return None


def _trsm(instr):
    et = _lapack_element_type(instr.attr("custom_call_target"))
    if len(instr.operands) not in (2, 3):
        return f"takes (a, b) or (a, b, alpha), has {len(instr.operands)} operands"
    a, b = instr.operands[0].shape, instr.operands[1].shape
    problem = _square_batch(a, "a")
    if problem:
        return problem
    if not b.is_array or b.rank != a.rank or b.dimensions[:-2] != a.dimensions[:-2]:
        return f"b must be a batch of matrices like a's, is {_text(b)} for a {_text(a)}"
    n = a.dimensions[-1]
    if n not in (b.dimensions[-2], b.dimensions[-1]):
        return f"a {_text(a)} does not fit b {_text(b)} on either side"
    if a.element_type is not et or b.element_type is not et:
        return f"a and b must be {et.text}, are {a.element_type.text} and {b.element_type.text}"
    out = _leaves(instr.shape)[0]
    if out.dimensions != b.dimensions or out.element_type is not et:
        return f"the result must have b's shape {_text(b)}, is {_text(out)}"
    return None


SIGNATURES = {"TopK": _topk, "__cpu$TopK": _topk}
for _t in "sdcz":
    SIGNATURES[f"lapack_{_t}potrf_ffi"] = _potrf
    SIGNATURES[f"lapack_{_t}trsm_ffi"] = _trsm


def check(instr):
    """What is wrong with custom-call ``instr``'s signature, or None."""
    checker = SIGNATURES.get(instr.attr("custom_call_target"))
    return None if checker is None else checker(instr)
