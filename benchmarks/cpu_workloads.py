"""CPU backend workloads, side by side with NumPy and (where installed) jax.jit.

    .venv/bin/python benchmarks/cpu_workloads.py [--repeats=N] [--rounds=R] [--quick]
        [--only=TEXT] [--sweep]

Each workload is an HLO module compiled by this project's CPU backend, the
same computation written in NumPy, and, when ``import jax`` works, the same
function under jax.jit. A block is the median of ``--repeats`` runs after a
pause (so that the previous contender's threads are idle) and a warm-up;
ours and jax.jit run ``--rounds`` blocks each, alternating, and the medians
of the blocks are reported with the range of the per-round jax/ours ratios
(one block on a shared VM swings the ratio by 20% between runs); NumPy runs
one block. Ratios are other/ours (above 1 means this project is faster). The same run
first measures this machine's limits: streaming bandwidth (STREAM-style copy
and scale over arrays far larger than the last-level cache, 256 MiB each:
the faster of NumPy's one-thread copy and a compiled multi-threaded scale,
each the median of 5 runs) and
peak f32 GEMM rate (the best of NumPy's and this project's 2048^3 matmul;
NumPy's also without OPENBLAS_CORETYPE where that is set, in a child
process: the variable holds OpenBLAS to other kernels than the CPU's best,
and the run says which it runs);
the last column is each workload's achieved rate as a fraction of the
relevant limit (bytes that must move / bandwidth, or FLOPs / peak). A workload
named "fast-math" is compiled with --xla_cpu_enable_fast_math=true (for
GELU: a 6-ulp rational tanh instead of the 2-ulp default; jax.jit's tanh is
a 5-ulp rational function either way). The bf16 and f16 rows are the
memory-bound workloads written as jax lowers them on inputs of that type
(elementwise ops rounded to the type, sums through f32), counted at 2 bytes
per element; their NumPy column casts to f32, computes and rounds the
result back (the fastest way NumPy has), and they are checked against it
with a tolerance for 8 (bf16) or 11 (f16) significant bits.
With --sweep, each family instead runs at sizes from cache-resident (tens
of KB) to far beyond the last-level cache (128-192 MB moved), so the table
shows how the time grows with the size: f32 sum, softmax, layernorm and
GELU, bf16 softmax and GELU, f32 GEMMs from 64^3 to 2048^3 and bf16
matrix-vector products from 256^2 to 8192^2.
jax is never a dependency: run the script from an environment that has it
to get that column (the README says how the table was made).
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

import ml_dtypes
import numpy as np

import xla
from xla import _core

REDUCERS = """
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}

%max (c: f32[], d: f32[]) -> f32[] {
  %c = f32[] parameter(0)
  %d = f32[] parameter(1)
  ROOT %m = f32[] maximum(%c, %d)
}
"""


def seed(n):
    return f"""HloModule seed
{REDUCERS}
ENTRY %main (x: f32[{n}], y: f32[{n}], z: f32[{n}]) -> f32[] {{
  %x = f32[{n}] parameter(0)
  %y = f32[{n}] parameter(1)
  %z = f32[{n}] parameter(2)
  %yz = f32[{n}] multiply(%y, %z)
  %t = f32[{n}] add(%x, %yz)
  %zero = f32[] constant(0)
  ROOT %r = f32[] reduce(%t, %zero), dimensions={{0}}, to_apply=%add
}}
"""


def softmax(r, c):
    return f"""HloModule softmax
{REDUCERS}
ENTRY %main (x: f32[{r},{c}]) -> f32[{r},{c}] {{
  %x = f32[{r},{c}] parameter(0)
  %ninf = f32[] constant(-inf)
  %mx = f32[{r}] reduce(%x, %ninf), dimensions={{1}}, to_apply=%max
  %mb = f32[{r},{c}] broadcast(%mx), dimensions={{0}}
  %sub = f32[{r},{c}] subtract(%x, %mb)
  %e = f32[{r},{c}] exponential(%sub)
  %zero = f32[] constant(0)
  %sm = f32[{r}] reduce(%e, %zero), dimensions={{1}}, to_apply=%add
  %sb = f32[{r},{c}] broadcast(%sm), dimensions={{0}}
  ROOT %out = f32[{r},{c}] divide(%e, %sb)
}}
"""


def layernorm(r, c):
    return f"""HloModule layernorm
{REDUCERS}
ENTRY %main (x: f32[{r},{c}], g: f32[{c}], bt: f32[{c}]) -> f32[{r},{c}] {{
  %x = f32[{r},{c}] parameter(0)
  %g = f32[{c}] parameter(1)
  %bt = f32[{c}] parameter(2)
  %zero = f32[] constant(0)
  %s1 = f32[{r}] reduce(%x, %zero), dimensions={{1}}, to_apply=%add
  %inv = f32[] constant({1.0 / c!r})
  %invb = f32[{r}] broadcast(%inv), dimensions={{}}
  %mean = f32[{r}] multiply(%s1, %invb)
  %meanb = f32[{r},{c}] broadcast(%mean), dimensions={{0}}
  %xc = f32[{r},{c}] subtract(%x, %meanb)
  %sq = f32[{r},{c}] multiply(%xc, %xc)
  %s2 = f32[{r}] reduce(%sq, %zero), dimensions={{1}}, to_apply=%add
  %var = f32[{r}] multiply(%s2, %invb)
  %eps = f32[] constant(1e-05)
  %epsb = f32[{r}] broadcast(%eps), dimensions={{}}
  %ve = f32[{r}] add(%var, %epsb)
  %rs = f32[{r}] rsqrt(%ve)
  %rsb = f32[{r},{c}] broadcast(%rs), dimensions={{0}}
  %xn = f32[{r},{c}] multiply(%xc, %rsb)
  %gb = f32[{r},{c}] broadcast(%g), dimensions={{1}}
  %xg = f32[{r},{c}] multiply(%xn, %gb)
  %bb = f32[{r},{c}] broadcast(%bt), dimensions={{1}}
  ROOT %y = f32[{r},{c}] add(%xg, %bb)
}}
"""


def _gelu_lines(v, shape, dims):
    """HLO lines computing gelu (tanh form) of %v; the result is %{v}_gelu."""
    def const(name, value):
        return [f"  %{v}_{name}s = f32[] constant({value!r})",
                f"  %{v}_{name} = {shape} broadcast(%{v}_{name}s), dimensions={{}}"]
    lines = const("half", 0.5) + const("one", 1.0) + const("c", 0.044715) + \
        const("k", float(np.float32(np.sqrt(2 / np.pi))))
    lines += [
        f"  %{v}_x2 = {shape} multiply(%{v}, %{v})",
        f"  %{v}_x3 = {shape} multiply(%{v}_x2, %{v})",
        f"  %{v}_cx3 = {shape} multiply(%{v}_c, %{v}_x3)",
        f"  %{v}_in = {shape} add(%{v}, %{v}_cx3)",
        f"  %{v}_kin = {shape} multiply(%{v}_k, %{v}_in)",
        f"  %{v}_t = {shape} tanh(%{v}_kin)",
        f"  %{v}_1t = {shape} add(%{v}_one, %{v}_t)",
        f"  %{v}_hx = {shape} multiply(%{v}_half, %{v})",
        f"  %{v}_gelu = {shape} multiply(%{v}_hx, %{v}_1t)",
    ]
    return lines


def gelu(n):
    shape = f"f32[{n}]"
    body = "\n".join(_gelu_lines("x", shape, 1))
    return f"""HloModule gelu

ENTRY %main (x: {shape}) -> {shape} {{
  %x = {shape} parameter(0)
{body}
  ROOT %out = {shape} copy(%x_gelu)
}}
"""


# bf16/f16 versions of the memory-bound workloads, written as jax 0.10.2
# lowers the same functions on inputs of that type: elementwise ops in the
# narrow type, every add-reduction through a convert to f32 and back, the
# max-reduction in the narrow type, constants rounded to the type.
HALF_NP = {"bf16": ml_dtypes.bfloat16, "f16": np.float16}


def _half_const(t, value):
    return repr(float(HALF_NP[t](value)))


def _half_reducers(t):
    return REDUCERS + f"""
%max_{t} (e: {t}[], f: {t}[]) -> {t}[] {{
  %e = {t}[] parameter(0)
  %f = {t}[] parameter(1)
  ROOT %m = {t}[] maximum(%e, %f)
}}
"""


def seed_half(n, t):
    return f"""HloModule seed_{t}
{REDUCERS}
ENTRY %main (x: {t}[{n}], y: {t}[{n}], z: {t}[{n}]) -> {t}[] {{
  %x = {t}[{n}] parameter(0)
  %y = {t}[{n}] parameter(1)
  %z = {t}[{n}] parameter(2)
  %yz = {t}[{n}] multiply(%y, %z)
  %t = {t}[{n}] add(%x, %yz)
  %tf = f32[{n}] convert(%t)
  %zero = f32[] constant(0)
  %r = f32[] reduce(%tf, %zero), dimensions={{0}}, to_apply=%add
  ROOT %out = {t}[] convert(%r)
}}
"""


def softmax_half(r, c, t):
    return f"""HloModule softmax_{t}
{_half_reducers(t)}
ENTRY %main (x: {t}[{r},{c}]) -> {t}[{r},{c}] {{
  %x = {t}[{r},{c}] parameter(0)
  %ninf = {t}[] constant(-inf)
  %mx0 = {t}[{r}] reduce(%x, %ninf), dimensions={{1}}, to_apply=%max_{t}
  %ninfb = {t}[{r}] broadcast(%ninf), dimensions={{}}
  %mx = {t}[{r}] maximum(%mx0, %ninfb)
  %mb = {t}[{r},{c}] broadcast(%mx), dimensions={{0}}
  %sub = {t}[{r},{c}] subtract(%x, %mb)
  %e = {t}[{r},{c}] exponential(%sub)
  %ef = f32[{r},{c}] convert(%e)
  %zero = f32[] constant(0)
  %sm = f32[{r}] reduce(%ef, %zero), dimensions={{1}}, to_apply=%add
  %smh = {t}[{r}] convert(%sm)
  %sb = {t}[{r},{c}] broadcast(%smh), dimensions={{0}}
  ROOT %out = {t}[{r},{c}] divide(%e, %sb)
}}
"""


def layernorm_half(r, c, t):
    return f"""HloModule layernorm_{t}
{REDUCERS}
ENTRY %main (x: {t}[{r},{c}], g: {t}[{c}], bt: {t}[{c}]) -> {t}[{r},{c}] {{
  %x = {t}[{r},{c}] parameter(0)
  %g = {t}[{c}] parameter(1)
  %bt = {t}[{c}] parameter(2)
  %xf = f32[{r},{c}] convert(%x)
  %zero = f32[] constant(0)
  %s1 = f32[{r}] reduce(%xf, %zero), dimensions={{1}}, to_apply=%add
  %cnt = f32[] constant({c})
  %cntb = f32[{r}] broadcast(%cnt), dimensions={{}}
  %mean = f32[{r}] divide(%s1, %cntb)
  %meanh = {t}[{r}] convert(%mean)
  %meanb = {t}[{r},{c}] broadcast(%meanh), dimensions={{0}}
  %xc = {t}[{r},{c}] subtract(%x, %meanb)
  %sq = {t}[{r},{c}] multiply(%xc, %xc)
  %sqf = f32[{r},{c}] convert(%sq)
  %s2 = f32[{r}] reduce(%sqf, %zero), dimensions={{1}}, to_apply=%add
  %var = f32[{r}] divide(%s2, %cntb)
  %varh = {t}[{r}] convert(%var)
  %eps = {t}[] constant({_half_const(t, 1e-5)})
  %epsb = {t}[{r}] broadcast(%eps), dimensions={{}}
  %ve = {t}[{r}] add(%varh, %epsb)
  %sd = {t}[{r}] sqrt(%ve)
  %one = {t}[] constant(1)
  %oneb = {t}[{r}] broadcast(%one), dimensions={{}}
  %inv = {t}[{r}] divide(%oneb, %sd)
  %invb = {t}[{r},{c}] broadcast(%inv), dimensions={{0}}
  %xn = {t}[{r},{c}] multiply(%xc, %invb)
  %gb = {t}[{r},{c}] broadcast(%g), dimensions={{1}}
  %xg = {t}[{r},{c}] multiply(%xn, %gb)
  %bb = {t}[{r},{c}] broadcast(%bt), dimensions={{1}}
  ROOT %y = {t}[{r},{c}] add(%xg, %bb)
}}
"""


def gelu_half(n, t):
    """jax.nn.gelu(x, approximate=True): x * ((1 + tanh(k * (x + c * x^3))) * 0.5)."""
    s = f"{t}[{n}]"

    def const(name, value):
        return (f"  %{name}s = {t}[] constant({_half_const(t, value)})\n"
                f"  %{name} = {s} broadcast(%{name}s), dimensions={{}}")
    return f"""HloModule gelu_{t}

ENTRY %main (x: {s}) -> {s} {{
  %x = {s} parameter(0)
{const("c", 0.044715)}
{const("k", np.sqrt(2 / np.pi))}
{const("one", 1.0)}
{const("half", 0.5)}
  %x2 = {s} multiply(%x, %x)
  %x3 = {s} multiply(%x2, %x)
  %cx3 = {s} multiply(%x3, %c)
  %in = {s} add(%x, %cx3)
  %kin = {s} multiply(%in, %k)
  %th = {s} tanh(%kin)
  %1t = {s} add(%th, %one)
  %h = {s} multiply(%1t, %half)
  ROOT %out = {s} multiply(%x, %h)
}}
"""


def concatenate(r, c, k):
    """k f32[r,c] arrays side by side (along the minor dimension)."""
    params = "\n".join(f"  %p{i} = f32[{r},{c}] parameter({i})" for i in range(k))
    names = ", ".join(f"%p{i}" for i in range(k))
    return f"""HloModule concatenate
ENTRY %main {{
{params}
  ROOT %c = f32[{r},{k * c}] concatenate({names}), dimensions={{1}}
}}"""


def matmul(n, operand="f32", result="f32"):
    return f"""HloModule matmul

ENTRY %main (a: {operand}[{n},{n}], b: {operand}[{n},{n}]) -> {result}[{n},{n}] {{
  %a = {operand}[{n},{n}] parameter(0)
  %b = {operand}[{n},{n}] parameter(1)
  ROOT %c = {result}[{n},{n}] dot(%a, %b), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
}}
"""


def batched_matmul(batch, n, operand, result):
    t = f"[{batch},{n},{n}]"
    return f"""HloModule batched_matmul

ENTRY %main (a: {operand}{t}, b: {operand}{t}) -> {result}{t} {{
  %a = {operand}{t} parameter(0)
  %b = {operand}{t} parameter(1)
  ROOT %c = {result}{t} dot(%a, %b), lhs_batch_dims={{0}}, rhs_batch_dims={{0}}, lhs_contracting_dims={{2}}, rhs_contracting_dims={{1}}
}}
"""


def matvec(m, k, operand, result):
    return f"""HloModule matvec

ENTRY %main (a: {operand}[{m},{k}], x: {operand}[{k}]) -> {result}[{m}] {{
  %a = {operand}[{m},{k}] parameter(0)
  %x = {operand}[{k}] parameter(1)
  ROOT %y = {result}[{m}] dot(%a, %x), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
}}
"""


def mlp(b, d, h):
    hs = f"f32[{b},{h}]"
    body = "\n".join(_gelu_lines("z1", hs, 2))
    return f"""HloModule mlp

ENTRY %main (x: f32[{b},{d}], w1: f32[{d},{h}], b1: f32[{h}], w2: f32[{h},{d}], b2: f32[{d}]) -> f32[{b},{d}] {{
  %x = f32[{b},{d}] parameter(0)
  %w1 = f32[{d},{h}] parameter(1)
  %b1 = f32[{h}] parameter(2)
  %w2 = f32[{h},{d}] parameter(3)
  %b2 = f32[{d}] parameter(4)
  %mm1 = {hs} dot(%x, %w1), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
  %b1b = {hs} broadcast(%b1), dimensions={{1}}
  %z1 = {hs} add(%mm1, %b1b)
{body}
  %mm2 = f32[{b},{d}] dot(%z1_gelu, %w2), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
  %b2b = f32[{b},{d}] broadcast(%b2), dimensions={{1}}
  ROOT %out = f32[{b},{d}] add(%mm2, %b2b)
}}
"""


def np_gelu(x):
    return 0.5 * x * (1 + np.tanh(np.float32(np.sqrt(2 / np.pi)) * (x + np.float32(0.044715) * x ** 3)))


def np_softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def np_layernorm(x, g, b):
    mean = x.mean(axis=1, keepdims=True)
    xc = x - mean
    var = (xc * xc).mean(axis=1, keepdims=True)
    return xc / np.sqrt(var + np.float32(1e-5)) * g + b


def _via_f32(fn, t):
    """NumPy on bf16/f16 arrays the fast way: cast to f32, compute, round
    once to the type (NumPy's own float16 loops and ml_dtypes' bfloat16
    ones convert element by element and are several times slower)."""
    return lambda *a: np.asarray(fn(*[v.astype(np.float32) for v in a])).astype(HALF_NP[t])


def half_workloads(t, f, n, r, c, g):
    """The memory-bound workloads at bf16/f16 (same element counts as f32:
    half the bytes, 2 per element); jax.jit runs the functions whose
    lowering the HLO text copies."""
    h = lambda *s: f(*s).astype(HALF_NP[t])  # noqa: E731
    ln = lambda jnp: (lambda x, g_, b_: (lambda xc: xc * jnp.reciprocal(jnp.sqrt(  # noqa: E731
        jnp.mean(xc * xc, axis=1, keepdims=True) + 1e-5)) * g_ + b_)(x - jnp.mean(x, axis=1, keepdims=True)))
    return [
        (f"sum(x + y*z) {t}[{n}]", seed_half(n, t), [h(n), h(n), h(n)],
         _via_f32(lambda x, y, z: np.sum(x + y * z), t),
         lambda jnp: (lambda x, y, z: jnp.sum(x + y * z)), 3 * n * 2, None),
        (f"softmax {t}[{r},{c}]", softmax_half(r, c, t), [h(r, c)], _via_f32(np_softmax, t),
         lambda jnp: (lambda x: __import__("jax").nn.softmax(x, axis=1)), 2 * r * c * 2, None),
        (f"layernorm {t}[{r},{c}]", layernorm_half(r, c, t), [h(r, c), h(c), h(c)],
         _via_f32(np_layernorm, t), ln, 2 * r * c * 2, None),
        (f"gelu {t}[{g}]", gelu_half(g, t), [h(g)], _via_f32(np_gelu, t),
         lambda jnp: (lambda x: __import__("jax").nn.gelu(x, approximate=True)), 2 * g * 2, None),
    ]


# --sweep: each family from cache-resident sizes to far beyond the last-level
# cache (the largest moves 128-192 MB), so the table shows how the time
# grows with the size. Elements per array, or rows of 1,024 for the row
# workloads, or the matrix side for the products.
SWEEP_ELEMENTS = [1 << 12, 1 << 15, 1 << 18, 1 << 21, 1 << 24]
SWEEP_ROWS = [4, 32, 256, 2048, 16384]
SWEEP_MATMUL = [64, 128, 256, 512, 1024, 2048]
SWEEP_MATVEC = [256, 1024, 4096, 8192]


def sweep_workloads():
    """The rows of --sweep, each family smallest first (a generator: each
    row's arrays are made when it is measured, and freed after)."""
    rng = np.random.RandomState(0)
    f = lambda *s: rng.standard_normal(s).astype(np.float32)  # noqa: E731
    bf16 = lambda *s: f(*s).astype(ml_dtypes.bfloat16)  # noqa: E731
    c = 1024
    for n in SWEEP_ELEMENTS:
        yield ("sum(x + y*z) f32[%d]" % n, seed(n), [f(n), f(n), f(n)],
               lambda x, y, z: np.sum(x + y * z),
               lambda jnp: (lambda x, y, z: jnp.sum(x + y * z)), 3 * n * 4, None)
    for r in SWEEP_ROWS:
        yield ("softmax f32[%d,%d]" % (r, c), softmax(r, c), [f(r, c)], np_softmax,
               lambda jnp: (lambda x: __import__("jax").nn.softmax(x, axis=1)), 2 * r * c * 4, None)
    for r in SWEEP_ROWS:
        yield ("layernorm f32[%d,%d]" % (r, c), layernorm(r, c), [f(r, c), f(c), f(c)],
               np_layernorm, _jax_layernorm, 2 * r * c * 4, None)
    for g in SWEEP_ELEMENTS:
        yield ("gelu f32[%d]" % g, gelu(g), [f(g)], np_gelu, _jax_gelu, 2 * g * 4, None)
    for r, g in zip(SWEEP_ROWS, SWEEP_ELEMENTS):
        yield from (row for row in half_workloads("bf16", f, g, r, c, g)
                    if row[0].startswith(("softmax", "gelu")))
    for m in SWEEP_MATMUL:
        yield ("matmul f32[%d]^3" % m, matmul(m), [f(m, m), f(m, m)], lambda a, b_: a @ b_,
               lambda jnp: (lambda a, b_: a @ b_), None, 2 * m ** 3)
    for v in SWEEP_MATVEC:
        yield ("matvec bf16 [%d,%d]" % (v, v), matvec(v, v, "bf16", "bf16"), [bf16(v, v), bf16(v)],
               lambda a, x: (a.astype(np.float32) @ x.astype(np.float32)).astype(ml_dtypes.bfloat16),
               lambda jnp: (lambda a, x: a @ x), 2 * (v * v + v), None)


def _jax_layernorm(jnp):
    return lambda x, g_, b_: (lambda mu, xc: xc * jnp.reciprocal(jnp.sqrt(
        jnp.mean(xc * xc, axis=1, keepdims=True) + 1e-5)) * g_ + b_)(
        None, x - jnp.mean(x, axis=1, keepdims=True))


def _jax_gelu(jnp):
    return lambda x: 0.5 * x * (1 + jnp.tanh(np.float32(np.sqrt(2 / np.pi)) * (x + 0.044715 * x ** 3)))


def workloads(quick):
    scale = 16 if quick else 1
    rng = np.random.RandomState(0)
    f = lambda *s: rng.standard_normal(s).astype(np.float32)  # noqa: E731
    n = (1 << 24) // scale
    r, c = 4096 // scale, 1024
    g = (1 << 22) // scale
    m = 1024 // (4 if quick else 1)
    b, d, h = 256, 1024 // (4 if quick else 1), 4096 // (4 if quick else 1)
    # Integer and bf16 dots: NumPy has no BLAS for them (its integer matmul
    # is a plain loop), so a smaller size keeps the run short.
    q = 512 // (4 if quick else 1)
    qb, qn = 16, 128 // (4 if quick else 1)  # batched: 16 products
    v = 4096 // (4 if quick else 1)  # matrix-vector: memory-bound, counted in bytes
    s8 = lambda *s: rng.randint(-128, 128, s).astype(np.int8)  # noqa: E731
    bf16 = lambda *s: f(*s).astype(ml_dtypes.bfloat16)  # noqa: E731
    return [
        ("sum(x + y*z) f32[%d]" % n, seed(n), [f(n), f(n), f(n)],
         lambda x, y, z: np.sum(x + y * z), lambda jnp: (lambda x, y, z: jnp.sum(x + y * z)),
         3 * n * 4, None),
        ("softmax f32[%d,%d]" % (r, c), softmax(r, c), [f(r, c)], np_softmax,
         lambda jnp: (lambda x: __import__("jax").nn.softmax(x, axis=1)), 2 * r * c * 4, None),
        ("layernorm f32[%d,%d]" % (r, c), layernorm(r, c), [f(r, c), f(c), f(c)], np_layernorm,
         _jax_layernorm, 2 * r * c * 4, None),
        ("gelu f32[%d]" % g, gelu(g), [f(g)], np_gelu, _jax_gelu, 2 * g * 4, None),
        ("gelu f32[%d] fast-math" % g, gelu(g), [f(g)], np_gelu, _jax_gelu, 2 * g * 4, None,
         "--xla_cpu_enable_fast_math=true"),
        ("concatenate 4 x f32[%d,%d] minor" % (r, c // 4), concatenate(r, c // 4, 4),
         [f(r, c // 4) for _ in range(4)], lambda *a: np.concatenate(a, axis=1),
         lambda jnp: (lambda *a: jnp.concatenate(a, axis=1)), 2 * r * c * 4, None),
        *[row for t in HALF_NP for row in half_workloads(t, f, n, r, c, g)],
        ("matmul f32[%d]^3" % m, matmul(m), [f(m, m), f(m, m)], lambda a, b_: a @ b_,
         lambda jnp: (lambda a, b_: a @ b_), None, 2 * m ** 3),
        ("matmul s8 x s8 -> s32 [%d]^3" % q, matmul(q, "s8", "s32"), [s8(q, q), s8(q, q)],
         lambda a, b_: a.astype(np.int32) @ b_.astype(np.int32),
         lambda jnp: (lambda a, b_: __import__("jax").lax.dot(a, b_, preferred_element_type=jnp.int32)),
         None, 2 * q ** 3),
        ("matmul bf16 [%d]^3" % q, matmul(q, "bf16", "bf16"), [bf16(q, q), bf16(q, q)],
         lambda a, b_: (a.astype(np.float32) @ b_.astype(np.float32)).astype(ml_dtypes.bfloat16),
         lambda jnp: (lambda a, b_: a @ b_), None, 2 * q ** 3),
        ("matmul s8 -> s32 [%dx%d]^3 batched" % (qb, qn), batched_matmul(qb, qn, "s8", "s32"),
         [s8(qb, qn, qn), s8(qb, qn, qn)],
         lambda a, b_: a.astype(np.int32) @ b_.astype(np.int32),
         lambda jnp: (lambda a, b_: jnp.matmul(a, b_, preferred_element_type=jnp.int32)),
         None, 2 * qb * qn ** 3),
        ("matmul bf16 [%dx%d]^3 batched" % (qb, qn), batched_matmul(qb, qn, "bf16", "bf16"),
         [bf16(qb, qn, qn), bf16(qb, qn, qn)],
         lambda a, b_: (a.astype(np.float32) @ b_.astype(np.float32)).astype(ml_dtypes.bfloat16),
         lambda jnp: (lambda a, b_: a @ b_), None, 2 * qb * qn ** 3),
        ("matvec s8 -> s32 [%d,%d]" % (v, v), matvec(v, v, "s8", "s32"), [s8(v, v), s8(v)],
         lambda a, x: a.astype(np.int32) @ x.astype(np.int32),
         lambda jnp: (lambda a, x: __import__("jax").lax.dot(a, x, preferred_element_type=jnp.int32)),
         v * v + v, None),
        ("matvec bf16 [%d,%d]" % (v, v), matvec(v, v, "bf16", "bf16"), [bf16(v, v), bf16(v)],
         lambda a, x: (a.astype(np.float32) @ x.astype(np.float32)).astype(ml_dtypes.bfloat16),
         lambda jnp: (lambda a, x: a @ x), 2 * (v * v + v), None),
        ("mlp %dx%d->%d->%d gelu" % (b, d, h, d), mlp(b, d, h),
         [f(b, d), f(d, h) * 0.03, f(h), f(h, d) * 0.03, f(d)],
         lambda x, w1, b1, w2, b2: np_gelu(x @ w1 + b1) @ w2 + b2,
         lambda jnp: (lambda x, w1, b1, w2, b2: (lambda z: 0.5 * z * (1 + jnp.tanh(
             np.float32(np.sqrt(2 / np.pi)) * (z + 0.044715 * z ** 3))))(x @ w1 + b1) @ w2 + b2),
         None, 2 * b * d * h * 2),
    ]


def streaming_bandwidth(repeats=5):
    """Bytes/s of the faster of NumPy's copy and the CPU backend's scale
    (``x * 3``, every core) of a 256 MB f32 array: read plus written, the
    median of ``repeats`` runs of each. (On the 2-core EPYC VM the rate is
    bimodal between processes: 43-45 GB/s mostly, 75-80 GB/s in some, where
    the kernels measured beside it did not run faster.)"""
    src = np.ones(64 * 2**20, np.float32)
    dst = np.empty_like(src)
    np.copyto(dst, src)
    copy = statistics.median(_once(lambda: np.copyto(dst, src)) for _ in range(repeats))
    # NumPy copies on one thread; the CPU backend's loops use every core.
    scale = xla.compile(xla.parse_hlo_module(f"""HloModule stream_scale
ENTRY %main (x: f32[{src.size}]) -> f32[{src.size}] {{
  %x = f32[{src.size}] parameter(0)
  %c = f32[] constant(3)
  %b = f32[{src.size}] broadcast(%c), dimensions={{}}
  ROOT %y = f32[{src.size}] multiply(%x, %b)
}}
"""), "cpu")
    scale.execute(src)
    ours = statistics.median(_once(lambda: scale.execute(src)) for _ in range(repeats))
    return 2 * src.nbytes / min(copy, ours)


def machine_limits(repeats=5):
    """(streaming bandwidth in bytes/s, peak f32 GEMM in FLOP/s, the OpenBLAS
    core NumPy runs without _BLAS_RESTRICTIONS where any is set, else None)."""
    bandwidth = streaming_bandwidth(repeats)
    n = 2048
    a = np.ones((n, n), np.float32)
    numpy_gemm = min(_once(lambda: a @ a) for _ in range(repeats))
    exe = xla.compile(xla.parse_hlo_module(matmul(n)), "cpu")
    exe.execute(a, a)
    ours_gemm = min(_once(lambda: exe.execute(a, a)) for _ in range(repeats))
    unrestricted = _numpy_gemm_unrestricted(n, repeats)
    best = min([numpy_gemm, ours_gemm] + ([unrestricted[0]] if unrestricted else []))
    return bandwidth, 2 * n ** 3 / best, unrestricted[1] if unrestricted else None


# Environment variables that make NumPy's OpenBLAS run other kernels than
# the CPU's best (this project's VMs set OPENBLAS_CORETYPE=Haswell: AVX2
# kernels on AVX-512 machines, half the GEMM rate).
_BLAS_RESTRICTIONS = ("OPENBLAS_CORETYPE",)

_CORE_PROBE = """
import ctypes, sys, time
import numpy as np
def core():
    for line in open("/proc/self/maps"):
        path = line.split()[-1]
        if "openblas" in path and ".so" in path:
            lib = ctypes.CDLL(path)
            for name in ("openblas_get_corename", "scipy_openblas_get_corename64_",
                         "scipy_openblas_get_corename"):
                f = getattr(lib, name, None)
                if f is not None:
                    f.restype = ctypes.c_char_p
                    return f().decode()
    return "?"
n = int(sys.argv[1])
a = np.ones((n, n), np.float32)
a @ a
best = 1e9
for _ in range(int(sys.argv[2])):
    t = time.perf_counter(); a @ a; best = min(best, time.perf_counter() - t)
print(best, core())
"""


def numpy_blas_core():
    """The kernels NumPy's OpenBLAS runs here ("Haswell", "SkylakeX", ...),
    or None where its library is not OpenBLAS or cannot tell."""
    out = subprocess.run([sys.executable, "-c", _CORE_PROBE, "8", "1"], capture_output=True,
                         text=True).stdout.split()
    return out[1] if len(out) == 2 and out[1] != "?" else None


def _numpy_gemm_unrestricted(n, repeats):
    """(seconds, OpenBLAS core) of NumPy's n^3 f32 GEMM in a child process
    without the _BLAS_RESTRICTIONS variables, where any is set; else None.
    The machine's peak does not depend on them."""
    if not any(v in os.environ for v in _BLAS_RESTRICTIONS):
        return None
    env = {k: v for k, v in os.environ.items() if k not in _BLAS_RESTRICTIONS}
    out = subprocess.run([sys.executable, "-c", _CORE_PROBE, str(n), str(repeats)], env=env,
                         capture_output=True, text=True).stdout.split()
    return (float(out[0]), out[1]) if len(out) == 2 else None


def _once(fn):
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def median_time(fn, repeats):
    # Another runtime's pool threads spin for a while after its last call
    # (XLA's Eigen pool does), taking a core from whoever runs next: let
    # them go to sleep first.
    time.sleep(0.2)
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def import_jax():
    """(jax, jax.numpy) on the CPU platform, or (None, None) where jax is not
    installed (it is never a dependency)."""
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None, None
    jax.config.update("jax_platforms", "cpu")
    return jax, jnp


def report_limits():
    """Measures and prints the machine's limits (``machine_limits``), NumPy's
    BLAS kernels and the runtime's ISA variant; returns (bandwidth in
    bytes/s, peak f32 GEMM in FLOP/s)."""
    bandwidth, peak, unrestricted_core = machine_limits()
    print(f"machine limits: {bandwidth / 1e9:.1f} GB/s streaming, {peak / 1e9:.0f} GFLOP/s "
          "f32 GEMM (best of NumPy and ours, 2048^3)")
    core = numpy_blas_core()
    restricted = {v: os.environ[v] for v in _BLAS_RESTRICTIONS if v in os.environ}
    if restricted:
        print(f"NumPy's BLAS runs OpenBLAS's {core} kernels here "
              f"({', '.join(f'{k}={v}' for k, v in restricted.items())} in the environment; "
              f"without it: {unrestricted_core or '?'}, whose GEMM counts in the peak above)")
    elif core:
        print(f"NumPy's BLAS: OpenBLAS, {core} kernels")
    print(f"runtime kernels (dots, convolutions): {_core.cpu_runtime_isa()} "
          f"(of {', '.join(_core.cpu_runtime_isas())}; XLA_CPU_RUNTIME_ISA chooses)")
    return bandwidth, peak


def measure(rows, repeats, rounds, bandwidth, peak, only=(), jax=None, jnp=None):
    """Runs ``rows`` (``workloads()``'s tuples) whose name contains one of
    ``only`` (all without it), checking each result against NumPy's: prints
    the header, then a line per row, and yields a dict per row (seconds:
    ``ours``, ``numpy``, ``jax`` (None without jax); ``nbytes`` or
    ``flops``; ``of_limit``, the achieved rate over ``bandwidth`` or
    ``peak``; ``jax_ratios``, jax.jit's time over ours per round)."""
    header = (f"{'workload':34} {'ours':>10} {'numpy':>10} {'jax.jit':>10} {'np/ours':>8} {'jax/ours':>9}"
              f"  {'throughput':>13} {'of limit':>8}  {'jax/ours range':>14}")
    print(header)
    print("-" * len(header))
    for name, text, inputs, np_fn, jax_fn, nbytes, flops, *flags in rows:
        if only and not any(part in name for part in only):
            continue
        exe = xla.compile(xla.parse_hlo_module(text), "cpu", debug_options=flags[0] if flags else None)
        ours_out = exe.execute(*inputs)
        expected = np_fn(*inputs)
        # bf16/f16 rows: NumPy's result is computed in f32 and rounded once;
        # ours rounds after each elementwise op as the HLO says (8 and 11
        # significant bits: a few roundings of 2^-9 and 2^-12 each).
        tol = {np.dtype(ml_dtypes.bfloat16): 3e-2, np.dtype(np.float16): 4e-3}.get(
            np.asarray(ours_out).dtype, 2e-3)
        np.testing.assert_allclose(np.asarray(ours_out, np.float64), np.asarray(expected, np.float64),
                                   rtol=tol, atol=tol * max(1.0, float(np.abs(expected).max())))
        t_np = median_time(lambda: np_fn(*inputs), repeats)
        jf = dev = None
        if jax is not None:
            jf = jax.jit(jax_fn(jnp))
            dev = [jax.device_put(a) for a in inputs]
        ours_rounds, jax_rounds = [], []
        for _ in range(max(1, rounds)):
            ours_rounds.append(median_time(lambda: exe.execute(*inputs), repeats))
            if jf is not None:
                jax_rounds.append(median_time(lambda: jf(*dev).block_until_ready(), repeats))
        t_ours = statistics.median(ours_rounds)
        t_jax = statistics.median(jax_rounds) if jax_rounds else None
        rate = (f"{nbytes / t_ours / 1e9:.1f} GB/s" if nbytes else f"{flops / t_ours / 1e9:.0f} GFLOP/s")
        limit = nbytes / t_ours / bandwidth if nbytes else flops / t_ours / peak
        jax_col = f"{t_jax * 1e3:9.2f}ms" if t_jax else f"{'-':>10}"
        jax_ratio = f"{t_jax / t_ours:9.2f}" if t_jax else f"{'-':>9}"
        ratios = [j / o for o, j in zip(ours_rounds, jax_rounds)]
        spread = f"{min(ratios):.2f}-{max(ratios):.2f}" if ratios else "-"
        print(f"{name:34} {t_ours * 1e3:9.2f}ms {t_np * 1e3:9.2f}ms {jax_col} {t_np / t_ours:8.2f} "
              f"{jax_ratio}  {rate:>13} {limit:8.2f}  {spread:>14}")
        yield {"name": name, "ours": t_ours, "numpy": t_np, "jax": t_jax, "nbytes": nbytes,
               "flops": flops, "of_limit": limit, "jax_ratios": ratios}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3,
                        help="blocks of --repeats calls per side, ours and jax.jit alternating; "
                             "the medians over the rounds are reported, with the range of the "
                             "per-round jax/ours ratios")
    parser.add_argument("--quick", action="store_true", help="smaller sizes (a smoke run)")
    parser.add_argument("--only", action="append", default=[], metavar="TEXT",
                        help="only the workloads whose name contains TEXT (repeatable)")
    parser.add_argument("--sweep", action="store_true",
                        help="each family at sizes from cache-resident to far beyond the "
                             "last-level cache instead of the default rows")
    args = parser.parse_args()
    jax, jnp = import_jax()

    # Compile time of the seed example, parse to executable: the first
    # compile in the process also pays for imports and LLVM's start-up.
    start = time.perf_counter()
    xla.compile(xla.parse_hlo_module(seed(1 << 10)), "cpu")
    cold_ms = (time.perf_counter() - start) * 1e3
    start = time.perf_counter()
    xla.compile(xla.parse_hlo_module(seed(1 << 24)), "cpu")
    compile_ms = (time.perf_counter() - start) * 1e3

    bandwidth, peak = report_limits()
    for _ in measure(sweep_workloads() if args.sweep else workloads(args.quick), args.repeats,
                     args.rounds, bandwidth, peak, args.only, jax, jnp):
        pass
    # Per-call dispatch: an f32[4] add, Python to native code and back.
    add = xla.compile(xla.parse_hlo_module("""HloModule add
ENTRY %main (x: f32[4], y: f32[4]) -> f32[4] {
  %x = f32[4] parameter(0)
  %y = f32[4] parameter(1)
  ROOT %a = f32[4] add(%x, %y)
}
"""), "cpu")
    a4 = np.ones(4, np.float32)
    calls = 20000
    t_add = median_time(lambda: [add.execute(a4, a4) for _ in range(calls)], 3) / calls
    line = f"dispatch of an f32[4] add: {t_add * 1e6:.2f} us per call"
    if jax is not None:
        jadd = jax.jit(lambda x, y: x + y)
        j4 = jax.device_put(a4)
        t_jadd = median_time(lambda: [jadd(j4, j4).block_until_ready() for _ in range(calls)], 3) / calls
        line += f" (jax.jit: {t_jadd * 1e6:.2f} us)"
    print(line)
    print(f"compile time of the seed example (parse to executable): {compile_ms:.0f} ms "
          f"({cold_ms:.0f} ms for the first compile in the process)")


if __name__ == "__main__":
    main()
