"""Compiles an HLO module ahead of time into an object file and a C header.

  aot_compile [--target=x86_64|aarch64] --out_dir=DIR [--name=NAME] [--host_cpu]
              [--runtime_c] [--overwrite] MODULE.hlo
  aot_compile --target=cuda [--cuda_arch=sm_90] --out_dir=DIR [--name=NAME] MODULE.hlo

Writes DIR/NAME.o (an ELF relocatable object defining
`void NAME(void** buffer_table)`) and DIR/NAME.h (its prototype, the buffer
table's size and layout, which entry holds each argument and result). NAME
defaults to the module file's name. The object is built for the target's
baseline CPU; --host_cpu uses the host's CPU and features (host target
only). Link the object with -lm. With --runtime_c, dots and convolutions
may call the CPU runtime's matmul and conv2d functions (needed for ops the
backend compiles only to runtime calls), and
DIR/xla_cpu_runtime.c (serial C versions of them) is written when the
object calls any: link it too. Existing files are replaced only with
--overwrite, never through a link, and each file is written whole or not
at all. With --target=cuda it writes DIR/NAME.ptx, DIR/NAME.cubin (where
ptxas is installed) and DIR/NAME.h, whose NAME_run launches the kernels
through the CUDA driver API (xla/backends/gpu/aot.py says how to call it).
Errors are printed without a traceback and the exit status is non-zero.
"""
import os
import sys

from absl import app, flags

from xla.backends.cpu import aot
from xla.errors import UnimplementedError, XlaError
from xla.tools import aot_compile

FLAGS = flags.FLAGS
flags.DEFINE_enum("target", "x86_64", sorted(aot.TARGETS) + ["cuda"],
                  "Architecture of the object file, or cuda: PTX, a cubin and a C header "
                  "calling the CUDA driver API.")
flags.DEFINE_string("cuda_arch", "sm_80", "With --target=cuda: the GPU architecture "
                    "(sm_80, sm_86, sm_89 or sm_90).")
flags.DEFINE_string("out_dir", None, "Directory for NAME.o and NAME.h (created if missing).")
flags.DEFINE_string("name", None, "Name of the generated C function (and of the files); "
                    "defaults to the module file's name.")
flags.DEFINE_bool("runtime_c", False, "Let the code call the CPU runtime's matmul and "
                  "convolution functions, and write serial C versions of them to "
                  "OUT_DIR/xla_cpu_runtime.c when it does.")
flags.DEFINE_bool("overwrite", False, "Let the outputs replace existing files.")
flags.DEFINE_bool("host_cpu", False, "Compile for the host's CPU and its features instead of "
                  "the architecture's baseline (the host's architecture only).")


def _resolve(path):
    # Under `bazel run` the working directory is the runfiles tree.
    base = os.environ.get("BUILD_WORKING_DIRECTORY")
    if path and base and not os.path.isabs(path):
        return os.path.join(base, path)
    return path


def main(argv):
    if len(argv) != 2:
        raise app.UsageError("give exactly one HLO module file")
    if not FLAGS.out_dir:
        raise app.UsageError("--out_dir is required")
    path = _resolve(argv[1])
    try:
        result, paths = aot_compile.compile_file(path, _resolve(FLAGS.out_dir), FLAGS.target,
                                                 FLAGS.name, FLAGS.host_cpu, FLAGS.runtime_c,
                                                 FLAGS.overwrite, FLAGS.cuda_arch)
    except XlaError as e:
        hint = ""
        if isinstance(e, UnimplementedError) and not FLAGS.runtime_c:
            hint = " (--runtime_c lets the object call the runtime's matmul and conv2d)"
        print(f"aot_compile: error: {e}{hint}", file=sys.stderr)
        return 1
    except OSError as e:   # a full disk, a permission: one line, not a traceback
        where = f" ({e.filename})" if e.filename else ""
        print(f"aot_compile: error: {e.strerror or e}{where}", file=sys.stderr)
        return 1
    for p in paths:
        print(f"wrote {p}")
    if FLAGS.target == "cuda":
        if result.cubin is None:
            print("no ptxas here: no cubin written (the driver compiles the PTX when loading it)")
        return 0
    if result.undefined_symbols:
        print("link with -lm (the object calls " + ", ".join(result.undefined_symbols) + ")")
    if result.runtime_symbols:
        print(f"link {aot.RUNTIME_C_FILE} too (the object calls " + ", ".join(result.runtime_symbols) + ")")
    return 0


def run():
    app.run(main)


if __name__ == "__main__":
    run()
