"""The module header's ``entry_computation_layout``, read as shapes (kept
apart from the IR: reading it needs the parser, which builds the IR)."""
from xla.hlo.parser import parse_shape


def entry_computation_layout(module):
    """(parameter shapes, result shape) from the header's
    ``entry_computation_layout={(p0, p1)->r}``, or None without one.

    Raises ValueError (or HloParseError) if the text is malformed.
    """
    value = module.header_attrs.get("entry_computation_layout")
    if value is None:
        return None
    text = getattr(value, "text", str(value)).strip()
    cached = _last.get(text)
    if cached is None:
        cached = _parse(text)
        _last.clear()
        _last[text] = cached
    params, result = cached
    return list(params), result


# The last text read and its shapes (immutable): the verifier and layout
# assignment both read the header of the module being compiled, which for a
# training step lists thousands of parameters.
_last = {}


def _parse(text):
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1].strip()
    depth = 0
    for i, ch in enumerate(text):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif depth == 0 and text.startswith("->", i):
            params = parse_shape(text[:i].strip())
            result = parse_shape(text[i + 2:].strip())
            return tuple(params.tuple_shapes) if params.is_tuple else (params,), result
    raise ValueError(f"entry_computation_layout {text!r} is not of the form {{(params)->result}}")
