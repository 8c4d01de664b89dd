"""The backward pass: cotangents of inputs from cotangents of outputs."""

from xla.frontend.tracing import tracing_error
from xla.frontend.autodiff.table import VJP_RULES, G, is_float


# ----- the backward pass ------------------------------------------------------------

class _Cts:
    """Cotangents being accumulated, per instruction (lists for tuples)."""

    def __init__(self, g):
        self.g = g
        self.cts = {}

    def add(self, instr, ct, index=None):
        if ct is None:
            return
        key = id(instr)
        if instr.shape.is_tuple:
            slots = self.cts.setdefault(key, [None] * len(instr.shape.tuple_shapes))
            slots[index] = ct if slots[index] is None else self.g.add(slots[index], ct)
        else:
            old = self.cts.get(key)
            self.cts[key] = ct if old is None else self.g.add(old, ct)

    def get(self, instr):
        return self.cts.get(id(instr))


def _topo(outputs):
    order, seen = [], set()
    for out in outputs:
        stack = [(out, False)]
        while stack:
            instr, done = stack.pop()
            if done:
                order.append(instr)
                continue
            if id(instr) in seen:
                continue
            seen.add(id(instr))
            stack.append((instr, True))
            for o in reversed(instr.operands):
                if id(o) not in seen:
                    stack.append((o, False))
    return order


def backward_pass(b, inputs, outputs, cotangents):
    """Cotangents (XlaOps or None) of ``inputs`` (HloInstructions) given
    ``cotangents`` of ``outputs`` (HloInstructions), all in builder ``b``."""
    g = G(b)
    order = _topo(outputs)
    input_ids = {id(i) for i in inputs}
    depends = {}
    for instr in order:
        depends[id(instr)] = id(instr) in input_ids or any(depends.get(id(o), False)
                                                           for o in instr.operands)
    acc = _Cts(g)
    for out, ct in zip(outputs, cotangents):
        if ct is None:
            continue
        if out.shape.is_tuple:
            for i, c in enumerate(ct):
                acc.add(out, c, i)
        else:
            acc.add(out, ct)
    for instr in reversed(order):
        if id(instr) in input_ids or not depends[id(instr)]:
            continue
        ct = acc.get(instr)
        if ct is None:
            continue
        if instr.opcode == "get-tuple-element":
            acc.add(instr.operands[0], ct, instr.attr("index"))
            continue
        if instr.opcode == "tuple":
            for o, c in zip(instr.operands, ct):
                if c is not None and depends[id(o)]:
                    acc.add(o, c)
            continue
        if instr.shape.is_array and not is_float(instr.shape):
            continue
        rule = VJP_RULES.get(instr.opcode)
        if rule is None:
            raise tracing_error(f"xla.grad: no differentiation rule for HLO op {instr.opcode} "
                                f"({instr.name}); it is not differentiable here")
        operand_cts = rule(g, instr, ct)
        for o, c in zip(instr.operands, operand_cts):
            if c is None or not depends[id(o)]:
                continue
            if o.shape.is_tuple:
                for i, ci in enumerate(c):
                    if ci is not None:
                        acc.add(o, ci, i)
            elif is_float(o.shape):
                acc.add(o, c)
    return [acc.get(i) for i in inputs]
