"""Replicated execution in one process (xla/runtime/collectives.py): the
collectives' semantics on hand-checked values, collectives inside loops,
and failures that must not hang."""
import numpy as np
import pytest

import xla
from xla.errors import InvalidArgumentError

ADD = """add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
"""


def run(body, n, args, platform="interpreter", partitions=1, **kwargs):
    text = "HloModule m\n" + ADD + "ENTRY e {\n" + body + "\n}"
    exe = xla.compile(text, platform, num_replicas=n // partitions, num_partitions=partitions,
                      **kwargs)
    return exe.execute(args)


@pytest.mark.parametrize("platform", ["interpreter", "cpu"])
def test_collectives_on_four_replicas(platform):
    body = """  p = f32[4] parameter(0)
  ar = f32[4] all-reduce(p), replica_groups={{0,1},{2,3}}, to_apply=add
  ag = f32[8] all-gather(p), replica_groups={{0,2},{1,3}}, dimensions={0}
  rs = f32[2] reduce-scatter(p), replica_groups={{0,1},{2,3}}, dimensions={0}, to_apply=add
  cp = f32[4] collective-permute(p), source_target_pairs={{0,1},{1,2},{2,3}}
  a2a = f32[4] all-to-all(p), replica_groups={{0,1,2,3}}, dimensions={0}
  r = u32[] replica-id()
  ROOT t = (f32[4], f32[8], f32[2], f32[4], f32[4], u32[]) tuple(ar, ag, rs, cp, a2a, r)"""
    x = [np.float32([1, 2, 3, 4]) * (10 ** d) for d in range(4)]
    out = run(body, 4, [[v] for v in x], platform)
    np.testing.assert_array_equal(out[0][0], x[0] + x[1])
    np.testing.assert_array_equal(out[3][0], x[2] + x[3])
    np.testing.assert_array_equal(out[1][1], np.concatenate([x[1], x[3]]))
    np.testing.assert_array_equal(out[1][2], (x[0] + x[1])[2:])
    np.testing.assert_array_equal(out[0][3], np.zeros(4, np.float32))   # nobody sends to 0
    np.testing.assert_array_equal(out[2][3], x[1])
    # all-to-all: device d receives element d of every device's operand.
    np.testing.assert_array_equal(out[2][4], [x[j][2] for j in range(4)])
    assert [int(o[5]) for o in out] == [0, 1, 2, 3]


def test_all_reduce_in_a_loop_rendezvous_once_per_iteration():
    body = """  p = f32[2] parameter(0)
  zero = s32[] constant(0)
  init = (s32[], f32[2]) tuple(zero, p)
  ROOT w = (s32[], f32[2]) while(init), condition=cond, body=step"""
    text = ("HloModule m\n" + ADD + """
cond {
  s = (s32[], f32[2]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  three = s32[] constant(3)
  ROOT lt = pred[] compare(i, three), direction=LT
}
step {
  st = (s32[], f32[2]) parameter(0)
  k = s32[] get-tuple-element(st), index=0
  v = f32[2] get-tuple-element(st), index=1
  one = s32[] constant(1)
  j = s32[] add(k, one)
  r = f32[2] all-reduce(v), replica_groups={}, to_apply=add
  ROOT t = (s32[], f32[2]) tuple(j, r)
}
ENTRY e {
""" + body + "\n}")
    for platform in ("interpreter", "cpu"):
        exe = xla.compile(text, platform, num_replicas=2)
        out = exe.execute([[np.float32([1, 2])], [np.float32([3, 4])]])
        # Each iteration sums over 2 replicas: (x0 + x1) * 2 * 2 after 3 steps.
        for count, value in out:
            assert int(count) == 3
            np.testing.assert_array_equal(value, np.float32([4, 6]) * 4)


def test_a_failing_device_does_not_hang_the_others():
    body = """  p = f32[2] parameter(0)
  ROOT ar = f32[2] all-reduce(p), replica_groups={}, to_apply=add"""
    with pytest.raises(InvalidArgumentError, match="argument 0"):
        # device 1's argument has the wrong shape: it fails before the rendezvous
        run(body, 2, [[np.float32([1, 2])], [np.float32([1, 2, 3])]])


def test_devices_that_disagree_time_out_with_a_clear_error():
    text = "HloModule m\n" + ADD + """ENTRY e {
  p = f32[2] parameter(0)
  ROOT ar = f32[2] all-reduce(p), replica_groups={{0,1}}, to_apply=add
}"""
    exe = xla.compile(text, "interpreter", num_replicas=3)
    with pytest.raises(InvalidArgumentError, match="do not place device"):
        exe.execute([[np.float32([1, 2])]] * 3)
    exe = xla.compile(text.replace("{{0,1}}", "{}"), "interpreter", num_replicas=2)
    exe.timeout = 0.5
    import threading
    exe.executables = list(exe.executables)
    never = threading.Event()

    class Stuck:   # a device that never reaches the collective
        module = exe.module

        def execute(self, *args):
            never.wait(2)
            raise InvalidArgumentError("stuck device gave up")
    exe.executables[1] = Stuck()
    with pytest.raises(InvalidArgumentError, match="1 of 2 participants arrived within 0.5 s"):
        exe.execute([[np.float32([1, 2])]] * 2)


def test_wrong_argument_lists_and_counts():
    body = "  ROOT p = f32[2] parameter(0)"
    with pytest.raises(InvalidArgumentError, match="need 2 argument lists, got 1"):
        run(body, 2, [[np.float32([1, 2])]])
    with pytest.raises(InvalidArgumentError, match="num_replicas must be a positive int"):
        xla.compile("HloModule m\nENTRY e {\n" + body + "\n}", "interpreter", num_replicas=0)


def test_replay_computation_runs_a_partitioned_dump():
    import os
    import pathlib
    import subprocess
    import sys
    root = pathlib.Path(__file__).resolve().parents[2]
    fixture = root / "tests" / "distributed" / "fixtures" / "sharded_dot.hlo"
    out = subprocess.run([sys.executable, str(root / "tools" / "replay_computation.py"),
                          "--platform=cpu", "--num_partitions=4", "--compare=interpreter",
                          str(fixture)], capture_output=True, text=True, timeout=300,
                         env=dict(os.environ, PYTHONPATH=str(root)))
    assert out.returncode == 0, out.stderr
    assert "1 result(s) on cpu" in out.stdout and "compare with interpreter: OK" in out.stdout
