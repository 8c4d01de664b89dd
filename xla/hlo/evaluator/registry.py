"""The interpreter's opcode table: one row (a handler function) per opcode.

A handler has the signature ``handler(instr, operands, ctx) -> value``:

* ``instr`` is the HloInstruction being evaluated;
* ``operands`` is the list of the operands' values;
* ``ctx`` is the Evaluator, whose ``call(computation, args)`` evaluates a
  called computation (to_apply, body, ...) on argument values, and whose
  ``call_elementwise(computation, args)`` evaluates a scalar computation
  (a reducer or comparator) on arrays of the same shape, element by
  element, vectorized.

Values: an array is a NumPy array whose dtype is the instruction shape's
element type (``shape.dtype``; bf16 through ml_dtypes) and whose shape is
the instruction shape's dimensions (row-major logical order; layouts do not
change values); a tuple is a Python tuple of values; a token is ``TOKEN``.

Handlers register with ``@register("opcode", ...)``; adding an op is adding
one row, found by grepping the opcode name.
"""
from xla.hlo.opcodes import OpcodeTable

HANDLERS = OpcodeTable("evaluator")


class Token:
    """The value of a token-typed instruction (after-all, ...)."""

    def __repr__(self):
        return "TOKEN"


TOKEN = Token()


def register(*opcodes):
    return HANDLERS.register(*opcodes)
