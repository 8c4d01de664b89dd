"""Debug options: XLA's flags, parsed once from ``XLA_FLAGS`` with absl.

Every entry point (``xla.jit``, ``xla.compile``, the tools) reads the same
``DebugOptions``: ``debug_options()`` parses the ``XLA_FLAGS`` environment
variable the first time it is called (names and defaults as XLA's
``debug_options_flags.cc``, plus the few this project adds). Every other
flag name XLA defines (``xla_flag_names.txt``) is accepted too, so a JAX
user's ``XLA_FLAGS`` keep working: each such flag warns once per process
that it has no effect here (docs/flags.md is the table). An unknown flag
is an InvalidArgumentError that names it and suggests close matches; a bad
value names the flag. Tools accept the same flags on their command line
(``split_xla_flags``), and code can override them for a block::

    with xla.debug_options.override(xla_dump_to="/tmp/d"):
        exe = xla.compile(module, "cpu")

The flags are parsed into a private ``absl.flags.FlagValues``, so they never
clash with a program's own absl flags.
"""
import contextlib
import dataclasses
import os
import re
import shlex
import sys
import threading

from xla.errors import InvalidArgumentError


@dataclasses.dataclass(frozen=True)
class DebugOptions:
    # Dumps (xla/service/dump.py).
    xla_dump_to: str = ""
    xla_dump_hlo_as_text: bool = False
    xla_dump_hlo_as_dot: bool = False
    xla_dump_hlo_as_html: bool = False
    xla_dump_hlo_module_re: str = ""
    xla_dump_hlo_pass_re: str = ""
    xla_dump_hlo_pipeline_re: str = ""
    xla_dump_hlo_snapshots: bool = False
    xla_dump_max_hlo_modules: int = -1
    xla_dump_include_timestamp: bool = False
    # Compilation.
    xla_disable_hlo_passes: tuple = ()
    xla_backend_optimization_level: int = 3
    xla_llvm_disable_expensive_passes: bool = False
    xla_cpu_enable_fast_math: bool = False
    xla_allow_excess_precision: bool = True
    xla_cpu_multi_thread_eigen: bool = True
    xla_hlo_profile: bool = False
    xla_gpu_enable_command_buffer: tuple = ("FUSION", "CUBLAS")
    xla_gpu_graph_min_graph_size: int = 2
    # Devices.
    xla_force_host_platform_device_count: int = 1
    # This project's additions (no XLA counterpart).
    xla_cpu_num_threads: int = 0
    xla_auto_jit: int = 0
    xla_auto_jit_debug_dir: str = ""
    xla_enable_persistent_cache: bool = True
    xla_persistent_cache_dir: str = ""
    xla_log_compile_progress: bool = False
    xla_cpu_compile_workers: int = -1

    @property
    def dump_enabled(self):
        return bool(self.xla_dump_to)


_HELP = {
    "xla_dump_to": "Directory into which debugging data is written (module text, IR, ...).",
    "xla_dump_hlo_as_text": "Dump HLO modules as text (the default format when --xla_dump_to is set).",
    "xla_dump_hlo_as_dot": "Dump HLO modules as Graphviz DOT.",
    "xla_dump_hlo_as_html": "Dump HLO modules as self-contained HTML graph views.",
    "xla_dump_hlo_module_re": "Only dump modules whose name matches this regular expression.",
    "xla_dump_hlo_pass_re": "Dump the module before and after each pass whose name matches this regex.",
    "xla_dump_hlo_pipeline_re": "Only dump between passes of pipelines whose name matches this regex.",
    "xla_dump_hlo_snapshots": "Dump each execution's module, arguments and results (replayable).",
    "xla_dump_max_hlo_modules": "Dump at most this many modules (-1: no limit).",
    "xla_dump_include_timestamp": "Put a timestamp in dump file names.",
    "xla_disable_hlo_passes": "Comma-separated HLO pass names not to run.",
    "xla_backend_optimization_level": "LLVM optimization level of the CPU backend (0-3).",
    "xla_llvm_disable_expensive_passes": "CPU backend: compile kernels with O1's simplification, "
                                         "without LLVM's loop and SLP vectorizers and loop "
                                         "strength reduction (less LLVM time, slower code).",
    "xla_cpu_enable_fast_math": "Let LLVM reassociate and contract floating-point arithmetic.",
    "xla_allow_excess_precision": "Allow xla to increase the output precision of an instruction "
                                  "(cpu: f16/bf16/f8 values inside a kernel stay in f32 and "
                                  "are rounded where stored; false: every op rounds, as the "
                                  "interpreter and the gpu backend do).",
    "xla_cpu_multi_thread_eigen": "Use the CPU runtime's thread pool (false: one thread).",
    "xla_hlo_profile": "Instrument compiled code to time every instruction of the entry "
                       "computation (cpu; read by xla.profiler, which sets it inside trace()).",
    "xla_gpu_enable_command_buffer": "Comma-separated kinds of gpu thunks replayed as CUDA graphs "
                                     "(FUSION: kernels and device copies; CUBLAS: matrix "
                                     "products; empty: none).",
    "xla_gpu_graph_min_graph_size": "Launch a gpu executable's thunks as a CUDA graph only when it "
                                    "has at least this many of them (XLA's default is 5; here "
                                    "a launch costs ~10 us of Python, so 2).",
    "xla_force_host_platform_device_count": "Devices the cpu platform reports (xla.devices('cpu')); "
                                            "all share the CPU runtime's thread pool.",
    "xla_cpu_num_threads": "Threads of the CPU runtime's pool (0: one per available CPU).",
    "xla_auto_jit": "2: xla.jit functions that cannot compile whole are auto-clustered instead of failing.",
    "xla_auto_jit_debug_dir": "Directory for xla.autojit's per-function cluster reports.",
    "xla_enable_persistent_cache": "xla.jit stores and reuses cpu native code on disk "
                                   "(xla/frontend/disk_cache.py).",
    "xla_persistent_cache_dir": "Directory of the persistent cache (default: $XLA_PY_CACHE_DIR, "
                                "else $XDG_CACHE_HOME/xla-py or ~/.cache/xla-py).",
    "xla_log_compile_progress": "Print each compilation's stages and kernels compiled of total "
                                "on stderr.",
    "xla_cpu_compile_workers": "Processes (threads, for a few kernels) that compile the CPU "
                               "backend's kernels in parallel (-1: one per CPU; 0: compile in "
                               "the calling process, on one thread).",
}


def _define(registry):
    from absl import flags as absl_flags
    for field in dataclasses.fields(DebugOptions):
        name, default = field.name, field.default
        if field.type is bool or isinstance(default, bool):
            absl_flags.DEFINE_boolean(name, default, _HELP[name], flag_values=registry)
        elif isinstance(default, int):
            absl_flags.DEFINE_integer(name, default, _HELP[name], flag_values=registry)
        elif isinstance(default, tuple):
            absl_flags.DEFINE_list(name, list(default), _HELP[name], flag_values=registry)
        else:
            absl_flags.DEFINE_string(name, default, _HELP[name], flag_values=registry)


def flag_names():
    return [f.name for f in dataclasses.fields(DebugOptions)]


_xla_names = None
_warned = set()


def xla_flag_names():
    """Every flag name XLA defines (``xla_flag_names.txt``)."""
    global _xla_names
    if _xla_names is None:
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "xla_flag_names.txt")
        with open(path) as f:
            _xla_names = frozenset(line.strip() for line in f
                                   if line.strip() and not line.startswith("#"))
    return _xla_names


def inert_flag_names():
    """XLA's flags that are accepted here without an effect."""
    return sorted(xla_flag_names() - set(flag_names()))


def flags_table():
    """docs/flags.md: every flag accepted, and what it does here."""
    lines = ["# XLA flags", "",
             "Every flag name XLA defines is accepted in `XLA_FLAGS` and on the tools' command",
             "lines. The flags below with an effect act as described; every other XLA flag",
             "is accepted and ignored, with one warning per process naming it, so that",
             "existing `XLA_FLAGS` (a JAX user's, for example) keep working. A name that is",
             "neither is an error suggesting the closest names. This file is generated by",
             "`xla.debug_options.flags_table()` (tests/debugging/test_xla_flags.py checks it).",
             "", "## Flags with an effect here", "", "| flag | default | what it does here |",
             "| --- | --- | --- |"]
    xla_names = xla_flag_names()
    for field in dataclasses.fields(DebugOptions):
        default = field.default
        default = ",".join(default) if isinstance(default, tuple) else str(default).lower() \
            if isinstance(default, bool) else repr(default) if isinstance(default, str) else default
        origin = "" if field.name in xla_names else " (this project's own)"
        lines.append(f"| `--{field.name}` | {default} | {_HELP[field.name]}{origin} |")
    inert = inert_flag_names()
    lines += ["", f"## XLA flags accepted without an effect ({len(inert)})", ""]
    lines += [f"- `--{name}`" for name in inert]
    return "\n".join(lines) + "\n"


def _warn_inert(name):
    if name not in _warned:
        _warned.add(name)
        import warnings
        warnings.warn(f"XLA flag --{name} has no effect here; it is accepted so that existing "
                      "XLA_FLAGS keep working (docs/flags.md)", stacklevel=4)


def parse_flags(argv, base=None):
    """DebugOptions from flags like ``["--xla_dump_to=/tmp/d", ...]`` (a list
    or one string, as in ``XLA_FLAGS``) on top of ``base``."""
    if isinstance(argv, str):
        argv = shlex.split(argv)
    if not argv:
        # Nothing to parse (XLA_FLAGS unset or empty, the usual case): the
        # defaults or ``base``, without importing absl (~10 ms).
        return validate(DebugOptions() if base is None else base)
    from absl import flags as absl_flags
    registry = absl_flags.FlagValues()
    _define(registry)
    known = set(flag_names())
    inert = xla_flag_names() - known
    ours = []
    for arg in argv:
        if not arg.startswith("-"):
            raise InvalidArgumentError(f"XLA flags must look like --name=value, got {arg!r}")
        name = arg.lstrip("-").split("=", 1)[0]
        bare = name[2:] if name.startswith("no") and name[2:] in known | inert else name
        if bare in inert:
            _warn_inert(bare)
            continue
        if bare not in known:
            import difflib
            close = difflib.get_close_matches(bare, sorted(known | inert), n=3)
            hint = f"; did you mean {', '.join('--' + c for c in close)}?" if close else ""
            raise InvalidArgumentError(f"unknown XLA flag --{name}{hint}")
        ours.append(arg)
    argv = ours
    try:
        registry(["xla"] + list(argv), known_only=False)
    except absl_flags.Error as e:
        raise InvalidArgumentError(f"bad XLA flag value: {e}") from None
    values = {} if base is None else dataclasses.asdict(base)
    for name in known:
        if registry[name].present:
            value = registry[name].value
            values[name] = tuple(value) if isinstance(value, list) else value
    return validate(DebugOptions(**values))


# XLA's command buffer types; the gpu backend has thunks of FUSION and CUBLAS
# kinds only (its control flow runs on the host), so the others change nothing.
COMMAND_BUFFER_TYPES = frozenset({"FUSION", "CUBLAS", "CUBLASLT", "CUSTOM_CALL", "CUDNN",
                                  "COLLECTIVES", "CONDITIONAL", "WHILE", "DYNAMIC_SLICE_FUSION",
                                  "DYNAMIC_SLICE_COPY_FUSION"})
_REGEX_FLAGS = ("xla_dump_hlo_module_re", "xla_dump_hlo_pass_re", "xla_dump_hlo_pipeline_re")


def validate(options):
    """Returns ``options``, or raises InvalidArgumentError naming the first
    flag whose value cannot work (checked here, not deep in a compilation)."""
    if options.xla_backend_optimization_level not in (0, 1, 2, 3):
        raise InvalidArgumentError(f"--xla_backend_optimization_level must be 0..3, got "
                                   f"{options.xla_backend_optimization_level}")
    if options.xla_force_host_platform_device_count < 1:
        raise InvalidArgumentError(f"--xla_force_host_platform_device_count must be >= 1, got "
                                   f"{options.xla_force_host_platform_device_count}")
    if options.xla_cpu_num_threads < 0:
        raise InvalidArgumentError(f"--xla_cpu_num_threads must be >= 0 (0: one per CPU), got "
                                   f"{options.xla_cpu_num_threads}")
    unknown = set(options.xla_gpu_enable_command_buffer) - COMMAND_BUFFER_TYPES
    if unknown:
        raise InvalidArgumentError(f"--xla_gpu_enable_command_buffer: unknown command type "
                                   f"{sorted(unknown)[0]!r} (one of {', '.join(sorted(COMMAND_BUFFER_TYPES))})")
    for name in _REGEX_FLAGS:
        try:
            re.compile(getattr(options, name))
        except re.error as e:
            raise InvalidArgumentError(f"--{name}={getattr(options, name)}: bad regular expression: "
                                       f"{e}") from None
    return options


_lock = threading.Lock()
_from_environment = None


class _Overrides(threading.local):
    """This thread's stack of ``using`` blocks (an attribute every thread has:
    looking up a missing one on a threading.local costs ~0.7 us, and
    ``debug_options()`` is on xla.jit's call path)."""

    def __init__(self):
        self.stack = []


_overrides = _Overrides()
_interned = {}    # repr -> the one DebugOptions object of that value put in force


def _intern(options):
    """One object per value of the options put in force, kept alive: a
    cache may key what it compiled by ``id(debug_options())`` (xla.jit)."""
    with _lock:
        return _interned.setdefault(repr(options), options)


def debug_options():
    """The DebugOptions in force: ``XLA_FLAGS`` (parsed once), then any
    ``override`` blocks of this thread. Equal options in force are the same
    object (``_intern``)."""
    global _from_environment
    stack = _overrides.stack
    if stack:
        return stack[-1]
    options = _from_environment
    if options is not None:
        return options
    options = _intern(parse_flags(os.environ.get("XLA_FLAGS", "")))
    with _lock:
        if _from_environment is None:
            _from_environment = options
        return _from_environment


def in_force_checks(options):
    """Attribute checks that hold only while ``debug_options()`` returns
    ``options`` as read from ``XLA_FLAGS`` (no ``override`` block of this
    thread active): ([(object, attribute) that must be falsy], [(object,
    attribute, value) that must be that value]), for a per-call check made
    in C++ (xla.jit's JitDispatch). Keep in step with ``debug_options``."""
    return [(_overrides, "stack")], [(sys.modules[__name__], "_from_environment", options)]


def reset():
    """Forgets the parsed XLA_FLAGS (it is parsed again on next use)."""
    global _from_environment
    with _lock:
        _from_environment = None


def override(**fields):
    """Replaces some options for the duration of a ``with`` block (this thread)."""
    unknown = set(fields) - set(flag_names())
    if unknown:
        raise InvalidArgumentError(f"unknown debug option(s): {', '.join(sorted(unknown))}")
    return using(resolve(fields))


def resolve(spec):
    """DebugOptions from ``spec``: a DebugOptions (checked), a dict of
    fields or a string/list of XLA flags (over the options in force)."""
    if isinstance(spec, DebugOptions):
        return validate(spec)
    if isinstance(spec, dict):
        unknown = set(spec) - set(flag_names())
        if unknown:
            raise InvalidArgumentError(f"unknown debug option(s): {', '.join(sorted(unknown))}")
        return validate(dataclasses.replace(debug_options(), **spec))
    if isinstance(spec, (str, list, tuple)):
        return parse_flags(list(spec) if not isinstance(spec, str) else spec, base=debug_options())
    raise InvalidArgumentError(f"debug options must be a DebugOptions, a dict or XLA flags, "
                               f"got {type(spec).__name__}")


@contextlib.contextmanager
def using(options):
    """Puts a whole DebugOptions in force for a ``with`` block (this thread)."""
    stack = _overrides.stack
    options = _intern(options)
    stack.append(options)
    try:
        yield options
    finally:
        stack.pop()


def split_xla_flags(argv):
    """Splits a tool's argv into (XLA flags, the rest); the XLA flags are
    those whose name is one of DebugOptions' fields."""
    names = set(flag_names()) | xla_flag_names()
    xla_flags, rest = [], []
    for arg in argv:
        name = arg.lstrip("-").split("=", 1)[0]
        name = name[2:] if name.startswith("no") and name[2:] in names else name
        if arg.startswith("--") and (name in names or name.startswith("xla_")):
            xla_flags.append(arg)
        else:
            rest.append(arg)
    return xla_flags, rest
