"""Trains a small classifier with the whole step under xla.jit.

The data are synthetic 8x8 "digits": each of the 10 classes is a random
stroke pattern, and samples are that pattern shifted by up to a pixel, with
noise (made here, no downloads). The model is an MLP 64 -> 128 -> 10 with
softmax cross-entropy; the training step (loss, gradients via xla.grad,
Adam update) is one compiled function. Prints the loss per epoch and the
final test accuracy; ``--steps N`` limits the run (the test uses it).
"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import xla  # noqa: E402


def make_digits(n, rng, prototypes):
    labels = rng.integers(0, 10, n)
    images = prototypes[labels]
    shifts = rng.integers(-1, 2, (n, 2))
    images = np.stack([np.roll(img, tuple(s), axis=(0, 1)) for img, s in zip(images, shifts)])
    images = images + 0.3 * rng.standard_normal(images.shape)
    return images.reshape(n, 64).astype(np.float32), labels.astype(np.int32)


def init_params(rng):
    return {
        "w1": (rng.standard_normal((64, 128)) / 8).astype(np.float32),
        "b1": np.zeros(128, np.float32),
        "w2": (rng.standard_normal((128, 10)) / 11).astype(np.float32),
        "b2": np.zeros(10, np.float32),
    }


def logits_fn(params, x):
    h = np.maximum(x @ params["w1"] + params["b1"], 0)
    return h @ params["w2"] + params["b2"]


def loss_fn(params, x, y):
    logits = logits_fn(params, x)
    m = np.max(logits, axis=1, keepdims=True)
    log_probs = logits - m - np.log(np.sum(np.exp(logits - m), axis=1, keepdims=True))
    return -np.mean(log_probs[np.arange(x.shape[0]), y])


def adam_init(params):
    zeros = {k: np.zeros_like(v) for k, v in params.items()}
    return {"m": zeros, "v": {k: np.zeros_like(v) for k, v in params.items()}, "t": np.float32(0)}


def train_step(params, opt, x, y, lr=np.float32(1e-2)):
    """One whole training step: loss, gradients and the Adam update."""
    loss, grads = xla.value_and_grad(loss_fn)(params, x, y)
    new_params, new_opt = adam_update(params, opt, grads, lr)
    return new_params, new_opt, loss


def adam_update(params, opt, grads, lr=np.float32(1e-2)):
    t = opt["t"] + 1
    b1, b2, eps = np.float32(0.9), np.float32(0.999), np.float32(1e-8)
    new_params, m, v = {}, {}, {}
    for k in params:
        m[k] = b1 * opt["m"][k] + (1 - b1) * grads[k]
        v[k] = b2 * opt["v"][k] + (1 - b2) * grads[k] * grads[k]
        m_hat = m[k] / (1 - b1 ** t)
        v_hat = v[k] / (1 - b2 ** t)
        new_params[k] = params[k] - lr * m_hat / (np.sqrt(v_hat) + eps)
    return new_params, {"m": m, "v": v, "t": t}


def accuracy(params, x, y):
    return float(np.mean(np.argmax(logits_fn(params, x), axis=1) == y))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--steps", type=int, default=None, help="stop after this many steps")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    prototypes = (rng.random((10, 8, 8)) > 0.6).astype(np.float32)
    x_train, y_train = make_digits(4096, rng, prototypes)
    x_test, y_test = make_digits(1024, rng, prototypes)
    params, opt = init_params(rng), None
    opt = adam_init(params)
    step = xla.jit(train_step)
    steps = 0
    start = time.perf_counter()
    for epoch in range(args.epochs):
        order = rng.permutation(len(x_train))
        losses = []
        for i in range(0, len(order) - args.batch + 1, args.batch):
            idx = order[i:i + args.batch]
            params, opt, loss = step(params, opt, x_train[idx], y_train[idx])
            losses.append(float(loss))
            steps += 1
            if args.steps is not None and steps >= args.steps:
                break
        print(f"epoch {epoch + 1}: loss {np.mean(losses):.4f} (first {losses[0]:.4f}, last {losses[-1]:.4f})")
        if args.steps is not None and steps >= args.steps:
            break
    elapsed = time.perf_counter() - start
    print(f"{steps} steps in {elapsed:.2f} s ({step.cache_info().compilations} compilation)")
    print(f"test accuracy {accuracy(params, x_test, y_test):.3f}")


if __name__ == "__main__":
    main()
