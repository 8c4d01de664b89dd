"""The README.md of the HLO test corpus (tools/gen_corpus.py): what the files
are, which programs hold each opcode of the checklist, and the programs."""

import os

from corpus_run import _write


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

