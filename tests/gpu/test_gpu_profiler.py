"""xla.profiler on the GPU backend (xla/backends/gpu/profiling.py): every
kernel launch, cuBLAS call and device copy of a traced execution is an
instruction span with its opcode, bytes and FLOPs, nested in the
execution's span, on a timeline row of its own; graphs are not replayed
while profiling; nothing is recorded outside a trace. On the emulator the
host's clock times them, on a GPU CUDA events."""
import json

import numpy as np
import pytest

import xla
from xla.backends.gpu.driver import cuda_unavailable_reason

NO_GPU = cuda_unavailable_reason()
needs_gpu = pytest.mark.skipif(NO_GPU is not None, reason=f"needs an NVIDIA GPU: {NO_GPU}")
PLATFORMS = ["gpu_emulator", pytest.param("gpu", marks=needs_gpu)]


def step(w, x):
    h = np.tanh(x @ w)
    return (h * h).sum(axis=1), h.T @ h


@pytest.mark.parametrize("platform", PLATFORMS)
def test_traced_gpu_executions_time_each_launch(platform, tmp_path):
    rng = np.random.default_rng(0)
    w = rng.standard_normal((16, 8)).astype(np.float32)
    x = rng.standard_normal((32, 16)).astype(np.float32)
    with xla.profiler.trace(str(tmp_path)) as prof:
        f = xla.jit(step, backend=platform, disk_cache=False)
        for _ in range(2):
            s, g = f(w, x)
    h = np.tanh(x @ w)
    np.testing.assert_allclose(np.asarray(s), (h * h).sum(axis=1), rtol=1e-4)
    np.testing.assert_allclose(np.asarray(g), h.T @ h, rtol=1e-4, atol=1e-4)
    trace = json.loads(next(tmp_path.glob("*.trace.json")).read_text())
    spans = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    executions = [e for e in spans if e["cat"] == "execution"]
    instructions = [e for e in spans if e["cat"] == "instruction"]
    assert len(executions) == 2 and executions[0]["name"].startswith("jit_step")
    dots = [e for e in instructions if e["args"]["opcode"] == "dot"]
    # Two dots per execution: x @ w (32x16x8) and h.T @ h (8x32x8), through cuBLAS.
    assert sorted(e["args"]["flops"] for e in dots) == sorted(
        [2 * 32 * 16 * 8, 2 * 8 * 32 * 8] * 2)
    assert any(e["args"]["opcode"] == "fusion" for e in instructions)
    assert len(instructions) % 2 == 0 and all(e["args"]["bytes"] > 0 for e in instructions)
    for e in instructions:   # nested in an execution, on the device's own row
        assert any(x["ts"] <= e["ts"] and e["ts"] + e["dur"] <= x["ts"] + x["dur"] + 1
                   for x in executions), e
    rows = {m["tid"]: m["args"]["name"] for m in trace["traceEvents"] if m["ph"] == "M"
            and m["name"] == "thread_name"}
    assert {rows[e["tid"]] for e in instructions} == {f"{xla.devices(platform)[0]} stream"}
    assert {rows[e["tid"]] for e in executions} != {f"{xla.devices(platform)[0]} stream"}
    summary = prof.summary()
    assert "dot" in summary and "fusion" in summary


@pytest.mark.parametrize("platform", PLATFORMS)
def test_nothing_is_recorded_outside_a_trace(platform, tmp_path):
    f = xla.jit(lambda a: a * 2 + 1, backend=platform, disk_cache=False)
    f(np.ones(4, np.float32))
    with xla.profiler.trace(str(tmp_path), write=False) as prof:
        pass
    f(np.ones(4, np.float32))
    assert prof.events == []


@pytest.mark.parametrize("platform", PLATFORMS)
def test_collectives_of_a_replicated_run_are_spans_too(platform, tmp_path):
    text = """HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  x = f32[4] parameter(0)
  y = f32[4] multiply(x, x)
  ROOT r = f32[4] all-reduce(y), replica_groups={{0,1}}, to_apply=add
}"""
    xs = [np.arange(4, dtype=np.float32) + d for d in range(2)]
    with xla.profiler.trace(str(tmp_path), write=False) as prof:
        exe = xla.compile(text, platform, num_replicas=2)
        out = exe.execute([[x] for x in xs])
    for d in range(2):
        np.testing.assert_array_equal(np.asarray(out[d]), xs[0] ** 2 + xs[1] ** 2)
    reduces = [e for e in prof.events if e[1] == "instruction" and e[5]["opcode"] == "all-reduce"]
    assert len(reduces) == 2 and all(e[0] == "r" and e[5]["bytes"] == 32 for e in reduces)
    assert len([e for e in prof.events if e[1] == "execution"]) == 2
