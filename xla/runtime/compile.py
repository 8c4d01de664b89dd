"""``xla.compile``: an HloModule (or its text) to an Executable on a platform,
with the dumps that ``--xla_dump_to`` asks for (``xla/service/dump.py``)
attached as explicit hooks."""
import numpy as np

from xla.errors import InvalidArgumentError
from xla.runtime.executable import CompileHooks
from xla.runtime.registry import get_platform


def compile(module, platform=None, *, backend=None, compiler=None, debug_options=None,
            num_replicas=None, num_partitions=None, **compile_options):
    """Compiles an HloModule (or its HLO text) for a platform and returns its Executable.

    The platform is given positionally or, as in ``xla.jit``, as
    ``backend=``; the default is the interpreter. The debug options in force
    (``XLA_FLAGS``, ``xla.debug_options.override``), or ``debug_options``
    for this compilation (a DebugOptions, a dict of its fields or a string
    of XLA flags, over those in force), decide what is dumped: the module
    before and after optimization, between passes (``CompileHooks.pass_hook``),
    the executable's ``dump_artifacts()`` and, per execution, snapshots
    (an execute hook); and the backend's own options (LLVM opt level,
    disabled passes...). ``compile_options`` go to the compiler's
    ``compile`` (e.g. ``cache=`` where the platform's capabilities say
    ``persistent_cache``).

    ``num_replicas``/``num_partitions`` (either given): the module runs on
    that many replicas x partitions of the platform's devices, in one
    process, and a ``ReplicatedExecutable`` (``collectives.py``) is returned,
    whose ``execute`` takes one argument list per device. A module in
    Shardy's form (JAX's global module, ``xla.sdy.*`` custom-calls) is SPMD
    partitioned first: each device's arguments and results are its tiles.
    """
    if num_replicas is not None or num_partitions is not None:
        return _compile_replicated(module, platform or backend, compiler, debug_options,
                                   1 if num_replicas is None else num_replicas,
                                   1 if num_partitions is None else num_partitions,
                                   compile_options)
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
    compiler = compiler or get_platform(platform).compiler()
    from xla.service.dump import dumper_for
    dumper = dumper_for(module, platform)
    if not dumper.enabled:
        return compiler.compile(module, **compile_options)
    original_text = module.to_text()
    dumper.dump_module(module, "before_optimizations")
    executable = compiler.compile(module, hooks=CompileHooks(pass_hook=dumper.pass_hook()),
                                  **compile_options)
    dumper.dump_module(executable.module, f"{platform}_after_optimizations")
    dumper.dump_artifacts(f"{platform}_after_optimizations", executable.dump_artifacts())
    if dumper.options.xla_dump_hlo_snapshots and not dumper.to_stdout:
        executable.add_execute_hook(_snapshot_hook(dumper, original_text))
    return executable


def _snapshot_hook(dumper, module_text):
    """An execute hook writing a snapshot of each execution. Arguments are
    recorded as given: the executable copies donated arguments before
    calling it, when they may have been overwritten."""
    def hook(args, result):
        dumper.dump_snapshot(module_text, args, result)
    return hook


def copy_args(args):
    """Arguments as they were before an execution that may overwrite donated ones."""
    return [tuple(copy_args(a)) if isinstance(a, tuple) else np.array(a, copy=True) for a in args]


def _compile_replicated(module, platform, compiler, debug_options, num_replicas, num_partitions,
                        compile_options):
    from xla.runtime.collectives import ReplicatedExecutable
    for name, n in (("num_replicas", num_replicas), ("num_partitions", num_partitions)):
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise InvalidArgumentError(f"{name} must be a positive int, got {n!r}")
    if isinstance(module, str):
        from xla.hlo.parser import parse_hlo_module
        module = parse_hlo_module(module)
    if num_partitions > 1:
        from xla.hlo import sdy
        if sdy.uses_shardy(module):
            # JAX's global module in Shardy's form: partitioned first, so each
            # device runs its own tiles, as XLA does with it.
            from xla.service.spmd_partitioner import partition
            module = partition(module, num_partitions)[0]
    module.header_attrs["replica_count"] = num_replicas
    module.header_attrs["num_partitions"] = num_partitions
    executable = compile(module, platform, compiler=compiler, debug_options=debug_options,
                         **compile_options)
    devices = [executable.for_device(d) for d in range(num_replicas * num_partitions)]
    return ReplicatedExecutable(devices, num_replicas, num_partitions)
