"""Runs pytest files as one Bazel test: `pytest_runner.py FILE... [PYTEST ARGS]`.

Used by the pytest_test macro in tools/build_defs.bzl. It keeps pytest from
writing into the source tree, writes JUnit XML where Bazel asks for it (so
Bazel's test.xml counts individual test cases), and treats a file that
collects no tests as a failure.
"""
import os
import sys

sys.dont_write_bytecode = True

import pytest  # noqa: E402  (after disabling bytecode writes)

_NO_TESTS_COLLECTED = 5


def main():
    args = ["-q", "-p", "no:cacheprovider", *sys.argv[1:]]
    xml = os.environ.get("XML_OUTPUT_FILE")
    if xml:
        args.append("--junitxml=" + xml)
    code = pytest.main(args)
    if code == _NO_TESTS_COLLECTED:
        print("pytest_runner: no tests collected from " + " ".join(sys.argv[1:]), file=sys.stderr)
        return 1
    return int(code)


if __name__ == "__main__":
    sys.exit(main())
