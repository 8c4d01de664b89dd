"""The wheel (tools/build_wheel.py, `bazel build //:wheel`) installs into a
fresh virtual environment outside the repository, and xla.jit,
replay_computation and hlo_opt run from there. The environment gets the
wheel with pip (no index, no network) and its dependencies from this
interpreter's site-packages through a .pth line (which, unlike a site
directory, does not run this checkout's own .pth)."""
import os
import pathlib
import subprocess
import sys
import zipfile

import numpy

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import build_wheel  # noqa: E402


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env.update(extra)
    return env


def test_the_wheel_installs_and_runs_outside_the_repository(tmp_path):
    wheel = pathlib.Path(build_wheel.build(str(ROOT), str(tmp_path / "dist")))
    names = zipfile.ZipFile(wheel).namelist()
    assert any(n.startswith("xla/_core") and n.endswith(".so") for n in names)
    assert "xla/xla_flag_names.txt" in names and "xla/_cli/replay_computation.py" in names
    entry_points = zipfile.ZipFile(wheel).read(
        next(n for n in names if n.endswith("entry_points.txt"))).decode()
    assert "replay_computation = xla._cli.replay_computation:run" in entry_points

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300,
                   env=clean_env())
    py = venv / "bin" / "python"
    site = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True, env=clean_env()).stdout.strip()
    deps = os.path.dirname(os.path.dirname(numpy.__file__))
    pathlib.Path(site, "deps_from_test.pth").write_text(deps + "\n")
    subprocess.run([str(py), "-m", "pip", "install", "--no-deps", "--no-index", "-q", str(wheel)],
                   check=True, timeout=300, env=clean_env())

    work = tmp_path / "elsewhere"
    work.mkdir()
    code = ("import xla, numpy as np\n"
            "f = xla.jit(lambda x, y: np.sum(x + y * 2))\n"
            "print(xla.__file__)\n"
            "print(float(f(np.ones(8, np.float32), np.ones(8, np.float32))))\n")
    out = subprocess.run([str(py), "-c", code], cwd=work, capture_output=True, text=True,
                         timeout=300, env=clean_env(XLA_PY_DISK_CACHE="0"))
    assert out.returncode == 0, out.stderr
    where, value = out.stdout.splitlines()
    assert where.startswith(str(venv)) and float(value) == 24.0

    module = work / "m.hlo"
    module.write_text("HloModule m\nENTRY e {\n  x = f32[4] parameter(0)\n"
                      "  ROOT y = f32[4] add(x, x)\n}\n")
    for tool, args, expect in (("replay_computation", ["--platform=cpu"], "1 result(s) on cpu"),
                               ("hlo_opt", ["--platform=cpu"], "f32[4]{0} add(")):
        run = subprocess.run([str(venv / "bin" / tool), *args, str(module)], cwd=work,
                             capture_output=True, text=True, timeout=300,
                             env=clean_env(XLA_PY_DISK_CACHE="0"))
        assert run.returncode == 0, (tool, run.stderr)
        assert expect in run.stdout, (tool, run.stdout)
