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


def compile(module, platform=None, *, backend=None, compiler=None, **compile_options):
    """Compiles an HloModule for a platform and returns its Executable.

    The platform is given positionally or, as in ``xla.jit``, as
    ``backend=``; the default is the interpreter. The debug options in force
    (``XLA_FLAGS``, ``xla.debug_options.override``) decide what is dumped
    (``xla/service/dump.py``): the module before and after optimization,
    between passes, the backend's artifacts and, per execution, snapshots.
    ``compile_options`` go to the compiler's ``compile`` (e.g. ``cache=``).
    """
    if platform is not None and backend is not None and platform != backend:
        raise InvalidArgumentError(f"compile got platform={platform!r} and backend={backend!r}")
    platform = platform or backend or "interpreter"
    compiler = compiler or get_compiler(platform)
    from xla.service.dump import dumper_for
    dumper = dumper_for(module, platform)
    if not dumper.enabled:
        return compiler.compile(module, **compile_options)
    original_text = module.to_text()
    dumper.dump_module(module, "before_optimizations")
    compiler.dumper = dumper
    try:
        executable = compiler.compile(module, **compile_options)
    finally:
        compiler.dumper = None
    dumper.dump_module(executable.module, f"{platform}_after_optimizations")
    artifacts = getattr(executable, "dump_artifacts", None)
    for suffix, data in (artifacts() if artifacts else {}).items():
        if data is not None:
            dumper.write(f"{platform}_after_optimizations{suffix}" if suffix.startswith("-") else suffix, data)
    if dumper.options.xla_dump_hlo_snapshots:
        _record_snapshots(executable, dumper, original_text)
    return executable


def _record_snapshots(executable, dumper, module_text):
    """Makes every execution of ``executable`` write a snapshot."""
    execute = executable.execute

    def execute_and_dump(*args, **kwargs):
        result = execute(*args, **kwargs)
        dumper.dump_snapshot(module_text, args, result)
        return result

    executable.execute = execute_and_dump
