"""Generates the JAX-lowered modules that benchmarks/jax_modules.py runs at
working-set sizes (the ``rt_*`` ones), beside the small compile-time modules
of gen_compile_modules.py:

    /tmp/jaxenv/bin/python benchmarks/gen_runtime_modules.py [--only=NAME,...]

Run it with an interpreter that has JAX (never a dependency of this
project). Writes ``benchmarks/modules/rt_<name>.hlo.gz``: the text of
``jax.jit(f).lower(*args).as_text(dialect="hlo")``, the module before any
XLA pass, gzip-compressed without a timestamp (so a rerun with the same JAX
writes the same bytes). The workloads, f32 unless named:

- ``rmsnorm_residual`` / ``rmsnorm_residual_bf16``: ``h = x + r``, then
  ``h * rsqrt(mean(h^2) + eps) * g``, returning both (as a pre-norm block
  passes its residual on), [8192, 1024];
- ``attention_S128`` / ``_S512`` / ``_S2048``: causal multi-head
  self-attention with its four projections, model width 512, 8 heads,
  batch 8 / 2 / 1;
- ``transformer_block`` and ``transformer_block_train``: one pre-LN block
  (attention as above, GELU MLP of width 2048) on [4, 256, 512], forward,
  and its SGD step (forward, ``jax.grad`` of a squared loss, update);
- ``cnn`` and ``cnn_train``: an NHWC conv net on [32, 32, 32, 3] (3x3
  convolutions to 32, 64 (stride 2) and 64 (stride 2) features with ReLU,
  then a dense layer to 10), forward and SGD step;
- ``mlp_train``: the 256 x 1024 -> 4096 -> 1024 GELU MLP's SGD step;
- ``mlp_train_bf16``, ``transformer_block_train_bf16``: the same steps with
  bf16 parameters and data (JAX computes them in bf16, its dots with bf16
  results);
- ``batched_matmul``: [64, 256, 256] @ [64, 256, 256];
- ``matvec``: [4096, 4096] @ [4096];
- ``dot_s8``: s8 [512, 512] x s8 [512, 512] -> s32; ``dot_s32``: s32
  [512, 512] @ s32 [512, 512] (wrapping);
  ``dot_bf16``: bf16 [1024, 1024] @ bf16 [1024, 1024] (bf16 result);
- dots of other forms: ``dot_nt`` ``x @ w.T`` ([256, 4096] and a
  [1024, 4096] weight stored as PyTorch stores it), ``dot_tn`` ``x.T @ g``
  (a weight gradient: [4096, 256] and [4096, 1024]), ``dot_odd``
  [900, 850] @ [850, 950];
- convolutions of other forms (NHWC x HWIO, SAME padding, f32 unless
  named): ``conv_1x1`` [8, 56, 56, 64] to 256 features, ``conv_dilated``
  3x3 with rhs dilation 2 on [8, 28, 28, 128] to 128, ``conv1d`` 5 taps
  on [16, 1024, 256] to 256, ``conv_bf16`` and ``conv_s8`` (s8 x s8 ->
  s32) 3x3 on [8, 56, 56, 64] to 64, ``conv_depthwise`` 3x3 with one
  feature per group on [8, 56, 56, 128], ``conv_depthwise_grads`` that
  layer with both of its gradients (jax.vjp), ``conv3d`` NDHWC x DHWIO
  3x3x3 on [2, 16, 32, 32, 16] to 32 features, ``conv_batch1`` 3x3 on [1,
  14, 14, 256] to 256 (a late layer at inference);
- ``softmax_<type>_<size>``, ``layernorm_<type>_<size>``,
  ``gelu_<type>_<size>``: ``jax.nn.softmax`` over the last axis, the
  layernorm above (with scale and offset) and ``jax.nn.gelu`` (its default
  tanh form) on [rows, 1024] at f32, bf16 and f16, written as a user
  writes them for that type (no casts: JAX decides what runs in f32).
  Sizes by element count: ``256K`` (256 rows: a cache-resident working
  set), ``4M`` (4096 rows: 16 MB at f32, half the last-level cache here)
  and ``16M`` (16384 rows: 64 MB at f32, past any cache), f16 at 4M only;
- ``cumsum_f32_4M`` and ``cumsum_axis0_f32_4M``: ``jnp.cumsum`` of
  f32[4096, 1024] along its rows and along its columns (JAX lowers both
  to a reduce-window over the whole prefix); ``argmax_f32_4M``:
  ``jnp.argmax`` of its rows (a variadic reduce with an iota);
- ``gelu_exact_<type>_4M``: ``jax.nn.gelu(x, approximate=False)`` (the
  erf form, PyTorch's default GELU; JAX lowers its erfc as polynomials
  and an exp) at f32 and bf16 on [4096, 1024].
"""
import argparse
import gzip
import math
import os

HERE = os.path.dirname(os.path.abspath(__file__))
OUT_DIR = os.path.join(HERE, "modules")
LR = 0.01
D_MODEL, HEADS, FF = 512, 8, 2048


def _jax():
    import jax
    import jax.numpy as jnp
    return jax, jnp


def _sds(*shape, dtype=None):
    jax, jnp = _jax()
    return jax.ShapeDtypeStruct(shape, dtype or jnp.float32)


def _sgd(loss):
    jax, _ = _jax()

    def step(params, *data):
        value, grads = jax.value_and_grad(loss)(params, *data)
        return jax.tree_util.tree_map(lambda p, g: p - LR * g, params, grads), value
    return step


def _layernorm(jnp, x, g, b, eps=1e-5):
    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean((x - mean) ** 2, axis=-1, keepdims=True)
    return (x - mean) * (1.0 / jnp.sqrt(var + eps)) * g + b


def _attention(x, p):
    jax, jnp = _jax()
    b, s, d = x.shape
    dh = d // HEADS
    q = (x @ p["wq"]).reshape(b, s, HEADS, dh)
    k = (x @ p["wk"]).reshape(b, s, HEADS, dh)
    v = (x @ p["wv"]).reshape(b, s, HEADS, dh)
    scores = jnp.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(dh)
    scores = jnp.where(jnp.tril(jnp.ones((s, s), bool)), scores, -1e9)
    out = jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(scores, axis=-1), v)
    return out.reshape(b, s, d) @ p["wo"]


def _attention_params():
    return {name: _sds(D_MODEL, D_MODEL) for name in ("wq", "wk", "wv", "wo")}


def _block(p, x):
    jax, jnp = _jax()
    x = x + _attention(_layernorm(jnp, x, p["ln1_g"], p["ln1_b"]), p)
    h = jax.nn.gelu(_layernorm(jnp, x, p["ln2_g"], p["ln2_b"]) @ p["w1"] + p["b1"])
    return x + h @ p["w2"] + p["b2"]


def _block_params():
    p = _attention_params()
    p.update(ln1_g=_sds(D_MODEL), ln1_b=_sds(D_MODEL), ln2_g=_sds(D_MODEL),
             ln2_b=_sds(D_MODEL), w1=_sds(D_MODEL, FF), b1=_sds(FF), w2=_sds(FF, D_MODEL),
             b2=_sds(D_MODEL))
    return p


def rmsnorm_residual(dtype_name="f32"):
    jax, jnp = _jax()
    dtype = jnp.bfloat16 if dtype_name == "bf16" else jnp.float32

    def fn(x, r, g):
        h = x + r
        hf = h.astype(jnp.float32)
        scale = jax.lax.rsqrt(jnp.mean(hf * hf, axis=-1, keepdims=True) + 1e-6)
        return (hf * scale).astype(dtype) * g, h
    s = (8192, 1024)
    return fn, (_sds(*s, dtype=dtype), _sds(*s, dtype=dtype), _sds(s[1], dtype=dtype))


def attention(seq, batch):
    return _attention, (_sds(batch, seq, D_MODEL), _attention_params())


def _to(tree, dtype):
    jax, _ = _jax()
    return jax.tree_util.tree_map(lambda s: _sds(*s.shape, dtype=dtype), tree)


def transformer_block(train, dtype_name="f32"):
    jax, jnp = _jax()
    dtype = jnp.bfloat16 if dtype_name == "bf16" else jnp.float32
    x = _sds(4, 256, D_MODEL, dtype=dtype)
    params = _to(_block_params(), dtype)
    if not train:
        return (lambda p, x: _block(p, x)), (params, x)
    return _sgd(lambda p, x, y: jnp.mean((_block(p, x) - y) ** 2)), (params, x, x)


def _conv(x, w, stride):
    jax, _ = _jax()
    return jax.lax.conv_general_dilated(x, w, (stride, stride), "SAME",
                                        dimension_numbers=("NHWC", "HWIO", "NHWC"))


def _cnn(params, x):
    jax, _ = _jax()
    w1, w2, w3, wd = params
    h = jax.nn.relu(_conv(x, w1, 1))
    h = jax.nn.relu(_conv(h, w2, 2))
    h = jax.nn.relu(_conv(h, w3, 2))
    return h.reshape(h.shape[0], -1) @ wd


def cnn(train):
    _, jnp = _jax()
    params = [_sds(3, 3, 3, 32), _sds(3, 3, 32, 64), _sds(3, 3, 64, 64), _sds(8 * 8 * 64, 10)]
    x = _sds(32, 32, 32, 3)
    if not train:
        return _cnn, (params, x)
    return _sgd(lambda p, x, y: jnp.mean((_cnn(p, x) - y) ** 2)), (params, x, _sds(32, 10))


def mlp_train(dtype_name="f32"):
    jax, jnp = _jax()
    dtype = jnp.bfloat16 if dtype_name == "bf16" else jnp.float32

    def forward(p, x):
        return jax.nn.gelu(x @ p["w1"] + p["b1"]) @ p["w2"] + p["b2"]
    params = _to(dict(w1=_sds(1024, 4096), b1=_sds(4096), w2=_sds(4096, 1024), b2=_sds(1024)),
                 dtype)
    return (_sgd(lambda p, x, y: jnp.mean((forward(p, x) - y) ** 2)),
            (params, _sds(256, 1024, dtype=dtype), _sds(256, 1024, dtype=dtype)))


def dot(kind):
    jax, jnp = _jax()
    if kind == "s8":
        fn = lambda a, b: jax.lax.dot(a, b, preferred_element_type=jnp.int32)  # noqa: E731
        return fn, (_sds(512, 512, dtype=jnp.int8), _sds(512, 512, dtype=jnp.int8))
    if kind == "s32":
        return jnp.matmul, (_sds(512, 512, dtype=jnp.int32), _sds(512, 512, dtype=jnp.int32))
    if kind == "bf16":
        return jnp.matmul, (_sds(1024, 1024, dtype=jnp.bfloat16),
                            _sds(1024, 1024, dtype=jnp.bfloat16))
    if kind == "batched":
        return jnp.matmul, (_sds(64, 256, 256), _sds(64, 256, 256))
    return jnp.matmul, (_sds(4096, 4096), _sds(4096))


def dot_form(kind):
    _, jnp = _jax()
    if kind == "nt":
        return (lambda x, w: x @ w.T), (_sds(256, 4096), _sds(1024, 4096))
    if kind == "tn":
        return (lambda x, g: x.T @ g), (_sds(4096, 256), _sds(4096, 1024))
    return jnp.matmul, (_sds(900, 850), _sds(850, 950))


def conv_form(kind):
    jax, jnp = _jax()

    def conv(x, w, dims=("NHWC", "HWIO", "NHWC"), **kw):
        return jax.lax.conv_general_dilated(x, w, (1,) * (x.ndim - 2), "SAME",
                                            dimension_numbers=dims, **kw)
    if kind == "1x1":
        return conv, (_sds(8, 56, 56, 64), _sds(1, 1, 64, 256))
    if kind == "dilated":
        return (lambda x, w: conv(x, w, rhs_dilation=(2, 2))), (_sds(8, 28, 28, 128),
                                                                 _sds(3, 3, 128, 128))
    if kind == "1d":
        return ((lambda x, w: conv(x, w, ("NWC", "WIO", "NWC"))),
                (_sds(16, 1024, 256), _sds(5, 256, 256)))
    if kind == "bf16":
        return conv, (_sds(8, 56, 56, 64, dtype=jnp.bfloat16), _sds(3, 3, 64, 64, dtype=jnp.bfloat16))
    if kind == "batch1":
        return conv, (_sds(1, 14, 14, 256), _sds(3, 3, 256, 256))
    if kind == "3d":
        return ((lambda x, w: conv(x, w, ("NDHWC", "DHWIO", "NDHWC"))),
                (_sds(2, 16, 32, 32, 16), _sds(3, 3, 3, 16, 32)))
    if kind == "s8":
        return ((lambda x, w: conv(x, w, preferred_element_type=jnp.int32)),
                (_sds(8, 56, 56, 64, dtype=jnp.int8), _sds(3, 3, 64, 64, dtype=jnp.int8)))

    def depthwise(x, w):
        return conv(x, w, feature_group_count=x.shape[-1])
    args = (_sds(8, 56, 56, 128), _sds(3, 3, 1, 128))
    if kind == "depthwise":
        return depthwise, args

    def grads(x, w, g):
        y, vjp = jax.vjp(depthwise, x, w)
        return (y,) + vjp(g)
    return grads, args + (_sds(8, 56, 56, 128),)


ROWS = {"256K": 256, "4M": 4096, "16M": 16384}


def memory_bound(kind, dtype_name, size):
    jax, jnp = _jax()
    dtype = {"f32": jnp.float32, "bf16": jnp.bfloat16, "f16": jnp.float16}[dtype_name]
    x = _sds(ROWS[size], 1024, dtype=dtype)
    if kind == "softmax":
        return (lambda x: jax.nn.softmax(x, axis=-1)), (x,)
    if kind == "gelu":
        return jax.nn.gelu, (x,)
    if kind == "gelu_exact":
        return (lambda x: jax.nn.gelu(x, approximate=False)), (x,)
    return ((lambda x, g, b: _layernorm(jnp, x, g, b)),
            (x, _sds(1024, dtype=dtype), _sds(1024, dtype=dtype)))


def argmax():
    _, jnp = _jax()
    return (lambda x: jnp.argmax(x, axis=-1)), (_sds(ROWS["4M"], 1024),)


def scan(axis):
    _, jnp = _jax()
    return (lambda x: jnp.cumsum(x, axis=axis)), (_sds(ROWS["4M"], 1024),)


CATALOG = {
    "rmsnorm_residual": lambda: rmsnorm_residual("f32"),
    "rmsnorm_residual_bf16": lambda: rmsnorm_residual("bf16"),
    "attention_S128": lambda: attention(128, 8),
    "attention_S512": lambda: attention(512, 2),
    "attention_S2048": lambda: attention(2048, 1),
    "transformer_block": lambda: transformer_block(False),
    "transformer_block_train": lambda: transformer_block(True),
    "cnn": lambda: cnn(False),
    "cnn_train": lambda: cnn(True),
    "mlp_train": mlp_train,
    "mlp_train_bf16": lambda: mlp_train("bf16"),
    "transformer_block_train_bf16": lambda: transformer_block(True, "bf16"),
    "batched_matmul": lambda: dot("batched"),
    "matvec": lambda: dot("matvec"),
    "dot_s8": lambda: dot("s8"),
    "dot_bf16": lambda: dot("bf16"),
    "dot_s32": lambda: dot("s32"),
    "dot_nt": lambda: dot_form("nt"),
    "dot_tn": lambda: dot_form("tn"),
    "dot_odd": lambda: dot_form("odd"),
    "conv_1x1": lambda: conv_form("1x1"),
    "conv_dilated": lambda: conv_form("dilated"),
    "conv1d": lambda: conv_form("1d"),
    "conv_bf16": lambda: conv_form("bf16"),
    "conv_s8": lambda: conv_form("s8"),
    "conv_depthwise": lambda: conv_form("depthwise"),
    "conv_depthwise_grads": lambda: conv_form("depthwise_grads"),
    "conv3d": lambda: conv_form("3d"),
    "conv_batch1": lambda: conv_form("batch1"),
}
CATALOG.update({
    f"{kind}_{t}_{size}": (lambda kind=kind, t=t, size=size: memory_bound(kind, t, size))
    for kind in ("softmax", "layernorm", "gelu") for t in ("f32", "bf16", "f16")
    for size in ROWS if t != "f16" or size == "4M"})
CATALOG.update({
    "cumsum_f32_4M": lambda: scan(-1),
    "cumsum_axis0_f32_4M": lambda: scan(0),
    "argmax_f32_4M": lambda: argmax(),
})
CATALOG.update({f"gelu_exact_{t}_4M": (lambda t=t: memory_bound("gelu_exact", t, "4M"))
                for t in ("f32", "bf16")})


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="comma-separated names (default: all)")
    args = parser.parse_args()
    names = [n for n in args.only.split(",") if n] or list(CATALOG)
    unknown = [n for n in names if n not in CATALOG]
    if unknown:
        parser.error(f"unknown module(s) {', '.join(unknown)}; known: {', '.join(CATALOG)}")
    jax, _ = _jax()
    for name in names:
        fn, fn_args = CATALOG[name]()
        text = jax.jit(fn).lower(*fn_args).as_text(dialect="hlo")
        path = os.path.join(OUT_DIR, f"rt_{name}.hlo.gz")
        with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0,
                                                    filename="") as f:
            f.write(text.encode())
        print(f"{path}: {len(text.splitlines())} lines")


if __name__ == "__main__":
    main()
