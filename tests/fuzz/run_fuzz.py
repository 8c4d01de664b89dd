"""`make fuzz`: random mutations of the corpus for FUZZ_SECONDS (default
3600), through the library (fuzz_targets.run_one: parser, verifier,
interpreter, CPU) in a worker process and, one input in FUZZ_TOOL_EVERY
(default 25), through a tool in a child process (replay_computation on
either platform with a mutated module, mutated --args or a mutated
snapshot, hlo_opt).

An input that raises anything but an XlaError, kills the worker (a crash),
runs past FUZZ_INPUT_SECONDS (default 120; a hang), or makes a tool end
otherwise than in a result or a one-line error is saved in
tests/fuzz/findings/ and reported; the worker is restarted. At the end it
prints how the inputs ended and exits 1 if anything was found.

FUZZ_SEED fixes the mutations (default: the time).
"""
import collections
import json
import os
import pathlib
import random
import select
import subprocess
import sys
import time
import traceback

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


class Worker:
    """``run_one`` in a child process, one JSON line per input and answer."""

    def __init__(self):
        self.proc = subprocess.Popen([sys.executable, str(HERE / "run_fuzz.py"), "--worker"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     env=dict(os.environ, PYTHONPATH=str(HERE.parents[1])))

    def run(self, text, timeout):
        """('outcome', name) | ('exception', traceback) | ('crash', status) | ('hang', None)."""
        self.proc.stdin.write(json.dumps(text) + "\n")
        self.proc.stdin.flush()
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not ready:
            self.close()
            return "hang", None
        line = self.proc.stdout.readline()
        if not line:
            status = self.proc.wait()
            return "crash", status
        kind, value = json.loads(line)
        return kind, value

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


def worker_main():
    from fuzz_targets import run_one
    crash_marker = os.environ.get("FUZZ_SELFTEST_CRASH")   # tests the driver itself
    for line in sys.stdin:
        text = json.loads(line)
        if crash_marker and crash_marker in text:
            os.abort()
        try:
            answer = ["outcome", run_one(text)]
        except Exception:   # noqa: BLE001 - what the fuzzer looks for
            answer = ["exception", traceback.format_exc()]
        print(json.dumps(answer), flush=True)


def main():
    from fuzz_targets import (TEXTS, WITH_ARGS, ToolFinding, mutate, mutate_bytes, run_tool,
                              snapshot_bytes)
    seconds = float(os.environ.get("FUZZ_SECONDS", "3600"))
    per_input = float(os.environ.get("FUZZ_INPUT_SECONDS", "120"))
    tool_every = int(os.environ.get("FUZZ_TOOL_EVERY", "25"))
    seed = int(os.environ.get("FUZZ_SEED", str(int(time.time()))))
    rnd = random.Random(seed)
    findings = pathlib.Path(os.environ.get("FUZZ_FINDINGS", HERE / "findings"))
    findings.mkdir(exist_ok=True)
    outcomes = collections.Counter()
    found = 0
    worker = Worker()
    start = time.monotonic()
    n = 0

    def report(kind, text, detail, suffix=".hlo"):
        nonlocal found
        found += 1
        outcomes[f"FOUND {kind}"] += 1
        path = findings / f"finding-{seed}-{found}{suffix}"
        if isinstance(text, bytes):
            path.write_bytes(text)
            (findings / f"finding-{seed}-{found}.txt").write_text(str(detail))
        else:
            path.write_text(text + "\n// " + "\n// ".join(str(detail).splitlines()))
        print(f"found ({kind}) -> {path}", flush=True)

    while time.monotonic() - start < seconds:
        n += 1
        if tool_every and n % tool_every == 0:
            choice = rnd.choice(["replay", "replay_args", "replay_snapshot", "hlo_opt"])
            platform = rnd.choice(["interpreter", "cpu"])
            args_bytes = snapshot = None
            if choice == "replay_snapshot":
                text, args_bytes = rnd.choice(WITH_ARGS)
                snapshot = mutate_bytes(snapshot_bytes(text, args_bytes), rnd)
                try:
                    outcomes[run_tool("replay_computation", text, None, platform, per_input,
                                      snapshot=snapshot)] += 1
                except ToolFinding as e:
                    report("tool", snapshot, e, ".npz")
                continue
            if choice == "replay_args":
                text, args_bytes = rnd.choice(WITH_ARGS)
                args_bytes = mutate_bytes(args_bytes, rnd)
            else:
                text = rnd.choice(TEXTS)
                for _ in range(rnd.randint(1, 3)):
                    text = mutate(text, rnd)
            tool = "hlo_opt" if choice == "hlo_opt" else "replay_computation"
            try:
                outcomes[run_tool(tool, text, args_bytes, platform, timeout=per_input)] += 1
            except ToolFinding as e:
                if args_bytes is not None:
                    report("tool", args_bytes, f"{e}\n--- module:\n{text}", ".npz")
                else:
                    report("tool", text, e)
            continue
        text = rnd.choice(TEXTS)
        for _ in range(rnd.randint(1, 3)):
            text = mutate(text, rnd)
        kind, value = worker.run(text, per_input)
        if kind == "outcome":
            outcomes[value] += 1
            continue
        if kind == "exception":
            report(value.strip().splitlines()[-1].split(":")[0], text, value)
        elif kind == "crash":
            report("crash", text, f"the worker died (status {value})")
        else:
            report("hang", text, f"no answer in {per_input:g} s")
        worker.close()
        worker = Worker()
    worker.close()
    total = sum(outcomes.values())
    print(f"fuzz: {total} inputs in {seconds:g} s (seed {seed}):")
    for name, count in outcomes.most_common():
        print(f"  {name:<24} {count:>8} ({100 * count / max(total, 1):.1f}%)")
    return 1 if found else 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--worker"]:
        worker_main()
    else:
        sys.exit(main())
