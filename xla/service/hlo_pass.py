"""The pass interface, pipelines and fixed-point sub-pipelines.

A pass has a ``name`` and ``run(module) -> bool`` that says whether it
changed the module. A pipeline runs passes in order and, per pass:

* skips it if its name is in ``disabled_passes`` (``--xla_disable_hlo_passes``);
* times it (``pipeline.timings``: pass name -> seconds, summed over runs);
* runs the verifier after it when ``verify`` is set and the pass changed
  the module, so a broken invariant is blamed on the pass that broke it
  (with the verifier's ``allow_mixed_precision`` when the pipeline's
  ``allow_mixed_precision`` is set);
* calls ``dump_hook(module, pipeline_name, pass_name, changed, next_pass)``
  when set: once before the first pass (``pass_name`` None) and after each
  pass (``next_pass`` None after the last), the hook through which the dump
  options write the module between chosen passes (``xla/service/dump.py``).

``HloPassFix`` reruns a pass (or sub-pipeline) until it reports no change,
bounded by ``max_iterations`` so that two passes undoing each other cannot
loop forever.
"""
import time

from xla.errors import XlaError
from xla.gc_util import paused_gc


class HloPass:
    """Base class; subclasses set ``name`` and implement ``run``."""

    name = "unnamed-pass"

    def run(self, module):
        raise NotImplementedError

    def __repr__(self):
        return f"<{type(self).__name__} {self.name}>"


class PassError(XlaError):
    """A pass left the module invalid; names the pass."""


class HloPassPipeline(HloPass):
    def __init__(self, name, passes=(), verify=False, disabled_passes=(), dump_hook=None,
                 allow_mixed_precision=False):
        self.name = name
        self.passes = list(passes)
        self.verify = verify
        self.allow_mixed_precision = allow_mixed_precision
        self.disabled_passes = frozenset(disabled_passes)
        self.dump_hook = dump_hook
        self.timings = {}
        self.run_log = []  # (pass name, changed, seconds), in order

    def add_pass(self, p):
        self.passes.append(p)
        return p

    def _propagate(self, p):
        # Sub-pipelines inherit the options of the pipeline that runs them.
        inner = p.body if isinstance(p, HloPassFix) else p
        if isinstance(inner, HloPassPipeline):
            inner.verify = inner.verify or self.verify
            inner.allow_mixed_precision = inner.allow_mixed_precision or self.allow_mixed_precision
            inner.disabled_passes = inner.disabled_passes | self.disabled_passes
            inner.dump_hook = inner.dump_hook or self.dump_hook

    def run(self, module):
        with paused_gc():
            return self._run(module)

    def _run(self, module):
        changed_any = False
        active = [p for p in self.passes if p.name not in self.disabled_passes]
        if self.dump_hook:
            self.dump_hook(module, self.name, None, False, active[0].name if active else None)
        for k, p in enumerate(active):
            self._propagate(p)
            start = time.perf_counter()
            changed = bool(p.run(module))
            seconds = time.perf_counter() - start
            self.timings[p.name] = self.timings.get(p.name, 0.0) + seconds
            self.run_log.append((p.name, changed, seconds))
            if changed:
                for comp in module.computations:
                    if not module.is_scheduled:
                        comp.sort_post_order()
                if self.verify:
                    self._verify(module, p.name, self.allow_mixed_precision)
            if self.dump_hook:
                following = active[k + 1].name if k + 1 < len(active) else None
                self.dump_hook(module, self.name, p.name, changed, following)
            changed_any |= changed
        return changed_any

    @staticmethod
    def _verify(module, pass_name, allow_mixed_precision=False):
        from xla.hlo.verifier import verify_module
        try:
            verify_module(module, allow_mixed_precision=allow_mixed_precision)
        except XlaError as e:
            raise PassError(f"module is invalid after pass {pass_name}: {e}") from e

    def all_timings(self, prefix=""):
        """Seconds per pass, with the passes of sub-pipelines as
        ``outer/inner`` after the sub-pipeline's own total."""
        out, seen = {}, set()
        for p in self.passes:
            name = prefix + p.name
            if p.name in self.timings:
                out[name] = self.timings[p.name]   # every run under that name, summed
            inner = p.body if isinstance(p, HloPassFix) else p
            if isinstance(inner, HloPassPipeline) and id(inner) not in seen:
                # Two sub-pipelines of one name (CPU: two "simplification"
                # runs) add up, as their total above does.
                seen.add(id(inner))
                for key, seconds in inner.all_timings(name + "/").items():
                    out[key] = out.get(key, 0.0) + seconds
        return out

    def timing_report(self):
        """Lines ``pass: seconds`` sorted by time, slowest first."""
        rows = sorted(self.timings.items(), key=lambda kv: -kv[1])
        return "\n".join(f"{name}: {sec * 1e3:.2f} ms" for name, sec in rows)


class HloPassFix(HloPass):
    """Runs ``body`` until it reports no change (at most ``max_iterations``)."""

    def __init__(self, body, max_iterations=25):
        self.body = body
        self.name = body.name
        self.max_iterations = max_iterations
        self.iterations = 0

    def run(self, module):
        changed_any = False
        for self.iterations in range(1, self.max_iterations + 1):
            if not self.body.run(module):
                break
            changed_any = True
        return changed_any
