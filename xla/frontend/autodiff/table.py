"""The VJP rule table and the builder helpers rules use."""

import numpy as np

from xla.hlo.opcodes import OpcodeTable
from xla.frontend.builder import XlaOp
from xla.hlo.ir import HloInstruction


VJP_RULES = OpcodeTable("vjp")


def vjp_rule(*opcodes):
    def register(fn):
        for op in opcodes:
            VJP_RULES[op] = fn
        return fn
    return register


def is_float(shape):
    return shape.is_array and shape.element_type.kind in ("f", "c")


# ----- small builder helpers --------------------------------------------------------

class G:
    """Terse builder ops over XlaOps for the rules."""

    def __init__(self, b):
        self.b = b

    def op(self, instr):
        return XlaOp(self.b, instr)

    def const(self, like, value):
        c = self.b.constant(np.asarray(value, dtype=like.dtype))
        return self.b.broadcast_in_dim(c, like.dims, ()) if like.dims else c

    def zeros(self, shape):
        dtype = shape.element_type.dtype
        c = self.b.constant(np.zeros((), dtype))
        return self.b.broadcast_in_dim(c, shape.dimensions, ()) if shape.dimensions else c

    def add(self, x, y):
        return self.b.binary("add", x, y)

    def sub(self, x, y):
        return self.b.binary("subtract", x, y)

    def mul(self, x, y):
        return self.b.binary("multiply", x, y)

    def div(self, x, y):
        return self.b.binary("divide", x, y)

    def neg(self, x):
        return self.b.unary("negate", x)

    def u(self, opcode, x):
        return self.b.unary(opcode, x)

    def select(self, p, x, y):
        return self.b.select(p, x, y)

    def cmp(self, x, y, direction):
        return self.b.compare(x, y, direction)

    def sum_to(self, x, dims):
        """Sums ``x`` over ``dims``."""
        if not dims:
            return x
        et = x.element_type
        return self.b.reduce(x, self.b.constant(np.zeros((), et.dtype)),
                             self.b.scalar_computation("add", et), sorted(dims))


def inline(b, comp, operands):
    """Copies ``comp`` into builder ``b`` with its parameters replaced by
    ``operands`` (XlaOps); returns the XlaOp of its root."""
    mapping = {}
    for instr in comp.instructions:
        if instr.opcode == "parameter":
            mapping[id(instr)] = operands[instr.parameter_number].instr
            continue
        new = HloInstruction(instr.opcode, instr.shape, [mapping[id(o)] for o in instr.operands],
                             name=b._state.unique(f"{instr.opcode}.{next(b._state.counter)}"),
                             attrs={k: v for k, v in instr.attrs.items() if k != "control-predecessors"},
                             literal=instr.literal)
        b._instructions.append(new)
        mapping[id(instr)] = new
    return XlaOp(b, mapping[id(comp.root_instruction)])
