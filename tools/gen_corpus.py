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

This file holds the command line and the PROGRAMS table; beside it,
corpus_programs.py (the input builder, the functions and the hand-written
HLO), corpus_run.py (running one program, checking and writing its files)
and corpus_readme.py (the corpus README).
"""

import argparse
import json
import os
import shutil
import sys
from collections import namedtuple

# corpus_run configures XLA's dump directory (XLA_FLAGS) before it imports
# jax, so it comes first.
from corpus_run import _DUMP_DIR, _check_outputs, _outputs, _write, generate
import numpy as np
import ml_dtypes
import jax
import jaxlib
from corpus_programs import (
    mlp_train_step, attention, layernorm, linear_tuple, _conv, conv_grad, scan_rnn,
    while_newton_sqrt, while_collatz, fori_loops, cond_pred, switch_index, lax_map_rows,
    nested_jit_call, remat_grad, optimization_barrier, tokens_after_all, gather_ops,
    scatter_ops, sort_ops, F32_SPECIALS, sort_multi_key, top_k, argmax_argmin, reductions,
    cumulative, pooling, maxpool_grad, pad_ops, slice_reverse_concat, dynamic_slicing,
    clamp_select_iota, shape_ops, bitcast_convert, convert_types, convert_edge, float8_convert,
    unary_math, rounding, binary_math, float_specials, compare_all, reduce_precision,
    int_wraparound, int_divrem, int_shifts, bitwise_ops, int64_ops, f16_ops, bf16_ops, f64_ops,
    complex64_ops, complex128_ops, prng_threefry, rng_bit_generator, rng_uniform, einsum_batch,
    dot_general_multi, linalg, nested_outputs, scalar_output, pred_output, pred_scalar_output,
    zero_size, HLO_MAP_NESTED, HLO_PRED_CONDITIONAL, HLO_LOGISTIC
)
from corpus_readme import write_readme

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_OUT = os.path.join(REPO, "tests", "corpus")


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
