"""Profiling executions: a timeline (Chrome trace JSON, which Perfetto and
chrome://tracing open) and per-instruction totals against the machine's
measured limits.

::

    with xla.profiler.trace("/tmp/prof") as prof:
        step(params, x, y)            # compiled inside the block: instrumented
    print(prof.summary())             # per instruction: time, calls, GB/s, GFLOP/s
    # /tmp/prof/<time>.trace.json: open in https://ui.perfetto.dev

Inside ``trace`` (or with ``XLA_FLAGS=--xla_hlo_profile=true``, XLA's flag for
per-HLO profiles, which prints the totals on stderr when the process exits)
the CPU backend compiles every instruction of the entry
computation between two calls into this module (``__xla_cpu_profile_begin/
end``, ctypes callbacks, about a microsecond each), and each execution
records its own span, so the trace shows executions and, nested under them,
every kernel, library call (dot, convolution, FFT) and control-flow step,
with its instruction's name, opcode and bytes. Executables compiled outside
a trace record only their execution spans. Row groups (the CPU's merging of
adjacent row loops) are off in instrumented code, so each kernel is timed
on its own.

Bytes per instruction are its operands' and results' buffer sizes (what it
must move at least once); FLOPs are counted for dot (2 x the product of all
dimensions) and convolution. ``machine_limits()`` measures this machine's
streaming bandwidth (a copy far larger than the caches) and peak f32 GEMM
rate (NumPy's matmul) once per process; the summary reports each
instruction's achieved rate as a fraction of them.
"""
import contextlib
import ctypes
import itertools
import os
import threading
import time

_lock = threading.Lock()
_active = None            # the Profile being recorded, or None
_process = None           # --xla_hlo_profile outside trace(): printed at exit
_ops = {}                 # profile op id -> (module name, instruction name, opcode, bytes, flops)
_ids = itertools.count(1)
_local = threading.local()


class Profile:
    """Events recorded by one ``trace`` block."""

    def __init__(self, directory):
        self.directory = directory
        self.events = []          # (name, category, start ns, end ns, thread id, args)
        self.path = None

    def add(self, name, category, start, end, args, track=None):
        """One span; ``track`` names the timeline row (default: the calling
        thread's; e.g. a GPU stream's)."""
        self.events.append((name, category, start, end,
                            threading.get_ident() if track is None else track, args))

    # ----- outputs -------------------------------------------------------------------
    def chrome_trace(self):
        """The trace as Chrome's trace-event JSON object."""
        t0 = min((e[2] for e in self.events), default=0)
        threads = {}
        events = [{"name": "process_name", "ph": "M", "pid": 1, "args": {"name": "xla"}}]
        for name, category, start, end, tid, args in self.events:
            t = threads.setdefault(tid, len(threads) + 1)
            events.append({"name": name, "cat": category, "ph": "X", "pid": 1, "tid": t,
                           "ts": (start - t0) / 1e3, "dur": max(end - start, 0) / 1e3,
                           "args": args})
        for tid, t in threads.items():
            events.append({"name": "thread_name", "ph": "M", "pid": 1, "tid": t,
                           "args": {"name": tid if isinstance(tid, str) else f"xla thread {t}"}})
        return {"traceEvents": events, "displayTimeUnit": "ns"}

    def write(self):
        os.makedirs(self.directory, exist_ok=True)
        stamp = time.strftime("%Y%m%d-%H%M%S")
        path = os.path.join(self.directory, f"{stamp}.{os.getpid()}.trace.json")
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            import json   # here: ``import xla`` does not need it
            json.dump(self.chrome_trace(), f)
        os.replace(tmp, path)
        self.path = path
        return path

    def totals(self):
        """{(module, instruction): dict(opcode, calls, seconds, bytes, flops)}."""
        out = {}
        for name, category, start, end, _, args in self.events:
            if category != "instruction":
                continue
            key = (args["module"], name)
            row = out.setdefault(key, {"opcode": args["opcode"], "calls": 0, "seconds": 0.0,
                                       "bytes": args["bytes"], "flops": args["flops"]})
            row["calls"] += 1
            row["seconds"] += (end - start) / 1e9
        return out

    def summary(self, limits=None, top=30):
        """Per-instruction totals, slowest first, with achieved bandwidth and
        FLOP rate as fractions of the machine's (``machine_limits()``)."""
        limits = limits or machine_limits()
        rows = sorted(self.totals().items(), key=lambda kv: -kv[1]["seconds"])
        total = sum(r["seconds"] for _, r in rows)
        lines = [f"profile: {len(self.events)} events; machine: {limits['bandwidth'] / 1e9:.1f} "
                 f"GB/s copy bandwidth, {limits['flops'] / 1e9:.0f} GFLOP/s f32 GEMM",
                 f"{'instruction':<36} {'opcode':<14} {'calls':>6} {'total ms':>9} {'%':>5} "
                 f"{'GB/s':>7} {'of bw':>6} {'GFLOP/s':>8} {'of peak':>7}"]
        for (module, name), r in rows[:top]:
            per_call = r["seconds"] / r["calls"] if r["calls"] else 0.0
            gbs = r["bytes"] / per_call / 1e9 if per_call else 0.0
            gflops = r["flops"] / per_call / 1e9 if per_call and r["flops"] else 0.0
            lines.append(
                f"{name[:36]:<36} {r['opcode'][:14]:<14} {r['calls']:>6} {r['seconds'] * 1e3:>9.3f} "
                f"{100 * r['seconds'] / total if total else 0:>5.1f} {gbs:>7.2f} "
                f"{gbs * 1e9 / limits['bandwidth']:>6.2f} "
                + (f"{gflops:>8.1f} {gflops * 1e9 / limits['flops']:>7.2f}" if gflops else f"{'':>8} {'':>7}"))
        return "\n".join(lines)

    def timeline_html(self, limits=None, width=1100):
        """A self-contained HTML page: the timeline (executions on top, their
        instructions below, one lane per thread, bars colored by opcode
        kind) and the per-instruction totals."""
        import html
        limits = limits or machine_limits()
        if not self.events:
            return "<!doctype html><html><body><p>no events</p></body></html>"
        t0 = min(e[2] for e in self.events)
        t1 = max(e[3] for e in self.events)
        span = max(t1 - t0, 1)
        colors = {"execution": "#455a64", "dot": "#d32f2f", "convolution": "#d32f2f",
                  "fusion": "#1976d2", "reduce": "#388e3c"}
        threads = sorted({e[4] for e in self.events})
        lane = {(t, c): 2 * i + (0 if c == "execution" else 1)
                for i, t in enumerate(threads) for c in ("execution", "instruction")}
        rows = 2 * len(threads)
        # crispEdges: a bar a pixel or two wide (a short instruction in a long
        # trace) is drawn in its own color, not anti-aliased into a blend.
        svg = [f"<svg width='{width}' height='{24 * rows + 30}' shape-rendering='crispEdges' "
               "xmlns='http://www.w3.org/2000/svg'>",
               f"<rect x='0' y='0' width='{width}' height='{24 * rows + 30}' fill='#fafafa'/>"]
        for name, category, start, end, tid, args in self.events:
            x = (start - t0) / span * (width - 20) + 10
            w = max((end - start) / span * (width - 20), 1.0)
            y = 24 * lane[(tid, category)] + 10
            color = colors.get("execution" if category == "execution" else args.get("opcode"),
                               "#f9a825")
            svg.append(f"<rect x='{x:.1f}' y='{y}' width='{w:.1f}' height='18' fill='{color}'>"
                       f"<title>{html.escape(name)} {(end - start) / 1e3:.1f} us</title></rect>")
        svg.append(f"<text x='10' y='{24 * rows + 26}' font-size='11'>0 us</text>"
                   f"<text x='{width - 80}' y='{24 * rows + 26}' font-size='11'>"
                   f"{span / 1e3:.0f} us</text></svg>")
        table = ["<table><tr><th>instruction</th><th>opcode</th><th>calls</th><th>ms</th>"
                 "<th>GB/s</th><th>GFLOP/s</th></tr>"]
        for (module, name), r in sorted(self.totals().items(), key=lambda kv: -kv[1]["seconds"]):
            per = r["seconds"] / r["calls"] if r["calls"] else 0
            gbs = r["bytes"] / per / 1e9 if per else 0
            gfl = r["flops"] / per / 1e9 if per and r["flops"] else 0
            table.append(f"<tr><td>{html.escape(name)}</td><td>{html.escape(r['opcode'])}</td>"
                         f"<td>{r['calls']}</td><td>{r['seconds'] * 1e3:.3f}</td>"
                         f"<td>{gbs:.2f}</td><td>{gfl:.1f}</td></tr>")
        table.append("</table>")
        return ("<!doctype html><html><head><meta charset='utf-8'><title>xla profile</title>"
                "<style>body{font:13px sans-serif;margin:12px;background:#fff}"
                "td,th{padding:1px 8px;text-align:left}</style></head><body>"
                f"<h3>xla profile: {len(self.events)} events, {span / 1e6:.2f} ms; machine "
                f"{limits['bandwidth'] / 1e9:.1f} GB/s, {limits['flops'] / 1e9:.0f} GFLOP/s</h3>"
                + "".join(svg) + "".join(table) + "</body></html>")


def active():
    return _active


def _current():
    return _active if _active is not None else _process


def profile_process():
    """``--xla_hlo_profile`` set outside ``trace``: record every instrumented
    execution of this process and print the per-instruction totals on
    stderr at exit (as XLA prints its HLO profile)."""
    global _process
    with _lock:
        if _process is None:
            _process = Profile(None)
            import atexit
            import sys

            def report():
                if _process.events:
                    print(_process.summary(), file=sys.stderr)
            atexit.register(report)
    return _process


@contextlib.contextmanager
def trace(directory, write=True):
    """Records every execution in the block (and instruments what is
    compiled in it); writes the trace to ``directory`` at the end."""
    global _active
    from xla import debug_options
    profile = Profile(directory)
    with _lock:
        if _active is not None:
            raise RuntimeError("xla.profiler.trace blocks do not nest")
        _active = profile
    try:
        with debug_options.override(xla_hlo_profile=True):
            yield profile
    finally:
        with _lock:
            _active = None
        if write:
            profile.write()


def register_op(module_name, instr, nbytes, flops):
    """A profile id for ``instr`` (baked into instrumented code)."""
    with _lock:
        op = next(_ids)
        _ops[op] = (module_name, instr.name, instr.opcode, int(nbytes), int(flops))
    return op


def _begin(op):
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    stack.append((op, time.perf_counter_ns()))


def _end(op):
    end = time.perf_counter_ns()
    stack = getattr(_local, "stack", None)
    if not stack:
        return
    started_op, start = stack.pop()
    profile = _current()
    if profile is None or started_op != op:
        return
    module, name, opcode, nbytes, flops = _ops[op]
    profile.add(name, "instruction", start, end, {"module": module, "opcode": opcode,
                                                  "bytes": nbytes, "flops": flops})


def recording():
    """Whether executions are being recorded now (``trace`` or ``--xla_hlo_profile``)."""
    return _current() is not None


def record_instruction(module_name, name, opcode, nbytes, flops, start, end, track=None):
    """An instruction's span timed by a backend itself (e.g. with GPU events)."""
    profile = _current()
    if profile is not None:
        profile.add(name, "instruction", start, end, {"module": module_name, "opcode": opcode,
                                                      "bytes": nbytes, "flops": flops}, track)


def instruction_cost(h, assignment):
    """(bytes, flops) of instruction ``h``: its operands' and results' buffer
    sizes (what it must move at least once), and the floating-point
    operations of a dot or convolution (0 for others)."""
    import math
    nbytes = sum(assignment.buffer(x, i).size for x in [h] + list(h.operands)
                 if assignment.has_buffers(x) for i, s in x.shape.leaves() if s.is_array)
    flops = 0
    if h.opcode == "dot" and h.shape.is_array:
        lhs = h.operands[0].shape.dimensions
        k = math.prod(lhs[d] for d in h.attr("lhs_contracting_dims", ()))
        flops = 2 * h.shape.num_elements() * k
    elif h.opcode == "convolution" and h.shape.is_array:
        # Each output element: one multiply-add per kernel element of its
        # output feature (kernel spatial size x input features per group).
        rhs = h.operands[1].shape
        dnums = h.attr("dim_labels")
        out_features = rhs.dimensions[dnums.kernel_output_feature_dimension] if dnums else 1
        flops = 2 * h.shape.num_elements() * (rhs.num_elements() // max(out_features, 1))
    return int(nbytes), int(flops)


def record_execution(module_name, start, end):
    profile = _current()
    if profile is not None:
        profile.add(module_name, "execution", start, end, {"module": module_name})


_CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_int64)
_BEGIN = _CALLBACK(_begin)
_END = _CALLBACK(_end)
BEGIN_SYMBOL = "__xla_cpu_profile_begin"
END_SYMBOL = "__xla_cpu_profile_end"


def symbols():
    """The instrumentation's runtime functions (name -> address)."""
    return {BEGIN_SYMBOL: ctypes.cast(_BEGIN, ctypes.c_void_p).value,
            END_SYMBOL: ctypes.cast(_END, ctypes.c_void_p).value}


_limits = None


def machine_limits():
    """{'bandwidth': bytes/s of a large copy, 'flops': f32 GEMM FLOP/s}, measured once."""
    global _limits
    if _limits is None:
        import numpy as np
        src = np.ones(32 * 2**20 // 8)
        dst = np.empty_like(src)
        best = min(_timed(lambda: np.copyto(dst, src)) for _ in range(5))
        a = np.ones((512, 512), np.float32)
        gemm = min(_timed(lambda: a @ a) for _ in range(5))
        _limits = {"bandwidth": 2 * src.nbytes / best, "flops": 2 * 512 ** 3 / gemm}
    return _limits


def _timed(fn):
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t
