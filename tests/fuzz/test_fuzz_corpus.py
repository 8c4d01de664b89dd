"""Fuzzing (issue 13): mutations of the corpus go through the parser, the
verifier, the interpreter and the CPU backend, and through the tools, and
every input ends in a result or one of the project's errors -- never
another exception, a crash or a hang. What is mutated and how outcomes are
judged: fuzz_targets.py.

The budget is small in CI (FUZZ_EXAMPLES library inputs, default 60, and
FUZZ_TOOL_EXAMPLES tool runs, default 6, the same ones every run);
`make fuzz` (run_fuzz.py) runs random mutations for FUZZ_SECONDS (default
3600) with crashes and hangs isolated in a worker process, prints the
outcomes, and keeps any finding in tests/fuzz/findings/.
"""
import os
import pathlib
import subprocess
import sys

from hypothesis import HealthCheck, given, settings, strategies as st

from fuzz_targets import (OUTCOME_NAMES, TEXTS, TOOL_OUTCOMES, WITH_ARGS, mutate, mutate_bytes,
                          run_one, run_tool, snapshot_bytes)

HERE = pathlib.Path(__file__).resolve().parent


class Hypothesis:
    """The choices of a mutation, drawn by hypothesis (so failures shrink)."""

    def __init__(self, data):
        self.data = data

    def choice(self, options):
        return self.data.draw(st.sampled_from(options))

    def randint(self, lo, hi):
        return self.data.draw(st.integers(lo, hi))


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
    assert len(TEXTS) >= 50 and len(WITH_ARGS) >= 10


@settings(max_examples=int(os.environ.get("FUZZ_TOOL_EXAMPLES", "6")), deadline=None,
          derandomize=os.environ.get("FUZZ_RANDOM", "0") != "1",
          suppress_health_check=list(HealthCheck))
@given(st.data())
def test_tools_on_mutated_inputs_end_in_a_result_or_one_line(data):
    rnd = Hypothesis(data)
    kind = rnd.choice(["module", "args", "snapshot"])
    platform = rnd.choice(["interpreter", "cpu"])
    if kind == "snapshot":
        text, args = rnd.choice(WITH_ARGS)
        snapshot = mutate_bytes(snapshot_bytes(text, args), rnd)
        assert run_tool("replay_computation", text, None, platform, snapshot=snapshot) in TOOL_OUTCOMES
        return
    if kind == "args":
        text, args = rnd.choice(WITH_ARGS)
        args = mutate_bytes(args, rnd)
    else:
        text, args = mutate(rnd.choice(TEXTS), rnd), None
    tool = "replay_computation" if args is not None else rnd.choice(["replay_computation", "hlo_opt"])
    assert run_tool(tool, text, args, platform) in TOOL_OUTCOMES


def test_the_driver_reports_a_crash_and_goes_on(tmp_path):
    """A worker that dies is a finding with its input, and the run goes on
    (with a new worker) to the end of its time."""
    env = dict(os.environ, FUZZ_SECONDS="3", FUZZ_TOOL_EVERY="0", FUZZ_SEED="1",
               FUZZ_FINDINGS=str(tmp_path), FUZZ_SELFTEST_CRASH="ENTRY")
    out = subprocess.run([sys.executable, str(HERE / "run_fuzz.py")], capture_output=True,
                         text=True, timeout=120, env=env)
    assert out.returncode == 1, out.stdout + out.stderr
    assert "FOUND crash" in out.stdout
    found = sorted(tmp_path.glob("finding-1-*.hlo"))
    assert found and "the worker died" in found[0].read_text()
