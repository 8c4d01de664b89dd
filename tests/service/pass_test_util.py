"""Helpers for pass tests: parse HLO text, run one pass, compare numbers.

A pass test reads like XLA's: the input module as HLO text, the pass, and
the printed result or a structural property, plus a check that the
interpreter computes the same values before and after the pass.
"""
import numpy as np

from xla.hlo.evaluator.evaluator import Evaluator
from xla.hlo.parser import parse_hlo_module
from xla.hlo.verifier import verify_module
from xla.tools.arrays import flatten_result, random_args


def run_pass(hlo_pass, text, verify=True):
    """Parses ``text``, runs ``hlo_pass`` on it; returns (module, changed)."""
    module = parse_hlo_module(text)
    changed = hlo_pass.run(module)
    for comp in module.computations:
        comp.sort_post_order()
    if verify:
        verify_module(module)
    return module, changed


def evaluate(module, args):
    return flatten_result(Evaluator().evaluate(module, list(args)))


def assert_same_results(text_before, module_after, seed=0, args=None, rtol=1e-6, atol=1e-6):
    """The interpreter gives the same numbers on the module before and after."""
    before = parse_hlo_module(text_before)
    if args is None:
        args = random_args([p.shape for p in before.entry.parameters], seed=seed)
    expected = evaluate(before, args)
    actual = evaluate(module_after, args)
    assert len(expected) == len(actual)
    for e, a in zip(expected, actual):
        e = np.asarray(e)
        a = np.asarray(a)
        assert e.shape == a.shape and e.dtype == a.dtype, (e.shape, e.dtype, a.shape, a.dtype)
        if e.dtype.kind in "fc":
            np.testing.assert_allclose(a.astype(np.complex128 if e.dtype.kind == "c" else np.float64),
                                       e.astype(np.complex128 if e.dtype.kind == "c" else np.float64),
                                       rtol=rtol, atol=atol, equal_nan=True)
        else:
            np.testing.assert_array_equal(a, e)


def opcodes(module, computation=None):
    """Opcodes of the entry computation's instructions (or a named one), in order."""
    comp = module.entry if computation is None else module.computation(computation)
    return [i.opcode for i in comp.instructions]


# ----- the JAX corpus (tests/corpus) ------------------------------------------
CORPUS_DIR = __import__("pathlib").Path(__file__).resolve().parent.parent / "corpus"


def _corpus_interpreter_test():
    """tests/test_corpus_interpreter.py, loaded by path for its comparison helpers
    (npz loading, tolerances by dtype, implementation-defined rng)."""
    import importlib.util
    import sys
    name = "_corpus_interpreter_helpers"
    if name not in sys.modules:
        path = CORPUS_DIR.parent / "test_corpus_interpreter.py"
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        sys.modules[name] = module
    return sys.modules[name]


def corpus_files():
    """Every ``*.hlo`` of tests/corpus (unoptimized and optimized), sorted."""
    return sorted(CORPUS_DIR.glob("*.hlo")) if CORPUS_DIR.is_dir() else []


def corpus_has_elided_constants(module):
    return any(i.is_elided_constant for i in module.all_instructions())


def assert_corpus_results(path, module, original=None):
    """The interpreter's results on ``module`` match JAX's outputs for the
    corpus file ``path`` (inputs and outputs from its .npz), compared as
    tests/test_corpus_interpreter.py compares them. Values are compared only
    by type and shape when ``original`` (default: ``module``) uses an op
    whose results are implementation-defined (rng)."""
    helpers = _corpus_interpreter_test()
    data = helpers.load_npz(helpers.npz_for(path))
    args = [helpers._as_type(data[f"arg{i}"], p.shape) for i, p in enumerate(module.entry.parameters)]
    leaf_shapes = [s for _, s in module.entry.root_instruction.shape.leaves()]
    expected = [helpers._as_type(data[f"out{i}"], s) for i, s in enumerate(leaf_shapes)]
    result = evaluate(module, args)
    assert len(result) == len(expected), f"{path.name}: {len(result)} results, JAX has {len(expected)}"
    random = ({i.opcode for i in (original or module).all_instructions()}
              & helpers.IMPLEMENTATION_DEFINED)
    for i, (a, e) in enumerate(zip(result, expected)):
        where = f"{path.name} out{i}"
        if random:
            a, e = np.asarray(a), np.asarray(e)
            assert (a.shape, a.dtype) == (e.shape, e.dtype), where
            continue
        helpers.assert_matches(a, e, where)
