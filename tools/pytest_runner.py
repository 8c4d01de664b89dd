"""Runs pytest files as one Bazel test: `pytest_runner.py FILE... [PYTEST ARGS]`.

Used by the pytest_test macro in tools/build_defs.bzl. It keeps pytest from
writing into the source tree, writes JUnit XML where Bazel asks for it (so
Bazel's test.xml counts individual test cases), and treats a file that
collects no tests as a failure. ``xla.jit``'s persistent cache is pointed at
the test's TEST_TMPDIR.
"""
import os
import sys

sys.dont_write_bytecode = True

import pytest  # noqa: E402  (after disabling bytecode writes)

_NO_TESTS_COLLECTED = 5


def main():
    args = ["-q", "-p", "no:cacheprovider", *sys.argv[1:]]
    # xla.jit's persistent cache goes to the test's scratch directory, not
    # the user's cache: tests never see entries from earlier runs.
    tmp = os.environ.get("TEST_TMPDIR")
    if tmp:
        os.environ.setdefault("XLA_PY_CACHE_DIR", os.path.join(tmp, "xla-py-cache"))
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
