"""The direct convolution tiles of every runtime ISA variant this CPU runs
(convolution.cc: f32 tiles of 16-lane vectors on AVX-512, 8-lane ones with
fewer pixels per tile on AVX2, none on baseline): the cases of
test_conv_direct.py, test_conv_phased_direct.py,
test_conv_filter_direct.py and test_conv_depthwise.py (whose vectors are
the variant's widest), each variant in a process of its own
(XLA_CPU_RUNTIME_ISA), against NumPy."""
import os
import pathlib
import subprocess
import sys

import pytest

from xla import _core

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent


@pytest.mark.parametrize("isa", ["baseline", "avx2", "avx512"])
def test_direct_convolutions_of_the_variant_match_numpy(isa):
    if isa not in _core.cpu_runtime_isas():
        pytest.skip(f"this CPU or build has no {isa} variant")
    env = dict(os.environ, XLA_CPU_RUNTIME_ISA=isa)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         str(HERE / "test_conv_direct.py"), str(HERE / "test_conv_phased_direct.py"),
         str(HERE / "test_conv_filter_direct.py"), str(HERE / "test_conv_depthwise.py")],
        env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    check = subprocess.run([sys.executable, "-c", "from xla import _core; print(_core.cpu_runtime_isa())"],
                           env=env, capture_output=True, text=True, timeout=120)
    assert check.stdout.strip() == isa, check.stderr
