"""The simplification passes on every module of tests/corpus.

Each file (unoptimized and optimized dumps) goes through the passes in
sequence; after each pass the module must verify, and running the same pass
again must change nothing. At the end the interpreter must still match
JAX's outputs from the corpus .npz (compared as tests/test_corpus_interpreter.py
does). On a mismatch the passes are replayed one at a time to name the first
pass after which the results differ. The corpus is evaluated once per file,
not once per pass, to keep this quick.
"""
import pytest

from pass_test_util import (assert_corpus_results, corpus_files, corpus_has_elided_constants)
from xla.hlo.parser import parse_hlo_module
from xla.hlo.verifier import verify_module
from xla.service.call_inliner import CallInliner
from xla.service.constant_folding import HloConstantFolding
from xla.service.cse import HloCSE
from xla.service.dce import HloDCE
from xla.service.tuple_simplifier import TupleSimplifier
from xla.service.while_loop_invariant_code_motion import WhileLoopInvariantCodeMotion
from xla.service.while_loop_simplifier import WhileLoopSimplifier

FILES = corpus_files()

PASSES = (CallInliner, TupleSimplifier, HloConstantFolding, HloCSE, WhileLoopSimplifier,
          WhileLoopInvariantCodeMotion, TupleSimplifier, HloDCE)


def _run(pass_class, module, where):
    changed = pass_class().run(module)
    if not module.is_scheduled:
        for comp in module.computations:
            comp.sort_post_order()
    verify_module(module)
    again = pass_class().run(module)
    assert not again, f"{where}: {pass_class.name} changed the module again on a second run"
    return changed


def test_corpus_is_not_empty():
    assert FILES, "no .hlo files in tests/corpus: the pass corpus tests would test nothing"


@pytest.mark.parametrize("path", FILES or [None], ids=[p.name for p in FILES] or ["<empty corpus>"])
def test_passes_keep_corpus_results(path):
    assert path is not None, "no .hlo files in tests/corpus"
    text = path.read_text()
    original = parse_hlo_module(text, filename=str(path))
    module = parse_hlo_module(text, filename=str(path))
    for p in PASSES:
        _run(p, module, path.name)
    if corpus_has_elided_constants(module):
        pytest.skip(f"{path.name} elides constant values; the passes ran and verified")
    try:
        assert_corpus_results(path, module, original)
    except AssertionError:
        replay = parse_hlo_module(text, filename=str(path))
        for p in PASSES:
            _run(p, replay, path.name)
            try:
                assert_corpus_results(path, replay, original)
            except AssertionError as e:
                raise AssertionError(f"{path.name}: results differ after {p.name}: {e}") from None
        raise
