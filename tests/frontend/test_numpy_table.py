"""Plain NumPy functions under xla.jit, compared with NumPy itself.

Each row is a function written exactly as NumPy code; it runs under
``xla.jit`` (cpu backend) and eagerly in NumPy on the same random inputs, and
the results must agree in dtype and value (exactly for integers and bools).
"""
import numpy as np
import pytest

import xla

rng = np.random.default_rng(0)
F32 = rng.standard_normal((4, 5)).astype(np.float32)
F32B = rng.standard_normal((4, 5)).astype(np.float32)
F64 = rng.standard_normal((3, 4))
POS = (rng.random((4, 5)) + 0.5).astype(np.float32)
UNIT = (rng.random((4, 5)) * 1.8 - 0.9).astype(np.float32)
I32 = rng.integers(-20, 20, (4, 5)).astype(np.int32)
I32B = rng.integers(1, 7, (4, 5)).astype(np.int32)
I64 = rng.integers(-50, 50, (6,)).astype(np.int64)
U8 = rng.integers(0, 255, (4, 5)).astype(np.uint8)
BOOL = rng.random((4, 5)) > 0.5
BOOLB = rng.random((4, 5)) > 0.5
C64 = (rng.standard_normal((3, 3)) + 1j * rng.standard_normal((3, 3))).astype(np.complex64)
SQ = rng.standard_normal((5, 5))
VEC = rng.standard_normal(6)

ROWS = {
    # operators
    "add": (lambda a, b: a + b, (F32, F32B)),
    "sub": (lambda a, b: a - b, (F32, F32B)),
    "mul": (lambda a, b: a * b, (F32, F32B)),
    "truediv": (lambda a, b: a / b, (F32, POS)),
    "truediv_int": (lambda a, b: a / b, (I32, I32B)),
    "floordiv_int": (lambda a, b: a // b, (I32, I32B)),
    "floordiv_f": (lambda a, b: a // b, (F32, POS)),
    "mod_int": (lambda a, b: a % b, (I32, I32B)),
    "mod_neg_int": (lambda a, b: a % -b, (I32, I32B)),
    "mod_f": (lambda a, b: a % b, (F32, POS)),
    "pow": (lambda a, b: a ** b, (POS, F32B)),
    "pow_int": (lambda a: a ** 3, (I32,)),
    "matmul": (lambda a, b: a @ b.T, (F32, F32B)),
    "matvec": (lambda a, v: a @ v, (F64, F64[0])),
    "and": (lambda a, b: a & b, (BOOL, BOOLB)),
    "or_int": (lambda a, b: a | b, (I32, I32B)),
    "xor_int": (lambda a, b: a ^ b, (I32, I32B)),
    "lshift": (lambda a, b: a << b, (I32, I32B)),
    "rshift": (lambda a, b: a >> b, (I32, I32B)),
    "invert": (lambda a: ~a, (I32,)),
    "invert_bool": (lambda a: ~a, (BOOL,)),
    "neg": (lambda a: -a, (F32,)),
    "pos": (lambda a: +a, (F32,)),
    "abs_op": (lambda a: abs(a), (I32,)),
    "lt": (lambda a, b: a < b, (F32, F32B)),
    "le": (lambda a, b: a <= b, (I32, I32B)),
    "gt": (lambda a, b: a > b, (F32, F32B)),
    "ge": (lambda a, b: a >= b, (F32, F32B)),
    "eq": (lambda a, b: a == b, (I32, I32B)),
    "ne": (lambda a, b: a != b, (I32, I32B)),
    "scalar_weak": (lambda a: a * 2.5 + 1, (F32,)),
    "scalar_int_promote": (lambda a: a + 1.5, (I32,)),
    "mixed_promote": (lambda a, b: a + b, (I32, F32)),
    "uint8_int": (lambda a, b: a + b, (U8, I32)),
    "bool_arith": (lambda a, b: a + b, (BOOL, BOOLB)),
    # ufuncs
    "exp": (np.exp, (F32,)), "exp2": (np.exp2, (F32,)), "expm1": (np.expm1, (F32,)),
    "log": (np.log, (POS,)), "log2": (np.log2, (POS,)), "log10": (np.log10, (POS,)),
    "log1p": (np.log1p, (POS,)), "sqrt": (np.sqrt, (POS,)), "sqrt_int": (np.sqrt, (I32B,)),
    "cbrt": (np.cbrt, (F32,)), "square": (np.square, (F32,)), "reciprocal": (np.reciprocal, (POS,)),
    "sin": (np.sin, (F32,)), "cos": (np.cos, (F32,)), "tan": (np.tan, (UNIT,)),
    "arcsin": (np.arcsin, (UNIT,)), "arccos": (np.arccos, (UNIT,)), "arctan": (np.arctan, (F32,)),
    "sinh": (np.sinh, (F32,)), "cosh": (np.cosh, (F32,)), "tanh": (np.tanh, (F32,)),
    "arcsinh": (np.arcsinh, (F32,)), "arccosh": (np.arccosh, (POS + 1,)), "arctanh": (np.arctanh, (UNIT,)),
    "arctan2": (np.arctan2, (F32, F32B)), "hypot": (np.hypot, (F32, F32B)),
    "deg2rad": (np.deg2rad, (F32,)), "rad2deg": (np.rad2deg, (F32,)),
    "floor": (np.floor, (F32,)), "ceil": (np.ceil, (F32,)), "rint": (np.rint, (F32 * 3,)),
    "trunc": (np.trunc, (F32 * 3,)), "sign": (np.sign, (F32,)), "sign_int": (np.sign, (I32,)),
    "absolute": (np.absolute, (F32,)), "fabs": (np.fabs, (F32,)), "abs_c64": (np.abs, (C64,)),
    "maximum": (np.maximum, (F32, F32B)), "minimum": (np.minimum, (I32, I32B)),
    "fmax": (np.fmax, (F32, F32B)), "fmin": (np.fmin, (F32, F32B)),
    "copysign": (np.copysign, (F32, F32B)), "signbit": (np.signbit, (F32,)),
    "logaddexp": (np.logaddexp, (F32, F32B)), "logaddexp2": (np.logaddexp2, (F32, F32B)),
    "heaviside": (np.heaviside, (F32, F32B)), "fmod": (np.fmod, (F32, POS)),
    "remainder": (np.remainder, (F32, POS)), "divmod": (np.divmod, (I32, I32B)),
    "isnan": (np.isnan, (F32,)), "isinf": (np.isinf, (F32,)), "isfinite": (np.isfinite, (F32,)),
    "logical_and": (np.logical_and, (BOOL, BOOLB)), "logical_or": (np.logical_or, (F32, BOOLB)),
    "logical_xor": (np.logical_xor, (BOOL, BOOLB)), "logical_not": (np.logical_not, (I32,)),
    "conjugate": (np.conjugate, (C64,)), "float_power": (np.float_power, (POS, F32B)),
    "ldexp": (np.ldexp, (F32, I32B)), "add_c64": (np.add, (C64, C64)), "mul_c64": (np.multiply, (C64, C64)),
    # reductions and statistics
    "sum": (np.sum, (F32,)), "sum_axis": (lambda a: np.sum(a, axis=0), (F32,)),
    "sum_int32": (np.sum, (I32,)), "sum_keepdims": (lambda a: a.sum(axis=1, keepdims=True), (F64,)),
    "prod": (lambda a: np.prod(a, axis=1), (POS,)), "mean": (np.mean, (F32,)),
    "mean_int": (lambda a: np.mean(a, axis=0), (I32,)), "var": (lambda a: np.var(a, axis=1), (F64,)),
    "std": (lambda a: np.std(a, ddof=1), (F32,)), "max": (lambda a: np.max(a, axis=1), (F32,)),
    "min": (np.min, (I32,)), "amax": (np.amax, (F64,)), "argmax": (lambda a: np.argmax(a, axis=1), (F32,)),
    "argmin": (np.argmin, (I32,)), "any": (lambda a: np.any(a, axis=0), (BOOL,)), "all": (np.all, (BOOL,)),
    "cumsum": (lambda a: np.cumsum(a, axis=1), (F32,)), "cumsum_flat": (np.cumsum, (I32,)),
    "cumprod": (lambda a: np.cumprod(a, axis=0), (POS,)), "ptp": (lambda a: np.ptp(a, axis=0), (F32,)),
    "count_nonzero": (np.count_nonzero, (I32,)), "median": (lambda a: np.median(a, axis=1), (F64,)),
    "percentile": (lambda a: np.percentile(a, 30), (F64,)), "quantile": (lambda a: np.quantile(a, [0.2, 0.7], axis=0), (F64,)),
    "average": (lambda a: np.average(a, axis=1, weights=np.arange(1.0, 6.0)), (F32,)),
    "nansum": (np.nansum, (np.where(F32 > 1, np.nan, F32),)), "nanmax": (lambda a: np.nanmax(a, axis=0), (np.where(F32 > 1, np.nan, F32),)),
    "nanmean": (np.nanmean, (np.where(F32 > 1, np.nan, F32),)), "add_reduce": (lambda a: np.add.reduce(a, axis=1), (F32,)),
    "maximum_reduce": (lambda a: np.maximum.reduce(a), (I32,)),
    "norm": (np.linalg.norm, (F64,)), "norm_axis": (lambda a: np.linalg.norm(a, ord=1, axis=1), (F32,)),
    "norm_inf": (lambda a: np.linalg.norm(a, ord=np.inf), (SQ,)),
    # products
    "dot": (np.dot, (F64, F64.T)), "vdot": (np.vdot, (F32, F32B)), "inner": (np.inner, (F32, F32B)),
    "outer": (np.outer, (VEC, VEC)), "tensordot": (lambda a, b: np.tensordot(a, b, axes=([1], [1])), (F32, F32B)),
    "einsum_mm": (lambda a, b: np.einsum("ij,kj->ik", a, b), (F32, F32B)),
    "einsum_trace": (lambda a: np.einsum("ii", a), (SQ,)), "einsum_batch": (lambda a: np.einsum("bij,bjk->bik", a, a), (np.stack([SQ, SQ * 2]),)),
    "kron": (np.kron, (SQ[:2, :2], SQ[2:4, 2:4])), "cross": (np.cross, (F64[:, :3], F64[:, 1:])),
    # shapes and joining
    "reshape": (lambda a: a.reshape(5, 4), (F32,)), "reshape_neg": (lambda a: np.reshape(a, (2, -1)), (F32,)),
    "ravel": (np.ravel, (F32,)), "transpose": (np.transpose, (F32,)), "T": (lambda a: a.T, (F64,)),
    "swapaxes": (lambda a: np.swapaxes(a[None], 0, 2), (F32,)), "moveaxis": (lambda a: np.moveaxis(a[None], 0, -1), (F32,)),
    "expand_dims": (lambda a: np.expand_dims(a, 1), (F32,)), "squeeze": (lambda a: np.squeeze(a[:, None]), (F32,)),
    "broadcast_to": (lambda a: np.broadcast_to(a[0], (3, 5)), (F32,)), "concatenate": (lambda a, b: np.concatenate([a, b], axis=1), (F32, F32B)),
    "concat_promote": (lambda a, b: np.concatenate([a, b]), (I32, F32)), "stack": (lambda a, b: np.stack([a, b], axis=-1), (F32, F32B)),
    "vstack": (lambda a, b: np.vstack([a, b]), (F32, F32B)), "hstack": (lambda a, b: np.hstack([a, b]), (F32, F32B)),
    "split": (lambda a: np.split(a, 2), (F32,)), "array_split": (lambda a: np.array_split(a, 3, axis=1), (F32,)),
    "flip": (lambda a: np.flip(a, 1), (F32,)), "fliplr": (np.fliplr, (F32,)), "flipud": (np.flipud, (F32,)),
    "roll": (lambda a: np.roll(a, -2, axis=1), (F32,)), "roll_flat": (lambda a: np.roll(a, 3), (I32,)),
    "tile": (lambda a: np.tile(a, (2, 1)), (F32,)), "repeat": (lambda a: np.repeat(a, 3, axis=1), (I32,)),
    "repeat_array": (lambda a: np.repeat(a, [1, 0, 2, 1], axis=0), (F32,)),
    "pad": (lambda a: np.pad(a, ((1, 2), (0, 1))), (F32,)), "pad_edge": (lambda a: np.pad(a, 2, mode="edge"), (F32,)),
    "pad_reflect": (lambda a: np.pad(a, 2, mode="reflect"), (F32,)), "pad_wrap": (lambda a: np.pad(a, 1, mode="wrap"), (I32,)),
    "diag": (np.diag, (SQ,)), "diag_vec": (lambda v: np.diag(v, 1), (VEC,)), "diagonal": (lambda a: np.diagonal(a, -1), (SQ,)),
    "trace": (np.trace, (SQ,)), "tril": (np.tril, (SQ,)), "triu": (lambda a: np.triu(a, -1), (F32,)),
    "meshgrid": (lambda a, b: np.meshgrid(a, b), (VEC[:3], VEC)), "atleast_2d": (lambda v: np.atleast_2d(v), (VEC,)),
    # selection, sorting
    "where": (lambda c, a, b: np.where(c, a, b), (BOOL, F32, F32B)), "where_scalar": (lambda a: np.where(a > 0, a, 0.0), (F32,)),
    "clip": (lambda a: np.clip(a, -0.5, 0.5), (F32,)), "clip_method": (lambda a: a.clip(-3, 3), (I32,)),
    "sort": (lambda a: np.sort(a, axis=1), (F32,)), "sort_int": (lambda a: np.sort(a, axis=0), (I32,)),
    "argsort": (lambda a: np.argsort(a, axis=1, kind="stable"), (I32,)), "searchsorted": (lambda a, v: np.searchsorted(a, v), (np.sort(VEC), F64[0])),
    "take": (lambda a: np.take(a, [3, 0, -1], axis=1), (F32,)), "take_along_axis": (lambda a: np.take_along_axis(a, np.argsort(a, axis=1), axis=1), (F32,)),
    "isclose": (lambda a, b: np.isclose(a, a + b * 1e-9), (F64, F64)), "allclose": (lambda a: np.allclose(a, a), (F32,)),
    "round": (lambda a: np.round(a * 10, 1), (F64,)), "around": (lambda a: np.around(a * 10), (F32,)),
    "real": (np.real, (C64,)), "imag": (np.imag, (C64,)), "angle": (np.angle, (C64,)),
    "astype": (lambda a: a.astype(np.int32), (F32 * 10,)), "astype_bool": (lambda a: a.astype(bool), (I32,)),
    "zeros_like": (np.zeros_like, (F32,)), "ones_like": (lambda a: np.ones_like(a, dtype=np.int8), (F32,)),
    "full_like": (lambda a: np.full_like(a, 7), (I32,)),
    # indexing
    "index_int": (lambda a: a[1], (F32,)), "index_slice": (lambda a: a[1:3, ::2], (F32,)),
    "index_neg_step": (lambda a: a[::-1, -2::-2], (F32,)), "index_none": (lambda a: a[None, :, None, 2], (F32,)),
    "index_ellipsis": (lambda a: a[..., 0], (F32,)), "index_array": (lambda a: a[[0, 2, 3]], (F32,)),
    "index_array2": (lambda a: a[np.array([[0], [3]]), np.array([1, 4])], (F32,)),
    "index_mixed": (lambda a: a[1:, [0, -1]], (I32,)), "index_bool_static": (lambda a: a[np.array([True, False, True, True])], (F32,)),
}


def _compare(got, want):
    if isinstance(want, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(got) == len(want)
        for g, w in zip(got, want):
            _compare(g, w)
        return
    want = np.asarray(want)
    got = np.asarray(got)
    assert got.dtype == want.dtype, f"dtype {got.dtype} != NumPy's {want.dtype}"
    assert got.shape == want.shape, f"shape {got.shape} != NumPy's {want.shape}"
    if want.dtype.kind in "biu":
        np.testing.assert_array_equal(got, want)
    else:
        tol = {np.dtype(np.float32): 2e-5, np.dtype(np.complex64): 2e-5}.get(want.dtype, 1e-12)
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol, equal_nan=True)


def test_table_has_at_least_80_rows():
    assert len(ROWS) >= 80


@pytest.mark.parametrize("name", sorted(ROWS))
def test_numpy_function_under_jit(name):
    fn, args = ROWS[name]
    want = fn(*args)
    got = xla.jit(fn)(*args)
    _compare(got, want)
