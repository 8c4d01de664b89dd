"""XLA's whole flag set: a JAX user's XLA_FLAGS work (flags without an effect
here warn once per process, naming themselves), misspellings still fail with
the closest names, --xla_force_host_platform_device_count sets the cpu
device count, and docs/flags.md is the table the code has."""
import os
import pathlib
import subprocess
import sys

import pytest

from xla import debug_options as d
from xla.errors import InvalidArgumentError

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_a_jax_users_flags_work_with_one_warning_each():
    code = """
import warnings, numpy as np
warnings.simplefilter("always")
import xla
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    f = xla.jit(lambda x: x * 2)
    print(f(np.ones(3, np.float32)).tolist(), len(xla.devices("cpu")))
    xla.compile("HloModule m\\nENTRY e {\\n  ROOT p = f32[] parameter(0)\\n}", "cpu")
    xla.debug_options.parse_flags("--xla_gpu_autotune_level=2")
messages = sorted(str(w.message).split(" has")[0] for w in caught)
print(messages)
"""
    env = dict(os.environ, PYTHONPATH=str(ROOT),
               XLA_FLAGS="--xla_force_host_platform_device_count=8 --xla_gpu_autotune_level=0 "
                         "--xla_cpu_use_thunk_runtime=false --xla_dump_to=")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "[2.0, 2.0, 2.0] 8"
    # one warning per flag per process, however often it is parsed
    assert lines[1] == "['XLA flag --xla_cpu_use_thunk_runtime', 'XLA flag --xla_gpu_autotune_level']"


def test_misspelled_flags_still_fail_with_the_closest_names():
    with pytest.raises(InvalidArgumentError, match="unknown XLA flag --xla_gpu_autotune_levle; "
                                                   "did you mean --xla_gpu_autotune_level"):
        d.parse_flags("--xla_gpu_autotune_levle=1")
    with pytest.raises(InvalidArgumentError, match="did you mean --xla_dump_to"):
        d.parse_flags("--xla_dump_too=/tmp")
    with pytest.raises(InvalidArgumentError, match="device_count must be >= 1"):
        d.parse_flags("--xla_force_host_platform_device_count=0")


def test_every_implemented_flag_is_in_the_table_and_the_names_are_xlas():
    names = d.xla_flag_names()
    assert len(names) > 300
    for flag in ("xla_dump_to", "xla_cpu_enable_fast_math", "xla_force_host_platform_device_count",
                 "xla_backend_optimization_level", "xla_disable_hlo_passes"):
        assert flag in names and flag in d.flag_names()
    assert "xla_gpu_autotune_level" in d.inert_flag_names()
    assert not set(d.inert_flag_names()) & set(d.flag_names())


def test_docs_flags_md_is_the_generated_table():
    assert (ROOT / "docs" / "flags.md").read_text() == d.flags_table(), \
        "docs/flags.md is stale: regenerate it with xla.debug_options.flags_table()"
