"""Dumps: what ``--xla_dump_to`` writes, named as XLA names it.

Per compiled module (``NNNN`` a per-process module id, ``NAME`` the module
name; a ``--xla_dump_include_timestamp`` prefix ``<ms>.`` when asked for):

==============================================================  ===========================
``module_NNNN.NAME.before_optimizations.txt``                   the module as given
``module_NNNN.NAME.<platform>_after_optimizations.txt``         after the pipeline
``module_NNNN.NAME.<platform>_after_optimizations-buffer-assignment.txt``  buffer assignment
``module_NNNN.NAME.<platform>_after_optimizations-memory-usage-report.txt``  memory summary
``module_NNNN.NAME.ir-no-opt.ll`` / ``.ir-with-opt.ll``         LLVM IR (cpu)
``module_NNNN.NAME.o``                                          the object code (cpu)
``module_NNNN.NAME.SSSS.PIPELINE.after_PASS.before_NEXT.txt``   between passes matching
                                                                ``--xla_dump_hlo_pass_re``
``module_NNNN.NAME.snapshot.K.npz``                             execution K's module,
                                                                arguments and results
==============================================================  ===========================

Text is written unless only other formats are asked for; with
``--xla_dump_hlo_as_dot``/``--xla_dump_hlo_as_html`` each module dump is also
written as ``.dot``/``.html`` by the renderers registered with
``register_dump_format``. ``--xla_dump_hlo_module_re`` selects modules by
name, ``--xla_dump_max_hlo_modules`` bounds how many are dumped.

Dumping never breaks compilation: a directory that cannot be written gives
one warning per directory and compilation goes on.

Snapshot format (XLA writes an HloSnapshot proto; there is no protobuf
here): an ``.npz`` with ``hlo_module`` (the module text, as a 0-d unicode
array), ``arg0``..``argN-1`` and ``out0``.. (a tuple result flattened), the
conventions of ``xla/tools/arrays.py``; ``replay_computation`` takes it
directly.
"""
import itertools
import os
import re
import threading
import time
import warnings

import numpy as np

_renderers = {}
_ids = itertools.count()
_lock = threading.Lock()
_warned_dirs = set()
_dumped_modules = set()


def register_dump_format(name, render):
    """``render(module) -> str`` writes ``.<name>`` dumps (``dot``, ``html``)."""
    _renderers[name] = render


def _ensure_renderers():
    if "dot" not in _renderers:
        try:
            import xla.hlo.graph_views  # noqa: F401  (registers dot and html)
        except ImportError:
            pass


def module_id(module):
    """A per-process id for ``module`` (XLA's unique_id), assigned on first dump."""
    with _lock:
        mid = getattr(module, "_dump_id", None)
        if mid is None:
            mid = module._dump_id = next(_ids)
        return mid


class ModuleDumper:
    """The dump files of one module under the given DebugOptions."""

    def __init__(self, module, options, platform=None):
        self.options = options
        self.module = module
        self.platform = platform
        self.module_name = module.name
        self.enabled = self._enabled(module, options)
        self.step = itertools.count(1)
        self.snapshot_count = itertools.count()
        self.prefix = None
        if self.enabled:
            mid = module_id(module)
            stamp = f"{int(time.time() * 1000)}." if options.xla_dump_include_timestamp else ""
            self.prefix = f"{stamp}module_{mid:04d}.{_safe(module.name)}"

    @staticmethod
    def _enabled(module, options):
        if not options.xla_dump_to:
            return False
        if options.xla_dump_hlo_module_re and not re.search(options.xla_dump_hlo_module_re, module.name):
            return False
        limit = options.xla_dump_max_hlo_modules
        with _lock:
            key = getattr(module, "_dump_id", None)
            if key is not None and key in _dumped_modules:
                return True
            if limit >= 0 and len(_dumped_modules) >= limit:
                return False
            key = module._dump_id = key if key is not None else next(_ids)
            _dumped_modules.add(key)
        return True

    # ----- writing ------------------------------------------------------------------
    def write(self, suffix, data):
        """Writes ``<prefix>.<suffix>``; returns the path or None (disabled or failed)."""
        if not self.enabled:
            return None
        directory = self.options.xla_dump_to
        path = os.path.join(directory, f"{self.prefix}.{suffix}")
        try:
            os.makedirs(directory, exist_ok=True)
            mode = "wb" if isinstance(data, (bytes, bytearray)) else "w"
            with open(path, mode) as f:
                f.write(data)
        except OSError as e:
            with _lock:
                first = directory not in _warned_dirs
                _warned_dirs.add(directory)
            if first:
                warnings.warn(f"xla dump: cannot write to {directory}: {e}; compilation goes on "
                              "without dumps", RuntimeWarning, stacklevel=3)
            return None
        return path

    def dump_module(self, module, stage):
        """``stage``: ``before_optimizations``, ``cpu_after_optimizations``, a
        between-passes name..."""
        if not self.enabled:
            return
        o = self.options
        text_wanted = o.xla_dump_hlo_as_text or not (o.xla_dump_hlo_as_dot or o.xla_dump_hlo_as_html)
        if text_wanted:
            self.write(f"{stage}.txt", module.to_text())
        for fmt, flag in (("dot", o.xla_dump_hlo_as_dot), ("html", o.xla_dump_hlo_as_html)):
            if flag:
                _ensure_renderers()
                render = _renderers.get(fmt)
                if render is not None:
                    self.write(f"{stage}.{fmt}", render(module))

    def pass_hook(self):
        """The pipeline dump_hook for ``--xla_dump_hlo_pass_re``, or None."""
        pattern = self.options.xla_dump_hlo_pass_re
        if not self.enabled or not pattern:
            return None
        regex = re.compile(pattern)

        def hook(module, pipeline, pass_name, changed, next_pass=None):
            before = next_pass or "pipeline-end"
            after = pass_name or "pipeline-start"
            if regex.search(after) or regex.search(before):
                step = next(self.step)
                self.dump_module(module, f"{step:04d}.{_safe(pipeline)}.after_{_safe(after)}."
                                         f"before_{_safe(before)}")
        return hook

    def dump_snapshot(self, module_text, args, result):
        """One execution: module text, arguments and results (see the module docstring)."""
        if not self.enabled or not self.options.xla_dump_hlo_snapshots:
            return None
        from xla.tools.arrays import flatten_result
        arrays = {"hlo_module": np.array(module_text)}
        for i, a in enumerate(args):
            arrays[f"arg{i}"] = np.asarray(a)
        for i, r in enumerate(flatten_result(result)):
            arrays[f"out{i}"] = np.asarray(r)
        import io
        buffer = io.BytesIO()
        np.savez(buffer, **arrays)
        return self.write(f"snapshot.{next(self.snapshot_count)}.npz", buffer.getvalue())


def _safe(name):
    return re.sub(r"[^A-Za-z0-9_.\-]", "_", str(name))


def dumper_for(module, platform=None, options=None):
    from xla.debug_options import debug_options
    return ModuleDumper(module, options or debug_options(), platform)
