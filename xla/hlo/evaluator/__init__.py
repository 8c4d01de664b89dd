"""The HLO evaluator: reference semantics in NumPy for every backend.

It lives with the IR (as XLA's HloEvaluator does) so that passes such as
constant folding can use it; ``xla.backends.interpreter`` makes it a platform.

``evaluate(module, *args)`` runs a module's entry computation on NumPy
arrays and returns its result (an array, or nested tuples of arrays).
Opcode semantics live in handler modules registered in ``registry.py``
(evaluator.py imports them all on first use).
"""
from xla.hlo.evaluator.evaluator import Evaluator


def evaluate(module, *args):
    """Evaluates ``module``'s entry computation on ``args``."""
    return Evaluator().evaluate(module, list(args))


__all__ = ["Evaluator", "evaluate"]
