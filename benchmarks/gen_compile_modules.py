"""Generates the JAX-lowered HLO modules that benchmarks/compile_time.py compiles.

    /tmp/jaxenv/bin/python benchmarks/gen_compile_modules.py [--only=mlp_train_L8,...]
        [--no_jax_timing] [--jax_timeout=300] [--jax_skip_above=120]

Run it with an interpreter that has JAX (JAX is never a dependency of this
project; only this script and the optional jax.jit timing use it). Writes,
gzip-compressed, into benchmarks/modules/:

- ``mlp_train_L{n}.hlo.gz``: one SGD step (forward, ``jax.grad`` of a squared
  loss, update) of an ``n``-layer ReLU MLP, every layer the same width;
- ``transformer_train_L{n}.hlo.gz``: the same for ``n`` pre-LN transformer
  blocks (multi-head causal attention, GELU MLP, two layernorms per block);
- ``mlp_varied_train_L{n}.hlo.gz``: the MLP step with every layer a different
  width, so no two layers' kernels are the same;
- ``seed.hlo.gz`` (``reduce_sum(x + y*z)``), ``softmax.hlo.gz``,
  ``layernorm.hlo.gz``, ``attention.hlo.gz``: small forward functions.

The layers are a Python loop, so the HLO holds one copy of each layer (as a
traced training step does; no scan/while). The text is what
``jax.jit(f).lower(*args).as_text(dialect="hlo")`` returns: the module before
any XLA pass ran. Sizes go from ~1k to ~40k instructions, roughly doubling.

``jax_compile_times.json`` records, per module, its instruction count and the
wall time of ``jax.jit(f).lower(*args).compile()`` (XLA:CPU) measured here:
the median of 3 runs for modules under 5,000 instructions, one run above,
after a small warm-up compile in the same process; also the CPU time
(user + system, all threads) of the compile and the 1-minute load average,
since other work on a shared machine inflates wall times.
Each compile runs in a child process with ``--jax_timeout``; once a module of
a family takes longer than ``--jax_skip_above`` seconds, the larger ones of
that family are skipped and recorded as skipped.
"""
import argparse
import gzip
import json
import math
import os
import platform
import re
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
OUT_DIR = os.path.join(HERE, "modules")
TIMES_JSON = os.path.join(OUT_DIR, "jax_compile_times.json")

# Layers per module, chosen so that the instruction counts come out near
# 1k, 2k, 5k, 10k, 20k, 40k (see the JSON for the exact counts).
MLP_LAYERS = (37, 74, 185, 370, 740, 1480)
TRANSFORMER_LAYERS = (3, 5, 12, 25, 50, 100)
MLP_VARIED_LAYERS = (27, 54, 135, 270, 540, 1080)

MLP_BATCH, MLP_WIDTH = 8, 32
TF_BATCH, TF_SEQ, TF_MODEL, TF_HEADS, TF_FF = 2, 16, 32, 4, 64
LR = 0.01


# ---------------------------------------------------------------------------
# The functions (built lazily so that --help works without JAX).

def _jax():
    import jax
    import jax.numpy as jnp
    return jax, jnp


def mlp_widths(layers, varied):
    """Widths of the layer boundaries: layers + 1 numbers. Varied: every
    layer's (in, out) pair differs from every other's."""
    if not varied:
        return [MLP_WIDTH] * (layers + 1)
    return [16 + i for i in range(layers + 1)]


def mlp_train(layers, varied=False):
    jax, jnp = _jax()
    widths = mlp_widths(layers, varied)

    def forward(params, x):
        h = x
        for i, (w, b) in enumerate(params):
            h = h @ w + b
            if i + 1 < len(params):
                h = jax.nn.relu(h)
        return h

    def loss(params, x, y):
        return jnp.mean((forward(params, x) - y) ** 2)

    def step(params, x, y):
        l, grads = jax.value_and_grad(loss)(params, x, y)
        new = jax.tree_util.tree_map(lambda p, g: p - LR * g, params, grads)
        return new, l

    f32 = jnp.float32
    params = [(jax.ShapeDtypeStruct((widths[i], widths[i + 1]), f32),
               jax.ShapeDtypeStruct((widths[i + 1],), f32)) for i in range(layers)]
    x = jax.ShapeDtypeStruct((MLP_BATCH, widths[0]), f32)
    y = jax.ShapeDtypeStruct((MLP_BATCH, widths[-1]), f32)
    return step, (params, x, y)


def _layernorm(jnp, x, g, b, eps=1e-5):
    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean((x - mean) ** 2, axis=-1, keepdims=True)
    return (x - mean) * (1.0 / jnp.sqrt(var + eps)) * g + b


def _attention(jax, jnp, x, wq, wk, wv, wo, heads):
    B, S, D = x.shape
    dh = D // heads
    q = (x @ wq).reshape(B, S, heads, dh)
    k = (x @ wk).reshape(B, S, heads, dh)
    v = (x @ wv).reshape(B, S, heads, dh)
    scores = jnp.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(dh)
    mask = jnp.tril(jnp.ones((S, S), bool))
    scores = jnp.where(mask, scores, -1e9)
    probs = jax.nn.softmax(scores, axis=-1)
    out = jnp.einsum("bhqk,bkhd->bqhd", probs, v).reshape(B, S, D)
    return out @ wo


def transformer_train(layers):
    jax, jnp = _jax()

    def block(p, x):
        h = _layernorm(jnp, x, p["ln1_g"], p["ln1_b"])
        x = x + _attention(jax, jnp, h, p["wq"], p["wk"], p["wv"], p["wo"], TF_HEADS)
        h = _layernorm(jnp, x, p["ln2_g"], p["ln2_b"])
        h = jax.nn.gelu(h @ p["w1"] + p["b1"])
        return x + h @ p["w2"] + p["b2"]

    def loss(params, x, y):
        for p in params:
            x = block(p, x)
        return jnp.mean((x - y) ** 2)

    def step(params, x, y):
        l, grads = jax.value_and_grad(loss)(params, x, y)
        new = jax.tree_util.tree_map(lambda p, g: p - LR * g, params, grads)
        return new, l

    f32 = jnp.float32
    D, F = TF_MODEL, TF_FF
    sds = lambda *s: jax.ShapeDtypeStruct(s, f32)
    params = [dict(ln1_g=sds(D), ln1_b=sds(D), wq=sds(D, D), wk=sds(D, D), wv=sds(D, D),
                   wo=sds(D, D), ln2_g=sds(D), ln2_b=sds(D), w1=sds(D, F), b1=sds(F),
                   w2=sds(F, D), b2=sds(D)) for _ in range(layers)]
    x = sds(TF_BATCH, TF_SEQ, D)
    return step, (params, x, x)


def seed():
    jax, jnp = _jax()
    s = jax.ShapeDtypeStruct((1024,), jnp.float32)
    return (lambda x, y, z: jnp.sum(x + y * z)), (s, s, s)


def softmax():
    jax, jnp = _jax()
    return (lambda x: jax.nn.softmax(x, axis=-1)), (jax.ShapeDtypeStruct((256, 512), jnp.float32),)


def layernorm():
    jax, jnp = _jax()
    d = 512
    sds = lambda *s: jax.ShapeDtypeStruct(s, jnp.float32)
    return (lambda x, g, b: _layernorm(jnp, x, g, b)), (sds(256, d), sds(d), sds(d))


def attention():
    jax, jnp = _jax()
    B, S, D, H = 4, 128, 256, 8
    sds = lambda *s: jax.ShapeDtypeStruct(s, jnp.float32)
    fn = lambda x, wq, wk, wv, wo: _attention(jax, jnp, x, wq, wk, wv, wo, H)
    return fn, (sds(B, S, D), sds(D, D), sds(D, D), sds(D, D), sds(D, D))


def catalog():
    """name -> (family, size index, builder); in generation order."""
    mods = {
        "seed": ("small", 0, seed),
        "softmax": ("small", 0, softmax),
        "layernorm": ("small", 0, layernorm),
        "attention": ("small", 0, attention),
    }
    for i, n in enumerate(MLP_LAYERS):
        mods[f"mlp_train_L{n}"] = ("mlp_train", i, lambda n=n: mlp_train(n))
    for i, n in enumerate(TRANSFORMER_LAYERS):
        mods[f"transformer_train_L{n}"] = ("transformer_train", i, lambda n=n: transformer_train(n))
    for i, n in enumerate(MLP_VARIED_LAYERS):
        mods[f"mlp_varied_train_L{n}"] = ("mlp_varied_train", i, lambda n=n: mlp_train(n, varied=True))
    return mods


# ---------------------------------------------------------------------------

INSTRUCTION = re.compile(r"^\s*(ROOT\s+)?[%\w.\-]+\s*=\s", re.M)


def count_instructions(text):
    """Instructions in all computations of an HLO text (one per `name = ...` line)."""
    return len(INSTRUCTION.findall(text))


def lower(name):
    jax, _ = _jax()
    fn, args = catalog()[name][2]()
    return jax.jit(fn).lower(*args)


def child_compile_time(name, runs):
    """In a child process: lower `name` and time `.compile()` `runs` times
    (a fresh jax.jit each time, so the compilation cache never answers)."""
    jax, jnp = _jax()
    # One-time initialization (backend, compiler) is not charged to the
    # module: compile a small f64 function first (compile_time.py does the
    # same on our side).
    t = time.perf_counter()
    jax.jit(lambda a, b: a * b).lower(*[jax.ShapeDtypeStruct((3,), jnp.float32)] * 2).compile()
    warmup = time.perf_counter() - t
    times, cpu = [], []
    for _ in range(runs):
        fn, args = catalog()[name][2]()
        lowered = jax.jit(fn).lower(*args)
        c = _cpu_seconds()
        t = time.perf_counter()
        lowered.compile()
        times.append(time.perf_counter() - t)
        cpu.append(_cpu_seconds() - c)
        jax.clear_caches()
    print(json.dumps({"times": times, "cpu": cpu, "first_compile_in_process": warmup}))


def _cpu_seconds():
    """User + system CPU seconds of this process (all its threads): less
    sensitive than wall time to other work on a shared machine."""
    t = os.times()
    return t.user + t.system


def jax_compile_time(name, runs, timeout):
    cmd = [sys.executable, os.path.abspath(__file__), "--_child_compile", name, "--_runs", str(runs)]
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return None, f"over {timeout} s (timed out)"
    if out.returncode != 0:
        return None, "failed: " + out.stderr.strip().splitlines()[-1][:200]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    return result, None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="comma-separated module names (default: all)")
    parser.add_argument("--no_jax_timing", action="store_true", help="write the modules only")
    parser.add_argument("--no_write", action="store_true", help="time only, keep the modules on disk")
    parser.add_argument("--jax_timeout", type=float, default=300,
                        help="seconds one jax compile may take before it is abandoned")
    parser.add_argument("--jax_skip_above", type=float, default=120,
                        help="after a compile slower than this, skip the larger modules of its family")
    parser.add_argument("--_child_compile", default="", help=argparse.SUPPRESS)
    parser.add_argument("--_runs", type=int, default=1, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args._child_compile:
        return child_compile_time(args._child_compile, args._runs)

    import jax
    mods = catalog()
    names = [n for n in mods if not args.only or n in args.only.split(",")]
    os.makedirs(OUT_DIR, exist_ok=True)
    record = {}
    if os.path.exists(TIMES_JSON):
        with open(TIMES_JSON) as f:
            record = json.load(f)
    record.setdefault("modules", {})
    record["environment"] = {
        "jax": jax.__version__, "jaxlib": __import__("jaxlib").__version__,
        "backend": "XLA:CPU", "cpus": os.cpu_count(), "machine": platform.machine(),
        "python": platform.python_version(),
        "method": "wall time of jax.jit(f).lower(*args).compile() in a child process, after a "
                  "small warm-up compile there; median of 3 runs under 5,000 instructions, 1 run above",
    }
    slow_family = {}
    for name in names:
        family, index, _ = mods[name]
        path = os.path.join(OUT_DIR, name + ".hlo.gz")
        if args.no_write:
            with gzip.open(path, "rt") as f:
                text = f.read()
        else:
            t = time.perf_counter()
            text = lower(name).as_text(dialect="hlo")
            t_lower = time.perf_counter() - t
            # mtime=0: the same text gives the same bytes (no spurious diffs).
            with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0,
                                                        compresslevel=9) as f:
                f.write(text.encode())
        n = count_instructions(text)
        entry = record["modules"].setdefault(name, {})
        entry.update(family=family, instructions=n, hlo_bytes=len(text),
                     gz_bytes=os.path.getsize(path))
        if not args.no_write:
            entry["jax_lower_s"] = round(t_lower, 3)
        msg = f"{name:28} {n:>7} instructions  {entry['gz_bytes'] / 1e3:8.1f} kB gz"
        if not args.no_jax_timing:
            if family in slow_family:
                entry.update(jax_compile_s=None, jax_compile_runs=[],
                             jax_skipped=f"skipped: {slow_family[family]} took over "
                                         f"{args.jax_skip_above:.0f} s")
                msg += "  jax: skipped"
            else:
                runs = 3 if n < 5000 else 1
                result, why = jax_compile_time(name, runs, args.jax_timeout)
                if result is None:
                    entry.update(jax_compile_s=None, jax_compile_runs=[], jax_skipped=why)
                    slow_family[family] = name
                    msg += f"  jax: {why}"
                else:
                    times = result["times"]
                    med = statistics.median(times)
                    if name == "seed":
                        record["environment"]["jax_first_compile_in_process_s"] = round(
                            result["first_compile_in_process"], 4)
                    entry.update(jax_compile_s=round(med, 4),
                                 jax_compile_runs=[round(t, 4) for t in times],
                                 jax_compile_cpu_s=round(statistics.median(result["cpu"]), 4),
                                 load_average=round(os.getloadavg()[0], 2))
                    entry.pop("jax_skipped", None)
                    msg += (f"  jax.jit compile {med:8.3f} s (cpu {entry['jax_compile_cpu_s']:.3f} s, "
                            f"load {entry['load_average']})")
                    if med > args.jax_skip_above and family != "small":
                        slow_family[family] = name
        print(msg, flush=True)
        with open(TIMES_JSON, "w") as f:
            json.dump(record, f, indent=1, sort_keys=True)
            f.write("\n")


if __name__ == "__main__":
    main()
