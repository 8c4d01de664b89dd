// The CPU runtime's 2-D convolution (see cpu_runtime.h). An ISA variant
// unit: compiled once per variant (kernels.h, isa_variant.h); the C entry
// points that dispatch to a variant are in isa.cc.
#include "xla/backends/cpu/runtime/isa_variant.h"

#include <algorithm>
#include <vector>

#include "xla/backends/cpu/runtime/cpu_runtime.h"

namespace xla_cpu_runtime {
namespace XLA_CPU_ISA_NAMESPACE {
namespace {

// ---------------------------------------------------------------------------
// Convolution: im2col over blocks of output pixels, then one GEMM per feature
// group and block, blocks spread over the pool with parallel_for.

// Output pixels per im2col block: bounds the patch buffer of each thread.
constexpr int64_t kConvBlockPixels = 256;

// The input index that dilated, padded position `pos` reads, or -1 (padding,
// or a hole between dilated elements).
inline int64_t SourceIndex(int64_t pos, int64_t dilation, int64_t size) {
  if (pos < 0) return -1;
  if (dilation != 1) {
    if (pos % dilation != 0) return -1;
    pos /= dilation;
  }
  return pos < size ? pos : -1;
}

template <typename T>
struct ConvContext {
  const T* input;
  const T* kernel;
  T* out;
  ConvParams p;
};

template <typename T>
void ConvPixels(const ConvContext<T>& ctx, int64_t begin, int64_t end, std::vector<T>& patches) {
  const ConvParams& p = ctx.p;
  const int64_t cg = p.in_c / p.groups;
  const int64_t og = p.out_c / p.groups;
  const int64_t patch = p.kernel_h * p.kernel_w * cg;
  const int64_t rows = end - begin;
  patches.resize(static_cast<size_t>(rows * patch));
  using Stride = Eigen::OuterStride<>;
  for (int64_t g = 0; g < p.groups; ++g) {
    // im2col: one row per output pixel, (ky, kx, c) along the row.
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t pixel = begin + r;
      const int64_t ox = pixel % p.out_w;
      const int64_t oy = (pixel / p.out_w) % p.out_h;
      const int64_t b = pixel / (p.out_w * p.out_h);
      T* row = patches.data() + r * patch;
      for (int64_t ky = 0; ky < p.kernel_h; ++ky) {
        const int64_t iy = SourceIndex(oy * p.stride_h - p.pad_h_lo + ky * p.rhs_dilation_h,
                                       p.lhs_dilation_h, p.in_h);
        for (int64_t kx = 0; kx < p.kernel_w; ++kx) {
          T* dst = row + (ky * p.kernel_w + kx) * cg;
          const int64_t ix = iy < 0 ? -1
                                    : SourceIndex(ox * p.stride_w - p.pad_w_lo + kx * p.rhs_dilation_w,
                                                  p.lhs_dilation_w, p.in_w);
          if (ix < 0) {
            std::fill(dst, dst + cg, T(0));
          } else {
            const T* src = ctx.input + ((b * p.in_h + iy) * p.in_w + ix) * p.in_c + g * cg;
            std::copy(src, src + cg, dst);
          }
        }
      }
    }
    Eigen::Map<const RowMajorMatrix<T>> a(patches.data(), rows, patch);
    Eigen::Map<const RowMajorMatrix<T>, 0, Stride> w(ctx.kernel + g * og, patch, og,
                                                     Stride(p.out_c));
    Eigen::Map<RowMajorMatrix<T>, 0, Stride> c(ctx.out + begin * p.out_c + g * og, rows, og,
                                               Stride(p.out_c));
    c.noalias() = a * w;
  }
}

template <typename T>
void ConvBody(void* ctx_ptr, int64_t begin, int64_t end) {
  const auto& ctx = *static_cast<const ConvContext<T>*>(ctx_ptr);
  std::vector<T> patches;
  for (int64_t start = begin; start < end; start += kConvBlockPixels) {
    ConvPixels(ctx, start, std::min(end, start + kConvBlockPixels), patches);
  }
}

template <typename T>
void Conv2D(const T* input, const T* kernel, T* out, const ConvParams& p) {
  const int64_t pixels = p.batch * p.out_h * p.out_w;
  if (pixels <= 0 || p.out_c <= 0) return;
  if (p.groups <= 0 || p.in_c % p.groups != 0 || p.out_c % p.groups != 0) return;
  const int64_t patch = p.kernel_h * p.kernel_w * (p.in_c / p.groups);
  if (patch <= 0) {
    std::fill(out, out + pixels * p.out_c, T(0));
    return;
  }
  ConvContext<T> ctx{input, kernel, out, p};
  // Enough pixels per task that its GEMMs amortize the scheduling.
  const int64_t macs_per_pixel = patch * (p.out_c / p.groups) * p.groups;
  const int64_t min_chunk = std::max<int64_t>(16, kMinParallelMacs / std::max<int64_t>(1, macs_per_pixel));
  __xla_cpu_parallel_for(&ConvBody<T>, &ctx, pixels, min_chunk);
}

}  // namespace

void Conv2DF32(const float* input, const float* kernel, float* out, const ConvParams& p) {
  Conv2D(input, kernel, out, p);
}

void Conv2DF64(const double* input, const double* kernel, double* out, const ConvParams& p) {
  Conv2D(input, kernel, out, p);
}

}  // namespace XLA_CPU_ISA_NAMESPACE
}  // namespace xla_cpu_runtime
