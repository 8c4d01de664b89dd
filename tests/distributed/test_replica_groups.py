"""Replica groups as XLA reads them (xla/hlo/replica_groups.py): the three
written forms, the group modes, and the participants of each device."""
import pytest

from xla.errors import InvalidArgumentError
from xla.hlo import replica_groups as rg
from xla.hlo.parser import parse_hlo_module


def collective(line, extra=""):
    text = f"""HloModule m
add {{
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}}
ENTRY e {{
  p = f32[4] parameter(0)
  ROOT x = {line}
}}"""
    return parse_hlo_module(text).entry.root_instruction


def test_written_forms():
    assert rg.parse_replica_groups("{{0,1},{2,3}}") == [[0, 1], [2, 3]]
    assert rg.parse_replica_groups("{}") == []
    assert rg.parse_replica_groups("[2,2]<=[4]") == [[0, 1], [2, 3]]
    assert rg.parse_replica_groups("[2,2]<=[2,2]T(1,0)") == [[0, 2], [1, 3]]
    assert rg.parse_replica_groups("[1,8]<=[2,4]T(1,0)") == [[0, 4, 1, 5, 2, 6, 3, 7]]
    assert rg.parse_replica_groups("mesh['x'=2,'y'=2] {'y'}") == [[0, 1], [2, 3]]
    assert rg.parse_replica_groups("mesh['x'=2,'y'=2] {'x'}") == [[0, 2], [1, 3]]
    assert rg.parse_replica_groups("mesh['a'=1,'b'=4] {'b'}") == [[0, 1, 2, 3]]
    with pytest.raises(InvalidArgumentError, match="not axes of the mesh"):
        rg.parse_replica_groups("mesh['x'=2] {'z'}")
    with pytest.raises(InvalidArgumentError, match="must be 2-D and hold"):
        rg.parse_replica_groups("[3,2]<=[4]")
    with pytest.raises(InvalidArgumentError, match="not a permutation"):
        rg.parse_replica_groups("[2,2]<=[2,2]T(0,0)")


def test_group_modes():
    ar = "f32[4] all-reduce(p), replica_groups={}, to_apply=add"
    assert rg.group_mode(collective(ar)) == rg.CROSS_REPLICA
    assert rg.group_mode(collective(ar.replace("to_apply", "channel_id=1, to_apply"))) \
        == rg.CROSS_REPLICA_AND_PARTITION
    assert rg.group_mode(collective(ar.replace(
        "to_apply", "channel_id=1, use_global_device_ids=true, to_apply"))) == rg.FLATTENED_ID
    a2a = "f32[4] all-to-all(p), channel_id=1, replica_groups={}, dimensions={0}"
    assert rg.group_mode(collective(a2a)) == rg.CROSS_PARTITION
    cp = "f32[4] collective-permute(p), source_target_pairs={{0,1},{1,0}}"
    assert rg.group_mode(collective(cp)) == rg.CROSS_REPLICA
    assert rg.group_mode(collective(cp.replace("source", "channel_id=2, source"))) == rg.CROSS_PARTITION


def test_participants_by_mode():
    # 2 replicas x 2 partitions; device (r, p) has flattened id 2r + p.
    ar = collective("f32[4] all-reduce(p), replica_groups={{0,1}}, to_apply=add")
    assert rg.participants(ar, 1, 1, 2, 2) == [(0, 1), (1, 1)]
    arp = collective("f32[4] all-reduce(p), channel_id=1, replica_groups={{0},{1}}, to_apply=add")
    assert rg.participants(arp, 1, 0, 2, 2) == [(1, 0), (1, 1)]
    flat = collective("f32[4] all-reduce(p), channel_id=1, replica_groups={{0,3},{1,2}}, "
                      "use_global_device_ids=true, to_apply=add")
    assert rg.participants(flat, 1, 0, 2, 2) == [(0, 1), (1, 0)]
    assert rg.participants(flat, 1, 1, 2, 2) == [(0, 0), (1, 1)]
    every = collective("f32[8] all-gather(p), replica_groups={}, dimensions={0}")
    assert rg.participants(every, 0, 1, 2, 2) == [(0, 1), (1, 1)]


def test_groups_that_miss_a_device_are_an_error():
    ar = collective("f32[4] all-reduce(p), replica_groups={{0,1}}, to_apply=add")
    with pytest.raises(InvalidArgumentError, match=r"do not place device \(replica 2"):
        rg.participants(ar, 2, 0, 3, 1)
    dup = collective("f32[4] all-reduce(p), replica_groups={{0,1},{1}}, to_apply=add")
    with pytest.raises(InvalidArgumentError, match="exactly one group"):
        rg.participants(dup, 0, 0, 2, 1)
