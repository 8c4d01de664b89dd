"""examples/train_mnist.py: the whole training step compiles once and learns."""
import os
import re
import subprocess
import sys

import numpy as np

import xla

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "examples"))
import train_mnist  # noqa: E402


def test_loss_decreases_and_step_compiles_once():
    rng = np.random.default_rng(0)
    prototypes = (rng.random((10, 8, 8)) > 0.6).astype(np.float32)
    x, y = train_mnist.make_digits(512, rng, prototypes)
    params = train_mnist.init_params(rng)
    opt = train_mnist.adam_init(params)
    step = xla.jit(train_mnist.train_step)
    losses = []
    for _ in range(3):
        for i in range(0, 512, 64):
            params, opt, loss = step(params, opt, x[i:i + 64], y[i:i + 64])
            losses.append(float(loss))
    assert step.cache_info().compilations == 1
    assert losses[-1] < 0.5 * losses[0]
    # The compiled step equals the same step traced op by op with the interpreter.
    p0 = train_mnist.init_params(np.random.default_rng(1))
    o0 = train_mnist.adam_init(p0)
    a = xla.jit(train_mnist.train_step)(p0, o0, x[:64], y[:64])
    b = xla.jit(train_mnist.train_step, backend="interpreter")(p0, o0, x[:64], y[:64])
    for k in p0:
        np.testing.assert_allclose(a[0][k], b[0][k], rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(a[2], b[2], rtol=1e-5)


def test_gradient_of_the_loss_matches_finite_differences():
    rng = np.random.default_rng(2)
    prototypes = (rng.random((10, 8, 8)) > 0.6).astype(np.float32)
    x, y = train_mnist.make_digits(16, rng, prototypes)
    params = {k: v.astype(np.float64) for k, v in train_mnist.init_params(rng).items()}
    x = x.astype(np.float64)
    grads = xla.grad(train_mnist.loss_fn)(params, x, y)
    loss = xla.jit(train_mnist.loss_fn)
    eps = 1e-6
    for k in ("w2", "b1"):
        flat = params[k].reshape(-1)
        for j in rng.choice(flat.size, 5, replace=False):
            plus = {kk: v.copy() for kk, v in params.items()}
            minus = {kk: v.copy() for kk, v in params.items()}
            plus[k].reshape(-1)[j] += eps
            minus[k].reshape(-1)[j] -= eps
            fd = (loss(plus, x, y) - loss(minus, x, y)) / (2 * eps)
            np.testing.assert_allclose(grads[k].reshape(-1)[j], fd, rtol=1e-5, atol=1e-8)


def test_script_prints_losses_and_accuracy():
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "train_mnist.py"), "--epochs", "2"],
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    losses = [float(v) for v in re.findall(r"epoch \d+: loss (\d+\.\d+)", proc.stdout)]
    assert len(losses) == 2 and losses[1] < losses[0]
    acc = float(re.search(r"test accuracy (\d\.\d+)", proc.stdout).group(1))
    assert acc > 0.8
