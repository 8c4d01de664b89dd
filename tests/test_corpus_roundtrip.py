"""Round trip of every module in tests/corpus (real JAX and XLA:CPU output).

``NAME.hlo`` is the unoptimized text JAX hands to XLA and
``NAME.optimized.hlo`` XLA:CPU's optimized dump of it. Each must parse
quickly, print back to exactly the same text, and print/parse/print must be
a fixed point. An empty corpus is a failure, not a silent pass.
"""
import difflib
from pathlib import Path

import pytest

from xla.hlo.parser import parse_hlo_module
from xla.hlo.printer import module_to_text

CORPUS = Path(__file__).resolve().parent / "corpus"
FILES = sorted(CORPUS.glob("*.hlo"))

# Files whose printed text may legitimately differ from the source (name ->
# why). The text must then still match after normalizing whitespace.
KNOWN_DIFFERENCES = {}


def _ids(path):
    return path.name


def _first_difference(expected, actual):
    diff = difflib.unified_diff(expected.splitlines(True), actual.splitlines(True),
                                "source", "printed", n=1)
    return "".join(list(diff)[:20])


def test_corpus_is_not_empty():
    assert CORPUS.is_dir(), f"corpus directory {CORPUS} is missing"
    assert FILES, f"no .hlo files in {CORPUS}: the corpus round-trip tests would test nothing"
    assert any(p.name.endswith(".optimized.hlo") for p in FILES), "no optimized dumps in the corpus"
    assert any(not p.name.endswith(".optimized.hlo") for p in FILES), "no unoptimized modules in the corpus"


@pytest.mark.parametrize("path", FILES, ids=_ids)
def test_parses_and_prints_back_exactly(path):
    # (The parser's speed is not asserted here: a time depends on the
    # machine's load. test_parser checks that its work grows linearly.)
    text = path.read_text(encoding="utf-8")
    module = parse_hlo_module(text, filename=str(path))
    assert module.entry is not None and module.entry.root_instruction is not None
    for comp in module.computations:
        members = set(map(id, comp.instructions))
        for instr in comp.instructions:
            assert all(id(op) in members for op in instr.operands), instr
    printed = module_to_text(module)
    if path.name in KNOWN_DIFFERENCES:
        assert printed.split() == text.split(), _first_difference(text, printed)
    else:
        assert printed == text, _first_difference(text, printed)


@pytest.mark.parametrize("path", FILES, ids=_ids)
def test_print_parse_print_is_a_fixed_point(path):
    once = module_to_text(parse_hlo_module(path.read_text(encoding="utf-8"), filename=str(path)))
    twice = module_to_text(parse_hlo_module(once))
    assert once == twice, _first_difference(once, twice)


@pytest.mark.parametrize("path", FILES, ids=_ids)
def test_truncated_and_corrupted_files_raise_only_parse_errors(path):
    from xla.errors import HloParseError
    text = path.read_text(encoding="utf-8")
    step = max(len(text) // 6, 1)
    for cut in range(step // 2, len(text), step):
        for broken in (text[:cut], text[:cut] + "}" + text[cut + 1:], text[:cut] + text[cut + 3:]):
            try:
                parse_hlo_module(broken)
            except HloParseError as e:
                assert e.line >= 1 and e.column >= 1
