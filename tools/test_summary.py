"""Summarizes a `bazel test` run from its build event file, in test cases.

  python tools/test_summary.py EVENTS.json

EVENTS.json is what `bazel test --build_event_json_file=EVENTS.json` wrote.
Each test target's JUnit XML (pytest's, GoogleTest's, or the one Bazel writes
for a test that writes none) gives its test cases; a target that did not pass
counts at least one failure, and one that did not run at all (it failed to
build, say) counts as one failed case. Prints the failing targets, then a
closing line `N passed, N failed, N skipped`. Exits 1 if anything failed or
no test ran.
"""
import json
import os
import sys
import xml.etree.ElementTree as ET
from urllib.parse import unquote, urlparse

_PASSING = ("PASSED", "FLAKY")


def read_events(path):
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line:
                yield json.loads(line)


def count_cases(xml_path):
    """(passed, failed, skipped) from a JUnit XML file, or None if unreadable."""
    try:
        root = ET.parse(xml_path).getroot()
    except (OSError, ET.ParseError):
        return None
    passed = failed = skipped = 0
    for case in root.iter("testcase"):
        tags = {child.tag for child in case}
        if tags & {"failure", "error"}:
            failed += 1
        elif "skipped" in tags or case.get("status") == "notrun" or case.get("result") in ("skipped", "suppressed"):
            skipped += 1
        else:
            passed += 1
    return passed, failed, skipped


def _file_path(uri):
    parsed = urlparse(uri)
    return unquote(parsed.path) if parsed.scheme == "file" else None


def summarize(events):
    test_targets = []  # labels of configured test targets, in event order
    status = {}  # label -> overall status
    xml_files = {}  # label -> {(run, shard): (attempt, path)}
    for event in events:
        ident = event.get("id", {})
        if "targetConfigured" in ident and "testSize" in event.get("configured", {}):
            test_targets.append(ident["targetConfigured"]["label"])
        elif "testSummary" in ident and "testSummary" in event:
            status[ident["testSummary"]["label"]] = event["testSummary"].get("overallStatus", "NO_STATUS")
        elif "testResult" in ident and "testResult" in event:
            result = ident["testResult"]
            key = (result.get("run", 1), result.get("shard", 1))
            attempt = result.get("attempt", 1)
            for output in event["testResult"].get("testActionOutput", []):
                if output.get("name") == "test.xml":
                    runs = xml_files.setdefault(result["label"], {})
                    if key not in runs or runs[key][0] < attempt:
                        runs[key] = (attempt, _file_path(output.get("uri", "")))
    totals = [0, 0, 0]
    failing = []
    for label in dict.fromkeys(test_targets):
        target_status = status.get(label, "NO_STATUS")
        counts = [0, 0, 0]
        for _, path in xml_files.get(label, {}).values():
            found = count_cases(path) if path and os.path.exists(path) else None
            if found:
                counts = [a + b for a, b in zip(counts, found)]
        if target_status in _PASSING:
            if counts == [0, 0, 0]:
                counts = [1, 0, 0]
        else:
            failing.append((label, target_status))
            if target_status in ("NO_STATUS", "FAILED_TO_BUILD", "INCOMPLETE"):
                counts = [0, 1, 0]  # any XML there is from an earlier run
            else:
                counts[1] = max(counts[1], 1)
        totals = [a + b for a, b in zip(totals, counts)]
    return len(dict.fromkeys(test_targets)), failing, totals


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    try:
        num_targets, failing, (passed, failed, skipped) = summarize(read_events(argv[1]))
    except (OSError, ValueError) as e:
        print(f"test_summary: cannot read build events from {argv[1]}: {e}", file=sys.stderr)
        num_targets, failing, (passed, failed, skipped) = 0, [], (0, 1, 0)
    for label, target_status in failing:
        print(f"{target_status.replace('_', ' ')}: {label}")
    print(f"Bazel ran {num_targets} test targets ({num_targets - len(failing)} passing, "
          f"{len(failing)} not) with these test cases:")
    print(f"{passed} passed, {failed} failed, {skipped} skipped")
    return 1 if failed or passed + skipped == 0 else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
