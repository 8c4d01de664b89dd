"""The xla.jit examples run as scripts, match NumPy and report a speedup."""
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = os.path.join(ROOT, "examples", "jit")
# Small sizes keep the test quick; the scripts' defaults are the benchmark sizes.
SIZES = {"model_fn": 100000, "softmax": 64, "layernorm": 64, "mlp": 8, "heat": 32}


def test_every_example_is_run():
    names = sorted(f[:-3] for f in os.listdir(EXAMPLES) if f.endswith(".py") and not f.startswith("_"))
    assert names == sorted(SIZES)


@pytest.mark.parametrize("name", sorted(SIZES))
def test_example(name):
    env = dict(os.environ, EXAMPLE_SIZE=str(SIZES[name]),
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, os.path.join(EXAMPLES, name + ".py")], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"matches NumPy .* speedup \d+\.\d+x; compilations 1", proc.stdout), proc.stdout
    if name == "model_fn":
        assert "a new shape recompiled: compilations 2" in proc.stdout
    if name == "heat":
        assert "HLO while loops: 1" in proc.stdout
