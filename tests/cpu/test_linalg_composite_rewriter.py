"""linalg-composite-rewriter: the composite calls xla.eigh, xla.svd,
xla.solve, xla.lu, xla.geqrf and xla.householder_product become jaxlib's LAPACK custom calls (which the cpu backend runs in its
runtime), their decompositions removed; other composites, versions, element
types and plain calls stay for call-inliner. HLO before and after, then the
rewritten module against the decomposition on the interpreter."""
import numpy as np
import pytest

from xla.backends.cpu.linalg_composite_rewriter import LinalgCompositeRewriter
from xla.hlo.evaluator.evaluator import Evaluator
from xla.hlo.parser import parse_hlo_module
from xla.tools.arrays import flatten_result

# The decompositions here are stand-ins (the frontend's are Jacobi loops):
# the pass never looks inside them.
EIGH = """HloModule m

decomposition {
  p = f32[4,4] parameter(0)
  r = f32[1,4] slice(p), slice={[0:1], [0:4]}
  w = f32[4] reshape(r)
  ROOT t = (f32[4], f32[4,4]) tuple(w, p)
}

ENTRY e {
  a = f32[4,4] parameter(0)
  ROOT c = (f32[4], f32[4,4]) call(a), to_apply=decomposition, is_composite=true, frontend_attributes={composite.attributes={lower = %s},composite.name="xla.eigh",composite.version="%s"}
}
"""

EIGH_AFTER = """HloModule m

ENTRY e {
  a = f32[4,4] parameter(0)
  custom-call.1 = (f32[4,4]{1,0}, f32[4]{0}, s32[]) custom-call(a), custom_call_target="lapack_ssyevd_ffi", api_version=API_VERSION_TYPED_FFI, backend_config={mode = 86 : ui8, uplo = 85 : ui8}
  get-tuple-element.2 = f32[4]{0} get-tuple-element(custom-call.1), index=1
  get-tuple-element.3 = f32[4,4]{1,0} get-tuple-element(custom-call.1), index=0
  ROOT tuple.4 = (f32[4]{0}, f32[4,4]{1,0}) tuple(get-tuple-element.2, get-tuple-element.3)
}
"""

SVD = """HloModule m

decomposition {
  p = f64[5,3] parameter(0)
  r = f64[1,3] slice(p), slice={[0:1], [0:3]}
  ROOT s = f64[3] reshape(r)
}

ENTRY e {
  a = f64[5,3] parameter(0)
  ROOT c = f64[3] call(a), to_apply=decomposition, is_composite=true, frontend_attributes={composite.attributes={compute_uv = false, full_matrices = true},composite.name="xla.svd",composite.version="0"}
}
"""


def test_eigh_becomes_syevd():
    module = parse_hlo_module(EIGH % ("false", "0"))
    assert LinalgCompositeRewriter().run(module)
    assert module.to_text() == EIGH_AFTER
    assert [c.name for c in module.computations] == ["e"]   # the decomposition went
    assert not LinalgCompositeRewriter().run(module)               # idempotent


def test_the_rewritten_eigh_computes_numpys_eigh():
    module = parse_hlo_module(EIGH % ("true", "0"))
    LinalgCompositeRewriter().run(module)
    a = np.random.default_rng(0).standard_normal((4, 4)).astype(np.float32)
    w, v = flatten_result(Evaluator().evaluate(module, [a]))
    w_ref, v_ref = np.linalg.eigh(a, UPLO="L")
    np.testing.assert_allclose(w, w_ref, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.abs(np.sum(v * v_ref, axis=0)), 1, atol=1e-5)


def test_svd_values_become_gesdd_mode_n():
    module = parse_hlo_module(SVD)
    assert LinalgCompositeRewriter().run(module)
    assert module.to_text() == """HloModule m

ENTRY e {
  a = f64[5,3] parameter(0)
  custom-call.1 = (f64[5,3]{1,0}, f64[3]{0}, f64[5,3]{1,0}, f64[3,3]{1,0}, s32[]) custom-call(a), custom_call_target="lapack_dgesdd_ffi", api_version=API_VERSION_TYPED_FFI, backend_config={mode = 78 : ui8}
  ROOT get-tuple-element.2 = f64[3]{0} get-tuple-element(custom-call.1), index=1
}
"""
    a = np.random.default_rng(1).standard_normal((5, 3))
    (s,) = flatten_result(Evaluator().evaluate(module, [a]))
    np.testing.assert_allclose(s, np.linalg.svd(a, compute_uv=False), rtol=1e-12)


@pytest.mark.parametrize("text", [
    EIGH % ("true", "1"),                                   # another version
    EIGH.replace("xla.eigh", "my.eigh") % ("true", "0"),    # another composite
    EIGH.replace("f32", "f16") % ("true", "0"),             # another element type
    EIGH.replace(", is_composite=true", "") % ("true", "0"),  # a plain call
])
def test_what_it_leaves_alone(text):
    module = parse_hlo_module(text)
    before = module.to_text()
    assert not LinalgCompositeRewriter().run(module)
    assert module.to_text() == before


def test_a_composite_whose_results_are_not_the_names_is_left_to_its_decomposition():
    # Named xla.eigh, but the results are (f32[4,4], f32[4]): the rewrite's
    # would not fit, so the call stays (it raised an AssertionError).
    text = (EIGH.replace("ROOT t = (f32[4], f32[4,4]) tuple(w, p)", "ROOT t = (f32[4,4], f32[4]) tuple(p, w)")
            .replace("ROOT c = (f32[4], f32[4,4]) call", "ROOT c = (f32[4,4], f32[4]) call")) % ("true", "0")
    module = parse_hlo_module(text)
    assert not LinalgCompositeRewriter().run(module)
    assert "custom-call" not in module.entry.to_text() and "is_composite=true" in module.to_text()
    a = np.arange(16, dtype=np.float32).reshape(4, 4)
    p, w = flatten_result(Evaluator().evaluate(module, [a]))
    np.testing.assert_array_equal(p, a)
    np.testing.assert_array_equal(w, a[0])


SOLVE = """HloModule m

decomposition {
  p = f64[2,3,3] parameter(0)
  q = f64[2,3,2] parameter(1)
  i = s32[2] constant({0, 0})
  ROOT t = (f64[2,3,2], s32[2]) tuple(q, i)
}

ENTRY e {
  a = f64[2,3,3] parameter(0)
  b = f64[2,3,2] parameter(1)
  ROOT c = (f64[2,3,2], s32[2]) call(a, b), to_apply=decomposition, is_composite=true, frontend_attributes={composite.attributes={},composite.name="xla.solve",composite.version="0"}
}
"""


def test_solve_becomes_getrf_of_both_and_an_upper_triangular_solve():
    module = parse_hlo_module(SOLVE)
    assert LinalgCompositeRewriter().run(module)
    assert module.to_text() == """HloModule m

ENTRY e {
  a = f64[2,3,3] parameter(0)
  b = f64[2,3,2] parameter(1)
  concatenate.1 = f64[2,3,5]{2,1,0} concatenate(a, b), dimensions={2}
  custom-call.2 = (f64[2,3,5]{2,1,0}, s32[2,3]{1,0}, s32[2]{0}) custom-call(concatenate.1), custom_call_target="lapack_dgetrf_ffi", api_version=API_VERSION_TYPED_FFI
  get-tuple-element.3 = f64[2,3,5]{2,1,0} get-tuple-element(custom-call.2), index=0
  slice.4 = f64[2,3,3]{2,1,0} slice(get-tuple-element.3), slice={[0:2], [0:3], [0:3]}
  slice.5 = f64[2,3,2]{2,1,0} slice(get-tuple-element.3), slice={[0:2], [0:3], [3:5]}
  triangular-solve.6 = f64[2,3,2]{2,1,0} triangular-solve(slice.4, slice.5), left_side=true, lower=false, unit_diagonal=false, transpose_a=NO_TRANSPOSE
  get-tuple-element.7 = s32[2]{0} get-tuple-element(custom-call.2), index=2
  ROOT tuple.8 = (f64[2,3,2]{2,1,0}, s32[2]{0}) tuple(triangular-solve.6, get-tuple-element.7)
}
"""
    assert [c.name for c in module.computations] == ["e"]
    rng = np.random.default_rng(4)
    a, b = rng.standard_normal((2, 3, 3)), rng.standard_normal((2, 3, 2))
    x, info = flatten_result(Evaluator().evaluate(module, [a, b]))
    np.testing.assert_allclose(x, np.linalg.solve(a, b), rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(info, [0, 0])
    # getrf's info: the 1-based column of the first zero pivot (LAPACK's).
    a[1] = [[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [0.0, 0.0, 1.0]]
    _, info = flatten_result(Evaluator().evaluate(module, [a, b]))
    np.testing.assert_array_equal(info, [0, 2])


def test_a_solve_of_one_result_is_left_to_its_decomposition():
    # The contract is (x, info): a call of x alone is not what the name
    # promises, and its decomposition stays.
    text = SOLVE.replace("ROOT c = (f64[2,3,2], s32[2]) call", "ROOT c = f64[2,3,2] call").replace(
        "  i = s32[2] constant({0, 0})\n  ROOT t = (f64[2,3,2], s32[2]) tuple(q, i)", "  ROOT t = f64[2,3,2] copy(q)")
    module = parse_hlo_module(text)
    assert not LinalgCompositeRewriter().run(module)


def test_solve_of_another_batch_or_type_is_left_alone():
    for text in (SOLVE.replace("b = f64[2,3,2]", "b = f32[2,3,2]"),
                 SOLVE.replace('"xla.solve"', '"xla.solvex"')):
        module = parse_hlo_module(text)
        assert not LinalgCompositeRewriter().run(module)


def test_the_cpu_pipeline_runs_the_frontends_solve_and_inv_as_getrf():
    import xla
    from xla.backends.cpu.compiler import CpuCompiler
    for fn, args in ((np.linalg.solve, (np.eye(4), np.ones(4))), (np.linalg.inv, (np.eye(4),))):
        module = xla.jit(fn).lower(*args).module
        assert "while" in module.to_text()           # the decomposition: LU in loops
        CpuCompiler().optimize(module)
        text = module.to_text()
        assert "lapack_dgetrf_ffi" in text and "triangular-solve" in text
        assert "while" not in text


LU = """HloModule m

decomposition {
  p = f32[3,3] parameter(0)
  z = s32[3] constant({0, 1, 2})
  ROOT t = (f32[3,3], s32[3]) tuple(p, z)
}

ENTRY e {
  a = f32[3,3] parameter(0)
  ROOT c = (f32[3,3], s32[3]) call(a), to_apply=decomposition, is_composite=true, frontend_attributes={composite.attributes={},composite.name="xla.lu",composite.version="0"}
}
"""


def test_lu_becomes_getrf_with_zero_based_pivots():
    module = parse_hlo_module(LU)
    assert LinalgCompositeRewriter().run(module)
    assert module.to_text() == """HloModule m

ENTRY e {
  a = f32[3,3] parameter(0)
  custom-call.1 = (f32[3,3]{1,0}, s32[3]{0}, s32[]) custom-call(a), custom_call_target="lapack_sgetrf_ffi", api_version=API_VERSION_TYPED_FFI
  get-tuple-element.2 = f32[3,3]{1,0} get-tuple-element(custom-call.1), index=0
  get-tuple-element.3 = s32[3]{0} get-tuple-element(custom-call.1), index=1
  constant.4 = s32[] constant(1)
  broadcast.5 = s32[3]{0} broadcast(constant.4), dimensions={}
  subtract.6 = s32[3]{0} subtract(get-tuple-element.3, broadcast.5)
  ROOT tuple.7 = (f32[3,3]{1,0}, s32[3]{0}) tuple(get-tuple-element.2, subtract.6)
}
"""
    # Hand-derived: column 0's largest is row 2 (3; rows 0 and 2 swap), then
    # column 1 below the diagonal is (2, 1): row 1 stays, then row 2.
    a = np.array([[0, 1, 2], [1, 2, 3], [3, 0, 1]], np.float32)
    lu, pivots = flatten_result(Evaluator().evaluate(module, [a]))
    assert pivots.tolist() == [2, 1, 2]
    l, u = np.tril(lu, -1) + np.eye(3), np.triu(lu)
    p = a[[2, 1, 0]]                   # the swaps (0, 2), (1, 1), (2, 2) applied to the rows
    np.testing.assert_allclose(l @ u, p, atol=1e-6)


def test_the_cpu_pipeline_runs_the_frontends_det_and_slogdet_as_getrf():
    import xla
    from xla.backends.cpu.compiler import CpuCompiler
    for fn in (np.linalg.det, np.linalg.slogdet):
        module = xla.jit(fn).lower(np.eye(4)).module
        CpuCompiler().optimize(module)
        text = module.to_text()
        assert "lapack_dgetrf_ffi" in text and "while" not in text


def test_the_cpu_pipeline_runs_the_frontends_qr_as_geqrf_and_orgqr():
    import xla
    from xla.backends.cpu.compiler import CpuCompiler
    for mode in ("reduced", "complete"):
        module = xla.jit(lambda a: np.linalg.qr(a, mode=mode)).lower(np.ones((5, 3), np.float32)).module
        assert " while(" in module.to_text()             # the decompositions: loops
        CpuCompiler().optimize(module)
        text = module.to_text()
        assert "lapack_sgeqrf_ffi" in text and "lapack_sorgqr_ffi" in text
        assert "while" not in text


QR = """HloModule m

geqrf {
  p = f64[4,3] parameter(0)
  z = f64[3] constant({0, 0, 0})
  ROOT t = (f64[4,3], f64[3]) tuple(p, z)
}

orgqr {
  ROOT p = f64[4,3] parameter(0)
  t = f64[3] parameter(1)
}

ENTRY e {
  a = f64[4,3] parameter(0)
  c = (f64[4,3], f64[3]) call(a), to_apply=geqrf, is_composite=true, frontend_attributes={composite.attributes={},composite.name="xla.geqrf",composite.version="0"}
  r = f64[4,3] get-tuple-element(c), index=0
  tau = f64[3] get-tuple-element(c), index=1
  ROOT q = f64[4,3] call(r, tau), to_apply=orgqr, is_composite=true, frontend_attributes={composite.attributes={},composite.name="xla.householder_product",composite.version="0"}
}
"""


def test_geqrf_and_householder_product_become_lapack_calls_with_numpys_q():
    module = parse_hlo_module(QR)
    assert LinalgCompositeRewriter().run(module)
    text = module.to_text()
    assert 'custom-call(a), custom_call_target="lapack_dgeqrf_ffi"' in text
    assert 'custom-call(r, tau), custom_call_target="lapack_dorgqr_ffi"' in text
    assert [c.name for c in module.computations] == ["e"]
    a = np.random.default_rng(7).standard_normal((4, 3))
    (q,) = flatten_result(Evaluator().evaluate(module, [a]))
    np.testing.assert_allclose(q, np.linalg.qr(a)[0], atol=1e-12)
