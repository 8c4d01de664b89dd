"""The persistent compilation cache across processes: hits skip LLVM,
corrupt entries are reported once and rebuilt, writes are atomic."""
import glob
import json
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import xla
from xla.frontend import disk_cache

# A child process: jit a function, run it, print the result and cache info.
CHILD = r"""
import json, sys
import numpy as np
import xla

@xla.jit
def f(x, w):
    return np.tanh(x @ w).sum(axis=0) + np.float32(OFFSET)

x = np.arange(32, dtype=np.float32).reshape(8, 4) / 10
w = np.ones((4, 3), np.float32)
out = f(x, w)
info = f.cache_info()
print(json.dumps({"out": out.tolist(), "compilations": info.compilations, "disk_hits": info.disk_hits}))
"""


def _run_child(cache_dir, offset=0.0, env_extra=None):
    env = dict(os.environ)
    env["XLA_PY_CACHE_DIR"] = str(cache_dir)
    env.pop("XLA_PY_DISK_CACHE", None)
    env.update(env_extra or {})
    code = CHILD.replace("OFFSET", repr(offset))
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1]), proc.stderr


def _expected(offset=0.0):
    x = np.arange(32, dtype=np.float32).reshape(8, 4) / 10
    return np.tanh(x @ np.ones((4, 3), np.float32)).sum(axis=0) + np.float32(offset)


def test_second_process_loads_native_code_from_disk(tmp_path):
    first, _ = _run_child(tmp_path)
    assert first["disk_hits"] == 0 and first["compilations"] == 1
    entries = glob.glob(str(tmp_path / "*.xlaobj"))
    assert len(entries) == 1
    second, _ = _run_child(tmp_path)
    assert second["disk_hits"] == 1
    np.testing.assert_allclose(second["out"], _expected(), rtol=1e-6)
    np.testing.assert_allclose(first["out"], second["out"], rtol=0)
    # A different program is a different entry.
    third, _ = _run_child(tmp_path, offset=1.0)
    assert third["disk_hits"] == 0
    np.testing.assert_allclose(third["out"], _expected(1.0), rtol=1e-6)
    assert len(glob.glob(str(tmp_path / "*.xlaobj"))) == 2


@pytest.mark.parametrize("damage", ["truncate", "flip_payload_byte", "garbage"])
def test_corrupt_entry_is_reported_once_and_rebuilt(tmp_path, damage):
    _run_child(tmp_path)
    (entry,) = glob.glob(str(tmp_path / "*.xlaobj"))
    data = open(entry, "rb").read()
    if damage == "truncate":
        data = data[:len(data) // 2]
    elif damage == "flip_payload_byte":
        data = bytearray(data)
        data[-100] ^= 0xFF
        data = bytes(data)
    else:
        data = b"not an entry at all"
    open(entry, "wb").write(data)
    result, stderr = _run_child(tmp_path)
    assert result["disk_hits"] == 0
    np.testing.assert_allclose(result["out"], _expected(), rtol=1e-6)
    assert stderr.count("xla persistent cache: ignoring") == 1
    assert os.path.basename(entry) in stderr
    # Rebuilt and rewritten: the next process hits again.
    again, stderr = _run_child(tmp_path)
    assert again["disk_hits"] == 1 and "ignoring" not in stderr


def test_disabled_cache_writes_nothing(tmp_path):
    result, _ = _run_child(tmp_path, env_extra={"XLA_PY_DISK_CACHE": "0"})
    assert result["disk_hits"] == 0
    assert not os.path.exists(tmp_path) or not os.listdir(tmp_path)


def test_concurrent_writers_leave_a_valid_entry(tmp_path):
    env = dict(os.environ, XLA_PY_CACHE_DIR=str(tmp_path))
    code = CHILD.replace("OFFSET", "2.0")
    procs = [subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(3)]
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        np.testing.assert_allclose(json.loads(out.strip().splitlines()[-1])["out"], _expected(2.0), rtol=1e-6)
    files = os.listdir(tmp_path)
    assert [f for f in files if f.endswith(".xlaobj")] and not [f for f in files if f.startswith(".tmp-")]
    (entry,) = glob.glob(str(tmp_path / "*.xlaobj"))
    key = os.path.basename(entry)[:-len(".xlaobj")]
    assert disk_cache.PersistentCache._check(open(entry, "rb").read(), key) is not None
    result, _ = _run_child(tmp_path, offset=2.0)
    assert result["disk_hits"] == 1


def test_in_process_option_and_unwritable_directory(tmp_path):
    target = tmp_path / "mine"
    f = xla.jit(lambda x: x * 3, disk_cache=str(target))
    np.testing.assert_array_equal(f(np.ones(3)), np.full(3, 3.0))
    assert len(list(target.glob("*.xlaobj"))) == 1
    blocked = tmp_path / "file"
    blocked.write_text("a file where the directory should be")
    g = xla.jit(lambda x: x * 4, disk_cache=str(blocked / "sub"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        np.testing.assert_array_equal(g(np.ones(3)), np.full(3, 4.0))
    assert sum("cannot write" in str(w.message) for w in caught) == 1
    assert blocked.read_text() == "a file where the directory should be"
    off = xla.jit(lambda x: x * 5, disk_cache=False)
    off(np.ones(2))
    assert off.cache_info().disk_hits == 0


def test_xla_flags_turn_the_cache_off_and_choose_its_directory(tmp_path):
    off, _ = _run_child(tmp_path / "env", env_extra={"XLA_FLAGS": "--noxla_enable_persistent_cache"})
    assert off["disk_hits"] == 0 and not (tmp_path / "env").exists()
    flagged = tmp_path / "flagged"
    flags = {"XLA_FLAGS": f"--xla_persistent_cache_dir={flagged}"}
    first, _ = _run_child(tmp_path / "env", env_extra=flags)
    # The flag wins over XLA_PY_CACHE_DIR.
    assert len(list(flagged.glob("*.xlaobj"))) == 1 and not (tmp_path / "env").exists()
    second, _ = _run_child(tmp_path / "env", env_extra=flags)
    assert (first["disk_hits"], second["disk_hits"]) == (0, 1)
    np.testing.assert_allclose(second["out"], _expected(), rtol=1e-6)


def test_a_dump_is_complete_whatever_the_cache_holds(tmp_path):
    cache = tmp_path / "cache"
    _run_child(cache)                     # fills the cache
    dumps = []
    for run in range(2):
        dump = tmp_path / f"dump{run}"
        result, _ = _run_child(cache, env_extra={"XLA_FLAGS": f"--xla_dump_to={dump}"})
        assert result["disk_hits"] == 0   # dumping compiles everything
        dumps.append(sorted(p.name.split(".", 2)[-1] for p in dump.iterdir()))
    assert dumps[0] == dumps[1]
    assert any(name.endswith("ir-no-opt.ll") for name in dumps[0])
    assert any(name.endswith("ir-with-opt.ll") for name in dumps[0])
