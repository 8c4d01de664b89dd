"""replay_computation --compare, snapshots, XLA's optimized dumps, timings."""
import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = os.path.join(ROOT, "tools", "replay_computation.py")
CORPUS = os.path.join(ROOT, "tests", "corpus")


def run_tool(*args):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, TOOL, *args], capture_output=True, text=True, env=env, timeout=300)


@pytest.mark.parametrize("name", ["argmax_argmin", "attention", "conv_nhwc", "scan_rnn", "mlp_train_step",
                                  "gather_ops", "top_k"])
def test_xla_optimized_dumps_run_on_cpu_and_match_the_interpreter(name):
    path = os.path.join(CORPUS, f"{name}.optimized.hlo")
    if not os.path.exists(path):
        names = json.load(open(os.path.join(CORPUS, "MANIFEST.json")))
        pytest.fail(f"{name} is not in the corpus; it has {sorted(names)[:10]}...")
    args = os.path.join(CORPUS, f"{name}.npz")
    proc = run_tool("--platform=cpu", "--compare=interpreter", "--rtol=1e-4", "--atol=1e-5",
                    f"--args={args}", path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "compare with interpreter: OK" in proc.stdout
    assert re.search(r"out0: max abs error \S+, max rel error \S+", proc.stdout)


def test_mismatch_exits_non_zero(tmp_path):
    # exp on cpu and on the interpreter agree to rounding, not bit for bit.
    module = tmp_path / "m.hlo"
    module.write_text("HloModule m\n\nENTRY %e (x: f32[1000]) -> f32[1000] {\n"
                      "  %x = f32[1000]{0} parameter(0)\n"
                      "  ROOT %y = f32[1000]{0} exponential(f32[1000]{0} %x)\n}\n")
    ok = run_tool("--platform=cpu", "--compare=interpreter", str(module))
    assert ok.returncode == 0, ok.stdout + ok.stderr
    bad = run_tool("--platform=cpu", "--compare=interpreter", "--rtol=0", "--atol=0", str(module))
    assert bad.returncode == 1
    assert "MISMATCH" in bad.stdout and "beyond tolerance" in bad.stdout


def test_snapshot_replay_uses_recorded_arguments(tmp_path):
    code = ("import numpy as np, xla\n"
            "f = xla.jit(lambda x: np.cumsum(x) * 3)\n"
            "print(f(np.arange(5.0)).tolist())\n")
    env = dict(os.environ, XLA_FLAGS=f"--xla_dump_to={tmp_path} --xla_dump_hlo_snapshots",
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    (snap,) = [n for n in os.listdir(tmp_path) if n.endswith(".snapshot.0.npz")]
    out = tmp_path / "out.npz"
    proc = run_tool("--platform=interpreter", "--compare=cpu", f"--output={out}", str(tmp_path / snap))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "compare with the snapshot's recorded results: OK" in proc.stdout
    with np.load(out) as r:
        np.testing.assert_allclose(r["out0"], np.cumsum(np.arange(5.0)) * 3)


def test_num_runs_timing_summary_and_flags():
    path = os.path.join(CORPUS, "argmax_argmin.hlo")
    proc = run_tool("--platform=cpu", "--num_runs=4", "--xla_backend_optimization_level=1", path)
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"4 runs: min \d+\.\d+ ms, median \d+\.\d+ ms", proc.stdout)
    bad = run_tool("--xla_dump_too=/x", path)
    assert bad.returncode == 1 and "did you mean --xla_dump_to" in bad.stderr
    assert "Traceback" not in bad.stderr
    unknown = run_tool("--compare=tpu", path)
    assert unknown.returncode == 1 and "unknown platform 'tpu'" in unknown.stderr


def test_unknown_custom_call_target_is_named(tmp_path):
    module = tmp_path / "cc.hlo"
    module.write_text("HloModule cc\n\nENTRY %e (x: f32[4]) -> f32[4] {\n"
                      "  %x = f32[4]{0} parameter(0)\n"
                      "  ROOT %c = f32[4]{0} custom-call(f32[4]{0} %x), custom_call_target=\"MyKernel\"\n}\n")
    for platform in ("cpu", "interpreter"):
        proc = run_tool(f"--platform={platform}", str(module))
        assert proc.returncode == 1
        assert "MyKernel" in proc.stderr and "Traceback" not in proc.stderr


def test_bf16_outputs_compare_within_tolerance_not_bytewise():
    import ml_dtypes
    from xla.tools import replay
    got = np.array([1.0, 2.0, 3.0], ml_dtypes.bfloat16)
    want = np.array([1.0, 2.0, 3.02], ml_dtypes.bfloat16)
    diff = abs(float(got[2]) - float(want[2]))
    (row,) = replay.compare_leaves([got], [want], rtol=1e-2, atol=0).rows
    assert row[1] == pytest.approx(diff) and row[2] == pytest.approx(diff / float(want[2])) and row[3]
    assert not replay.compare_leaves([got], [want], rtol=1e-3, atol=0).ok
    ints = np.array([1, 2], ml_dtypes.int4)
    assert not replay.compare_leaves([ints], [np.array([1, 3], ml_dtypes.int4)], rtol=1, atol=1).ok


def test_bf16_snapshot_results_keep_their_type(tmp_path):
    import ml_dtypes
    import xla
    from xla import debug_options
    from xla.tools import replay
    text = ("HloModule bf\n\nENTRY %e (x: bf16[8]) -> (bf16[8], f32[8]) {\n"
            "  %x = bf16[8]{0} parameter(0)\n  %e = bf16[8]{0} exponential(bf16[8]{0} %x)\n"
            "  %c = f32[8]{0} convert(bf16[8]{0} %e)\n"
            "  ROOT %t = (bf16[8]{0}, f32[8]{0}) tuple(bf16[8]{0} %e, f32[8]{0} %c)\n}\n")
    x = np.linspace(-1, 1, 8).astype(ml_dtypes.bfloat16)
    with debug_options.override(xla_dump_to=str(tmp_path), xla_dump_hlo_snapshots=True):
        want = xla.compile(xla.parse_hlo_module(text), "cpu").execute(x)
    (snap,) = [n for n in os.listdir(tmp_path) if ".snapshot." in n]
    _, args, outs = replay.read_snapshot(str(tmp_path / snap))
    assert args[0].dtype == ml_dtypes.bfloat16 and outs[0].dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(outs[0].astype(np.float32), want[0].astype(np.float32))
    result = replay.replay_file(str(tmp_path / snap), "interpreter")
    np.testing.assert_allclose(result.leaves[0].astype(np.float32), np.exp(x.astype(np.float32)), rtol=1e-2)
    assert replay.compare_leaves(result.leaves, outs, rtol=1e-2, atol=1e-2).ok


def test_long_dots_are_compared_with_a_tolerance_for_their_length(tmp_path):
    # A 65,536-term f32 dot: the CPU's and the interpreter's summation orders
    # differ by ~4e-4 on outputs of size ~300, 5.5e-5 relative on the
    # smallest; with --rtol=1e-5 per element this was reported as a mismatch.
    module = tmp_path / "dot.hlo"
    module.write_text("HloModule m\n\nENTRY e {\n  x = f32[4,65536] parameter(0)\n"
                      "  w = f32[65536,64] parameter(1)\n  ROOT d = f32[4,64] dot(x, w), "
                      "lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n")
    proc = run_tool("--platform=cpu", "--compare=interpreter", str(module))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "compare with interpreter: OK" in proc.stdout
    assert "(sums of 65536 terms)" in proc.stdout


def test_the_length_tolerance_still_catches_wrong_answers():
    from xla.tools import replay
    rng = np.random.default_rng(0)
    want = rng.normal(size=(4, 64)).astype(np.float32) * 300
    off = want.copy()
    off[1, 7] += 0.01 * float(np.sqrt(np.mean(want ** 2)))   # 1% of the output's size
    assert not replay.compare_leaves([off], [want], 1e-5, 1e-6, lengths=[65536]).ok
    close = want + 1e-4 * float(np.sqrt(np.mean(want ** 2)))
    assert replay.compare_leaves([close], [want], 1e-5, 1e-6, lengths=[65536]).ok
    assert not replay.compare_leaves([close], [want], 1e-5, 1e-6).ok   # elementwise: strict


def test_reduction_lengths_follow_dots_convolutions_and_reduces():
    from xla.hlo.parser import parse_hlo_module
    from xla.tools.tolerance import reduction_lengths
    m = parse_hlo_module("""HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
ENTRY e {
  img = f32[1,8,8,3] parameter(0)
  k = f32[3,3,3,16] parameter(1)
  conv = f32[1,6,6,16] convolution(img, k), window={size=3x3}, dim_labels=b01f_01io->b01f
  flat = f32[1,576] reshape(conv)
  w = f32[576,10] parameter(2)
  logits = f32[1,10] dot(flat, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  z = f32[] constant(0)
  total = f32[] reduce(logits, z), dimensions={0,1}, to_apply=add
  ROOT t = (f32[], f32[1,8,8,3], f32[1,10]) tuple(total, img, logits)
}""")
    # conv: 3x3 window x 3 input features = 27; dot: 576; reduce: 10
    assert reduction_lengths(m) == [27 * 576 * 10, 1, 27 * 576]
