"""The programs of the HLO test corpus (tools/gen_corpus.py): their input
builder, the JAX functions, and the HLO texts written by hand for ops JAX
never emits. The table that names them is ``PROGRAMS`` in gen_corpus.py.

Needs JAX (a scratch virtualenv; JAX is not a dependency of the project).
gen_corpus.py configures XLA's dump directory before importing this module.
"""

import zlib

import numpy as np
import jax
import jax.numpy as jnp
from jax import lax


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

