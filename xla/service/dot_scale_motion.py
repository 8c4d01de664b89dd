"""DotScaleMotion (``dot-scale-motion``): a dot operand scaled by a scalar
is scaled after the dot instead, when the dot's result has fewer elements
than that operand, or its one user is an elementwise op (which the scale
then joins):

    dot(multiply(X, broadcast(s)), Y)  ->  multiply(dot(X, Y), broadcast(s))

(and the same for the rhs, and with the broadcast as the multiply's first
operand). NumPy programs write ``alpha * A @ x``, which is ``(alpha * A) @
x``: a pass over the whole matrix writing a scaled copy for the matrix
product to read, where scaling the product's result touches one vector
(gemver, gesummv: a 1000 x 1000 pass each; gemm's ``alpha * A @ B +
beta * C``: one kernel fewer, the scale joining the kernel that adds
``beta * C``).

Applies when ``s`` is a scalar (rank 0) broadcast with ``dimensions={}``,
the multiply has no other user, and the multiply, ``X``, ``s``, the other
operand and the dot all have one element type (no dot that widens or
converts, no pred). Real and complex floats and integers: for integers
the rewrite is exact (sums and products wrap the same modulo 2^n); for
floats it changes rounding as reassociating a sum does (each result is
scaled once instead of each product), within an ulp or so of each result,
and a scale that overflowed or underflowed in ``s * X`` may not in the
product's result (or the reverse). Not done: scales that are arrays (a
row or column scaling), sparse dots, dots inside fused computations.
"""
from xla.hlo.ir import HloInstruction
from xla.hlo.opcodes import ELEMENTWISE
from xla.service.hlo_pass import HloPass
from xla.service.pass_utils import fusion_computations


def _scale(multiply):
    """(X, s, the broadcast) when ``multiply`` is ``X * broadcast(s)`` or ``broadcast(s) * X``
    with a scalar ``s``; None otherwise."""
    if multiply.opcode != "multiply" or len(multiply.operands) != 2:
        return None
    for i in (0, 1):
        b, x = multiply.operands[i], multiply.operands[1 - i]
        if (b.opcode == "broadcast" and len(b.operands) == 1 and b.operands[0].shape.is_array
                and b.operands[0].shape.rank == 0 and tuple(b.attr("dimensions", ()) or ()) == ()
                and b is not x):
            return x, b.operands[0], b
    return None


def _feeds_elementwise(comp, dot):
    """Whether ``dot``'s one user is an elementwise op (the scale then joins
    the kernel that computes it: one kernel fewer, no more multiplies)."""
    users = dot.users
    return (len(users) == 1 and users[0].opcode in ELEMENTWISE and users[0].opcode != "map"
            and users[0].shape.is_array
            and dot is not comp.root_instruction)


class DotScaleMotion(HloPass):
    name = "dot-scale-motion"

    def run(self, module):
        changed = False
        fused = fusion_computations(module)
        for comp in module.computations:
            if id(comp) in fused:
                continue
            ordered = {id(p) for i in comp.instructions for p in i.control_predecessors}
            for dot in list(comp.instructions):
                if id(dot) in ordered:
                    continue
                if self._hoist(module, comp, dot):
                    changed = True
        return changed

    @staticmethod
    def _hoist(module, comp, dot):
        """Moves one scale of ``dot``'s operands after it; whether it did."""
        if dot.opcode != "dot" or len(dot.operands) != 2 or not dot.shape.is_array \
                or dot.shape.is_dynamic or dot.control_predecessors:
            return False
        et = dot.shape.element_type
        if et.is_pred or any(o.shape.element_type is not et for o in dot.operands):
            return False
        for i, operand in enumerate(dot.operands):
            found = _scale(operand)
            if found is None or len(operand.users) != 1 or dot.operands.count(operand) != 1 \
                    or operand.control_predecessors or operand is comp.root_instruction:
                continue
            x, s, b = found
            if s.shape.element_type is not et or x.shape.element_type is not et:
                continue
            if dot.shape.num_elements() >= operand.shape.num_elements() and \
                    not _feeds_elementwise(comp, dot):
                continue
            operands = list(dot.operands)
            operands[i] = x
            inner = HloInstruction("dot", dot.shape, operands, name=module.unique_name("dot"),
                                   attrs=dict(dot.attrs))
            comp.insert_before(dot, inner)
            broadcast = HloInstruction("broadcast", dot.shape, [s],
                                       name=module.unique_name("broadcast"),
                                       attrs={"dimensions": ()})
            comp.insert_before(dot, broadcast)
            scaled = HloInstruction("multiply", dot.shape, [inner, broadcast],
                                    name=module.unique_name("multiply"))
            comp.insert_before(dot, scaled)
            comp.replace_all_uses(dot, scaled)
            comp.remove_instruction(dot)
            comp.remove_instruction(operand)
            if not b.users and b is not comp.root_instruction:
                comp.remove_instruction(b)
            # Continue with the new dot: its other operand may be scaled too.
            return DotScaleMotion._hoist(module, comp, inner) or True
        return False
