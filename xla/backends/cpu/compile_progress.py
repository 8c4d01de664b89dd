"""Compile progress on stderr (``--xla_log_compile_progress``).

One line when each stage starts (passes, codegen, llvm) with the seconds
since the compilation began, kernels compiled of total while LLVM works (at
most about one line a second), and a closing line with the stage times.
"""
import sys
import time

REPORT_INTERVAL_S = 1.0


class CompileProgress:
    def __init__(self, module_name, stream=None):
        self.module_name = module_name
        self.stream = stream or sys.stderr
        self.start = time.perf_counter()
        self.last = 0.0

    def _print(self, text):
        elapsed = time.perf_counter() - self.start
        print(f"xla cpu compile {self.module_name} [{elapsed:7.2f} s] {text}",
              file=self.stream, flush=True)

    def stage(self, name):
        self._print(f"stage {name}")

    def kernels(self, done, total):
        now = time.perf_counter()
        if done == total or now - self.last >= REPORT_INTERVAL_S:
            self.last = now
            self._print(f"kernels compiled {done}/{total}")

    def done(self, timings):
        parts = [f"{k} {v:.2f} s" for k, v in timings.items() if isinstance(v, float)]
        counts = [f"{k} {v}" for k, v in timings.items() if isinstance(v, int)]
        self._print("done: " + ", ".join(parts + counts))
