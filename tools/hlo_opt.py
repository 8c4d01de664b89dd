"""Optimizes an HLO module and prints the result.

  hlo_opt [--platform=interpreter] [--passes=a,b,c] [--buffer_assignment]
          [--xla_disable_hlo_passes=a,b] [--print_timing] [--format=text|dot|html]
          [--dump_to=DIR] [--output=OUT] [--allow_mixed_precision] MODULE.hlo

Without --passes it runs the platform's whole pipeline; with it, only the
named passes in order. --buffer_assignment also prints the buffer
assignment report of the (scheduled) result. --format picks the output:
HLO text, Graphviz DOT or a self-contained HTML graph view. --dump_to
writes the module between every two passes (XLA's per-pass dump files).
--allow_mixed_precision verifies with XLA's HloVerifier option of that name
(modules from XLA's tests mix floating-point precisions); the pipelines'
first pass, mixed-precision-normalizer, makes the converts explicit.
Other XLA flags (--xla_*, as in XLA_FLAGS) are accepted too. Errors are
printed without a traceback and the exit status is non-zero.
"""
import os
import sys

from absl import app, flags

from xla import runtime
from xla.errors import XlaError
from xla.tools import hlo_opt, replay

FLAGS = flags.FLAGS
flags.DEFINE_string("platform", "interpreter", "Platform whose pipeline runs: " +
                    ", ".join(runtime.available_platforms()))
flags.DEFINE_list("passes", [], "Run only these passes, in this order (names as in "
                  "xla/service/pass_registry.py).")
flags.DEFINE_list("xla_disable_hlo_passes", [], "Passes to skip.")
flags.DEFINE_bool("buffer_assignment", False, "Also print the buffer assignment report.")
flags.DEFINE_bool("verify", True, "Run the verifier before and after every pass.")
flags.DEFINE_bool("allow_mixed_precision", False, "Verify as XLA's HloVerifier with "
                  "allow_mixed_precision: operands and results may mix floating-point precisions.")
flags.DEFINE_bool("print_timing", False, "Print the time each pass took (to stderr).")
flags.DEFINE_string("output", None, "Write the optimized module here instead of stdout.")
flags.DEFINE_bool("overwrite", False, "Let --output replace an existing file.")
flags.DEFINE_enum("format", "text", ["text", "dot", "html"], "Output format of the optimized module.")
flags.DEFINE_string("dump_to", None, "Write the module before and after every pass into this directory.")


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
        if FLAGS.platform not in runtime.available_platforms():
            raise XlaError(f"--platform={FLAGS.platform!r}: unknown platform; available: "
                           + ", ".join(runtime.available_platforms()))
        if output:
            replay.check_output_path(output, [path], FLAGS.overwrite)
        module = replay.read_module(path)
        pipeline = hlo_opt.optimize(module, FLAGS.platform, FLAGS.passes,
                                    FLAGS.xla_disable_hlo_passes, FLAGS.verify,
                                    dump_to=_resolve(FLAGS.dump_to),
                                    allow_mixed_precision=FLAGS.allow_mixed_precision)
        if FLAGS.format == "text":
            text = module.to_text()
        else:
            from xla.hlo import graph_views
            text = (graph_views.module_to_dot if FLAGS.format == "dot" else graph_views.module_to_html)(module)
        if FLAGS.buffer_assignment and FLAGS.format != "text":
            raise XlaError("--buffer_assignment needs --format=text")
        if FLAGS.buffer_assignment:
            from xla.service.buffer_assignment import assign_buffers
            if not module.is_scheduled:
                from xla.service.pass_registry import make_pass
                make_pass("hlo-memory-scheduler").run(module)
                text = module.to_text()
            text += "\n" + assign_buffers(module).to_text()
        if output:
            replay.write_atomically(output, text, overwrite=FLAGS.overwrite)
        else:
            sys.stdout.write(text)
        if FLAGS.print_timing:
            print(pipeline.timing_report(), file=sys.stderr)
    except XlaError as e:
        print(f"hlo_opt: error: {e}", file=sys.stderr)
        return 1
    except OSError as e:   # a full disk, a permission: one line, not a traceback
        where = f" ({e.filename})" if e.filename else ""
        print(f"hlo_opt: error: {e.strerror or e}{where}", file=sys.stderr)
        return 1
    return 0


def run():
    from xla.debug_options import debug_options, parse_flags, split_xla_flags, using
    xla_flags, rest = split_xla_flags(sys.argv[1:])
    # hlo_opt's own --xla_disable_hlo_passes stays its flag.
    own = [f for f in xla_flags if f.lstrip("-").startswith("xla_disable_hlo_passes")]
    xla_flags = [f for f in xla_flags if f not in own]
    try:
        options = parse_flags(xla_flags, base=debug_options())
    except XlaError as e:
        print(f"hlo_opt: error: {e}", file=sys.stderr)
        sys.exit(1)
    sys.argv = [sys.argv[0]] + own + rest
    with using(options):
        app.run(main)


if __name__ == "__main__":
    run()
