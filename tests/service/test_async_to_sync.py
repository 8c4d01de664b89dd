"""AsyncToSync: start/done pairs as their synchronous ops, and the CPU
running modules written with them (as XLA:GPU dumps them) on several
replicas, against the interpreter (which runs the pairs as written)."""
import numpy as np
import pytest

from pass_test_util import opcodes, run_pass

import xla
from xla.errors import UnimplementedError
from xla.service.async_to_sync import AsyncToSync

ADD = """add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
"""

ASYNC = "HloModule m\n" + ADD + """
rs_body {
  x = f32[4] parameter(0)
  ROOT rs = f32[2] reduce-scatter(x), replica_groups={{0,1}}, dimensions={0}, to_apply=add
}

ENTRY e {
  p = f32[4] parameter(0)
  ars = f32[4] all-reduce-start(p), replica_groups={{0,1}}, to_apply=add
  ar = f32[4] all-reduce-done(ars)
  ags = (f32[4], f32[8]) all-gather-start(p), replica_groups={{0,1}}, dimensions={0}
  ag = f32[8] all-gather-done(ags)
  cps = (f32[4], f32[4], u32[], u32[]) collective-permute-start(p), source_target_pairs={{0,1},{1,0}}
  cp = f32[4] collective-permute-done(cps)
  as = ((f32[4]), f32[2], s32[]) async-start(p), calls=rs_body
  au = ((f32[4]), f32[2], s32[]) async-update(as)
  ad = f32[2] async-done(au)
  cs = (f32[4], f32[4], u32[]) copy-start(ar)
  c = f32[4] copy-done(cs)
  ROOT t = (f32[4], f32[8], f32[4], f32[2], f32[4]) tuple(ar, ag, cp, ad, c)
}
"""


def test_pairs_become_synchronous_ops():
    module, changed = run_pass(AsyncToSync(), ASYNC)
    assert changed
    ops = opcodes(module)
    for gone in ("all-reduce-start", "all-reduce-done", "all-gather-start", "all-gather-done",
                 "collective-permute-start", "collective-permute-done", "async-start",
                 "async-update", "async-done", "copy-start", "copy-done"):
        assert gone not in ops, gone
    for sync in ("all-reduce", "all-gather", "collective-permute", "call", "copy"):
        assert sync in ops, sync
    (call,) = [i for i in module.entry.instructions if i.opcode == "call"]
    assert call.attr("to_apply").name == "rs_body" and call.shape.to_text() == "f32[2]"


@pytest.mark.parametrize("platform", ["interpreter", "cpu"])
def test_async_pairs_run_on_two_replicas(platform):
    x = [np.float32([1, 2, 3, 4]), np.float32([10, 20, 30, 40])]
    out = xla.compile(ASYNC, platform, num_replicas=2).execute([[v] for v in x])
    for d in range(2):
        ar, ag, cp, rs, c = (np.asarray(v) for v in out[d])
        np.testing.assert_array_equal(ar, x[0] + x[1])
        np.testing.assert_array_equal(ag, np.concatenate(x))
        np.testing.assert_array_equal(cp, x[1 - d])
        np.testing.assert_array_equal(rs, (x[0] + x[1])[2 * d:2 * d + 2])
        np.testing.assert_array_equal(c, x[0] + x[1])


def test_a_start_used_elsewhere_is_left_and_named_by_the_cpu():
    text = "HloModule m\n" + """
ENTRY e {
  p = f32[4] parameter(0)
  ags = (f32[4], f32[8]) all-gather-start(p), replica_groups={{0,1}}, dimensions={0}
  ag = f32[8] all-gather-done(ags)
  alias = f32[4] get-tuple-element(ags), index=0
  ROOT t = (f32[8], f32[4]) tuple(ag, alias)
}
"""
    _, changed = run_pass(AsyncToSync(), text)
    assert changed is False
    with pytest.raises(UnimplementedError, match="all-gather-start"):
        xla.compile(text, "cpu", num_replicas=2)
