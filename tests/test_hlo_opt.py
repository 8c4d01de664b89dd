"""End-to-end tests of tools/hlo_opt.py, run as a user runs it."""
import os
import subprocess
import sys

from xla.hlo.parser import parse_hlo_module

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOOL = os.path.join(ROOT, "tools", "hlo_opt.py")

MODULE = """\
HloModule simplify_me

ENTRY %main (x: f32[4]) -> f32[4] {
  %x = f32[4]{0} parameter(0)
  %n1 = f32[4]{0} negate(f32[4]{0} %x)
  %n2 = f32[4]{0} negate(f32[4]{0} %n1)
  %one = f32[] constant(1)
  %ones = f32[4]{0} broadcast(f32[] %one), dimensions={}
  %dead = f32[4]{0} exponential(f32[4]{0} %x)
  ROOT %m = f32[4]{0} multiply(f32[4]{0} %n2, f32[4]{0} %ones)
}
"""


def run_tool(*args):
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, TOOL, *args], capture_output=True, text=True,
                          env=env, timeout=120)


def test_named_passes_print_the_result(tmp_path):
    path = tmp_path / "m.hlo"
    path.write_text(MODULE)
    proc = run_tool("--passes=algsimp,dce", str(path))
    assert proc.returncode == 0, proc.stderr
    module = parse_hlo_module(proc.stdout)
    # -(-x) * broadcast(1) is x; the dead exponential is gone.
    root = module.entry.root_instruction
    assert root.opcode == "parameter"
    assert [i.opcode for i in module.entry.instructions] == ["parameter"]


def test_disabled_pass_is_skipped(tmp_path):
    path = tmp_path / "m.hlo"
    path.write_text(MODULE)
    proc = run_tool("--passes=algsimp,dce", "--xla_disable_hlo_passes=dce", str(path))
    assert proc.returncode == 0, proc.stderr
    module = parse_hlo_module(proc.stdout)
    assert "exponential" in [i.opcode for i in module.entry.instructions]


def test_unknown_pass_is_a_clear_error(tmp_path):
    path = tmp_path / "m.hlo"
    path.write_text(MODULE)
    proc = run_tool("--passes=algsimpp", str(path))
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert "algsimpp" in proc.stderr and "did you mean algsimp" in proc.stderr


def test_parse_error_and_output_over_input(tmp_path):
    path = tmp_path / "m.hlo"
    path.write_text(MODULE.replace("negate(", "negat(", 1))
    proc = run_tool(str(path))
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert "m.hlo:5:" in proc.stderr and "negat" in proc.stderr
    path.write_text(MODULE)
    proc = run_tool(f"--output={path}", str(path))
    assert proc.returncode != 0 and "overwrite" in proc.stderr
    assert path.read_text() == MODULE


SEED = open(os.path.join(ROOT, "examples", "fma_reduce.hlo")).read()


def test_whole_pipeline_and_buffer_assignment_report(tmp_path):
    path = tmp_path / "seed.hlo"
    path.write_text(SEED)
    proc = run_tool("--platform=interpreter", "--buffer_assignment", "--print_timing", str(path))
    assert proc.returncode == 0, proc.stderr
    module_text, report = proc.stdout.split("BufferAssignment:", 1)
    module = parse_hlo_module(module_text)
    assert module.is_scheduled
    assert [i.opcode for i in module.entry.instructions] == ["parameter"] * 3 + ["fusion"]
    assert "kind=kInput" in module_text
    assert "allocation 3: size 4, maybe-live-out" in report
    assert "Temp arena bytes: 0" in report
    assert "fusion:" in proc.stderr  # the timing report names the passes


def test_allow_mixed_precision(tmp_path):
    path = tmp_path / "m.hlo"
    path.write_text("HloModule m\nENTRY e {\n  x = f16[4] parameter(0)\n  y = f32[4] parameter(1)\n"
                    "  ROOT r = f16[4] maximum(x, y)\n}\n")
    refused = run_tool(str(path))
    assert refused.returncode != 0 and "mixed precision is disallowed" in refused.stderr
    proc = run_tool("--allow_mixed_precision", "--passes=mixed-precision-normalizer,cse", str(path))
    assert proc.returncode == 0, proc.stderr
    module = parse_hlo_module(proc.stdout)
    # maximum in f32 (x converted), then a convert to the declared f16.
    ops = [(i.opcode, i.shape.to_text(False)) for i in module.entry.instructions]
    assert ("maximum", "f32[4]") in ops and ops[-1] == ("convert", "f16[4]")
    whole = run_tool("--allow_mixed_precision", "--platform=cpu", str(path))
    assert whole.returncode == 0, whole.stderr
