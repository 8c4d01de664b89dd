"""Runs HLO modules given as text files (XLA's own dumps included).

  replay_computation --platform=interpreter [--args=IN.npz] [--output=OUT.npz]
                     [--random_seed=N] [--print_result] MODULE.hlo [MORE.hlo ...]

Arguments come from IN.npz (arg0..argN in parameter order) or, without
--args, are deterministic random values of the right shapes and dtypes. The
result's leaves (a tuple flattened in order) go to OUT.npz as out0..outM.
Errors are printed without a traceback and the exit status is non-zero.
"""
import os
import sys

from absl import app, flags

from xla.backends import registry
from xla.errors import XlaError
from xla.tools import arrays, replay

FLAGS = flags.FLAGS
flags.DEFINE_string("platform", "interpreter", "Platform to run on: " + ", ".join(registry.available_platforms()))
flags.DEFINE_string("args", None, "An .npz file with the arguments arg0..argN.")
flags.DEFINE_string("output", None, "Write the results as out0..outM to this .npz file.")
flags.DEFINE_integer("random_seed", 0, "Seed of the random arguments used without --args.")
flags.DEFINE_bool("print_result", False, "Print every result array in full.")
flags.DEFINE_integer("num_runs", 1, "Run each module this many times and print min/median times.",
                     lower_bound=1)


def _resolve(path):
    # Under `bazel run` the working directory is the runfiles tree; paths the
    # user typed are relative to where they ran the command.
    base = os.environ.get("BUILD_WORKING_DIRECTORY")
    if path and base and not os.path.isabs(path):
        return os.path.join(base, path)
    return path


def main(argv):
    paths = [_resolve(p) for p in argv[1:]]
    if not paths:
        raise app.UsageError("give at least one HLO module file")
    args_path = _resolve(FLAGS.args)
    output = _resolve(FLAGS.output)
    try:
        if output:
            if len(paths) > 1:
                raise XlaError("--output takes one module; got " + str(len(paths)))
            replay.check_output_path(output, paths + [args_path])
        for path in paths:
            result = replay.replay_file(path, FLAGS.platform, args_path, FLAGS.random_seed,
                                        FLAGS.num_runs)
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
            if output:
                arrays.save_outputs(output, result.leaves)
                print(f"wrote {output}")
    except XlaError as e:
        print(f"replay_computation: error: {e}", file=sys.stderr)
        return 1
    return 0


def run():
    app.run(main)


if __name__ == "__main__":
    run()
