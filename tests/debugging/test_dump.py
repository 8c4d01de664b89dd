"""--xla_dump_to: XLA's file names, per-pass dumps, limits, snapshots, and
dumping never breaking compilation."""
import os
import re
import warnings

import numpy as np
import pytest

import xla
from xla import debug_options as d

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _module(name="fma_reduce"):
    return xla.parse_hlo_module(open(os.path.join(ROOT, "examples", name + ".hlo")).read())


def _strip_ids(names):
    return sorted(re.sub(r"module_\d{4}", "module_N", n) for n in names)


def test_cpu_compile_writes_xla_named_files(tmp_path):
    with d.override(xla_dump_to=str(tmp_path)):
        xla.compile(_module(), "cpu")
    names = _strip_ids(os.listdir(tmp_path))
    m = xla.parse_hlo_module(open(os.path.join(ROOT, "examples", "fma_reduce.hlo")).read()).name
    assert names == sorted([
        f"module_N.{m}.before_optimizations.txt",
        f"module_N.{m}.cpu_after_optimizations.txt",
        f"module_N.{m}.cpu_after_optimizations-buffer-assignment.txt",
        f"module_N.{m}.cpu_after_optimizations-memory-usage-report.txt",
        f"module_N.{m}.ir-no-opt.ll",
        f"module_N.{m}.ir-with-opt.ll",
        f"module_N.{m}.o",
    ])
    by_suffix = {n.split(".", 2)[2]: tmp_path / n for n in os.listdir(tmp_path)}
    # The dumps are what they say: parseable HLO, LLVM IR, an ELF object.
    before = xla.parse_hlo_module(by_suffix["before_optimizations.txt"].read_text())
    after = xla.parse_hlo_module(by_suffix["cpu_after_optimizations.txt"].read_text())
    assert not any(i.opcode == "fusion" for i in before.all_instructions())
    assert any(i.opcode == "fusion" for i in after.all_instructions())
    assert "define" in by_suffix["ir-no-opt.ll"].read_text()
    assert by_suffix["o"].read_bytes()[:4] == b"\x7fELF"
    assert "allocation" in by_suffix["cpu_after_optimizations-buffer-assignment.txt"].read_text().lower()


def test_interpreter_and_formats(tmp_path):
    with d.override(xla_dump_to=str(tmp_path), xla_dump_hlo_as_dot=True, xla_dump_hlo_as_html=True,
                    xla_dump_hlo_as_text=True):
        xla.compile(_module("softmax"), "interpreter")
    suffixes = sorted(n.split(".", 2)[2] for n in os.listdir(tmp_path))
    assert suffixes == ["before_optimizations.dot", "before_optimizations.html", "before_optimizations.txt",
                        "interpreter_after_optimizations.dot", "interpreter_after_optimizations.html",
                        "interpreter_after_optimizations.txt"]


def test_only_dot_means_no_text(tmp_path):
    with d.override(xla_dump_to=str(tmp_path), xla_dump_hlo_as_dot=True):
        xla.compile(_module("softmax"), "interpreter")
    assert all(n.endswith(".dot") for n in os.listdir(tmp_path))


def test_per_pass_dumps_follow_the_regex(tmp_path):
    with d.override(xla_dump_to=str(tmp_path), xla_dump_hlo_pass_re="^fusion$"):
        xla.compile(_module(), "cpu")
    per_pass = sorted(n for n in os.listdir(tmp_path) if re.search(r"\.\d{4}\.", n))
    assert len(per_pass) == 2
    assert per_pass[0].endswith(".0001.optimization.after_layout-assignment.before_fusion.txt")
    assert per_pass[1].endswith(".0002.optimization.after_fusion.before_dce.txt")
    before = xla.parse_hlo_module(open(tmp_path / per_pass[0]).read())
    after = xla.parse_hlo_module(open(tmp_path / per_pass[1]).read())
    assert not any(i.opcode == "fusion" for i in before.all_instructions())
    assert any(i.opcode == "fusion" for i in after.all_instructions())


def test_module_regex_and_max_modules(tmp_path):
    with d.override(xla_dump_to=str(tmp_path / "a"), xla_dump_hlo_module_re="softmax"):
        xla.compile(_module("fma_reduce"), "interpreter")
        xla.compile(_module("softmax"), "interpreter")
    assert all(".softmax." in n for n in os.listdir(tmp_path / "a"))
    with d.override(xla_dump_to=str(tmp_path / "b"), xla_dump_max_hlo_modules=0):
        xla.compile(_module("softmax"), "interpreter")
    assert not (tmp_path / "b").exists()


def test_timestamp_prefix(tmp_path):
    with d.override(xla_dump_to=str(tmp_path), xla_dump_include_timestamp=True):
        xla.compile(_module("softmax"), "interpreter")
    assert all(re.match(r"\d{13}\.module_\d{4}\.", n) for n in os.listdir(tmp_path))


def test_unwritable_directory_warns_once_and_compiles(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("user data")
    target = blocker / "dumps"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with d.override(xla_dump_to=str(target)):
            exe = xla.compile(_module(), "cpu")
            xla.compile(_module(), "cpu")
    msgs = [str(w.message) for w in caught if "xla dump" in str(w.message)]
    assert len(msgs) == 1 and str(target) in msgs[0]
    assert blocker.read_text() == "user data"
    args = [np.ones(8, np.float32)] * 3
    assert exe.execute(*args) == pytest.approx(16.0)


def test_jit_snapshots_replay_on_both_platforms(tmp_path):
    from xla.tools import replay
    with d.override(xla_dump_to=str(tmp_path), xla_dump_hlo_snapshots=True):
        f = xla.jit(lambda x, y: (np.tanh(x) @ y, np.sum(y)))
        x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
        y = np.random.default_rng(1).standard_normal((4, 2)).astype(np.float32)
        want = f(x, y)
        f(x * 2, y)
    snaps = sorted(n for n in os.listdir(tmp_path) if ".snapshot." in n)
    assert [s.rsplit(".", 2)[1] for s in snaps] == ["0", "1"]
    for platform in ("cpu", "interpreter"):
        result = replay.replay_file(str(tmp_path / snaps[0]), platform)
        np.testing.assert_allclose(result.leaves[0], want[0], rtol=1e-5)
        np.testing.assert_allclose(result.leaves[1], want[1], rtol=1e-5)
        assert replay.compare_leaves(result.leaves, result.recorded, 1e-5, 1e-6).ok


def test_tool_run_dump_file_set(tmp_path):
    import subprocess
    import sys
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    tool = os.path.join(ROOT, "tools", "replay_computation.py")
    proc = subprocess.run([sys.executable, tool, "--platform=cpu", f"--xla_dump_to={tmp_path}",
                           "--xla_dump_hlo_snapshots", os.path.join(ROOT, "examples", "softmax.hlo")],
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    suffixes = sorted(n.split(".", 2)[2] for n in os.listdir(tmp_path))
    assert suffixes == ["before_optimizations.txt", "cpu_after_optimizations-buffer-assignment.txt",
                        "cpu_after_optimizations-memory-usage-report.txt", "cpu_after_optimizations.txt",
                        "ir-no-opt.ll", "ir-with-opt.ll", "o", "snapshot.0.npz"]


def test_jit_function_dump_file_set(tmp_path):
    with d.override(xla_dump_to=str(tmp_path), xla_dump_hlo_pass_re="^dce$"):
        f = xla.jit(lambda x: np.sum(np.exp(x) * 2), disk_cache=False)
        f(np.ones(4, np.float32))
    names = os.listdir(tmp_path)
    assert all(n.startswith("module_") and ".jit__lambda_." in n for n in names)
    fixed = sorted(n.split(".", 2)[2] for n in names if not re.search(r"\.\d{4}\.", n))
    assert fixed == ["before_optimizations.txt", "cpu_after_optimizations-buffer-assignment.txt",
                     "cpu_after_optimizations-memory-usage-report.txt", "cpu_after_optimizations.txt",
                     "ir-no-opt.ll", "ir-with-opt.ll", "o"]
    per_pass = [n for n in names if re.search(r"\.\d{4}\.", n)]
    assert per_pass and all("dce" in n for n in per_pass)
