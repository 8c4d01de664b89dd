// The CPU runtime's kernels per vector ISA (not part of its C ABI, see
// cpu_runtime.h), and the dispatcher that picks one set for the process.
//
// The hot kernels (matmul.cc: every matmul dtype; convolution.cc: conv2d;
// linalg.cc: Cholesky and triangular solves, whose blocked panels are
// GEMMs; spectral.cc: eigh, SVD, LU and QR) are compiled once per ISA variant, each time with its own compiler flags,
// its own C++ namespace (XLA_CPU_ISA_NAMESPACE) and its own copy of Eigen
// (the namespace `Eigen` is renamed by a macro, xla_eigen_<isa>), so that no
// inline or template function compiled for a wider ISA can be shared with
// code compiled for a narrower one (see runtime/BUILD, isa.bzl):
//
//   baseline  the target's default ISA (x86-64: SSE2; runs on any CPU)
//   avx2      AVX2 + FMA                        (x86-64 only)
//   avx512    AVX-512 F, BW, DQ, VL + AVX2/FMA  (x86-64 only)
//   avx512_vnni       avx512 + AVX512_VNNI (x86-64 only)
//   avx512_vnni_bf16  avx512 + AVX512_VNNI + AVX512_BF16 (x86-64 only)
//   amx       avx512_vnni_bf16 + AMX-TILE, AMX-INT8, AMX-BF16 (x86-64 only;
//             the OS must grant the process the tile state)
//             avx512's kernels but the low-precision matmuls
//             (matmul_lowp.cc), s8 on VPDPBUSD (all three) and bf16 on
//             VDPBF16PS (the last two), both on AMX tiles (amx); the other
//             variants compute those by widening to f32/f64/s32
//
// Everything else in the extension is compiled for the baseline. The
// dispatcher (isa.cc) picks, once per process, the widest variant the
// running CPU supports (__builtin_cpu_supports, which also checks that the
// OS saves the wider registers), or the one XLA_CPU_RUNTIME_ISA names
// (baseline, avx2, avx512, avx512_vnni, avx512_vnni_bf16 or amx: for testing and
// comparisons; a name that is unknown, not built, or not supported by this
// CPU is an error, never a fallback). This header has no Eigen: variant
// units and the rest of the runtime see each other only through it.
#ifndef XLA_BACKENDS_CPU_RUNTIME_KERNELS_H_
#define XLA_BACKENDS_CPU_RUNTIME_KERNELS_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace xla_cpu_runtime {

// Below this many multiply-adds, threads cost more than they save.
constexpr int64_t kMinParallelMacs = int64_t{64} * 64 * 64;

// One conv2d call's parameters, as __xla_cpu_conv2d_* documents them.
struct ConvParams {
  int64_t batch, in_h, in_w, in_c, kernel_h, kernel_w, out_c, out_h, out_w;
  int64_t stride_h, stride_w, pad_h_lo, pad_w_lo;
  int64_t lhs_dilation_h, lhs_dilation_w, rhs_dilation_h, rhs_dilation_w;
  int64_t groups;
};

// The process-wide pool as variant units use it (pool.cc): they have their
// own Eigen, whose ThreadPool type is not pool.cc's.
//
// The number of threads a parallel region started by the caller may use:
// 1 when there is no pool or the caller is one of its workers (nested
// parallelism runs serially), else the pool's thread count.
int ThreadsForCaller();
// Runs fn on a pool worker (only when ThreadsForCaller() > 1).
void PoolSchedule(std::function<void()> fn);
// The pool's thread count, and the calling worker's index (-1: not a worker).
int PoolNumThreads();
int PoolCurrentThreadId();

// Signatures of the variant kernels: the C ABI's (cpu_runtime.h), with
// bools for the transposes and ConvParams for conv2d; the linear algebra's
// are the C ABI's.
#define XLA_CPU_DECLARE_ISA_KERNELS(ns)                                                       \
  namespace ns {                                                                              \
  void MatmulF32(const float* lhs, const float* rhs, float* out, int64_t batch, int64_t m,   \
                 int64_t k, int64_t n, bool transpose_lhs, bool transpose_rhs);               \
  void MatmulAddendF32(const float* lhs, const float* rhs, float* out, int64_t batch,        \
                       int64_t m, int64_t k, int64_t n, bool transpose_lhs, bool transpose_rhs, \
                       const float* addend, float alpha);                                       \
  void MatmulF64(const double* lhs, const double* rhs, double* out, int64_t batch, int64_t m, \
                 int64_t k, int64_t n, bool transpose_lhs, bool transpose_rhs);               \
  void MatmulS32(const int32_t* lhs, const int32_t* rhs, int32_t* out, int64_t batch,       \
                 int64_t m, int64_t k, int64_t n, bool transpose_lhs, bool transpose_rhs);    \
  void MatmulC64(const void* lhs, const void* rhs, void* out, int64_t batch, int64_t m,      \
                 int64_t k, int64_t n, bool transpose_lhs, bool transpose_rhs);               \
  void MatmulC128(const void* lhs, const void* rhs, void* out, int64_t batch, int64_t m,     \
                  int64_t k, int64_t n, bool transpose_lhs, bool transpose_rhs);              \
  void Conv2DF32(const float* input, const float* kernel, float* out, const ConvParams& p);  \
  void Conv2DF64(const double* input, const double* kernel, double* out,                     \
                 const ConvParams& p);                                                        \
  void Conv2DFilterF32(const float* input, const float* kernel, float* out,                  \
                       const ConvParams& p);                                                  \
  void Conv2DFilterF64(const double* input, const double* kernel, double* out,               \
                       const ConvParams& p);                                                  \
  void Conv2DDepthwiseFilterF32(const float* input, const float* kernel, float* out,         \
                                const ConvParams& p);                                         \
  void Conv2DDepthwiseFilterF64(const double* input, const double* kernel, double* out,      \
                                const ConvParams& p);                                         \
  void CholeskyF32(const float* a, float* out, int32_t* info, int64_t batch, int64_t n,       \
                   int32_t lower, int32_t potrf);                                             \
  void CholeskyF64(const double* a, double* out, int32_t* info, int64_t batch, int64_t n,     \
                   int32_t lower, int32_t potrf);                                             \
  void CholeskyC64(const void* a, void* out, int32_t* info, int64_t batch, int64_t n,         \
                   int32_t lower, int32_t potrf);                                             \
  void CholeskyC128(const void* a, void* out, int32_t* info, int64_t batch, int64_t n,        \
                    int32_t lower, int32_t potrf);                                            \
  void TrsmF32(const float* a, const float* b, float* out, const float* alpha, int64_t batch, \
               int64_t m, int64_t n, int32_t flags);                                          \
  void TrsmF64(const double* a, const double* b, double* out, const double* alpha,            \
               int64_t batch, int64_t m, int64_t n, int32_t flags);                           \
  void TrsmC64(const void* a, const void* b, void* out, const void* alpha, int64_t batch,     \
               int64_t m, int64_t n, int32_t flags);                                          \
  void TrsmC128(const void* a, const void* b, void* out, const void* alpha, int64_t batch,    \
                int64_t m, int64_t n, int32_t flags);                                         \
  void SyevdF32(const float* a, float* v, float* w, int32_t* info, int64_t batch, int64_t n,  \
                int32_t flags);                                                               \
  void SyevdF64(const double* a, double* v, double* w, int32_t* info, int64_t batch,          \
                int64_t n, int32_t flags);                                                    \
  void GesddF32(const float* a, float* s, float* u, float* vt, int32_t* info, int64_t batch,  \
                int64_t m, int64_t n, int32_t flags);                                         \
  void GesddF64(const double* a, double* s, double* u, double* vt, int32_t* info,             \
                int64_t batch, int64_t m, int64_t n, int32_t flags);                          \
  void GetrfF32(const float* a, float* lu, int32_t* ipiv, int32_t* info, int64_t batch,     \
                int64_t m, int64_t n, int32_t flags);                                         \
  void GetrfF64(const double* a, double* lu, int32_t* ipiv, int32_t* info, int64_t batch,   \
                int64_t m, int64_t n, int32_t flags);                                         \
  void GeqrfF32(const float* a, float* out, float* tau, int64_t batch, int64_t m, int64_t n, \
                int32_t flags);                                                               \
  void GeqrfF64(const double* a, double* out, double* tau, int64_t batch, int64_t m,         \
                int64_t n, int32_t flags);                                                    \
  void OrgqrF32(const float* a, const float* tau, float* out, int64_t batch, int64_t m,      \
                int64_t n, int64_t k, int32_t flags);                                         \
  void OrgqrF64(const double* a, const double* tau, double* out, int64_t batch, int64_t m,   \
                int64_t n, int64_t k, int32_t flags);                                         \
  void TiledGemmF32(const float* a, const float* b, float* c, const int64_t* walk,            \
                    int64_t min_chunk);                                                       \
  void TiledGemmF64(const double* a, const double* b, double* c, const int64_t* walk,         \
                    int64_t min_chunk);                                                       \
  void FftF32(const void* in, void* out, int64_t batch, int32_t rank, const int64_t* lengths, \
              int32_t kind);                                                                  \
  void FftF64(const void* in, void* out, int64_t batch, int32_t rank, const int64_t* lengths, \
              int32_t kind);                                                                  \
  }

// The low-precision matmuls (matmul_lowp.cc): bf16 operands are bits.
#define XLA_CPU_DECLARE_DOT_KERNELS(ns)                                                        \
  namespace ns {                                                                               \
  void MatmulS8S32(const int8_t* lhs, const int8_t* rhs, int32_t* out, int64_t batch,         \
                   int64_t m, int64_t k, int64_t n, bool transpose_lhs, bool transpose_rhs);  \
  void MatmulBf16F32(const void* lhs, const void* rhs, float* out, int64_t batch, int64_t m,  \
                     int64_t k, int64_t n, bool transpose_lhs, bool transpose_rhs);           \
  }

XLA_CPU_DECLARE_ISA_KERNELS(isa_baseline)
XLA_CPU_DECLARE_DOT_KERNELS(isa_baseline)
#if defined(__x86_64__)
XLA_CPU_DECLARE_ISA_KERNELS(isa_avx2)
XLA_CPU_DECLARE_DOT_KERNELS(isa_avx2)
XLA_CPU_DECLARE_ISA_KERNELS(isa_avx512)
XLA_CPU_DECLARE_DOT_KERNELS(isa_avx512)
XLA_CPU_DECLARE_DOT_KERNELS(isa_avx512_vnni)
XLA_CPU_DECLARE_DOT_KERNELS(isa_avx512_vnni_bf16)
XLA_CPU_DECLARE_DOT_KERNELS(isa_amx)
#endif

// One ISA variant's kernels.
struct IsaKernels {
  const char* name;  // "baseline", "avx2", "avx512", "avx512_vnni", "avx512_vnni_bf16", "amx"
  decltype(&isa_baseline::MatmulF32) matmul_f32;
  decltype(&isa_baseline::MatmulAddendF32) matmul_addend_f32;
  decltype(&isa_baseline::MatmulF64) matmul_f64;
  decltype(&isa_baseline::MatmulS32) matmul_s32;
  decltype(&isa_baseline::MatmulC64) matmul_c64;
  decltype(&isa_baseline::MatmulC128) matmul_c128;
  decltype(&isa_baseline::MatmulS8S32) matmul_s8_s32;
  decltype(&isa_baseline::MatmulBf16F32) matmul_bf16_f32;
  decltype(&isa_baseline::Conv2DF32) conv2d_f32;
  decltype(&isa_baseline::Conv2DF64) conv2d_f64;
  decltype(&isa_baseline::Conv2DFilterF32) conv2d_filter_f32;
  decltype(&isa_baseline::Conv2DFilterF64) conv2d_filter_f64;
  decltype(&isa_baseline::Conv2DDepthwiseFilterF32) conv2d_depthwise_filter_f32;
  decltype(&isa_baseline::Conv2DDepthwiseFilterF64) conv2d_depthwise_filter_f64;
  decltype(&isa_baseline::CholeskyF32) cholesky_f32;
  decltype(&isa_baseline::CholeskyF64) cholesky_f64;
  decltype(&isa_baseline::CholeskyC64) cholesky_c64;
  decltype(&isa_baseline::CholeskyC128) cholesky_c128;
  decltype(&isa_baseline::TrsmF32) trsm_f32;
  decltype(&isa_baseline::TrsmF64) trsm_f64;
  decltype(&isa_baseline::TrsmC64) trsm_c64;
  decltype(&isa_baseline::TrsmC128) trsm_c128;
  decltype(&isa_baseline::SyevdF32) syevd_f32;
  decltype(&isa_baseline::SyevdF64) syevd_f64;
  decltype(&isa_baseline::GesddF32) gesdd_f32;
  decltype(&isa_baseline::GesddF64) gesdd_f64;
  decltype(&isa_baseline::GetrfF32) getrf_f32;
  decltype(&isa_baseline::GetrfF64) getrf_f64;
  decltype(&isa_baseline::GeqrfF32) geqrf_f32;
  decltype(&isa_baseline::GeqrfF64) geqrf_f64;
  decltype(&isa_baseline::OrgqrF32) orgqr_f32;
  decltype(&isa_baseline::OrgqrF64) orgqr_f64;
  decltype(&isa_baseline::TiledGemmF32) tiled_gemm_f32;
  decltype(&isa_baseline::TiledGemmF64) tiled_gemm_f64;
  decltype(&isa_baseline::FftF32) fft_f32;
  decltype(&isa_baseline::FftF64) fft_f64;
};

// Every variant this build has, narrowest first.
const std::vector<const IsaKernels*>& AllIsaKernels();

// The CPU features `variant` needs that the running CPU lacks (empty: it
// can run it).
std::vector<std::string> MissingCpuFeatures(const IsaKernels& variant);

// The variant for XLA_CPU_RUNTIME_ISA = `requested` (null or empty: the
// widest this CPU runs), or null with *error saying why there is none.
const IsaKernels* ChooseIsaKernels(const char* requested, std::string* error);

// The process's variant, chosen on first use from XLA_CPU_RUNTIME_ISA as
// above; null with *error (may be null) set when that names no usable one.
const IsaKernels* ProcessIsaKernels(std::string* error);

}  // namespace xla_cpu_runtime

#endif  // XLA_BACKENDS_CPU_RUNTIME_KERNELS_H_
