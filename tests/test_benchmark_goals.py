"""benchmarks/cpu_goals.py judges each row of a run against issue 19's goals:
the thresholds, which rows each goal judges, and what the report says."""
import importlib.util
import pathlib

import pytest

_PATH = pathlib.Path(__file__).resolve().parent.parent / "benchmarks" / "cpu_goals.py"


@pytest.fixture(scope="module")
def goals():
    spec = importlib.util.spec_from_file_location("cpu_goals", _PATH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def workload(name, ours, numpy=None, jax=None, of_limit=None):
    return {"name": name, "ours": ours, "numpy": numpy, "jax": jax, "of_limit": of_limit}


def module(name, ours, xla=None, of_limit=None):
    return {"name": name, "ours": ours, "xla": xla, "match": xla is not None, "of_limit": of_limit}


def by_text(result, prefix):
    (goal,) = [g for g in result if g.text.startswith(prefix)]
    return goal


def test_memory_bound_rows_need_both_the_bandwidth_fraction_and_the_speedup(goals):
    result = goals.evaluate(
        [workload("softmax f32[4096,1024]", 1.0, numpy=9.0, jax=1.31, of_limit=0.81),
         workload("gelu bf16[4194304]", 1.0, numpy=9.0, jax=2.0, of_limit=0.79),
         workload("layernorm f32[4096,1024]", 1.0, numpy=9.0, jax=1.29, of_limit=0.9)],
        [module("rt_rmsnorm_residual", 1.0, xla=1.5, of_limit=0.92),
         module("rt_softmax_bf16_4M", 1.0, xla=3.0, of_limit=0.46),
         module("rt_cumsum_axis0_f32_4M", 1.0, xla=1.2, of_limit=0.85)])
    of_limit = by_text(result, "memory-bound: >= 0.80")
    assert [n for n, _ in of_limit.short()] == ["gelu bf16[4194304]", "rt_softmax_bf16_4M"]
    assert len(of_limit.rows) == 6
    vs_jax = by_text(result, "memory-bound: >= 1.30x")
    assert [n for n, _ in vs_jax.short()] == ["layernorm f32[4096,1024]",
                                              "rt_cumsum_axis0_f32_4M"]
    assert len(vs_jax.rows) == 6


def test_a_dot_must_beat_the_faster_of_numpy_and_jax(goals):
    result = goals.evaluate(
        [workload("matmul f32[1024]^3", 1.0, numpy=2.0, jax=0.98),  # NumPy slower, jax faster
         workload("matvec bf16 [4096,4096]", 1.0, numpy=11.0, jax=38.0),
         workload("mlp 256x1024->4096->1024 gelu", 1.0, numpy=6.0)],  # no jax
        [module("rt_batched_matmul", 1.0, xla=0.99), module("rt_dot_s8", 1.0, xla=2.4),
         module("rt_conv_dilated", 1.0, xla=0.98), module("rt_cnn", 1.0, xla=3.0),
         module("rt_cnn_train", 1.0, xla=0.5),  # a training step
         module("rt_attention_S512", 1.0, xla=0.5)])  # no goal of its own
    dots = by_text(result, "dots")
    assert {n for n, _, _ in dots.rows} == {
        "matmul f32[1024]^3", "matvec bf16 [4096,4096]", "mlp 256x1024->4096->1024 gelu",
        "rt_batched_matmul", "rt_dot_s8", "rt_conv_dilated", "rt_cnn"}
    assert [n for n, _ in dots.short()] == ["matmul f32[1024]^3", "rt_batched_matmul",
                                            "rt_conv_dilated"]
    assert dots.numpy_only == ["mlp 256x1024->4096->1024 gelu"]


def test_integer_dots_against_the_baseline(goals):
    base = goals.INTEGER_DOT_BASELINE
    result = goals.evaluate(
        [workload("matmul s8 x s8 -> s32 [512]^3", base["matmul s8 x s8 -> s32 [512]^3"] / 4.1,
                  numpy=1.0, jax=1.0),
         workload("matvec s8 -> s32 [4096,4096]", base["matvec s8 -> s32 [4096,4096]"] / 3.9,
                  numpy=1.0, jax=1.0)], [])
    integer = by_text(result, "integer dots")
    assert [n for n, _ in integer.short()] == ["matvec s8 -> s32 [4096,4096]"]
    assert [round(f, 2) for _, f, _ in integer.rows] == [4.1, 3.9]


def test_training_steps_and_the_report(goals):
    result = goals.evaluate([], [
        module("rt_mlp_train", 1.0, xla=1.07), module("rt_cnn_train", 1.0, xla=2.9),
        module("rt_transformer_block_train", 1.0),  # XLA:CPU did not run
        module("mlp_train_L37", 1.0, xla=5.0)])  # a compile-time fixture: no goal
    training = by_text(result, "training")
    assert [(n, round(f, 2)) for n, f in training.short()] == [("rt_mlp_train", 1.07)]
    assert training.unjudged == ["rt_transformer_block_train"]
    lines = goals.report(result)
    (line,) = [x for x in lines if x.lstrip().startswith("training")]
    assert "short" in line and "1/2 rows" in line and "lowest 1.07 (rt_mlp_train)" in line
    assert "      short: rt_mlp_train 1.07" in lines
    assert any("not judged" in x and "rt_transformer_block_train" in x for x in lines)
    (dots_line,) = [x for x in lines if x.lstrip().startswith("dots")]
    assert "not judged" in dots_line


def test_long_lists_of_short_rows_wrap(goals):
    lines = goals.report(goals.evaluate(
        [], [module(f"rt_softmax_bf16_{i}", 1.0, xla=1.0) for i in range(40)]))
    wrapped = [x for x in lines if x.startswith(" " * 6)]
    assert len(wrapped) > 3 and max(len(x) for x in wrapped) <= 110
    assert sum(x.count("rt_softmax_bf16_") for x in wrapped) == 40


# Lines as the benchmarks print them (benchmarks/results/cpu_goals_epyc_2026-11-28.txt).
EARLIER_RUN = """# benchmarks/cpu_goals.py (--rounds 3 --repeats 10), 2-core AMD EPYC (Zen 5) VM
machine limits: 52.7 GB/s streaming, 478 GFLOP/s f32 GEMM (best of NumPy and ours, 2048^3)
workload                                 ours      numpy    jax.jit  np/ours  jax/ours     throughput of limit  jax/ours range
sum(x + y*z) f32[16777216]              3.82ms     14.07ms      4.94ms     3.68      1.29      52.6 GB/s     1.00       1.18-1.60
mlp 256x1024->4096->1024 gelu          10.31ms     69.56ms     13.35ms     6.74      1.29    416 GFLOP/s     0.87       1.03-1.33
matmul f32[1024]^3                      4.63ms      8.70ms          -     1.88        -    464 GFLOP/s     0.97               -
dispatch of an f32[4] add: 1.03 us per call (jax.jit: 5.26 us)
compile time of the seed example (parse to executable): 22 ms (102 ms for the first compile in the process)
module                      instrs       ours    XLA:CPU  xla/ours  results   GB/s of limit
softmax                         25    0.018ms    0.079ms      4.25  match
rt_transformer_block_train_bf16     447   32.325ms   96.729ms      2.99  match
rt_softmax_f32_256K             25    0.035ms    0.153ms      4.34  match     59.3     1.13
## rerun
rt_softmax_f32_256K             25    0.040ms          -         -  -          59.3     1.13
"""


def test_read_baseline_takes_our_time_of_each_row(goals):
    times = goals.read_baseline(EARLIER_RUN)
    assert times == pytest.approx({
        "sum(x + y*z) f32[16777216]": 3.82e-3, "mlp 256x1024->4096->1024 gelu": 10.31e-3,
        "matmul f32[1024]^3": 4.63e-3, "softmax": 0.018e-3,
        "rt_transformer_block_train_bf16": 32.325e-3,
        "rt_softmax_f32_256K": 0.035e-3})  # the faster of its two lines


def test_rows_slower_than_the_baseline(goals):
    baseline = goals.read_baseline(EARLIER_RUN)
    result = goals.evaluate(  # as measure() yields them: generators
        iter([workload("sum(x + y*z) f32[16777216]", 3.82e-3 * 1.2, numpy=1.0, jax=1.0, of_limit=1.0),
         workload("matmul f32[1024]^3", 4.63e-3 * 1.3, numpy=1.0, jax=1.0),
         workload("softmax f32[64,1024]", 1.0, numpy=2.0, jax=2.0, of_limit=1.0)]),  # not in it
        iter([module("rt_softmax_f32_256K", 0.035e-3 / 2, xla=1.0, of_limit=1.0)]),
        baseline, tolerance=1.25)
    before = by_text(result, "nothing slower")
    assert [(n, round(f, 2)) for n, f, _ in before.rows] == [
        ("sum(x + y*z) f32[16777216]", 0.83), ("matmul f32[1024]^3", 0.77),
        ("rt_softmax_f32_256K", 2.0)]
    assert [n for n, _ in before.short()] == ["matmul f32[1024]^3"]
    assert not any(g.text.startswith("nothing slower") for g in goals.evaluate([], []))
