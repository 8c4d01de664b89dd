"""ReshapeToBitcast (``reshape-to-bitcast``): a reshape that moves no byte
becomes a ``bitcast``, which buffer assignment gives its operand's buffer
(XLA's layout-sensitive algebraic simplifier does the same, by its
``ReshapeIsBitcast`` test).

A reshape moves no byte when its operand and result have the same element
type and both are row-major (layouts major-to-minor in dimension order, or
no layout): the elements are then in the same order in memory, only their
dimensions are counted differently. Other reshapes (a layout that changes
the order, a change of element type, tuples, dynamic shapes) are left
alone. Run after layout assignment, where layouts are final.
"""
from xla.hlo.shape import Layout
from xla.service.pass_utils import OpExpanderPass


def moves_no_byte(instr):
    """Whether ``instr`` is a reshape this pass makes a bitcast."""
    if instr.opcode != "reshape" or not instr.shape.is_array or len(instr.operands) != 1:
        return False
    x = instr.operands[0]
    return (x.shape.is_array and not x.shape.is_dynamic and not instr.shape.is_dynamic
            and x.shape.element_type is instr.shape.element_type
            and x.shape.is_row_major() and instr.shape.is_row_major())


class ReshapeToBitcast(OpExpanderPass):
    name = "reshape-to-bitcast"

    def matches(self, instr):
        return moves_no_byte(instr)

    def expand(self, b, instr):
        shape = instr.shape
        if shape.layout is None:
            shape = shape.with_layout(Layout.row_major(shape.rank))
        return b.add("bitcast", shape, list(instr.operands))
