"""The CPU runtime's goals (issue 19), checked from one run: the machine's
limits, the workloads of cpu_workloads.py (ours, NumPy, jax.jit) and the
modules as JAX lowers them of jax_modules.py (ours, XLA:CPU on the same HLO
text), each printed as those scripts print them, then one verdict per goal
with the rows that fall short of it.

    PYTHONPATH=.:<jax site-packages> .venv/bin/python benchmarks/cpu_goals.py [--quick]

Without jax the goals that compare with it say so and are not judged.

The goals, and the rows each is judged on:

* memory-bound (fused elementwise, softmax, layernorm, RMSNorm, GELU,
  reductions; f32, bf16 and f16): at least ``MEMORY_BOUND_OF_LIMIT`` of the
  streaming bandwidth on the bytes that must move, and at least
  ``MEMORY_BOUND_VS_JAX`` times jax.jit's speed. Rows: cpu_workloads' sum,
  softmax, layernorm and GELU rows; jax_modules' ``rt_rmsnorm``,
  ``rt_softmax``, ``rt_layernorm``, ``rt_gelu``, ``rt_cumsum`` (a scan)
  and ``rt_argmax`` modules (from 256 K
  elements, which fit the cache: there the bandwidth of the cache bounds
  them, not the memory's, and the fraction can pass 1).
* dots and convolutions of every form: no slower than the faster of NumPy
  and jax.jit. Rows: cpu_workloads' matmul, matvec and MLP rows (NumPy and
  jax.jit); jax_modules' batched matmul, matrix-vector, s8 and bf16 dots,
  dots with a transposed operand and of odd sizes, convolutions (1x1,
  dilated, 1-D, 3-D, bf16, s8, depthwise and a depthwise layer's gradients) and
  the conv net's forward pass (XLA:CPU).
* integer dots: at least ``INTEGER_DOT_SPEEDUP`` times faster than before
  the issue's work, ``INTEGER_DOT_BASELINE`` (seconds, measured on the
  2-core EPYC VM: meaningful there only).
* training steps (transformer block, conv net, MLP, at f32 and bf16):
  at least ``TRAINING_STEP_VS_JAX`` times jax.jit's speed (XLA:CPU on the
  same module).

* nothing slower than before: with ``--baseline FILE`` (an earlier run's
  output, of this script, cpu_workloads.py or jax_modules.py, such as the
  README's tables' files in benchmarks/results/), every row both runs
  have at no more than ``--tolerance`` times the earlier time (the best of
  the file's lines for it: a rerun section counts too).

Other rows (concatenate, attention, the transformer block's forward pass,
the small modules of the compile-time fixtures) are measured and printed,
with no goal of their own. Timings on a shared VM move between runs: the
verdicts are those of this run.
"""
import argparse
import pathlib
import re
import sys
import textwrap

MEMORY_BOUND_OF_LIMIT = 0.8
MEMORY_BOUND_VS_JAX = 1.3
TRAINING_STEP_VS_JAX = 1.2
INTEGER_DOT_SPEEDUP = 4.0
# cpu_workloads row -> seconds before the runtime's s8 GEMM (docs/cpu_backend.md,
# "Low-precision dots", the "old" column: the dots widened to f32; 2026-11-26,
# 2-core EPYC VM, the faster end of each range).
INTEGER_DOT_BASELINE = {
    "matmul s8 x s8 -> s32 [512]^3": 3.1e-3,
    "matmul s8 -> s32 [16x128]^3 batched": 1.0e-3,
    "matvec s8 -> s32 [4096,4096]": 15e-3,
}

DEFAULT_TOLERANCE = 1.25
# An output line of jax_modules.py (name, instructions, our time) or of
# cpu_workloads.py (name, our time, NumPy's time).
_MODULE_LINE = re.compile(r"^(?P<name>\S+)\s+\d+\s+(?P<ours>\d+\.\d+)ms\b")
_WORKLOAD_LINE = re.compile(r"^(?P<name>\S.*?)\s+(?P<ours>\d+\.\d+)ms\s+\d+\.\d+ms")

_MEMORY_WORKLOADS = ("sum(", "softmax", "layernorm", "gelu")
_DOT_WORKLOADS = ("matmul", "matvec", "mlp")
_MEMORY_MODULES = ("rt_rmsnorm", "rt_softmax", "rt_layernorm", "rt_gelu", "rt_cumsum",
                   "rt_argmax")
_DOT_MODULES = ("rt_batched_matmul", "rt_matvec", "rt_cnn")
_DOT_MODULE_PREFIXES = ("rt_dot_", "rt_conv")   # rt_dot_s8, rt_dot_nt, rt_conv_1x1, ...
_TRAINING_MODULES = ("rt_transformer_block_train", "rt_cnn_train", "rt_mlp_train",
                     "rt_mlp_train_bf16", "rt_transformer_block_train_bf16")


class Goal:
    """One goal: its text, and per judged row (name, figure, holds)."""

    def __init__(self, text):
        self.text = text
        self.rows = []
        self.unjudged = []  # rows without the figure the goal compares with (no jax)
        self.numpy_only = []  # dots judged against NumPy alone (no jax)

    def judge(self, name, figure, holds):
        self.rows.append((name, figure, holds))

    def short(self):
        return [(n, f) for n, f, holds in self.rows if not holds]


def read_baseline(text):
    """{row name: seconds} of our times in an earlier run's output ``text``
    (the least where a row appears more than once)."""
    times = {}
    for line in text.splitlines():
        match = _MODULE_LINE.match(line) or _WORKLOAD_LINE.match(line)
        if match:
            name, seconds = match["name"], float(match["ours"]) / 1e3
            times[name] = min(seconds, times.get(name, seconds))
    return times


def evaluate(workloads, modules, baseline=None, tolerance=DEFAULT_TOLERANCE):
    """The goals judged on ``workloads`` (cpu_workloads.measure's dicts) and
    ``modules`` (jax_modules.measure's), and against ``baseline``
    (read_baseline's) where given: a list of Goal."""
    workloads, modules = list(workloads), list(modules)  # read twice
    of_limit = Goal(f"memory-bound: >= {MEMORY_BOUND_OF_LIMIT:.2f} of the streaming bandwidth")
    vs_jax = Goal(f"memory-bound: >= {MEMORY_BOUND_VS_JAX:.2f}x jax.jit")
    dots = Goal("dots and convolutions: >= 1.00x the faster of NumPy and jax.jit")
    integer = Goal(f"integer dots: >= {INTEGER_DOT_SPEEDUP:.0f}x the speed before (EPYC VM)")
    training = Goal(f"training steps: >= {TRAINING_STEP_VS_JAX:.2f}x jax.jit")
    for row in workloads:
        name = row["name"]
        if name.startswith(_MEMORY_WORKLOADS):
            of_limit.judge(name, row["of_limit"], row["of_limit"] >= MEMORY_BOUND_OF_LIMIT)
            if row["jax"] is None:
                vs_jax.unjudged.append(name)
            else:
                ratio = row["jax"] / row["ours"]
                vs_jax.judge(name, ratio, ratio >= MEMORY_BOUND_VS_JAX)
        elif name.startswith(_DOT_WORKLOADS):
            others = [t for t in (row["numpy"], row["jax"]) if t is not None]
            ratio = min(others) / row["ours"]
            dots.judge(name, ratio, ratio >= 1.0)
            if row["jax"] is None:
                dots.numpy_only.append(name)
        if name in INTEGER_DOT_BASELINE:
            speedup = INTEGER_DOT_BASELINE[name] / row["ours"]
            integer.judge(name, speedup, speedup >= INTEGER_DOT_SPEEDUP)
    for row in modules:
        name, ratio = row["name"], None
        if row["xla"] is not None:
            ratio = row["xla"] / row["ours"]
        if name.startswith(_MEMORY_MODULES):
            if row["of_limit"] is not None:
                of_limit.judge(name, row["of_limit"], row["of_limit"] >= MEMORY_BOUND_OF_LIMIT)
            goal, threshold = vs_jax, MEMORY_BOUND_VS_JAX
        elif name in _DOT_MODULES or name.startswith(_DOT_MODULE_PREFIXES):
            goal, threshold = dots, 1.0
        elif name in _TRAINING_MODULES:
            goal, threshold = training, TRAINING_STEP_VS_JAX
        else:
            continue
        if ratio is None:
            goal.unjudged.append(name)
        else:
            goal.judge(name, ratio, ratio >= threshold)
    goals = [of_limit, vs_jax, dots, integer, training]
    if baseline is not None:
        before = Goal(f"nothing slower than the baseline (x{tolerance:.2f} allowed)")
        for row in workloads + modules:
            if row["name"] in baseline:
                speed = baseline[row["name"]] / row["ours"]
                before.judge(row["name"], speed, speed * tolerance >= 1.0)
        goals.append(before)
    return goals


def report(goals):
    """The verdict lines of ``goals``."""
    lines = ["", "goals (issue 19), this run:"]
    for goal in goals:
        held = sum(holds for _, _, holds in goal.rows)
        if not goal.rows:
            verdict = "not judged"
        elif held == len(goal.rows):
            verdict = "holds"
        else:
            verdict = "short"
        line = f"  {goal.text:62} {verdict:10} {held}/{len(goal.rows)} rows"
        if goal.rows:
            worst = min(goal.rows, key=lambda r: r[1])
            line += f", lowest {worst[1]:.2f} ({worst[0]})"
        lines.append(line)
        for label, names in (("short", [f"{n} {f:.2f}" for n, f in goal.short()]),
                             ("not judged (no jax.jit figure)", goal.unjudged),
                             ("against NumPy only (no jax.jit figure)", goal.numpy_only)):
            if names:
                lines += textwrap.wrap(f"{label}: " + ", ".join(names), 110,
                                       initial_indent=" " * 6, subsequent_indent=" " * 8)
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3,
                        help="cpu_workloads' alternating blocks of --repeats calls per side")
    parser.add_argument("--quick", action="store_true",
                        help="cpu_workloads' smaller sizes and the modules up to 4 M elements "
                             "(a smoke run; the verdicts are not the goals')")
    parser.add_argument("--baseline", action="append", default=[], metavar="FILE",
                        help="an earlier run's output (repeatable): judge that no row got slower")
    parser.add_argument("--tolerance", type=float, default=DEFAULT_TOLERANCE,
                        help="how many times its baseline time a row may take (timing noise)")
    args = parser.parse_args()
    if not args.tolerance >= 1.0:
        parser.error(f"--tolerance {args.tolerance}: must be at least 1 (a factor on the time)")
    baseline = None
    if args.baseline:
        baseline = {}
        for path in args.baseline:
            try:
                text = pathlib.Path(path).read_text()
            except OSError as e:
                parser.error(f"--baseline {path}: {e.strerror}")
            for name, seconds in read_baseline(text).items():
                baseline[name] = min(seconds, baseline.get(name, seconds))
        if not baseline:
            parser.error(f"--baseline: no benchmark rows in {', '.join(args.baseline)}")
    sys.path.insert(1, str(pathlib.Path(__file__).resolve().parent))
    import cpu_workloads
    import jax_modules

    jax, jnp = cpu_workloads.import_jax()
    bandwidth, peak = cpu_workloads.report_limits()
    workloads = list(cpu_workloads.measure(cpu_workloads.workloads(args.quick), args.repeats,
                                           args.rounds, bandwidth, peak, jax=jax, jnp=jnp))
    names = [n for n in jax_modules.NAMES if not (args.quick and n.endswith("_16M"))]
    print()
    modules = list(jax_modules.measure(names, args.repeats, bandwidth))
    print("\n".join(report(evaluate(workloads, modules, baseline, args.tolerance))))


if __name__ == "__main__":
    main()
