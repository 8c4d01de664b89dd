"""The HLO interpreter: reference semantics in NumPy for every backend.

``evaluate(module, *args)`` runs a module's entry computation on NumPy
arrays and returns its result (an array, or nested tuples of arrays).
Opcode semantics live in handler modules registered in ``registry.py``
(evaluator.py imports them all on first use).
"""
from xla.backends.interpreter.evaluator import Evaluator


def evaluate(module, *args):
    """Evaluates ``module``'s entry computation on ``args``."""
    return Evaluator().evaluate(module, list(args))


__all__ = ["Evaluator", "evaluate"]
