"""How many terms each output of a module accumulates: the scale of the
rounding error a correct backend may show, for ``replay_computation
--compare`` and snapshot checks.

A dot over K terms, a convolution over its window and input features, a
reduce over its reduced dimensions: each sums terms in an order a backend
chooses, and the difference between two correct orders grows with the number
of terms (about sqrt(K) rounding errors of the terms' size, which cancellation
can leave far above the result's own size). ``reduction_lengths(module)``
gives, per output leaf, the product of the accumulation lengths along the
longest chain of reductions that feeds it (1 for outputs no reduction feeds).
"""
import math


def _accumulated(instr):
    """Terms one element of ``instr`` sums (1 for an op that sums nothing)."""
    op = instr.opcode
    attrs = instr.attrs
    if op == "dot":
        lhs = instr.operands[0].shape
        return math.prod(lhs.dimensions[d] for d in attrs.get("lhs_contracting_dims", ()))
    if op == "convolution":
        window = attrs.get("window")
        size = math.prod(d.size for d in window.dimensions) if window is not None else 1
        dnums = attrs.get("dim_labels")
        kernel = instr.operands[1].shape
        features = (kernel.dimensions[dnums.kernel_input_feature_dimension]
                    if dnums is not None and kernel.rank else 1)
        return size * features
    if op == "reduce":
        operand = instr.operands[0].shape
        return math.prod(operand.dimensions[d] for d in attrs.get("dimensions", ()))
    if op == "reduce-window":
        window = attrs.get("window")
        return math.prod(d.size for d in window.dimensions) if window is not None else 1
    if op in ("all-reduce", "reduce-scatter"):
        return 1   # one term per participant: small, and backends agree on the order
    return 1


def _values(comp, memo):
    """Per instruction of ``comp`` (by id), its reduction length."""
    values = {}
    for instr in comp.post_order():
        upstream = max((values[id(o)] for o in instr.operands), default=1)
        inner = 1
        for callee in instr.called_computations:
            if id(callee) not in memo:
                memo[id(callee)] = _values(callee, memo)[id(callee.root_instruction)]
            inner = max(inner, memo[id(callee)])
        values[id(instr)] = upstream * inner * _accumulated(instr)
    return values


def reduction_lengths(module):
    """Per output leaf of ``module`` (tuple results flattened in order), the
    number of terms accumulated along its longest chain of reductions."""
    root = module.entry.root_instruction
    values = _values(module.entry, {})
    if root.opcode == "tuple" and all(not o.shape.is_tuple for o in root.operands):
        # Each element on its own: a loss gets its length, a copied parameter 1.
        return [values[id(o)] for o in root.operands]
    return [values[id(root)]] * max(len(root.shape.leaves()), 1)
