"""Optimizes an HLO module and prints the result.

  hlo_opt [--platform=interpreter] [--passes=a,b,c] [--buffer_assignment]
          [--xla_disable_hlo_passes=a,b] [--print_timing] [--output=OUT.hlo] MODULE.hlo

Without --passes it runs the platform's whole pipeline; with it, only the
named passes in order. --buffer_assignment also prints the buffer
assignment report of the (scheduled) result. Errors are printed without a
traceback and the exit status is non-zero.
"""
import os
import sys

from absl import app, flags

from xla.backends import registry
from xla.errors import XlaError
from xla.tools import hlo_opt, replay

FLAGS = flags.FLAGS
flags.DEFINE_string("platform", "interpreter", "Platform whose pipeline runs: " +
                    ", ".join(registry.available_platforms()))
flags.DEFINE_list("passes", [], "Run only these passes, in this order (names as in "
                  "xla/service/pass_registry.py).")
flags.DEFINE_list("xla_disable_hlo_passes", [], "Passes to skip.")
flags.DEFINE_bool("buffer_assignment", False, "Also print the buffer assignment report.")
flags.DEFINE_bool("verify", True, "Run the verifier before and after every pass.")
flags.DEFINE_bool("print_timing", False, "Print the time each pass took (to stderr).")
flags.DEFINE_string("output", None, "Write the optimized module here instead of stdout.")


def _resolve(path):
    base = os.environ.get("BUILD_WORKING_DIRECTORY")
    if path and base and not os.path.isabs(path):
        return os.path.join(base, path)
    return path


def main(argv):
    if len(argv) != 2:
        raise app.UsageError("give exactly one HLO module file")
    path = _resolve(argv[1])
    output = _resolve(FLAGS.output)
    try:
        if output:
            replay.check_output_path(output, [path])
        module = replay.read_module(path)
        pipeline = hlo_opt.optimize(module, FLAGS.platform, FLAGS.passes,
                                    FLAGS.xla_disable_hlo_passes, FLAGS.verify)
        text = module.to_text()
        if FLAGS.buffer_assignment:
            from xla.service.buffer_assignment import assign_buffers
            if not module.is_scheduled:
                from xla.service.pass_registry import make_pass
                make_pass("hlo-memory-scheduler").run(module)
                text = module.to_text()
            text += "\n" + assign_buffers(module).to_text()
        if output:
            with open(output, "w", encoding="utf-8") as f:
                f.write(text)
        else:
            sys.stdout.write(text)
        if FLAGS.print_timing:
            print(pipeline.timing_report(), file=sys.stderr)
    except XlaError as e:
        print(f"hlo_opt: error: {e}", file=sys.stderr)
        return 1
    return 0


def run():
    app.run(main)


if __name__ == "__main__":
    run()
