// The CPU backend's runtime: functions that JIT-compiled code calls by name
// (registered with llvmlite's add_symbol from cpu_runtime_symbols()), and the
// process-wide thread pool they share.
//
// Generated code is one function `void NAME(i8** buffer_table)`; when it needs
// a parallel loop, a matrix product or a convolution it calls the entry points
// below. All of them are plain C (no exceptions cross them) and block until the
// work is done.
//
// Threading: one process-wide pool of N workers, N = the number of CPUs this
// process may run on (sched_getaffinity), or XLA_CPU_NUM_THREADS when set
// (read when the pool is first used), or __xla_cpu_runtime_set_num_threads.
// N == 1 means no worker threads: everything runs on the calling thread.
// Calls made from inside a pool worker (e.g. a matmul inside a parallel_for
// body) run on that worker, serially, so nested parallelism cannot deadlock.
#ifndef XLA_BACKENDS_CPU_RUNTIME_CPU_RUNTIME_H_
#define XLA_BACKENDS_CPU_RUNTIME_CPU_RUNTIME_H_

#include <cstddef>
#include <cstdint>

extern "C" {

// One runtime entry point: the name generated code calls it by, and its address.
struct XlaCpuRuntimeSymbol {
  const char* name;
  void* address;
};

// All runtime entry points; *count receives their number. The table is static.
const XlaCpuRuntimeSymbol* __xla_cpu_runtime_symbols(int64_t* count);

// The pool's thread count (>= 1), creating the pool on first use.
int32_t __xla_cpu_runtime_num_threads(void);

// Replaces the pool with one of `num_threads` threads (<= 0: the default, as
// above). Must not be called while runtime work is in flight.
void __xla_cpu_runtime_set_num_threads(int32_t num_threads);

// The ISA variant of the matmul and convolution kernels this process uses:
// "baseline" (the target's default ISA), "avx2" (AVX2 + FMA), "avx512"
// (AVX-512 F/BW/DQ/VL), "avx512_vnni" (with VNNI), "avx512_vnni_bf16" (with
// VNNI and BF16) or "amx" (and AMX tiles), the widest the CPU supports unless the environment
// variable XLA_CPU_RUNTIME_ISA names one (see kernels.h). Chosen once, on
// first use. Null, with *error (when error is not null) set to why, when
// XLA_CPU_RUNTIME_ISA names a variant that is unknown, not in this build or
// not supported by this CPU; kernel calls then end the process with that
// message.
const char* __xla_cpu_runtime_isa(const char** error);

// Calls body(ctx, begin, end) for disjoint [begin, end) ranges covering
// [0, n) exactly once, on the pool and the calling thread, and returns when
// all have finished. Each range has at least min_chunk iterations except
// possibly the last (min_chunk <= 0 counts as 1). Runs body(ctx, 0, n) inline
// when n <= min_chunk, the pool has one thread, or the caller is a pool worker.
void __xla_cpu_parallel_for(void (*body)(void* ctx, int64_t begin, int64_t end), void* ctx,
                            int64_t n, int64_t min_chunk);

// out[b] = op(lhs[b]) x op(rhs[b]) for b in [0, batch): row-major, dense,
// out[b] is m x n. op(lhs) is m x k, stored k x m when transpose_lhs != 0;
// op(rhs) is k x n, stored n x k when transpose_rhs != 0. `out` must not
// overlap the operands. k == 0 writes zeros. Complex variants take
// interleaved (real, imag) pairs of float / double. The s32 variant wraps
// modulo 2^32 (the runtime is compiled with -fwrapv), as XLA's s32 dot does.
void __xla_cpu_matmul_f32(const float* lhs, const float* rhs, float* out, int64_t batch,
                          int64_t m, int64_t k, int64_t n, int32_t transpose_lhs,
                          int32_t transpose_rhs);
// out[b] = addend[b] + alpha (op(lhs[b]) x op(rhs[b])), as above, `addend` a
// dense array laid out as `out` (not overlapping it): a product with the
// elementwise update that follows it in one pass over the result (a
// training step's w - lr * dW: dot-addend-fusion). On AVX-512 the packed
// f32 GEMM adds it as it stores each tile (fused: alpha times the sums plus
// the addend, rounded once); elsewhere the product is stored, then updated.
void __xla_cpu_matmul_addend_f32(const float* lhs, const float* rhs, float* out, int64_t batch,
                                 int64_t m, int64_t k, int64_t n, int32_t transpose_lhs,
                                 int32_t transpose_rhs, const float* addend, float alpha);
void __xla_cpu_matmul_f64(const double* lhs, const double* rhs, double* out, int64_t batch,
                          int64_t m, int64_t k, int64_t n, int32_t transpose_lhs,
                          int32_t transpose_rhs);
void __xla_cpu_matmul_s32(const int32_t* lhs, const int32_t* rhs, int32_t* out, int64_t batch,
                          int64_t m, int64_t k, int64_t n, int32_t transpose_lhs,
                          int32_t transpose_rhs);
void __xla_cpu_matmul_c64(const void* lhs, const void* rhs, void* out, int64_t batch, int64_t m,
                          int64_t k, int64_t n, int32_t transpose_lhs, int32_t transpose_rhs);
// Low-precision operands, a wider result (same layout contract): s8 x s8 ->
// s32, exact modulo 2^32; bf16 x bf16 (the bits, uint16) -> f32, products
// exact and summed in f32 (XLA's bf16 dot before its result is rounded).
void __xla_cpu_matmul_s8_s32(const int8_t* lhs, const int8_t* rhs, int32_t* out, int64_t batch,
                             int64_t m, int64_t k, int64_t n, int32_t transpose_lhs,
                             int32_t transpose_rhs);
void __xla_cpu_matmul_bf16_f32(const void* lhs, const void* rhs, float* out, int64_t batch,
                               int64_t m, int64_t k, int64_t n, int32_t transpose_lhs,
                               int32_t transpose_rhs);
void __xla_cpu_matmul_c128(const void* lhs, const void* rhs, void* out, int64_t batch,
                           int64_t m, int64_t k, int64_t n, int32_t transpose_lhs,
                           int32_t transpose_rhs);

// Small and strided products, register-tiled in place (no packing; see
// tiled_gemm.cc): for every product of a batch, c[i, j] = sum over p in
// increasing order of a[i, p] * b[p, j], one fused multiply-add per term
// where the ISA has FMA. `walk` (elements, not bytes): {m, k, n, a_row,
// a_col, b_row, c_row, rank, sizes[rank], a_batch[rank], b_batch[rank],
// c_batch[rank], blocked[, b_col]}: a[i, p] at a + i * a_row + p * a_col, b[p, j] at b + p *
// b_row + j, c[i, j] at c + i * c_row + j, each offset further by the
// product's position times its batch strides (products row-major over the
// batch sizes; rank <= 8). `c` must not overlap the operands. min_chunk > 0
// spreads the blocks of 4 rows over the pool in chunks of at least that many
// (the bits do not depend on it); otherwise all run on the calling thread.
// blocked != 0 (products too large for the tiled walk; a_row or a_col must
// be 1): each product (or row slab of one) is the runtime's blocked GEMM
// instead, summed in its order; min_chunk > 0 spreads them over the pool;
// b[p, j] is then at b + p * b_row + j * b_col (b_row or b_col 1).
void __xla_cpu_tiled_gemm_f32(const float* a, const float* b, float* c, const int64_t* walk,
                              int64_t min_chunk);
void __xla_cpu_tiled_gemm_f64(const double* a, const double* b, double* c, const int64_t* walk,
                              int64_t min_chunk);

// Cholesky factors of `batch` dense row-major n x n matrices, each read
// from its lower (lower != 0) or upper triangle (complex matrices are
// Hermitian: a = L L^H = U^H U; interleaved (real, imag) pairs). potrf == 0 (HLO cholesky):
// `out` holds the factor in that triangle and zeros in the other; a matrix
// that is not positive definite (a pivot that is not > 0, NaN included)
// gives all NaN. potrf != 0 (LAPACK's potrf): the other triangle is copied
// from `a`, and a matrix that fails is copied whole. `info` (may be null)
// receives, per matrix, 0 or the 1-based order of the first leading minor
// that is not positive definite. `out` may be `a`.
void __xla_cpu_cholesky_f32(const float* a, float* out, int32_t* info, int64_t batch, int64_t n,
                            int32_t lower, int32_t potrf);
void __xla_cpu_cholesky_f64(const double* a, double* out, int32_t* info, int64_t batch,
                            int64_t n, int32_t lower, int32_t potrf);
void __xla_cpu_cholesky_c64(const void* a, void* out, int32_t* info, int64_t batch, int64_t n,
                            int32_t lower, int32_t potrf);
void __xla_cpu_cholesky_c128(const void* a, void* out, int32_t* info, int64_t batch, int64_t n,
                             int32_t lower, int32_t potrf);

// Triangular solves for `batch` dense row-major systems: op(a) x = alpha b
// (left side, a is m x m) or x op(a) = alpha b (a is n x n), b and x m x n,
// written to `out` (which may be `b`). flags: 1 left side, 2 a is lower
// triangular (only that triangle is read), 4 unit diagonal (not read), 8
// op(a) is a's transpose, 8 | 16 its adjoint (conjugate transpose). `alpha`
// may be null (1). A zero on the diagonal
// gives inf/NaN, as substitution does.
void __xla_cpu_trsm_f32(const float* a, const float* b, float* out, const float* alpha,
                        int64_t batch, int64_t m, int64_t n, int32_t flags);
void __xla_cpu_trsm_f64(const double* a, const double* b, double* out, const double* alpha,
                        int64_t batch, int64_t m, int64_t n, int32_t flags);
void __xla_cpu_trsm_c64(const void* a, const void* b, void* out, const void* alpha,
                        int64_t batch, int64_t m, int64_t n, int32_t flags);
void __xla_cpu_trsm_c128(const void* a, const void* b, void* out, const void* alpha,
                         int64_t batch, int64_t m, int64_t n, int32_t flags);

// Symmetric eigendecompositions (LAPACK's syevd) of `batch` dense n x n
// matrices, each read from one triangle: `w` (batch x n) receives the
// eigenvalues in ascending order and `v` (like a) the eigenvectors as
// columns, a == V diag(w) V^T. flags: 1 read the lower triangle (else the
// upper), 2 the matrices are column-major (else row-major; v too), 4
// compute eigenvectors (else v is a copy of a). `info` (may be null)
// receives 0, or 1 where the solver did not converge (then w and v are
// NaN). `v` may be `a`.
void __xla_cpu_syevd_f32(const float* a, float* v, float* w, int32_t* info, int64_t batch,
                         int64_t n, int32_t flags);
void __xla_cpu_syevd_f64(const double* a, double* v, double* w, int32_t* info, int64_t batch,
                         int64_t n, int32_t flags);

// Singular value decompositions (LAPACK's gesdd) of `batch` dense m x n
// matrices, a == U diag(s) Vt: `s` (batch x min(m, n)) descending, `u`
// m x m (full) or m x min(m, n), `vt` n x n (full) or min(m, n) x n.
// flags: 1 compute u and vt (else they are zeroed; they may be null), 2
// full matrices, 4 the matrices are column-major (else row-major; u and vt
// too). `info` (may be null) receives 0, or 1 where the matrix has a
// non-finite entry or the solver did not converge (then s, u and vt are
// NaN).
void __xla_cpu_gesdd_f32(const float* a, float* s, float* u, float* vt, int32_t* info,
                         int64_t batch, int64_t m, int64_t n, int32_t flags);
void __xla_cpu_gesdd_f64(const double* a, double* s, double* u, double* vt, int32_t* info,
                         int64_t batch, int64_t m, int64_t n, int32_t flags);

// LU factorizations with partial pivoting (LAPACK's getrf) of `batch` dense
// m x n matrices, a = P L U: `lu` (like a; may be a) holds L below the
// diagonal (unit diagonal not stored) and U on and above it; `ipiv` (batch x
// min(m, n)) the 1-based row swapped with row i at step i (the first row of
// largest magnitude in the column); `info` (may be null) 0, or the 1-based
// index of the first zero pivot (the factorization is completed). flags: 1
// the matrices are column-major (else row-major).
void __xla_cpu_getrf_f32(const float* a, float* lu, int32_t* ipiv, int32_t* info,
                         int64_t batch, int64_t m, int64_t n, int32_t flags);
void __xla_cpu_getrf_f64(const double* a, double* lu, int32_t* ipiv, int32_t* info,
                         int64_t batch, int64_t m, int64_t n, int32_t flags);

// Householder QR factorizations (LAPACK's geqrf) of `batch` dense m x n
// matrices: `out` (like a; may be a) holds R on and above the diagonal and
// the reflectors' vectors below it (v[0] = 1 not stored), `tau` (batch x
// min(m, n)) their scales, H_i = I - tau_i v_i v_i^T, a = H_1 ... H_k R.
// flags: 1 column-major (else row-major).
void __xla_cpu_geqrf_f32(const float* a, float* out, float* tau, int64_t batch, int64_t m,
                         int64_t n, int32_t flags);
void __xla_cpu_geqrf_f64(const double* a, double* out, double* tau, int64_t batch, int64_t m,
                         int64_t n, int32_t flags);

// The first n columns of Q = H_1 ... H_k (LAPACK's orgqr) from geqrf's form:
// the reflectors below the diagonal of the first k columns of the m x n `a`
// and `tau` (batch x k, k <= n), into `out` (like a; may be a). flags: 1
// column-major (else row-major).
void __xla_cpu_orgqr_f32(const float* a, const float* tau, float* out, int64_t batch, int64_t m,
                         int64_t n, int64_t k, int32_t flags);
void __xla_cpu_orgqr_f64(const double* a, const double* tau, double* out, int64_t batch,
                         int64_t m, int64_t n, int64_t k, int32_t flags);

// General eigendecompositions (LAPACK's geev) of `batch` dense n x n
// matrices, a v == lambda v, with Eigen's EigenSolver (f32, f64) and
// ComplexEigenSolver (c64, c128); `a` is float, double, complex<float> or
// complex<double>. The eigenvalues, for real `a` in the order of the
// computed real Schur form's diagonal (a complex conjugate pair together,
// the one of positive imaginary part first), for complex `a` by ascending
// magnitude (ComplexEigenSolver sorts them): for real `a`, their real parts in
// `w` and imaginary parts in `wi` (batch x n each, a's real type); for
// complex `a`, in `w` (batch x n complex; `wi` unused, may be null). `vr`
// (like a, complex of a's precision; may be null) receives the right
// eigenvectors as columns, each of unit 2-norm with its largest component
// (the first of largest magnitude) real and positive; `vl` (may be null)
// is zeroed: left eigenvectors are not computed. flags: 1 the matrices are
// column-major (else row-major; vl and vr too), 2 compute vr (else it is
// zeroed). `info` (may be null) receives 0, -4 where the matrix has a NaN
// or an infinity (as jaxlib's kernel reports it), or 1 where the QR
// iterations did not converge; w, wi and vr are then NaN.
void __xla_cpu_geev_f32(const void* a, void* w, void* wi, void* vl, void* vr, int32_t* info,
                        int64_t batch, int64_t n, int32_t flags);
void __xla_cpu_geev_f64(const void* a, void* w, void* wi, void* vl, void* vr, int32_t* info,
                        int64_t batch, int64_t n, int32_t flags);
void __xla_cpu_geev_c64(const void* a, void* w, void* wi, void* vl, void* vr, int32_t* info,
                        int64_t batch, int64_t n, int32_t flags);
void __xla_cpu_geev_c128(const void* a, void* w, void* wi, void* vl, void* vr, int32_t* info,
                         int64_t batch, int64_t n, int32_t flags);

// FFT over the last `rank` (1 to 3) dimensions of dense row-major arrays,
// `batch` of them: kind 0 FFT (complex -> complex), 1 IFFT (scaled by
// 1/N), 2 RFFT (real -> complex, the last dimension n becomes n/2 + 1),
// 3 IRFFT (complex -> real, n/2 + 1 -> n, scaled; imaginary parts a real
// signal cannot have are ignored, as numpy.fft.irfftn does). `lengths`
// holds fft_length (the real-side sizes). Power-of-two lengths: a Stockham
// transform vectorized across lines (fft.cc); others: Eigen's FFT module
// (kissfft); `in` and `out` must not overlap. f32: complex<float> and
// float; f64: complex<double> and double.
void __xla_cpu_fft_f32(const void* in, void* out, int64_t batch, int32_t rank,
                       const int64_t* lengths, int32_t kind);
void __xla_cpu_fft_f64(const void* in, void* out, int64_t batch, int32_t rank,
                       const int64_t* lengths, int32_t kind);

// 2-D convolution, XLA's semantics, dense row-major:
//   input  [batch, in_h, in_w, in_c]                       (NHWC)
//   kernel [kernel_h, kernel_w, in_c / feature_group_count, out_c]  (HWIO)
//   out    [batch, out_h, out_w, out_c]                    (NHWC)
// out[b, oy, ox, o] = sum over (ky, kx, c) of input[b, iy, ix, g*cg + c] *
// kernel[ky, kx, c, o], with g = o / (out_c / feature_group_count),
// cg = in_c / feature_group_count, and (iy, ix) the position in the input
// dilated by lhs_dilation (zeros between elements) then padded low by pad_lo:
//   iy * lhs_dilation_h = oy * stride_h - pad_h_lo + ky * rhs_dilation_h
// (terms where that has no integer iy in [0, in_h) contribute zero; likewise x).
// High padding is implied by out_h / out_w. Negative padding crops. in_c and
// out_c must be divisible by feature_group_count.
void __xla_cpu_conv2d_f32(const float* input, const float* kernel, float* out, int64_t batch,
                          int64_t in_h, int64_t in_w, int64_t in_c, int64_t kernel_h,
                          int64_t kernel_w, int64_t out_c, int64_t out_h, int64_t out_w,
                          int64_t stride_h, int64_t stride_w, int64_t pad_h_lo,
                          int64_t pad_w_lo, int64_t lhs_dilation_h, int64_t lhs_dilation_w,
                          int64_t rhs_dilation_h, int64_t rhs_dilation_w,
                          int64_t feature_group_count);
void __xla_cpu_conv2d_f64(const double* input, const double* kernel, double* out,
                          int64_t batch, int64_t in_h, int64_t in_w, int64_t in_c,
                          int64_t kernel_h, int64_t kernel_w, int64_t out_c, int64_t out_h,
                          int64_t out_w, int64_t stride_h, int64_t stride_w, int64_t pad_h_lo,
                          int64_t pad_w_lo, int64_t lhs_dilation_h, int64_t lhs_dilation_w,
                          int64_t rhs_dilation_h, int64_t rhs_dilation_w,
                          int64_t feature_group_count);

// The same convolution with its buffers in the order of a kernel gradient
// (JAX writes it f01b_i01o->01bf: the contraction runs over a batch of
// images, the result is a small kernel), same arguments, dense row-major:
//   input  [in_c, in_h, in_w, batch]
//   kernel [in_c, kernel_h, kernel_w, out_c]
//   out    [out_h, out_w, batch, out_c]
// out[oy, ox, b, o] = sum over (c, ky, kx) of input[c, iy, ix, b] *
// kernel[c, ky, kx, o], (iy, ix) as above. feature_group_count must be 1.
// Computed as one GEMM contracting over (c, ky, kx), whose rows the buffers
// hold contiguously: no transposed copies.
void __xla_cpu_conv2d_filter_f32(const float* input, const float* kernel, float* out,
                                 int64_t batch, int64_t in_h, int64_t in_w, int64_t in_c,
                                 int64_t kernel_h, int64_t kernel_w, int64_t out_c,
                                 int64_t out_h, int64_t out_w, int64_t stride_h,
                                 int64_t stride_w, int64_t pad_h_lo, int64_t pad_w_lo,
                                 int64_t lhs_dilation_h, int64_t lhs_dilation_w,
                                 int64_t rhs_dilation_h, int64_t rhs_dilation_w,
                                 int64_t feature_group_count);
void __xla_cpu_conv2d_filter_f64(const double* input, const double* kernel, double* out,
                                 int64_t batch, int64_t in_h, int64_t in_w, int64_t in_c,
                                 int64_t kernel_h, int64_t kernel_w, int64_t out_c,
                                 int64_t out_h, int64_t out_w, int64_t stride_h,
                                 int64_t stride_w, int64_t pad_h_lo, int64_t pad_w_lo,
                                 int64_t lhs_dilation_h, int64_t lhs_dilation_w,
                                 int64_t rhs_dilation_h, int64_t rhs_dilation_w,
                                 int64_t feature_group_count);

// A depthwise layer's kernel gradient (JAX's f01b_i01o->01bf with
// batch_group_count equal to the features) in conv2d_filter's order, same
// arguments, with out_c == batch (the features, one batch group each):
//   input  [in_c, in_h, in_w, batch]
//   kernel [in_c, kernel_h, kernel_w, batch]
//   out    [out_h, out_w, 1, batch]
// out[oy, ox, 0, c] = sum over (n, ky, kx) of input[n, iy, ix, c] *
// kernel[n, ky, kx, c], (iy, ix) as above; feature_group_count is the
// batch group count (== batch == out_c).
void __xla_cpu_conv2d_depthwise_filter_f32(const float* input, const float* kernel, float* out,
                                           int64_t batch, int64_t in_h, int64_t in_w,
                                           int64_t in_c, int64_t kernel_h, int64_t kernel_w,
                                           int64_t out_c, int64_t out_h, int64_t out_w,
                                           int64_t stride_h, int64_t stride_w, int64_t pad_h_lo,
                                           int64_t pad_w_lo, int64_t lhs_dilation_h,
                                           int64_t lhs_dilation_w, int64_t rhs_dilation_h,
                                           int64_t rhs_dilation_w, int64_t feature_group_count);
void __xla_cpu_conv2d_depthwise_filter_f64(const double* input, const double* kernel,
                                           double* out, int64_t batch, int64_t in_h,
                                           int64_t in_w, int64_t in_c, int64_t kernel_h,
                                           int64_t kernel_w, int64_t out_c, int64_t out_h,
                                           int64_t out_w, int64_t stride_h, int64_t stride_w,
                                           int64_t pad_h_lo, int64_t pad_w_lo,
                                           int64_t lhs_dilation_h, int64_t lhs_dilation_w,
                                           int64_t rhs_dilation_h, int64_t rhs_dilation_w,
                                           int64_t feature_group_count);

}  // extern "C"

#endif  // XLA_BACKENDS_CPU_RUNTIME_CPU_RUNTIME_H_
