"""OneDeviceCollectives: on one device each collective has one participant
and becomes its operand (zeros for a collective-permute nothing sends to
device 0; 0 for replica-id and partition-id), as the interpreter computes
them; modules of several devices are left alone. The GPU backend (one
device here) runs them so, and refuses a module of several devices."""
import numpy as np
import pytest

import xla
from pass_test_util import assert_same_results, opcodes, run_pass
from xla.errors import InvalidArgumentError, UnimplementedError
from xla.service.one_device_collectives import OneDeviceCollectives

ALL_REDUCE = """HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  x = f32[8] parameter(0)
  r = f32[8] all-reduce(x), replica_groups={}, to_apply=add
  ROOT n = f32[8] negate(r)
}"""


def test_an_all_reduce_of_one_device_is_its_operand():
    module, changed = run_pass(OneDeviceCollectives(), ALL_REDUCE)
    assert changed
    assert opcodes(module) == ["parameter", "negate"]
    assert_same_results(ALL_REDUCE, module)
    assert not OneDeviceCollectives().run(module)


BODIES = {
    "all-reduce of two": "ROOT r = (f32[8], f32[2,3]) all-reduce(x, y), replica_groups={{0}}, "
                         "to_apply=add",
    "all-gather": "ROOT r = f32[8] all-gather(x), replica_groups={{0}}, dimensions={0}",
    "reduce-scatter": "ROOT r = f32[8] reduce-scatter(x), replica_groups={{0}}, dimensions={0}, "
                      "to_apply=add",
    "all-to-all": "ROOT r = f32[8] all-to-all(x), replica_groups={{0}}, dimensions={0}",
    "collective-broadcast": "ROOT r = f32[8] collective-broadcast(x), replica_groups={{0}}",
    "permute to itself": "ROOT r = f32[8] collective-permute(x), source_target_pairs={{0,0}}",
    "permute to another": "ROOT r = f32[8] collective-permute(x), source_target_pairs={{0,1}}",
    "replica-id": "i = u32[] replica-id()\n  f = f32[] convert(i)\n"
                  "  ROOT r = f32[8] broadcast(f), dimensions={}",
    "partition-id": "i = u32[] partition-id()\n  f = f32[] convert(i)\n"
                    "  ROOT r = f32[8] broadcast(f), dimensions={}",
}


def _module(body, header=""):
    return f"""HloModule m{header}
add {{
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}}
ENTRY e {{
  x = f32[8] parameter(0)
  y = f32[2,3] parameter(1)
  {body}
}}"""


@pytest.mark.parametrize("name", list(BODIES))
def test_the_interpreter_gives_the_same_numbers(name):
    text = _module(BODIES[name])
    module, changed = run_pass(OneDeviceCollectives(), text)
    assert changed
    ops = set(opcodes(module))
    assert not ops & {"all-reduce", "all-gather", "reduce-scatter", "all-to-all",
                      "collective-broadcast", "collective-permute", "replica-id", "partition-id"}
    assert_same_results(text, module)


@pytest.mark.parametrize("name", list(BODIES))
def test_the_gpu_runs_them(name):
    text = _module(BODIES[name])
    x = np.arange(8, dtype=np.float32)
    y = np.arange(6, dtype=np.float32).reshape(2, 3)
    want = xla.compile(text, "interpreter").execute(x, y)
    got = xla.compile(text, "gpu_emulator").execute(x, y)
    for w, g in zip(want if isinstance(want, tuple) else (want,),
                    got if isinstance(got, tuple) else (got,)):
        np.testing.assert_array_equal(g, w)


def test_modules_of_several_devices_are_left_alone():
    text = _module(BODIES["all-gather"].replace("f32[8] all-gather", "f32[16] all-gather")
                   .replace("{{0}}", "{{0,1}}"), header=", replica_count=2")
    module, changed = run_pass(OneDeviceCollectives(), text)
    assert not changed and "all-gather" in opcodes(module)
    # The GPU runs the collective (tests/gpu/test_gpu_collectives.py); on
    # one device, outside a replicated execution, it has no second participant.
    exe = xla.compile(text, "gpu_emulator")
    assert any(type(t).__name__ == "CollectiveThunk" for t in exe.thunks)
    with pytest.raises(UnimplementedError, match="needs more than one participant"):
        exe.execute(np.zeros(8, np.float32), np.zeros((2, 3), np.float32))
    x = [np.arange(8, dtype=np.float32) + 10 * d for d in range(2)]
    y = np.zeros((2, 3), np.float32)
    out = xla.compile(text, "gpu_emulator", num_replicas=2).execute([[x[0], y], [x[1], y]])
    for d in range(2):
        np.testing.assert_array_equal(out[d], np.concatenate(x))


def test_a_permute_from_another_device_is_an_error():
    text = _module("ROOT r = f32[8] collective-permute(x), source_target_pairs={{1,0}}")
    with pytest.raises(InvalidArgumentError, match="receives from another device"):
        run_pass(OneDeviceCollectives(), text)
