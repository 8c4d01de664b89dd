"""BatchNormExpander (XLA's ``batchnorm_expander``): batch-norm-training,
batch-norm-inference and batch-norm-grad become the reduces and elementwise
ops they stand for, so every backend runs them. The formulas are those of
the interpreter's handlers (``xla/hlo/evaluator/ops_batch_norm.py``),
computed in the operand's element type: statistics over every dimension
but ``feature_index``, the biased variance (``sum((x - mean)^2) / N``), and
``1 / sqrt(var + epsilon)`` through ``rsqrt``.
"""
import math

import numpy as np

from xla.hlo.evaluator.ops_batch_norm import attribute
from xla.hlo.ir import HloComputation, HloInstruction
from xla.hlo.shape import Shape
from xla.service.hlo_pass import HloPass

OPCODES = ("batch-norm-training", "batch-norm-inference", "batch-norm-grad")


class _Builder:
    """New instructions just before ``anchor``, in the operand's type."""

    def __init__(self, module, comp, anchor):
        self.module, self.comp, self.anchor = module, comp, anchor
        x = anchor.operands[0].shape
        self.et = x.element_type
        self.dims = tuple(x.dimensions)
        self.f = attribute(anchor, "feature_index", int, 0)
        self.axes = tuple(d for d in range(len(self.dims)) if d != self.f)
        self.n = math.prod(self.dims[d] for d in self.axes)

    def add(self, opcode, dims, operands, attrs=None, literal=None):
        instr = HloInstruction(opcode, Shape.array(self.et, dims), list(operands),
                               name=self.module.unique_name(opcode), attrs=attrs, literal=literal)
        self.comp.insert_before(self.anchor, instr)
        return instr

    def scalar(self, value):
        return self.add("constant", (), [], literal=np.asarray(value, dtype=self.et.dtype))

    def full(self, value, dims):
        return self.add("broadcast", dims, [self.scalar(value)], {"dimensions": ()})

    def per_feature(self, v):
        """A [C] vector broadcast along the feature dimension of x."""
        return self.add("broadcast", self.dims, [v], {"dimensions": (self.f,)})

    def op(self, opcode, a, b):
        return self.add(opcode, a.shape.dimensions, [a, b])

    def feature_sum(self, v):
        adder = _adder(self.module, self.et)
        return self.add("reduce", (self.dims[self.f],), [v, self.scalar(0)],
                        {"dimensions": self.axes, "to_apply": adder})

    def inv_std(self, var, eps):
        c = (self.dims[self.f],)
        return self.add("rsqrt", c, [self.op("add", var, self.full(eps, c))])


def _adder(module, et):
    name = f"batchnorm_add.{et.text}"
    for comp in module.computations:
        if comp.name == name:
            return comp
    a = HloInstruction("parameter", Shape.scalar(et), name=f"{name}.a", parameter_number=0)
    b = HloInstruction("parameter", Shape.scalar(et), name=f"{name}.b", parameter_number=1)
    r = HloInstruction("add", Shape.scalar(et), [a, b], name=f"{name}.sum")
    comp = HloComputation(name, [a, b, r], root=r)
    module.add_computation(comp)
    module.computations = [comp] + [c for c in module.computations if c is not comp]  # callee first
    return comp


def _expand(module, comp, bn):
    g = _Builder(module, comp, bn)
    eps = attribute(bn, "epsilon", float, 0.0)
    c = (g.dims[g.f],)
    x = bn.operands[0]
    if bn.opcode == "batch-norm-inference":
        _, scale, offset, mean, var = bn.operands
    elif bn.opcode == "batch-norm-training":
        _, scale, offset = bn.operands
        mean = g.op("divide", g.feature_sum(x), g.full(g.n, c))
    else:
        _, scale, mean, var, dy = bn.operands
    centered = g.op("subtract", x, g.per_feature(mean))
    if bn.opcode == "batch-norm-training":
        var = g.op("divide", g.feature_sum(g.op("multiply", centered, centered)), g.full(g.n, c))
    inv = g.inv_std(var, eps)
    factor = g.per_feature(g.op("multiply", scale, inv))
    if bn.opcode != "batch-norm-grad":
        y = g.op("add", g.op("multiply", factor, centered), g.per_feature(offset))
        if bn.opcode == "batch-norm-inference":
            return y
        return HloInstruction("tuple", bn.shape, [y, mean, var], name=module.unique_name("tuple"))
    grad_offset = g.feature_sum(dy)
    sum_dy_c = g.feature_sum(g.op("multiply", dy, centered))
    grad_scale = g.op("multiply", sum_dy_c, inv)
    mean_dy = g.per_feature(g.op("divide", grad_offset, g.full(g.n, c)))
    var_eps = g.op("add", var, g.full(eps, c))
    coef = g.per_feature(g.op("divide", sum_dy_c, g.op("multiply", var_eps, g.full(g.n, c))))
    inner = g.op("subtract", g.op("subtract", dy, mean_dy), g.op("multiply", centered, coef))
    grad_x = g.op("multiply", factor, inner)
    return HloInstruction("tuple", bn.shape, [grad_x, grad_scale, grad_offset],
                          name=module.unique_name("tuple"))


class BatchNormExpander(HloPass):
    name = "batchnorm_expander"

    def run(self, module):
        changed = False
        for comp in list(module.computations):
            for bn in list(comp.instructions):
                if bn.opcode not in OPCODES or bn.shape.is_dynamic:
                    continue
                new = _expand(module, comp, bn)
                if new.parent is None:
                    comp.insert_before(bn, new)
                comp.replace_instruction(bn, new)
                changed = True
        return changed
