"""The example backend `vault` (README.md), found through its entry point,
against the shared suites, plus what only a device with its own memory
shows: arguments already there are not copied, results stay there until
read, donation reuses the donated block."""
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import xla
from xla import runtime
from xla.errors import InvalidArgumentError

from conformance import CorpusConformance, DonationConformance, JitConformance

HERE = pathlib.Path(__file__).resolve().parent


class TestVaultJit(JitConformance):
    platform = "vault"


class TestVaultDonation(DonationConformance):
    platform = "vault"


class TestVaultCorpus(CorpusConformance):
    platform = "vault"


def memory():
    return runtime.get_platform("vault").default_device().memory


def test_found_through_the_entry_point_in_a_fresh_process():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HERE)] + sys.path))
    code = ("import xla, numpy as np; print(xla.available_platforms()); "
            "f = xla.jit(lambda x: x + 1, backend='vault'); "
            "print(type(f(np.ones(2))).__name__, xla.devices('vault'))")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert "'vault'" in out.stdout and "VaultBuffer" in out.stdout, out.stdout


def test_arguments_on_the_device_are_not_copied_and_results_stay_there():
    f = xla.jit(lambda x, y: (x * y, x + y), backend="vault")
    x, y = np.arange(1000, dtype=np.float32), np.full(1000, 2, np.float32)
    bx, by = xla.device_put(x, "vault"), xla.device_put(y, "vault")
    mem = memory()
    before = (mem.host_to_device, mem.device_to_host)
    prod, total = f(bx, by)
    prod2, _ = f(prod, total)   # chained: never leaves the device
    assert (mem.host_to_device, mem.device_to_host) == before
    np.testing.assert_array_equal(np.asarray(prod2), (x * y) * (x + y))
    assert mem.device_to_host == before[1] + x.nbytes   # read once, when asked


def test_numpy_arguments_are_transferred_once_each():
    f = xla.jit(lambda x: x + 1, backend="vault")
    x = np.zeros(256, np.float64)
    mem = memory()
    before = mem.host_to_device
    f(x)
    assert mem.host_to_device == before + x.nbytes


def test_donation_reuses_the_donated_block():
    f = xla.jit(lambda x: x * 3, backend="vault", donate_argnums=0)
    b = xla.device_put(np.float32([1, 2, 3]), "vault")
    handle, blocks = b.handle, memory().live_blocks()
    out = f(b)
    assert b.is_deleted() and out.handle == handle and memory().live_blocks() == blocks
    np.testing.assert_array_equal(np.asarray(out), [3, 6, 9])


def test_buffers_of_another_device_are_moved_explicitly():
    d0, d1 = xla.devices("vault")
    b1 = xla.device_put(np.int32([5]), d1)
    exe = xla.compile("HloModule m\nENTRY e {\n  ROOT p = s32[1] parameter(0)\n}", "vault")
    assert exe.device is d0
    with pytest.raises(InvalidArgumentError, match="not a buffer on"):
        exe.execute_buffers([b1])
    moved = xla.device_put(b1, d0)
    assert moved.device is d0
    np.testing.assert_array_equal(np.asarray(exe.execute_buffers([moved])[0]), [5])


def test_buffers_read_back_in_numpy_expressions():
    b = xla.device_put(np.float32([1, 2]), "vault")
    np.testing.assert_array_equal(b + 1, [2, 3])
    np.testing.assert_array_equal(np.sqrt(b), np.sqrt([1, 2]).astype(np.float32))
    assert float(xla.device_put(np.float32(4), "vault")) == 4.0
