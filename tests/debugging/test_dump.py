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
        f"module_N.{m}.cpu_after_optimizations-compile-times.txt",
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
    # Per-stage and per-pass compile times.
    times = by_suffix["cpu_after_optimizations-compile-times.txt"].read_text()
    for stage in ("passes", "buffer_assignment", "codegen", "llvm", "total"):
        assert re.search(rf"^  {stage} +\d+\.\d+ s$", times, re.M), (stage, times)
    for name in ("fusion", "simplification/algsimp", "simplification/cse", "dce"):
        assert re.search(rf"^  {name} +\d+\.\d+ s$", times, re.M), (name, times)


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
    # Steps count from 0 per module, as XLA's StepNumberForModule does.
    assert per_pass[0].endswith(".0000.optimization.after_reduction-dimension-grouper.before_fusion.txt")
    assert per_pass[1].endswith(".0001.optimization.after_fusion.before_dce.txt")
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
    assert not (tmp_path / "b").exists() or not os.listdir(tmp_path / "b")


def test_timestamp_prefix(tmp_path):
    with d.override(xla_dump_to=str(tmp_path), xla_dump_include_timestamp=True):
        xla.compile(_module("softmax"), "interpreter")
    # XLA's prefix: microseconds, one per module (every file of it shares it).
    names = os.listdir(tmp_path)
    assert all(re.match(r"\d{16}\.module_\d{4}\.", n) for n in names)
    assert len({n.split(".", 1)[0] for n in names}) == 1


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
                           "--xla_dump_hlo_snapshots", "--xla_dump_hlo_as_text",
                           os.path.join(ROOT, "examples", "softmax.hlo")],
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    suffixes = sorted(n.split(".", 2)[2] for n in os.listdir(tmp_path))
    assert suffixes == ["before_optimizations.txt", "cpu_after_optimizations-buffer-assignment.txt",
                        "cpu_after_optimizations-compile-times.txt",
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
                     "cpu_after_optimizations-compile-times.txt",
                        "cpu_after_optimizations-memory-usage-report.txt", "cpu_after_optimizations.txt",
                     "ir-no-opt.ll", "ir-with-opt.ll", "o"]
    per_pass = [n for n in names if re.search(r"\.\d{4}\.", n)]
    assert per_pass and all("dce" in n for n in per_pass)


def test_snapshots_alone_mean_no_module_text(tmp_path):
    # XLA: any format flag (snapshots included) turns the implicit text dumps off.
    with d.override(xla_dump_to=str(tmp_path), xla_dump_hlo_snapshots=True):
        exe = xla.compile(_module(), "cpu")
        exe.execute(*[np.ones(8, np.float32)] * 3)
    suffixes = sorted(n.split(".", 2)[2] for n in os.listdir(tmp_path))
    assert suffixes == ["ir-no-opt.ll", "ir-with-opt.ll", "o", "snapshot.0.npz"]


def test_dump_to_stdout(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    # A format flag without --xla_dump_to dumps to stdout, as --xla_dump_to=- does.
    for fields in ({"xla_dump_hlo_as_text": True}, {"xla_dump_to": "-"}):
        with d.override(**fields):
            xla.compile(_module(), "cpu")
        out = capsys.readouterr().out
        begins = re.findall(r"^\*\*\* Begin (\S+) \*\*\*$", out, re.M)
        assert _strip_ids(begins) == sorted([
            "module_N.fma_reduce.before_optimizations.txt", "module_N.fma_reduce.cpu_after_optimizations.txt",
            "module_N.fma_reduce.cpu_after_optimizations-buffer-assignment.txt",
            "module_N.fma_reduce.cpu_after_optimizations-memory-usage-report.txt",
            "module_N.fma_reduce.cpu_after_optimizations-compile-times.txt",
            "module_N.fma_reduce.ir-no-opt.ll", "module_N.fma_reduce.ir-with-opt.ll"])
        assert len(re.findall(r"^\*\*\* End ", out, re.M)) == len(begins)
        text = out.split(f"*** Begin {begins[0]} ***\n", 1)[1].split(f"\n*** End {begins[0]} ***", 1)[0]
        assert xla.parse_hlo_module(text).name == "fma_reduce"
    assert os.listdir(tmp_path) == []


def test_sponge_means_test_undeclared_outputs_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("TEST_UNDECLARED_OUTPUTS_DIR", str(tmp_path / "outputs"))
    with d.override(xla_dump_to="sponge"):
        xla.compile(_module("softmax"), "interpreter")
    assert sorted(n.split(".", 2)[2] for n in os.listdir(tmp_path / "outputs")) == [
        "before_optimizations.txt", "interpreter_after_optimizations.txt"]


def test_max_modules_counts_the_directory(tmp_path):
    first = tmp_path / "a"
    with d.override(xla_dump_to=str(first), xla_dump_max_hlo_modules=1):
        xla.compile(_module("softmax"), "interpreter")
        xla.compile(_module("fma_reduce"), "cpu")
    assert {n.split(".")[1] for n in os.listdir(first)} == {"softmax"}
    assert len(os.listdir(first)) == 2
    # Another directory has its own count.
    with d.override(xla_dump_to=str(tmp_path / "b"), xla_dump_max_hlo_modules=1):
        xla.compile(_module("fma_reduce"), "interpreter")
    assert {n.split(".")[1] for n in os.listdir(tmp_path / "b")} == {"fma_reduce"}


def _changed_pass_names(pipeline):
    from xla.service.hlo_pass import HloPassFix, HloPassPipeline
    names = set()
    for p in pipeline.passes:
        inner = p.body if isinstance(p, HloPassFix) else p
        if isinstance(inner, HloPassPipeline):
            names |= _changed_pass_names(inner)
    return names | {name for name, changed, _ in pipeline.run_log if changed}


def test_pass_re_dot_star_follows_only_changing_passes(tmp_path):
    from xla.backends.cpu.compiler import CpuCompiler
    with d.override(xla_dump_to=str(tmp_path), xla_dump_hlo_pass_re=".*"):
        xla.compile(_module("softmax"), "cpu")
    afters = {re.search(r"\.after_(.+)\.before_", n).group(1) for n in os.listdir(tmp_path)
              if re.search(r"\.\d{4}\.", n)}
    # The same pipeline run directly says which passes changed the module.
    pipeline = CpuCompiler().pipeline()
    pipeline.run(_module("softmax"))
    changed = _changed_pass_names(pipeline)
    assert changed and afters - {"pipeline-start"} == changed
    assert "pipeline-start" in afters


def test_pipeline_re_selects_pipelines(tmp_path):
    with d.override(xla_dump_to=str(tmp_path), xla_dump_hlo_pass_re=".*",
                    xla_dump_hlo_pipeline_re="^simplification$"):
        xla.compile(_module("softmax"), "cpu")
    per_pass = [n for n in os.listdir(tmp_path) if re.search(r"\.\d{4}\.", n)]
    assert per_pass and all(".simplification.after_" in n for n in per_pass)
    steps = sorted(int(re.search(r"\.(\d{4})\.", n).group(1)) for n in per_pass)
    assert steps == list(range(len(steps)))


def test_long_module_names_are_dropped_from_file_names(tmp_path):
    m = _module("softmax")
    m.name = "m" * 300
    with d.override(xla_dump_to=str(tmp_path)):
        xla.compile(m, "interpreter")
    names = os.listdir(tmp_path)
    assert sorted(re.sub(r"^module_\d{4}\.", "", n) for n in names) == [
        "before_optimizations.txt", "interpreter_after_optimizations.txt"]


def test_hlo_opt_honours_xla_dump_flags(tmp_path):
    import subprocess
    import sys
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    tool = os.path.join(ROOT, "tools", "hlo_opt.py")
    proc = subprocess.run([sys.executable, tool, "--platform=cpu", f"--xla_dump_to={tmp_path}",
                           "--xla_dump_hlo_pass_re=^fusion$", os.path.join(ROOT, "examples", "fma_reduce.hlo")],
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    suffixes = sorted(n.split(".", 2)[2] for n in os.listdir(tmp_path))
    assert suffixes == ["0000.optimization.after_reduction-dimension-grouper.before_fusion.txt",
                        "0001.optimization.after_fusion.before_dce.txt",
                        "before_optimizations.txt", "cpu_after_optimizations.txt"]
    assert xla.parse_hlo_module((tmp_path / os.listdir(tmp_path)[0]).read_text())


def test_snapshot_records_donated_arguments_as_given(tmp_path):
    from xla.tools import replay
    with d.override(xla_dump_to=str(tmp_path), xla_dump_hlo_snapshots=True):
        f = xla.jit(lambda x, y: x * 2 + y, donate_argnums=0, disk_cache=False)
        x = np.arange(8, dtype=np.float32)
        y = np.ones(8, np.float32)
        out = f(x, y)
    assert out is x   # the donated array received the result
    (snap,) = [n for n in os.listdir(tmp_path) if ".snapshot." in n]
    _, args, outs = replay.read_snapshot(str(tmp_path / snap))
    np.testing.assert_array_equal(args[0], np.arange(8, dtype=np.float32))
    np.testing.assert_array_equal(outs[0], np.arange(8, dtype=np.float32) * 2 + 1)
