"""Runs HLO modules given as text files (XLA's own dumps included) or as
snapshots (``--xla_dump_hlo_snapshots``).

  replay_computation --platform=cpu [--args=IN.npz] [--output=OUT.npz]
                     [--random_seed=N] [--num_runs=N] [--print_result]
                     [--compare=interpreter [--rtol=R --atol=A]]
                     [--allow_mixed_precision] [--profile [--profile_dir=DIR]]
                     [--xla_dump_to=DIR ...] MODULE.hlo|SNAPSHOT.npz [MORE ...]

Arguments come from IN.npz (arg0..argN in parameter order), from the
snapshot, or are deterministic random values of the right shapes and dtypes.
The result's leaves (a tuple flattened in order) go to OUT.npz as out0..outM.
``--compare=PLATFORM`` also runs each module there and prints, per output,
the max absolute and relative error; the exit status is 1 if any output
differs beyond ``atol + rtol * (|expected| + sqrt(L) * rms(expected))``, L
the number of terms the output accumulates through dots, convolutions and
reduces (the second term only where L > 1: summation order is a backend's
choice, and long sums differ by more than their smallest elements' size). A
snapshot's recorded results are compared the same way.
``--allow_mixed_precision`` verifies with XLA's option of that name (as
XLA's HloTestBase does, so modules from XLA's tests that mix floating-point
precisions, ``maximum(f16[4], f32[4]) -> f32[4]``, are accepted); the
backends then compute each such op in one type with explicit converts
(``mixed-precision-normalizer``). ``--profile`` runs each module under
``xla.profiler.trace`` and prints the per-instruction totals (time, calls,
bytes, GB/s and GFLOP/s against this machine's measured limits; the CPU
backend instruments every instruction, the GPU backends time every launch,
library call and copy, the interpreter records nothing);
``--profile_dir`` also writes the Chrome/Perfetto trace JSON there. XLA flags (``--xla_*``, as in XLA_FLAGS) apply to
the compilations. Errors are printed without a traceback, exit status 1.
"""
import contextlib
import os
import sys

from absl import app, flags

from xla import runtime
from xla.errors import XlaError
from xla.tools import arrays, replay

FLAGS = flags.FLAGS
flags.DEFINE_string("platform", "interpreter", "Platform to run on: " + ", ".join(runtime.available_platforms()))
flags.DEFINE_string("args", None, "An .npz file with the arguments arg0..argN.")
flags.DEFINE_string("output", None, "Write the results as out0..outM to this .npz file.")
flags.DEFINE_bool("overwrite", False, "Let --output replace an existing file.")
flags.DEFINE_integer("random_seed", 0, "Seed of the random arguments used without --args.")
flags.DEFINE_bool("print_result", False, "Print every result array in full.")
flags.DEFINE_integer("num_runs", 1, "Run each module this many times and print min/median times.",
                     lower_bound=1)
flags.DEFINE_string("compare", None, "Also run on this platform and compare the outputs.")
flags.DEFINE_integer("num_replicas", 1, "Run on this many replicas (in one process); every "
                     "device gets the same arguments and device 0's results are shown.",
                     lower_bound=1)
flags.DEFINE_integer("num_partitions", 1, "Run on this many partitions (e.g. an SPMD-partitioned "
                     "dump); see --num_replicas.", lower_bound=1)
flags.DEFINE_bool("allow_mixed_precision", False, "Verify as XLA's HloVerifier with "
                  "allow_mixed_precision (XLA's test modules): operands and results may mix "
                  "floating-point precisions; each such op computes in one type with converts.")
flags.DEFINE_bool("profile", False, "Profile each run: print per-instruction times, bytes and "
                  "rates against the machine's measured limits.")
flags.DEFINE_string("profile_dir", None, "With --profile: also write the trace (Chrome/Perfetto "
                    "JSON) to this directory.")
flags.DEFINE_float("rtol", 1e-5, "Relative tolerance of --compare (and of snapshot checks).")
flags.DEFINE_float("atol", 1e-6, "Absolute tolerance of --compare (and of snapshot checks).")


def _resolve(path):
    # Under `bazel run` the working directory is the runfiles tree; paths the
    # user typed are relative to where they ran the command.
    base = os.environ.get("BUILD_WORKING_DIRECTORY")
    if path and base and not os.path.isabs(path):
        return os.path.join(base, path)
    return path


def _print_comparison(label, comparison, lengths=()):
    print(f"  compare with {label}: {'OK' if comparison.ok else 'MISMATCH'}")
    for i, (name, abs_err, rel_err, good) in enumerate(comparison.rows):
        terms = lengths[i] if i < len(lengths) else 1
        print(f"    {name}: max abs error {abs_err:.3g}, max rel error {rel_err:.3g}"
              + (f" (sums of {terms} terms)" if terms > 1 else "")
              + ("" if good else "  <-- beyond tolerance"))


@contextlib.contextmanager
def _profiling(enabled, directory):
    """An ``xla.profiler.trace`` around one module's compile and runs (None when off)."""
    if not enabled:
        yield None
        return
    from xla.runtime import profiler
    if directory:
        os.makedirs(directory, exist_ok=True)
    with profiler.trace(directory, write=bool(directory)) as prof:
        yield prof


def main(argv):
    paths = [_resolve(p) for p in argv[1:]]
    if not paths:
        raise app.UsageError("give at least one HLO module file or snapshot")
    args_path = _resolve(FLAGS.args)
    output = _resolve(FLAGS.output)
    status = 0
    try:
        if FLAGS.platform not in runtime.available_platforms():
            raise XlaError(f"--platform={FLAGS.platform!r}: unknown platform; available: "
                           + ", ".join(runtime.available_platforms()))
        if FLAGS.compare is not None and FLAGS.compare not in runtime.available_platforms():
            raise XlaError(f"--compare: unknown platform {FLAGS.compare!r}; available: "
                           + ", ".join(runtime.available_platforms()))
        if not (FLAGS.rtol >= 0 and FLAGS.atol >= 0):
            raise XlaError(f"--rtol and --atol must be >= 0, got {FLAGS.rtol} and {FLAGS.atol}")
        if output:
            if len(paths) > 1:
                raise XlaError("--output takes one module; got " + str(len(paths)))
            replay.check_output_path(output, paths + [args_path], FLAGS.overwrite)
        profile_dir = _resolve(FLAGS.profile_dir)
        if profile_dir and not FLAGS.profile:
            raise XlaError("--profile_dir needs --profile")
        for path in paths:
            with _profiling(FLAGS.profile, profile_dir) as prof:
                result = replay.replay_file(path, FLAGS.platform, args_path, FLAGS.random_seed,
                                            FLAGS.num_runs, FLAGS.num_replicas,
                                            FLAGS.num_partitions, FLAGS.allow_mixed_precision)
            print(f"{path}: {len(result.leaves)} result(s) on {FLAGS.platform} "
                  f"in {result.seconds[0] * 1e3:.2f} ms")
            if FLAGS.num_runs > 1:
                times = sorted(result.seconds)
                print(f"  {FLAGS.num_runs} runs: min {times[0] * 1e3:.3f} ms, "
                      f"median {times[len(times) // 2] * 1e3:.3f} ms")
            for i, leaf in enumerate(result.leaves):
                print("  " + arrays.summarize(f"out{i}", leaf))
                if FLAGS.print_result:
                    print(leaf)
            if prof is not None and not prof.events:
                print(f"  profile: nothing recorded on {FLAGS.platform} (the cpu and gpu "
                      "backends record their executions)")
            elif prof is not None:
                print(prof.summary())
                if profile_dir:
                    print(f"  trace written to {profile_dir}")
            if result.recorded and not args_path:
                check = replay.compare_leaves(result.leaves, result.recorded, FLAGS.rtol,
                                              FLAGS.atol, result.lengths)
                _print_comparison("the snapshot's recorded results", check, result.lengths)
                status |= 0 if check.ok else 1
            if FLAGS.compare:
                module, args, _ = replay.load_inputs(path, args_path, FLAGS.random_seed)
                other, _ = replay.run_module(module, result.args, FLAGS.compare, 1,
                                             FLAGS.num_replicas, FLAGS.num_partitions,
                                             FLAGS.allow_mixed_precision)
                check = replay.compare_leaves(result.leaves, other, FLAGS.rtol, FLAGS.atol,
                                              result.lengths)
                _print_comparison(FLAGS.compare, check, result.lengths)
                status |= 0 if check.ok else 1
            if output:
                arrays.save_outputs(output, result.leaves, overwrite=FLAGS.overwrite)
                print(f"wrote {output}")
    except XlaError as e:
        print(f"replay_computation: error: {e}", file=sys.stderr)
        return 1
    except OSError as e:   # a full disk, a permission: one line, not a traceback
        where = f" ({e.filename})" if e.filename else ""
        print(f"replay_computation: error: {e.strerror or e}{where}", file=sys.stderr)
        return 1
    return status


def run():
    from xla.debug_options import parse_flags, split_xla_flags, using
    xla_flags, rest = split_xla_flags(sys.argv[1:])
    try:
        from xla.debug_options import debug_options
        options = parse_flags(xla_flags, base=debug_options())
    except XlaError as e:
        print(f"replay_computation: error: {e}", file=sys.stderr)
        sys.exit(1)
    sys.argv = [sys.argv[0]] + rest
    with using(options):
        app.run(main)


if __name__ == "__main__":
    run()
