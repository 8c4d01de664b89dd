"""Modules as JAX lowers them, run by this project's CPU backend and by
XLA:CPU on the very same HLO text, side by side.

    .venv/bin/python benchmarks/jax_modules.py [--repeats=N] [--only=NAME ...] [--match=TEXT ...]

Each module of benchmarks/modules/ (made with JAX by gen_compile_modules.py:
softmax, layernorm, attention, MLP and transformer training steps, a conv
net's training step; and by gen_runtime_modules.py at working-set sizes, the
``rt_`` ones: RMSNorm + residual at f32 and bf16, attention at three
sequence lengths, a transformer block forward and its training step, a conv
net forward and its step, the MLP's step, batched matmul, matrix-vector,
s8 and bf16 dots, the MLP's and the transformer block's steps in bf16)
gets deterministic random arguments (``xla.tools.arrays.random_args``,
floats, bf16 and f8 included, scaled by 0.1), is compiled once and run ``--repeats``
times after a warm-up; the median is reported. Where ``import jax`` works
(run with ``PYTHONPATH=<a jax env's site-packages>``), jaxlib compiles the
same text (HLO text -> StableHLO -> XLA:CPU, as the fixture generators do)
and is timed the same way on the same arguments, and the results are
compared (equal up to rounding, NaN where XLA has NaN: deep training steps
on random arguments overflow on both); xla/ours above 1 means this project
is faster. jax is never a dependency.

The memory-bound modules (RMSNorm + residual, and softmax, layernorm and
GELU at f32, bf16 and f16 from 256 K to 16 M elements, the exact erf GELU
at f32 and bf16) also show the bytes
they must move (their arguments and results, each once) over our time, and
that rate as a fraction of the streaming bandwidth measured at the start
(``cpu_workloads.streaming_bandwidth``: a 256 MB copy).
"""
import argparse
import gzip
import pathlib
import statistics
import sys
import time

import ml_dtypes
import numpy as np

sys.path.insert(1, str(pathlib.Path(__file__).resolve().parent))
import gen_runtime_modules  # noqa: E402  (names only: jax is imported when it lowers)

import xla  # noqa: E402
from xla.tools.arrays import flatten_result, random_args  # noqa: E402

MODULES = pathlib.Path(__file__).resolve().parent / "modules"
NAMES = ["softmax", "layernorm", "attention", "cnn_train", "mlp_train_L37", "mlp_train_L185",
         "transformer_train_L3", "transformer_train_L12"]
# At working-set sizes (gen_runtime_modules.py): the issue-19 workloads as JAX lowers them.
NAMES += ["rt_" + n for n in gen_runtime_modules.CATALOG]
# The memory-bound ones, each also reported as a fraction of the machine's
# streaming bandwidth.
MEMORY_BOUND = ("rt_rmsnorm", "rt_softmax", "rt_layernorm", "rt_gelu", "rt_cumsum",
                "rt_argmax")


def median_time(fn, repeats):
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def xla_cpu(text):
    """A function running ``text`` on XLA:CPU (jaxlib), or None without jax."""
    try:
        import jax
        import jax.extend.backend
        from jax._src.lib import xla_client as xc
    except ImportError:
        return None
    jax.config.update("jax_platforms", "cpu")
    backend = jax.extend.backend.get_backend()
    if "lapack_" in text:
        # jaxlib fills its LAPACK kernels' function pointers when jax first
        # lowers a linear-algebra op; HLO text calling them before that
        # crashes XLA:CPU's process (a null call: jnp.linalg.det's module).
        from jax._src.lib import lapack
        lapack._lapack.initialize()
    module = xc.hlo.hlo_module_from_text(text)
    computation = xc.hlo.XlaComputation(module.as_serialized_hlo_module_proto())
    mlir = xc._xla.mlir.hlo_to_stablehlo(computation.as_serialized_hlo_module_proto())
    exe = backend.compile_and_load(mlir, backend.devices()[:1], xc.CompileOptions())

    def run(args):
        buffers = [jax.device_put(a) for a in args]

        def call():
            out = exe.execute(buffers)
            jax.block_until_ready(out)
            return out
        return call
    return run


def _is_float(dtype):
    """Real floating point, ml_dtypes' bf16 and f8 types included (their
    NumPy kind is "V")."""
    try:
        ml_dtypes.finfo(dtype)
    except ValueError:
        return False
    return np.dtype(dtype).kind != "c"


def _close(got, want):
    """Equal up to rounding (of the result's type: 8 significant bits for
    bf16, 11 for f16), NaN where the other has NaN (deep steps on random
    arguments overflow on both)."""
    narrow = np.asarray(want).dtype.itemsize <= 2 and np.asarray(want).dtype.kind not in "iub"
    rtol = 1e-2 if narrow else 1e-3
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    finite = np.abs(want[np.isfinite(want)])
    scale = max(1.0, float(finite.max())) if finite.size else 1.0
    return got.shape == want.shape and np.allclose(got, want, rtol=rtol, atol=rtol * scale,
                                                   equal_nan=True)


def measure(names, repeats, bandwidth=None):
    """Runs the modules ``names``: prints the header and a line per module,
    and yields a dict per module (seconds: ``ours``, ``xla`` (XLA:CPU, None
    without jax or where it failed); ``match``: the results agree (None
    where XLA:CPU did not run); ``of_limit``: the bytes moved per second
    over ``bandwidth``, for the memory-bound modules when it is given)."""
    print(f"{'module':26} {'instrs':>7} {'ours':>10} {'XLA:CPU':>10} {'xla/ours':>9}  "
          f"{'results':7} {'GB/s':>6} {'of limit':>8}")
    for name in names:
        text = gzip.open(MODULES / f"{name}.hlo.gz", "rt").read()
        module = xla.parse_hlo_module(text)
        count = sum(len(c.instructions) for c in module.computations)
        # Random values scaled down, so that deep steps stay finite.
        inputs = [a * np.asarray(0.1, a.dtype) if _is_float(a.dtype) else a
                  for a in random_args([p.shape for p in module.entry.parameters], seed=0)]
        exe = xla.compile(xla.parse_hlo_module(text), "cpu")
        ours = median_time(lambda: exe.execute(*inputs), repeats)
        got = flatten_result(exe.execute(*inputs))
        rate = ""
        row = {"name": name, "ours": ours, "xla": None, "match": None, "of_limit": None}
        if bandwidth and name.startswith(MEMORY_BOUND):
            moved = sum(a.nbytes for a in inputs) + sum(np.asarray(g).nbytes for g in got)
            rate = f" {moved / ours / 1e9:6.1f} {moved / ours / bandwidth:8.2f}"
            row["of_limit"] = moved / ours / bandwidth
        line = f"{name:26} {count:7d} {ours * 1e3:8.3f}ms"
        try:
            run = xla_cpu(text)
            call = run and run(inputs)
        except Exception as e:  # another jax's private API: say so, keep our figure
            print(line + f" {'-':>10} {'-':>9}  {'-':7}{rate}  XLA:CPU failed: "
                  f"{type(e).__name__}: {e}"[:300])
            yield row
            continue
        if run is None:
            print(line + f" {'-':>10} {'-':>9}  {'-':7}{rate}")
            yield row
            continue
        theirs = median_time(call, repeats)
        want = [np.asarray(o) for o in call()]
        close = all(_close(g, w) for g, w in zip(got, want))
        print(line + f" {theirs * 1e3:8.3f}ms {theirs / ours:9.2f}  "
              f"{'match' if close and len(got) == len(want) else 'DIFFER':7}{rate}")
        row.update(xla=theirs, match=close and len(got) == len(want))
        yield row


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--only", action="append", choices=NAMES, metavar="NAME",
                        help="only this module (repeatable); one of " + ", ".join(NAMES))
    parser.add_argument("--match", action="append", default=[], metavar="TEXT",
                        help="only the modules whose name contains TEXT (repeatable)")
    args = parser.parse_args()
    names = [n for n in args.only or NAMES
             if not args.match or any(m in n for m in args.match)]
    if not names:
        parser.error(f"no module matches {args.match}")
    bandwidth = None
    if any(n.startswith(MEMORY_BOUND) for n in names):
        from cpu_workloads import streaming_bandwidth
        bandwidth = streaming_bandwidth()
        print(f"streaming bandwidth: {bandwidth / 1e9:.1f} GB/s (a 256 MB copy)")
    for _ in measure(names, args.repeats, bandwidth):
        pass


if __name__ == "__main__":
    main()
