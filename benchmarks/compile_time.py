"""Compile time of JAX-lowered modules on the CPU backend, stage by stage.

    .venv/bin/python benchmarks/compile_time.py [--modules=REGEX] [--max_instructions=N]
        [--max_seconds=S] [--passes=K] [--repeats=R] [--repeat_below=N] [--json_out=FILE]

The modules are in benchmarks/modules/ (made by gen_compile_modules.py from
JAX's unoptimized HLO: unrolled MLP, transformer and varied-width MLP
training steps from ~1k to ~40k instructions, and the small seed, softmax,
layernorm and attention functions). For each module, in a child process of
its own (so a hang or a blow-up costs at most --max_seconds, reported as
"over N s", and no in-process cache from one module serves another):

- parse: ``xla.parse_hlo_module`` of the text;
- compile: ``xla.compile(module, "cpu")`` end to end, and its stages
  (passes, buffer assignment, codegen, llvm) from the executable's
  ``compile_timings`` where the compiler provides it; otherwise the stages
  are timed by wrapping the compiler's ``optimize``, ``assign_buffers`` and
  ``emit_module``, and "llvm" is what remains of the compile;
- total = parse + compile (wall), and the CPU time of the compile (all
  threads and worker processes: less sensitive than wall time to other work
  on a shared machine); ``jax`` is jax.jit's ``lower(...).compile()`` time
  from modules/jax_compile_times.json (XLA:CPU, same machine), jax/ours is
  jax over our total (below 1: we are slower); growth/2x is how our total
  grows when the module doubles (from the previous size of the family).

Before the first measured compile each child compiles a small f64 module
(no kernel in common with the benchmarks), so one-time initialization is
not charged to the module; modules under 5,000 instructions (--repeat_below) are measured
--repeats times (each in a fresh child; once only if the first run took
over --repeat_under seconds) and the median is shown. Then the
seed example's first compile in a fresh process (import, parse and compile
timed separately) and the dispatch time of an f32[4] add.
"""
import argparse
import gzip
import json
import math
import os
import re
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
MODULE_DIR = os.path.join(HERE, "modules")
JAX_TIMES = os.path.join(MODULE_DIR, "jax_compile_times.json")
SMALL = ("seed", "softmax", "layernorm", "attention")
STAGES = ("passes", "buffer_assignment", "codegen", "llvm")
REPEAT_BELOW = 5000   # instructions

# A tuple result, so the warmup loads the CPU emitter's extensions too (a
# module without their opcodes does not: ir_emitter.EXTENSION_OPCODES).
WARMUP = """HloModule warmup
ENTRY %main (a: f64[3], b: f64[3]) -> (f64[3], f64[3]) {
  %a = f64[3] parameter(0)
  %b = f64[3] parameter(1)
  %m = f64[3] multiply(%a, %b)
  ROOT %t = (f64[3], f64[3]) tuple(%m, %a)
}
"""

ADD4 = """HloModule add
ENTRY %main (x: f32[4], y: f32[4]) -> f32[4] {
  %x = f32[4] parameter(0)
  %y = f32[4] parameter(1)
  ROOT %a = f32[4] add(%x, %y)
}
"""


# ---------------------------------------------------------------------------
# Child processes.

def _instrument(compiler):
    """Times the stages of a compiler whose executables carry no
    ``compile_timings``: wraps ``optimize`` (passes + buffer assignment) and
    the compiler module's ``assign_buffers`` and ``emit_module``. Returns the
    dict the wrappers fill and the list that receives the pipeline."""
    import xla.backends.cpu.compiler as cc
    stages = {}
    pipelines = []

    def timed(fn, key):
        def wrapper(*a, **k):
            t = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                stages[key] = stages.get(key, 0.0) + time.perf_counter() - t
        return wrapper

    original_pipeline = compiler.pipeline

    def pipeline(**options):
        pipeline = original_pipeline(**options)
        pipelines.append(pipeline)
        return pipeline

    compiler.pipeline = pipeline
    if getattr(cc, "_compile_time_instrumented", False):
        return stages, pipelines
    cc._compile_time_instrumented = True
    compiler.optimize = timed(compiler.optimize, "optimize")
    cc.assign_buffers = timed(cc.assign_buffers, "buffer_assignment")
    cc.emit_module = timed(cc.emit_module, "codegen")
    return stages, pipelines


def _tree_cpu_seconds():
    """User + system CPU seconds of this process, its reaped children and
    its live descendants (the CPU compiler may compile kernels in worker
    processes that outlive the compilation): less sensitive than wall time
    to other work on a shared machine."""
    t = os.times()
    total = t.user + t.system + t.children_user + t.children_system
    try:
        tick = os.sysconf("SC_CLK_TCK")
        parent_of, ticks = {}, {}
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            parent_of[int(entry)] = int(fields[1])
            ticks[int(entry)] = int(fields[11]) + int(fields[12])
        me = os.getpid()
        for pid in parent_of:
            p, seen = parent_of[pid], 0
            while p not in (0, 1, me) and p in parent_of and seen < 64:
                p, seen = parent_of[p], seen + 1
            if p == me and pid != me:
                total += ticks[pid] / tick
    except (OSError, ValueError):
        pass
    return total


def child_measure(path, passes):
    import gc
    import xla
    from xla.backends.cpu.compiler import CpuCompiler

    xla.compile(xla.parse_hlo_module(WARMUP), "cpu")
    with gzip.open(path, "rt") as f:
        text = f.read()
    gc.collect()
    t = time.perf_counter()
    module = xla.parse_hlo_module(text)
    t_parse = time.perf_counter() - t
    n = sum(len(c.instructions) for c in module.computations)
    compiler = CpuCompiler()
    stages, pipelines = _instrument(compiler)
    gc.collect()
    c = _tree_cpu_seconds()
    t = time.perf_counter()
    exe = xla.compile(module, "cpu", compiler=compiler)
    t_compile = time.perf_counter() - t
    cpu_compile = _tree_cpu_seconds() - c
    reported = getattr(exe, "compile_timings", None)
    if reported:
        timings = {k: v for k, v in reported.items()}
        source = "compile_timings"
    else:
        timings = {"buffer_assignment": stages.get("buffer_assignment", 0.0),
                   "codegen": stages.get("codegen", 0.0)}
        timings["passes"] = stages.get("optimize", 0.0) - timings["buffer_assignment"]
        timings["llvm"] = t_compile - stages.get("optimize", 0.0) - timings["codegen"]
        source = "instrumented"
    pass_times = {}
    for p in pipelines:
        for name, sec in (getattr(p, "timings", None) or {}).items():
            pass_times[name] = pass_times.get(name, 0.0) + sec
    top = sorted(pass_times.items(), key=lambda kv: -kv[1])[:passes]
    print(json.dumps({"instructions": n, "parse": t_parse, "compile": t_compile,
                      "compile_cpu": cpu_compile, "load_average": os.getloadavg()[0],
                      "timings": timings, "source": source, "top_passes": top,
                      "after_instructions": sum(len(c.instructions) for c in exe.module.computations)
                      if getattr(exe, "module", None) is not None else None}))


def child_cold(path, dispatch_calls):
    """Seed example in a fresh process: import, parse, first compile, a
    second compile, and the dispatch time of an f32[4] add."""
    import importlib.util
    package = importlib.util.find_spec("xla").submodule_search_locations[0]
    had_cache = os.path.exists(importlib.util.cache_from_source(
        os.path.join(package, "backends", "cpu", "compiler.py")))
    t0 = time.perf_counter()
    import xla
    import numpy as np
    t_import = time.perf_counter() - t0
    with gzip.open(path, "rt") as f:
        text = f.read()
    t = time.perf_counter()
    module = xla.parse_hlo_module(text)
    t_parse = time.perf_counter() - t
    t = time.perf_counter()
    exe = xla.compile(module, "cpu")
    t_first = time.perf_counter() - t
    t = time.perf_counter()
    xla.compile(xla.parse_hlo_module(text), "cpu")
    t_second = time.perf_counter() - t
    x = np.arange(1024, dtype=np.float32) / 1024
    result = float(np.asarray(exe.execute(x, x, x)))
    expected = float(np.sum(x + x * x, dtype=np.float64))
    add = xla.compile(xla.parse_hlo_module(ADD4), "cpu")
    a4 = np.ones(4, np.float32)
    add.execute(a4, a4)
    per_call = []
    for _ in range(3):
        t = time.perf_counter()
        for _ in range(dispatch_calls):
            add.execute(a4, a4)
        per_call.append((time.perf_counter() - t) / dispatch_calls)
    print(json.dumps({"no_bytecode_cache": not had_cache,
                      "import": t_import, "parse": t_parse, "first_compile": t_first,
                      "second_compile": t_second, "dispatch": statistics.median(per_call),
                      "seed_ok": abs(result - expected) <= 1e-3 * abs(expected)}))


def run_child(args, timeout):
    cmd = [sys.executable, os.path.abspath(__file__)] + args
    t = time.perf_counter()
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, f"over {timeout:g} s", time.perf_counter() - t
    wall = time.perf_counter() - t
    if out.returncode != 0:
        lines = (out.stderr or out.stdout).strip().splitlines() or ["(no output)"]
        return None, "failed: " + lines[-1][:160], wall
    return json.loads(out.stdout.strip().splitlines()[-1]), None, wall


# ---------------------------------------------------------------------------

def family_of(name):
    m = re.match(r"(.*)_L(\d+)$", name)
    return (m.group(1), int(m.group(2))) if m else ("small", 0)


def module_names():
    names = [f[:-len(".hlo.gz")] for f in os.listdir(MODULE_DIR) if f.endswith(".hlo.gz")]
    order = {n: i for i, n in enumerate(SMALL)}
    fam_order = {"mlp_train": 0, "transformer_train": 1, "mlp_varied_train": 2}

    def key(name):
        fam, layers = family_of(name)
        if fam == "small":
            return (0, 0, order.get(name, 99), name)
        return (1, fam_order.get(fam, 9), layers, name)
    return sorted(names, key=key)


def fmt_s(x):
    if x is None:
        return "-"
    return f"{x * 1e3:.0f}ms" if x < 1 else f"{x:.2f}s"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modules", default="", help="regex over module names (default: all)")
    parser.add_argument("--max_instructions", type=int, default=0, help="skip larger modules (0: none)")
    parser.add_argument("--max_seconds", type=float, default=300,
                        help="a module whose child takes longer is reported as 'over N s'")
    parser.add_argument("--keep_going", action="store_true",
                        help="after a module goes over, still try the larger ones of its family")
    parser.add_argument("--repeats", type=int, default=3,
                        help="runs (median) of modules under --repeat_below instructions")
    parser.add_argument("--repeat_below", type=int, default=REPEAT_BELOW,
                        help="instructions below which a module is run --repeats times")
    parser.add_argument("--repeat_under", type=float, default=10,
                        help="repeat only modules whose first run took less (seconds)")
    parser.add_argument("--passes", type=int, default=5, help="slowest passes to list per module")
    parser.add_argument("--dispatch_calls", type=int, default=20000)
    parser.add_argument("--no_cold", action="store_true", help="skip the fresh-process seed compile")
    parser.add_argument("--label", default="", help="a note for the header (e.g. the commit measured)")
    parser.add_argument("--json_out", default="", help="also write the results as JSON")
    parser.add_argument("--_child", default="", help=argparse.SUPPRESS)
    parser.add_argument("--_cold", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args._child:
        return child_measure(args._child, args.passes)
    if args._cold:
        return child_cold(args._cold, args.dispatch_calls)

    jax_times = {}
    if os.path.exists(JAX_TIMES):
        with open(JAX_TIMES) as f:
            jax_times = json.load(f).get("modules", {})
    names = [n for n in module_names() if re.search(args.modules, n)]
    if args.max_instructions:
        names = [n for n in names
                 if jax_times.get(n, {}).get("instructions", 0) <= args.max_instructions]

    import xla
    print(f"compile time{' of ' + args.label if args.label else ''}, xla from "
          f"{os.path.dirname(getattr(xla, '__file__', '?'))}, {os.cpu_count()} cpus, "
          f"{time.strftime('%Y-%m-%d %H:%M')}, --max_seconds={args.max_seconds:g}")
    header = (f"{'module':26} {'instr':>6} {'parse':>7} {'passes':>7} {'buf.asg':>7} "
              f"{'codegen':>7} {'llvm':>7} {'compile':>8} {'total':>8} {'cpu':>7} {'jax':>7} "
              f"{'jax cpu':>7} {'jax/ours':>8} {'growth/2x':>9} {'load':>4}  kernels")
    print(header)
    print("-" * len(header))
    results = {}
    over = {}
    prev = {}
    details = []
    for name in names:
        fam, _ = family_of(name)
        path = os.path.join(MODULE_DIR, name + ".hlo.gz")
        jt = jax_times.get(name, {})
        n_expected = jt.get("instructions")
        if fam in over and not args.keep_going:
            results[name] = {"skipped": f"{over[fam]} went over"}
            print(f"{name:26} {n_expected or '?':>6} skipped ({over[fam]} was over {args.max_seconds:g} s)")
            continue
        runs = args.repeats if (n_expected or 0) < args.repeat_below else 1
        measured = []
        why = None
        for _ in range(max(1, runs)):
            r, why, wall = run_child(["--_child", path, "--passes", str(args.passes)], args.max_seconds)
            if r is None:
                break
            measured.append(r)
            if r["parse"] + r["compile"] > args.repeat_under:
                break
        if not measured:
            over[fam] = name
            results[name] = {"error": why}
            print(f"{name:26} {n_expected or '?':>6} {why}", flush=True)
            continue
        r = sorted(measured, key=lambda m: m["parse"] + m["compile"])[len(measured) // 2]
        total = r["parse"] + r["compile"]
        t = r["timings"]
        jax_s = jt.get("jax_compile_s")
        jax_col = fmt_s(jax_s)
        if jax_s is None and jt.get("jax_skipped"):
            m = re.search(r"over (\d+) s", jt["jax_skipped"])
            jax_col = f">{m.group(1)}s" if m and "timed out" in jt["jax_skipped"] else "skip"
        ratio = f"{jax_s / total:.3f}" if jax_s else "-"
        growth = "-"
        if fam in prev and fam != "small":
            n0, t0 = prev[fam]
            if r["instructions"] > n0:
                growth = f"x{(total / t0) ** (1 / math.log2(r['instructions'] / n0)):.2f}"
        if fam != "small":
            prev[fam] = (r["instructions"], total)
        kern = ""
        if "kernels" in t:
            kern = " ".join(f"{k.replace('kernels_', '')}={v}" for k, v in t.items()
                            if k.startswith("kernels"))
        print(f"{name:26} {r['instructions']:>6} {fmt_s(r['parse']):>7} {fmt_s(t.get('passes')):>7} "
              f"{fmt_s(t.get('buffer_assignment')):>7} {fmt_s(t.get('codegen')):>7} "
              f"{fmt_s(t.get('llvm')):>7} {fmt_s(r['compile']):>8} {fmt_s(total):>8} "
              f"{fmt_s(r.get('compile_cpu')):>7} {jax_col:>7} {fmt_s(jt.get('jax_compile_cpu_s')):>7} "
              f"{ratio:>8} {growth:>9} {r.get('load_average', 0):>4.1f}  {kern}", flush=True)
        r.update(total=total, runs=len(measured), jax_compile_s=jax_s)
        results[name] = r
        if r.get("top_passes"):
            details.append(f"{name}: " + ", ".join(f"{p} {fmt_s(s)}" for p, s in r["top_passes"]))
    sources = {r.get("source") for r in results.values() if "source" in r}
    print(f"stages from: {', '.join(sorted(sources)) or '-'}; total = parse + compile (wall); "
          f"cpu = CPU seconds of our compile (all threads and worker processes); jax, jax cpu = "
          f"jax.jit(f).lower(...).compile() wall and CPU, XLA:CPU (modules/jax_compile_times.json; "
          f">N s: timed out, skip: a smaller module of the family took over 120 s); "
          f"load = 1-minute load average after the compile")
    if details:
        print(f"\nslowest passes (of the optimization pipeline):")
        for line in details:
            print("  " + line)
    if not args.no_cold:
        r, why, wall = run_child(["--_cold", os.path.join(MODULE_DIR, "seed.hlo.gz"),
                                  "--dispatch_calls", str(args.dispatch_calls)], args.max_seconds)
        print()
        if r is None:
            print(f"seed example in a fresh process: {why}")
        else:
            print(f"seed example in a fresh process: import xla {fmt_s(r['import'])}, parse "
                  f"{fmt_s(r['parse'])}, first compile {fmt_s(r['first_compile'])}, second compile "
                  f"{fmt_s(r['second_compile'])} (process wall {fmt_s(wall)}, result "
                  f"{'ok' if r['seed_ok'] else 'WRONG'})")
            print(f"dispatch of an f32[4] add: {r['dispatch'] * 1e6:.2f} us per call")
            if r.get("no_bytecode_cache"):
                print("note: xla had no bytecode cache, so the import and first compile above "
                      "include compiling its Python sources (2-3x slower; `python -m compileall "
                      "xla` writes the cache)")
        results["_cold"] = r or {"error": why}
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(results, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
