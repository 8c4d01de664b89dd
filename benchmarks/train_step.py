"""Training-step time: examples/train_mnist.py's step under xla.jit vs the
same step written by hand in NumPy (manual backprop), and vs jax.jit where
jax is installed. Prints ms per step and ratios; nothing is asserted.

    PYTHONPATH=. python benchmarks/train_step.py [--batch 128] [--repeats 50]
"""
import argparse
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "examples"))
import xla  # noqa: E402
import train_mnist  # noqa: E402


def numpy_step(params, opt, x, y, lr=np.float32(1e-2)):
    """The same step with the gradients derived by hand."""
    n = x.shape[0]
    pre = x @ params["w1"] + params["b1"]
    h = np.maximum(pre, 0)
    logits = h @ params["w2"] + params["b2"]
    m = logits.max(axis=1, keepdims=True)
    e = np.exp(logits - m)
    s = e.sum(axis=1, keepdims=True)
    loss = -np.mean((logits - m - np.log(s))[np.arange(n), y])
    d_logits = e / s
    d_logits[np.arange(n), y] -= 1
    d_logits /= n
    grads = {"w2": h.T @ d_logits, "b2": d_logits.sum(axis=0)}
    d_h = d_logits @ params["w2"].T
    d_pre = d_h * (pre > 0)
    grads["w1"] = x.T @ d_pre
    grads["b1"] = d_pre.sum(axis=0)
    t = opt["t"] + 1
    b1, b2, eps = np.float32(0.9), np.float32(0.999), np.float32(1e-8)
    new, mm, vv = {}, {}, {}
    for k in params:
        mm[k] = b1 * opt["m"][k] + (1 - b1) * grads[k]
        vv[k] = b2 * opt["v"][k] + (1 - b2) * grads[k] * grads[k]
        new[k] = params[k] - lr * (mm[k] / (1 - b1 ** t)) / (np.sqrt(vv[k] / (1 - b2 ** t)) + eps)
    return new, {"m": mm, "v": vv, "t": t}, loss


def timed(step, params, opt, x, y, repeats):
    step(params, opt, x, y)   # compile / warm up
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        out = step(params, opt, x, y)
        np.asarray(out[2])
        times.append(time.perf_counter() - t)
    return float(np.median(times))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=50)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    prototypes = (rng.random((10, 8, 8)) > 0.6).astype(np.float32)
    x, y = train_mnist.make_digits(args.batch, rng, prototypes)
    params = train_mnist.init_params(rng)
    opt = train_mnist.adam_init(params)
    # The hand-written step computes what the compiled one does.
    a = xla.jit(train_mnist.train_step)(params, opt, x, y)
    b = numpy_step(params, opt, x, y)
    for k in params:
        np.testing.assert_allclose(a[0][k], b[0][k], rtol=1e-3, atol=1e-5)
    results = {"numpy (hand-written backprop)": timed(numpy_step, params, opt, x, y, args.repeats),
               "xla.jit": timed(xla.jit(train_mnist.train_step), params, opt, x, y, args.repeats)}
    try:
        import jax
        import jax.numpy as jnp

        def jax_loss(p, x, y):
            h = jnp.maximum(x @ p["w1"] + p["b1"], 0)
            logits = h @ p["w2"] + p["b2"]
            return -jnp.mean(jax.nn.log_softmax(logits)[jnp.arange(x.shape[0]), y])

        @jax.jit
        def jax_step(p, o, x, y):
            loss, g = jax.value_and_grad(jax_loss)(p, x, y)
            t = o["t"] + 1
            m = {k: 0.9 * o["m"][k] + 0.1 * g[k] for k in p}
            v = {k: 0.999 * o["v"][k] + 0.001 * g[k] * g[k] for k in p}
            new = {k: p[k] - 1e-2 * (m[k] / (1 - 0.9 ** t)) / (jnp.sqrt(v[k] / (1 - 0.999 ** t)) + 1e-8)
                   for k in p}
            return new, {"m": m, "v": v, "t": t}, loss

        results["jax.jit"] = timed(jax_step, params, opt, x, y, args.repeats)
    except ImportError:
        pass
    base = results["xla.jit"]
    print(f"training step, MLP 64->128->10, batch {args.batch} (median of {args.repeats})")
    for name, t in results.items():
        print(f"  {name:32s} {t * 1e3:8.3f} ms   xla.jit speedup {t / base:5.2f}x")


if __name__ == "__main__":
    main()
