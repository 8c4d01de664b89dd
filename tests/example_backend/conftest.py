"""Puts this folder on sys.path as an installed distribution would be, so
that ``importlib.metadata`` finds ``xla_vault``'s entry point, and the
shared suites (tests/conformance.py) importable."""
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
for path in (str(HERE), str(HERE.parent)):
    if path not in sys.path:
        sys.path.insert(0, path)

from xla.runtime import registry  # noqa: E402

registry.rediscover()   # entry points are read once per process; this folder came late
