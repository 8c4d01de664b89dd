"""The modules in examples/ (what `make demo` runs) give NumPy's answers."""
import os
import subprocess
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(ROOT, "examples")
TOOL = os.path.join(ROOT, "tools", "replay_computation.py")


def replay(tmp_path, name, *args):
    """Runs examples/NAME.hlo on the interpreter with `args`; returns its outputs."""
    inputs, output = tmp_path / "in.npz", tmp_path / "out.npz"
    np.savez(inputs, **{f"arg{i}": a for i, a in enumerate(args)})
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, TOOL, "--platform=interpreter", f"--args={inputs}",
                           f"--output={output}", os.path.join(EXAMPLES, name + ".hlo")],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    with np.load(output) as result:
        return [result[f"out{i}"] for i in range(len(result.files))]


def test_every_example_is_checked():
    names = sorted(f[:-len(".hlo")] for f in os.listdir(EXAMPLES) if f.endswith(".hlo"))
    assert names == ["dense_relu", "fma_reduce", "softmax"]


def test_fma_reduce(tmp_path):
    rng = np.random.default_rng(0)
    x, y, z = (rng.standard_normal(8).astype(np.float32) for _ in range(3))
    (total,) = replay(tmp_path, "fma_reduce", x, y, z)
    assert total.shape == () and total.dtype == np.float32
    np.testing.assert_allclose(total, np.sum(x + y * z), rtol=1e-5)


def test_dense_relu(tmp_path):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 3)).astype(np.float32)
    w = rng.standard_normal((3, 2)).astype(np.float32)
    b = rng.standard_normal(2).astype(np.float32)
    (out,) = replay(tmp_path, "dense_relu", x, w, b)
    np.testing.assert_allclose(out, np.maximum(x @ w + b, 0), rtol=1e-5, atol=1e-6)


def test_softmax(tmp_path):
    x = np.array([[1, 2, 3, 4, 5], [1000, 0, -1000, 3, 3]], np.float32)
    (out,) = replay(tmp_path, "softmax", x)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)
    assert np.isfinite(out).all()
