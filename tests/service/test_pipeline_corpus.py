"""The whole target-independent pipeline on every corpus module.

After every pass the module must verify; at the end it must be fused,
scheduled and buffer-assigned, and the interpreter (which evaluates fusion
instructions) must still give JAX's outputs.
"""
import pytest

from pass_test_util import assert_corpus_results, corpus_files, corpus_has_elided_constants
from xla.hlo.parser import parse_hlo_module
from xla.service.buffer_assignment import assign_buffers
from xla.service.pipelines import default_pipeline

FILES = corpus_files()


def test_corpus_is_not_empty():
    assert len(FILES) >= 80, "tests/corpus is missing or incomplete"


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_pipeline_keeps_results(path):
    module = parse_hlo_module(path.read_text(), filename=str(path))
    original = parse_hlo_module(path.read_text(), filename=str(path))
    pipeline = default_pipeline(verify=True)
    pipeline.run(module)
    assert module.is_scheduled
    assert "is_scheduled=true" in module.to_text().splitlines()[0]
    assignment = assign_buffers(module)
    assert assignment.peak_bytes <= assignment.temp_bytes
    assert not corpus_has_elided_constants(module)
    assert_corpus_results(path, module, original=original)
