"""The corpus helpers live in tests/ (test_corpus_interpreter.py)."""
import pathlib
import sys

TESTS = str(pathlib.Path(__file__).resolve().parents[1])
if TESTS not in sys.path:
    sys.path.insert(0, TESTS)
