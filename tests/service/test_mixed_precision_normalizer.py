"""mixed_precision_normalizer: ops that mix floating-point precisions (what
the verifier accepts with allow_mixed_precision, as XLA's test modules use
it) get explicit converts; expected values are NumPy's, computed here."""
import numpy as np
import pytest

import xla
from pass_test_util import run_pass
from xla.errors import UnimplementedError
from xla.service.mixed_precision_normalizer import MixedPrecisionNormalizer

MIXED = """HloModule m

ENTRY e {
  x = f16[4]{0} parameter(0)
  y = f32[4]{0} parameter(1)
  p = f32[] parameter(2)
  mx = f32[4]{0} maximum(x, y)
  narrow = f16[4]{0} maximum(x, y)
  pd = f32[6]{0} pad(x, p), padding=1_1
  lt = pred[4]{0} compare(x, y), direction=LT
  sel = f32[4]{0} select(lt, x, y)
  cl = f32[4]{0} clamp(x, y, p)
  n = bf16[4]{0} negate(y)
  ROOT t = (f32[4]{0}, f16[4]{0}, f32[6]{0}, pred[4]{0}, f32[4]{0}, f32[4]{0}, bf16[4]{0}) tuple(mx, narrow, pd, lt, sel, cl, n)
}
"""

NORMALIZED = """HloModule m

ENTRY e {
  x = f16[4]{0} parameter(0)
  y = f32[4]{0} parameter(1)
  p = f32[] parameter(2)
  convert.1 = f32[4]{0} convert(x)
  mx = f32[4]{0} maximum(convert.1, y)
  convert.3 = f32[4]{0} convert(x)
  maximum.4 = f32[4]{0} maximum(convert.3, y)
  narrow = f16[4]{0} convert(maximum.4)
  convert.6 = f32[4]{0} convert(x)
  pd = f32[6]{0} pad(convert.6, p), padding=1_1
  convert.8 = f32[4]{0} convert(x)
  lt = pred[4]{0} compare(convert.8, y), direction=LT
  convert.10 = f32[4]{0} convert(x)
  sel = f32[4]{0} select(lt, convert.10, y)
  convert.12 = f32[4]{0} convert(x)
  cl = f32[4]{0} clamp(convert.12, y, p)
  negate.14 = f32[4]{0} negate(y)
  n = bf16[4]{0} convert(negate.14)
  ROOT t = (f32[4]{0}, f16[4]{0}, f32[6]{0}, pred[4]{0}, f32[4]{0}, f32[4]{0}, bf16[4]{0}) tuple(mx, narrow, pd, lt, sel, cl, n)
}
"""

X = np.array([1.5, -2.0, 3.25, 0.1], np.float16)
Y = np.array([1.0, -3.0, 4.0, 0.1], np.float32)
P = np.float32(0.5)


def expected():
    import ml_dtypes
    x = X.astype(np.float32)   # f16 -> f32 is exact
    mx = np.maximum(x, Y)
    lt = x < Y
    return [mx, mx.astype(np.float16), np.pad(x, 1, constant_values=P), lt, np.where(lt, x, Y),
            np.minimum(np.maximum(x, Y), P), (-Y).astype(ml_dtypes.bfloat16)]


def test_converts_are_explicit():
    m, changed = run_pass(MixedPrecisionNormalizer(), MIXED, verify=False)
    assert changed
    assert m.to_text() == NORMALIZED
    xla.verify_module(m)                          # no mixed precision left
    assert not MixedPrecisionNormalizer().run(m)  # idempotent


def test_without_mixed_precision_nothing_changes():
    text = ("HloModule m\nENTRY e {\n  x = bf16[4] parameter(0)\n  c = f32[4] convert(x)\n"
            "  ROOT d = f32[] dot(c, c), lhs_contracting_dims={0}, rhs_contracting_dims={0}\n}\n")
    m, changed = run_pass(MixedPrecisionNormalizer(), text)
    assert not changed


@pytest.mark.parametrize("platform", ["interpreter", "cpu"])
def test_values(platform):
    got = xla.compile(MIXED, platform, allow_mixed_precision=True).execute(X, Y, P)
    for g, w in zip(got, expected()):
        g = np.asarray(g)
        assert g.dtype == np.asarray(w).dtype
        np.testing.assert_array_equal(g, w)


def test_values_on_the_gpu_emulator():
    # The GPU pipeline starts with the target-independent one, normalizer first.
    if "gpu_emulator" not in xla.runtime.available_platforms():
        pytest.skip("no gpu_emulator platform here")
    got = xla.compile(MIXED, "gpu_emulator", allow_mixed_precision=True).execute(X, Y, P)
    for g, w in zip(got, expected()):
        np.testing.assert_array_equal(np.asarray(g), w)


def test_the_cpu_normalizes_even_with_the_pass_disabled():
    # The CPU's emitters compute one type per op: --xla_disable_hlo_passes
    # does not skip the normalizer when the module needs it.
    from xla.hlo.verifier import mixed_precision_problem
    exe = xla.compile(MIXED, "cpu", allow_mixed_precision=True,
                      debug_options="--xla_disable_hlo_passes=mixed-precision-normalizer")
    instrs = [i for c in exe.module.computations for i in c.instructions]
    assert [i.name for i in instrs if mixed_precision_problem(i)] == []
    for g, w in zip(exe.execute(X, Y, P), expected()):
        np.testing.assert_array_equal(np.asarray(g), w)


def test_without_the_option_the_backends_refuse_it():
    with pytest.raises(xla.errors.VerifierError,
                       match=r"instruction %mx in computation %e: operands mix floating-point types "
                             r"f16 and f32, but mixed precision is disallowed"):
        xla.compile(MIXED, "cpu")


def test_what_it_cannot_convert_is_named():
    text = ("HloModule m\nENTRY e {\n  x = f16[] parameter(0)\n  y = f32[] parameter(1)\n"
            "  ROOT c = f32[3] rng(x, y), distribution=rng_uniform\n}\n")
    with pytest.raises(UnimplementedError, match=r"rng %c in %e mixes floating-point types "
                                                 r"f16, f32"):
        run_pass(MixedPrecisionNormalizer(), text, verify=False)


def test_a_tuple_result_of_another_precision_is_named():
    text = """HloModule m
cmp {
  a = f16[] parameter(0)
  b = f16[] parameter(1)
  c = f32[] parameter(2)
  d = f32[] parameter(3)
  ROOT lt = pred[] compare(a, b), direction=LT
}
ENTRY e {
  k = f16[4] parameter(0)
  v = f32[4] parameter(1)
  ROOT s = (f32[4], f32[4]) sort(k, v), dimensions={0}, to_apply=cmp
}
"""
    xla.verify_module(xla.parse_hlo_module(text), allow_mixed_precision=True)  # as XLA's
    with pytest.raises(UnimplementedError, match=r"sort %s in %e declares \(f32\[4\], f32\[4\]\) "
                                                 r"but computes \(f16\[4\], f32\[4\]\)"):
        xla.compile(text, "interpreter", allow_mixed_precision=True)
