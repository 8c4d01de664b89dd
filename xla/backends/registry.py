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


def compile(module, platform=None, *, backend=None, compiler=None, debug_options=None,
            **compile_options):
    """Compiles an HloModule (or its HLO text) for a platform and returns its Executable.

    The platform is given positionally or, as in ``xla.jit``, as
    ``backend=``; the default is the interpreter. The debug options in force
    (``XLA_FLAGS``, ``xla.debug_options.override``), or ``debug_options``
    for this compilation (a DebugOptions, a dict of its fields or a string
    of XLA flags, over those in force), decide what is dumped
    (``xla/service/dump.py``): the module before and after optimization,
    between passes, the backend's artifacts and, per execution, snapshots;
    and the backend's own options (LLVM opt level, disabled passes...).
    ``compile_options`` go to the compiler's ``compile`` (e.g. ``cache=``).
    """
    if debug_options is not None:
        from xla import debug_options as flags
        with flags.using(flags.resolve(debug_options)):
            return compile(module, platform, backend=backend, compiler=compiler, **compile_options)
    if platform is not None and backend is not None and platform != backend:
        raise InvalidArgumentError(f"compile got platform={platform!r} and backend={backend!r}")
    platform = platform or backend or "interpreter"
    if isinstance(module, str):
        from xla.hlo.parser import parse_hlo_module
        module = parse_hlo_module(module)
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
    if artifacts is not None:
        dumper.dump_artifacts(f"{platform}_after_optimizations", artifacts())
    if dumper.options.xla_dump_hlo_snapshots and not dumper.to_stdout:
        _record_snapshots(executable, dumper, original_text)
    return executable


def _record_snapshots(executable, dumper, module_text):
    """Makes every execution of ``executable`` write a snapshot."""
    execute = executable.execute

    def execute_and_dump(*args, **kwargs):
        # Donated arguments may be overwritten by the execution: keep them as given.
        recorded = [_copy(a) for a in args] if kwargs.get("donated") else args
        result = execute(*args, **kwargs)
        dumper.dump_snapshot(module_text, recorded, result)
        return result

    executable.execute = execute_and_dump


def _copy(value):
    import numpy as np
    return tuple(_copy(v) for v in value) if isinstance(value, tuple) else np.array(value, copy=True)
