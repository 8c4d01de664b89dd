"""replay_computation: run HLO modules (XLA's dumps included) on a platform.

The command-line program ``tools/replay_computation.py`` is a thin wrapper
over ``replay_file``.
"""
import math
import time

from xla import runtime
from xla.errors import InvalidArgumentError
from xla.hlo import sdy
from xla.hlo.parser import parse_hlo_module
from xla.tools import arrays
from xla.tools.outputs import check_input_path, check_output_path, read_input, write_atomically  # noqa: F401


def is_snapshot(path):
    return path.endswith(".npz")


def read_snapshot(path):
    """(module, arguments, recorded results) from a snapshot ``.npz``
    written by ``--xla_dump_hlo_snapshots`` (see xla/service/dump.py)."""
    check_input_path(path, "snapshot")
    with arrays.open_npz(path, "snapshot") as data:
        if "hlo_module" not in data.files:
            raise InvalidArgumentError(f"{path} is not a snapshot (no hlo_module entry)")
        text = arrays.npz_entry(data, "hlo_module", path)
        if text.dtype.kind not in "US" or text.ndim != 0:
            raise InvalidArgumentError(f"{path}: hlo_module is not a string")
        module = parse_hlo_module(str(text), filename=path)
        shapes = [p.shape for p in module.entry.parameters]
        args = []
        for i, shape in enumerate(shapes):
            if f"arg{i}" not in data.files:
                raise InvalidArgumentError(f"snapshot {path} has no arg{i}")
            value = arrays.npz_entry(data, f"arg{i}", path)
            args.append(arrays.restore_dtype(value, shape.dtype) if shape.is_array else value)
        result_leaves = _leaf_shapes(module.entry.root_instruction.shape)
        outs = []
        while f"out{len(outs)}" in data.files:
            value = arrays.npz_entry(data, f"out{len(outs)}", path)
            if len(outs) < len(result_leaves) and result_leaves[len(outs)].is_array:
                value = arrays.restore_dtype(value, result_leaves[len(outs)].dtype)
            outs.append(value)
    return module, args, outs


def _leaf_shapes(shape):
    if shape.is_tuple:
        return [leaf for s in shape.tuple_shapes for leaf in _leaf_shapes(s)]
    return [shape]


def read_module(path):
    """Parses the HLO text file at ``path``; parse errors name the file."""
    return parse_hlo_module(read_input(path, "module"), filename=path)


class ReplayResult:
    def __init__(self, path, leaves, seconds, args=None, recorded=None, lengths=None):
        self.path = path
        self.lengths = lengths   # per leaf, terms accumulated (xla.tools.tolerance)
        self.leaves = leaves
        self.seconds = seconds
        self.args = args
        self.recorded = recorded   # a snapshot's recorded results, else None


def load_inputs(path, args_path=None, random_seed=0):
    """(module, arguments, recorded results or None) for a module file or snapshot."""
    if is_snapshot(path):
        module, args, recorded = read_snapshot(path)
        if args_path:
            args = arrays.load_args(args_path, [p.shape for p in module.entry.parameters])
        return module, args, recorded
    module = read_module(path)
    shapes = [p.shape for p in module.entry.parameters]
    if args_path:
        return module, arrays.load_args(args_path, shapes), None
    return module, arrays.random_args(shapes, seed=random_seed), None


def run_module(module, args, platform, num_runs=1, num_replicas=1, num_partitions=1,
               allow_mixed_precision=False):
    """Compiles a copy of ``module`` for ``platform`` and runs it; returns
    (flattened results, seconds per run). With several replicas or
    partitions every device gets ``args`` (as XLA's replay_computation does)
    and the results are device 0's. ``allow_mixed_precision``: the
    verifier's option (XLA's HloVerifierOpts), for modules that mix
    floating-point precisions as XLA's tests do."""
    module = parse_hlo_module(module.to_text())   # compilers optimize in place
    replicated = num_replicas > 1 or num_partitions > 1
    options = {"allow_mixed_precision": True} if allow_mixed_precision else {}
    if num_partitions > 1 and sdy.uses_shardy(module):
        return _run_global(module, args, platform, num_runs, num_replicas, num_partitions, options)
    if replicated:
        executable = runtime.compile(module, platform, num_replicas=num_replicas,
                                     num_partitions=num_partitions, **options)
    else:
        executable = runtime.compile(module, platform, **options)
    seconds = []
    result = None
    for _ in range(max(num_runs, 1)):
        start = time.perf_counter()
        if replicated:
            result = executable.execute([list(args)] * executable.num_devices)[0]
        else:
            result = executable.execute(*args)
        seconds.append(time.perf_counter() - start)
    return arrays.flatten_result(result), seconds


def _run_global(module, args, platform, num_runs, num_replicas, num_partitions, options):
    """A global module in Shardy's form (JAX's, before partitioning): the
    arguments are global arrays, cut into each partition's tiles as the
    module's shardings say; the results are put back together from the
    tiles of replica 0's partitions."""
    from xla.service.spmd_partitioner import partition, shard_arguments, unshard_result
    shape = module.entry.root_instruction.shape
    partitioned, param_shardings, result_sharding = partition(module, num_partitions)
    executable = runtime.compile(partitioned, platform, num_replicas=num_replicas,
                                 num_partitions=num_partitions, **options)
    device_args = shard_arguments(args, param_shardings, num_partitions, executable.num_devices)
    seconds = []
    for _ in range(max(num_runs, 1)):
        start = time.perf_counter()
        outs = executable.execute(device_args)[:num_partitions]
        seconds.append(time.perf_counter() - start)
    return arrays.flatten_result(unshard_result(outs, result_sharding, shape)), seconds


def replay_file(path, platform="interpreter", args_path=None, random_seed=0, num_runs=1,
                num_replicas=1, num_partitions=1, allow_mixed_precision=False):
    """Parses, compiles and runs one module or snapshot; returns its flattened results."""
    from xla.tools.tolerance import reduction_lengths
    module, args, recorded = load_inputs(path, args_path, random_seed)
    lengths = reduction_lengths(module)
    leaves, seconds = run_module(module, args, platform, num_runs, num_replicas, num_partitions,
                                 allow_mixed_precision)
    return ReplayResult(path, leaves, seconds, args, recorded, lengths)


class Comparison:
    """Per-output errors between two runs; ``ok`` when all are within tolerance."""

    def __init__(self, rows, ok):
        self.rows = rows   # (name, max abs error, max rel error, within tolerance)
        self.ok = ok


def compare_leaves(got, want, rtol, atol, lengths=None):
    """Max absolute and relative error per output; NaNs must match NaNs and
    integers/bools must be equal. A float element is within tolerance when
    ``|got - want| <= atol + rtol * (|want| + sqrt(L) * rms(want))``, L the
    number of terms the output accumulates (``lengths``, per output, from
    ``xla.tools.tolerance.reduction_lengths``; the second term is left out
    for L = 1): two correct summation orders of a long dot or convolution
    differ by about sqrt(L) roundings of the output's size, far above an
    element that cancellation left small."""
    import numpy as np
    rows, ok = [], True
    lengths = list(lengths) if lengths is not None else [1] * len(want)
    if len(got) != len(want):
        return Comparison([("result count", float(len(got)), float(len(want)), False)], False)
    for i, (a, b) in enumerate(zip(got, want)):
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape:
            rows.append((f"out{i}", float("inf"), float("inf"), False))
            ok = False
            continue
        if _exact(a.dtype) or _exact(b.dtype):
            if a.dtype.type is np.void or b.dtype.type is np.void:
                a, b = a.view(np.uint8), b.view(np.uint8)
            diff = np.abs(a.astype(np.float64) - b.astype(np.float64)) if a.size else np.zeros(1)
            err = float(diff.max()) if diff.size else 0.0
            good = bool(np.array_equal(a, b))
            rows.append((f"out{i}", err, err, good))
            ok &= good
            continue
        a64 = a.astype(np.complex128 if a.dtype.kind == "c" else np.float64)
        b64 = b.astype(np.complex128 if b.dtype.kind == "c" else np.float64)
        nan_a, nan_b = np.isnan(a64), np.isnan(b64)
        same_nan = bool(np.array_equal(nan_a, nan_b))
        finite = ~(nan_a | nan_b)
        with np.errstate(invalid="ignore"):
            both_inf = np.isinf(a64) & np.isinf(b64) & (a64 == b64)
        mask = finite & ~both_inf
        diff = np.abs(a64 - b64)[mask]
        scale = np.abs(b64)[mask]
        abs_err = float(diff.max()) if diff.size else 0.0
        rel_err = float((diff / np.maximum(scale, np.finfo(np.float64).tiny)).max()) if diff.size else 0.0
        length = lengths[i] if i < len(lengths) else 1
        if length > 1 and scale.size:
            scale = scale + math.sqrt(length) * float(np.sqrt(np.mean(np.square(scale))))
        good = same_nan and bool(np.all(diff <= atol + rtol * scale))
        rows.append((f"out{i}", abs_err, rel_err, good))
        ok &= good
    return Comparison(rows, ok)


def _exact(dtype):
    """Whether outputs of ``dtype`` must match exactly: integers, bools, the
    ml_dtypes integer types (int4...) and raw bytes; floats (the ml_dtypes
    ones too: bf16, float8...) are compared within tolerance."""
    import numpy as np
    if dtype.kind in "biu" or dtype.type is np.void:
        return True
    if dtype.kind == "V":
        import ml_dtypes
        try:
            ml_dtypes.iinfo(dtype)
            return True
        except (TypeError, ValueError):
            return False
    return False


