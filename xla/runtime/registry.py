"""The platform registry: platform name -> Platform.

The built-in backends are listed here by module path and imported only when
first asked for. Backends outside this repository are discovered through
Python entry points in the group ``xla.backends`` (as JAX discovers PJRT
plugins): a package declares

    [project.entry-points."xla.backends"]
    mychip = "mychip_xla.platform:MyChipPlatform"

and ``xla.compile(module, "mychip")`` or ``xla.jit(f, backend="mychip")``
finds it. ``register_platform`` registers one from code (tests).
"""
import importlib
import threading

from xla.errors import InvalidArgumentError

ENTRY_POINT_GROUP = "xla.backends"

# platform name -> "module:attribute" of its Platform class.
_BUILTIN = {
    "cpu": "xla.backends.cpu.platform:CpuPlatform",
    "interpreter": "xla.backends.interpreter.backend:InterpreterPlatform",
    "gpu": "xla.backends.gpu.platform:CudaPlatform",
    "gpu_emulator": "xla.backends.gpu.platform:GpuEmulatorPlatform",
}

# What ``xla.jit`` and ``xla.device_put`` use when no platform is named.
DEFAULT_PLATFORM = "cpu"

_lock = threading.Lock()
_targets = None        # name -> "module:attr", a class, or a factory
_platforms = {}        # name -> Platform instance (made on first use)


def _discover():
    global _targets
    if _targets is not None:
        return _targets
    targets = dict(_BUILTIN)
    try:
        from importlib.metadata import entry_points
        found = entry_points(group=ENTRY_POINT_GROUP)
    except Exception:   # a broken distribution on sys.path must not break xla
        found = ()
    for ep in found:
        if ep.name in _BUILTIN:
            import warnings
            warnings.warn(f"entry point {ep.value!r} in group {ENTRY_POINT_GROUP!r} names the "
                          f"built-in platform {ep.name!r}; ignored")
            continue
        targets.setdefault(ep.name, ep.value)
    _targets = targets
    return targets


def rediscover():
    """Reads the entry points again (after installing a backend in this process)."""
    global _targets
    with _lock:
        _targets = None
        _platforms.clear()
    return available_platforms()


def register_platform(name, platform):
    """Registers ``platform`` (a Platform class, factory or instance) as ``name``."""
    with _lock:
        targets = _discover()
        if name in targets:
            raise InvalidArgumentError(f"platform {name!r} is already registered")
        targets[name] = platform


def unregister_platform(name):
    with _lock:
        if name in _BUILTIN:
            raise InvalidArgumentError(f"platform {name!r} is built in")
        _discover().pop(name, None)
        _platforms.pop(name, None)


def available_platforms():
    return sorted(_discover())


def get_platform(name):
    """The Platform registered as ``name`` (one instance per process)."""
    platform = _platforms.get(name)
    if platform is not None:
        return platform
    with _lock:
        platform = _platforms.get(name)
        if platform is None:
            if isinstance(name, str) and name in _BUILTIN:
                # No entry point replaces a built-in (_discover ignores
                # them), so the entry points are not read: importing
                # importlib.metadata and scanning the installed
                # distributions took 30-40 ms of a first compile.
                target = _BUILTIN[name]
            else:
                targets = _discover()
                if not isinstance(name, str) or name not in targets:
                    raise InvalidArgumentError(
                        f"unknown platform {name!r}; available: {', '.join(sorted(targets))}")
                target = targets[name]
            if isinstance(target, str):
                spec = target
                module_name, attr = target.split(":")
                try:
                    target = getattr(importlib.import_module(module_name), attr)
                except (ImportError, AttributeError) as e:
                    raise InvalidArgumentError(
                        f"platform {name!r} ({spec}) cannot be loaded: {e}") from None
            platform = target() if callable(target) else target
            if platform.name != name:
                raise InvalidArgumentError(f"platform registered as {name!r} calls itself "
                                           f"{platform.name!r}")
            _platforms[name] = platform
    return platform


def default_platform():
    """The Platform used when none is named."""
    return get_platform(DEFAULT_PLATFORM)


def get_compiler(platform):
    """A new Compiler for ``platform``; a clear error names unknown platforms."""
    return get_platform(platform).compiler()


def devices(platform=None):
    """The devices of a platform (``xla.devices()``: the default platform's)."""
    return (get_platform(platform) if platform is not None else default_platform()).devices()
