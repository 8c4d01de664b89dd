"""Compiling traced modules for ``xla.jit``: the one place the frontend
reaches a backend (through the runtime's registry, so dumps and snapshots
happen as for any other module), and where the persistent cache
(``disk_cache``) is consulted for platforms whose capabilities say they can
use it."""
from xla import runtime
from xla.frontend import disk_cache


def compile_module(module, platform, options):
    """An executable for ``module`` on ``platform`` (a ``runtime.Platform``).
    ``options`` are jit's keyword options: ``disk_cache`` (True/None: default
    directory, False: off, a path: that directory)."""
    compiler = platform.compiler()
    cache = disk_cache.cache_for(options.get("disk_cache"))
    if cache is not None and platform.capabilities.persistent_cache:
        return runtime.compile(module, platform.name, compiler=compiler, cache=cache)
    return runtime.compile(module, platform.name, compiler=compiler)
