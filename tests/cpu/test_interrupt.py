"""Long executions can be stopped (issue 13): a CPU execution of a module
whose while loop never ends stops at a timeout with DeadlineExceededError,
and at Ctrl-C with KeyboardInterrupt, within a second; the executable is
usable afterwards."""
import os
import pathlib
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import xla
from xla.errors import DeadlineExceededError

ROOT = pathlib.Path(__file__).resolve().parents[2]

FOREVER = """HloModule forever
cond {
  s = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  limit = s32[] constant(-1)
  ROOT keep_going = pred[] compare(i, limit), direction=NE
}
body {
  st = (s32[], f32[4]) parameter(0)
  k = s32[] get-tuple-element(st), index=0
  v = f32[4] get-tuple-element(st), index=1
  one = s32[] constant(1)
  next = s32[] add(k, one)
  million = s32[] constant(1000000)
  wrapped = s32[] remainder(next, million)
  w = f32[4] add(v, v)
  ROOT t = (s32[], f32[4]) tuple(wrapped, w)
}
ENTRY e {
  x = f32[4] parameter(0)
  zero = s32[] constant(0)
  init = (s32[], f32[4]) tuple(zero, x)
  loop = (s32[], f32[4]) while(init), condition=cond, body=body
  ROOT r = f32[4] get-tuple-element(loop), index=1
}"""


def test_a_timeout_stops_a_loop_that_never_ends():
    exe = xla.compile(FOREVER, "cpu")
    start = time.monotonic()
    with pytest.raises(DeadlineExceededError, match="exceeded its timeout of 0.3 s"):
        exe.execute(np.ones(4, np.float32), timeout=0.3)
    assert time.monotonic() - start < 1.5
    # The same executable runs again (the flag was reset) and a finite loop finishes.
    with pytest.raises(DeadlineExceededError):
        exe.execute(np.ones(4, np.float32), timeout=0.1)
    finite = xla.compile(FOREVER.replace("constant(-1)", "constant(5)"), "cpu")
    np.testing.assert_array_equal(finite.execute(np.ones(4, np.float32), timeout=10), [32] * 4)


def test_ctrl_c_stops_a_loop_that_never_ends():
    code = ("import numpy as np, sys, xla\n"
            f"exe = xla.compile({FOREVER!r}, 'cpu')\n"
            "print('running', flush=True)\n"
            "try:\n"
            "    exe.execute(np.ones(4, np.float32))\n"
            "except KeyboardInterrupt:\n"
            "    print('interrupted', flush=True)\n"
            "    sys.exit(3)\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                            env=dict(os.environ, PYTHONPATH=str(ROOT)))
    try:
        assert proc.stdout.readline().strip() == "running"
        time.sleep(0.5)
        start = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=30)
        assert proc.returncode == 3 and "interrupted" in out
        assert time.monotonic() - start < 2.0
    finally:  # a child that ignored the signal would spin on after the test
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_loop_on_the_main_thread_leaves_the_wakeup_fd_as_it_was():
    """Ctrl-C is watched through signal.set_wakeup_fd while a loop runs on the
    calling thread (no hand-off to a worker); whatever was set before (asyncio
    sets one) is back afterwards."""
    finite = xla.compile(FOREVER.replace("constant(-1)", "constant(5)"), "cpu")
    r, w = os.pipe()
    os.set_blocking(w, False)
    previous = signal.set_wakeup_fd(w)
    try:
        np.testing.assert_array_equal(finite.execute(np.ones(4, np.float32)), [32] * 4)
        assert signal.set_wakeup_fd(w) == w
    finally:
        signal.set_wakeup_fd(previous)
        os.close(r)
        os.close(w)
