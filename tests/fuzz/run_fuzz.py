"""`make fuzz`: random mutations of the corpus for FUZZ_SECONDS (default 3600)
through the parser, verifier, interpreter and CPU backend
(test_fuzz_corpus.run_one); prints how the inputs ended. An input that
raises anything but an XlaError is saved in tests/fuzz/findings/ and
reported; the input being run is always in findings/current.hlo first, so a
crash of the process leaves its reproducer. Exit status 1 if anything was
found."""
import collections
import os
import pathlib
import random
import sys
import time
import traceback

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from test_fuzz_corpus import TEXTS, mutate, run_one  # noqa: E402


def main():
    seconds = float(os.environ.get("FUZZ_SECONDS", "3600"))
    seed = int(os.environ.get("FUZZ_SEED", str(int(time.time()))))
    rnd = random.Random(seed)
    findings = HERE / "findings"
    findings.mkdir(exist_ok=True)
    current = findings / "current.hlo"
    outcomes = collections.Counter()
    found = 0
    start = time.monotonic()
    while time.monotonic() - start < seconds:
        text = rnd.choice(TEXTS)
        for _ in range(rnd.randint(1, 3)):
            text = mutate(text, rnd)
        current.write_text(text)
        try:
            outcomes[run_one(text)] += 1
        except Exception as e:   # noqa: BLE001 - what the fuzzer looks for
            found += 1
            outcomes[f"FOUND {type(e).__name__}"] += 1
            path = findings / f"finding-{seed}-{found}.hlo"
            path.write_text(text + "\n// " + "\n// ".join(traceback.format_exc().splitlines()))
            print(f"found {type(e).__name__}: {e} -> {path}", flush=True)
    current.unlink()
    total = sum(outcomes.values())
    print(f"fuzz: {total} inputs in {seconds:g} s (seed {seed}):")
    for name, n in outcomes.most_common():
        print(f"  {name:<24} {n:>8} ({100 * n / max(total, 1):.1f}%)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
