"""Fuzzing (issue 13): mutations of the corpus's HLO text go through the
parser, the verifier, the interpreter and the CPU backend, and every input
ends in a result or one of the project's errors (XlaError) -- never another
exception, a crash or a hang.

The budget is small in CI (FUZZ_EXAMPLES, default 60 examples, the same
ones every run); `make fuzz` (tests/fuzz/run_fuzz.py) runs random mutations
for FUZZ_SECONDS (default 3600), prints the outcomes, and keeps any input
that ends otherwise in tests/fuzz/findings/. Mutations,
drawn by hypothesis: delete a span, duplicate a line, swap two lines, replace
a number with an extreme one, replace a token with another from the corpus,
insert punctuation. The corpus modules used are the small ones (so a run
stays quick); each mutated module runs on random arguments.
"""
import os
import pathlib
import re
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import xla
from xla.errors import XlaError
from xla.tools.arrays import random_args

CORPUS = pathlib.Path(__file__).resolve().parents[1] / "corpus"
TEXTS = [p.read_text() for p in sorted(CORPUS.glob("*.hlo")) if p.stat().st_size < 4000]
NUMBERS = ["0", "-1", "1", "2147483648", "9223372036854775807", "18446744073709551615",
           "99999999999999999999", "-0", "1e309", "nan", "4294967296"]
PUNCT = list("{}()[],=%:<>-?\"/*") + ["\n", "ROOT ", "ENTRY ", "->", "{{", "}}"]


class Hypothesis:
    """The choices of a mutation, drawn by hypothesis (so failures shrink)."""

    def __init__(self, data):
        self.data = data

    def choice(self, options):
        return self.data.draw(st.sampled_from(options))

    def randint(self, lo, hi):
        return self.data.draw(st.integers(lo, hi))


def mutate(text, rnd):
    """One mutation; ``rnd`` has ``choice`` and ``randint`` (random.Random or Hypothesis)."""
    lines = text.split("\n")
    kind = rnd.choice(["delete", "duplicate", "swap", "number", "token", "insert"])
    if kind == "delete" and len(text) > 2:
        i = rnd.randint(0, len(text) - 1)
        j = rnd.randint(i, min(len(text), i + 40))
        return text[:i] + text[j:]
    if kind == "duplicate":
        k = rnd.randint(0, len(lines) - 1)
        return "\n".join(lines[:k + 1] + [lines[k]] + lines[k + 1:])
    if kind == "swap" and len(lines) > 1:
        a, b = rnd.randint(0, len(lines) - 1), rnd.randint(0, len(lines) - 1)
        lines[a], lines[b] = lines[b], lines[a]
        return "\n".join(lines)
    if kind == "number":
        spans = [m.span() for m in re.finditer(r"\d+", text)]
        if spans:
            a, b = rnd.choice(spans)
            return text[:a] + rnd.choice(NUMBERS) + text[b:]
    if kind == "token":
        tokens = re.findall(r"[a-z][a-z0-9\-]+", text)
        if tokens:
            old, new = rnd.choice(tokens), rnd.choice(tokens)
            return text.replace(old, new, 1)
    i = rnd.randint(0, len(text))
    return text[:i] + rnd.choice(PUNCT) + text[i:]


OUTCOME_NAMES = ("parse error", "verifier error", "argument error", "interpreter error",
                 "cpu error", "ok")


def run_one(text):
    """The outcome: 'parse', 'verify', 'compile', 'run' error or 'ok'."""
    try:
        module = xla.parse_hlo_module(text)
    except XlaError:
        return "parse error"
    try:
        xla.verify_module(module)
    except XlaError:
        return "verifier error"
    try:
        args = random_args([p.shape for p in module.entry.parameters], seed=0)
    except XlaError:
        return "argument error"
    outcome = "ok"
    for platform in ("interpreter", "cpu"):
        try:
            exe = xla.compile(xla.parse_hlo_module(text), platform)
            exe.execute(*args, **({"timeout": 10} if platform == "cpu" else {}))
        except XlaError:
            outcome = f"{platform} error"
    return outcome


def examples():
    return int(os.environ.get("FUZZ_EXAMPLES", "60"))


@settings(max_examples=examples(), deadline=None,
          derandomize=os.environ.get("FUZZ_RANDOM", "0") != "1",
          suppress_health_check=list(HealthCheck))
@given(st.data())
def test_mutated_modules_end_in_a_result_or_a_clean_error(data):
    rnd = Hypothesis(data)
    text = rnd.choice(TEXTS)
    for _ in range(rnd.randint(1, 3)):
        text = mutate(text, rnd)
    assert run_one(text) in OUTCOME_NAMES


def test_the_corpus_is_there():
    assert len(TEXTS) >= 50
