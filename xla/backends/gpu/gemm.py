"""dot through cuBLAS: ``GemmThunk`` (what to multiply, from which slices)
and the two ways it runs: ``Cublas`` (cuBLAS's strided-batched GEMM,
through ctypes on the ``libcublas`` the nvidia-cublas wheel or the CUDA
toolkit installs) on a GPU, ``run_on_host`` (NumPy) on the emulator.

A dot becomes a GemmThunk when it is a plain (batched) matrix product:
f32 or f64 throughout, batch dimensions leading and in order on both
operands and the result, one contracting dimension, each operand holding at
most one free dimension, row-major layouts, no empty dimension. Others stay
kernels (one thread per output element, ``kernel_emitter.py``). The product
is computed in full f32/f64 precision (cuBLAS's default math mode, no TF32),
which every precision_config allows.

cuBLAS is column-major: a row-major [r, c] matrix is its column-major
transpose with leading dimension c. The row-major result C[M, N] is computed
as the column-major product C^T = B^T A^T, so cuBLAS's first operand is the
dot's rhs: ``gemm(op_rhs, op_lhs, N, M, K, rhs, ld_rhs, lhs, ld_lhs, C, N)``.
"""
import ctypes
import math
from dataclasses import dataclass

import numpy as np

from xla.backends.cpu.kernels import Slice
from xla.backends.cpu.loop_emitter import major_to_minor
from xla.backends.gpu.driver import CudaError, load_cuda_library


@dataclass
class GemmThunk:
    """out[b] = op(lhs[b]) @ op(rhs[b]) for b < batch; slices are
    (allocation index, offset). ``lhs_transposed``: lhs is stored [K, M];
    ``rhs_transposed``: rhs is stored [N, K]."""
    lhs: tuple
    rhs: tuple
    out: tuple
    batch: int
    m: int
    n: int
    k: int
    lhs_transposed: bool
    rhs_transposed: bool
    dtype: str
    instruction: str


def gemm_thunk(h, assignment):
    """The GemmThunk for dot ``h``, or None when it is not a plain matrix product."""
    if h.opcode != "dot" or not h.shape.is_array:
        return None
    lhs, rhs = h.operands
    dtype = h.shape.dtype
    if dtype not in (np.float32, np.float64) or lhs.shape.dtype != dtype or rhs.shape.dtype != dtype:
        return None
    lb, rb = tuple(h.attr("lhs_batch_dims", ())), tuple(h.attr("rhs_batch_dims", ()))
    lc, rc = tuple(h.attr("lhs_contracting_dims", ())), tuple(h.attr("rhs_contracting_dims", ()))
    nb = len(lb)
    if lb != tuple(range(nb)) or rb != lb or len(lc) != 1 or len(rc) != 1:
        return None
    if not (nb + 1 <= lhs.shape.rank <= nb + 2 and nb + 1 <= rhs.shape.rank <= nb + 2):
        return None
    for s in (lhs.shape, rhs.shape, h.shape):
        if major_to_minor(s) != list(range(s.rank)):
            return None
    ld, rd = lhs.shape.dimensions, rhs.shape.dimensions
    k = ld[lc[0]]
    m = ld[2 * nb + 1 - lc[0]] if lhs.shape.rank == nb + 2 else 1
    n = rd[2 * nb + 1 - rc[0]] if rhs.shape.rank == nb + 2 else 1
    batch = math.prod(ld[:nb])
    if 0 in (batch, m, n, k):
        return None

    def where(y):
        return Slice(assignment.buffer(y)).key
    return GemmThunk(where(lhs), where(rhs), where(h), batch, m, n, k,
                     lhs_transposed=lhs.shape.rank == nb + 2 and lc[0] == nb,
                     rhs_transposed=rhs.shape.rank == nb + 2 and rc[0] == nb + 1,
                     dtype=np.dtype(dtype).name, instruction=h.name)


def operand_bytes(t):
    """Bytes of lhs, rhs and out."""
    size = np.dtype(t.dtype).itemsize * t.batch
    return size * t.m * t.k, size * t.k * t.n, size * t.m * t.n


def run_on_host(t, lhs, rhs, out):
    """The product with NumPy over host memory (uint8 arrays of the slices)."""
    dtype = np.dtype(t.dtype)
    a = lhs.view(dtype).reshape((t.batch, t.k, t.m) if t.lhs_transposed else (t.batch, t.m, t.k))
    b = rhs.view(dtype).reshape((t.batch, t.n, t.k) if t.rhs_transposed else (t.batch, t.k, t.n))
    if t.lhs_transposed:
        a = a.transpose(0, 2, 1)
    if t.rhs_transposed:
        b = b.transpose(0, 2, 1)
    out.view(dtype).reshape(t.batch, t.m, t.n)[...] = np.matmul(a, b)


_OP_N, _OP_T = 0, 1


class Cublas:
    """A cuBLAS handle bound to one stream."""

    def __init__(self, stream_address):
        self.lib = _load_cublas()
        self.handle = ctypes.c_void_p()
        self._check("cublasCreate_v2", self.lib.cublasCreate_v2(ctypes.byref(self.handle)))
        self._check("cublasSetStream_v2",
                    self.lib.cublasSetStream_v2(self.handle, ctypes.c_void_p(stream_address)))

    def _check(self, call, status):
        if status != 0:
            raise CudaError(f"{call} failed: cuBLAS status {status}")

    def gemm(self, t, lhs, rhs, out):
        """``t`` over device addresses ``lhs``, ``rhs``, ``out``."""
        f64 = t.dtype == "float64"
        scalar = ctypes.c_double if f64 else ctypes.c_float
        alpha, beta = scalar(1.0), scalar(0.0)
        ld_lhs = t.m if t.lhs_transposed else t.k
        ld_rhs = t.k if t.rhs_transposed else t.n
        fn = self.lib.cublasDgemmStridedBatched if f64 else self.lib.cublasSgemmStridedBatched
        i, ll = ctypes.c_int, ctypes.c_longlong
        self._check("cublas" + ("D" if f64 else "S") + "gemmStridedBatched", fn(
            self.handle, i(_OP_T if t.rhs_transposed else _OP_N),
            i(_OP_T if t.lhs_transposed else _OP_N), i(t.n), i(t.m), i(t.k),
            ctypes.byref(alpha), ctypes.c_void_p(rhs), i(ld_rhs), ll(t.k * t.n),
            ctypes.c_void_p(lhs), i(ld_lhs), ll(t.m * t.k),
            ctypes.byref(beta), ctypes.c_void_p(out), i(t.n), ll(t.m * t.n), i(t.batch)))

    def scale(self, itemsize, count, alpha, address):
        """x *= alpha over ``count`` f32 (itemsize 4) or f64 (8) at ``address``."""
        f64 = itemsize == 8
        fn = self.lib.cublasDscal_v2 if f64 else self.lib.cublasSscal_v2
        a = (ctypes.c_double if f64 else ctypes.c_float)(alpha)
        self._check("cublas" + ("D" if f64 else "S") + "scal_v2",
                    fn(self.handle, ctypes.c_int(count), ctypes.byref(a),
                       ctypes.c_void_p(address), ctypes.c_int(1)))


def _load_cublas():
    return load_cuda_library("cublas", ("libcublas.so.13", "libcublas.so.12", "libcublas.so"),
                             "nvidia-cublas")
