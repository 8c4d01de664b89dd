"""Running one program of the HLO test corpus (tools/gen_corpus.py) with JAX
and writing its files: NAME.hlo and NAME.optimized.hlo (XLA's dumps),
NAME.npz (inputs and outputs), each checked against the module's entry
signature and written atomically.

Needs JAX (a scratch virtualenv; JAX is not a dependency of the project).
"""

import atexit
import functools
import json
import os
import re
import shutil
import sys
import tempfile

# XLA reads XLA_FLAGS once, when the first backend is created, so the dump
# directory must be configured before jax is imported.
_DUMP_DIR = tempfile.mkdtemp(prefix="hlo_corpus_dump_")
# Removed at exit, also when the generator stops early (--help, a bad
# argument, an error): it only ever holds XLA's dumps of this run.
atexit.register(shutil.rmtree, _DUMP_DIR, ignore_errors=True)
os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                           f" --xla_dump_to={_DUMP_DIR} --xla_dump_hlo_as_text").strip()
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import numpy as np  # noqa: E402
import ml_dtypes  # noqa: E402
import jax  # noqa: E402
from jax._src.lib import xla_client as xc  # noqa: E402

from corpus_programs import Gen  # noqa: E402


# ----------------------------------------------------------------------------
# HLO text helpers.
# ----------------------------------------------------------------------------

_INSTR = re.compile(r"^\s*(?:ROOT\s+)?%?[\w.\-]+\s*=\s*(.*)$")
_OPCODE = re.compile(r"(?<![\w.\-])([a-z][a-z0-9\-]*)\(")
_ELEM = re.compile(r"(?<![\w.])(pred|token|[suf]\d+|bf16|c64|c128|f8e\w+)\[([\d,]*)\]")

HLO_TO_NP = {
    "pred": np.bool_, "s8": np.int8, "s16": np.int16, "s32": np.int32, "s64": np.int64,
    "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64,
    "f16": np.float16, "f32": np.float32, "f64": np.float64, "c64": np.complex64,
    "c128": np.complex128, "bf16": ml_dtypes.bfloat16,
    "f8e4m3fn": ml_dtypes.float8_e4m3fn, "f8e5m2": ml_dtypes.float8_e5m2,
}
NP_TO_HLO = {np.dtype(v): k for k, v in HLO_TO_NP.items()}


def opcodes(text):
    """The set of opcodes of all instructions in an HLO module text."""
    ops = set()
    for line in text.splitlines():
        m = _INSTR.match(line)
        if m:
            op = _OPCODE.search(m.group(1))
            if op:
                ops.add(op.group(1))
    return ops


def element_types(text):
    types = set()
    for line in text.splitlines():
        m = _INSTR.match(line)
        if m:
            types.update(t for t, _ in _ELEM.findall(m.group(1)))
    return types


def entry_signature(text):
    """(param leaves, result leaves) as lists of (hlo type, shape) from the header."""
    header = text.splitlines()[0]
    start = header.index("entry_computation_layout={") + len("entry_computation_layout={")
    depth, end = 1, start
    while depth:
        depth += {"{": 1, "}": -1}.get(header[end], 0)
        end += 1
    params, result = header[start:end - 1].split("->", 1)

    def leaves(s):
        return [(t, tuple(int(d) for d in dims.split(",") if d)) for t, dims in _ELEM.findall(s)]
    return leaves(params), leaves(result)


# ----------------------------------------------------------------------------
# Running one program.
# ----------------------------------------------------------------------------

def _new_dump_files(before, suffix):
    return sorted(f for f in set(os.listdir(_DUMP_DIR)) - before if f.endswith(suffix))


def _read_dump(before, module_name, kind):
    files = _new_dump_files(before, f".{module_name}.{kind}.txt")
    if len(files) != 1:
        raise RuntimeError(f"expected one {kind} dump for {module_name}, got {files}")
    with open(os.path.join(_DUMP_DIR, files[0])) as f:
        return f.read()


def _compile_mlir(mlir_text):
    """Compile a StableHLO module text for the CPU device, outside jax.jit."""
    dev = jax.devices("cpu")[0]
    exe = dev.client.compile_and_load(mlir_text, executable_devices=xc.DeviceList((dev,)),
                                      compile_options=xc.CompileOptions())

    def run(*args):
        bufs = [jax.device_put(a, dev) for a in jax.tree_util.tree_leaves(args)]
        res = exe.execute_sharded(bufs).disassemble_into_single_device_arrays()
        return [r[0] for r in res]
    return exe, run


def _normalize_json_keys(text):
    """Sorts the keys of every backend_config={...} JSON object in a module text."""
    def sort_keys(m):
        try:
            return "backend_config=" + json.dumps(json.loads(m.group(1)), sort_keys=True)
        except ValueError:
            return m.group(0)
    return re.sub(r"backend_config=(\{.*?\})(?=, [a-z_]+=|$)", sort_keys, text, flags=re.M)


def run_program(prog):
    """Returns (unoptimized text, optimized text, flat inputs, flat outputs)."""
    args = prog.inputs(Gen(prog.name))
    before = set(os.listdir(_DUMP_DIR))

    if prog.source == "handwritten":
        module = xc.hlo.hlo_module_from_text(prog.fn)
        unopt = module.to_string()
        comp = xc.XlaComputation(module.as_serialized_hlo_module_proto())
        mlir = xc._xla.mlir.xla_computation_to_mlir_module(comp)
        exe, run = _compile_mlir(mlir)
        outs = run(*args)
        opt = _read_dump(before, prog.name, "cpu_after_optimizations")
        return unopt, opt, jax.tree_util.tree_leaves(args), outs

    @functools.wraps(prog.fn)  # keeps the argument names for parameter metadata
    def fn(*a):
        return prog.fn(*a)
    fn.__name__ = fn.__qualname__ = prog.name
    module_name = "jit_" + prog.name
    jitted = jax.jit(fn, keep_unused=True)

    if prog.source == "jax-tpu-lower":
        lowered = jitted.trace(*args).lower(lowering_platforms=("tpu",))
        exe, run = _compile_mlir(lowered.as_text())
        outs = run(*args)
        opt_text = exe.hlo_modules()[0].to_string()
    else:
        compiled = jitted.lower(*args).compile()
        outs = jax.tree_util.tree_leaves(compiled(*args))
        opt_text = compiled.as_text()
    unopt = _read_dump(before, module_name, "before_optimizations")
    opt = _read_dump(before, module_name, "cpu_after_optimizations")
    # The dump is what we keep.  The executable's own text is the same module; it
    # has been seen to differ only in the key order inside backend_config JSON.
    if _normalize_json_keys(opt) != _normalize_json_keys(opt_text):
        print(f"  warning: {prog.name}: the optimized dump and the executable's text differ")
    return unopt, opt, jax.tree_util.tree_leaves(args), outs


def _store(prefix, i, value):
    """npz key and array for one leaf.

    ml_dtypes arrays (bf16, f8*) are saved as they are: np.load gives them back
    as raw void data (|V2, |V1) that readers reinterpret with the element type
    of the matching HLO parameter or result.  A token leaf is an empty uint8
    array.
    """
    if _is_token(value):
        return f"{prefix}{i}", np.zeros((0,), np.uint8)
    return f"{prefix}{i}", np.asarray(value)


def _is_token(value):
    return type(value).__name__ == "Token"


def _leaf_sig(value):
    if _is_token(value):
        return ("token", ())
    arr = np.asarray(value)
    return (NP_TO_HLO[arr.dtype], arr.shape)


def check_signature(name, text, ins, outs):
    params, results = entry_signature(text)
    got_in = [_leaf_sig(v) for v in ins]
    got_out = [_leaf_sig(v) for v in outs]
    if params != got_in:
        raise RuntimeError(f"{name}: parameters {params} != inputs {got_in}")
    if results != got_out:
        raise RuntimeError(f"{name}: results {results} != outputs {got_out}")


def _outputs(out_dir, names):
    files = [f"{n}{ext}" for n in names for ext in (".hlo", ".optimized.hlo", ".npz")]
    return [os.path.join(out_dir, f) for f in files + ["MANIFEST.json", "README.md"]]


def _check_outputs(paths, overwrite):
    """As the other tools (xla/tools/outputs.py): never through a link or
    into a device or directory, over an existing file only with --overwrite."""
    for path in paths:
        if os.path.islink(path) or (os.path.lexists(path) and not os.path.isfile(path)):
            sys.exit(f"gen_corpus: error: {path} is a link or not a regular file; refusing to write it")
        if os.path.exists(path) and not overwrite:
            sys.exit(f"gen_corpus: error: {path} exists; pass --overwrite to replace it")


def _write(path, data):
    """Writes ``data`` (str, bytes, or a function of a binary file) to a
    temporary file beside ``path`` and renames it into place: the file is
    whole or not there, and a link at ``path`` is replaced, not followed."""
    _check_outputs([path], overwrite=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp.", dir=os.path.dirname(os.path.abspath(path)))
    try:
        with os.fdopen(fd, "wb") as f:
            if callable(data):
                data(f)
            else:
                f.write(data.encode("utf-8") if isinstance(data, str) else data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)


def generate(prog, out_dir):
    with jax.enable_x64(prog.x64):
        unopt, opt, ins, outs = run_program(prog)
    check_signature(prog.name, unopt, ins, outs)
    check_signature(prog.name + " (optimized)", opt, ins, outs)

    arrays = dict(_store("arg", i, v) for i, v in enumerate(ins))
    arrays.update(_store("out", i, v) for i, v in enumerate(outs))
    _write(os.path.join(out_dir, prog.name + ".hlo"), unopt)
    _write(os.path.join(out_dir, prog.name + ".optimized.hlo"), opt)
    _write(os.path.join(out_dir, prog.name + ".npz"), lambda f: np.savez_compressed(f, **arrays))

    params, results = entry_signature(unopt)
    return {
        "name": prog.name,
        "description": prog.desc,
        "source": prog.source,
        "x64": prog.x64,
        "outputs": prog.outputs,
        "files": [prog.name + ".hlo", prog.name + ".optimized.hlo", prog.name + ".npz"],
        "npz_keys": sorted(arrays, key=lambda k: (k[:3], int(k[3:]))),
        "params": [f"{t}[{','.join(map(str, s))}]" for t, s in params],
        "results": [f"{t}[{','.join(map(str, s))}]" for t, s in results],
        "dtypes": sorted(element_types(unopt) | element_types(opt)),
        "opcodes_unoptimized": sorted(opcodes(unopt)),
        "opcodes_optimized": sorted(opcodes(opt)),
    }

