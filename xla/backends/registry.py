"""The backend registry: platform name -> compiler.

A backend is a folder under ``xla/backends/`` with a module that defines a
``Compiler`` (``compile(module) -> Executable``); it is registered here by
name and imported only when first asked for. Adding a backend is adding its
folder and one line to ``_BACKENDS``.
"""
import importlib

from xla.errors import InvalidArgumentError

# platform name -> "module:attribute" of its Compiler class.
_BACKENDS = {
    "cpu": "xla.backends.cpu.compiler:CpuCompiler",
    "interpreter": "xla.backends.interpreter.backend:InterpreterCompiler",
}


def available_platforms():
    return sorted(_BACKENDS)


def get_compiler(platform):
    """A new Compiler for ``platform``; a clear error names unknown platforms."""
    try:
        target = _BACKENDS[platform]
    except KeyError:
        raise InvalidArgumentError(
            f"unknown platform {platform!r}; available: {', '.join(available_platforms())}") from None
    module_name, attr = target.split(":")
    return getattr(importlib.import_module(module_name), attr)()


def compile(module, platform=None, *, backend=None):
    """Compiles an HloModule for a platform and returns its Executable.

    The platform is given positionally or, as in ``xla.jit``, as
    ``backend=``; the default is the interpreter.
    """
    if platform is not None and backend is not None and platform != backend:
        raise InvalidArgumentError(f"compile got platform={platform!r} and backend={backend!r}")
    return get_compiler(platform or backend or "interpreter").compile(module)
