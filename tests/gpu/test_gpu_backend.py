"""The GPU backend, with and without a GPU: kernels, cuBLAS, reductions,
sorts, random numbers, linear algebra, transposes, control flow, the
tools, on the emulator and, where a GPU and its driver are present, on
the real device (platform 'gpu'); where not, those tests skip saying why,
and the 'gpu' platform's error says what is missing. The corpus is in
test_gpu_corpus.py and test_gpu_ptxas.py."""
import numpy as np
import pytest

import xla
from xla.backends.gpu.driver import cuda_unavailable_reason
from xla.backends.gpu.nvptx import assemble
from xla.errors import InvalidArgumentError

from test_corpus_interpreter import FILES

NO_GPU = cuda_unavailable_reason()
needs_gpu = pytest.mark.skipif(NO_GPU is not None, reason=f"needs an NVIDIA GPU: {NO_GPU}")

def test_kernels_are_grid_stride_loops_over_special_registers():
    exe = xla.compile("""HloModule m
ENTRY e {
  x = f32[1000] parameter(0)
  y = f32[1000] parameter(1)
  ROOT z = f32[1000] multiply(x, y)
}""", "gpu_emulator")
    (thunk,) = exe.thunks
    assert "ptx_kernel" in thunk.ir_text and thunk.elements == 1000
    for reg in ("tid.x", "ctaid.x", "ntid.x", "nctaid.x"):
        assert f"llvm.nvvm.read.ptx.sreg.{reg}" in thunk.ir_text
    ptx = exe.ptx
    assert "%tid.x" in ptx and "%nctaid.x" in ptx
    x = np.arange(1000, dtype=np.float32)
    np.testing.assert_array_equal(exe.execute(x, x + 1), x * (x + 1))


def test_results_stay_on_the_device():
    f = xla.jit(lambda x: np.exp(x) * 2, backend="gpu_emulator")
    x = np.linspace(-1, 1, 300).astype(np.float32)
    out = f(x)
    assert type(out).__name__ == "GpuBuffer" and out.device.platform.name == "gpu_emulator"
    again = f(out)
    np.testing.assert_allclose(np.asarray(again), np.exp(np.exp(x) * 2) * 2, rtol=2e-6)


@pytest.mark.skipif(NO_GPU is None, reason="a GPU is present here: the error for none cannot show")
def test_the_gpu_platform_compiles_without_a_gpu_and_says_what_is_missing(tmp_path):
    exe = xla.compile("""HloModule m
ENTRY e {
  x = f32[8] parameter(0)
  ROOT y = f32[8] add(x, x)
}""", "gpu", debug_options=f"--xla_dump_to={tmp_path}")
    assert ".entry" in exe.ptx
    for suffix in (".ptx", ".ir-no-opt.ll", ".ir-with-opt.ll"):
        assert any(p.name.endswith(suffix) for p in tmp_path.iterdir()), list(tmp_path.iterdir())
    with pytest.raises(InvalidArgumentError, match="no NVIDIA driver|not installed|no GPU"):
        exe.execute(np.ones(8, np.float32))
    with pytest.raises(InvalidArgumentError, match="platform 'gpu' has no devices here"):
        xla.devices("gpu")


# ----- on a real GPU ---------------------------------------------------------------

@needs_gpu
def test_the_gpu_device_names_itself_and_its_architecture():
    (device, *_) = xla.devices("gpu")
    assert "compute capability" in device.kind
    exe = xla.compile("""HloModule m
ENTRY e {
  x = f32[8] parameter(0)
  ROOT y = f32[8] add(x, x)
}""", "gpu")
    assert exe.device is device and exe.arch == device.arch
    assert f".target {device.arch}" in exe.ptx


@needs_gpu
def test_results_stay_on_the_gpu_and_chain_without_copies_back():
    from xla.backends.gpu.driver import DeviceMemory
    f = xla.jit(lambda x, y: np.tanh(x) * y + 1, backend="gpu")
    rng = np.random.default_rng(0)
    x = rng.standard_normal(1 << 20).astype(np.float32)
    y = rng.standard_normal(1 << 20).astype(np.float32)
    out = f(x, y)
    assert type(out).__name__ == "GpuBuffer" and isinstance(out.memory, DeviceMemory)
    for _ in range(3):
        out = f(out, y)
    expected = x
    expected = np.tanh(expected) * y + 1
    for _ in range(3):
        expected = np.tanh(expected) * y + 1
    np.testing.assert_allclose(np.asarray(out.block_until_ready()), expected, rtol=1e-5, atol=1e-5)


@needs_gpu
def test_loops_and_branches_on_the_host_read_the_device():
    exe = xla.compile("""HloModule m
cond {
  s = (s32[], f32[1000]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(100)
  ROOT c = pred[] compare(i, n), direction=LT
}
body {
  s = (s32[], f32[1000]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  x = f32[1000] get-tuple-element(s), index=1
  one = s32[] constant(1)
  h = f32[] constant(0.5)
  hb = f32[1000] broadcast(h), dimensions={}
  i1 = s32[] add(i, one)
  x1 = f32[1000] add(x, hb)
  ROOT t = (s32[], f32[1000]) tuple(i1, x1)
}
ENTRY e {
  x = f32[1000] parameter(0)
  z = s32[] constant(0)
  t = (s32[], f32[1000]) tuple(z, x)
  w = (s32[], f32[1000]) while(t), condition=cond, body=body
  ROOT r = f32[1000] get-tuple-element(w), index=1
}""", "gpu")
    x = np.arange(1000, dtype=np.float32)
    np.testing.assert_array_equal(exe.execute(x), x + 50)


@needs_gpu
def test_executions_free_their_device_memory():
    from cuda.bindings import driver
    f = xla.jit(lambda x: (x * 2).sum(), backend="gpu")
    x = xla.devices("gpu")[0].put(np.ones(1 << 20, np.float32))
    float(f(x))
    xla.devices("gpu")[0].synchronize()
    free_before = driver.cuMemGetInfo()[1]
    for _ in range(200):
        assert float(f(x)) == 2 * (1 << 20)
    xla.devices("gpu")[0].synchronize()
    free_after = driver.cuMemGetInfo()[1]
    # The stream-ordered pool may keep what it freed; it must not grow by the
    # 200 executions' temporaries (4 MiB each: 800 MiB).
    assert free_before - free_after < 128 << 20, (free_before, free_after)


# ----- dot through cuBLAS (GemmThunk): the emulator runs it with NumPy --------------

GEMM_CASES = {
    # name: (lhs shape, rhs shape, dot attributes, dtype)
    "row-major": ((64, 48), (48, 40), "lhs_contracting_dims={1}, rhs_contracting_dims={0}", "f32"),
    "x @ w.T": ((64, 48), (40, 48), "lhs_contracting_dims={1}, rhs_contracting_dims={1}", "f32"),
    "x.T @ w": ((48, 64), (48, 40), "lhs_contracting_dims={0}, rhs_contracting_dims={0}", "f32"),
    "both transposed": ((48, 64), (40, 48), "lhs_contracting_dims={0}, rhs_contracting_dims={1}",
                        "f64"),
    "batched": ((3, 16, 24), (3, 24, 8), "lhs_batch_dims={0}, lhs_contracting_dims={2}, "
                "rhs_batch_dims={0}, rhs_contracting_dims={1}", "f32"),
    "matrix-vector": ((64, 48), (48,), "lhs_contracting_dims={1}, rhs_contracting_dims={0}", "f64"),
    "vector-matrix": ((48,), (48, 40), "lhs_contracting_dims={0}, rhs_contracting_dims={0}", "f32"),
}


def _gemm_module(lhs, rhs, attrs, dt):
    def shape(dims):
        return f"{dt}[{','.join(map(str, dims))}]"
    lc = int(attrs.split("lhs_contracting_dims={")[1][0])
    rc = int(attrs.split("rhs_contracting_dims={")[1][0])
    batch = [lhs[0]] if "batch" in attrs else []
    nb = len(batch)
    out = batch + [d for i, d in enumerate(lhs) if i >= nb and i != lc] + \
        [d for i, d in enumerate(rhs) if i >= nb and i != rc]
    return f"""HloModule m
ENTRY e {{
  a = {shape(lhs)} parameter(0)
  b = {shape(rhs)} parameter(1)
  ROOT d = {shape(out)} dot(a, b), {attrs}
}}""", lc, rc, nb


def _reference(a, b, lc, rc, nb):
    """The dot by einsum: batch dimension 0 shared, lc summed with rc."""
    b_index = [0 if i < nb else lc if i == rc else 10 + i for i in range(b.ndim)]
    out = list(range(nb)) + [i for i in range(nb, a.ndim) if i != lc] + \
        [j for j in b_index[nb:] if j != lc]
    return np.einsum(a, list(range(a.ndim)), b, b_index, out)


@pytest.mark.parametrize("platform", ["gpu_emulator", pytest.param("gpu", marks=needs_gpu)])
@pytest.mark.parametrize("canonical", [True, False], ids=["canonicalized", "as-written"])
@pytest.mark.parametrize("case", list(GEMM_CASES))
def test_plain_matrix_products_go_to_gemm(case, canonical, platform):
    """With dot_decomposer (operands transposed into canonical order first)
    and without it (cuBLAS's transpose flags do it)."""
    from xla.backends.gpu.gemm import GemmThunk
    lhs, rhs, attrs, dt = GEMM_CASES[case]
    text, lc, rc, nb = _gemm_module(lhs, rhs, attrs, dt)
    exe = xla.compile(text, platform, debug_options=None if canonical else
                      "--xla_disable_hlo_passes=dot_decomposer")
    assert isinstance(exe.thunks[-1], GemmThunk), exe.thunks
    if not canonical:
        (gemm,) = exe.thunks
        assert (gemm.lhs_transposed, gemm.rhs_transposed) == ("x.T" in case or "both" in case,
                                                              "w.T" in case or "both" in case)
    rng = np.random.default_rng(1)
    dtype = np.float32 if dt == "f32" else np.float64
    a, b = rng.standard_normal(lhs).astype(dtype), rng.standard_normal(rhs).astype(dtype)
    expected = _reference(a.astype(np.float64), b.astype(np.float64), lc, rc, nb)
    np.testing.assert_allclose(exe.execute(a, b), expected, rtol=1e-5 if dt == "f32" else 1e-12,
                               atol=1e-4 if dt == "f32" else 1e-12)


def test_other_dots_stay_kernels():
    exe = xla.compile("""HloModule m
ENTRY e {
  a = s32[4,3] parameter(0)
  b = s32[3,5] parameter(1)
  ROOT d = s32[4,5] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}""", "gpu_emulator")
    assert [type(t).__name__ for t in exe.thunks] == ["KernelThunk"]
    a = np.arange(12, dtype=np.int32).reshape(4, 3)
    b = np.arange(15, dtype=np.int32).reshape(3, 5)
    np.testing.assert_array_equal(exe.execute(a, b), a @ b)


# ----- row and column reductions: partials, then a combine (split_reduction.py) -----

SPLIT_REDUCTIONS = {
    # name: (input shape, dtype, reduced dims, reducer, init, NumPy reference)
    "sum of rows not a multiple of the lanes": ((7, 1000), "f32", (1,), "add", 0, np.sum),
    "full sum to a scalar": ((100_003,), "f32", (0,), "add", 0, np.sum),
    "max with an init that is not the identity": ((64, 300), "f32", (1,), "maximum", 0.5,
                                                  lambda x, axis: np.maximum(x.max(axis), 0.5)),
    "sum with an init that is not the identity": ((64, 300), "f64", (1,), "add", 5,
                                                  lambda x, axis: x.sum(axis) + 5),
    "integer sum": ((33, 4097), "s32", (1,), "add", 0, np.sum),
    "two dims, minor and major": ((4, 50, 300), "f32", (0, 2), "add", 0, np.sum),
    "column sum": ((5000, 40), "f32", (0,), "add", 0, np.sum),
    "column max over two major dims": ((64, 100, 8), "f32", (0, 1), "maximum", float("-inf"),
                                       np.max),
    "integer column sum, chunks not dividing the rows": ((3001, 7), "s32", (0,), "add", 0, np.sum),
    "many rows: a warp per row": ((4100, 70), "f32", (1,), "add", 0, np.sum),
    "many f64 rows: 64-bit shuffles": ((4096, 65), "f64", (1,), "maximum", float("-inf"), np.max),
}


@pytest.mark.parametrize("platform", ["gpu_emulator", pytest.param("gpu", marks=needs_gpu)])
@pytest.mark.parametrize("case", list(SPLIT_REDUCTIONS))
def test_reductions_run_as_partials_and_a_combine(case, platform):
    dims, dt, reduced, op, init, reference = SPLIT_REDUCTIONS[case]
    out = [d for i, d in enumerate(dims) if i not in reduced]
    exe = xla.compile(f"""HloModule m
r {{
  a = {dt}[] parameter(0)
  b = {dt}[] parameter(1)
  ROOT c = {dt}[] {op}(a, b)
}}
ENTRY e {{
  x = {dt}[{','.join(map(str, dims))}] parameter(0)
  i = {dt}[] constant({init})
  ROOT y = {dt}[{','.join(map(str, out))}] reduce(x, i), dimensions={{{','.join(map(str, reduced))}}}, to_apply=r
}}""", platform)
    kinds = [t.name.rsplit("_", 1)[-1] for t in exe.kernels]
    row = len(dims) - 1 in reduced
    if case.startswith("many"):    # enough rows for a warp each: one kernel, no scratch
        assert kinds == ["y"] and "shfl.sync.bfly" in exe.kernels[0].ir_text
    else:                          # a row's lanes fold their warps by shuffles first
        assert kinds == ["partials", "combine"]
        assert ("shfl.sync.bfly" in exe.kernels[0].ir_text) == row
    _, messages = assemble(exe.ptx, exe.arch)
    assert messages.strip() == "", messages
    rng = np.random.default_rng(2)
    dtype = {"f32": np.float32, "f64": np.float64, "s32": np.int32}[dt]
    x = (rng.integers(-1000, 1000, dims) if dt == "s32" else rng.standard_normal(dims)).astype(dtype)
    expected = reference(x.astype(np.float64 if dt != "s32" else np.int64), axis=reduced)
    got = exe.execute(x)
    if dt == "s32":
        np.testing.assert_array_equal(got, expected.astype(np.int32))
    else:
        np.testing.assert_allclose(got, expected, rtol=1e-5 if dt == "f32" else 1e-12, atol=1e-3)


@pytest.mark.parametrize("platform", ["gpu_emulator", pytest.param("gpu", marks=needs_gpu)])
def test_a_gradient_and_its_bias_gradient_fuse_into_one_reduction(platform):
    # The fusion pass makes g the column sum's second output (the dot reads
    # it too): one fusion computes g once, stores it and sums its columns.
    exe = xla.compile("""HloModule m
r {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
ENTRY e {
  z = f32[300,70] parameter(0)
  dy = f32[300,70] parameter(1)
  w = f32[70,16] parameter(2)
  zero = f32[] constant(0)
  zeros = f32[300,70] broadcast(zero), dimensions={}
  gt = pred[300,70] compare(z, zeros), direction=GT
  g = f32[300,70] select(gt, dy, zeros)
  dx = f32[300,16] dot(g, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  db = f32[70] reduce(g, zero), dimensions={0}, to_apply=r
  ROOT t = (f32[300,16], f32[70]) tuple(dx, db)
}""", platform)
    (fusion,) = [i for i in exe.module.entry.instructions if i.opcode == "fusion"]
    assert fusion.shape.is_tuple
    rng = np.random.default_rng(5)
    z, dy = (rng.standard_normal((300, 70)).astype(np.float32) for _ in range(2))
    w = rng.standard_normal((70, 16)).astype(np.float32)
    dx, db = exe.execute(z, dy, w)
    g = np.where(z > 0, dy, 0).astype(np.float64)
    np.testing.assert_allclose(np.asarray(db), g.sum(0), rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(np.asarray(dx), g @ w, rtol=1e-4, atol=1e-3)


def test_short_rows_and_unknown_reducers_keep_one_thread_per_output():
    """(Also: a column reduction with enough outputs.)"""
    exe = xla.compile("""HloModule m
r {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] subtract(a, b)
}
s {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
ENTRY e {
  x = f32[16,300] parameter(0)
  z = f32[] constant(0)
  odd = f32[16] reduce(x, z), dimensions={1}, to_apply=r
  y = f32[300,16] parameter(1)
  short = f32[300] reduce(y, z), dimensions={1}, to_apply=s
  ROOT t = (f32[16], f32[300]) tuple(odd, short)
}""", "gpu_emulator")
    assert not any("partials" in t.name for t in exe.kernels), [t.name for t in exe.kernels]
    x = np.ones((16, 300), np.float32)
    y = np.ones((300, 16), np.float32)
    odd, short = exe.execute(x, y)
    np.testing.assert_array_equal(odd, np.full(16, -300, np.float32))
    np.testing.assert_array_equal(short, np.full(300, 16, np.float32))


# ----- the tools take the GPU platforms -----------------------------------------------

def _tool(name, *args):
    import os
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([root] + sys.path))
    return subprocess.run([sys.executable, os.path.join(root, "tools", name), *args],
                          capture_output=True, text=True, timeout=300, env=env)


def test_replay_computation_and_hlo_opt_take_the_gpu_platforms():
    path = str(FILES[0].parent / "attention.hlo")
    run = _tool("replay_computation.py", "--platform=gpu_emulator", "--compare=interpreter", path)
    assert run.returncode == 0 and "compare with interpreter: OK" in run.stdout, run.stdout + run.stderr
    run = _tool("hlo_opt.py", "--platform=gpu", path)
    assert run.returncode == 0 and "fusion" in run.stdout, run.stderr
    run = _tool("replay_computation.py", "--platform=gpu", path)
    if NO_GPU is None:
        assert run.returncode == 0, run.stderr
    else:
        assert run.returncode == 1 and "Traceback" not in run.stderr
        assert "cannot run on platform 'gpu'" in run.stderr and NO_GPU in run.stderr, run.stderr


# ----- sort: a bitonic network, stable by original position (sort.py) ---------------

@pytest.mark.parametrize("platform", ["gpu_emulator", pytest.param("gpu", marks=needs_gpu)])
def test_sort_is_stable_with_a_payload(platform):
    exe = xla.compile("""HloModule m
lt {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  c = s32[] parameter(2)
  d = s32[] parameter(3)
  ROOT r = pred[] compare(a, b), direction=LT
}
ENTRY e {
  k = s32[4,1000] parameter(0)
  v = s32[4,1000] iota(), iota_dimension=1
  ROOT s = (s32[4,1000], s32[4,1000]) sort(k, v), dimensions={1}, to_apply=lt, is_stable=true
}""", platform)
    assert [t.name.rsplit("_", 1)[-1] for t in exe.kernels][-2:] == ["positions", "step"]
    _, messages = assemble(exe.ptx, exe.arch)
    assert messages.strip() == "", messages
    keys = np.random.default_rng(3).integers(0, 5, (4, 1000)).astype(np.int32)
    got_keys, got_order = exe.execute(keys)
    order = np.argsort(keys, axis=1, kind="stable")
    np.testing.assert_array_equal(got_order, order)
    np.testing.assert_array_equal(got_keys, np.take_along_axis(keys, order, axis=1))


@pytest.mark.parametrize("platform", ["gpu_emulator", pytest.param("gpu", marks=needs_gpu)])
@pytest.mark.parametrize("length", [1, 2, 3, 1000, 4096])
def test_sort_descending_along_the_major_dimension(platform, length):
    exe = xla.compile(f"""HloModule m
gt {{
  a = f64[] parameter(0)
  b = f64[] parameter(1)
  ROOT r = pred[] compare(a, b), direction=GT
}}
ENTRY e {{
  x = f64[{length},3] parameter(0)
  ROOT s = f64[{length},3] sort(x), dimensions={{0}}, to_apply=gt
}}""", platform)
    x = np.random.default_rng(length).standard_normal((length, 3))
    np.testing.assert_array_equal(exe.execute(x), -np.sort(-x, axis=0))


@pytest.mark.parametrize("platform", ["gpu_emulator", pytest.param("gpu", marks=needs_gpu)])
@pytest.mark.parametrize("largest", [True, False])
def test_topk_orders_by_total_order_with_ties_to_the_lower_index(platform, largest):
    exe = xla.compile(f"""HloModule m
ENTRY e {{
  x = f32[5,37] parameter(0)
  ROOT t = (f32[5,6], s32[5,6]) topk(x), k=6, largest={str(largest).lower()}
}}""", platform)
    x = np.random.default_rng(4).integers(-3, 4, (5, 37)).astype(np.float32)   # many ties
    x[0, 5] = np.nan
    x[1, 7] = -np.inf
    x[2, 3] = -0.0
    values, indices = exe.execute(x)
    # TOTALORDER: -NaN < -inf < ... < -0.0 < 0.0 < ... < inf < NaN; stable argsort on it.
    key = x.view(np.int32).astype(np.int64)
    key = np.where(key < 0, -(key & 0x7FFFFFFF) - 1, key)
    order = np.argsort(-key if largest else key, axis=1, kind="stable")[:, :6]
    np.testing.assert_array_equal(indices, order)
    np.testing.assert_array_equal(values.view(np.int32), np.take_along_axis(x, order, 1).view(np.int32))


def test_topk_with_a_result_that_does_not_fit_is_refused():
    with pytest.raises(xla.errors.XlaError, match="TopK.*larger than|top-5 of"):
        xla.compile("""HloModule m
ENTRY e {
  x = f32[8,4] parameter(0)
  ROOT t = (f32[8,5], s32[8,5]) custom-call(x), custom_call_target="TopK"
}""", "gpu_emulator")


@pytest.mark.parametrize("platform", ["gpu_emulator", pytest.param("gpu", marks=needs_gpu)])
def test_a_donated_buffer_holds_the_result_without_a_copy(platform):
    device = xla.devices(platform)[0]
    f = xla.jit(lambda x, y: x * 2 + y, backend=platform, donate_argnums=0)
    x = device.put(np.arange(1000, dtype=np.float32))
    y = device.put(np.ones(1000, np.float32))
    address = x.memory.address
    out = f(x, y)
    assert x.is_deleted() and not y.is_deleted()
    assert out.memory.address == address        # the result is where x was
    np.testing.assert_array_equal(np.asarray(out), np.arange(1000, dtype=np.float32) * 2 + 1)
    again = f(out, y)                            # and again, in the same memory
    assert again.memory.address == address
    np.testing.assert_array_equal(np.asarray(again), np.arange(1000, dtype=np.float32) * 4 + 3)


def test_a_result_repeated_in_the_tuple_is_two_buffers():
    """Donating one must not change the other (buffers are values)."""
    device = xla.devices("gpu_emulator")[0]
    exe = xla.compile("""HloModule m
ENTRY e {
  x = f32[16] parameter(0)
  y = f32[16] multiply(x, x)
  ROOT t = (f32[16], f32[16]) tuple(y, y)
}""", "gpu_emulator")
    a, b = exe.execute_buffers([device.put(np.arange(16, dtype=np.float32))])
    assert a.memory.address != b.memory.address
    double = xla.jit(lambda v: v * 2, backend="gpu_emulator", donate_argnums=0)
    double(a)
    np.testing.assert_array_equal(np.asarray(b), np.arange(16, dtype=np.float32) ** 2)


# ----- random numbers (rng.py): the CPU backend's semantics ------------------------

@pytest.mark.parametrize("algorithm", ["rng_philox", "rng_three_fry"])
@pytest.mark.parametrize("out", ["u32[5,7]", "u64[9]", "u8[3,4]", "s32[2,3,2]"])
def test_rng_bit_generator_is_bit_exact_with_the_interpreter(algorithm, out):
    from xla.hlo.evaluator import evaluate
    text = f"""HloModule m
ENTRY e {{
  s = u64[2] parameter(0)
  ROOT r = (u64[2], {out}) rng-bit-generator(s), algorithm={algorithm}
}}"""
    state = np.array([0x1234567890ABCDEF, 42], np.uint64)
    got = xla.compile(text, "gpu_emulator").execute(state)
    expected = evaluate(xla.parse_hlo_module(text), state)
    for g, e in zip(got, expected):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(e))


def test_rng_continues_across_executions_and_a_new_executable_repeats():
    text = """HloModule m
ENTRY e {
  lo = f32[] constant(0)
  hi = f32[] constant(1)
  ROOT r = f32[1000] rng(lo, hi), distribution=rng_uniform
}"""
    exe = xla.compile(text, "gpu_emulator")
    first, second = exe.execute(), exe.execute()
    assert first.min() >= 0 and first.max() < 1 and 0.4 < first.mean() < 0.6
    assert not np.array_equal(first, second)
    np.testing.assert_array_equal(xla.compile(text, "gpu_emulator").execute(), first)
    cpu = xla.compile(text, "cpu")
    np.testing.assert_array_equal(cpu.execute(), first)      # the CPU's semantics, bit for bit
    np.testing.assert_array_equal(cpu.execute(), second)


def test_rng_state_is_returned_and_advanced():
    exe = xla.compile("""HloModule m
ENTRY e {
  ROOT s = u64[2] rng-get-and-update-state(), delta=5
}""", "gpu_emulator")
    np.testing.assert_array_equal(exe.execute(), [0, 0])
    np.testing.assert_array_equal(exe.execute(), [5, 0])
    np.testing.assert_array_equal(exe.execute(), [10, 0])


# ----- linear algebra (linalg.py): one thread per matrix -------------------------------

@pytest.mark.parametrize("platform", ["gpu_emulator", pytest.param("gpu", marks=needs_gpu)])
def test_batched_cholesky_and_triangular_solve_match_numpy(platform):
    """300 matrices: more than one block, so each thread's scratch is its own."""
    exe = xla.compile("""HloModule m
ENTRY e {
  a = f64[300,6,6] parameter(0)
  b = f64[300,6,3] parameter(1)
  l = f64[300,6,6] cholesky(a), lower=true
  ROOT x = f64[300,6,3] triangular-solve(l, b), left_side=true, lower=true, transpose_a=NO_TRANSPOSE
}""", platform)
    rng = np.random.default_rng(6)
    m = rng.standard_normal((300, 6, 6))
    a = m @ m.transpose(0, 2, 1) + 6 * np.eye(6)
    b = rng.standard_normal((300, 6, 3))
    expected = np.linalg.solve(np.linalg.cholesky(a), b)
    np.testing.assert_allclose(exe.execute(a, b), expected, rtol=1e-10, atol=1e-12)
    _, messages = assemble(exe.ptx, exe.arch)   # sm_90 where an H100/H200 is the device
    assert messages.strip() == "", messages


# ----- transposes through shared memory (transpose.py), run by the threaded emulator ---

@pytest.mark.parametrize("dtype,shape", [("f32", (2, 70, 100)), ("f64", (64, 96)),
                                         ("u8", (65, 64)), ("f16", (96, 64))])
def test_tiled_transposes_match_numpy_and_assemble(dtype, shape):
    dims = ",".join(map(str, shape))
    out = ",".join(map(str, shape[:-2] + (shape[-1], shape[-2])))
    perm = ",".join(map(str, list(range(len(shape) - 2)) + [len(shape) - 1, len(shape) - 2]))
    exe = xla.compile(f"""HloModule m
ENTRY e {{
  x = {dtype}[{dims}] parameter(0)
  ROOT t = {dtype}[{out}] transpose(x), dimensions={{{perm}}}
}}""", "gpu_emulator")
    (kernel,) = exe.kernels
    assert kernel.block == 256 and "barrier0" in kernel.ir_text and "addrspace(3)" in kernel.ir_text
    x = np.random.default_rng(7).integers(0, 250, shape).astype(
        {"f32": np.float32, "f64": np.float64, "u8": np.uint8, "f16": np.float16}[dtype])
    np.testing.assert_array_equal(exe.execute(x), np.swapaxes(x, -1, -2))
    _, messages = assemble(exe.ptx, "sm_90")
    assert messages.strip() == "", messages


def test_a_jitted_transpose_takes_the_tiled_path_and_a_small_one_does_not():
    f = xla.jit(lambda x: x.T, backend="gpu_emulator")
    x = np.arange(128 * 80, dtype=np.float32).reshape(128, 80)
    np.testing.assert_array_equal(np.asarray(f(x)), x.T)
    exe = xla.compile(f.lower(x).as_hlo_text(), "gpu_emulator")
    assert [t.block for t in exe.kernels] == [256], [t.name for t in exe.kernels]
    small = xla.compile("""HloModule m
ENTRY e {
  x = f32[63,100] parameter(0)
  ROOT t = f32[100,63] transpose(x), dimensions={1,0}
}""", "gpu_emulator")
    assert all(t.block is None for t in small.kernels)


def test_entry_layouts_that_are_not_row_major_run():
    """JAX lowers x.T with the result in layout {0,1} (the transpose is
    free there); the GPU's buffers are row-major, so the result is made
    row-major: a tiled transpose. A parameter in another layout is copied
    in. Results are logical arrays either way."""
    x = np.random.default_rng(8).standard_normal((96, 80)).astype(np.float32)
    jax_x_t = xla.compile("""HloModule jit__lambda, entry_computation_layout={(f32[96,80]{1,0})->f32[80,96]{0,1}}
ENTRY main.1 {
  x.1 = f32[96,80]{1,0} parameter(0)
  ROOT transpose.1 = f32[80,96]{0,1} transpose(x.1), dimensions={1,0}
}""", "gpu_emulator")
    assert [t.block for t in jax_x_t.kernels] == [256]
    np.testing.assert_array_equal(jax_x_t.execute(x), x.T)
    column_major_in = xla.compile("""HloModule m
ENTRY e {
  x = f32[96,80]{0,1} parameter(0)
  ROOT n = f32[96,80]{0,1} negate(x)
}""", "gpu_emulator")
    np.testing.assert_array_equal(column_major_in.execute(x), -x)


def test_a_loop_whose_body_swaps_its_state():
    exe = xla.compile("""HloModule m
cond {
  s = (s32[], f32[8], f32[8]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(3)
  ROOT c = pred[] compare(i, n), direction=LT
}
body {
  s = (s32[], f32[8], f32[8]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  a = f32[8] get-tuple-element(s), index=1
  b = f32[8] get-tuple-element(s), index=2
  one = s32[] constant(1)
  j = s32[] add(i, one)
  ROOT t = (s32[], f32[8], f32[8]) tuple(j, b, a)
}
ENTRY e {
  a = f32[8] parameter(0)
  b = f32[8] parameter(1)
  z = s32[] constant(0)
  t = (s32[], f32[8], f32[8]) tuple(z, a, b)
  w = (s32[], f32[8], f32[8]) while(t), condition=cond, body=body
  x = f32[8] get-tuple-element(w), index=1
  y = f32[8] get-tuple-element(w), index=2
  ROOT r = (f32[8], f32[8]) tuple(x, y)
}""", "gpu_emulator")
    a, b = np.arange(8, dtype=np.float32), -np.arange(8, dtype=np.float32)
    x, y = exe.execute(a, b)
    np.testing.assert_array_equal(x, b)    # swapped three times
    np.testing.assert_array_equal(y, a)


def test_copies_that_overwrite_a_later_source_are_staged():
    """A swap of two slices must read both before writing either; copies
    that clobber nothing run in order, unstaged."""
    from xla.backends.gpu.executable import run_copies
    from xla.backends.gpu.kernel_emitter import CopyThunk
    device = xla.devices("gpu_emulator")[0]
    swap = CopyThunk([((0, 0), (0, 8), 8), ((0, 8), (0, 0), 8)])
    chain = CopyThunk([((0, 16), (0, 0), 8), ((0, 0), (0, 8), 8)])
    assert not swap.sequential and chain.sequential
    for thunk, expected in ((swap, [1] * 8 + [0] * 8 + [2] * 8),
                            (chain, [1] * 8 + [1] * 8 + [0] * 8)):
        memory = {0: device.allocate(24)}
        device.upload(memory[0], np.repeat(np.arange(3, dtype=np.uint8), 8))
        run_copies(device, thunk, memory)
        np.testing.assert_array_equal(device.download(memory[0]), expected)
