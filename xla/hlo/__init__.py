"""The HLO IR: element types, shapes, instructions, computations, modules."""
from xla.hlo.types import PrimitiveType
from xla.hlo.shape import Layout, Shape
from xla.hlo.ir import HloComputation, HloInstruction, HloModule
