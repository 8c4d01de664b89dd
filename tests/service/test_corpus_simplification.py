"""AlgebraicSimplifier, DotDecomposer, LayoutAssignment and CopyInsertion in
sequence on every module of tests/corpus (unoptimized and optimized dumps).

After each pass the module must verify and a second run of the same pass
must change nothing; at the end every dot is canonical, every array shape
has a layout, and the interpreter still matches JAX's outputs from the
corpus .npz (compared as tests/test_corpus_interpreter.py does).
"""
import pytest

from pass_test_util import assert_corpus_results, corpus_files, corpus_has_elided_constants
from xla.hlo.parser import parse_hlo_module
from xla.hlo.verifier import verify_module
from xla.service.algebraic_simplifier import AlgebraicSimplifier
from xla.service.copy_insertion import CopyInsertion
from xla.service.dot_decomposer import DotDecomposer, is_canonical_dot
from xla.service.layout_assignment import LayoutAssignment

FILES = corpus_files()
PASSES = (AlgebraicSimplifier, DotDecomposer, LayoutAssignment, CopyInsertion)


def test_corpus_is_not_empty():
    assert FILES, "no .hlo files in tests/corpus: the corpus simplification tests would test nothing"


@pytest.mark.parametrize("path", FILES or [None], ids=[p.name for p in FILES] or ["<empty corpus>"])
def test_passes_keep_corpus_results(path):
    assert path is not None, "no .hlo files in tests/corpus"
    text = path.read_text()
    original = parse_hlo_module(text, filename=str(path))
    module = parse_hlo_module(text, filename=str(path))
    for pass_class in PASSES:
        pass_class().run(module)
        verify_module(module)
        assert not pass_class().run(module), f"{path.name}: {pass_class.name} changed the module on a second run"
    for instr in module.all_instructions():
        if instr.opcode == "dot" and len(instr.operands) == 2:
            assert is_canonical_dot(instr), f"{path.name}: {instr.to_text()}"
        for _, leaf in instr.shape.leaves():
            assert not leaf.is_array or leaf.layout is not None, f"{path.name}: {instr.to_text()}"
    if corpus_has_elided_constants(module):
        pytest.skip(f"{path.name} elides constant values; the passes ran and verified")
    assert_corpus_results(path, module, original)
