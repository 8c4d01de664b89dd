// The CPU runtime's depthwise convolutions (see cpu_runtime.h): layers
// with one input and one output feature per group, which conv2d
// (convolution.cc) hands here, and their kernel gradients
// (__xla_cpu_conv2d_depthwise_filter_*). An ISA variant unit (kernels.h,
// isa_variant.h): the vectors are the variant's widest.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "xla/backends/cpu/runtime/conv_window.h"
#include "xla/backends/cpu/runtime/cpu_runtime.h"

namespace xla_cpu_runtime {
namespace XLA_CPU_ISA_NAMESPACE {
namespace {

// dst[f] (= or, with kAdd, +=) the sum over taps t in order of x[t][f] *
// k[t][f], for f in [0, c): four vectors of features at a time (named
// accumulators: an array of them stayed in memory with GCC, a load and a
// store around every FMA), then single vectors, then single features.
template <typename T, bool kAdd>
void TapSums(const T* const* x, const T* const* k, size_t taps, int64_t c, T* dst) {
  using Packet = DirectPacket<T>;
  constexpr int L = kDirectLanes<T>;
  auto put = [&](int64_t f, const Packet& sum) {
    Eigen::internal::pstoreu(
        dst + f, kAdd ? Eigen::internal::padd(Eigen::internal::ploadu<Packet>(dst + f), sum) : sum);
  };
  int64_t f = 0;
  for (; f + 4 * L <= c; f += 4 * L) {
    Packet a0 = Eigen::internal::pset1<Packet>(T(0)), a1 = a0, a2 = a0, a3 = a0;
    for (size_t t = 0; t < taps; ++t) {
      const T* xf = x[t] + f;
      const T* kf = k[t] + f;
      a0 = Eigen::internal::pmadd(Eigen::internal::ploadu<Packet>(xf),
                                  Eigen::internal::ploadu<Packet>(kf), a0);
      a1 = Eigen::internal::pmadd(Eigen::internal::ploadu<Packet>(xf + L),
                                  Eigen::internal::ploadu<Packet>(kf + L), a1);
      a2 = Eigen::internal::pmadd(Eigen::internal::ploadu<Packet>(xf + 2 * L),
                                  Eigen::internal::ploadu<Packet>(kf + 2 * L), a2);
      a3 = Eigen::internal::pmadd(Eigen::internal::ploadu<Packet>(xf + 3 * L),
                                  Eigen::internal::ploadu<Packet>(kf + 3 * L), a3);
    }
    put(f, a0);
    put(f + L, a1);
    put(f + 2 * L, a2);
    put(f + 3 * L, a3);
  }
  for (; f + L <= c; f += L) {
    Packet a = Eigen::internal::pset1<Packet>(T(0));
    for (size_t t = 0; t < taps; ++t) {
      a = Eigen::internal::pmadd(Eigen::internal::ploadu<Packet>(x[t] + f),
                                 Eigen::internal::ploadu<Packet>(k[t] + f), a);
    }
    put(f, a);
  }
  for (; f < c; ++f) {
    T a = T(0);
    for (size_t t = 0; t < taps; ++t) a = std::fma(x[t][f], k[t][f], a);
    dst[f] = kAdd ? dst[f] + a : a;
  }
}

// Depthwise convolutions (one input feature per group, one output feature
// per group: feature_group_count == in_c == out_c, as MobileNet's and
// ConvNeXt's layers and JAX's depthwise input gradients are): every output
// feature is a sum over the window of one input feature times one kernel
// column, along the features that NHWC and HWIO both keep minor. The
// grouped im2col path ran one GEMM of a single column per group and
// block (8 x 56 x 56 x 128, 3x3, two threads of the 2-core EPYC: ~27 ms);
// here each output pixel's features are four vectors of accumulators at a
// time (~0.9-1.1 ms), the taps that fall in the image (padding and
// lhs-dilation holes add no term) multiplied in (ky, kx) order: the sum
// the generator's loop and the im2col GEMM's row compute, in the same
// order (each element by one thread: the bits do not depend on the thread
// count).
template <typename T>
void DepthwiseRows(void* ctx_ptr, int64_t begin, int64_t end) {
  const auto& ctx = *static_cast<const ConvContext<T>*>(ctx_ptr);
  const ConvParams& p = ctx.p;
  const int64_t c = p.in_c;
  std::vector<const T*> src(static_cast<size_t>(p.kernel_h * p.kernel_w));
  std::vector<const T*> wts(src.size());
  for (int64_t row = begin; row < end; ++row) {
    const int64_t b = row / p.out_h, oy = row % p.out_h;
    for (int64_t ox = 0; ox < p.out_w; ++ox) {
      // The taps in the image: their input pixel and kernel column.
      size_t taps = 0;
      for (int64_t ky = 0; ky < p.kernel_h; ++ky) {
        const int64_t iy = SourceIndex(oy * p.stride_h - p.pad_h_lo + ky * p.rhs_dilation_h,
                                       p.lhs_dilation_h, p.in_h);
        if (iy < 0) continue;
        for (int64_t kx = 0; kx < p.kernel_w; ++kx) {
          const int64_t ix = SourceIndex(ox * p.stride_w - p.pad_w_lo + kx * p.rhs_dilation_w,
                                         p.lhs_dilation_w, p.in_w);
          if (ix < 0) continue;
          src[taps] = ctx.input + ((b * p.in_h + iy) * p.in_w + ix) * c;
          wts[taps] = ctx.kernel + (ky * p.kernel_w + kx) * c;
          ++taps;
        }
      }
      TapSums<T, false>(src.data(), wts.data(), taps, c, ctx.out + (row * p.out_w + ox) * c);
    }
  }
}

template <typename T>
void Depthwise(const T* input, const T* kernel, T* out, const ConvParams& p) {
  const int64_t rows = p.batch * p.out_h;
  if (rows <= 0 || p.out_w <= 0 || p.in_c <= 0) return;
  ConvContext<T> ctx{input, kernel, out, p};
  const int64_t macs_per_row = std::max<int64_t>(1, p.out_w * p.in_c * p.kernel_h * p.kernel_w);
  __xla_cpu_parallel_for(&DepthwiseRows<T>, &ctx, rows,
                         std::max<int64_t>(1, kMinParallelMacs / macs_per_row));
}

// Depthwise kernel gradients (cpu_runtime.h,
// __xla_cpu_conv2d_depthwise_filter_*), in conv2d_filter's order: input
// [in_c, in_h, in_w, batch], kernel [in_c, kernel_h, kernel_w, batch],
// out [out_h, out_w, 1, batch], with out_c == batch == the batch groups:
// out[oy, ox, 0, c] = sum over (n < in_c, ky, kx) of input[n, iy, ix, c] *
// kernel[n, ky, kx, c], (iy, ix) as conv2d's. JAX's gradient of a depthwise
// layer's kernel (f01b_i01o->01bf with batch_group_count = features: the
// images are in_c, the output gradient the "kernel") ran as the
// generator's loop per output element, ~145 ms for [8, 56, 56, 128] 3x3.
// Here the images are split into chunks (a function of the shape, not of
// the thread count), each summing into its own copy of the small result:
// per (image, kernel row, output row) and output column, the columns kx
// whose input column is in the image multiply in four vectors of
// features at a time and add to the chunk's sums; the chunks' sums are
// added in chunk order at the end (the same bits at any thread count).
constexpr int64_t kMaxDepthwiseFilterChunks = 32;

template <typename T>
struct DepthwiseFilterContext {
  const T* input;
  const T* kernel;
  T* partial;   // [chunks, out_h * out_w * batch]
  ConvParams p;
  int64_t chunks;
  // Output column ox's taps: columns col_kx[t] of the kernel reading input
  // columns col_ix[t], t in [col_start[ox], col_start[ox + 1]).
  const int64_t* col_start;
  const int64_t* col_kx;
  const int64_t* col_ix;
};

template <typename T>
void DepthwiseFilterChunks(void* ctx_ptr, int64_t begin, int64_t end) {
  const auto& ctx = *static_cast<const DepthwiseFilterContext<T>*>(ctx_ptr);
  const ConvParams& p = ctx.p;
  const int64_t c = p.batch;
  const int64_t size = p.out_h * p.out_w * c;
  std::vector<const T*> src(static_cast<size_t>(p.kernel_w)), wts(src.size());
  for (int64_t chunk = begin; chunk < end; ++chunk) {
    T* sums = ctx.partial + chunk * size;
    std::fill(sums, sums + size, T(0));
    const int64_t first = p.in_c * chunk / ctx.chunks, last = p.in_c * (chunk + 1) / ctx.chunks;
    for (int64_t n = first; n < last; ++n) {
      for (int64_t ky = 0; ky < p.kernel_h; ++ky) {
        const T* krow = ctx.kernel + (n * p.kernel_h + ky) * p.kernel_w * c;
        for (int64_t oy = 0; oy < p.out_h; ++oy) {
          const int64_t iy = SourceIndex(oy * p.stride_h - p.pad_h_lo + ky * p.rhs_dilation_h,
                                         p.lhs_dilation_h, p.in_h);
          if (iy < 0) continue;
          const T* irow = ctx.input + (n * p.in_h + iy) * p.in_w * c;
          for (int64_t ox = 0; ox < p.out_w; ++ox) {
            size_t taps = 0;
            for (int64_t t = ctx.col_start[ox]; t < ctx.col_start[ox + 1]; ++t, ++taps) {
              src[taps] = irow + ctx.col_ix[t] * c;
              wts[taps] = krow + ctx.col_kx[t] * c;
            }
            TapSums<T, true>(src.data(), wts.data(), taps, c, sums + (oy * p.out_w + ox) * c);
          }
        }
      }
    }
  }
}

template <typename T>
void DepthwiseFilter(const T* input, const T* kernel, T* out, const ConvParams& p) {
  const int64_t size = p.out_h * p.out_w * p.batch;
  if (size <= 0) return;
  if (p.in_c <= 0 || p.kernel_h <= 0 || p.kernel_w <= 0) {
    std::fill(out, out + size, T(0));
    return;
  }
  std::vector<int64_t> col_start(static_cast<size_t>(p.out_w + 1), 0), col_kx, col_ix;
  for (int64_t ox = 0; ox < p.out_w; ++ox) {
    for (int64_t kx = 0; kx < p.kernel_w; ++kx) {
      const int64_t ix = SourceIndex(ox * p.stride_w - p.pad_w_lo + kx * p.rhs_dilation_w,
                                     p.lhs_dilation_w, p.in_w);
      if (ix < 0) continue;
      col_kx.push_back(kx);
      col_ix.push_back(ix);
    }
    col_start[static_cast<size_t>(ox + 1)] = static_cast<int64_t>(col_kx.size());
  }
  const int64_t chunks = std::min(p.in_c, kMaxDepthwiseFilterChunks);
  std::vector<T> partial(static_cast<size_t>(chunks * size));
  DepthwiseFilterContext<T> ctx{input, kernel, partial.data(), p, chunks,
                                col_start.data(), col_kx.data(), col_ix.data()};
  const int64_t macs_per_image = std::max<int64_t>(1, size * p.kernel_h * p.kernel_w);
  const int64_t images_per_task = std::max<int64_t>(1, kMinParallelMacs / macs_per_image);
  __xla_cpu_parallel_for(&DepthwiseFilterChunks<T>, &ctx, chunks,
                         std::max<int64_t>(1, images_per_task * chunks / p.in_c));
  std::copy(partial.begin(), partial.begin() + size, out);
  for (int64_t chunk = 1; chunk < chunks; ++chunk) {
    const T* part = partial.data() + chunk * size;
    for (int64_t i = 0; i < size; ++i) out[i] += part[i];
  }
}

}  // namespace

void Conv2DDepthwise(const float* input, const float* kernel, float* out, const ConvParams& p) {
  Depthwise(input, kernel, out, p);
}

void Conv2DDepthwise(const double* input, const double* kernel, double* out,
                     const ConvParams& p) {
  Depthwise(input, kernel, out, p);
}

void Conv2DDepthwiseFilterF32(const float* input, const float* kernel, float* out,
                              const ConvParams& p) {
  DepthwiseFilter(input, kernel, out, p);
}

void Conv2DDepthwiseFilterF64(const double* input, const double* kernel, double* out,
                              const ConvParams& p) {
  DepthwiseFilter(input, kernel, out, p);
}

}  // namespace XLA_CPU_ISA_NAMESPACE
}  // namespace xla_cpu_runtime
