"""Plain NumPy functions under xla.jit, compared with NumPy itself.

Each row is a function written exactly as NumPy code; it runs under
``xla.jit`` (on the cpu backend and on the interpreter) and eagerly in NumPy
on the same random inputs, and the results must agree in dtype and value
(exactly for integers and bools). ``UFUNC_ROWS`` runs every ufunc of
``xla.frontend.ufuncs.UFUNCS`` on every dtype NumPy has a loop for, with
NaN, infinities and signed zeros among the float inputs.
"""
import warnings
import zlib

import numpy as np
import pytest

import xla
from xla.frontend import ufuncs

BACKENDS = ("cpu", "interpreter")

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
TIES = rng.integers(-2, 2, (4, 5)).astype(np.int32)
FNAN = F32.copy()
FNAN[1, 2] = FNAN[3, 0] = FNAN[3, 4] = np.nan
FNAN_INF = FNAN.copy()
FNAN_INF[0, 0], FNAN_INF[2, 3] = np.inf, -np.inf

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
    "index_adv_separated": (lambda a: a[[0, 1], :, [2, 3]], (F64.reshape(2, 3, 2).repeat(2, 2),)),
    "index_traced": (lambda a, i: a[i, 1:], (F32, np.array([[3, -1], [0, 2]]))),
}
ROWS.update({
    # NaN, ties, complex order
    "argmax_nan": (lambda a: np.argmax(a, axis=1), (FNAN,)), "argmin_nan": (lambda a: np.argmin(a, axis=0), (FNAN,)),
    "argmax_ties": (lambda a: np.argmax(a, axis=1), (TIES,)), "argmin_ties_keepdims": (lambda a: np.argmin(a, 0, keepdims=True), (TIES,)),
    "argmax_c64": (lambda a: np.argmax(a, axis=1), (C64,)), "argmax_bool": (lambda a: np.argmax(a, axis=0), (BOOL,)),
    "sort_nan": (lambda a: np.sort(a, axis=1), (FNAN,)), "sort_c64": (np.sort, (C64,)), "sort_bool": (np.sort, (BOOL,)),
    "sort_axis_none": (lambda a: np.sort(a, axis=None), (I32,)),
    "argsort_nan": (lambda a: np.argsort(a, axis=0, kind="stable"), (FNAN,)), "argsort_ties": (lambda a: np.argsort(a, kind="stable"), (TIES,)),
    "max_nan": (lambda a: np.max(a, axis=1), (FNAN,)), "min_nan": (np.min, (FNAN,)), "maximum_nan": (lambda a, b: np.maximum(a, b), (FNAN, F32B)),
    "fmin_nan": (lambda a, b: np.fmin(a, b), (FNAN, F32B)),
    # scans
    "cumsum_bool": (lambda a: np.cumsum(a, axis=0), (BOOL,)), "cumprod_int": (lambda a: np.cumprod(a, axis=1), (TIES,)),
    "cumsum_c64": (np.cumsum, (C64,)), "add_accumulate": (lambda a: np.add.accumulate(a, axis=1), (F32,)),
    "multiply_accumulate": (lambda a: np.multiply.accumulate(a), (I64,)), "cumulative_sum": (lambda a: np.cumulative_sum(a, axis=1, include_initial=True), (F32,)),
    "cumulative_prod": (lambda a: np.cumulative_prod(a, axis=0), (TIES,)), "nancumsum": (lambda a: np.nancumsum(a, axis=1), (FNAN,)),
    "nancumprod": (np.nancumprod, (FNAN,)),
    # gathering, padding
    "take_neg": (lambda a: np.take(a, [-1, 0, 2]), (F32,)), "take_wrap": (lambda a: np.take(a, [7, -9], axis=1, mode="wrap"), (F32,)),
    "take_clip": (lambda a: np.take(a, [7, -9], axis=1, mode="clip"), (F32,)),
    "take_traced_wrap": (lambda a, i: np.take(a, i, axis=1, mode="wrap"), (F32, np.array([7, -9, 2]))),
    "pad_symmetric": (lambda a: np.pad(a, ((2, 3), (1, 4)), mode="symmetric"), (F32,)),
    "pad_values": (lambda a: np.pad(a, 1, constant_values=((1, 2), (3, 4))), (I32,)),
    "pad_reflect_wide": (lambda a: np.pad(a, 6, mode="reflect"), (F64,)),
    # norms
    "norm_fro": (lambda a: np.linalg.norm(a, "fro"), (F64,)), "norm_mat1": (lambda a: np.linalg.norm(a, 1), (F64,)),
    "norm_mat_neginf": (lambda a: np.linalg.norm(a, -np.inf), (F64,)), "norm_vec2": (lambda a: np.linalg.norm(a, 2, axis=0), (F64,)),
    "norm_vec3_keepdims": (lambda a: np.linalg.norm(a, 3, axis=1, keepdims=True), (F64,)), "norm_c64": (np.linalg.norm, (C64,)),
    "norm_int": (np.linalg.norm, (I32,)), "norm_vec_inf": (lambda v: np.linalg.norm(v, np.inf), (VEC,)),
    "norm_vec0": (lambda v: np.linalg.norm(v, 0), (VEC,)),
    # einsum
    "einsum_ellipsis": (lambda a: np.einsum("...ij->...ji", a), (np.stack([SQ, SQ]),)), "einsum_diag": (lambda a: np.einsum("ii->i", a), (SQ,)),
    "einsum_outer": (lambda v: np.einsum("i,j->ij", v, v), (VEC,)), "einsum_implicit": (lambda a: np.einsum("ij,jk", a, a), (SQ,)),
    "einsum_chain": (lambda a: np.einsum("ij,jk,kl->il", a, a, a), (SQ,)), "einsum_total": (lambda a: np.einsum("ij->", a), (F64,)),
    "einsum_batch_trace": (lambda a: np.einsum("bii->b", a), (np.stack([SQ, SQ]),)), "einsum_ellipsis_vec": (lambda a, v: np.einsum("...i,i", a, v), (F64, F64[0])),
    "einsum_int": (lambda a: np.einsum("ij,kj->ik", a, a), (I32,)), "einsum_mixed": (lambda a, b: np.einsum("ij,j->i", a, b), (F32, F64[0, :4].repeat(2)[:5])),
    # shapes
    "repeat_flat": (lambda a: np.repeat(a, 2), (I32,)), "tile_1d": (lambda v: np.tile(v, 3), (VEC,)), "tile_grow": (lambda a: np.tile(a, (2, 1, 2)), (F32,)),
    "roll_multi": (lambda a: np.roll(a, (1, -2), axis=(0, 1)), (F32,)), "diag_k": (lambda a: np.diag(a, -2), (SQ,)),
    "diagonal_3d": (lambda a: np.diagonal(a, 1, 1, 2), (np.stack([SQ, SQ]),)), "trace_offset": (lambda a: np.trace(a, 1), (SQ,)),
    "tril_batched": (lambda a: np.tril(a, 1), (np.stack([SQ, SQ]),)), "split_indices": (lambda a: np.split(a, [1, 3], axis=1), (F32,)),
    "rot90": (np.rot90, (F32,)), "rot90_k3": (lambda a: np.rot90(a, 3, axes=(1, 0)), (I32,)), "append": (lambda a: np.append(a, [1.0, 2.0]), (F64,)),
    "column_stack": (lambda a, b: np.column_stack([a, b]), (VEC, VEC)), "dstack": (lambda a, b: np.dstack([a, b]), (F32, F32B)),
    "atleast_3d": (np.atleast_3d, (VEC,)), "rollaxis": (lambda a: np.rollaxis(a[None], 2), (F32,)), "hsplit": (lambda a: np.hsplit(a, 5), (F32,)),
    "vsplit": (lambda a: np.vsplit(a, 2), (F32,)), "block": (lambda a: np.block([[a, a], [a, a]]), (SQ,)), "resize": (lambda a: np.resize(a, (3, 7)), (F32,)),
    "matrix_transpose": (np.matrix_transpose, (F32,)), "copy": (np.copy, (F32,)),
    # statistics
    "nanvar": (lambda a: np.nanvar(a, axis=0), (FNAN,)), "nanstd": (np.nanstd, (FNAN,)), "nanmin": (lambda a: np.nanmin(a, axis=1), (FNAN,)),
    "nanprod": (np.nanprod, (FNAN,)), "nanargmax": (lambda a: np.nanargmax(a, axis=1), (FNAN,)), "nanargmin": (np.nanargmin, (FNAN,)),
    "nanmedian": (lambda a: np.nanmedian(a, axis=1), (FNAN,)), "nanquantile": (lambda a: np.nanquantile(a, [0.25, 0.9], axis=0), (FNAN.astype(np.float64),)),  # float64: NumPy interpolates float32 input in float32 here
    "nanpercentile": (lambda a: np.nanpercentile(a, 40), (FNAN,)),
    "median_nan": (lambda a: np.median(a, axis=1), (FNAN,)), "median_int": (np.median, (I32,)),
    "quantile_keepdims": (lambda a: np.quantile(a, [0.1, 0.5], axis=1, keepdims=True), (F64,)),
    "quantile_keepdims_flat": (lambda a: np.quantile(a, 0.3, keepdims=True), (F64,)),
    "average_returned": (lambda a: np.average(a, axis=1, weights=[1, 2, 3, 4, 5], returned=True), (F32,)),
    "cov": (np.cov, (F64,)), "cov_cols": (lambda a: np.cov(a, rowvar=False, bias=True), (F32,)), "corrcoef": (np.corrcoef, (F64,)),
    "var_c64": (np.var, (C64,)), "std_int": (lambda a: np.std(a, axis=0), (I32,)), "mean_bool": (np.mean, (BOOL,)),
    "mean_f16": (np.mean, (F32.astype(np.float16),)), "sum_u8": (np.sum, (U8,)), "prod_u8": (lambda a: np.prod(a, axis=0), (U8 % 3,)),
    # differences, convolution, interpolation, polynomials
    "diff": (lambda a: np.diff(a, axis=0), (F32,)), "diff2": (lambda a: np.diff(a, n=2), (I32,)), "diff_bool": (np.diff, (BOOL,)),
    "diff_prepend": (lambda a: np.diff(a, prepend=0), (F64,)), "ediff1d": (lambda v: np.ediff1d(v, to_begin=[9]), (VEC,)),
    "convolve": (np.convolve, (VEC, VEC[:3])), "convolve_same": (lambda a, b: np.convolve(a, b, "same"), (VEC[:2], VEC)),
    "convolve_valid": (lambda a, b: np.convolve(a, b, "valid"), (VEC, VEC[:4])), "correlate": (np.correlate, (VEC, VEC[:3])),
    "correlate_full": (lambda a, b: np.correlate(a, b, "full"), (VEC[:2], VEC)),
    "interp": (lambda x: np.interp(x, [-1, 0, 1.5], [1, 3, 2]), (F64,)), "interp_lr": (lambda x: np.interp(x, [-0.5, 0.5], [1, 3], left=-9, right=9), (F32,)),
    "polyval": (lambda x: np.polyval([1.0, -2.0, 3.0], x), (F64,)), "polyval_int": (lambda x: np.polyval([2, 1], x), (I32,)),
    "trapezoid": (lambda y: np.trapezoid(y, axis=1), (F64,)), "trapezoid_x": (lambda y, x: np.trapezoid(y, x), (F64, np.cumsum(np.abs(F64[0])))),
    # selection
    "select": (lambda a: np.select([a < 0, a > 1], [a, 2 * a], default=-1.0), (F64,)), "isin": (lambda a: np.isin(a, [0, 1, 5]), (I32,)),
    "isin_invert": (lambda a, t: np.isin(a, t, invert=True), (I32, I32B[0])), "nan_to_num": (np.nan_to_num, (FNAN_INF,)),
    "nan_to_num_args": (lambda a: np.nan_to_num(a, nan=-1.0, posinf=9.0), (FNAN_INF,)),
    "digitize": (lambda x: np.digitize(x, [-1.0, 0.0, 1.0]), (F64,)), "digitize_right_decreasing": (lambda x: np.digitize(x, [1.0, 0.0, -1.0], right=True), (F64,)),
    "searchsorted_right": (lambda a, v: np.searchsorted(a, v, side="right"), (np.sort(I32.ravel()), I32)),
    "searchsorted_sorter": (lambda a, v: np.searchsorted(a, v, sorter=np.argsort(a)), (VEC, F64)),
    "partition_kth": (lambda a: np.partition(a, 2, axis=1)[:, 2], (F32,)), "argpartition_kth": (lambda a: np.take_along_axis(a, np.argpartition(a, 1)[:, 1:2], 1), (F32,)),
    "lexsort": (lambda a, b: np.lexsort((a, b)), (TIES[0], TIES[1])),
    # products, misc
    "vecdot": (np.vecdot, (F64, F64)), "vecdot_c64": (lambda a: np.vecdot(a, a), (C64,)), "cross_2d": (np.cross, (VEC[:2], VEC[2:4])),
    "cross_axis0": (lambda a, b: np.cross(a, b, axis=0), (F64[:3], F64[:3] * 2 + 1)), "kron_1d": (np.kron, (VEC[:3], VEC[3:])),
    "kron_mixed": (np.kron, (I32[:2, :3], F32[:3, :2])), "meshgrid_ij": (lambda a, b: np.meshgrid(a, b, indexing="ij"), (VEC[:3], VEC)),
    "meshgrid_sparse": (lambda a, b, c: np.meshgrid(a, b, c, sparse=True), (VEC[:2], VEC[:3], VEC)),
    "matmul_bool": (lambda a: a @ a.T, (BOOL,)), "matmul_c64": (lambda a: a @ a.T, (C64,)), "dot_int": (np.dot, (I32, I32.T)),
    "sinc": (np.sinc, (F64,)), "fix": (np.fix, (F64 * 3,)), "iscomplex": (np.iscomplex, (C64,)), "isreal": (np.isreal, (F32,)),
    "round_c64": (lambda a: np.round(a, 1), (C64,)), "round_int_neg": (lambda a: np.round(a, -1), (I32 * 7,)),
    "clip_int_float_bounds": (lambda a: np.clip(a, -1.5, 1.5), (I32,)), "where_promote": (lambda a, b: np.where(a > 0, a, b), (I32, F32)),
    "sum_dtype": (lambda a: np.sum(a, dtype=np.float32), (I32,)), "mean_axes": (lambda a: np.mean(a[None], axis=(0, 2)), (F32,)),
    "concatenate_flat": (lambda a, b: np.concatenate([a, b], axis=None), (F32, I32)),
    "broadcast_arrays": (lambda a, b: np.broadcast_arrays(a, b), (F32[0], F64[:, :1])),
    "cholesky": (lambda a: np.linalg.cholesky(a @ a.T + np.eye(5)), (SQ,)),
    "shape_facts": (lambda a: a.reshape(np.shape(a)[::-1]) * np.ndim(a) + np.size(a, 0), (F32,)),
    # methods
    "method_sum_mean": (lambda a: a.T.sum(axis=0).mean(), (F32,)), "method_max": (lambda a: a.max(axis=0, keepdims=True), (I32,)),
    "method_astype_f16": (lambda a: a.astype(np.float16) * 2, (F32,)), "method_flatten": (lambda a: a.flatten(), (F32,)),
    "method_argsort": (lambda a: a.argsort(axis=0, kind="stable"), (TIES,)), "method_cumsum": (lambda a: a.cumsum(), (F32,)),
    # more of what scientific kernels call
    "isposinf": (np.isposinf, (FNAN_INF,)), "isneginf": (np.isneginf, (FNAN_INF,)), "isposinf_int": (np.isposinf, (I32,)),
    "diagflat": (lambda a: np.diagflat(a, -1), (F32[:2],)), "diagflat_int": (np.diagflat, (I64,)),
    "diag_indices_from": (lambda a: a[np.diag_indices_from(a)] * 2, (SQ,)),
    "histogram_bin_edges": (lambda a: np.histogram_bin_edges(a, 6), (F32,)),
    "histogram_bin_edges_range": (lambda a: np.histogram_bin_edges(a, 3, range=(-1, 2)), (I32,)),
    "histogram_bin_edges_given": (lambda a: np.histogram_bin_edges(a, np.array([0.0, 0.5, 2.0])), (F64,)),
    "unstack": (lambda a: np.unstack(a, axis=1), (F32,)), "sort_complex": (np.sort_complex, (F64[0],)),
    "sort_complex_c": (np.sort_complex, (C64[0],)), "sort_complex_i8": (np.sort_complex, (I32.astype(np.int8)[0],)),
    "sort_complex_f32": (np.sort_complex, (F32[0],)),
    "logspace": (lambda a: np.logspace(a[0, 0], a[0, 1], 5), (F64,)),
    "logspace_base": (lambda a: np.logspace(a[0], a[1], 4, base=2.0, endpoint=False), (F64,)),
    "logspace_base_array": (lambda a: np.logspace(a[0, 0], a[0, 1], 4, base=np.array([2.0, 3.0])), (F64,)),
    "logspace_base_np_scalar": (lambda a: np.logspace(a[0, 0], 1, 3, base=np.float64(2)), (F32,)),
    "logspace_f32": (lambda a: np.logspace(a[0, 0], 1, 3), (F32,)),
    "logspace_dtype": (lambda a: np.logspace(a[0, 0], 1, 3, dtype=np.float32), (F64,)),
    "geomspace": (lambda a, b: np.geomspace(a, b, 6), (POS[0], POS[1] * 100)),
    "geomspace_negative": (lambda a: np.geomspace(-a, -a * 1000, 4, endpoint=False), (np.float64(1.5),)),
    "geomspace_axis": (lambda a, b: np.geomspace(a, b, 3, axis=1), (F64[0] ** 2 + 1, F64[1] ** 2 + 2)),
    "geomspace_one": (lambda a: np.geomspace(a, 10.0, 1), (np.float64(3.0),)),
    "geomspace_f32_dtype": (lambda a: np.geomspace(a, 8, 4, dtype=np.float32), (np.float64(1.0),)),
    "linalg_outer": (np.linalg.outer, (F32[0], I32[1])), "linalg_cross": (lambda a: np.linalg.cross(a[:, :3], a[:, 1:4]), (F64,)),
    "linalg_diagonal": (lambda a: np.linalg.diagonal(a, offset=1), (F32,)), "linalg_trace": (lambda a: np.linalg.trace(a, dtype=np.float64), (I32,)),
    "linalg_matmul": (lambda a: np.linalg.matmul(a, a.T), (F32,)), "linalg_vecdot": (lambda a: np.linalg.vecdot(a, a, axis=0), (I32,)),
    "vecdot_int": (lambda a, b: np.vecdot(a, b), (I32, I32B)), "vecdot_bool": (lambda a, b: np.vecdot(a, b), (BOOL, BOOLB)),
    "vecdot_complex": (lambda a: np.vecdot(a, a * 2j), (C64,)),
    "linalg_matrix_transpose": (np.linalg.matrix_transpose, (I32,)), "linalg_tensordot": (lambda a: np.linalg.tensordot(a, a, axes=1), (SQ,)),
    "tensorinv": (lambda a: np.linalg.tensorinv((a + 5 * np.eye(4)).reshape(4, 2, 2), ind=1), (SQ[:4, :4],)),
    "tensorinv_2": (lambda a: np.linalg.tensorinv((a + 5 * np.eye(4)).reshape(2, 2, 2, 2)), (SQ[:4, :4],)),
    "tensorsolve": (lambda a, b: np.linalg.tensorsolve((a + 5 * np.eye(4)).reshape(2, 2, 4), b.reshape(2, 2)), (SQ[:4, :4], VEC[:4])),
    "tensorsolve_axes": (lambda a, b: np.linalg.tensorsolve((a + 5 * np.eye(4)).reshape(4, 2, 2), b.reshape(2, 2), axes=(0,)),
                         (SQ[:4, :4], VEC[:4])),
})


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
        tol = TOLERANCE[want.dtype]
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol, equal_nan=True)


TOLERANCE = {np.dtype(np.float16): 2e-3, np.dtype(np.float32): 2e-5, np.dtype(np.complex64): 2e-5,
             np.dtype(np.float64): 1e-12, np.dtype(np.complex128): 1e-12}


def test_table_has_at_least_80_rows():
    assert len(ROWS) >= 80


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", sorted(ROWS))
def test_numpy_function_under_jit(name, backend):
    fn, args = ROWS[name]
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)   # np.cross of 2-vectors
        want = fn(*args)
    got = xla.jit(fn, backend=backend)(*args)
    _compare(got, want)


# ----- every ufunc on every dtype NumPy has a loop for -------------------------------------

UFUNC_DTYPES = (np.float32, np.float64, np.float16, np.int32, np.int64, np.int8, np.uint8, np.bool_,
                np.complex64, np.complex128)
# Inputs inside each ufunc's domain (elsewhere NumPy and C disagree on
# what undefined means: integer x // 0, x ** -1, shifts past the width).
_POSITIVE = {np.log, np.log2, np.log10, np.sqrt, np.log1p, np.float_power}
_UNIT = {np.arcsin, np.arccos, np.arctanh}
_NONZERO_DIVISOR = {np.floor_divide, np.remainder, np.fmod, np.divmod, np.true_divide}


def _ufunc_inputs(u, dtype):
    dtype = np.dtype(dtype)
    rng = np.random.default_rng(zlib.crc32(f"{u.__name__}/{dtype}".encode()))
    shape = (3, 8)

    def sample(k):
        if dtype.kind == "b":
            return rng.random(shape) > 0.5
        if dtype.kind in "iu":
            lo = 0 if dtype.kind == "u" or u in (np.sqrt, np.log, np.log2, np.log10) else -9
            x = rng.integers(lo, 10, shape)
            if u is np.reciprocal or (k == 1 and u in _NONZERO_DIVISOR):
                x[x == 0] = 3
            if k == 1 and u in (np.left_shift, np.right_shift, np.power):
                x = np.abs(x) % 4
            if u is np.arccosh:
                x = np.abs(x) + 1
            return x.astype(dtype)
        x = rng.standard_normal(shape) * 2
        if dtype.kind == "c":
            x = x + 1j * rng.standard_normal(shape)
        elif u in _POSITIVE or (u is np.power and k == 0):
            x = np.abs(x) + 0.1
        elif u in _UNIT:
            x = np.clip(x / 3, -0.95, 0.95)
        elif u is np.arccosh:
            x = np.abs(x) + 1
        if dtype.kind == "f":
            # NaN, infinities and signed zeros, where each ufunc sees them.
            pos = rng.permutation(x.size)[:5]
            x.flat[pos] = [np.nan, np.inf, -np.inf, 0.0, -0.0]
        return x.astype(dtype)
    args = [sample(k) for k in range(u.nin)]
    if u is np.ldexp:
        args[1] = rng.integers(-4, 5, shape).astype(np.int32)
    return tuple(args)


def _ufunc_rows():
    rows = {}
    for u in sorted(ufuncs.UFUNCS, key=lambda u: u.__name__):
        for dt in UFUNC_DTYPES:
            args = _ufunc_inputs(u, dt)
            try:
                with np.errstate(all="ignore"):
                    u(*args)
            except (TypeError, ValueError):   # NumPy has no loop for this dtype
                continue
            if u is np.reciprocal and np.dtype(dt) == np.bool_:
                continue   # NumPy's int8 loop divides by zero for False: undefined in C
            rows[f"{u.__name__}-{np.dtype(dt).name}"] = (u, args)
    return rows


UFUNC_ROWS = _ufunc_rows()


def test_every_table_ufunc_has_rows():
    covered = {u for u, _ in UFUNC_ROWS.values()}
    assert covered == set(ufuncs.UFUNCS)
    assert len(UFUNC_ROWS) > 3 * len(ufuncs.UFUNCS)


# The interpreter runs every row; the cpu backend every ufunc on its main
# dtypes (each cpu compile costs ~20 ms).
_CPU_DTYPES = ("float32", "float64", "int32", "int64", "bool", "complex64")


_UFUNC_CASES = [(name, backend) for name in sorted(UFUNC_ROWS) for backend in BACKENDS
                if backend != "cpu" or name.rsplit("-", 1)[1] in _CPU_DTYPES]


@pytest.mark.parametrize("name,backend", _UFUNC_CASES)
def test_ufunc_dtype_under_jit(name, backend):
    u, args = UFUNC_ROWS[name]
    with np.errstate(all="ignore"):
        want = u(*args)
    got = xla.jit(lambda *a: u(*a), backend=backend)(*args)
    _compare(got, want)


# ----- the bit-level ufuncs, exactly ------------------------------------------------------

def _float_edges(dtype):
    info = np.finfo(dtype)
    return np.array([0.0, -0.0, 1.0, -1.0, 0.75, -3.5, 1e-3, info.max, -info.max, info.tiny, -info.tiny,
                     info.smallest_subnormal, -info.smallest_subnormal, info.tiny / 3, 2.5 * info.tiny,
                     np.inf, -np.inf, np.nan, 1234.5678, -7.0], dtype)


def _same_bits(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype)
    if want.dtype.kind == "f":
        same = (got == want) & (np.signbit(got) == np.signbit(want)) | np.isnan(got) & np.isnan(want)
        assert same.all(), (got[~same], want[~same])
    else:
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_frexp_modf_spacing_nextafter_bit_for_bit(dtype, backend):
    x = _float_edges(dtype)
    y = np.roll(x, 3)
    for f, args in ((np.frexp, (x,)), (np.modf, (x,)), (np.spacing, (x,)), (np.nextafter, (x, y)),
                    (np.nextafter, (x, x)), (np.nextafter, (x, np.zeros_like(x)))):
        with np.errstate(all="ignore"):
            want = f(*args)
        got = xla.jit(lambda *a: f(*a), backend=backend)(*args)
        for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
            _same_bits(np.asarray(g), np.asarray(w))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int32, np.int64, np.uint64])
def test_gcd_lcm_bitwise_count_exactly(dtype, backend):
    info = np.iinfo(dtype)
    fib = [1, 1]
    while fib[-1] + fib[-2] <= info.max:
        fib.append(fib[-1] + fib[-2])
    vals = [0, 1, 6, 12, 35, 64, 81, fib[-1], fib[-2], info.max]
    if info.min < 0:
        vals += [-6, -35, -81, info.min + 1]
    a = np.array(vals, dtype)
    b = np.array(vals[::-1], dtype)
    small = (a % 50).astype(dtype)
    for f, args in ((np.gcd, (a, b)), (np.gcd, (a, np.roll(a, 1))), (np.lcm, (small, np.roll(small, 2))),
                    (np.bitwise_count, (a,)), (np.gcd, (a, dtype(0)))):
        want = f(*args)
        got = xla.jit(lambda *x: f(*x), backend=backend)(*args)
        _same_bits(np.asarray(got), np.asarray(want))


@pytest.mark.parametrize("backend", BACKENDS)
def test_log10_and_log2_are_exact_at_powers_of_their_base(backend):
    # libm's (NumPy's f64) results there are the integers; log(x) / log(10)
    # gave log10(1000.0) = 2.9999999999999996, so floor(log10(x)) lost a digit.
    k10 = np.arange(-307, 309)
    tens = np.array([float(f"1e{k}") for k in k10])
    twos = np.ldexp(1.0, np.arange(-1074, 1024))
    edges = np.array([0.0, -0.0, -1.0, np.inf, -np.inf, np.nan, 999.0, 1001.0, 5e-324])
    log10 = xla.jit(np.log10, backend=backend)
    log2 = xla.jit(np.log2, backend=backend)
    with np.errstate(all="ignore"):
        _same_bits(np.asarray(log10(tens)), np.log10(tens))
        _same_bits(np.asarray(log2(twos)), np.log2(twos))
        assert np.array_equal(np.asarray(log10(tens)), k10.astype(np.float64))
        got, want = np.asarray(log10(edges)), np.log10(edges)
        special = ~np.isfinite(want)
        _same_bits(got[special], want[special])
        np.testing.assert_allclose(got[~special], want[~special], rtol=4e-16)
        assert (np.floor(log10(np.array([1000.0, 999.0, 1e6, 0.001]))) == [3, 2, 6, -3]).all()
    # float32: the nearest floats to 10^k (normal ones) give k exactly.
    k32 = np.arange(-37, 39)
    tens32 = np.array([np.float32(f"1e{k}") for k in k32])
    got32 = np.asarray(xla.jit(np.log10, backend=backend)(tens32))
    assert got32.dtype == np.float32 and np.array_equal(got32, k32.astype(np.float32))


def test_log10_and_log2_keep_their_gradient_at_powers_of_their_base():
    # The exact results there come through a correction without gradient:
    # d/dx log_b(x) = 1 / (x ln b), not the 0 of a rounded value.
    x = np.array([1000.0, 999.0, 0.01, 1024.0, 0.5, 3.0])
    for f, base in ((np.log10, 10.0), (np.log2, 2.0)):
        got = np.asarray(xla.grad(lambda a: np.sum(f(a)))(x))
        np.testing.assert_allclose(got, 1 / (x * np.log(base)), rtol=1e-14)
