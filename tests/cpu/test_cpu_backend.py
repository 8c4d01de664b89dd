"""The CPU backend on small HLO modules, checked against the interpreter.

Integers and predicates must match exactly; floats to rtol 1e-5 (f32
reductions are reassociated, see reduction_emitter) or the narrow types'
precision.
"""
import pathlib

import ml_dtypes
import numpy as np
import pytest

from xla import debug_options, runtime
from xla.hlo.evaluator.evaluator import Evaluator
from xla.errors import InvalidArgumentError, UnimplementedError
from xla.hlo.parser import parse_hlo_module

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"

ADD_F32 = """
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %a, f32[] %b)
}
"""


def compile_cpu(text):
    return runtime.compile(parse_hlo_module(text), "cpu")


def random_array(shape, rng):
    dtype = shape.dtype
    dims = shape.dimensions
    if dtype == np.bool_:
        return rng.random(dims) < 0.5
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, size=dims, dtype=dtype, endpoint=True)
    return (rng.standard_normal(dims) * 3).astype(dtype)


def check(text, args=None, rtol=1e-5, atol=1e-6, seed=0):
    """Compiles ``text`` for cpu, runs it and the interpreter; returns the executable."""
    exe = compile_cpu(text)
    reference = parse_hlo_module(text)
    if args is None:
        rng = np.random.default_rng(seed)
        args = [random_array(p.shape, rng) for p in reference.entry.parameters]
    expected = Evaluator().evaluate(reference, list(args))
    actual = exe.execute(*args)
    assert_same(actual, expected, rtol, atol)
    return exe


def assert_same(actual, expected, rtol, atol):
    if isinstance(expected, tuple):
        assert isinstance(actual, tuple) and len(actual) == len(expected)
        for a, e in zip(actual, expected):
            assert_same(a, e, rtol, atol)
        return
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape and actual.dtype == expected.dtype, \
        (actual.shape, actual.dtype, expected.shape, expected.dtype)
    if expected.dtype.kind in "fcV":
        np.testing.assert_allclose(actual.astype(np.float64 if expected.dtype.kind != "c" else np.complex128),
                                   expected.astype(np.float64 if expected.dtype.kind != "c" else np.complex128),
                                   rtol=rtol, atol=atol, equal_nan=True)
    else:
        np.testing.assert_array_equal(actual, expected)


# ----- the seed example ----------------------------------------------------------------
def test_seed_reduce_sum_matches_interpreter():
    check((EXAMPLES / "fma_reduce.hlo").read_text())


def test_seed_inner_loop_is_vectorized():
    text = (EXAMPLES / "fma_reduce.hlo").read_text().replace("f32[8]", "f32[4099]")
    exe = check(text, rtol=1e-4, atol=1e-4)
    ir = exe.optimized_ir_text
    assert "<8 x float>" in ir or "<4 x float>" in ir or "<16 x float>" in ir
    # f32 multiply-adds may fuse into FMAs, as on XLA:CPU.
    assert "fmul contract <" in ir and "fadd contract <" in ir
    assert "define void @\"entry\"(ptr" in exe.ir_text


def test_elementwise_inner_loop_is_interleaved():
    # The innermost loop of an elementwise kernel carries the interleave
    # hint; a reduction's does not. Odd sizes exercise the remainder loops.
    text = """
HloModule gelu_like
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
ENTRY %main (x: f32[5,1037]) -> (f32[5,1037], f32[5]) {
  %x = f32[5,1037] parameter(0)
  %t = f32[5,1037] tanh(%x)
  %m = f32[5,1037] multiply(%t, %x)
  %zero = f32[] constant(0)
  %r = f32[5] reduce(%x, %zero), dimensions={1}, to_apply=%add
  ROOT %out = (f32[5,1037], f32[5]) tuple(%m, %r)
}
"""
    exe = check(text, rtol=1e-5, atol=1e-5)
    assert exe.ir_text.count('!"llvm.loop.interleave.count", i32 4') == 1
    assert "distinct !{" in exe.ir_text


@pytest.mark.parametrize("t", ["bf16", "f16"])
def test_half_precision_long_chain_loop_interleaves_8(t):
    # A long-chain op at bf16/f16: 8 interleaved vector iterations
    # (loop_emitter.long_chain_interleave), checked against the interpreter
    # at odd sizes.
    text = f"""
HloModule silu_{t}
ENTRY %main (x: {t}[3,1037]) -> {t}[3,1037] {{
  %x = {t}[3,1037] parameter(0)
  %l = {t}[3,1037] logistic(%x)
  ROOT %m = {t}[3,1037] multiply(%x, %l)
}}
"""
    exe = check(text, rtol=1e-2, atol=1e-2)
    assert exe.ir_text.count('!"llvm.loop.interleave.count", i32 8') == 1
    assert '!"llvm.loop.interleave.count", i32 4' not in exe.ir_text


@pytest.mark.parametrize("src,dst", [("bf16", "bf16"), ("f16", "f16"), ("f32", "bf16"),
                                     ("bf16", "f32"), ("f32", "f32")])
def test_f32_long_chain_between_half_loads_or_stores_interleaves_8(src, dst):
    # The chain computed in f32 (as JAX expands erf for bf16 arrays) in a
    # kernel that loads or stores bf16/f16: 8 interleaved iterations; all
    # f32: 4 (loop_emitter.long_chain_interleave).
    text = f"""
HloModule softplus_{src}_{dst}
ENTRY %main (x: {src}[3,1037]) -> {dst}[3,1037] {{
  %x = {src}[3,1037] parameter(0)
  %c = f32[3,1037] convert(%x)
  %e = f32[3,1037] exponential(%c)
  %l = f32[3,1037] log-plus-one(%e)
  ROOT %r = {dst}[3,1037] convert(%l)
}}
"""
    exe = check(text, rtol=1e-2, atol=1e-2)
    count = 4 if src == dst == "f32" else 8
    assert exe.ir_text.count(f'!"llvm.loop.interleave.count", i32 {count}') == 1
    assert exe.ir_text.count("llvm.loop.interleave.count") == 1


@pytest.mark.parametrize("t,count", [("bf16", 8), ("f16", 8), ("f32", 2)])
def test_softmax_row_sum_interleave(t, count):
    # The exp-and-sum row loop of a softmax: 8 vector accumulators where the
    # exp is computed at bf16/f16, reduction_emitter.ROW_REDUCE_INTERLEAVE
    # (2) at f32; the row max's loop keeps MIN_MAX_INTERLEAVE (2).
    text = f"""
HloModule softmax_{t}
%add (a: f32[], b: f32[]) -> f32[] {{
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}}
%max (a: {t}[], b: {t}[]) -> {t}[] {{
  %a = {t}[] parameter(0)
  %b = {t}[] parameter(1)
  ROOT %m = {t}[] maximum(%a, %b)
}}
ENTRY %main (x: {t}[5,1037]) -> {t}[5,1037] {{
  %x = {t}[5,1037] parameter(0)
  %ninf = {t}[] constant(-inf)
  %mx = {t}[5] reduce(%x, %ninf), dimensions={{1}}, to_apply=%max
  %mb = {t}[5,1037] broadcast(%mx), dimensions={{0}}
  %sub = {t}[5,1037] subtract(%x, %mb)
  %e = {t}[5,1037] exponential(%sub)
  %ef = f32[5,1037] convert(%e)
  %zero = f32[] constant(0)
  %sm = f32[5] reduce(%ef, %zero), dimensions={{1}}, to_apply=%add
  %smh = {t}[5] convert(%sm)
  %sb = {t}[5,1037] broadcast(%smh), dimensions={{0}}
  ROOT %out = {t}[5,1037] divide(%e, %sb)
}}
"""
    tol = 1e-5 if t == "f32" else 1e-2
    exe = check(text, rtol=tol, atol=tol)
    eights = exe.ir_text.count('!"llvm.loop.interleave.count", i32 8')
    assert eights == (1 if count == 8 else 0)
    assert '!"llvm.loop.interleave.count", i32 2' in exe.ir_text  # the row max's


def test_logsumexp_row_sum_is_vectorized():
    # JAX's logsumexp: the exponentials' row sum subtracts the row max only
    # where it is finite (is-finite, select): still one vectorized row loop
    # (reduction_emitter._LOOP_VECTORIZABLE_OPS), not the unrolled scalar
    # form (jax.nn.logsumexp of f32[4096, 1024]: 0.9-1.5 -> 0.47 ms).
    text = """
HloModule logsumexp
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
%max (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %m = f32[] maximum(%a, %b)
}
ENTRY %main (x: f32[6,1037]) -> f32[6] {
  %x = f32[6,1037] parameter(0)
  %ninf = f32[] constant(-inf)
  %mx = f32[6] reduce(%x, %ninf), dimensions={1}, to_apply=%max
  %fin = pred[6] is-finite(%mx)
  %zero = f32[] constant(0)
  %zb = f32[6] broadcast(%zero), dimensions={}
  %safe = f32[6] select(%fin, %mx, %zb)
  %sb = f32[6,1037] broadcast(%safe), dimensions={0}
  %sub = f32[6,1037] subtract(%x, %sb)
  %e = f32[6,1037] exponential(%sub)
  %sm = f32[6] reduce(%e, %zero), dimensions={1}, to_apply=%add
  %lg = f32[6] log(%sm)
  ROOT %out = f32[6] add(%lg, %safe)
}
"""
    x = np.random.default_rng(5).standard_normal((6, 1037)).astype(np.float32)
    x[1, :] = -np.inf   # a row whose max is not finite
    x[2, 3] = np.inf
    exe = check(text, args=[x], rtol=1e-5, atol=1e-6)
    # widths set on the row max's two loops (the vectorized one and its
    # exact walk, width 1) and on the sum's
    assert exe.ir_text.count("llvm.loop.vectorize.width") == 3


def test_short_elementwise_loop_leaves_interleaving_to_llvm():
    # No op with a long dependency chain (loop_emitter.LONG_CHAIN_OPS): no
    # interleave hint, LLVM's cost model picks the count.
    text = """
HloModule axpy
ENTRY %main (x: f32[7,43], y: f32[7,43]) -> f32[7,43] {
  %x = f32[7,43] parameter(0)
  %y = f32[7,43] parameter(1)
  %c = f32[] constant(3)
  %cb = f32[7,43] broadcast(%c), dimensions={}
  %m = f32[7,43] multiply(%x, %cb)
  ROOT %a = f32[7,43] add(%m, %y)
}
"""
    exe = check(text, rtol=1e-6, atol=1e-6)
    assert "llvm.loop.interleave.count" not in exe.ir_text
    assert "<8 x float>" in exe.optimized_ir_text or "<4 x float>" in exe.optimized_ir_text


def test_examples():
    for name in ("softmax.hlo", "dense_relu.hlo"):
        check((EXAMPLES / name).read_text())


# ----- elementwise ------------------------------------------------------------------
@pytest.mark.parametrize("ty", ["f32", "f64", "s32", "u8", "s64", "u16", "bf16", "f16"])
def test_elementwise_chain(ty):
    text = f"""
HloModule chain
ENTRY %main (x: {ty}[3,17], y: {ty}[3,17]) -> {ty}[3,17] {{
  %x = {ty}[3,17] parameter(0)
  %y = {ty}[3,17] parameter(1)
  %s = {ty}[3,17] add(%x, %y)
  %p = {ty}[3,17] multiply(%s, %y)
  %m = {ty}[3,17] maximum(%p, %x)
  %n = {ty}[3,17] minimum(%m, %s)
  %d = {ty}[3,17] subtract(%n, %p)
  %c = pred[3,17] compare(%d, %x), direction=LT
  ROOT %r = {ty}[3,17] select(%c, %d, %s)
}}
"""
    tol = {"bf16": 1e-2, "f16": 1e-3}.get(ty, 1e-6)
    # The interpreter rounds every bf16/f16 op: so does the cpu backend with
    # excess precision off (tests/cpu/test_excess_precision.py has the default).
    with debug_options.override(xla_allow_excess_precision=False):
        check(text, rtol=tol, atol=tol)


def test_convert_and_pred():
    check("""
HloModule conv
ENTRY %main (x: f32[40], y: s32[40]) -> (s8[40], f64[40], pred[40], u32[40]) {
  %x = f32[40] parameter(0)
  %y = s32[40] parameter(1)
  %a = s8[40] convert(%x)
  %b = f64[40] convert(%y)
  %c = pred[40] compare(%x, %x), direction=EQ
  %n = pred[40] not(%c)
  %d = u32[40] convert(%y)
  ROOT %t = (s8[40], f64[40], pred[40], u32[40]) tuple(%a, %b, %n, %d)
}
""")


def test_large_elementwise_runs_in_parallel_chunks():
    # >= 64K elements: split across threads when the runtime provides parallel_for.
    check("""
HloModule big
ENTRY %main (x: f32[300,700], y: f32[300,700]) -> f32[300,700] {
  %x = f32[300,700] parameter(0)
  %y = f32[300,700] parameter(1)
  %e = f32[300,700] exponential(%x)
  ROOT %r = f32[300,700] add(%e, %y)
}
""")


# ----- data movement ------------------------------------------------------------------
def test_broadcast_transpose_reshape():
    check("""
HloModule move
ENTRY %main (x: f32[3,4], v: f32[4]) -> (f32[4,3], f32[2,3,4], f32[12], f32[6,2]) {
  %x = f32[3,4] parameter(0)
  %v = f32[4] parameter(1)
  %t = f32[4,3] transpose(%x), dimensions={1,0}
  %b = f32[2,3,4] broadcast(%v), dimensions={2}
  %bx = f32[2,3,4] broadcast(%x), dimensions={1,2}
  %s = f32[2,3,4] add(%b, %bx)
  %r = f32[12] reshape(%x)
  %e = f32[12] exponential(%r)
  %r2 = f32[6,2] reshape(%e)
  ROOT %out = (f32[4,3], f32[2,3,4], f32[12], f32[6,2]) tuple(%t, %s, %e, %r2)
}
""")


def test_slice_pad_concatenate_reverse_iota():
    check("""
HloModule move2
ENTRY %main (x: f32[5,6], y: f32[5,2]) -> (f32[2,3], f32[11,12], f32[5,8], f32[5,6], s32[5,6], f32[3,4]) {
  %x = f32[5,6] parameter(0)
  %y = f32[5,2] parameter(1)
  %s = f32[2,3] slice(%x), slice={[1:5:2], [0:6:2]}
  %zero = f32[] constant(-1.5)
  %p = f32[11,12] pad(%x, %zero), padding=1_1_1x-1_2_1
  %c = f32[5,8] concatenate(%x, %y), dimensions={1}
  %r = f32[5,6] reverse(%x), dimensions={0,1}
  %i = s32[5,6] iota(), iota_dimension=1
  %pneg = f32[3,4] pad(%x, %zero), padding=-1_-1x-2_0
  ROOT %t = (f32[2,3], f32[11,12], f32[5,8], f32[5,6], s32[5,6], f32[3,4]) tuple(%s, %p, %c, %r, %i, %pneg)
}
""")


@pytest.mark.parametrize("starts", [(1, 2), (-5, 100), (7, -1), (2147483647, -2147483648)])
def test_dynamic_slice_clamps_out_of_range_starts(starts):
    text = """
HloModule ds
ENTRY %main (x: f32[6,7], i: s32[], j: s32[], u: f32[2,3]) -> (f32[3,4], f32[6,7]) {
  %x = f32[6,7] parameter(0)
  %i = s32[] parameter(1)
  %j = s32[] parameter(2)
  %u = f32[2,3] parameter(3)
  %d = f32[3,4] dynamic-slice(%x, %i, %j), dynamic_slice_sizes={3,4}
  %e = f32[3,4] exponential(%d)
  %w = f32[6,7] dynamic-update-slice(%x, %u, %i, %j)
  ROOT %t = (f32[3,4], f32[6,7]) tuple(%e, %w)
}
"""
    rng = np.random.default_rng(1)
    args = [rng.standard_normal((6, 7)).astype(np.float32), np.int32(starts[0]), np.int32(starts[1]),
            rng.standard_normal((2, 3)).astype(np.float32)]
    check(text, args=args)


def test_non_default_parameter_layout():
    check("""
HloModule layouts, entry_computation_layout={(f32[3,5]{0,1}, f32[3,5]{1,0})->f32[5,3]{1,0}}
ENTRY %main (x: f32[3,5], y: f32[3,5]) -> f32[5,3] {
  %x = f32[3,5]{0,1} parameter(0)
  %y = f32[3,5]{1,0} parameter(1)
  %a = f32[3,5]{1,0} add(%x, %y)
  ROOT %t = f32[5,3]{1,0} transpose(%a), dimensions={1,0}
}
""")


# ----- reductions -------------------------------------------------------------------
@pytest.mark.parametrize("dims,out", [("{1}", "f32[37]"), ("{0}", "f32[45]"), ("{0,1}", "f32[]")])
def test_reduce_rows_columns_all(dims, out):
    check(f"""
HloModule red
{ADD_F32}
ENTRY %main (x: f32[37,45]) -> {out} {{
  %x = f32[37,45] parameter(0)
  %e = f32[37,45] multiply(%x, %x)
  %z = f32[] constant(0)
  ROOT %r = {out} reduce(%e, %z), dimensions={dims}, to_apply=%add
}}
""")


def test_reduce_integer_max_and_f64():
    check("""
HloModule red2
%max (a: s32[], b: s32[]) -> s32[] {
  %a = s32[] parameter(0)
  %b = s32[] parameter(1)
  ROOT %m = s32[] maximum(%a, %b)
}
%addd (c: f64[], d: f64[]) -> f64[] {
  %c = f64[] parameter(0)
  %d = f64[] parameter(1)
  ROOT %m2 = f64[] add(%c, %d)
}
ENTRY %main (x: s32[9,33], y: f64[4,50]) -> (s32[33], f64[4]) {
  %x = s32[9,33] parameter(0)
  %y = f64[4,50] parameter(1)
  %lo = s32[] constant(-2147483648)
  %r = s32[33] reduce(%x, %lo), dimensions={0}, to_apply=%max
  %z = f64[] constant(0.5)
  %s = f64[4] reduce(%y, %z), dimensions={1}, to_apply=%addd
  ROOT %t = (s32[33], f64[4]) tuple(%r, %s)
}
""", rtol=1e-12)


def test_argmax_variadic_reduce():
    check("""
HloModule argmax
%argmax (a: f32[], ai: s32[], b: f32[], bi: s32[]) -> (f32[], s32[]) {
  %a = f32[] parameter(0)
  %ai = s32[] parameter(1)
  %b = f32[] parameter(2)
  %bi = s32[] parameter(3)
  %gt = pred[] compare(%a, %b), direction=GT
  %eq = pred[] compare(%a, %b), direction=EQ
  %lt = pred[] compare(%ai, %bi), direction=LT
  %tie = pred[] and(%eq, %lt)
  %take = pred[] or(%gt, %tie)
  %v = f32[] select(%take, %a, %b)
  %i = s32[] select(%take, %ai, %bi)
  ROOT %vi = (f32[], s32[]) tuple(%v, %i)
}
ENTRY %main (x: f32[7,30]) -> (f32[7], s32[7]) {
  %x = f32[7,30] parameter(0)
  %iota = s32[7,30] iota(), iota_dimension=1
  %ninf = f32[] constant(-inf)
  %zero = s32[] constant(0)
  ROOT %r = (f32[7], s32[7]) reduce(%x, %iota, %ninf, %zero), dimensions={1}, to_apply=%argmax
}
""")


# ----- dot ------------------------------------------------------------------------
@pytest.mark.parametrize("ty", ["f32", "f64", "s32"])
def test_dot(ty):
    check(f"""
HloModule dot
ENTRY %main (a: {ty}[5,7], b: {ty}[7,3], c: {ty}[2,4,6], d: {ty}[2,6,3], v: {ty}[7]) -> ({ty}[5,3], {ty}[2,4,3], {ty}[5]) {{
  %a = {ty}[5,7] parameter(0)
  %b = {ty}[7,3] parameter(1)
  %c = {ty}[2,4,6] parameter(2)
  %d = {ty}[2,6,3] parameter(3)
  %v = {ty}[7] parameter(4)
  %ab = {ty}[5,3] dot(%a, %b), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
  %cd = {ty}[2,4,3] dot(%c, %d), lhs_batch_dims={{0}}, rhs_batch_dims={{0}}, lhs_contracting_dims={{2}}, rhs_contracting_dims={{1}}
  %av = {ty}[5] dot(%a, %v), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
  ROOT %t = ({ty}[5,3], {ty}[2,4,3], {ty}[5]) tuple(%ab, %cd, %av)
}}
""", rtol=1e-5, atol=1e-5)


def test_layernorm():
    check("""
HloModule layernorm
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
ENTRY %main (x: f32[8,64], g: f32[64], bb: f32[64]) -> f32[8,64] {
  %x = f32[8,64] parameter(0)
  %g = f32[64] parameter(1)
  %bb = f32[64] parameter(2)
  %z = f32[] constant(0)
  %sum = f32[8] reduce(%x, %z), dimensions={1}, to_apply=%add
  %n = f32[] constant(0.015625)
  %nb = f32[8] broadcast(%n), dimensions={}
  %mean = f32[8] multiply(%sum, %nb)
  %mb = f32[8,64] broadcast(%mean), dimensions={0}
  %c = f32[8,64] subtract(%x, %mb)
  %sq = f32[8,64] multiply(%c, %c)
  %ss = f32[8] reduce(%sq, %z), dimensions={1}, to_apply=%add
  %var = f32[8] multiply(%ss, %nb)
  %eps = f32[] constant(1e-5)
  %eb = f32[8] broadcast(%eps), dimensions={}
  %ve = f32[8] add(%var, %eb)
  %r = f32[8] rsqrt(%ve)
  %rb = f32[8,64] broadcast(%r), dimensions={0}
  %y = f32[8,64] multiply(%c, %rb)
  %gb = f32[8,64] broadcast(%g), dimensions={1}
  %bb2 = f32[8,64] broadcast(%bb), dimensions={1}
  %yg = f32[8,64] multiply(%y, %gb)
  ROOT %out = f32[8,64] add(%yg, %bb2)
}
""", rtol=1e-4, atol=1e-5)


# ----- results, arguments, errors -------------------------------------------------------
def test_tuple_result_with_parameter_and_constant_leaves():
    exe = check("""
HloModule tup
ENTRY %main (x: f32[4], y: s32[]) -> (f32[4], s32[], f32[2], (f32[4])) {
  %x = f32[4] parameter(0)
  %y = s32[] parameter(1)
  %c = f32[2] constant({1.5, -2})
  %e = f32[4] exponential(%x)
  %inner = (f32[4]) tuple(%e)
  ROOT %t = (f32[4], s32[], f32[2], (f32[4])) tuple(%x, %y, %c, %inner)
}
""")
    x = np.arange(4, dtype=np.float32)
    out = exe.execute(x, np.int32(3))
    out[0][0] = 100  # results never alias the arguments
    assert x[0] == 0


def test_repeated_execution_reuses_the_arena():
    exe = compile_cpu((EXAMPLES / "softmax.hlo").read_text())
    rng = np.random.default_rng(3)
    for _ in range(3):
        x = rng.standard_normal((2, 5)).astype(np.float32)
        e = np.exp(x - x.max(axis=1, keepdims=True))
        np.testing.assert_allclose(exe.execute(x), e / e.sum(axis=1, keepdims=True), rtol=1e-5)


def test_bad_arguments():
    exe = compile_cpu((EXAMPLES / "fma_reduce.hlo").read_text())
    x = np.zeros(8, np.float32)
    with pytest.raises(InvalidArgumentError):
        exe.execute(x, x)
    with pytest.raises(InvalidArgumentError):
        exe.execute(x, x, np.zeros(8, np.float64))
    with pytest.raises(InvalidArgumentError):
        exe.execute(x, x, np.zeros(9, np.float32))


def test_unsupported_op_names_op_and_backend():
    with pytest.raises(UnimplementedError, match=r"cpu.*\batan2\b|\batan2\b.*cpu"):
        compile_cpu("""
HloModule f
ENTRY %main (x: c64[8]) -> c64[8] {
  %x = c64[8] parameter(0)
  ROOT %c = c64[8] atan2(%x, %x)
}
""")


def test_bf16_reduce_and_dot():
    text = """
HloModule bf
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
ENTRY %main (x: bf16[4,8], y: bf16[8,3]) -> (bf16[4,3], f32[4]) {
  %x = bf16[4,8] parameter(0)
  %y = bf16[8,3] parameter(1)
  %d = bf16[4,3] dot(%x, %y), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %xf = f32[4,8] convert(%x)
  %z = f32[] constant(0)
  %r = f32[4] reduce(%xf, %z), dimensions={1}, to_apply=%add
  ROOT %t = (bf16[4,3], f32[4]) tuple(%d, %r)
}
"""
    rng = np.random.default_rng(5)
    args = [rng.standard_normal((4, 8)).astype(ml_dtypes.bfloat16),
            rng.standard_normal((8, 3)).astype(ml_dtypes.bfloat16)]
    check(text, args=args, rtol=2e-2, atol=2e-2)


def test_compile_takes_backend_keyword():
    import xla
    module = xla.parse_hlo_module("""HloModule add
ENTRY %main (x: s32[3], y: s32[3]) -> s32[3] {
  %x = s32[3] parameter(0)
  %y = s32[3] parameter(1)
  ROOT %a = s32[3] add(%x, %y)
}
""")
    exe = xla.compile(module, backend="cpu")
    assert exe.platform == "cpu"
    # HLO text compiles as well, also while dumping (which names the module).
    with xla.debug_options.using(xla.debug_options.resolve("--xla_dump_to=-")):
        from_text = xla.compile(module.to_text(), backend="cpu")
    assert from_text.module.name == "add"
    x = np.array([1, 2, 2**31 - 1], np.int32)
    np.testing.assert_array_equal(exe.execute(x, np.array([1, 1, 1], np.int32)),
                                  np.array([2, 3, -2**31], np.int32))


@pytest.mark.parametrize("src,dst", [("f32", "s32"), ("f16", "s16"), ("bf16", "u16"),
                                     ("f64", "s64"), ("u32", "f32")])
def test_bitcast_changing_the_element_type_inside_a_fusion(src, dst):
    # Was: "does not support bitcast (changing the element type inside a fusion)".
    import xla
    text = f"""HloModule m
ENTRY e {{
  x = {src}[2,3] parameter(0)
  b = {dst}[2,3] bitcast(x)
  ROOT n = {dst}[2,3] add(b, b)
}}"""
    np_types = {"f32": np.float32, "s32": np.int32, "f16": np.float16, "s16": np.int16,
                "bf16": ml_dtypes.bfloat16, "u16": np.uint16, "f64": np.float64, "s64": np.int64,
                "u32": np.uint32}
    x = (np.arange(6).reshape(2, 3) * 1.5 + 0.25).astype(np_types[src])
    bits = x.view(np_types[dst])
    want = bits + bits
    got = xla.compile(text, "cpu").execute(x)
    np.testing.assert_array_equal(np.asarray(got).view(np.uint8), want.view(np.uint8))
