"""Interpreter handlers: batch-norm-training, batch-norm-inference,
batch-norm-grad, as XLA's operation semantics define them (statistics over
every dimension but ``feature_index``; the variance is the biased one,
divided by the element count N per feature):

* training: ``y = scale * (x - mean) / sqrt(var + epsilon) + offset``,
  returns ``(y, mean, var)``;
* inference: the same ``y`` from the given mean and variance;
* grad: ``grad_offset = sum(dy)``, ``grad_scale = sum(dy * (x - mean)) /
  sqrt(var + epsilon)``, ``grad_x = scale / sqrt(var + epsilon) * (dy -
  grad_offset / N - (x - mean) * sum(dy * (x - mean)) / (N * (var +
  epsilon)))``; returns ``(grad_x, grad_scale, grad_offset)``.

Computed in float64 and rounded once to the operand's type.
"""
import numpy as np

from xla.hlo.evaluator.registry import register


def attribute(instr, name, convert, default):
    """``epsilon`` and ``feature_index`` as numbers (the parser keeps them as text)."""
    value = instr.attr(name)
    if value is None:
        return default
    return convert(getattr(value, "text", value))


def _setup(instr, x):
    f = attribute(instr, "feature_index", int, 0)
    eps = attribute(instr, "epsilon", float, 0.0)
    axes = tuple(d for d in range(x.ndim) if d != f)
    shape = [1] * x.ndim
    shape[f] = x.shape[f]
    return eps, axes, lambda v: np.asarray(v, np.float64).reshape(shape)


def _f64(v):
    return np.asarray(v).astype(np.float64)


@register("batch-norm-training")
def batch_norm_training(instr, operands, ctx):
    x, scale, offset = (_f64(v) for v in operands)
    eps, axes, feature = _setup(instr, x)
    mean = x.mean(axis=axes)
    var = np.square(x - feature(mean)).mean(axis=axes)
    y = feature(scale) * (x - feature(mean)) / np.sqrt(feature(var) + eps) + feature(offset)
    dtype = np.asarray(operands[0]).dtype
    return y.astype(dtype), mean.astype(dtype), var.astype(dtype)


@register("batch-norm-inference")
def batch_norm_inference(instr, operands, ctx):
    x, scale, offset, mean, var = (_f64(v) for v in operands)
    eps, _, feature = _setup(instr, x)
    y = feature(scale) * (x - feature(mean)) / np.sqrt(feature(var) + eps) + feature(offset)
    return y.astype(np.asarray(operands[0]).dtype)


@register("batch-norm-grad")
def batch_norm_grad(instr, operands, ctx):
    x, scale, mean, var, dy = (_f64(v) for v in operands)
    eps, axes, feature = _setup(instr, x)
    n = x.size // max(x.shape[attribute(instr, "feature_index", int, 0)], 1) if x.size else 1
    centered = x - feature(mean)
    grad_offset = dy.sum(axis=axes)
    sum_dy_c = (dy * centered).sum(axis=axes)
    inv = 1.0 / np.sqrt(var + eps)
    grad_scale = sum_dy_c * inv
    grad_x = feature(scale * inv) * (dy - feature(grad_offset / n)
                                     - centered * feature(sum_dy_c / (n * (var + eps))))
    dtype = np.asarray(operands[0]).dtype
    return grad_x.astype(dtype), grad_scale.astype(dtype), grad_offset.astype(dtype)
