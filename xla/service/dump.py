"""Dumps: what ``--xla_dump_to`` writes, named as XLA's ``dump.cc`` names it.

Per compiled module (``NNNN`` a per-process module id, ``NAME`` the module
name, dropped when the file name would pass 255 characters; with
``--xla_dump_include_timestamp`` a ``<microseconds>.`` prefix, one per
module):

==============================================================  ===========================
``module_NNNN.NAME.before_optimizations.txt``                   the module as given
``module_NNNN.NAME.<platform>_after_optimizations.txt``         after the pipeline
``module_NNNN.NAME.<platform>_after_optimizations-buffer-assignment.txt``  buffer assignment
``module_NNNN.NAME.<platform>_after_optimizations-memory-usage-report.txt``  memory summary
``module_NNNN.NAME.ir-no-opt.ll`` / ``.ir-with-opt.ll``         LLVM IR (cpu, gpu)
``module_NNNN.NAME.o``                                          the object code (cpu)
``module_NNNN.NAME.ptx``                                        the kernels' PTX (gpu)
``module_NNNN.NAME.SSSS.PIPELINE.after_PASS.before_NEXT.txt``   between passes matching
                                                                ``--xla_dump_hlo_pass_re``
``module_NNNN.NAME.snapshot.K.npz``                             execution K's module,
                                                                arguments and results
==============================================================  ===========================

The options are read as XLA's ``CanonicalDebugOptions`` reads them:

* no format flag (``--xla_dump_hlo_as_text/dot/html``,
  ``--xla_dump_hlo_snapshots``) means text; so ``--xla_dump_to`` alone
  writes text, and snapshots alone write no module text;
* a format flag without ``--xla_dump_to`` dumps to stdout, as does
  ``--xla_dump_to=-``: text files are printed between ``*** Begin FILE ***``
  and ``*** End FILE ***`` lines, other files are not written;
* ``--xla_dump_to=sponge`` (or ``test_undeclared_outputs_dir``) means
  ``$TEST_UNDECLARED_OUTPUTS_DIR``;
* ``--xla_dump_hlo_module_re`` selects modules by name (a search, not a
  full match); ``--xla_dump_hlo_pass_re`` and ``--xla_dump_hlo_pipeline_re``
  select between-passes dumps: one when the pass before or after matches,
  steps ``SSSS`` counted from 0 per module; with the pattern ``.*`` only
  passes that changed the module are followed by a dump;
* ``--xla_dump_max_hlo_modules=N`` (N >= 0) writes no files of a module
  once N other modules have files in the directory (-1: no limit).

With ``--xla_dump_hlo_as_dot``/``--xla_dump_hlo_as_html`` each module dump
is also written as ``.dot``/``.html`` by the renderers registered with
``register_dump_format`` (``xla/hlo/graph_views.py``).

Dumping never breaks compilation: a directory that cannot be written gives
one warning per directory and compilation goes on.

Snapshot format (XLA writes an HloSnapshot proto; there is no protobuf
here): an ``.npz`` with ``hlo_module`` (the module text as given to the
compiler, a 0-d unicode array), ``arg0``..``argN-1`` and ``out0``.. (a tuple
result flattened depth-first), the conventions of ``xla/tools/arrays.py``;
``replay_computation`` takes it directly.
"""
import io
import itertools
import os
import re
import sys
import threading
import time
import warnings

import numpy as np

_renderers = {}
_ids = itertools.count()
_lock = threading.Lock()
_warned = set()             # directories (and "-") already warned about
_admitted = {}              # dump directory -> module ids given files there
_steps = {}                 # module id -> next between-passes step
_timestamps = {}            # module id -> microseconds of its first dump

_STDOUT_SUFFIXES = (".txt", ".ll")


def register_dump_format(name, render):
    """``render(module) -> str`` writes ``.<name>`` dumps (``dot``, ``html``)."""
    _renderers[name] = render


def _ensure_renderers():
    if "dot" not in _renderers:
        from xla.hlo.graph_views import DUMP_FORMATS
        for name, render in DUMP_FORMATS.items():
            _renderers.setdefault(name, render)


def module_id(module):
    """A per-process id for ``module`` (XLA's unique_id), assigned on first use."""
    with _lock:
        mid = getattr(module, "_dump_id", None)
        if mid is None:
            mid = module._dump_id = next(_ids)
        return mid


def _dump_directory(options):
    """Where dumps go: a directory, "-" for stdout, or "" for nowhere."""
    formats = (options.xla_dump_hlo_as_text or options.xla_dump_hlo_as_dot
               or options.xla_dump_hlo_as_html or options.xla_dump_hlo_snapshots)
    directory = options.xla_dump_to or ("-" if formats else "")
    if directory.lower() in ("sponge", "test_undeclared_outputs_dir"):
        directory = os.environ.get("TEST_UNDECLARED_OUTPUTS_DIR", "")
        if not directory:
            _warn_once("sponge", f"xla dump: --xla_dump_to={options.xla_dump_to} but "
                                 "TEST_UNDECLARED_OUTPUTS_DIR is not set; nothing is dumped")
    return directory


def _warn_once(key, message):
    with _lock:
        first = key not in _warned
        _warned.add(key)
    if first:
        warnings.warn(message, RuntimeWarning, stacklevel=4)


class ModuleDumper:
    """The dump files of one module under the given DebugOptions."""

    def __init__(self, module, options, platform=None):
        self.options = options
        self.module = module
        self.platform = platform
        self.module_name = module.name
        self.directory = _dump_directory(options)
        o = options
        self.as_text = o.xla_dump_hlo_as_text or not (
            o.xla_dump_hlo_as_dot or o.xla_dump_hlo_as_html or o.xla_dump_hlo_snapshots)
        self.enabled = bool(self.directory) and (
            not o.xla_dump_hlo_module_re or re.search(o.xla_dump_hlo_module_re, module.name) is not None)
        self.snapshot_count = itertools.count()
        self.prefix = None
        if self.enabled:
            self.id = module_id(module)
            stamp = ""
            if o.xla_dump_include_timestamp:
                with _lock:
                    stamp = f"{_timestamps.setdefault(self.id, int(time.time() * 1e6))}."
            self.prefix = f"{stamp}module_{self.id:04d}.{_safe(module.name)}"
            self._short_prefix = f"{stamp}module_{self.id:04d}"

    @property
    def to_stdout(self):
        return self.directory == "-"

    def _admit(self):
        """--xla_dump_max_hlo_modules: whether this module may have files in
        the directory (those of modules dumped there before count, as XLA
        counts the files it finds)."""
        limit = self.options.xla_dump_max_hlo_modules
        if limit < 0:
            return True
        with _lock:
            admitted = _admitted.setdefault(self.directory, set())
            if self.id in admitted:
                return True
            present = set(admitted)
            try:
                for name in os.listdir(self.directory):
                    m = re.search(r"(?:^|\.)module_(\d+)\.", name)
                    if m:
                        present.add(int(m.group(1)))
            except OSError:
                pass
            if self.id not in present and len(present) >= limit:
                return False
            admitted.add(self.id)
            return True

    def filename(self, suffix):
        name = f"{self.prefix}.{suffix}"
        return name if len(name) <= 255 else f"{self._short_prefix}.{suffix}"

    # ----- writing ------------------------------------------------------------------
    def write(self, suffix, data):
        """Writes ``<prefix>.<suffix>``; returns the path, or None when
        disabled, printed to stdout or failed."""
        if not self.enabled or data is None:
            return None
        filename = self.filename(suffix)
        if self.to_stdout:
            if isinstance(data, str) and filename.endswith(_STDOUT_SUFFIXES):
                with _lock:
                    sys.stdout.write(f"*** Begin {filename} ***\n{data}\n*** End {filename} ***\n")
                    sys.stdout.flush()
            return None
        directory = self.directory
        path = os.path.join(directory, filename)
        try:
            os.makedirs(directory, exist_ok=True)
            if not self._admit():
                return None
            _write_replacing(path, data)
        except OSError as e:
            _warn_once(directory, f"xla dump: cannot write to {directory}: {e}; compilation goes on "
                                  "without dumps")
            return None
        return path

    def dump_module(self, module, stage):
        """``stage``: ``before_optimizations``, ``cpu_after_optimizations``, a
        between-passes name..."""
        if not self.enabled:
            return
        o = self.options
        if self.as_text:
            self.write(f"{stage}.txt", module.to_text())
        for fmt, flag in (("dot", o.xla_dump_hlo_as_dot), ("html", o.xla_dump_hlo_as_html)):
            if flag:
                _ensure_renderers()
                render = _renderers.get(fmt)
                if render is not None:
                    self.write(f"{stage}.{fmt}", render(module))

    def dump_artifacts(self, stage, artifacts):
        """A backend's files (``Executable.dump_artifacts()``: suffix -> data).
        Suffixes starting with "-" qualify ``stage`` and are module text
        reports (buffer assignment, memory usage), written with the text
        dumps as XLA does; the others (``ir-no-opt.ll``, ``o``) always."""
        for suffix, data in artifacts.items():
            if suffix.startswith("-"):
                if self.as_text:
                    self.write(f"{stage}{suffix}", data)
            else:
                self.write(suffix, data)

    def pass_hook(self):
        """The pipeline dump_hook for ``--xla_dump_hlo_pass_re``, or None."""
        o = self.options
        if not self.enabled or not o.xla_dump_hlo_pass_re:
            return None
        pattern = o.xla_dump_hlo_pass_re
        regex = re.compile(pattern)
        pipeline_regex = re.compile(o.xla_dump_hlo_pipeline_re) if o.xla_dump_hlo_pipeline_re else None

        def hook(module, pipeline, pass_name, changed, next_pass=None):
            before = next_pass or "pipeline-end"
            after = pass_name or "pipeline-start"
            if pass_name is not None and not changed and pattern == ".*":
                return
            if not (regex.search(after) or regex.search(before)):
                return
            if pipeline_regex is not None and not pipeline_regex.search(pipeline):
                return
            with _lock:
                step = _steps.get(self.id, 0)
                _steps[self.id] = step + 1
            self.dump_module(module, f"{step:04d}.{_safe(pipeline)}.after_{_safe(after)}."
                                     f"before_{_safe(before)}")
        return hook

    def dump_snapshot(self, module_text, args, result):
        """One execution: module text, arguments and results (see the module docstring)."""
        if not self.enabled or not self.options.xla_dump_hlo_snapshots or self.to_stdout:
            return None
        from xla.hlo.values import flatten_result
        arrays = {"hlo_module": np.array(module_text)}
        for i, a in enumerate(args):
            arrays[f"arg{i}"] = np.asarray(a)
        for i, r in enumerate(flatten_result(result)):
            arrays[f"out{i}"] = np.asarray(r)
        buffer = io.BytesIO()
        np.savez(buffer, **arrays)
        return self.write(f"snapshot.{next(self.snapshot_count)}.npz", buffer.getvalue())


def _safe(name):
    return re.sub(r"[^A-Za-z0-9_.\-]", "_", str(name))


def dumper_for(module, platform=None, options=None):
    from xla.debug_options import debug_options
    return ModuleDumper(module, options or debug_options(), platform)


def _write_replacing(path, data):
    """Writes a dump file as a temporary file in its directory renamed over
    ``path``: a link, FIFO or device already at that name is replaced, never
    written through (nor waited on), and a reader never sees half a file."""
    import stat
    import tempfile
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        mode = None
    if mode is not None and stat.S_ISDIR(mode):
        raise IsADirectoryError(21, "a directory has the dump file's name", path)
    fd, tmp = tempfile.mkstemp(prefix=".tmp.", dir=os.path.dirname(path) or ".")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data if isinstance(data, (bytes, bytearray)) else data.encode("utf-8"))
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)
