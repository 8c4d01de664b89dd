"""Command buffers (``command_buffer.py``): a GPU executable's straight-line
thunks replayed as a graph once the same allocation addresses come back.
On the emulator (which records and replays what would be captured, with the
same addresses) and, where there is one, on a GPU (CUDA graphs). A replay
must read the current arguments and write the current outputs: the tests
hold buffers alive so that addresses change, and check every result."""
import numpy as np
import pytest

import xla
import xla.debug_options
from xla.backends.gpu.driver import cuda_unavailable_reason

NO_GPU = cuda_unavailable_reason()
needs_gpu = pytest.mark.skipif(NO_GPU is not None, reason=f"needs an NVIDIA GPU: {NO_GPU}")
PLATFORMS = ["gpu_emulator", pytest.param("gpu", marks=needs_gpu)]

# A row sum (split: partials and combine), a column max and an elementwise
# result: four kernels or more.
MODULE = """HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
max {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] maximum(a, b)
}
ENTRY e {
  x = f32[64,96] parameter(0)
  z = f32[] constant(0)
  r = f32[64] reduce(x, z), dimensions={1}, to_apply=add
  m = f32[] constant(-inf)
  c = f32[96] reduce(x, m), dimensions={0}, to_apply=max
  e = f32[64,96] exponential(x)
  ROOT t = (f32[64], f32[96], f32[64,96]) tuple(r, c, e)
}"""


def _expected(x):
    return x.sum(1), x.max(0), np.exp(x)


def _check(results, x):
    for got, want in zip(results, _expected(x)):
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-4)


def _compile(platform, **flags):
    with xla.debug_options.override(**flags):
        return xla.compile(MODULE, platform)


def _assert_replayed(exe, executions):
    """Some executions were captured and some replayed (which addresses the
    pool hands out again, and so how many calls run before a key repeats,
    is the pool's business)."""
    (buffers,) = exe._command_buffers.values()
    counts = buffers.counts
    assert counts["captured"] >= 1 and counts["replayed"] >= 1, counts
    assert sum(counts.values()) == executions, counts


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_repeated_execution_is_captured_then_replayed(platform):
    exe = _compile(platform, xla_gpu_graph_min_graph_size=1)
    assert exe.uses_command_buffers
    rng = np.random.default_rng(0)
    for _ in range(6):   # new data each time, at addresses of earlier calls
        x = rng.standard_normal((64, 96)).astype(np.float32)
        _check(exe.execute(x), x)
    _assert_replayed(exe, 6)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_replays_follow_the_arguments_and_outputs_of_each_call(platform):
    """Argument buffers that stay alive have addresses of their own, and so
    do outputs the caller keeps: each is a key of its own, and a replay
    never reads the last call's arguments or overwrites a kept result."""
    exe = _compile(platform, xla_gpu_graph_min_graph_size=1)
    device = exe.device
    rng = np.random.default_rng(1)
    xs = [rng.standard_normal((64, 96)).astype(np.float32) for _ in range(3)]
    buffers = [device.put(x) for x in xs]
    kept = []
    for round_ in range(5):
        for x, b in zip(xs, buffers):
            results = exe.execute_buffers([b])
            _check([r.to_numpy() for r in results], x)
            if round_ == 0:
                kept.append((x, results))
            del results
    for x, results in kept:     # written once, never by a later replay
        _check([r.to_numpy() for r in results], x)
    _assert_replayed(exe, 15)


def test_what_is_not_a_command_buffer():
    # Fewer thunks than --xla_gpu_graph_min_graph_size (default 2).
    small = xla.compile("""HloModule m
ENTRY e {
  x = f32[8] parameter(0)
  ROOT y = f32[8] exponential(x)
}""", "gpu_emulator")
    assert not small.uses_command_buffers
    # The flag empty: none.
    assert not _compile("gpu_emulator", xla_gpu_enable_command_buffer=(),
                        xla_gpu_graph_min_graph_size=1).uses_command_buffers
    # Host control flow reads values back: never captured.
    loop = """HloModule m
cond {
  s = (s32[], f32[8]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  s = (s32[], f32[8]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  x = f32[8] get-tuple-element(s), index=1
  y = f32[8] add(x, x)
  one = s32[] constant(1)
  j = s32[] add(i, one)
  ROOT t = (s32[], f32[8]) tuple(j, y)
}
ENTRY e {
  x = f32[8] parameter(0)
  z = s32[] constant(0)
  t = (s32[], f32[8]) tuple(z, x)
  w = (s32[], f32[8]) while(t), condition=cond, body=body
  ROOT r = f32[8] get-tuple-element(w), index=1
}"""
    with xla.debug_options.override(xla_gpu_graph_min_graph_size=1):
        exe = xla.compile(loop, "gpu_emulator")
    assert not exe.uses_command_buffers
    x = np.arange(8, dtype=np.float32)
    np.testing.assert_array_equal(exe.execute(x), 8 * x)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_matrix_products_in_a_command_buffer(platform):
    """cuBLAS calls are captured with the kernels (CUBLAS), or keep the
    executable out of graphs when the flag leaves them out."""
    text = """HloModule m
ENTRY e {
  a = f32[32,48] parameter(0)
  b = f32[48,16] parameter(1)
  d = f32[32,16] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT t = f32[32,16] tanh(d)
}"""
    with xla.debug_options.override(xla_gpu_graph_min_graph_size=1):
        exe = xla.compile(text, platform)
    with xla.debug_options.override(xla_gpu_graph_min_graph_size=1,
                                    xla_gpu_enable_command_buffer=("FUSION",)):
        assert not xla.compile(text, platform).uses_command_buffers
    assert exe.uses_command_buffers
    rng = np.random.default_rng(2)
    for _ in range(6):
        a = rng.standard_normal((32, 48)).astype(np.float32)
        b = rng.standard_normal((48, 16)).astype(np.float32)
        np.testing.assert_allclose(exe.execute(a, b), np.tanh(a @ b), rtol=1e-5, atol=1e-5)
    _assert_replayed(exe, 6)


def test_a_bad_command_type_names_the_flag():
    with pytest.raises(xla.errors.InvalidArgumentError,
                       match="xla_gpu_enable_command_buffer: unknown command type 'FUSIONS'"):
        xla.debug_options.parse_flags("--xla_gpu_enable_command_buffer=FUSIONS")
