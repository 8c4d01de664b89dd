"""Collectives on the GPU backend (xla/backends/gpu/collectives.py): a module
compiled for N replicas x M partitions runs N*M logical devices, each with
its own buffers, whose collective thunks meet at the runtime's rendezvous
through the host. JAX's multi-device fixtures (tests/distributed/fixtures)
must match JAX's per-device results; hand-written modules cover every
collective with explicit and iota replica groups, channel_id,
use_global_device_ids, several element types, the async start/done forms
and a collective in a loop, against values computed here with NumPy.

Every test runs on the emulator and, where a GPU and its driver are
present, on platform 'gpu' (all logical devices on one GPU when it has one);
where not, those skip saying why."""
import json
import pathlib

import numpy as np
import pytest

import xla
from xla.backends.gpu.collectives import CollectiveThunk
from xla.backends.gpu.driver import cuda_unavailable_reason
from xla.errors import InvalidArgumentError, UnimplementedError

from test_corpus_interpreter import assert_matches

NO_GPU = cuda_unavailable_reason()
needs_gpu = pytest.mark.skipif(NO_GPU is not None, reason=f"needs an NVIDIA GPU: {NO_GPU}")
PLATFORMS = ["gpu_emulator", pytest.param("gpu", marks=needs_gpu)]
FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "distributed" / "fixtures"
NAMES = sorted(p.name[:-len(".hlo")] for p in FIXTURES.glob("*.hlo")
               if not p.name.endswith(".sdy.hlo"))
SDY = sorted(p.name[:-len(".sdy.hlo")] for p in FIXTURES.glob("*.sdy.hlo"))


def reducer(name, dtype, op="add"):
    return f"""{name} {{
  a = {dtype}[] parameter(0)
  b = {dtype}[] parameter(1)
  ROOT c = {dtype}[] {op}(a, b)
}}
"""


def run(platform, text, replicas, partitions, args):
    """Each device's result; ``args[d]``: device d's argument list."""
    exe = xla.compile(text, platform, num_replicas=replicas, num_partitions=partitions)
    return exe.execute(args)


# ----- JAX's fixtures ---------------------------------------------------------------


def _fixture(name):
    config = json.loads((FIXTURES / f"{name}.json").read_text())
    with np.load(FIXTURES / f"{name}.npz") as z:
        data = {k: z[k] for k in z.files}
    local = xla.parse_hlo_module((FIXTURES / f"{name}.hlo").read_text())
    n = config["num_replicas"] * config["num_partitions"]
    args = [[data[f"dev{d}_arg{i}"].reshape(p.shape.dimensions)
             for i, p in enumerate(local.entry.parameters)] for d in range(n)]
    return config, data, local, args


def _check_fixture(name, platform, local, data, results):
    leaves = [s for _, s in local.entry.root_instruction.shape.leaves()]
    for d, result in enumerate(results):
        got = list(result) if isinstance(result, tuple) else [result]
        assert len(got) == len(leaves)
        for k, (value, shape) in enumerate(zip(got, leaves)):
            assert_matches(value, data[f"dev{d}_out{k}"].reshape(shape.dimensions),
                           f"{name} on {platform}, device {d}, out{k}")


def test_there_are_fixtures():
    assert len(NAMES) >= 4 and len(SDY) >= 3, (NAMES, SDY)


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("name", NAMES)
def test_jax_fixtures_match_on_every_device(name, platform):
    config, data, local, args = _fixture(name)
    exe = xla.compile(local, platform, num_replicas=config["num_replicas"],
                      num_partitions=config["num_partitions"])
    assert any(isinstance(t, CollectiveThunk) for t in exe.executables[0].thunks), name
    _check_fixture(name, platform, local, data, exe.execute(args))


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("name", SDY)
def test_jax_shardy_modules_match_on_every_device(name, platform):
    # JAX's global module, SPMD partitioned by xla.compile: each device gets
    # and returns its tiles.
    config, data, local, args = _fixture(name)
    module = xla.parse_hlo_module((FIXTURES / f"{name}.sdy.hlo").read_text())
    results = xla.compile(module, platform, num_partitions=config["num_partitions"]).execute(args)
    _check_fixture(name, platform, local, data, results)


# ----- hand-written modules, NumPy expectations ---------------------------------------

DTYPES = {"f32": np.float32, "f64": np.float64, "f16": np.float16, "s32": np.int32,
          "u8": np.uint8, "s64": np.int64}


def _values(dtype, shape, d):
    rng = np.random.default_rng(100 + d)
    if np.dtype(dtype).kind == "f":
        return rng.uniform(-4, 4, shape).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(max(info.min, -1000), min(info.max, 1000), shape, endpoint=True).astype(dtype)


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("ty", sorted(DTYPES))
def test_all_reduce_with_iota_groups(ty, platform):
    dtype = DTYPES[ty]
    text = f"""HloModule m
{reducer("add", ty)}{reducer("max", ty, "maximum")}
ENTRY e {{
  x = {ty}[2,3] parameter(0)
  y = {ty}[2,3] add(x, x)
  s = {ty}[2,3] all-reduce(y), replica_groups=[2,2]<=[4], to_apply=add
  m = {ty}[2,3] all-reduce(x), replica_groups=[2,2]<=[2,2]T(1,0), to_apply=max
  ROOT t = ({ty}[2,3], {ty}[2,3]) tuple(s, m)
}}"""
    x = [_values(dtype, (2, 3), d) for d in range(4)]
    out = run(platform, text, 4, 1, [[v] for v in x])
    for d in range(4):
        pair = [0, 1] if d < 2 else [2, 3]             # [2,2]<=[4]: {0,1},{2,3}
        expected = (x[pair[0]] + x[pair[0]]) + (x[pair[1]] + x[pair[1]])
        np.testing.assert_array_equal(out[d][0], expected.astype(dtype))
        other = [d % 2, d % 2 + 2]                     # T(1,0): {0,2},{1,3}
        np.testing.assert_array_equal(out[d][1], np.maximum(x[other[0]], x[other[1]]))
        assert out[d][0].dtype == dtype and out[d][1].dtype == dtype


@pytest.mark.parametrize("platform", PLATFORMS)
def test_variadic_all_reduce_over_every_replica(platform):
    text = f"""HloModule m
{reducer("add", "s32")}
ENTRY e {{
  x = s32[5] parameter(0)
  i = s32[2,3] parameter(1)
  ROOT r = (s32[5], s32[2,3]) all-reduce(x, i), replica_groups={{}}, to_apply=add
}}"""
    x = [_values(np.int32, 5, d) for d in range(3)]
    i = [_values(np.int32, (2, 3), 10 + d) for d in range(3)]
    out = run(platform, text, 3, 1, [[x[d], i[d]] for d in range(3)])
    for d in range(3):
        np.testing.assert_array_equal(out[d][0], x[0] + x[1] + x[2])
        np.testing.assert_array_equal(out[d][1], i[0] + i[1] + i[2])


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("ty", ["f32", "s64", "u8"])
def test_all_gather_cross_replica_and_by_global_ids(ty, platform):
    # 2 replicas x 2 partitions; device d = 2 * replica + partition.
    dtype = DTYPES[ty]
    text = f"""HloModule m
ENTRY e {{
  x = {ty}[2,3] parameter(0)
  by_replica = {ty}[4,3] all-gather(x), replica_groups={{{{0,1}}}}, dimensions={{0}}
  by_id = {ty}[2,6] all-gather(x), channel_id=1, replica_groups=[2,2]<=[2,2]T(1,0), use_global_device_ids=true, dimensions={{1}}
  ROOT t = ({ty}[4,3], {ty}[2,6]) tuple(by_replica, by_id)
}}"""
    x = [_values(dtype, (2, 3), d) for d in range(4)]
    out = run(platform, text, 2, 2, [[v] for v in x])
    for d in range(4):
        p = d % 2
        # No channel_id: replicas 0 and 1 of this device's partition.
        np.testing.assert_array_equal(out[d][0], np.concatenate([x[p], x[2 + p]], axis=0))
        # Flattened ids {0,2},{1,3}.
        group = [0, 2] if d in (0, 2) else [1, 3]
        np.testing.assert_array_equal(out[d][1], np.concatenate([x[g] for g in group], axis=1))


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("ty", ["s32", "f64"])
def test_reduce_scatter_across_replicas_and_partitions(ty, platform):
    dtype = DTYPES[ty]
    text = f"""HloModule m
{reducer("add", ty)}
ENTRY e {{
  x = {ty}[8,2] parameter(0)
  within = {ty}[4,2] reduce-scatter(x), channel_id=1, replica_groups={{{{0}},{{1}}}}, dimensions={{0}}, to_apply=add
  across = {ty}[2,2] reduce-scatter(x), channel_id=2, replica_groups={{{{0,1}}}}, dimensions={{0}}, to_apply=add
  ROOT t = ({ty}[4,2], {ty}[2,2]) tuple(within, across)
}}"""
    x = [_values(dtype, (8, 2), d) for d in range(4)]
    out = run(platform, text, 2, 2, [[v] for v in x])
    for d in range(4):
        r, p = divmod(d, 2)
        # channel_id, no use_global_device_ids: replica group {r} with all its
        # partitions, (r,0), (r,1); this device's block is its position, p.
        np.testing.assert_array_equal(out[d][0], (x[2 * r] + x[2 * r + 1])[4 * p:4 * p + 4])
        # Replicas {0,1} with all partitions: every device, ordered by id.
        total = ((x[0] + x[1]) + x[2]) + x[3]
        np.testing.assert_array_equal(out[d][1], total[2 * d:2 * d + 2])


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("ty", ["f32", "s32"])
def test_all_to_all_across_partitions(ty, platform):
    dtype = DTYPES[ty]
    text = f"""HloModule m
ENTRY e {{
  x = {ty}[4,3] parameter(0)
  ROOT a = {ty}[4,3] all-to-all(x), channel_id=1, replica_groups=[1,4]<=[4], dimensions={{0}}
}}"""
    x = [_values(dtype, (4, 3), d) for d in range(4)]
    out = run(platform, text, 1, 4, [[v] for v in x])
    for d in range(4):
        # Row j of device k's operand goes to device j, received in group order.
        np.testing.assert_array_equal(out[d], np.stack([x[k][d] for k in range(4)]))


@pytest.mark.parametrize("platform", PLATFORMS)
def test_all_to_all_in_each_replica_and_tuple_form(platform):
    text = """HloModule m
ENTRY e {
  x = f32[4,2] parameter(0)
  y = s32[3] parameter(1)
  z = s32[3] negate(y)
  split = f32[4,2] all-to-all(x), channel_id=1, replica_groups={{0,1}}, dimensions={0}
  pair = (s32[3], s32[3]) all-to-all(y, z), replica_groups={{0,1}}
  ROOT t = (f32[4,2], (s32[3], s32[3])) tuple(split, pair)
}"""
    x = [_values(np.float32, (4, 2), d) for d in range(4)]
    y = [_values(np.int32, 3, 20 + d) for d in range(4)]
    out = run(platform, text, 2, 2, [[x[d], y[d]] for d in range(4)])
    for d in range(4):
        r, p = divmod(d, 2)
        # channel_id: partitions {0,1} of this replica; block p of each.
        np.testing.assert_array_equal(
            out[d][0], np.concatenate([x[2 * r][2 * p:2 * p + 2], x[2 * r + 1][2 * p:2 * p + 2]]))
        # No channel_id: replicas {0,1} of this partition; operand j goes to
        # participant j (operand 0 is y, operand 1 is -y).
        # Leaf k is participant k's operand r.
        for k, source in enumerate([p, 2 + p]):
            np.testing.assert_array_equal(out[d][1][k], y[source] if r == 0 else -y[source])


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("ty", ["f32", "u8", "f16"])
def test_collective_permute_by_replica_and_by_partition(ty, platform):
    dtype = DTYPES[ty]
    text = f"""HloModule m
ENTRY e {{
  x = {ty}[3] parameter(0)
  shift = {ty}[3] collective-permute(x), source_target_pairs={{{{0,1}},{{1,0}}}}
  swap = {ty}[3] collective-permute(x), channel_id=3, source_target_pairs={{{{1,0}}}}
  ROOT t = ({ty}[3], {ty}[3]) tuple(shift, swap)
}}"""
    x = [_values(dtype, 3, d) for d in range(4)]
    out = run(platform, text, 2, 2, [[v] for v in x])
    for d in range(4):
        r, p = divmod(d, 2)
        # No channel_id: replica ids, within the partition: (1-r, p) sends here.
        np.testing.assert_array_equal(out[d][0], x[2 * (1 - r) + p])
        # channel_id: partition ids within the replica: only partition 0
        # receives (from partition 1); partition 1 gets zeros.
        expected = x[2 * r + 1] if p == 0 else np.zeros(3, dtype)
        np.testing.assert_array_equal(out[d][1], expected)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_replica_and_partition_ids(platform):
    text = """HloModule m
ENTRY e {
  r = u32[] replica-id()
  p = u32[] partition-id()
  ROOT t = (u32[], u32[]) tuple(r, p)
}"""
    out = run(platform, text, 3, 2, [[] for _ in range(6)])
    assert [(int(a), int(b)) for a, b in out] == [divmod(d, 2) for d in range(6)]


@pytest.mark.parametrize("platform", PLATFORMS)
def test_async_start_done_pairs(platform):
    text = f"""HloModule m
{reducer("add", "f32")}
ENTRY e {{
  x = f32[4] parameter(0)
  ars = f32[4] all-reduce-start(x), replica_groups={{{{0,1,2,3}}}}, to_apply=add
  ar = f32[4] all-reduce-done(ars)
  ags = (f32[4], f32[8]) all-gather-start(x), replica_groups=[2,2]<=[4], dimensions={{0}}
  ag = f32[8] all-gather-done(ags)
  cps = (f32[4], f32[4], u32[], u32[]) collective-permute-start(x), source_target_pairs={{{{0,3}},{{3,0}},{{1,2}}}}
  cp = f32[4] collective-permute-done(cps)
  ROOT t = (f32[4], f32[8], f32[4]) tuple(ar, ag, cp)
}}"""
    x = [_values(np.float32, 4, d) for d in range(4)]
    out = run(platform, text, 4, 1, [[v] for v in x])
    sources = {0: 3, 3: 0, 2: 1}
    for d in range(4):
        np.testing.assert_array_equal(out[d][0], ((x[0] + x[1]) + x[2]) + x[3])
        group = [0, 1] if d < 2 else [2, 3]
        np.testing.assert_array_equal(out[d][1], np.concatenate([x[g] for g in group]))
        np.testing.assert_array_equal(out[d][2], x[sources[d]] if d in sources else np.zeros(4))


@pytest.mark.parametrize("platform", PLATFORMS)
def test_all_reduce_in_a_loop(platform):
    # A collective thunk inside a host-side while: one rendezvous per iteration.
    text = f"""HloModule m
{reducer("add", "f32")}
cond {{
  s = (s32[], f32[3]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}}
step {{
  s = (s32[], f32[3]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  v = f32[3] get-tuple-element(s), index=1
  one = s32[] constant(1)
  j = s32[] add(i, one)
  half = f32[] constant(0.5)
  h = f32[3] broadcast(half), dimensions={{}}
  w = f32[3] multiply(v, h)
  r = f32[3] all-reduce(w), replica_groups={{{{0,1}}}}, to_apply=add
  ROOT t = (s32[], f32[3]) tuple(j, r)
}}
ENTRY e {{
  x = f32[3] parameter(0)
  zero = s32[] constant(0)
  init = (s32[], f32[3]) tuple(zero, x)
  w = (s32[], f32[3]) while(init), condition=cond, body=step
  ROOT v = f32[3] get-tuple-element(w), index=1
}}"""
    x = [np.float32([1, 2, 3]), np.float32([10, -20, 0.25])]
    out = run(platform, text, 2, 1, [[v] for v in x])
    v = list(x)
    for _ in range(3):
        s = v[0] * np.float32(0.5) + v[1] * np.float32(0.5)
        v = [s, s]
    for d in range(2):
        np.testing.assert_array_equal(out[d], v[d])


@pytest.mark.parametrize("platform", PLATFORMS)
def test_repeated_executions_and_devices_with_buffers_of_their_own(platform):
    text = f"""HloModule m
{reducer("add", "s32")}
ENTRY e {{
  x = s32[64] parameter(0)
  r = u32[] replica-id()
  c = s32[] convert(r)
  b = s32[64] broadcast(c), dimensions={{}}
  y = s32[64] add(x, b)
  s = s32[64] all-reduce(y), replica_groups={{}}, to_apply=add
  ROOT t = (s32[64], s32[64]) tuple(y, s)
}}"""
    exe = xla.compile(text, platform, num_replicas=4)
    devices = exe.executables
    assert len({id(e) for e in devices}) == 4
    assert not any(e.uses_command_buffers for e in devices)
    for k in range(3):
        x = [np.arange(64, dtype=np.int32) * (k + 1) + 1000 * d for d in range(4)]
        out = exe.execute([[v] for v in x])
        for d in range(4):
            np.testing.assert_array_equal(out[d][0], x[d] + d)
            np.testing.assert_array_equal(out[d][1], sum(x) + 6)


def test_a_failing_device_raises_on_the_caller_instead_of_hanging():
    text = f"""HloModule m
{reducer("add", "f32")}
ENTRY e {{
  x = f32[4] parameter(0)
  ROOT r = f32[4] all-reduce(x), replica_groups={{}}, to_apply=add
}}"""
    exe = xla.compile(text, "gpu_emulator", num_replicas=2)
    with pytest.raises(InvalidArgumentError, match="argument 0"):
        exe.execute([[np.zeros(4, np.float32)], [np.zeros(5, np.float32)]])


def test_the_one_device_module_keeps_no_collective_thunk():
    # replica_count 1: one-device-collectives has made each collective what it computes.
    text = f"""HloModule m
{reducer("add", "f32")}
ENTRY e {{
  x = f32[4] parameter(0)
  ROOT r = f32[4] all-reduce(x), replica_groups={{}}, to_apply=add
}}"""
    exe = xla.compile(text, "gpu_emulator")
    assert not any(isinstance(t, CollectiveThunk) for t in exe.thunks)
    np.testing.assert_array_equal(exe.execute(np.float32([1, 2, 3, 4])), [1, 2, 3, 4])


def test_ahead_of_time_refuses_collectives_by_name():
    from xla.backends.gpu.aot import aot_compile
    text = f"""HloModule m, replica_count=2
{reducer("add", "f32")}
ENTRY e {{
  x = f32[4] parameter(0)
  ROOT r = f32[4] all-reduce(x), replica_groups={{}}, to_apply=add
}}"""
    with pytest.raises(UnimplementedError, match="all-reduce"):
        aot_compile(xla.parse_hlo_module(text), "m", "sm_80")


def _mpi_missing():
    import importlib.util
    import shutil
    if shutil.which("mpirun") is None:
        return "mpirun not found (`make setup` installs openmpi-bin)"
    if importlib.util.find_spec("mpi4py") is None:
        return "mpi4py is not installed"
    return None


@pytest.mark.skipif(_mpi_missing() is not None, reason=f"needs MPI: {_mpi_missing()}")
@pytest.mark.parametrize("platform", PLATFORMS)
def test_fixtures_on_four_processes_over_mpi(platform):
    # One logical device per process, the collectives over MPI (the
    # transport the CPU uses: xla/runtime/distributed.py).
    import os
    import shutil
    import subprocess
    import sys
    distributed = FIXTURES.parent
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_btl="self,vader", OMPI_MCA_rmaps_base_oversubscribe="1",
               PYTHONPATH=os.pathsep.join([str(distributed.parents[1])] + sys.path))
    out = subprocess.run([shutil.which("mpirun"), "--oversubscribe", "-n", "4", sys.executable,
                          str(distributed / "mpi_worker.py"), "fixtures", platform],
                         env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, f"mpirun failed:\n{out.stdout}\n{out.stderr[-4000:]}"
    for name in NAMES:
        for rank in range(4):
            assert f"rank {rank} ok {name} {platform}" in out.stdout, out.stdout


def test_an_async_pair_left_unconverted_is_refused_by_name():
    # The start's tuple has another user (its operand read back), so
    # async-to-sync leaves the pair, and the backend names it.
    text = """HloModule m
ENTRY e {
  x = f32[4] parameter(0)
  ags = (f32[4], f32[8]) all-gather-start(x), replica_groups={{0,1}}, dimensions={0}
  ag = f32[8] all-gather-done(ags)
  back = f32[4] get-tuple-element(ags), index=0
  ROOT t = (f32[8], f32[4]) tuple(ag, back)
}"""
    with pytest.raises(UnimplementedError, match="all-gather-(start|done).*synchronous form"):
        xla.compile(text, "gpu_emulator", num_replicas=2)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_pmap_collectives(platform):
    import functools
    from xla import lax

    @functools.partial(xla.pmap, axis_name="i", backend=platform)
    def f(x):
        return (lax.psum(x, "i"), lax.all_gather(x, "i"), lax.pmin(x, "i"),
                lax.ppermute(x, "i", [(0, 1), (1, 2), (2, 0)]), lax.axis_index("i"))
    x = np.arange(18, dtype=np.float32).reshape(3, 2, 3) * np.float32([1, -2, 0.5]).reshape(3, 1, 1)
    s, g, m, p, idx = f(x)
    np.testing.assert_array_equal(s, np.broadcast_to((x[0] + x[1]) + x[2], x.shape))
    np.testing.assert_array_equal(g, np.broadcast_to(x, (3,) + x.shape))
    np.testing.assert_array_equal(m, np.broadcast_to(x.min(0), x.shape))
    np.testing.assert_array_equal(p, np.stack([x[2], x[0], x[1]]))
    np.testing.assert_array_equal(idx, [0, 1, 2])
