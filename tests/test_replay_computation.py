"""End-to-end tests of tools/replay_computation.py, run as a user runs it."""
import os
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOOL = os.path.join(ROOT, "tools", "replay_computation.py")

FMA_SUM = """\
HloModule fma_sum, entry_computation_layout={(f32[4]{0}, f32[4]{0}, f32[4]{0})->(f32[], f32[4]{0})}

%add_f32 (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %sum = f32[] add(f32[] %a, f32[] %b)
}

ENTRY %main (x: f32[4], y: f32[4], z: f32[4]) -> (f32[], f32[4]) {
  %x = f32[4]{0} parameter(0)
  %y = f32[4]{0} parameter(1)
  %z = f32[4]{0} parameter(2)
  %yz = f32[4]{0} multiply(f32[4]{0} %y, f32[4]{0} %z)
  %s = f32[4]{0} add(f32[4]{0} %x, f32[4]{0} %yz)
  %zero = f32[] constant(0)
  %r = f32[] reduce(f32[4]{0} %s, f32[] %zero), dimensions={0}, to_apply=%add_f32
  ROOT %t = (f32[], f32[4]{0}) tuple(f32[] %r, f32[4]{0} %s)
}
"""


def run_tool(*args, cwd=None):
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, TOOL, *args], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=120)


@pytest.fixture
def module_file(tmp_path):
    path = tmp_path / "fma_sum.hlo"
    path.write_text(FMA_SUM)
    return path


def test_args_and_output(tmp_path, module_file):
    args = tmp_path / "in.npz"
    np.savez(args, arg0=np.array([1, 2, 3, 4], np.float32), arg1=np.array([1, 1, 2, 2], np.float32),
             arg2=np.array([0.5, -1, 3, 0], np.float32))
    out = tmp_path / "out.npz"
    proc = run_tool("--platform=interpreter", f"--args={args}", f"--output={out}", str(module_file))
    assert proc.returncode == 0, proc.stderr
    with np.load(out) as result:
        assert sorted(result.files) == ["out0", "out1"]
        # x + y*z = [1.5, 1, 9, 4]; its sum is 15.5.
        np.testing.assert_array_equal(result["out1"], np.array([1.5, 1, 9, 4], np.float32))
        assert result["out0"].dtype == np.float32 and result["out0"] == np.float32(15.5)
    assert "out0: float32[]" in proc.stdout


def test_random_arguments_are_deterministic(tmp_path, module_file):
    outs = []
    for name, seed in (("a", 7), ("b", 7), ("c", 8)):
        out = tmp_path / f"{name}.npz"
        proc = run_tool(f"--random_seed={seed}", f"--output={out}", str(module_file))
        assert proc.returncode == 0, proc.stderr
        with np.load(out) as result:
            outs.append(result["out1"])
    np.testing.assert_array_equal(outs[0], outs[1])
    assert not np.array_equal(outs[0], outs[2])


def test_parse_error_has_line_and_column_and_no_traceback(tmp_path):
    bad = tmp_path / "bad.hlo"
    bad.write_text(FMA_SUM.replace("multiply(", "multiplyy("))
    proc = run_tool(str(bad))
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    line = FMA_SUM.splitlines().index("  %yz = f32[4]{0} multiply(f32[4]{0} %y, f32[4]{0} %z)") + 1
    assert f"bad.hlo:{line}:" in proc.stderr
    assert "multiplyy" in proc.stderr


def test_missing_argument_in_npz(tmp_path, module_file):
    args = tmp_path / "in.npz"
    np.savez(args, arg0=np.zeros(4, np.float32))
    proc = run_tool(f"--args={args}", str(module_file))
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    assert "arg1" in proc.stderr and "arg2" in proc.stderr


def test_wrong_argument_shape(tmp_path, module_file):
    args = tmp_path / "in.npz"
    np.savez(args, arg0=np.zeros(5, np.float32), arg1=np.zeros(4, np.float32), arg2=np.zeros(4, np.float32))
    proc = run_tool(f"--args={args}", str(module_file))
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    assert "f32[4]" in proc.stderr or "(4,)" in proc.stderr


def test_unknown_platform_and_flag(module_file):
    proc = run_tool("--platform=tpu", str(module_file))
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert "tpu" in proc.stderr and "interpreter" in proc.stderr
    proc = run_tool("--platfrom=cpu", str(module_file))
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert "platfrom" in proc.stderr


def test_missing_file_and_output_over_input(tmp_path, module_file):
    proc = run_tool(str(tmp_path / "nope.hlo"))
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert "nope.hlo" in proc.stderr
    before = module_file.read_text()
    proc = run_tool(f"--output={module_file}", str(module_file))
    assert proc.returncode != 0 and "overwrite" in proc.stderr
    assert module_file.read_text() == before


def test_cpu_platform_gives_the_same_results(tmp_path, module_file):
    args = tmp_path / "in.npz"
    np.savez(args, arg0=np.array([1, 2, 3, 4], np.float32), arg1=np.array([1, 1, 2, 2], np.float32),
             arg2=np.array([0.5, -1, 3, 0], np.float32))
    out = tmp_path / "out.npz"
    proc = run_tool("--platform=cpu", f"--args={args}", f"--output={out}", str(module_file))
    assert proc.returncode == 0, proc.stderr
    assert "on cpu" in proc.stdout
    with np.load(out) as result:
        np.testing.assert_array_equal(result["out1"], np.array([1.5, 1, 9, 4], np.float32))
        assert result["out0"] == np.float32(15.5)


def test_num_runs_prints_a_timing_summary(module_file):
    proc = run_tool("--platform=cpu", "--num_runs=5", str(module_file))
    assert proc.returncode == 0, proc.stderr
    assert "5 runs: min " in proc.stdout and " median " in proc.stdout
    proc = run_tool("--num_runs=0", str(module_file))
    assert proc.returncode != 0 and "Traceback" not in proc.stderr and "num_runs" in proc.stderr


MIXED = """HloModule mixed
ENTRY e {
  x = f16[4] parameter(0)
  y = f32[4] parameter(1)
  ROOT r = f32[4] maximum(x, y)
}
"""


def test_allow_mixed_precision(tmp_path):
    # XLA's test modules mix precisions (its HloTestBase verifies with
    # allow_mixed_precision); without the flag the verifier names the op.
    path = tmp_path / "mixed.hlo"
    path.write_text(MIXED)
    x = np.array([1.5, -2, 3.25, 0.1], np.float16)
    y = np.array([1, -3, 4, 0.1], np.float32)
    np.savez(tmp_path / "in.npz", arg0=x, arg1=y)
    refused = run_tool("--platform=cpu", f"--args={tmp_path / 'in.npz'}", str(path))
    assert refused.returncode == 1
    assert "instruction %r in computation %e" in refused.stderr
    assert "mixed precision is disallowed" in refused.stderr
    proc = run_tool("--platform=cpu", "--allow_mixed_precision", "--compare=interpreter",
                    f"--args={tmp_path / 'in.npz'}", f"--output={tmp_path / 'out.npz'}", str(path))
    assert proc.returncode == 0, proc.stderr
    assert "compare with interpreter: OK" in proc.stdout
    np.testing.assert_array_equal(np.load(tmp_path / "out.npz")["out0"],
                                  np.maximum(x.astype(np.float32), y))


def test_profile_prints_per_instruction_totals_and_writes_a_trace(tmp_path):
    import json
    example = os.path.join(os.path.dirname(TOOL), "..", "examples", "dense_relu.hlo")
    out = run_tool("--platform=cpu", "--profile", f"--profile_dir={tmp_path}", "--num_runs=2",
                   example)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("instruction"))
    rows = {line.split()[0]: line.split() for line in lines[header + 1:] if not line.startswith(" ")
            and len(line.split()) > 3}
    assert rows["xw"][1] == "dot" and rows["xw"][2] == "2"   # the dot, timed twice
    (trace,) = list(tmp_path.glob("*.trace.json"))
    events = json.loads(trace.read_text())["traceEvents"]
    assert any(e.get("name") == "xw" for e in events)
    # --profile_dir alone is a usage error; the interpreter records nothing and says so.
    bad = run_tool(f"--profile_dir={tmp_path}", example)
    assert bad.returncode == 1 and "--profile_dir needs --profile" in bad.stderr
    interp = run_tool("--profile", example)
    assert interp.returncode == 0 and "nothing recorded on interpreter" in interp.stdout


def test_a_snapshot_with_a_damaged_array_header_is_one_error_line(tmp_path):
    # The fuzzer's finding: a .npy header NumPy's parser cannot tokenize
    # (a TokenError, not a ValueError) ended in a traceback.
    import zipfile
    header = b"{'descr': '<f4', 'fortran_order': False, 'shape': (3,"
    header += b" " * (-(len(header) + 11) % 64) + b"\n"
    member = b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header + b"\0" * 12
    path = tmp_path / "snapshot.npz"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("hlo_module.npy", member)
    out = run_tool(str(path))
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert out.stderr.strip().splitlines() == [out.stderr.strip()]
    assert "cannot read hlo_module" in out.stderr
