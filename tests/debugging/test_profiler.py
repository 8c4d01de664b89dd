"""xla.profiler: a traced run of the MLP training step gives a Chrome trace
with every execution and, nested in it, every instruction with its opcode,
bytes and FLOPs; per-instruction totals; and a timeline page that headless
Chromium draws (the screenshot in docs/debugging.md comes from this test,
with XLA_TEST_SCREENSHOT_DIR=docs/images)."""
import json
import os
import pathlib
import shutil
import subprocess
import sys

import numpy as np

import xla
from test_graph_views_render import read_png

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples"))
import train_mnist  # noqa: E402


def traced_steps(directory, steps=3):
    rng = np.random.default_rng(0)
    params = train_mnist.init_params(rng)
    opt = train_mnist.adam_init(params)
    x = rng.standard_normal((64, 64)).astype(np.float32)
    y = rng.integers(0, 10, 64).astype(np.int32)
    with xla.profiler.trace(str(directory)) as prof:
        step = xla.jit(train_mnist.train_step, disk_cache=False)
        for _ in range(steps):
            params, opt, loss = step(params, opt, x, y)
    return prof, step


def test_trace_has_executions_and_their_instructions(tmp_path):
    prof, step = traced_steps(tmp_path)
    files = list(tmp_path.glob("*.trace.json"))
    assert len(files) == 1 and prof.path == str(files[0])
    trace = json.loads(files[0].read_text())
    events = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    executions = [e for e in events if e["cat"] == "execution"]
    instructions = [e for e in events if e["cat"] == "instruction"]
    assert len(executions) == 3
    module = executions[0]["name"]
    assert module.startswith("jit_train_step")
    names = {i.name for i in step._cache[next(iter(step._cache))].executable.module.entry.instructions}
    assert {e["name"] for e in instructions} <= names
    dots = [e for e in instructions if e["args"]["opcode"] == "dot"]
    assert dots and all(e["args"]["flops"] > 0 and e["args"]["bytes"] > 0 for e in dots)
    for e in instructions:   # nested in an execution span
        assert any(x["ts"] <= e["ts"] and e["ts"] + e["dur"] <= x["ts"] + x["dur"] + 1
                   for x in executions), e
    assert len(instructions) % 3 == 0   # the same instructions each step
    summary = prof.summary()
    assert "GB/s" in summary and "dot" in summary


def test_no_instrumentation_outside_a_trace(tmp_path):
    f = xla.jit(lambda x: np.tanh(x) @ x, disk_cache=False)
    f(np.ones((8, 8), np.float32))
    exe = f._cache[next(iter(f._cache))].executable
    assert "__xla_cpu_profile_begin" not in exe.ir_text
    assert xla.profiler.active() is None


def test_chromium_draws_the_timeline(tmp_path):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    assert chromium, "Debian's chromium is not installed: run `make setup`"
    prof, _ = traced_steps(tmp_path / "trace")
    page = tmp_path / "timeline.html"
    page.write_text(prof.timeline_html())
    shot = tmp_path / "timeline.png"
    proc = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           f"--screenshot={shot}", "--window-size=1200,700", page.as_uri()],
                          capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, HOME=str(tmp_path)))
    assert shot.exists(), proc.stderr[-2000:]
    width, height, rows = read_png(shot)
    counts = {}
    for row in rows:
        for px in row:
            counts[px] = counts.get(px, 0) + 1
    assert counts.get((0x45, 0x5a, 0x64), 0) > 500     # execution bars
    assert counts.get((0xd3, 0x2f, 0x2f), 0) > 20      # dot bars
    assert counts.get((0x19, 0x76, 0xd2), 0) > 20      # fusion bars
    target = os.environ.get("XLA_TEST_SCREENSHOT_DIR")
    if target:
        shutil.copy(shot, pathlib.Path(target) / "profile_timeline.png")


def test_xla_hlo_profile_prints_the_totals_at_exit():
    code = ("import numpy as np, xla\n"
            "f = xla.jit(lambda x, w: np.tanh(x @ w), disk_cache=False)\n"
            "x = np.ones((32, 32), np.float32)\n"
            "for _ in range(4): f(x, x)\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT), XLA_FLAGS="--xla_hlo_profile=true")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert "profile:" in out.stderr and "GB/s" in out.stderr, out.stderr
    dot = [line for line in out.stderr.splitlines() if " dot " in line]
    assert dot and dot[0].split()[2] == "4", out.stderr   # 4 calls
