"""Compiling traced modules for ``xla.jit``: the one place the frontend
reaches a backend (through ``xla.backends.registry``, so dumps and snapshots
happen as for any other module), and where the persistent cache
(``disk_cache``) is consulted for backends that can use it."""
from xla.backends import registry
from xla.frontend import disk_cache


def compile_module(module, backend, options):
    """An executable for ``module`` on ``backend``. ``options`` are jit's
    keyword options: ``disk_cache`` (True/None: default directory, False:
    off, a path: that directory)."""
    compiler = registry.get_compiler(backend)
    cache = disk_cache.cache_for(options.get("disk_cache"))
    if cache is not None and getattr(compiler, "supports_persistent_cache", False):
        return registry.compile(module, backend, compiler=compiler, cache=cache)
    return registry.compile(module, backend, compiler=compiler)
