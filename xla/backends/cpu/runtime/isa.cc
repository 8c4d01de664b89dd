// The dispatcher between the ISA variants of the runtime's kernels (see
// kernels.h), and the C entry points of those kernels (cpu_runtime.h:
// matmul, conv2d, Cholesky, triangular solve, eigh, SVD, LU, QR).
// Compiled for the baseline ISA like everything outside the variant units.
#include <cstdio>
#include <cstdlib>
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif
#include <cstring>
#include <string>
#include <vector>

#include "xla/backends/cpu/runtime/cpu_runtime.h"
#include "xla/backends/cpu/runtime/kernels.h"

namespace xla_cpu_runtime {
namespace {

// `dot`: the namespace of the low-precision matmuls (matmul_lowp.cc).
#define XLA_CPU_ISA_KERNELS(ns, dot, name)                                                     \
  IsaKernels {                                                                                 \
    name, &ns::MatmulF32, &ns::MatmulAddendF32, &ns::MatmulF64, &ns::MatmulS32, &ns::MatmulC64, &ns::MatmulC128,     \
        &dot::MatmulS8S32, &dot::MatmulBf16F32, &ns::Conv2DF32, &ns::Conv2DF64,                \
        &ns::Conv2DFilterF32, &ns::Conv2DFilterF64, &ns::Conv2DDepthwiseFilterF32,             \
        &ns::Conv2DDepthwiseFilterF64, &ns::CholeskyF32, &ns::CholeskyF64,                     \
        &ns::CholeskyC64, &ns::CholeskyC128, &ns::TrsmF32, &ns::TrsmF64, &ns::TrsmC64,         \
        &ns::TrsmC128, &ns::SyevdF32, &ns::SyevdF64, &ns::GesddF32, &ns::GesddF64,             \
        &ns::GetrfF32, &ns::GetrfF64, &ns::GeqrfF32, &ns::GeqrfF64, &ns::OrgqrF32,             \
        &ns::OrgqrF64, &ns::TiledGemmF32, &ns::TiledGemmF64, &ns::FftF32, &ns::FftF64          \
  }

const IsaKernels kBaseline = XLA_CPU_ISA_KERNELS(isa_baseline, isa_baseline, "baseline");
#if defined(__x86_64__)
const IsaKernels kAvx2 = XLA_CPU_ISA_KERNELS(isa_avx2, isa_avx2, "avx2");
const IsaKernels kAvx512 = XLA_CPU_ISA_KERNELS(isa_avx512, isa_avx512, "avx512");
const IsaKernels kAvx512Vnni = XLA_CPU_ISA_KERNELS(isa_avx512, isa_avx512_vnni, "avx512_vnni");
const IsaKernels kAvx512VnniBf16 =
    XLA_CPU_ISA_KERNELS(isa_avx512, isa_avx512_vnni_bf16, "avx512_vnni_bf16");
const IsaKernels kAmx = XLA_CPU_ISA_KERNELS(isa_avx512, isa_amx, "amx");
#endif
#undef XLA_CPU_ISA_KERNELS

const char kEnvVar[] = "XLA_CPU_RUNTIME_ISA";

}  // namespace

const std::vector<const IsaKernels*>& AllIsaKernels() {
#if defined(__x86_64__)
  static const std::vector<const IsaKernels*> all = {
      &kBaseline, &kAvx2, &kAvx512, &kAvx512Vnni, &kAvx512VnniBf16, &kAmx};
#else
  static const std::vector<const IsaKernels*> all = {&kBaseline};
#endif
  return all;
}

#if defined(__x86_64__)
namespace {
// Linux (5.16 and later) gives a process the AMX tile state only when it
// asks (arch_prctl ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA); until then
// a tile instruction faults. Asked once; the grant is the whole process's.
bool AmxPermitted() {
#if defined(__linux__)
  static const bool permitted = [] {
    constexpr long kArchReqXcompPerm = 0x1023;
    constexpr long kXfeatureXtiledata = 18;
    return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
  }();
  return permitted;
#else
  return false;
#endif
}
}  // namespace
#endif

std::vector<std::string> MissingCpuFeatures(const IsaKernels& variant) {
  std::vector<std::string> missing;
#if defined(__x86_64__)
  __builtin_cpu_init();
  auto need = [&missing](bool has, const char* feature) {
    if (!has) missing.push_back(feature);
  };
  // The same flags the variant is compiled with (isa.bzl).
  const bool amx = &variant == &kAmx;
  const bool bf16 = &variant == &kAvx512VnniBf16 || amx;
  const bool vnni = &variant == &kAvx512Vnni || bf16;
  const bool avx512 = &variant == &kAvx512 || vnni;
  if (&variant == &kAvx2 || avx512) {
    need(__builtin_cpu_supports("avx2"), "avx2");
    need(__builtin_cpu_supports("fma"), "fma");
  }
  if (avx512) {
    need(__builtin_cpu_supports("avx512f"), "avx512f");
    need(__builtin_cpu_supports("avx512bw"), "avx512bw");
    need(__builtin_cpu_supports("avx512dq"), "avx512dq");
    need(__builtin_cpu_supports("avx512vl"), "avx512vl");
  }
  if (vnni) need(__builtin_cpu_supports("avx512vnni"), "avx512vnni");
  if (bf16) need(__builtin_cpu_supports("avx512bf16"), "avx512bf16");
  if (amx) {
    need(__builtin_cpu_supports("amx-tile"), "amx-tile");
    need(__builtin_cpu_supports("amx-int8"), "amx-int8");
    need(__builtin_cpu_supports("amx-bf16"), "amx-bf16");
    if (missing.empty()) need(AmxPermitted(), "the OS's permission for AMX tile data");
  }
#else
  (void)variant;
#endif
  return missing;
}

const IsaKernels* ChooseIsaKernels(const char* requested, std::string* error) {
  const auto& all = AllIsaKernels();
  if (requested == nullptr || requested[0] == '\0') {
    for (auto it = all.rbegin(); it != all.rend(); ++it) {
      if (MissingCpuFeatures(**it).empty()) return *it;
    }
    return &kBaseline;  // the baseline needs nothing
  }
  std::string names;
  for (const IsaKernels* variant : all) {
    if (!names.empty()) names += ", ";
    names += variant->name;
    if (std::strcmp(requested, variant->name) != 0) continue;
    const std::vector<std::string> missing = MissingCpuFeatures(*variant);
    if (missing.empty()) return variant;
    std::string list;
    for (const std::string& feature : missing) list += (list.empty() ? "" : ", ") + feature;
    if (error != nullptr) {
      *error = std::string(kEnvVar) + "=" + requested + ": this CPU lacks " + list +
               " (the variants it runs are the narrower ones)";
    }
    return nullptr;
  }
  if (error != nullptr) {
    *error = std::string(kEnvVar) + "=" + requested + " is not a CPU runtime ISA variant" +
             " of this build; expected one of: " + names;
  }
  return nullptr;
}

const IsaKernels* ProcessIsaKernels(std::string* error) {
  struct Choice {
    const IsaKernels* kernels;
    std::string error;
  };
  static const Choice choice = [] {
    Choice c;
    c.kernels = ChooseIsaKernels(std::getenv(kEnvVar), &c.error);
    return c;
  }();
  if (choice.kernels == nullptr && error != nullptr) *error = choice.error;
  return choice.kernels;
}

namespace {

// The process's variant for a kernel call. The C entry points cannot
// return an error: a bad XLA_CPU_RUNTIME_ISA ends the process with its
// message (Python reports it as a ValueError before any kernel runs: the
// CPU platform asks __xla_cpu_runtime_isa first).
const IsaKernels& Kernels() {
  std::string error;
  const IsaKernels* kernels = ProcessIsaKernels(&error);
  if (kernels == nullptr) {
    std::fprintf(stderr, "xla cpu runtime: %s\n", error.c_str());
    std::abort();
  }
  return *kernels;
}

}  // namespace
}  // namespace xla_cpu_runtime

using xla_cpu_runtime::ConvParams;
using xla_cpu_runtime::Kernels;

extern "C" {

const char* __xla_cpu_runtime_isa(const char** error) {
  static std::string message;  // written once: the choice is made once
  const xla_cpu_runtime::IsaKernels* kernels = xla_cpu_runtime::ProcessIsaKernels(&message);
  if (error != nullptr) *error = kernels == nullptr ? message.c_str() : nullptr;
  return kernels == nullptr ? nullptr : kernels->name;
}

void __xla_cpu_matmul_f32(const float* lhs, const float* rhs, float* out, int64_t batch,
                          int64_t m, int64_t k, int64_t n, int32_t transpose_lhs,
                          int32_t transpose_rhs) {
  Kernels().matmul_f32(lhs, rhs, out, batch, m, k, n, transpose_lhs != 0, transpose_rhs != 0);
}

void __xla_cpu_matmul_addend_f32(const float* lhs, const float* rhs, float* out, int64_t batch,
                                 int64_t m, int64_t k, int64_t n, int32_t transpose_lhs,
                                 int32_t transpose_rhs, const float* addend, float alpha) {
  Kernels().matmul_addend_f32(lhs, rhs, out, batch, m, k, n, transpose_lhs != 0,
                              transpose_rhs != 0, addend, alpha);
}

void __xla_cpu_tiled_gemm_f32(const float* a, const float* b, float* c, const int64_t* walk,
                              int64_t min_chunk) {
  Kernels().tiled_gemm_f32(a, b, c, walk, min_chunk);
}

void __xla_cpu_tiled_gemm_f64(const double* a, const double* b, double* c, const int64_t* walk,
                              int64_t min_chunk) {
  Kernels().tiled_gemm_f64(a, b, c, walk, min_chunk);
}

void __xla_cpu_matmul_f64(const double* lhs, const double* rhs, double* out, int64_t batch,
                          int64_t m, int64_t k, int64_t n, int32_t transpose_lhs,
                          int32_t transpose_rhs) {
  Kernels().matmul_f64(lhs, rhs, out, batch, m, k, n, transpose_lhs != 0, transpose_rhs != 0);
}

void __xla_cpu_matmul_s32(const int32_t* lhs, const int32_t* rhs, int32_t* out, int64_t batch,
                          int64_t m, int64_t k, int64_t n, int32_t transpose_lhs,
                          int32_t transpose_rhs) {
  Kernels().matmul_s32(lhs, rhs, out, batch, m, k, n, transpose_lhs != 0, transpose_rhs != 0);
}

void __xla_cpu_matmul_s8_s32(const int8_t* lhs, const int8_t* rhs, int32_t* out, int64_t batch,
                             int64_t m, int64_t k, int64_t n, int32_t transpose_lhs,
                             int32_t transpose_rhs) {
  Kernels().matmul_s8_s32(lhs, rhs, out, batch, m, k, n, transpose_lhs != 0, transpose_rhs != 0);
}

void __xla_cpu_matmul_bf16_f32(const void* lhs, const void* rhs, float* out, int64_t batch,
                               int64_t m, int64_t k, int64_t n, int32_t transpose_lhs,
                               int32_t transpose_rhs) {
  Kernels().matmul_bf16_f32(lhs, rhs, out, batch, m, k, n, transpose_lhs != 0,
                            transpose_rhs != 0);
}

void __xla_cpu_matmul_c64(const void* lhs, const void* rhs, void* out, int64_t batch, int64_t m,
                          int64_t k, int64_t n, int32_t transpose_lhs, int32_t transpose_rhs) {
  Kernels().matmul_c64(lhs, rhs, out, batch, m, k, n, transpose_lhs != 0, transpose_rhs != 0);
}

void __xla_cpu_matmul_c128(const void* lhs, const void* rhs, void* out, int64_t batch,
                           int64_t m, int64_t k, int64_t n, int32_t transpose_lhs,
                           int32_t transpose_rhs) {
  Kernels().matmul_c128(lhs, rhs, out, batch, m, k, n, transpose_lhs != 0, transpose_rhs != 0);
}

void __xla_cpu_conv2d_f32(const float* input, const float* kernel, float* out, int64_t batch,
                          int64_t in_h, int64_t in_w, int64_t in_c, int64_t kernel_h,
                          int64_t kernel_w, int64_t out_c, int64_t out_h, int64_t out_w,
                          int64_t stride_h, int64_t stride_w, int64_t pad_h_lo,
                          int64_t pad_w_lo, int64_t lhs_dilation_h, int64_t lhs_dilation_w,
                          int64_t rhs_dilation_h, int64_t rhs_dilation_w,
                          int64_t feature_group_count) {
  Kernels().conv2d_f32(input, kernel, out,
                       ConvParams{batch, in_h, in_w, in_c, kernel_h, kernel_w, out_c, out_h,
                                  out_w, stride_h, stride_w, pad_h_lo, pad_w_lo, lhs_dilation_h,
                                  lhs_dilation_w, rhs_dilation_h, rhs_dilation_w,
                                  feature_group_count});
}

void __xla_cpu_conv2d_f64(const double* input, const double* kernel, double* out,
                          int64_t batch, int64_t in_h, int64_t in_w, int64_t in_c,
                          int64_t kernel_h, int64_t kernel_w, int64_t out_c, int64_t out_h,
                          int64_t out_w, int64_t stride_h, int64_t stride_w, int64_t pad_h_lo,
                          int64_t pad_w_lo, int64_t lhs_dilation_h, int64_t lhs_dilation_w,
                          int64_t rhs_dilation_h, int64_t rhs_dilation_w,
                          int64_t feature_group_count) {
  Kernels().conv2d_f64(input, kernel, out,
                       ConvParams{batch, in_h, in_w, in_c, kernel_h, kernel_w, out_c, out_h,
                                  out_w, stride_h, stride_w, pad_h_lo, pad_w_lo, lhs_dilation_h,
                                  lhs_dilation_w, rhs_dilation_h, rhs_dilation_w,
                                  feature_group_count});
}

#define XLA_CPU_CONV2D_FILTER(name, T, kernel)                                                \
  void name(const T* input, const T* kernel_, T* out, int64_t batch, int64_t in_h, int64_t in_w, \
            int64_t in_c, int64_t kernel_h, int64_t kernel_w, int64_t out_c, int64_t out_h,     \
            int64_t out_w, int64_t stride_h, int64_t stride_w, int64_t pad_h_lo,                \
            int64_t pad_w_lo, int64_t lhs_dilation_h, int64_t lhs_dilation_w,                   \
            int64_t rhs_dilation_h, int64_t rhs_dilation_w, int64_t feature_group_count) {      \
    Kernels().kernel(input, kernel_, out,                                                       \
                     ConvParams{batch, in_h, in_w, in_c, kernel_h, kernel_w, out_c, out_h,      \
                                out_w, stride_h, stride_w, pad_h_lo, pad_w_lo, lhs_dilation_h,  \
                                lhs_dilation_w, rhs_dilation_h, rhs_dilation_w,                 \
                                feature_group_count});                                          \
  }
XLA_CPU_CONV2D_FILTER(__xla_cpu_conv2d_filter_f32, float, conv2d_filter_f32)
XLA_CPU_CONV2D_FILTER(__xla_cpu_conv2d_filter_f64, double, conv2d_filter_f64)
XLA_CPU_CONV2D_FILTER(__xla_cpu_conv2d_depthwise_filter_f32, float, conv2d_depthwise_filter_f32)
XLA_CPU_CONV2D_FILTER(__xla_cpu_conv2d_depthwise_filter_f64, double, conv2d_depthwise_filter_f64)
#undef XLA_CPU_CONV2D_FILTER

void __xla_cpu_cholesky_f32(const float* a, float* out, int32_t* info, int64_t batch, int64_t n,
                            int32_t lower, int32_t potrf) {
  Kernels().cholesky_f32(a, out, info, batch, n, lower, potrf);
}

void __xla_cpu_cholesky_f64(const double* a, double* out, int32_t* info, int64_t batch,
                            int64_t n, int32_t lower, int32_t potrf) {
  Kernels().cholesky_f64(a, out, info, batch, n, lower, potrf);
}

void __xla_cpu_cholesky_c64(const void* a, void* out, int32_t* info, int64_t batch, int64_t n,
                            int32_t lower, int32_t potrf) {
  Kernels().cholesky_c64(a, out, info, batch, n, lower, potrf);
}

void __xla_cpu_cholesky_c128(const void* a, void* out, int32_t* info, int64_t batch, int64_t n,
                             int32_t lower, int32_t potrf) {
  Kernels().cholesky_c128(a, out, info, batch, n, lower, potrf);
}

void __xla_cpu_trsm_f32(const float* a, const float* b, float* out, const float* alpha,
                        int64_t batch, int64_t m, int64_t n, int32_t flags) {
  Kernels().trsm_f32(a, b, out, alpha, batch, m, n, flags);
}

void __xla_cpu_trsm_f64(const double* a, const double* b, double* out, const double* alpha,
                        int64_t batch, int64_t m, int64_t n, int32_t flags) {
  Kernels().trsm_f64(a, b, out, alpha, batch, m, n, flags);
}

void __xla_cpu_trsm_c64(const void* a, const void* b, void* out, const void* alpha,
                        int64_t batch, int64_t m, int64_t n, int32_t flags) {
  Kernels().trsm_c64(a, b, out, alpha, batch, m, n, flags);
}

void __xla_cpu_trsm_c128(const void* a, const void* b, void* out, const void* alpha,
                         int64_t batch, int64_t m, int64_t n, int32_t flags) {
  Kernels().trsm_c128(a, b, out, alpha, batch, m, n, flags);
}

void __xla_cpu_syevd_f32(const float* a, float* v, float* w, int32_t* info, int64_t batch,
                         int64_t n, int32_t flags) {
  Kernels().syevd_f32(a, v, w, info, batch, n, flags);
}

void __xla_cpu_syevd_f64(const double* a, double* v, double* w, int32_t* info, int64_t batch,
                         int64_t n, int32_t flags) {
  Kernels().syevd_f64(a, v, w, info, batch, n, flags);
}

void __xla_cpu_gesdd_f32(const float* a, float* s, float* u, float* vt, int32_t* info,
                         int64_t batch, int64_t m, int64_t n, int32_t flags) {
  Kernels().gesdd_f32(a, s, u, vt, info, batch, m, n, flags);
}

void __xla_cpu_gesdd_f64(const double* a, double* s, double* u, double* vt, int32_t* info,
                         int64_t batch, int64_t m, int64_t n, int32_t flags) {
  Kernels().gesdd_f64(a, s, u, vt, info, batch, m, n, flags);
}

void __xla_cpu_getrf_f32(const float* a, float* lu, int32_t* ipiv, int32_t* info,
                         int64_t batch, int64_t m, int64_t n, int32_t flags) {
  Kernels().getrf_f32(a, lu, ipiv, info, batch, m, n, flags);
}

void __xla_cpu_getrf_f64(const double* a, double* lu, int32_t* ipiv, int32_t* info,
                         int64_t batch, int64_t m, int64_t n, int32_t flags) {
  Kernels().getrf_f64(a, lu, ipiv, info, batch, m, n, flags);
}

void __xla_cpu_geqrf_f32(const float* a, float* out, float* tau, int64_t batch, int64_t m,
                         int64_t n, int32_t flags) {
  Kernels().geqrf_f32(a, out, tau, batch, m, n, flags);
}

void __xla_cpu_geqrf_f64(const double* a, double* out, double* tau, int64_t batch, int64_t m,
                         int64_t n, int32_t flags) {
  Kernels().geqrf_f64(a, out, tau, batch, m, n, flags);
}

void __xla_cpu_orgqr_f32(const float* a, const float* tau, float* out, int64_t batch, int64_t m,
                         int64_t n, int64_t k, int32_t flags) {
  Kernels().orgqr_f32(a, tau, out, batch, m, n, k, flags);
}

void __xla_cpu_orgqr_f64(const double* a, const double* tau, double* out, int64_t batch,
                         int64_t m, int64_t n, int64_t k, int32_t flags) {
  Kernels().orgqr_f64(a, tau, out, batch, m, n, k, flags);
}

void __xla_cpu_fft_f32(const void* in, void* out, int64_t batch, int32_t rank,
                       const int64_t* lengths, int32_t kind) {
  Kernels().fft_f32(in, out, batch, rank, lengths, kind);
}

void __xla_cpu_fft_f64(const void* in, void* out, int64_t batch, int32_t rank,
                       const int64_t* lengths, int32_t kind) {
  Kernels().fft_f64(in, out, batch, rank, lengths, kind);
}

}  // extern "C"
