"""Multi-output fusion (phase 2 of InstructionFusion, csrc/fusion.h): a
producer fusion read by several consumers joins its shallowest consumer,
and independent fusions reading the same large value with compatible
shapes merge, so softmax and layernorm read their input at most twice.
"""
from pass_test_util import assert_same_results, run_pass
from xla.service.instruction_fusion import InstructionFusion

REDUCERS = """
add_f32 {
  lhs = f32[] parameter(0)
  rhs = f32[] parameter(1)
  ROOT sum = f32[] add(lhs, rhs)
}

max_f32 {
  mlhs = f32[] parameter(0)
  mrhs = f32[] parameter(1)
  ROOT mx = f32[] maximum(mlhs, mrhs)
}
"""

SOFTMAX = """HloModule softmax
""" + REDUCERS + """
ENTRY main {
  x = f32[32,256] parameter(0)
  ninf = f32[] constant(-inf)
  m = f32[32] reduce(x, ninf), dimensions={1}, to_apply=max_f32
  mb = f32[32,256] broadcast(m), dimensions={0}
  sub = f32[32,256] subtract(x, mb)
  e = f32[32,256] exponential(sub)
  zero = f32[] constant(0)
  s = f32[32] reduce(e, zero), dimensions={1}, to_apply=add_f32
  sb = f32[32,256] broadcast(s), dimensions={0}
  ROOT out = f32[32,256] divide(e, sb)
}
"""

# Layernorm with var = E[x^2] - E[x]^2: the two sums are siblings over x.
LAYERNORM = """HloModule layernorm
""" + REDUCERS + """
ENTRY main {
  x = f32[32,256] parameter(0)
  gamma = f32[256] parameter(1)
  beta = f32[256] parameter(2)
  zero = f32[] constant(0)
  s1 = f32[32] reduce(x, zero), dimensions={1}, to_apply=add_f32
  xx = f32[32,256] multiply(x, x)
  s2 = f32[32] reduce(xx, zero), dimensions={1}, to_apply=add_f32
  inv_n = f32[] constant(0.00390625)
  inv_nb = f32[32] broadcast(inv_n), dimensions={}
  mean = f32[32] multiply(s1, inv_nb)
  ex2 = f32[32] multiply(s2, inv_nb)
  mean2 = f32[32] multiply(mean, mean)
  var = f32[32] subtract(ex2, mean2)
  eps = f32[] constant(1e-05)
  epsb = f32[32] broadcast(eps), dimensions={}
  ve = f32[32] add(var, epsb)
  rs = f32[32] rsqrt(ve)
  meanb = f32[32,256] broadcast(mean), dimensions={0}
  xc = f32[32,256] subtract(x, meanb)
  rsb = f32[32,256] broadcast(rs), dimensions={0}
  xn = f32[32,256] multiply(xc, rsb)
  gb = f32[32,256] broadcast(gamma), dimensions={1}
  xg = f32[32,256] multiply(xn, gb)
  bb = f32[32,256] broadcast(beta), dimensions={1}
  ROOT y = f32[32,256] add(xg, bb)
}
"""


def fusions(module):
    return [i for i in module.entry.instructions if i.opcode == "fusion"]


def reads_by_fusions(module, name):
    return sum(1 for f in fusions(module) for o in f.operands if o.name == name)


def run(text, **options):
    module, changed = run_pass(InstructionFusion(check=True, **options), text)
    assert changed
    assert_same_results(text, module, rtol=1e-5, atol=1e-5)
    return module


def test_softmax():
    module = run(SOFTMAX)
    fs = fusions(module)
    # max stays a plain reduce; exp(x - max) and the sum share a kInput
    # fusion with two outputs; the divide is a kLoop fusion.
    assert sorted(f.attr("kind") for f in fs) == ["kInput", "kLoop"]
    (mof,) = [f for f in fs if f.attr("kind") == "kInput"]
    assert mof.shape.is_tuple and len(mof.shape.tuple_shapes) == 2
    assert mof.attr("calls").root_instruction.opcode == "tuple"
    users = [i for i in module.entry.instructions if mof in i.operands]
    assert {u.opcode for u in users} == {"get-tuple-element"}
    readers = [i for i in module.entry.instructions if any(o.name == "x" for o in i.operands)]
    assert len(readers) <= 2
    assert reads_by_fusions(module, "x") <= 2


def test_layernorm():
    module = run(LAYERNORM)
    fs = fusions(module)
    kinds = sorted(f.attr("kind") for f in fs)
    assert kinds == ["kInput", "kLoop"]
    (sums,) = [f for f in fs if f.attr("kind") == "kInput"]
    reduces = [i for i in sums.attr("calls").instructions if i.opcode == "reduce"]
    assert len(reduces) == 2  # both sums in one multi-output fusion
    assert reads_by_fusions(module, "x") == 2


def test_layernorm_without_multi_output_reads_x_more():
    module = run(LAYERNORM, multi_output=False)
    assert reads_by_fusions(module, "x") + sum(
        1 for i in module.entry.instructions
        if i.opcode == "reduce" and any(o.name == "x" for o in i.operands)) == 3


def test_siblings_with_different_reductions_stay_apart():
    text = """HloModule rows_cols
""" + REDUCERS + """
ENTRY main {
  x = f32[64,64] parameter(0)
  zero = f32[] constant(0)
  e = f32[64,64] exponential(x)
  rows = f32[64] reduce(e, zero), dimensions={1}, to_apply=add_f32
  n = f32[64,64] negate(x)
  cols = f32[64] reduce(n, zero), dimensions={0}, to_apply=add_f32
  ROOT t = (f32[64], f32[64]) tuple(rows, cols)
}
"""
    module = run(text)
    fs = fusions(module)
    assert len(fs) == 2
    assert all(not f.shape.is_tuple for f in fs)


def test_small_operands_do_not_merge():
    text = """HloModule small
""" + REDUCERS + """
ENTRY main {
  x = f32[4] parameter(0)
  zero = f32[] constant(0)
  e = f32[4] exponential(x)
  a = f32[] reduce(e, zero), dimensions={0}, to_apply=add_f32
  n = f32[4] negate(x)
  b = f32[] reduce(n, zero), dimensions={0}, to_apply=add_f32
  ROOT t = (f32[], f32[]) tuple(a, b)
}
"""
    module = run(text)
    assert len(fusions(module)) == 2
    merged = run(text, sibling_min_bytes=0)
    assert len(fusions(merged)) == 1


def test_merges_keep_the_code_bound():
    # Merged fusions cost the sum of their parts: under a budget of 2
    # emitted ops, sum(x) (1) and sum(x * x) (2) stay apart.
    module = run(LAYERNORM, max_emitted_ops=2)
    for f in fusions(module):
        reduces = [i for i in f.attr("calls").instructions if i.opcode == "reduce"]
        assert len(reduces) <= 1
    module = run(LAYERNORM, max_emitted_ops=3)
    assert any(sum(i.opcode == "reduce" for i in f.attr("calls").instructions) == 2
               for f in fusions(module))


def test_exp_stays_a_side_output_of_the_sum():
    # The sum's fusion stores exp(x - max) at the index it reads it at: one
    # evaluation, so the expensive-duplication rule does not keep exp out.
    module = run(SOFTMAX, max_emitted_ops=8)
    (mof,) = [f for f in fusions(module) if f.attr("kind") == "kInput"]
    assert "exponential" in [i.opcode for i in mof.attr("calls").instructions]


# An argmin (a variadic reduce, tuple-shaped) whose iota another
# instruction also reads: the fusion has the iota and the reduce's two
# arrays as outputs, a flat tuple (the CPU backend refused a nested one).
ARGMIN_SHARED_IOTA = """HloModule argmin_iota

argmin {
  v0 = f64[] parameter(0)
  i0 = s64[] parameter(1)
  v1 = f64[] parameter(2)
  i1 = s64[] parameter(3)
  lt = pred[] compare(v0, v1), direction=LT
  eq = pred[] compare(v0, v1), direction=EQ
  ilt = pred[] compare(i0, i1), direction=LT
  tie = pred[] and(eq, ilt)
  take0 = pred[] or(lt, tie)
  v = f64[] select(take0, v0, v1)
  i = s64[] select(take0, i0, i1)
  ROOT r = (f64[], s64[]) tuple(v, i)
}

ENTRY main {
  d = f64[30,3] parameter(0)
  iota = s64[30,3] iota(), iota_dimension=1
  inf = f64[] constant(inf)
  big = s64[] constant(9223372036854775807)
  red = (f64[30], s64[30]) reduce(d, iota, inf, big), dimensions={1}, to_apply=argmin
  labels = s64[30] get-tuple-element(red), index=1
  lb = s64[30,3] broadcast(labels), dimensions={0}
  ROOT hit = pred[30,3] compare(lb, iota), direction=EQ
}
"""


def test_a_tuple_shaped_output_is_flattened_into_the_multi_output_root():
    import numpy as np
    import xla
    from xla.hlo.parser import parse_hlo_module
    module, changed = run_pass(InstructionFusion(), ARGMIN_SHARED_IOTA)
    assert changed
    tuples = 0
    for comp in module.computations:
        for instr in comp.instructions:
            if instr.opcode == "fusion" and instr.shape.is_tuple:
                assert not any(s.is_tuple for s in instr.shape.tuple_shapes), instr.to_text()
                tuples += 1
    assert tuples == 1     # the case this is about: a multi-output fusion with the reduce
    assert_same_results(ARGMIN_SHARED_IOTA, module)
    d = np.random.default_rng(0).random((30, 3))
    got = xla.compile(parse_hlo_module(ARGMIN_SHARED_IOTA), "cpu").execute(d)
    np.testing.assert_array_equal(got, np.argmin(d, 1)[:, None] == np.arange(3)[None, :])
