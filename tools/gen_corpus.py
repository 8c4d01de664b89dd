#!/usr/bin/env python3
"""Generate the HLO test corpus in tests/corpus/ from small JAX programs.

This script needs JAX and is run by hand; JAX is not a dependency of the
project.  Typical use:

    python3 -m venv /tmp/jaxenv
    /tmp/jaxenv/bin/pip install jax jaxlib ml_dtypes
    /tmp/jaxenv/bin/python tools/gen_corpus.py --overwrite [--out tests/corpus] [--only NAME,...]

For each program NAME in the PROGRAMS table it writes

    NAME.hlo            unoptimized module, XLA's `*.before_optimizations.txt` dump
    NAME.optimized.hlo  XLA:CPU's optimized module, `*.cpu_after_optimizations.txt`
    NAME.npz            inputs arg0..argN (entry parameter order) and outputs
                        out0..outM (result tuple leaves, flattened in order)

plus MANIFEST.json and README.md describing the whole corpus.  With --only the
existing manifest is updated in place for the named programs.

Programs come in three kinds (the `source` field of the manifest):
  jax           jax.jit(fn).lower(*args) compiled for CPU (the normal case);
  jax-tpu-lower the same function lowered for the TPU platform (so that JAX
                emits generic HLO ops such as `cholesky` instead of LAPACK
                custom-calls) and then compiled by XLA:CPU;
  handwritten   an HLO text written here for ops JAX never emits (`map`, nested
                tuple results); NAME.hlo is XLA's own re-printing of that text
                after parsing, and it is compiled through StableHLO.
"""

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import zlib
from collections import namedtuple
import functools

# XLA reads XLA_FLAGS once, when the first backend is created, so the dump
# directory must be configured before jax is imported.
_DUMP_DIR = tempfile.mkdtemp(prefix="hlo_corpus_dump_")
os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                           f" --xla_dump_to={_DUMP_DIR} --xla_dump_hlo_as_text").strip()
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import numpy as np  # noqa: E402
import ml_dtypes  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import jaxlib  # noqa: E402
from jax import lax  # noqa: E402
from jax._src.lib import xla_client as xc  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_OUT = os.path.join(REPO, "tests", "corpus")


# ----------------------------------------------------------------------------
# Input builders.  Each program gets a RandomState seeded from its name, so a
# program's inputs do not depend on which other programs are generated.
# ----------------------------------------------------------------------------

class Gen:
    """Deterministic small test inputs."""

    def __init__(self, name):
        self.r = np.random.RandomState(zlib.crc32(name.encode()) & 0x7FFFFFFF)

    def f(self, *shape, lo=-1.0, hi=1.0, dtype=np.float32):
        """Uniform floats in [lo, hi)."""
        return self.r.uniform(lo, hi, size=shape).astype(dtype)

    def n(self, *shape, scale=1.0, dtype=np.float32):
        """Normal floats."""
        return (self.r.randn(*shape) * scale).astype(dtype)

    def pos(self, *shape, lo=0.1, hi=3.0, dtype=np.float32):
        """Strictly positive floats (for log, sqrt, pow, ...)."""
        return self.r.uniform(lo, hi, size=shape).astype(dtype)

    def i(self, lo, hi, *shape, dtype=np.int32):
        """Integers in [lo, hi)."""
        return self.r.randint(lo, hi, size=shape, dtype=np.int64).astype(dtype)

    def full_range(self, dtype, *shape):
        """Integers spanning the whole range of `dtype`, including its extremes."""
        info = np.iinfo(dtype)
        halves = self.r.randint(0, 2**32, size=shape + (2,), dtype=np.uint64)
        bits = (halves[..., 0] << np.uint64(32)) | halves[..., 1]
        flat = bits.astype(dtype).reshape(-1)  # keeps the low bits
        edges = np.array([info.min, info.max, 0, 1, info.max // 2 + 1], dtype=dtype)
        flat[:len(edges)] = edges[:flat.size]
        return flat.reshape(shape)

    def spd(self, n, dtype=np.float32):
        """A well-conditioned symmetric positive definite matrix."""
        a = self.r.randn(n, n)
        return (a @ a.T + n * np.eye(n)).astype(dtype)

    def perm(self, n, dtype=np.int32):
        return self.r.permutation(n).astype(dtype)


F32_SPECIALS = np.array([np.nan, -np.inf, np.inf, -0.0, 0.0, 1.0, -1.0, 2.5,
                         -2.5, 0.5, -0.5, 1e-30], np.float32)


# ----------------------------------------------------------------------------
# Programs.  Each is a plain function of positional (pytree) arguments.
# ----------------------------------------------------------------------------

# -- models -------------------------------------------------------------------

def _mlp_loss(params, x, y):
    h = jnp.tanh(x @ params["w1"] + params["b1"])
    out = h @ params["w2"] + params["b2"]
    return jnp.mean((out - y) ** 2)


def mlp_train_step(params, x, y):
    loss, grads = jax.value_and_grad(_mlp_loss)(params, x, y)
    new_params = jax.tree_util.tree_map(lambda p, g: p - 0.1 * g, params, grads)
    return new_params, loss


def attention(q, k, v):
    scores = jnp.einsum("hqd,hkd->hqk", q, k) / np.sqrt(q.shape[-1]).astype(np.float32)
    return jnp.einsum("hqk,hkd->hqd", jax.nn.softmax(scores, axis=-1), v)


def layernorm(x, gamma, beta):
    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean((x - mean) ** 2, axis=-1, keepdims=True)
    return (x - mean) * lax.rsqrt(var + 1e-5) * gamma + beta


def linear_tuple(x, w, b):
    y = x @ w + b
    return y, jnp.maximum(y, 0.0)


# -- convolutions -----------------------------------------------------------

def _conv(x, w, dn, **kw):
    kw.setdefault("window_strides", (1,) * (x.ndim - 2))
    kw.setdefault("padding", "VALID")
    return lax.conv_general_dilated(x, w, dimension_numbers=dn, **kw)


def conv_grad(x, w):
    def loss(x, w):
        y = _conv(x, w, ("NCHW", "OIHW", "NCHW"), window_strides=(2, 1),
                  padding=((1, 1), (0, 1)), feature_group_count=2)
        return jnp.sum(y * y)
    return jax.grad(loss, argnums=(0, 1))(x, w)


# -- control flow -------------------------------------------------------------

def scan_rnn(h0, xs, w, u):
    def step(h, x):
        h = jnp.tanh(h @ w + x @ u)
        return h, h.sum()
    return lax.scan(step, h0, xs)


def while_newton_sqrt(a):
    def cond(c):
        i, x = c
        return (i < 50) & (jnp.max(jnp.abs(x * x - a)) > 1e-4)

    def body(c):
        i, x = c
        return i + 1, 0.5 * (x + a / x)
    return lax.while_loop(cond, body, (jnp.int32(0), jnp.ones_like(a)))


def while_collatz(n):
    def body(c):
        n, steps = c
        return jnp.where(n % 2 == 0, n // 2, 3 * n + 1), steps + 1
    return lax.while_loop(lambda c: c[0] != 1, body, (n, jnp.int32(0)))


def fori_loops(x, n):
    static = lax.fori_loop(0, 4, lambda i, acc: acc * 0.5 + i, x)
    dynamic = lax.fori_loop(0, n, lambda i, acc: acc + jnp.sin(acc) * i, x)
    return static, dynamic


def cond_pred(x, y):
    return lax.cond(jnp.sum(x) > jnp.sum(y),
                    lambda a, b: (jnp.sin(a) + b, a.sum()),
                    lambda a, b: (a * b, -b.sum()), x, y)


def switch_index(i, j, x):
    branches = [lambda v: v + 1.0, lambda v: jnp.exp(v), lambda v: v * v]
    # j is out of range: lax.switch clamps the index.
    return lax.switch(i, branches, x), lax.switch(j, branches, x)


def lax_map_rows(xs):
    return lax.map(lambda row: jnp.cumsum(row) * jnp.max(row), xs)


@jax.jit
def _inner_jit(x):
    return jnp.sin(x) * 2.0 + 1.0


def nested_jit_call(x):
    return _inner_jit(x) + _inner_jit(x * 3.0)


def remat_grad(x):
    f = jax.checkpoint(lambda v: jnp.sum(jnp.sin(jnp.cos(v)) ** 2))
    return jax.grad(f)(x)


def optimization_barrier(x, y):
    a, b = lax.optimization_barrier((x * 2.0, y + 1.0))
    return a + b, lax.optimization_barrier(a - b)


def tokens_after_all(x):
    t = lax.after_all(lax.create_token(), lax.create_token())
    return t, x + 1.0


# -- gather / scatter / sort -------------------------------------------------------

def gather_ops(x, idx, idx2d, clip_idx):
    return (x[idx],                    # row gather (negative index wraps)
            x[:, idx[:2]],              # column gather
            x[idx, idx[::-1] % 4],      # point gather
            jnp.take_along_axis(x, idx2d, axis=1),
            jnp.take(x, clip_idx, axis=0, mode="clip"),
            x[2])                       # static index -> slice/reshape


def scatter_ops(x, idx, upd, uniq):
    return (x.at[idx].add(upd),         # duplicates accumulate; 7 is dropped
            x.at[uniq].set(upd[:3]),
            x.at[idx].max(upd),
            x.at[idx].min(upd),
            x.at[uniq].multiply(upd[:3]),
            x.at[uniq, 1].add(10.0))


def sort_ops(x, ints):
    keys_sorted, vals_sorted = lax.sort((x, jnp.arange(x.shape[0], dtype=jnp.int32)),
                                        num_keys=1, is_stable=True)
    return (jnp.sort(x),                # float total order: -nan<-inf<...<-0<0<...<nan
            jnp.argsort(x, stable=True),
            keys_sorted, vals_sorted,
            jnp.sort(ints),
            jnp.sort(ints.reshape(3, 4), axis=0),
            jnp.argsort(-ints, stable=True))


def sort_multi_key(k1, k2, v):
    return lax.sort((k1, k2, v), num_keys=2, is_stable=True)


def top_k(x):
    return lax.top_k(x, 4)


def argmax_argmin(x):
    return (jnp.argmax(x, axis=1), jnp.argmin(x, axis=1), jnp.argmax(x, axis=0),
            jnp.argmin(x.reshape(-1)))


# -- reductions / windows ----------------------------------------------------

def reductions(x, ints, mask):
    return (jnp.sum(x), jnp.sum(x, axis=0), jnp.prod(x, axis=1), jnp.max(x, axis=(0, 2)),
            jnp.min(x, axis=2), jnp.mean(x, axis=1),
            jax.nn.logsumexp(x, axis=-1), jnp.sum(ints, axis=1), jnp.max(ints),
            jnp.all(mask, axis=1), jnp.any(mask, axis=0))


def cumulative(x, ints):
    return (jnp.cumsum(x, axis=1), jnp.cumprod(x, axis=0), lax.cummax(x, axis=1),
            lax.cummin(x, axis=0), lax.cumsum(x, axis=1, reverse=True),
            jnp.cumsum(ints, axis=0), lax.cumlogsumexp(x, axis=1))


def pooling(x):
    maxpool = lax.reduce_window(x, -jnp.inf, lax.max, (1, 3, 3, 1), (1, 2, 2, 1), "SAME")
    sums = lax.reduce_window(x, 0.0, lax.add, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
    dilated = lax.reduce_window(x, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 1, 1, 1),
                                ((0, 0), (1, 0), (0, 1), (0, 0)),
                                base_dilation=(1, 2, 1, 1), window_dilation=(1, 1, 2, 1))
    return maxpool, sums / 4.0, dilated


def maxpool_grad(x):
    def loss(x):
        y = lax.reduce_window(x, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "SAME")
        return jnp.sum(y * jnp.arange(y.size, dtype=y.dtype).reshape(y.shape))
    return jax.grad(loss)(x)


# -- data movement -------------------------------------------------------------

def pad_ops(x):
    return (lax.pad(x, np.float32(0.5), ((1, -1, 1), (-2, 3, 2))),
            lax.pad(x, np.float32(0.0), ((2, 0, 0), (0, 0, 1))),
            jnp.pad(x, ((1, 1), (2, 2)), mode="edge"))


def slice_reverse_concat(x, y):
    return (x[1:7:2, ::3],
            lax.slice(x, (0, 1), (5, 6), (3, 2)),
            lax.rev(x, (0,)), lax.rev(x, (0, 1)),
            jnp.concatenate([x, y], axis=0),
            jnp.concatenate([x[:3, :2], y[:, :1], x[:3, 4:]], axis=1))


def dynamic_slicing(x, starts, upd):
    i, j = starts[0], starts[1]
    return (lax.dynamic_slice(x, (i, j), (2, 3)),             # in range
            lax.dynamic_slice(x, (j * 10, i), (3, 2)),         # clamps
            lax.dynamic_slice(x, (-1 * i - 1, j), (2, 2)),     # negative: wraps in JAX
            lax.dynamic_update_slice(x, upd, (i, j)),
            lax.dynamic_update_slice(x, upd, (i + 100, j - 100)),  # clamps
            lax.dynamic_index_in_dim(x, i + 1, axis=1, keepdims=False))


def clamp_select_iota(x, lo_hi, pred):
    lo, hi = lo_hi[0], lo_hi[1]
    iota = lax.broadcasted_iota(jnp.int32, (4, 6), 1)
    return (lax.clamp(lo, x, hi),
            lax.clamp(jnp.full_like(x, -0.25), x, jnp.full_like(x, 0.25)),
            lax.select(pred, x, -x),
            jnp.where(x > 0, x, 0.0),
            iota,
            lax.iota(jnp.float32, 5),
            lax.broadcast_in_dim(x[:, 0], (4, 3, 6), (0,)),
            lax.broadcast(lo, (2, 3)))


def shape_ops(x):
    return (jnp.transpose(x, (2, 0, 1)),
            x.reshape(4, 6),
            x.reshape(-1),
            jnp.expand_dims(x, 1),
            jnp.squeeze(x[:, :1, :], 1),
            jnp.swapaxes(x, 0, 2).reshape(4, 3, 2) + 1.0,
            jnp.tile(x[0], (2, 1)))


def bitcast_convert(x, ints, bytes4):
    return (lax.bitcast_convert_type(x, jnp.int32),
            lax.bitcast_convert_type(ints, jnp.float32),
            lax.bitcast_convert_type(x, jnp.uint8),          # adds a minor dim of 4
            lax.bitcast_convert_type(bytes4, jnp.float32),   # removes it
            lax.bitcast_convert_type(x.astype(jnp.float16), jnp.int16),
            lax.bitcast_convert_type(ints, jnp.uint32))


def convert_types(x, ints, mask):
    return (x.astype(jnp.int32), (jnp.abs(x) * 80).astype(jnp.uint8), x.astype(jnp.float16),
            x.astype(jnp.bfloat16), x.astype(jnp.bool_), ints.astype(jnp.float32),
            ints.astype(jnp.uint8), ints.astype(jnp.int8), ints.astype(jnp.uint32),
            mask.astype(jnp.float32), mask.astype(jnp.int32))


def convert_edge(x):
    # NaN / inf / out-of-range float -> int conversions (XLA:CPU saturates).
    return (x.astype(jnp.int32), x.astype(jnp.uint32), x.astype(jnp.int8),
            x.astype(jnp.uint8), x.astype(jnp.float16), x.astype(jnp.bfloat16))


def float8_convert(x):
    a = x.astype(jnp.float8_e4m3fn)
    b = x.astype(jnp.float8_e5m2)
    return a.astype(jnp.float32), b.astype(jnp.float32), (a.astype(jnp.float32) *
                                                          b.astype(jnp.float32))


# -- elementwise math ---------------------------------------------------------

def unary_math(x, p):
    return (jnp.abs(x), -x, jnp.sign(x), jnp.exp(x), jnp.expm1(x), jnp.log(p),
            jnp.log1p(p), jnp.sqrt(p), lax.rsqrt(p), jnp.cbrt(x), jnp.tanh(x),
            jax.nn.sigmoid(x), jnp.sin(x), jnp.cos(x), jnp.tan(x), lax.erf(x),
            jnp.floor(x), jnp.ceil(x))


def rounding(x):
    return (lax.round(x, lax.RoundingMethod.AWAY_FROM_ZERO),
            lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN),
            jnp.floor(x), jnp.ceil(x), jnp.trunc(x))


def binary_math(x, y, p):
    return (x + y, x - y, x * y, x / y, jnp.arctan2(x, y), jnp.power(p, y),
            lax.pow(p, 3), x ** 2, lax.integer_pow(x, 5), lax.rem(x * 5.0, y),
            jnp.maximum(x, y), jnp.minimum(x, y), lax.nextafter(x, y),
            jnp.fmod(x * 5.0, y), jnp.hypot(x, y))


def float_specials(x, y):
    # Deliberate NaN/inf/-0 inputs: max/min propagate NaN, compares with NaN
    # are false (except NE), sign(-0) is -0, is_finite, etc.
    return (jnp.maximum(x, y), jnp.minimum(x, y), lax.is_finite(x), jnp.sign(x),
            jnp.abs(x), x + y, x * y, lax.rem(x, y), jnp.isnan(x),
            lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN))


def compare_all(x, y, a, b, u, v):
    out = []
    for p, q in ((x, y), (a, b), (u, v)):
        out += [p == q, p != q, p < q, p <= q, p > q, p >= q]
    return tuple(out)


def reduce_precision(x):
    return (lax.reduce_precision(x, exponent_bits=8, mantissa_bits=7),
            lax.reduce_precision(x, exponent_bits=5, mantissa_bits=10),
            lax.reduce_precision(x, exponent_bits=4, mantissa_bits=3))


# -- integers --------------------------------------------------------------------

def int_wraparound(a8, b8, a16, b16, a32, b32, au8, bu8, au32, bu32):
    out = []
    for a, b in ((a8, b8), (a16, b16), (a32, b32), (au8, bu8), (au32, bu32)):
        out += [a + b, a - b, a * b, -a, jnp.abs(a) if a.dtype.kind == "i" else a,
                jnp.maximum(a, b), jnp.minimum(a, b)]
    return tuple(out)


def int_divrem(a, b, ua, ub, a8, b8):
    # lax.div truncates toward zero; lax.rem takes the sign of the dividend.
    # b contains 0 and a contains INT_MIN with a -1 divisor: XLA defines
    # x/0 = -1 (all ones), x%0 = x, INT_MIN/-1 = INT_MIN, INT_MIN%-1 = 0.
    return (lax.div(a, b), lax.rem(a, b), lax.div(ua, ub), lax.rem(ua, ub),
            lax.div(a8, b8), lax.rem(a8, b8), a // jnp.where(b == 0, 1, b),
            a % jnp.where(b == 0, 1, b))


def int_shifts(a, s, ua, us, a8, s8):
    # Shift amounts include 0, bitwidth-1, bitwidth, bitwidth+1 and negatives.
    return (lax.shift_left(a, s), lax.shift_right_arithmetic(a, s),
            lax.shift_right_logical(a, s), lax.shift_left(ua, us),
            lax.shift_right_logical(ua, us), lax.shift_right_arithmetic(ua, us),
            lax.shift_left(a8, s8), lax.shift_right_arithmetic(a8, s8),
            lax.shift_right_logical(a8, s8))


def bitwise_ops(a, b, ua, ub, u8, m1, m2, u16):
    return (a & b, a | b, a ^ b, ~a, ua & ub, ua | ub, ua ^ ub, ~ua, ~u8,
            m1 & m2, m1 | m2, m1 ^ m2, ~m1,
            lax.population_count(a), lax.population_count(ua), lax.population_count(u8),
            lax.clz(a), lax.clz(ua), lax.clz(u16), lax.clz(u8))


def int64_ops(a, b, ua, ub, s):
    return (a + b, a * b, a - b, lax.div(a, b), lax.rem(a, b), ua * ub, ua + ub,
            lax.div(ua, ub), lax.shift_left(a, s), lax.shift_right_arithmetic(a, s),
            lax.shift_right_logical(ua, s.astype(jnp.uint64)), lax.population_count(a),
            lax.clz(ua), a.astype(jnp.float64), ua.astype(jnp.int32), a < b, ua < ub)


# -- other element types --------------------------------------------------------

def f16_ops(x, y, w):
    h = jnp.tanh(x * y + x) @ w
    return (h, jnp.exp(x), jnp.sqrt(jnp.abs(y)), jnp.sum(x, axis=1),
            jnp.max(y), h.astype(jnp.float32), lax.reduce_precision(y, 4, 5))


def bf16_ops(x, w, b):
    y = lax.dot_general(x, w, (((1,), (0,)), ((), ())), preferred_element_type=jnp.float32)
    z = jax.nn.relu(x @ w + b)
    return y, z, jnp.sum(z.astype(jnp.float32), axis=0), jnp.exp(b), x.astype(jnp.float32)


def f64_ops(x, y, w):
    return (x @ w, jnp.exp(x), jnp.log1p(jnp.abs(y)), jnp.sin(x) * jnp.cos(y),
            lax.erf(x), jnp.sum(x * y), jnp.arctan2(x, y), x.astype(jnp.float32),
            jnp.cumsum(y, axis=1), lax.cbrt(x))


def complex64_ops(z, w, re, im):
    c = lax.complex(re, im)
    return (z + w, z * w, z / w, z - c, jnp.real(z), jnp.imag(w), jnp.abs(z),
            jnp.conj(z), jnp.exp(z), z == w, jnp.sum(z * w), c, jnp.angle(z),
            jnp.sqrt(z), z @ w.T, -z)


def complex128_ops(z, w):
    return (z * w, z / w, jnp.abs(z), jnp.real(z @ w.T), jnp.imag(z), jnp.exp(z),
            jnp.log(z), z.astype(jnp.complex64))


# -- random numbers -----------------------------------------------------------------

def prng_threefry(key_data):
    key = jax.random.wrap_key_data(key_data)  # default impl: threefry2x32
    k1, k2 = jax.random.split(key)
    return (jax.random.uniform(k1, (3, 4)), jax.random.normal(k2, (5,)),
            jax.random.bits(key, (4,)), jax.random.randint(k1, (6,), -5, 5),
            jax.random.key_data(jax.random.split(k2, 3)))


def rng_bit_generator(key):
    out = []
    for alg in (lax.RandomAlgorithm.RNG_THREE_FRY, lax.RandomAlgorithm.RNG_PHILOX,
                lax.RandomAlgorithm.RNG_DEFAULT):
        new_key, bits = lax.rng_bit_generator(key, (2, 3), dtype=jnp.uint32, algorithm=alg)
        out += [new_key, bits]
    _, bits8 = lax.rng_bit_generator(key, (5,), dtype=jnp.uint8,
                                     algorithm=lax.RandomAlgorithm.RNG_PHILOX)
    return tuple(out) + (bits8,)


def rng_uniform(lo, hi):
    return lax.rng_uniform(lo, hi, (4,)), lax.rng_uniform(jnp.int32(0), jnp.int32(10), (3,))


# -- dots / einsum ----------------------------------------------------------------

def einsum_batch(a, b, q, k):
    return (jnp.einsum("bij,bjk->bik", a, b),
            jnp.einsum("bhqd,bhkd->bhqk", q, k),
            jnp.einsum("bij,bij->", a, a),
            jnp.einsum("bij,bjk->ki", a, b))


def dot_general_multi(x, y, m, v):
    return (lax.dot_general(x, y, (((2, 3), (2, 1)), ((0,), (0,)))),
            lax.dot_general(x, x, (((1, 2, 3), (1, 2, 3)), ((), ()))),
            lax.dot_general(m, v, (((1,), (0,)), ((), ())),
                            precision=lax.Precision.HIGHEST),
            jnp.dot(v, v), jnp.outer(v, v))


# -- linear algebra -----------------------------------------------------------------

def linalg(a, b):
    l = lax.linalg.cholesky(a)
    x = lax.linalg.triangular_solve(l, b, left_side=True, lower=True)
    y = lax.linalg.triangular_solve(l, b.T, left_side=False, lower=True,
                                    transpose_a=True, unit_diagonal=True)
    return l, x, y


# -- output structure -----------------------------------------------------------------

def nested_outputs(x):
    return {"a": x + 1.0, "b": (x * 2.0, (jnp.sum(x), x.astype(jnp.int32)))}


def scalar_output(x, s):
    return jnp.sum(x * x) * s


def pred_output(x, y):
    return x > y


def pred_scalar_output(x):
    return jnp.all(x > -2.0)


def zero_size(e, x):
    return (jnp.concatenate([e, x], axis=0), jnp.sum(e, axis=0), e @ x.T,
            e * 2.0, jnp.max(e, axis=0, initial=-1.0), x[:, 2:2])


# ----------------------------------------------------------------------------
# Hand-written HLO, for ops JAX never emits.  NAME.hlo is XLA's own re-printing
# of this text after parsing.
# ----------------------------------------------------------------------------

HLO_MAP_NESTED = """\
HloModule hlo_map_nested_tuple, entry_computation_layout={(f32[4]{0}, f32[4]{0}, s32[])->((f32[4]{0}, s32[]), f32[4]{0})}

mul_add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  m = f32[] multiply(a, b)
  ROOT s = f32[] add(m, a)
}

ENTRY main {
  x = f32[4]{0} parameter(0)
  y = f32[4]{0} parameter(1)
  n = s32[] parameter(2)
  tok = token[] after-all()
  mapped = f32[4]{0} map(x, y), dimensions={0}, to_apply=mul_add
  one = s32[] constant(1)
  n1 = s32[] add(n, one)
  inner = (f32[4]{0}, s32[]) tuple(mapped, n1)
  ROOT out = ((f32[4]{0}, s32[]), f32[4]{0}) tuple(inner, y)
}
"""

HLO_PRED_CONDITIONAL = """\
HloModule hlo_pred_conditional, entry_computation_layout={(pred[], f32[3]{0}, f32[3]{0})->f32[3]{0}}

on_true {
  p = f32[3]{0} parameter(0)
  ROOT e = f32[3]{0} exponential(p)
}

on_false {
  q = f32[3]{0} parameter(0)
  ROOT n = f32[3]{0} negate(q)
}

ENTRY main {
  c = pred[] parameter(0)
  x = f32[3]{0} parameter(1)
  y = f32[3]{0} parameter(2)
  t = f32[3]{0} conditional(c, x, y), true_computation=on_true, false_computation=on_false
  ROOT r = f32[3]{0} add(t, y)
}
"""

# JAX lowers lax.logistic to 1/(1+exp(-x)), never to the HLO op.
HLO_LOGISTIC = """\
HloModule hlo_logistic, entry_computation_layout={(f32[6]{0}, f16[3]{0})->(f32[6]{0}, f16[3]{0})}

ENTRY main {
  x = f32[6]{0} parameter(0)
  h = f16[3]{0} parameter(1)
  lx = f32[6]{0} logistic(x)
  lh = f16[3]{0} logistic(h)
  ROOT out = (f32[6]{0}, f16[3]{0}) tuple(lx, lh)
}
"""


# ----------------------------------------------------------------------------
# The table.
# ----------------------------------------------------------------------------

# outputs: "values" when the npz outputs are the reference values; "shapes" when
# the values are implementation-defined and only shapes/dtypes are meaningful.
Program = namedtuple("Program", "name fn inputs desc x64 source outputs",
                     defaults=(False, "jax", "values"))

PROGRAMS = [
    # models
    Program("mlp_train_step", mlp_train_step,
            lambda g: ({"b1": g.n(8, scale=0.1), "b2": g.n(2, scale=0.1),
                        "w1": g.n(4, 8, scale=0.5), "w2": g.n(8, 2, scale=0.5)},
                       g.n(5, 4), g.n(5, 2)),
            "2-layer tanh MLP, MSE loss, value_and_grad, SGD update; params dict "
            "leaves in sorted key order (b1, b2, w1, w2)"),
    Program("attention", attention, lambda g: (g.n(2, 4, 8), g.n(2, 5, 8), g.n(2, 5, 8)),
            "multi-head softmax(QK^T/sqrt(d))V via einsum"),
    Program("layernorm", layernorm, lambda g: (g.n(4, 16), g.pos(16), g.n(16)),
            "layer normalization over the last axis with rsqrt"),
    Program("linear_tuple", linear_tuple, lambda g: (g.n(3, 4), g.n(4, 5), g.n(5)),
            "x @ w + b and its relu, as a 2-tuple output"),

    # convolutions
    Program("conv_nhwc", lambda x, w: _conv(x, w, ("NHWC", "HWIO", "NHWC"), padding="SAME"),
            lambda g: (g.n(1, 6, 6, 3), g.n(3, 3, 3, 4)), "2D conv NHWC/HWIO, SAME padding"),
    Program("conv_nchw", lambda x, w: _conv(x, w, ("NCHW", "OIHW", "NCHW")),
            lambda g: (g.n(2, 3, 5, 5), g.n(4, 3, 3, 3)), "2D conv NCHW/OIHW, VALID"),
    Program("conv_strided", lambda x, w: _conv(x, w, ("NCHW", "OIHW", "NCHW"),
                                               window_strides=(2, 2),
                                               padding=((1, 2), (0, 1))),
            lambda g: (g.n(1, 2, 7, 7), g.n(3, 2, 3, 3)),
            "2D conv, stride 2, asymmetric explicit padding"),
    Program("conv_grouped", lambda x, w: _conv(x, w, ("NCHW", "OIHW", "NCHW"),
                                               feature_group_count=2),
            lambda g: (g.n(1, 4, 5, 5), g.n(6, 2, 3, 3)), "grouped conv, feature_group_count=2"),
    Program("conv_dilated", lambda x, w: _conv(x, w, ("NCHW", "OIHW", "NCHW"),
                                               lhs_dilation=(2, 1), rhs_dilation=(1, 2),
                                               padding=((1, 1), (2, 2))),
            lambda g: (g.n(1, 2, 6, 6), g.n(2, 2, 3, 3)),
            "conv with lhs (input) dilation and rhs (kernel) dilation"),
    Program("conv_grad", conv_grad, lambda g: (g.n(2, 4, 6, 5), g.n(4, 2, 3, 2)),
            "gradient of a strided grouped conv w.r.t. input and kernel "
            "(kernel grad uses batch_group_count)"),
    Program("conv1d", lambda x, w: _conv(x, w, ("NWC", "WIO", "NWC"), window_strides=(2,),
                                         padding=((2, 1),)),
            lambda g: (g.n(2, 9, 3), g.n(3, 3, 2)), "1D conv NWC/WIO, strided, padded"),

    # control flow
    Program("scan_rnn", scan_rnn, lambda g: (g.n(4), g.n(5, 3), g.n(4, 4, scale=0.5),
                                             g.n(3, 4, scale=0.5)),
            "lax.scan tanh RNN: final carry and stacked per-step sums"),
    Program("while_newton_sqrt", while_newton_sqrt, lambda g: (g.pos(5, lo=0.5, hi=9.0),),
            "lax.while_loop with a data-dependent exit: Newton sqrt iteration"),
    Program("while_collatz", while_collatz, lambda g: (np.int32(27),),
            "integer while_loop (Collatz steps of 27), scalar carry"),
    Program("fori_loops", fori_loops, lambda g: (g.n(3), np.int32(5)),
            "fori_loop with static (scan) and dynamic (while) trip counts"),
    Program("cond_pred", cond_pred, lambda g: (g.n(4) + 1.0, g.n(4)),
            "lax.cond on a data-dependent predicate, tuple-valued branches"),
    Program("switch_index", switch_index, lambda g: (np.int32(1), np.int32(7), g.n(3)),
            "lax.switch (indexed conditional), in-range and out-of-range (clamped) index"),
    Program("lax_map_rows", lax_map_rows, lambda g: (g.n(3, 4),),
            "lax.map over rows (lowers to a while loop)"),
    Program("nested_jit_call", nested_jit_call, lambda g: (g.n(4),),
            "an inner jax.jit function called twice (HLO call)"),
    Program("remat_grad", remat_grad, lambda g: (g.n(5),),
            "grad of a jax.checkpoint function (opt-barrier in unoptimized HLO)"),
    Program("optimization_barrier", optimization_barrier, lambda g: (g.n(3), g.n(3)),
            "lax.optimization_barrier on a tuple and on a single array"),
    Program("tokens_after_all", tokens_after_all, lambda g: (g.n(3),),
            "create_token/after_all; the token is result leaf out0 (an empty uint8 array "
            "in the npz)"),

    # gather / scatter / sort
    Program("gather_ops", gather_ops,
            lambda g: (g.n(5, 4), np.array([3, -1, 0], np.int32),
                       g.i(0, 4, 5, 2), np.array([1, 9, -4], np.int32)),
            "x[idx] with negative index, column and point gathers, take_along_axis, "
            "take(mode=clip) with out-of-range indices"),
    Program("scatter_ops", scatter_ops,
            lambda g: (g.n(6, 3), np.array([1, 4, 1, 7], np.int32), g.n(4, 3),
                       np.array([5, 0, 2], np.int32)),
            "x.at[idx].add/.set/.max/.min/.multiply; duplicate indices and a dropped "
            "out-of-bounds index"),
    Program("sort_ops", sort_ops,
            lambda g: (np.concatenate([F32_SPECIALS[:6], g.n(6), F32_SPECIALS[5:7]]),
                       g.i(-5, 5, 12)),
            "jnp.sort / argsort(stable) on floats with NaN/inf/-0 (total-order "
            "compares), multi-operand lax.sort, int sort along axes"),
    Program("sort_multi_key", sort_multi_key,
            lambda g: (g.i(0, 3, 10), g.i(0, 3, 10).astype(np.float32), g.n(10)),
            "lax.sort with 3 operands and num_keys=2, stable"),
    Program("top_k", top_k,
            lambda g: (np.round(g.n(3, 10), 1),), "lax.top_k(k=4) on rows with ties"),
    Program("argmax_argmin", argmax_argmin,
            lambda g: (np.where(np.arange(20).reshape(4, 5) == 7, np.nan,
                                np.round(g.n(4, 5), 0)).astype(np.float32),),
            "argmax/argmin (variadic reduce) with ties and one intended NaN"),

    # reductions / windows
    Program("reductions", reductions,
            lambda g: (g.n(3, 4, 5), g.i(-100, 100, 4, 6), g.i(0, 2, 3, 4).astype(bool)),
            "sum/prod/max/min/mean/logsumexp over axes, int reduces, all/any"),
    Program("cumulative", cumulative, lambda g: (g.f(4, 6, lo=0.5, hi=1.5), g.i(-9, 9, 4, 6)),
            "cumsum/cumprod/cummax/cummin/reverse cumsum/cumlogsumexp"),
    Program("pooling", pooling, lambda g: (g.n(1, 6, 6, 2),),
            "max pool (SAME, strided), avg pool, reduce_window with base and window "
            "dilation and explicit padding"),
    Program("maxpool_grad", maxpool_grad, lambda g: (g.n(1, 5, 5, 2),),
            "gradient of max pooling (select-and-scatter)"),

    # data movement
    Program("pad_ops", pad_ops, lambda g: (g.n(4, 5),),
            "lax.pad with negative and interior padding; edge padding"),
    Program("slice_reverse_concat", slice_reverse_concat, lambda g: (g.n(8, 6), g.n(3, 6)),
            "strided slices, reverse, concatenate"),
    Program("dynamic_slicing", dynamic_slicing,
            lambda g: (g.n(5, 6), np.array([2, 3], np.int32), g.n(2, 2)),
            "dynamic_slice / dynamic_update_slice with in-range, clamped and negative starts"),
    Program("clamp_select_iota", clamp_select_iota,
            lambda g: (g.n(4, 6), np.array([-0.5, 0.7], np.float32), g.i(0, 2, 4, 6).astype(bool)),
            "clamp (scalar and array bounds), select/where, iota, broadcast_in_dim"),
    Program("shape_ops", shape_ops, lambda g: (g.n(2, 3, 4),),
            "transpose, reshape, expand_dims, squeeze, tile"),
    Program("bitcast_convert", bitcast_convert,
            lambda g: (g.n(5), g.i(0, 1 << 30, 5), g.i(0, 64, 3, 4).astype(np.uint8)),
            "bitcast_convert_type f32<->s32/u32, f32<->u8[...,4], f16->s16"),
    Program("convert_types", convert_types,
            lambda g: (g.f(6, lo=-3.0, hi=3.0), g.i(-300, 300, 6), g.i(0, 2, 6).astype(bool)),
            "convert between f32/f16/bf16/s32/u8/s8/u32/pred"),
    Program("convert_edge", convert_edge,
            lambda g: (np.array([np.nan, np.inf, -np.inf, 3e9, -3e9, 300.0, -300.0, -1.5,
                                 255.9, 65504.0, 70000.0, 1e-8], np.float32),),
            "float->int conversions of NaN/inf/out-of-range values (intended NaNs), "
            "f32->f16/bf16 overflow"),
    Program("float8_convert", float8_convert,
            lambda g: (np.concatenate([g.n(8, scale=4.0),
                                       np.array([500.0, 1e-3, 0.0, -448.0], np.float32)]),),
            "round trips through f8e4m3fn and f8e5m2 (500 overflows e4m3fn, which has no "
            "inf, to an intended NaN)"),

    # elementwise math
    Program("unary_math", unary_math, lambda g: (g.f(10, lo=-2.0, hi=2.0), g.pos(10)),
            "abs neg sign exp expm1 log log1p sqrt rsqrt cbrt tanh logistic sin cos tan "
            "erf floor ceil"),
    Program("rounding", rounding,
            lambda g: (np.concatenate([np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.4999, -0.0],
                                                np.float32), g.n(4, scale=3.0)]),),
            "round half away from zero vs half to even, floor, ceil, trunc"),
    Program("binary_math", binary_math, lambda g: (g.n(8), g.f(8, lo=0.5, hi=2.0), g.pos(8)),
            "add sub mul div atan2 pow integer_pow max min rem nextafter fmod hypot"),
    Program("float_specials", float_specials,
            lambda g: (F32_SPECIALS, np.roll(F32_SPECIALS, 3)),
            "intended NaN/inf/-0 inputs: max/min NaN propagation, is_finite, sign, rem"),
    Program("compare_all", compare_all,
            lambda g: (F32_SPECIALS, np.roll(F32_SPECIALS, 1), g.i(-3, 3, 12), g.i(-3, 3, 12),
                       np.array([0, 1, 2**31, 2**32 - 1, 5, 5], np.uint32),
                       np.array([1, 1, 3, 0, 2**31, 5], np.uint32)),
            "eq ne lt le gt ge on floats with NaN, signed and unsigned ints"),
    Program("reduce_precision", reduce_precision,
            lambda g: (np.concatenate([g.n(6, scale=100.0),
                                       np.array([1e-6, 7e4, 1.0009765625, 3.14159], np.float32)]),),
            "lax.reduce_precision to bf16-like, f16-like and e4m3-like formats (values "
            "beyond a format's range become inf, intended)"),

    # integers
    Program("int_wraparound", int_wraparound,
            lambda g: (g.full_range(np.int8, 8), g.full_range(np.int8, 8),
                       g.full_range(np.int16, 8), g.full_range(np.int16, 8),
                       g.full_range(np.int32, 8), g.full_range(np.int32, 8),
                       g.full_range(np.uint8, 8), g.full_range(np.uint8, 8),
                       g.full_range(np.uint32, 8), g.full_range(np.uint32, 8)),
            "s8/s16/s32/u8/u32 add/sub/mul/neg/abs/max/min with wraparound"),
    Program("int_divrem", int_divrem,
            lambda g: (np.array([7, -7, 7, -7, 0, -2**31, -2**31, 5, 13], np.int32),
                       np.array([2, 2, -2, -2, 3, -1, 1, 0, -4], np.int32),
                       np.array([7, 2**32 - 1, 5, 0, 9], np.uint32),
                       np.array([2, 16, 0, 3, 9], np.uint32),
                       np.array([-128, 127, -7, 100], np.int8),
                       np.array([-1, -3, 2, 0], np.int8)),
            "lax.div/lax.rem with negatives, division by zero and INT_MIN/-1; "
            "floor division and modulo"),
    Program("int_shifts", int_shifts,
            lambda g: (np.array([1, -1, 12345, -12345, 2**31 - 1, -2**31, 7, 7], np.int32),
                       np.array([0, 1, 31, 32, 33, -1, 4, 100], np.int32),
                       np.array([1, 2**32 - 1, 12345, 2**31, 7, 7], np.uint32),
                       np.array([0, 1, 31, 32, 33, 2**32 - 1], np.uint32),
                       np.array([1, -1, 100, -100, 127, -128], np.int8),
                       np.array([0, 1, 7, 8, 9, -1], np.int8)),
            "shift_left / shift_right_arithmetic / shift_right_logical with "
            "out-of-range and negative shift amounts"),
    Program("bitwise_ops", bitwise_ops,
            lambda g: (g.full_range(np.int32, 6), g.full_range(np.int32, 6),
                       g.full_range(np.uint32, 6), g.full_range(np.uint32, 6),
                       g.full_range(np.uint8, 6), g.i(0, 2, 6).astype(bool),
                       g.i(0, 2, 6).astype(bool), g.full_range(np.uint16, 6)),
            "and/or/xor/not on s32/u32/u8/pred, population_count, count leading zeros"),
    Program("int64_ops", int64_ops,
            lambda g: (g.full_range(np.int64, 6), np.array([3, -7, 0, -1, 2, 5], np.int64),
                       g.full_range(np.uint64, 6), np.array([3, 7, 0, 1, 2, 5], np.uint64),
                       np.array([0, 1, 63, 64, 65, -1], np.int64)),
            "s64/u64 wraparound arithmetic, div/rem (incl. by zero), shifts, popcnt, clz",
            x64=True),

    # other element types
    Program("f16_ops", f16_ops,
            lambda g: (g.n(3, 4, dtype=np.float16), g.n(3, 4, dtype=np.float16),
                       g.n(4, 2, dtype=np.float16)),
            "f16 elementwise, dot, reductions, convert to f32"),
    Program("bf16_ops", bf16_ops,
            lambda g: (g.n(3, 4).astype(ml_dtypes.bfloat16), g.n(4, 5).astype(ml_dtypes.bfloat16),
                       g.n(5).astype(ml_dtypes.bfloat16)),
            "bf16 dot (with f32 preferred_element_type), relu, exp, converts"),
    Program("f64_ops", f64_ops,
            lambda g: (g.n(3, 4, dtype=np.float64), g.n(3, 4, dtype=np.float64),
                       g.n(4, 2, dtype=np.float64)),
            "f64 math, dot, reductions, cumsum (jax_enable_x64)", x64=True),
    Program("complex64_ops", complex64_ops,
            lambda g: ((g.n(3, 3) + 1j * g.n(3, 3)).astype(np.complex64),
                       (g.n(3, 3) + 1j * g.n(3, 3) + 0.5).astype(np.complex64),
                       g.n(3, 3), g.n(3, 3)),
            "c64 arithmetic, real/imag/complex, abs, conj, exp, sqrt, angle, matmul"),
    Program("complex128_ops", complex128_ops,
            lambda g: ((g.n(2, 3) + 1j * g.n(2, 3)).astype(np.complex128),
                       (g.n(2, 3) + 1j * g.n(2, 3) + 0.5).astype(np.complex128)),
            "c128 arithmetic, abs, log, exp, matmul, convert to c64", x64=True),

    # random numbers
    Program("prng_threefry", prng_threefry, lambda g: (np.array([0, 42], np.uint32),),
            "jax.random (threefry2x32): split, uniform, normal, bits, randint"),
    Program("rng_bit_generator", rng_bit_generator,
            lambda g: (np.array([1, 2, 3, 4], np.uint32),),
            "lax.rng_bit_generator with THREE_FRY, PHILOX and DEFAULT algorithms, u32 and u8"),
    Program("rng_uniform", rng_uniform, lambda g: (np.float32(-1.0), np.float32(1.0)),
            "lax.rng_uniform (HLO rng; XLA:CPU expands it with rng-get-and-update-state). "
            "Output values are implementation-defined: compare shapes/ranges only",
            outputs="shapes"),

    # dots
    Program("einsum_batch", einsum_batch,
            lambda g: (g.n(2, 3, 4), g.n(2, 4, 5), g.n(2, 2, 3, 4), g.n(2, 2, 5, 4)),
            "einsum with one and two batch dims, full contraction, transposed output"),
    Program("dot_general_multi", dot_general_multi,
            lambda g: (g.n(2, 3, 4, 5), g.n(2, 5, 4, 6), g.n(3, 4), g.n(4)),
            "dot_general with two/three contracting dims and batch dims, matvec, "
            "vector dot, outer"),

    # linear algebra
    Program("linalg_lapack", linalg, lambda g: (g.spd(4), g.n(4, 3)),
            "cholesky and triangular_solve as JAX lowers them for CPU (LAPACK custom-calls)"),
    Program("linalg_hlo_ops", linalg, lambda g: (g.spd(4), g.n(4, 3)),
            "same as linalg_lapack but lowered for TPU so that the HLO has cholesky and "
            "triangular-solve ops; compiled by XLA:CPU (expanders)",
            source="jax-tpu-lower"),

    # output structure
    Program("nested_outputs", nested_outputs, lambda g: (g.n(3),),
            "dict/nested tuple pytree output (flattened: a, b[0], b[1][0], b[1][1])"),
    Program("scalar_output", scalar_output, lambda g: (g.n(4), np.float32(0.5)),
            "scalar input and scalar f32 output"),
    Program("pred_output", pred_output, lambda g: (g.n(5), g.n(5)), "a pred[5] output"),
    Program("pred_scalar_output", pred_scalar_output, lambda g: (g.n(5),),
            "a pred[] output (all-reduce of a comparison)"),
    Program("zero_size", zero_size,
            lambda g: (np.zeros((0, 3), np.float32), g.n(2, 3)),
            "0-size arrays: concatenate, reductions, dot, slice"),

    # hand-written HLO
    Program("hlo_map_nested_tuple", HLO_MAP_NESTED,
            lambda g: (g.n(4), g.n(4), np.int32(41)),
            "hand-written: map with a to_apply computation, an unused after-all, and a "
            "nested tuple result ((f32[4], s32[]), f32[4])",
            source="handwritten"),
    Program("hlo_pred_conditional", HLO_PRED_CONDITIONAL,
            lambda g: (np.bool_(True), g.n(3), g.n(3)),
            "hand-written: pred-operand conditional with true/false computations",
            source="handwritten"),
    Program("hlo_logistic", HLO_LOGISTIC,
            lambda g: (np.array([-20.0, -2.0, -0.5, 0.0, 1.5, 30.0], np.float32),
                       g.n(3, dtype=np.float16)),
            "hand-written: the logistic op on f32 and f16 (JAX expands jax.nn.sigmoid)",
            source="handwritten"),
]


# ----------------------------------------------------------------------------
# HLO text helpers.
# ----------------------------------------------------------------------------

_INSTR = re.compile(r"^\s*(?:ROOT\s+)?%?[\w.\-]+\s*=\s*(.*)$")
_OPCODE = re.compile(r"(?<![\w.\-])([a-z][a-z0-9\-]*)\(")
_ELEM = re.compile(r"(?<![\w.])(pred|token|[suf]\d+|bf16|c64|c128|f8e\w+)\[([\d,]*)\]")

HLO_TO_NP = {
    "pred": np.bool_, "s8": np.int8, "s16": np.int16, "s32": np.int32, "s64": np.int64,
    "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64,
    "f16": np.float16, "f32": np.float32, "f64": np.float64, "c64": np.complex64,
    "c128": np.complex128, "bf16": ml_dtypes.bfloat16,
    "f8e4m3fn": ml_dtypes.float8_e4m3fn, "f8e5m2": ml_dtypes.float8_e5m2,
}
NP_TO_HLO = {np.dtype(v): k for k, v in HLO_TO_NP.items()}


def opcodes(text):
    """The set of opcodes of all instructions in an HLO module text."""
    ops = set()
    for line in text.splitlines():
        m = _INSTR.match(line)
        if m:
            op = _OPCODE.search(m.group(1))
            if op:
                ops.add(op.group(1))
    return ops


def element_types(text):
    types = set()
    for line in text.splitlines():
        m = _INSTR.match(line)
        if m:
            types.update(t for t, _ in _ELEM.findall(m.group(1)))
    return types


def entry_signature(text):
    """(param leaves, result leaves) as lists of (hlo type, shape) from the header."""
    header = text.splitlines()[0]
    start = header.index("entry_computation_layout={") + len("entry_computation_layout={")
    depth, end = 1, start
    while depth:
        depth += {"{": 1, "}": -1}.get(header[end], 0)
        end += 1
    params, result = header[start:end - 1].split("->", 1)

    def leaves(s):
        return [(t, tuple(int(d) for d in dims.split(",") if d)) for t, dims in _ELEM.findall(s)]
    return leaves(params), leaves(result)


# ----------------------------------------------------------------------------
# Running one program.
# ----------------------------------------------------------------------------

def _new_dump_files(before, suffix):
    return sorted(f for f in set(os.listdir(_DUMP_DIR)) - before if f.endswith(suffix))


def _read_dump(before, module_name, kind):
    files = _new_dump_files(before, f".{module_name}.{kind}.txt")
    if len(files) != 1:
        raise RuntimeError(f"expected one {kind} dump for {module_name}, got {files}")
    with open(os.path.join(_DUMP_DIR, files[0])) as f:
        return f.read()


def _compile_mlir(mlir_text):
    """Compile a StableHLO module text for the CPU device, outside jax.jit."""
    dev = jax.devices("cpu")[0]
    exe = dev.client.compile_and_load(mlir_text, executable_devices=xc.DeviceList((dev,)),
                                      compile_options=xc.CompileOptions())

    def run(*args):
        bufs = [jax.device_put(a, dev) for a in jax.tree_util.tree_leaves(args)]
        res = exe.execute_sharded(bufs).disassemble_into_single_device_arrays()
        return [r[0] for r in res]
    return exe, run


def _normalize_json_keys(text):
    """Sorts the keys of every backend_config={...} JSON object in a module text."""
    def sort_keys(m):
        try:
            return "backend_config=" + json.dumps(json.loads(m.group(1)), sort_keys=True)
        except ValueError:
            return m.group(0)
    return re.sub(r"backend_config=(\{.*?\})(?=, [a-z_]+=|$)", sort_keys, text, flags=re.M)


def run_program(prog):
    """Returns (unoptimized text, optimized text, flat inputs, flat outputs)."""
    args = prog.inputs(Gen(prog.name))
    before = set(os.listdir(_DUMP_DIR))

    if prog.source == "handwritten":
        module = xc.hlo.hlo_module_from_text(prog.fn)
        unopt = module.to_string()
        comp = xc.XlaComputation(module.as_serialized_hlo_module_proto())
        mlir = xc._xla.mlir.xla_computation_to_mlir_module(comp)
        exe, run = _compile_mlir(mlir)
        outs = run(*args)
        opt = _read_dump(before, prog.name, "cpu_after_optimizations")
        return unopt, opt, jax.tree_util.tree_leaves(args), outs

    @functools.wraps(prog.fn)  # keeps the argument names for parameter metadata
    def fn(*a):
        return prog.fn(*a)
    fn.__name__ = fn.__qualname__ = prog.name
    module_name = "jit_" + prog.name
    jitted = jax.jit(fn, keep_unused=True)

    if prog.source == "jax-tpu-lower":
        lowered = jitted.trace(*args).lower(lowering_platforms=("tpu",))
        exe, run = _compile_mlir(lowered.as_text())
        outs = run(*args)
        opt_text = exe.hlo_modules()[0].to_string()
    else:
        compiled = jitted.lower(*args).compile()
        outs = jax.tree_util.tree_leaves(compiled(*args))
        opt_text = compiled.as_text()
    unopt = _read_dump(before, module_name, "before_optimizations")
    opt = _read_dump(before, module_name, "cpu_after_optimizations")
    # The dump is what we keep.  The executable's own text is the same module; it
    # has been seen to differ only in the key order inside backend_config JSON.
    if _normalize_json_keys(opt) != _normalize_json_keys(opt_text):
        print(f"  warning: {prog.name}: the optimized dump and the executable's text differ")
    return unopt, opt, jax.tree_util.tree_leaves(args), outs


def _store(prefix, i, value):
    """npz key and array for one leaf.

    ml_dtypes arrays (bf16, f8*) are saved as they are: np.load gives them back
    as raw void data (|V2, |V1) that readers reinterpret with the element type
    of the matching HLO parameter or result.  A token leaf is an empty uint8
    array.
    """
    if _is_token(value):
        return f"{prefix}{i}", np.zeros((0,), np.uint8)
    return f"{prefix}{i}", np.asarray(value)


def _is_token(value):
    return type(value).__name__ == "Token"


def _leaf_sig(value):
    if _is_token(value):
        return ("token", ())
    arr = np.asarray(value)
    return (NP_TO_HLO[arr.dtype], arr.shape)


def check_signature(name, text, ins, outs):
    params, results = entry_signature(text)
    got_in = [_leaf_sig(v) for v in ins]
    got_out = [_leaf_sig(v) for v in outs]
    if params != got_in:
        raise RuntimeError(f"{name}: parameters {params} != inputs {got_in}")
    if results != got_out:
        raise RuntimeError(f"{name}: results {results} != outputs {got_out}")


def _outputs(out_dir, names):
    files = [f"{n}{ext}" for n in names for ext in (".hlo", ".optimized.hlo", ".npz")]
    return [os.path.join(out_dir, f) for f in files + ["MANIFEST.json", "README.md"]]


def _check_outputs(paths, overwrite):
    """As the other tools (xla/tools/outputs.py): never through a link or
    into a device or directory, over an existing file only with --overwrite."""
    for path in paths:
        if os.path.islink(path) or (os.path.lexists(path) and not os.path.isfile(path)):
            sys.exit(f"gen_corpus: error: {path} is a link or not a regular file; refusing to write it")
        if os.path.exists(path) and not overwrite:
            sys.exit(f"gen_corpus: error: {path} exists; pass --overwrite to replace it")


def _write(path, data):
    """Writes ``data`` (str, bytes, or a function of a binary file) to a
    temporary file beside ``path`` and renames it into place: the file is
    whole or not there, and a link at ``path`` is replaced, not followed."""
    _check_outputs([path], overwrite=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp.", dir=os.path.dirname(os.path.abspath(path)))
    try:
        with os.fdopen(fd, "wb") as f:
            if callable(data):
                data(f)
            else:
                f.write(data.encode("utf-8") if isinstance(data, str) else data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)


def generate(prog, out_dir):
    with jax.enable_x64(prog.x64):
        unopt, opt, ins, outs = run_program(prog)
    check_signature(prog.name, unopt, ins, outs)
    check_signature(prog.name + " (optimized)", opt, ins, outs)

    arrays = dict(_store("arg", i, v) for i, v in enumerate(ins))
    arrays.update(_store("out", i, v) for i, v in enumerate(outs))
    _write(os.path.join(out_dir, prog.name + ".hlo"), unopt)
    _write(os.path.join(out_dir, prog.name + ".optimized.hlo"), opt)
    _write(os.path.join(out_dir, prog.name + ".npz"), lambda f: np.savez_compressed(f, **arrays))

    params, results = entry_signature(unopt)
    return {
        "name": prog.name,
        "description": prog.desc,
        "source": prog.source,
        "x64": prog.x64,
        "outputs": prog.outputs,
        "files": [prog.name + ".hlo", prog.name + ".optimized.hlo", prog.name + ".npz"],
        "npz_keys": sorted(arrays, key=lambda k: (k[:3], int(k[3:]))),
        "params": [f"{t}[{','.join(map(str, s))}]" for t, s in params],
        "results": [f"{t}[{','.join(map(str, s))}]" for t, s in results],
        "dtypes": sorted(element_types(unopt) | element_types(opt)),
        "opcodes_unoptimized": sorted(opcodes(unopt)),
        "opcodes_optimized": sorted(opcodes(opt)),
    }


# ----------------------------------------------------------------------------
# README.
# ----------------------------------------------------------------------------

# The opcode checklist.  HLO spells optimization_barrier as "opt-barrier".
CHECKLIST = """parameter constant iota broadcast reshape bitcast transpose copy slice
dynamic-slice dynamic-update-slice concatenate pad reverse gather scatter select clamp
convert bitcast-convert abs negate sign exponential exponential-minus-one log log-plus-one
sqrt rsqrt cbrt tanh logistic sine cosine tan atan2 erf floor ceil round-nearest-afz
round-nearest-even is-finite not popcnt count-leading-zeros add subtract multiply divide
remainder power maximum minimum and or xor shift-left shift-right-arithmetic
shift-right-logical compare real imag complex reduce reduce-window select-and-scatter dot
convolution sort topk map tuple get-tuple-element call while conditional fusion custom-call
rng rng-bit-generator rng-get-and-update-state cholesky triangular-solve after-all
opt-barrier""".split()

NOTES = {
    "reshape": "The CPU pipeline turns layout-preserving reshapes into `bitcast`.",
    "bitcast": "Only in optimized modules.",
    "copy": "Only in optimized modules (layout changes, loop-carried copies).",
    "fusion": "Only in optimized modules: kLoop, kInput, kOutput and kCustom (YNNPACK dots).",
    "custom-call": "LAPACK (`lapack_spotrf_ffi`, `lapack_strsm_ffi`) in linalg_lapack; "
                   "`TopK` in the optimized top_k.",
    "call": "Unoptimized: JAX's nested jit functions (jnp.where, argmax, ...); optimized: "
            "`call`s with xla_cpu_small_call around while loops.",
    "select-and-scatter": "From the gradient of max pooling; XLA:CPU rewrites it into a "
                          "variadic reduce-window plus scatter.",
    "opt-barrier": "HLO's spelling of optimization_barrier; removed by XLA:CPU.",
    "rng-bit-generator": "Expanded by XLA:CPU into threefry/philox arithmetic.",
    "conditional": "JAX always emits the indexed form (s32 branch index, "
                   "branch_computations); the pred form (true_/false_computation) is in the "
                   "hand-written hlo_pred_conditional, which XLA:CPU turns into a select.",
    "after-all": "tokens_after_all returns a token; the hand-written hlo_map_nested_tuple has "
                 "an unused one.",
    "logistic": "JAX lowers sigmoid/lax.logistic to 1/(1+exp(-x)); covered by the "
                "hand-written hlo_logistic.",
    "map": "JAX never emits `map` (lax.map is a while loop); covered by the hand-written "
           "hlo_map_nested_tuple.",
    "cholesky": "On CPU JAX lowers cholesky to a LAPACK custom-call; the HLO op comes from "
                "linalg_hlo_ops (lowered for TPU, compiled for CPU).",
    "triangular-solve": "As for cholesky.",
    "rng": "Only from lax.rng_uniform; XLA:CPU expands it.",
    "rng-get-and-update-state": "Only in the optimized module of rng_uniform.",
    "topk": "lax.top_k; XLA:CPU turns it into a custom-call (sort-based) when optimizing.",
}


def write_readme(out_dir, manifest):
    programs = manifest["programs"]
    un = {p["name"]: set(p["opcodes_unoptimized"]) for p in programs}
    op = {p["name"]: set(p["opcodes_optimized"]) for p in programs}
    all_ops = set().union(*un.values(), *op.values())
    total = sum(os.path.getsize(os.path.join(out_dir, f))
                for p in programs for f in p["files"])

    rows = []
    for code in CHECKLIST:
        u = sorted(n for n in un if code in un[n])
        o = sorted(n for n in op if code in op[n])
        where = ", ".join((u or o)[:3]) + (" ..." if len(u or o) > 3 else "")
        rows.append(f"| `{code}` | {len(u)} | {len(o)} | {where or '-'} | {NOTES.get(code, '')} |")
    missing = [c for c in CHECKLIST if c not in all_ops]
    extra = sorted(all_ops - set(CHECKLIST))

    prog_rows = [f"| `{p['name']}` | {p['source']}{' (x64)' if p['x64'] else ''} | "
                 f"{', '.join(p['dtypes'])} | {p['description']} |" for p in programs]

    text = f"""# HLO corpus generated with JAX

Real HLO modules produced by JAX {manifest['jax_version']} / jaxlib
{manifest['jaxlib_version']} on the CPU, used as fixtures for the HLO parser and
printer and for the reference interpreter. {len(programs)} programs, {total / 1e6:.2f} MB.

Regenerate (jax is not a project dependency; use a scratch virtualenv):

```
python3 -m venv /tmp/jaxenv && /tmp/jaxenv/bin/pip install jax jaxlib ml_dtypes
/tmp/jaxenv/bin/python tools/gen_corpus.py --overwrite [--out tests/corpus] [--only NAME,...]
```

The programs are the `PROGRAMS` table in `tools/gen_corpus.py`. Inputs come from a
`numpy.random.RandomState` seeded with the CRC32 of the program name. Stack-frame
metadata (`FileNames` ... `StackFrames`, `stack_frame_id=`) mentions the path and line
numbers of the generator script, so regenerating after editing it changes those lines.

## Files

For each program `NAME`:

- `NAME.hlo`: the unoptimized module exactly as XLA dumps it before optimization
  (`XLA_FLAGS=--xla_dump_to=DIR`, file `*.jit_NAME.before_optimizations.txt`). This is
  the HLO converted from JAX's StableHLO, with `%`-prefixed names, metadata and the
  header attributes that the CPU client adds (`allow_spmd_sharding_propagation_*`).
- `NAME.optimized.hlo`: XLA:CPU's optimized, scheduled module, the file
  `*.jit_NAME.cpu_after_optimizations.txt` from the same dump (the same text as
  `jax.jit(f).lower(...).compile().as_text()`, except that the key order inside
  backend_config JSON may differ). Contains fusions (kLoop, kInput,
  kOutput, kCustom/YNNPACK), backend_config JSON, custom-calls, `call`s with
  `xla_cpu_small_call`, etc.
- `NAME.npz`: inputs `arg0..argN` in entry parameter order (the flattened pytree
  leaves of the arguments; dict leaves in sorted-key order; `jax.jit(...,
  keep_unused=True)` so no argument is dropped) and outputs `out0..outM`, the leaves
  of the result tuple in order (a non-tuple result is `out0`; nested tuples are
  flattened depth-first). The generator checks the number, element types and shapes
  of both lists against the `entry_computation_layout` of both HLO files.

Element types NumPy cannot name in an .npz (bf16, f8e4m3fn, f8e5m2) are saved
directly from their ml_dtypes arrays and load back as raw void data (`|V2`, `|V1`)
under the same plain keys; reinterpret them with the element type of the matching
HLO parameter or result (the `params`/`results` lists in MANIFEST.json give them
too). This is the convention of `xla/tools/arrays.py` (`restore_dtype`). A `token[]`
leaf (only `tokens_after_all`'s `out0`) is stored as an empty `uint8` array. All other
element types (pred, s8..s64, u8..u64, f16, f32, f64, c64, c128) are stored as is.

```python
import ml_dtypes, numpy as np
z = np.load("tests/corpus/bf16_ops.npz")
x = z["arg0"]                       # dtype |V2
x = x.view(ml_dtypes.bfloat16)      # the module says arg0 is bf16[3,4]
```

Program kinds (`source` in MANIFEST.json):

- `jax`: `jax.jit(fn, keep_unused=True).lower(*args).compile()` on CPU.
- `jax-tpu-lower`: the function lowered with `lowering_platforms=("tpu",)` (so JAX
  emits `cholesky`/`triangular-solve` instead of LAPACK custom-calls) and the
  StableHLO compiled by XLA:CPU; the dumps are from that CPU compilation.
- `handwritten`: an HLO text written in the generator for ops JAX cannot emit.
  `NAME.hlo` is XLA's printing of the parsed text (`hlo_module_from_text(...).to_string()`,
  no dump header attributes); it is compiled through StableHLO, which flattens nested
  tuples, so `NAME.optimized.hlo` has a flat result tuple (the npz leaves are the
  same either way).

Programs marked x64 ran under `jax.enable_x64(True)`.

`MANIFEST.json` lists, per program: description, source, x64, `outputs` (`"values"`,
or `"shapes"` where the stored output values are implementation-defined and only
shapes and dtypes should be compared: `rng_uniform`), files, npz keys, entry
parameter and result types, element types, and the opcodes in the unoptimized and
optimized texts (regex over instruction lines, including nested computations).

Caveats for comparing outputs: `rng_uniform` values are implementation-defined
(XLA:CPU's rng expansion); transcendental results differ from NumPy in the last ulps;
float->int conversion of NaN/out-of-range values (`convert_edge`) shows XLA:CPU's
saturating behaviour; outputs of LAPACK-backed programs are the LAPACK results.

## Opcode coverage

Programs containing each checklist opcode (unoptimized / optimized):

| opcode | unopt | opt | e.g. | note |
|---|---|---|---|---|
{chr(10).join(rows)}

Not present anywhere: {', '.join(f'`{c}`' for c in missing) or 'none'}.

What JAX itself does not emit, and how the corpus still covers it: `logistic` (JAX
expands sigmoid), `map` (lax.map is a while loop), the pred form of `conditional`,
nested tuple results (JAX flattens outputs): hand-written modules; `cholesky` and
`triangular-solve` (LAPACK custom-calls on CPU): the TPU lowering of the same
function; `rng-get-and-update-state`, `bitcast`, `copy`, `fusion`: XLA:CPU's
optimized modules only. Inside sort comparators of floats JAX emits
`compare(..., direction=LT, type=TOTALORDER)` (sort_ops, sort_multi_key).

Other opcodes seen: {', '.join(f'`{c}`' for c in extra) or 'none'}.

## Programs

| name | source | element types | description |
|---|---|---|---|
{chr(10).join(prog_rows)}
"""
    _write(os.path.join(out_dir, "README.md"), text)
    return missing, extra


# ----------------------------------------------------------------------------

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=DEFAULT_OUT)
    ap.add_argument("--only", default="", help="comma-separated program names")
    ap.add_argument("--overwrite", action="store_true",
                    help="replace existing corpus files (needed to regenerate)")
    opts = ap.parse_args(argv)

    names = [p.name for p in PROGRAMS]
    assert len(names) == len(set(names)), "duplicate program names"
    only = [n for n in opts.only.split(",") if n]
    unknown = set(only) - set(names)
    if unknown:
        ap.error(f"unknown programs: {sorted(unknown)}")
    selected = [p for p in PROGRAMS if not only or p.name in only]

    os.makedirs(opts.out, exist_ok=True)
    _check_outputs(_outputs(opts.out, [p.name for p in selected]), opts.overwrite)
    manifest_path = os.path.join(opts.out, "MANIFEST.json")
    old = {}
    if only and os.path.exists(manifest_path):
        with open(manifest_path) as f:
            old = {p["name"]: p for p in json.load(f)["programs"]}

    entries = {}
    try:
        for prog in selected:
            print(f"{prog.name} ...", flush=True)
            entries[prog.name] = generate(prog, opts.out)
    finally:
        shutil.rmtree(_DUMP_DIR, ignore_errors=True)

    merged = [entries.get(n) or old.get(n) for n in names]
    manifest = {
        "jax_version": jax.__version__,
        "jaxlib_version": jaxlib.__version__,
        "generator": "tools/gen_corpus.py",
        "programs": [m for m in merged if m],
    }
    _write(manifest_path, json.dumps(manifest, indent=1) + "\n")
    missing, extra = write_readme(opts.out, manifest)
    print(f"{len(manifest['programs'])} programs; checklist opcodes missing: {missing}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
