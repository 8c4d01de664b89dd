"""Compiling traced modules for ``xla.jit``: the one place the frontend
reaches a backend (through ``xla.backends.registry``)."""
from xla.backends.registry import compile as _compile


def compile_module(module, backend, options):
    """An executable for ``module`` on ``backend``; ``options`` are jit's keyword options."""
    return _compile(module, backend)
