// The CPU runtime's kernel-gradient convolution (__xla_cpu_conv2d_filter_*,
// see cpu_runtime.h): the order JAX gives a kernel gradient, computed as a
// GEMM over (feature, window) rows, or in register tiles where the result
// is a few vectors wide. An ISA variant unit (kernels.h, isa_variant.h);
// the C entry points that dispatch to a variant are in isa.cc.
#include "xla/backends/cpu/runtime/isa_variant.h"

#include <algorithm>
#include <vector>

#include "xla/backends/cpu/runtime/conv_window.h"
#include "xla/backends/cpu/runtime/cpu_runtime.h"

namespace xla_cpu_runtime {
namespace XLA_CPU_ISA_NAMESPACE {
namespace {

// The kernel-gradient order (cpu_runtime.h, __xla_cpu_conv2d_filter_*): a
// GEMM contracting over (in_c, ky, kx) rows. Row r's im2col row holds, for
// every output position (oy, ox), the input's `batch` contiguous values at
// the position tap (ky, kx) reads; the kernel's row r is contiguous already.
// out[(oy, ox, b), o] = sum_r patches[r, (oy, ox, b)] * kernel[r, o]: the
// contraction is long (a whole batch of images) and the result small, so
// the rows are split into chunks (up to four per thread, claimed as threads
// come free: one thread descheduled on a loaded machine does not hold the
// others up), each summing into its own copy of the result, added up in
// chunk order at the end (the bits do not depend on which thread ran what).
constexpr int64_t kFilterBlockRows = 512;

template <typename T>
struct FilterContext {
  const T* input;
  const T* kernel;
  T* partial;   // [chunks, out_h * out_w * batch, out_c]
  ConvParams p;
  int64_t rows, chunks;
};

template <typename T>
void FilterBody(void* ctx_ptr, int64_t begin, int64_t end) {
  const auto& ctx = *static_cast<const FilterContext<T>*>(ctx_ptr);
  const ConvParams& p = ctx.p;
  const int64_t patch = p.out_h * p.out_w * p.batch;
  std::vector<T> patches;
  for (int64_t chunk = begin; chunk < end; ++chunk) {
    Eigen::Map<RowMajorMatrix<T>> acc(ctx.partial + chunk * patch * p.out_c, patch, p.out_c);
    acc.setZero();
    const int64_t first = ctx.rows * chunk / ctx.chunks, last = ctx.rows * (chunk + 1) / ctx.chunks;
    for (int64_t start = first; start < last; start += kFilterBlockRows) {
      const int64_t n = std::min(last, start + kFilterBlockRows) - start;
      patches.resize(static_cast<size_t>(n * patch));
      GridCursor at(start, p.kernel_h, p.kernel_w);   // (c, ky, kx) of row start + r
      for (int64_t r = 0; r < n; ++r, at.Next()) {
        const int64_t c = at.b, ky = at.y, kx = at.x;
        T* dst = patches.data() + r * patch;
        for (int64_t oy = 0; oy < p.out_h; ++oy) {
          const int64_t iy = SourceIndex(oy * p.stride_h - p.pad_h_lo + ky * p.rhs_dilation_h,
                                         p.lhs_dilation_h, p.in_h);
          for (int64_t ox = 0; ox < p.out_w; ++ox, dst += p.batch) {
            const int64_t ix = iy < 0 ? -1
                                      : SourceIndex(ox * p.stride_w - p.pad_w_lo + kx * p.rhs_dilation_w,
                                                    p.lhs_dilation_w, p.in_w);
            if (ix < 0) {
              FillRun(dst, p.batch);
            } else {
              CopyRun(ctx.input + ((c * p.in_h + iy) * p.in_w + ix) * p.batch, p.batch, dst);
            }
          }
        }
      }
      // The patches [n, patch] row-major, read transposed: [patch, n] column-major.
      Eigen::Map<const ColMajorMatrix<T>> a_t(patches.data(), patch, n);
      Eigen::Map<const RowMajorMatrix<T>> w(ctx.kernel + start * p.out_c, n, p.out_c);
      SerialGemm(acc, a_t, w, /*accumulate=*/true);
    }
  }
}

// The same sums without im2col or a GEMM call, where the result is narrow
// (out_c one or two full vectors of the variant's widest f32 packet, 16
// lanes, on AVX-512; one to three of 8 lanes on AVX2): kernel gradients of
// small channel counts, where each patch element meets a few kernel
// vectors only and Eigen's product spent as long packing the patches (and
// im2col copying them) as multiplying. On AVX2 the tiles are smaller (at
// most 12 accumulators of 16 registers): [3,3,8,16] 1.46-1.54 -> 1.10-1.14
// ms there. A tile of the result (kTaps adjacent output columns x kB
// batch entries x kVecs vectors of out_c) stays in registers while the
// chunk's rows stream by: per row, the kernel row's vectors are loaded
// once, each tap's batch entries broadcast from the input where they lie.
// Every (tap, b, o) is one sum over the chunk's rows in row order, as in
// the GEMM path, which may add in another order (results within f32
// rounding of each other). On the 2-core EPYC (AVX-512), one thread, the
// kernel gradients of benchmarks/modules/cnn_train.hlo.gz: [3,3,8,16]
// 2.4-2.6 -> 0.95-1.0 ms, [3,3,16,32] 1.4-1.5 -> 1.0-1.1 ms. The loops
// over a tile are unrolled by pragma: GCC's -O2 kept the accumulators in
// memory otherwise, and the tile ran 2x slower than the GEMM path.
template <typename T, int kTaps, int kB, int kVecs>
void FilterTile(const FilterContext<T>& ctx, int64_t first, int64_t last, int64_t oy, int64_t ox0,
                int64_t b0, T* acc_out) {
  using Packet = DirectPacket<T>;
  constexpr int L = kDirectLanes<T>;
  const ConvParams& p = ctx.p;
  Packet acc[kTaps][kB][kVecs];
  #pragma GCC unroll 8
  for (int t = 0; t < kTaps; ++t)
    #pragma GCC unroll 8
    for (int b = 0; b < kB; ++b)
      #pragma GCC unroll 8
      for (int v = 0; v < kVecs; ++v) acc[t][b][v] = Eigen::internal::pset1<Packet>(T(0));
  GridCursor at(first, p.kernel_h, p.kernel_w);   // (c, ky, kx) of row r
  for (int64_t r = first; r < last; ++r, at.Next()) {
    const int64_t iy = SourceIndex(oy * p.stride_h - p.pad_h_lo + at.y * p.rhs_dilation_h,
                                   p.lhs_dilation_h, p.in_h);
    if (iy < 0) continue;
    Packet w[kVecs];
    #pragma GCC unroll 8
    for (int v = 0; v < kVecs; ++v)
      w[v] = Eigen::internal::ploadu<Packet>(ctx.kernel + r * p.out_c + v * L);
    const T* row = ctx.input + (at.b * p.in_h + iy) * p.in_w * p.batch + b0;
    #pragma GCC unroll 8
    for (int t = 0; t < kTaps; ++t) {
      const int64_t ix = SourceIndex((ox0 + t) * p.stride_w - p.pad_w_lo + at.x * p.rhs_dilation_w,
                                     p.lhs_dilation_w, p.in_w);
      if (ix < 0) continue;
      const T* x = row + ix * p.batch;
      #pragma GCC unroll 8
      for (int b = 0; b < kB; ++b) {
        const Packet xb = Eigen::internal::pset1<Packet>(x[b]);
        #pragma GCC unroll 8
        for (int v = 0; v < kVecs; ++v) acc[t][b][v] = Eigen::internal::pmadd(xb, w[v], acc[t][b][v]);
      }
    }
  }
  #pragma GCC unroll 8
  for (int t = 0; t < kTaps; ++t)
    #pragma GCC unroll 8
    for (int b = 0; b < kB; ++b)
      #pragma GCC unroll 8
      for (int v = 0; v < kVecs; ++v)
        Eigen::internal::pstoreu(acc_out + ((oy * p.out_w + ox0 + t) * p.batch + b0 + b) * p.out_c + v * L,
                                 acc[t][b][v]);
}

// Whether FilterDirect takes these parameters: f32, a batch of multiples
// of 8; on AVX-512 out_c one 16-lane vector with taps of rows a multiple
// of 3, or two vectors; on AVX2 (16 registers: tiles of at most 12
// accumulators) one to three 8-lane vectors.
template <typename T>
bool FilterDirectFits(const ConvParams& p) {
  constexpr int L = kDirectLanes<T>;
  if (!std::is_same<T, float>::value || p.batch % 8 != 0) return false;
  if (L == 16) return p.out_c == 2 * L || (p.out_c == L && p.out_w % 3 == 0);
  return L == 8 && (p.out_c == L || p.out_c == 2 * L || p.out_c == 3 * L);
}

// The tiles of one shape over the whole result (out_w a multiple of kTaps,
// batch of kB).
template <typename T, int kTaps, int kB, int kVecs>
void FilterTiles(const FilterContext<T>& ctx, int64_t first, int64_t last, T* acc) {
  const ConvParams& p = ctx.p;
  for (int64_t oy = 0; oy < p.out_h; ++oy) {
    for (int64_t b0 = 0; b0 < p.batch; b0 += kB) {
      for (int64_t ox = 0; ox < p.out_w; ox += kTaps) {
        FilterTile<T, kTaps, kB, kVecs>(ctx, first, last, oy, ox, b0, acc);
      }
    }
  }
}

template <typename T>
void FilterDirect(const FilterContext<T>& ctx, int64_t first, int64_t last, T* acc) {
  const ConvParams& p = ctx.p;
  constexpr int L = kDirectLanes<T>;
  if constexpr (L == 16) {
    if (p.out_c == L) return FilterTiles<T, 3, 8, 1>(ctx, first, last, acc);
    return FilterTiles<T, 1, 8, 2>(ctx, first, last, acc);
  } else if constexpr (L == 8) {
    const bool taps3 = p.out_w % 3 == 0;
    if (p.out_c == L) {
      return taps3 ? FilterTiles<T, 3, 4, 1>(ctx, first, last, acc)
                   : FilterTiles<T, 1, 8, 1>(ctx, first, last, acc);
    }
    if (p.out_c == 2 * L) {
      return taps3 ? FilterTiles<T, 3, 2, 2>(ctx, first, last, acc)
                   : FilterTiles<T, 1, 4, 2>(ctx, first, last, acc);
    }
    return FilterTiles<T, 1, 4, 3>(ctx, first, last, acc);
  }
}

template <typename T>
void FilterDirectBody(void* ctx_ptr, int64_t begin, int64_t end) {
  const auto& ctx = *static_cast<const FilterContext<T>*>(ctx_ptr);
  const int64_t patch = ctx.p.out_h * ctx.p.out_w * ctx.p.batch;
  for (int64_t chunk = begin; chunk < end; ++chunk) {
    FilterDirect(ctx, ctx.rows * chunk / ctx.chunks, ctx.rows * (chunk + 1) / ctx.chunks,
                 ctx.partial + chunk * patch * ctx.p.out_c);
  }
}

template <typename T>
void Conv2DFilter(const T* input, const T* kernel, T* out, const ConvParams& p) {
  const int64_t patch = p.out_h * p.out_w * p.batch;
  if (patch <= 0 || p.out_c <= 0 || p.groups != 1) return;
  const int64_t rows = p.in_c * p.kernel_h * p.kernel_w;
  if (rows <= 0) {
    std::fill(out, out + patch * p.out_c, T(0));
    return;
  }
  const int64_t macs = rows * patch * p.out_c;
  const int64_t chunks = std::max<int64_t>(
      1, std::min<int64_t>({4 * static_cast<int64_t>(ThreadsForCaller()),
                            macs / kMinParallelMacs,
                            (rows + kFilterBlockRows - 1) / kFilterBlockRows}));
  std::vector<T> partial;
  FilterContext<T> ctx{input, kernel, out, p, rows, chunks};
  if (chunks > 1) {
    partial.resize(static_cast<size_t>(chunks * patch * p.out_c));
    ctx.partial = partial.data();
  }
  __xla_cpu_parallel_for(FilterDirectFits<T>(p) ? &FilterDirectBody<T> : &FilterBody<T>, &ctx,
                         chunks, 1);
  if (chunks > 1) {
    Eigen::Map<RowMajorMatrix<T>> result(out, patch, p.out_c);
    result = Eigen::Map<const RowMajorMatrix<T>>(partial.data(), patch, p.out_c);
    for (int64_t k = 1; k < chunks; ++k) {
      result += Eigen::Map<const RowMajorMatrix<T>>(partial.data() + k * patch * p.out_c, patch,
                                                    p.out_c);
    }
  }
}

}  // namespace

void Conv2DFilterF32(const float* input, const float* kernel, float* out, const ConvParams& p) {
  Conv2DFilter(input, kernel, out, p);
}

void Conv2DFilterF64(const double* input, const double* kernel, double* out,
                     const ConvParams& p) {
  Conv2DFilter(input, kernel, out, p);
}

}  // namespace XLA_CPU_ISA_NAMESPACE
}  // namespace xla_cpu_runtime
