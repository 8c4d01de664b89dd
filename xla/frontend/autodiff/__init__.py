"""Reverse-mode automatic differentiation of traced HLO: ``grad``, ``vjp``...

Differentiation works on the HLO a trace has built, one opcode at a time:
``VJP_RULES`` has one row per differentiable opcode, a function of the
builder, the primal instruction and the cotangent of its result that returns
the cotangents of its operands (None where an operand gets none). The
backward pass walks the instructions between the differentiated inputs and
the outputs in reverse order and accumulates cotangents, emitting the
adjoint ops into the same builder, so forward and backward compile into one
module (fused and scheduled together, as XLA does with JAX's training steps).

Computations that ops call are handled by re-tracing: a conditional's
branches and a counted while loop's body are inlined into new builders and
differentiated there (``_vjp_of_computation``). A while loop is
differentiable when its trip count is known (``xla.lax.fori_loop`` with
static bounds and ``xla.lax.scan`` record it as ``known_trip_count``): the
forward loop is re-run storing each iteration's state, and a second loop
runs the body's VJP backwards over the stored states.

``jvp`` is derived from the VJP (the VJP is linear in the cotangent, and
differentiating it again gives the Jacobian-vector product), so every
opcode with a VJP rule whose rule is itself differentiable has a JVP.

Non-differentiable values (integers, booleans, comparisons, iota, rng)
carry no cotangent: their inputs get zero gradients, as in JAX.
"""
# Importing the rule modules fills VJP_RULES (table.py).
from xla.frontend.autodiff import control_flow, rules_elementwise, rules_structural  # noqa: F401
from xla.frontend.autodiff.api import grad, jvp, value_and_grad, vjp
from xla.frontend.autodiff.table import VJP_RULES

__all__ = ["VJP_RULES", "grad", "jvp", "value_and_grad", "vjp"]
