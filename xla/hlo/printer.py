"""Printer of XLA's HLO text format; the inverse of ``xla.hlo.parser``.

Style. ``HloModule.print_options`` (filled in by the parser) says how the
source was written, so that ``module_to_text(parse_hlo_module(text))``
reproduces XLA's own text:

==================  =========================================================
``percent``         names printed as ``%name`` (XLA dumps) or ``name`` (JAX)
``operand_shapes``  operands printed as ``f32[4]{0} %x`` rather than ``%x``
``signature``       computation headers ``%c (p: f32[4]) -> f32[4] {``
                    rather than ``c {``
``signature_layouts``  layouts printed in those signatures
``closing_comment``    ``} // name`` after each computation (JAX)
``index_comments``  ``/*index=5*/`` before every fifth tuple element
``operand_index_comments``  the same in operand lists
``trailing``        the text after the last computation
``attrs_before_body``  computations whose attributes come before ``{``
==================  =========================================================

A module built in code has no options and prints in the style of recent
XLA's ``HloModule::ToString()``: ``%`` names, bare operands
(``add(%x, %y)``), signatures without layouts, ``/*index=N*/`` comments in
tuple shapes and long operand lists.

Literals print as XLA prints them: rank 1 ``{1, 2}``, higher ranks
``{ { 1, 2 }, { 3, 4 } }`` (``/*iN=k*/`` markers above rank 3), floats in
C ``%g`` form with the fewest digits that round-trip in the element type
(``0.1``, ``1e-05``, ``3.14159274``, ``-inf``, ``nan``), pred scalars
``true``/``false`` and pred array elements ``0``/``1``; an elided constant
(literal None) prints ``{...}``.
"""
import math

import numpy as np

from xla.hlo.attributes import RawAttr, kind_of
from xla.hlo.types import PrimitiveType

__all__ = ["module_to_text", "computation_to_text", "instruction_to_text", "literal_to_text",
           "shape_to_text", "DEFAULT_PRINT_OPTIONS"]

DEFAULT_PRINT_OPTIONS = {
    "percent": True,
    "operand_shapes": False,
    "signature": True,
    "signature_layouts": False,
    "closing_comment": False,
    "index_comments": True,
    "operand_index_comments": True,
    "trailing": "\n\n",
}


def _options(obj):
    """The print options of the module that holds ``obj`` (merged with defaults)."""
    module = obj
    for _ in range(3):
        if module is None or hasattr(module, "print_options"):
            break
        module = getattr(module, "parent", None)
    opts = dict(DEFAULT_PRINT_OPTIONS)
    if module is not None:
        opts.update(getattr(module, "print_options", None) or {})
    return opts


# ----- shapes ------------------------------------------------------------------
def shape_to_text(shape, print_layout=True, index_comments=True):
    """A shape as XLA prints it (tuples get ``/*index=N*/`` every fifth element)."""
    if shape.is_tuple:
        parts = []
        for i, sub in enumerate(shape.tuple_shapes):
            text = shape_to_text(sub, print_layout, index_comments)
            if index_comments and i and i % 5 == 0:
                text = f"/*index={i}*/" + text
            parts.append(text)
        return "(" + ", ".join(parts) + ")"
    return shape.to_text(print_layout)


# ----- literals ------------------------------------------------------------------
_FLOAT_DIGITS = {}


def _float_digits(et):
    """(short, long) significant digits for %g, as XLA's round-trip printing uses."""
    if et not in _FLOAT_DIGITS:
        if et is PrimitiveType.F32:
            digits = (6, 9)
        elif et is PrimitiveType.F64:
            digits = (15, 17)
        else:
            import ml_dtypes
            nmant = ml_dtypes.finfo(et.dtype).nmant
            d = math.ceil(1 + (nmant + 1) * math.log10(2))
            digits = (d, d)
        _FLOAT_DIGITS[et] = digits
    return _FLOAT_DIGITS[et]


def format_float(value, et):
    """One floating-point value of element type ``et`` as XLA prints it."""
    x = float(value)
    if x != x:
        return "-nan" if math.copysign(1.0, x) < 0 else "nan"
    if math.isinf(x):
        return "-inf" if x < 0 else "inf"
    short, long_ = _float_digits(et)
    text = "%.*g" % (short, x)
    if short != long_:
        dtype = et.dtype
        if dtype.type(float(text)) != dtype.type(x):
            text = "%.*g" % (long_, x)
    return text


def _format_floats(values, et):
    """format_float over a float64 array of values of type ``et``, vectorized."""
    short, long_ = _float_digits(et)
    values64 = values.tolist()
    texts = ["%.*g" % (short, x) for x in values64]
    if not texts:
        return texts
    finite = np.isfinite(values)
    if short != long_:
        with np.errstate(invalid="ignore", over="ignore"):
            back = np.array(texts, dtype=np.float64).astype(et.dtype)
            bad = (back != values.astype(et.dtype)) & finite
        for k in np.flatnonzero(bad).tolist():
            texts[k] = "%.*g" % (long_, values64[k])
    for k in np.flatnonzero(~finite).tolist():
        texts[k] = format_float(values64[k], et)
    return texts


def _scalar_formatter(et, in_array):
    if et.is_pred:
        if in_array:
            return lambda v: "1" if v else "0"
        return lambda v: "true" if v else "false"
    if et.is_integer:
        return lambda v: str(int(v))
    if et.is_complex:
        comp = et.complex_component_type
        return lambda v: f"({format_float(v.real, comp)}, {format_float(v.imag, comp)})"
    if et.is_float:
        return lambda v: format_float(v, et)
    raise ValueError(f"cannot print a literal of element type {et.text}")


def literal_to_text(value, shape):
    """The text of a literal of ``shape`` (the inside of ``constant(...)``)."""
    if shape.is_tuple:
        if value is None:
            return "{...}"
        parts = [literal_to_text(v, s) for v, s in zip(value, shape.tuple_shapes)]
        return "( " + ", ".join(parts) + " )" if parts else "()"
    if value is None:
        return "{...}"
    et = shape.element_type
    arr = np.asarray(value)
    if arr.dtype != et.dtype:
        arr = arr.astype(et.dtype)
    rank = len(shape.dimensions)
    if et.is_float:  # exact in float64, and tolist() then yields Python floats
        arr = arr.astype(np.float64)
    if rank == 0:
        return _scalar_formatter(et, False)(arr.reshape(()).item())
    if et.is_float:
        flat = _format_floats(arr.reshape(-1), et)
    else:
        fmt = _scalar_formatter(et, True)
        flat = [fmt(v) for v in arr.reshape(-1).tolist()]
    if rank == 1:
        return "{" + ", ".join(flat) + "}"
    return _nested_text(flat, shape.dimensions, 0, [], rank)


def _nested_text(flat, dims, start, indices, rank):
    depth = len(indices)
    n = dims[depth]
    if depth == rank - 1:
        items = flat[start:start + n]
        if n <= 1:
            return "{" + "".join(items) + "}"
        return "{ " + ", ".join(items) + " }"
    stride = 1
    for d in dims[depth + 1:]:
        stride *= d
    opener = "{"
    if rank > 3 and depth > 0:
        opener += f" /*i{depth - 1}={indices[-1]}*/"
    children = [_nested_text(flat, dims, start + k * stride, indices + [k], rank) for k in range(n)]
    return opener + " " + ", ".join(children) + " }"  # no children: '{  }', as XLA prints


# ----- attributes ------------------------------------------------------------------
_C_ESCAPES = {10: "\\n", 13: "\\r", 9: "\\t", 34: '\\"', 39: "\\'", 92: "\\\\"}


def c_escape(text):
    """C escaping as XLA prints strings (the inverse of the parser's unescaping)."""
    if text.isascii() and text.isprintable() and '"' not in text and "'" not in text \
            and "\\" not in text:
        return text
    out = []
    for b in text.encode("utf-8", errors="surrogateescape"):
        if b in _C_ESCAPES:
            out.append(_C_ESCAPES[b])
        elif b < 0x20 or b >= 0x7F:
            out.append("\\%03o" % b)
        else:
            out.append(chr(b))
    return "".join(out)


def _name_text(obj, percent):
    name = obj if isinstance(obj, str) else obj.name
    return ("%" + name) if percent else name


def attr_to_text(name, value, percent=True):
    """The text after ``name=`` for attribute ``name`` with typed ``value``."""
    if isinstance(value, RawAttr):
        return value.text
    kind = kind_of(name)
    if kind == "dims":
        return "{" + ",".join(str(int(d)) for d in value) + "}"
    if kind == "bool" or isinstance(value, bool):
        return "true" if value else "false"
    if kind == "int":
        return str(int(value))
    if kind == "enum":
        return str(value)
    if kind == "string":
        return '"' + c_escape(str(value)) + '"'
    if kind == "slice":
        strided = any(d.stride != 1 for d in value)
        parts = [f"[{d.start}:{d.limit}:{d.stride}]" if strided else f"[{d.start}:{d.limit}]"
                 for d in value]
        return "{" + ", ".join(parts) + "}"
    if kind == "padding":
        interior = any(d.interior != 0 for d in value)
        return "x".join(f"{d.low}_{d.high}_{d.interior}" if interior else f"{d.low}_{d.high}"
                        for d in value)
    if kind in ("window", "dim_labels"):
        return value.to_text()
    if kind == "computation":
        return _name_text(value, percent)
    if kind in ("computations", "instructions"):
        return "{" + ", ".join(_name_text(v, percent) for v in value) + "}"
    # An unknown name with a typed value (set by a pass): print it plainly.
    if hasattr(value, "to_text"):
        return value.to_text()
    if isinstance(value, (tuple, list)):
        return "{" + ",".join(str(v) for v in value) + "}"
    return str(value)


# ----- instructions, computations, modules ----------------------------------------------
def instruction_to_text(instr, options=None):
    """``%name = SHAPE opcode(operands), attrs`` (without ``ROOT``)."""
    opts = options if options is not None else _options(instr)
    percent = opts["percent"]
    idx = opts["index_comments"]
    op_idx = opts["operand_index_comments"]
    if instr.opcode == "parameter":
        inside = str(instr.parameter_number)
    elif instr.opcode == "constant":
        inside = literal_to_text(instr.literal, instr.shape)
    else:
        pieces = []
        with_shapes = opts["operand_shapes"]
        for i, op in enumerate(instr.operands):
            text = _name_text(op, percent)
            if with_shapes and not isinstance(op, str):
                text = shape_to_text(op.shape, True, idx) + " " + text
            if op_idx and i and i % 5 == 0:
                text = f"/*index={i}*/" + text
            pieces.append(text)
        inside = ", ".join(pieces)
    parts = [_name_text(instr, percent), " = ", shape_to_text(instr.shape, True, idx), " ",
             instr.opcode, "(", inside, ")"]
    for name, value in instr.attrs.items():
        if name == "metadata" and opts.get("no_metadata"):
            continue
        parts.append(f", {name}={attr_to_text(name, value, percent)}")
    return "".join(parts)


def computation_to_text(comp, options=None):
    opts = options if options is not None else _options(comp)
    percent = opts["percent"]
    idx = opts["index_comments"]
    head = ("ENTRY " if comp.is_entry else "") + _name_text(comp, percent)
    if opts["signature"]:
        layouts = opts["signature_layouts"]
        params = ", ".join(f"{p.name}: {shape_to_text(p.shape, layouts, idx)}" for p in comp.parameters)
        result = shape_to_text(comp.root_instruction.shape, layouts, idx) \
            if comp.root_instruction is not None else "()"
        head += f" ({params}) -> {result}"
    attrs = "".join(f", {k}={attr_to_text(k, v, percent)}" for k, v in comp.extra_attrs.items())
    before = comp.name in opts.get("attrs_before_body", ())
    lines = [head + (attrs if before else "") + " {"]
    root = comp.root_instruction
    for instr in comp.instructions:
        prefix = "  ROOT " if instr is root else "  "
        lines.append(prefix + instruction_to_text(instr, opts))
    tail = "}" + ("" if before else attrs)
    if opts["closing_comment"]:
        tail += " // " + comp.name
    lines.append(tail)
    return "\n".join(lines)


def _header_value(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, RawAttr):
        return value.text
    return str(value)


def module_to_text(module, metadata=True):
    """The module's text; ``metadata=False`` leaves out every instruction's
    ``metadata`` (source locations: a cache key must not depend on them)."""
    opts = _options(module)
    opts["no_metadata"] = not metadata
    out = ["HloModule ", module.name]
    for name, value in module.header_attrs.items():
        out.append(f", {name}={_header_value(value)}")
    out.append("\n\n")
    if module.extra_sections:
        for name, lines in module.extra_sections:
            out.append(name + "\n")
            out.extend(line + "\n" for line in lines)
            out.append("\n")
        out.append("\n")
    out.append("\n\n".join(computation_to_text(c, opts) for c in module.computations))
    out.append(opts["trailing"])
    return "".join(out)
