"""The interpreter against JAX on every module of tests/corpus.

For each ``NAME.hlo`` (what JAX hands to XLA) and ``NAME.optimized.hlo``
(XLA:CPU's optimized dump) the inputs ``arg0..argN`` and JAX's outputs
``out0..outM`` (result leaves, depth-first) come from ``NAME.npz`` (see
tests/corpus/README.md; bf16 and other ml_dtypes arrays are stored as raw
void data and reinterpreted by the module's element types).

Integers and pred must match exactly; floats within a tolerance by type
(scaled by the magnitude of the expected values, since XLA:CPU's
summation order and transcendental approximations differ from NumPy's),
with NaNs and infinities in the same positions. Modules with ``rng`` have
implementation-defined values: only types and shapes are compared. An
empty corpus fails.
"""
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from xla.hlo.evaluator import evaluate
from xla.hlo.parser import parse_hlo_module
from xla.hlo.evaluator.registry import TOKEN
from xla.tools.arrays import flatten_result

CORPUS = Path(__file__).resolve().parent / "corpus"
FILES = sorted(CORPUS.glob("*.hlo")) if CORPUS.is_dir() else []

# Opcodes whose results XLA leaves implementation-defined (XLA:CPU's rng
# expansion): only element types and shapes are compared.
IMPLEMENTATION_DEFINED = frozenset(["rng", "rng-get-and-update-state"])

# (rtol, atol relative to the largest finite |expected|) by dtype name.
TOLERANCES = {
    "float64": (1e-12, 1e-12),
    "complex128": (1e-12, 1e-12),
    "float32": (2e-5, 2e-6),
    "complex64": (2e-5, 2e-6),
    "float16": (4e-3, 1e-3),
    "bfloat16": (3e-2, 8e-3),
    "float8_e4m3fn": (1.3e-1, 3e-2),
    "float8_e5m2": (2.5e-1, 6e-2),
}


def npz_for(path):
    name = path.name
    stem = name[:-len(".optimized.hlo")] if name.endswith(".optimized.hlo") else name[:-len(".hlo")]
    return path.with_name(stem + ".npz")


_SUFFIX_DTYPES = {"bf16bits": ml_dtypes.bfloat16, "f8e4m3fnbits": ml_dtypes.float8_e4m3fn,
                  "f8e5m2bits": ml_dtypes.float8_e5m2}


def load_npz(path):
    """name -> array per tests/corpus/README.md: ``KEY__bf16bits`` holds raw
    bf16 bits, ``KEY__token`` a token leaf (returned as TOKEN)."""
    out = {}
    with np.load(path, allow_pickle=False) as z:
        for key in z.files:
            base, _, kind = key.partition("__")
            value = z[key]
            if kind in _SUFFIX_DTYPES:
                value = value.view(_SUFFIX_DTYPES[kind])
            elif kind == "token":
                value = TOKEN
            out[base] = value
    return out


def _as_type(value, shape):
    """Older npz files stored ml_dtypes arrays as raw void data and tokens
    as empty arrays: reinterpret by the module's types."""
    if shape.is_token:
        return TOKEN
    if isinstance(value, np.ndarray) and value.dtype.kind == "V" and shape.is_array:
        return value.view(shape.dtype)
    return value


def _ids(paths):
    return [p.name for p in paths] if paths else ["<empty corpus>"]


def test_corpus_is_not_empty():
    assert FILES, f"no .hlo files in {CORPUS}: the interpreter corpus tests would test nothing"


def assert_matches(actual, expected, where):
    if expected is TOKEN:
        assert actual is TOKEN, f"{where}: expected a token, got {type(actual).__name__}"
        return
    actual = np.asarray(actual)
    expected = np.asarray(expected)
    assert actual.shape == expected.shape, f"{where}: shape {actual.shape} != JAX's {expected.shape}"
    assert actual.dtype == expected.dtype, f"{where}: dtype {actual.dtype} != JAX's {expected.dtype}"
    name = str(expected.dtype)
    if name not in TOLERANCES:
        mismatch = actual != expected
        assert not mismatch.any(), (
            f"{where}: {int(mismatch.sum())} of {mismatch.size} elements differ; first at "
            f"{np.argwhere(mismatch)[0].tolist()}: {actual[mismatch][0]!r} != {expected[mismatch][0]!r}")
        return
    rtol, atol = TOLERANCES[name]
    if expected.dtype.kind == "c":
        parts = [(actual.real, expected.real), (actual.imag, expected.imag)]
    else:
        parts = [(actual.astype(np.float64), expected.astype(np.float64))]
    for a, e in parts:
        a = np.asarray(a, np.float64)
        e = np.asarray(e, np.float64)
        nan_a, nan_e = np.isnan(a), np.isnan(e)
        assert np.array_equal(nan_a, nan_e), (
            f"{where}: NaN positions differ ({int(nan_a.sum())} NaNs vs JAX's {int(nan_e.sum())}); "
            f"first at {np.argwhere(nan_a != nan_e)[0].tolist()}")
        inf_e = np.isinf(e)
        assert np.array_equal(np.isinf(a) & ~nan_a, inf_e) and np.array_equal(a[inf_e], e[inf_e]), (
            f"{where}: infinities differ")
        finite = np.isfinite(e)
        if not finite.any():
            continue
        scale = max(1.0, float(np.max(np.abs(e[finite]))))
        err = np.abs(a[finite] - e[finite])
        bound = atol * scale + rtol * np.abs(e[finite])
        bad = err > bound
        assert not bad.any(), (
            f"{where}: {int(bad.sum())} of {bad.size} elements outside rtol={rtol} atol={atol}*{scale:g}; "
            f"worst: {a[finite][np.argmax(err - bound)]!r} vs JAX's {e[finite][np.argmax(err - bound)]!r}")


def check_against_jax(path, run):
    """Runs corpus module ``path`` with ``run(module, args) -> result`` and
    compares every result leaf with JAX's (shared with tests/conformance.py)."""
    assert path is not None, f"no .hlo files in {CORPUS}"
    data_path = npz_for(path)
    assert data_path.exists(), f"{path.name}: no inputs/outputs file {data_path.name}"
    module = parse_hlo_module(path.read_text(), filename=str(path))
    elided = [i.name for i in module.all_instructions() if i.is_elided_constant]
    if elided:
        pytest.skip(f"{path.name} elides the value of constant(s) {', '.join(elided[:3])}")
    data = load_npz(data_path)
    params = module.entry.parameters
    args = [_as_type(data[f"arg{i}"], p.shape) for i, p in enumerate(params)]
    leaf_shapes = [s for _, s in module.entry.root_instruction.shape.leaves()]
    n_out = len([k for k in data if k.startswith("out")])
    assert n_out == len(leaf_shapes), f"{data_path.name}: {n_out} outputs, the module has {len(leaf_shapes)}"
    expected = [_as_type(data[f"out{i}"], s) for i, s in enumerate(leaf_shapes)]
    result = flatten_result(run(module, args))
    assert len(result) == n_out, f"{path.name}: {len(result)} results, JAX has {n_out}"
    random = sorted({i.opcode for i in module.all_instructions()} & IMPLEMENTATION_DEFINED)
    for i, (a, e) in enumerate(zip(result, expected)):
        where = f"{path.name} out{i}"
        if random:
            # Values are implementation-defined (README): types and shapes only.
            a, e = np.asarray(a), np.asarray(e)
            assert (a.shape, a.dtype) == (e.shape, e.dtype), f"{where} ({', '.join(random)}): {a.dtype}{list(a.shape)} != JAX's {e.dtype}{list(e.shape)}"
            continue
        assert_matches(a, e, where)


@pytest.mark.parametrize("path", FILES or [None], ids=_ids(FILES))
def test_interpreter_matches_jax(path):
    check_against_jax(path, lambda module, args: evaluate(module, *args))


def test_assert_matches_is_strict():
    """The comparison itself: exact for integers, NaN positions, tolerances."""
    assert_matches(np.int32([1, 2]), np.int32([1, 2]), "ok")
    with pytest.raises(AssertionError):
        assert_matches(np.int32([1, 2]), np.int32([1, 3]), "int")
    with pytest.raises(AssertionError):
        assert_matches(np.float32([np.nan, 1]), np.float32([1, 1]), "nan")
    with pytest.raises(AssertionError):
        assert_matches(np.float32([1.001]), np.float32([1.0]), "f32")
    assert_matches(np.float32([1.000001]), np.float32([1.0]), "f32 close")
    b = ml_dtypes.bfloat16
    assert_matches(np.array([1.0078125], b), np.array([1.0], b), "bf16 one ulp")
    with pytest.raises(AssertionError):
        assert_matches(np.float32([np.inf]), np.float32([-np.inf]), "inf sign")
