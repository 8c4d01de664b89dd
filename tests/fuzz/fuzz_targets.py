"""What the fuzzer feeds and how it judges the outcome (issue 13).

Inputs are mutations of the corpus (tests/corpus): HLO text (a span deleted,
a line duplicated or swapped, a number replaced by an extreme one, a token
replaced by another from the corpus, punctuation inserted) and argument
files (.npz bytes truncated, flipped or overwritten).

Targets, each of which must end in a result or a clean error:

* ``run_one(text)``: the library in this process: parser, verifier, the
  interpreter and the CPU backend (with a 10 s execution timeout), on
  deterministic random arguments. A clean error is an ``XlaError``.
* ``run_tool(...)``: a tool in a child process (replay_computation on either
  platform, hlo_opt), on a mutated module, mutated --args or a mutated
  snapshot. A clean end is
  exit status 0, or 1 with one line on stderr and no traceback.

``run_fuzz.py`` runs ``run_one`` in a worker process, so that a crash or a
hang is a finding rather than the end of the run.
"""
import os
import pathlib
import re
import subprocess
import sys
import tempfile

import xla
from xla.errors import XlaError
from xla.tools.arrays import random_args

ROOT = pathlib.Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "corpus"
TEXTS = [p.read_text() for p in sorted(CORPUS.glob("*.hlo")) if p.stat().st_size < 4000]
# Modules with argument files, for mutated --args: (module text, .npz bytes).
WITH_ARGS = [(p.read_text(), p.with_suffix(".npz").read_bytes())
             for p in sorted(CORPUS.glob("*.hlo"))
             if p.stat().st_size < 4000 and p.with_suffix(".npz").exists()
             and not p.name.endswith(".optimized.hlo")]
NUMBERS = ["0", "-1", "1", "2147483648", "9223372036854775807", "18446744073709551615",
           "99999999999999999999", "-0", "1e309", "nan", "4294967296"]
PUNCT = list("{}()[],=%:<>-?\"/*") + ["\n", "ROOT ", "ENTRY ", "->", "{{", "}}"]

OUTCOME_NAMES = ("parse error", "verifier error", "argument error", "interpreter error",
                 "cpu error", "ok")
TOOL_OUTCOMES = ("tool ok", "tool error")


def mutate(text, rnd):
    """One mutation; ``rnd`` has ``choice`` and ``randint`` (random.Random or
    test_fuzz_corpus.Hypothesis)."""
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


def mutate_bytes(data, rnd):
    """One mutation of a binary file: truncated, a byte flipped, or a run of
    bytes overwritten."""
    kind = rnd.choice(["truncate", "flip", "overwrite"])
    if kind == "truncate":
        return data[:rnd.randint(0, len(data))]
    i = rnd.randint(0, max(len(data) - 1, 0))
    if kind == "flip" and data:
        return data[:i] + bytes([data[i] ^ (1 << rnd.randint(0, 7))]) + data[i + 1:]
    run = bytes(rnd.randint(0, 255) for _ in range(rnd.randint(1, 16)))
    return data[:i] + run + data[i + len(run):]


def run_one(text):
    """The outcome (one of OUTCOME_NAMES) of ``text`` through the library;
    anything but an XlaError propagates (the fuzzer's finding)."""
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


class ToolFinding(Exception):
    """A tool ended otherwise than with a result or a one-line error."""


def snapshot_bytes(text, args_npz):
    """A snapshot (what --xla_dump_hlo_snapshots writes) of module ``text``
    with the arguments of the .npz file ``args_npz`` (bytes)."""
    import io
    import numpy as np
    with np.load(io.BytesIO(args_npz)) as data:
        arrays = {k: data[k] for k in data.files if k.startswith("arg")}
    out = io.BytesIO()
    np.savez(out, hlo_module=np.array(text), **arrays)
    return out.getvalue()


def run_tool(tool, text, args_bytes=None, platform="interpreter", timeout=120, snapshot=None):
    """Runs ``tool`` (replay_computation or hlo_opt) on module ``text`` (and
    ``args_bytes`` as --args), or replay_computation on the snapshot bytes
    ``snapshot``, in a child process; returns 'tool ok' or 'tool error', or
    raises ToolFinding with what happened."""
    with tempfile.TemporaryDirectory() as tmp:
        module = os.path.join(tmp, "m.hlo" if snapshot is None else "m.npz")
        with open(module, "w" if snapshot is None else "wb") as f:
            f.write(text if snapshot is None else snapshot)
        argv = [sys.executable, str(ROOT / "tools" / f"{tool}.py")]
        if tool == "replay_computation":
            argv += [f"--platform={platform}", f"--output={os.path.join(tmp, 'out.npz')}"]
            if args_bytes is not None:
                with open(os.path.join(tmp, "args.npz"), "wb") as f:
                    f.write(args_bytes)
                argv.append(f"--args={os.path.join(tmp, 'args.npz')}")
        else:
            argv += [f"--platform={platform}", f"--output={os.path.join(tmp, 'out.hlo')}"]
        argv.append(module)
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                                  env=dict(os.environ, PYTHONPATH=str(ROOT)))
        except subprocess.TimeoutExpired:
            raise ToolFinding(f"{tool} ran past {timeout} s") from None
    err = proc.stderr.strip()
    if proc.returncode == 0:
        return "tool ok"
    lines = err.splitlines()
    # A parse error shows its line and a caret under it: three lines.
    parse_error = len(lines) == 3 and lines[2].strip() == "^"
    if proc.returncode == 1 and "Traceback" not in err and lines and \
            lines[0].startswith(f"{tool}: error: ") and (len(lines) == 1 or parse_error):
        return "tool error"
    raise ToolFinding(f"{tool} exit status {proc.returncode}: {err[-2000:]}")
