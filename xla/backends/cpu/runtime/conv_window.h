// What the convolution units of an ISA variant (convolution.cc,
// convolution_filter.cc, convolution_depthwise.cc) share: where a window
// tap reads, a grid cursor and im2col's copies, the variant's widest
// vector of T, and the depthwise entry points convolution.cc's conv2d
// hands its depthwise layers to. Included only by variant units.
#ifndef XLA_BACKENDS_CPU_RUNTIME_CONV_WINDOW_H_
#define XLA_BACKENDS_CPU_RUNTIME_CONV_WINDOW_H_

#include <cstdint>
#include <cstring>

#include "xla/backends/cpu/runtime/isa_variant.h"

namespace xla_cpu_runtime {
namespace XLA_CPU_ISA_NAMESPACE {

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

// (b, y, x) of consecutive indices of a [batch, h, w] grid, stepped
// without the divisions that recomputing them per index costs.
struct GridCursor {
  int64_t h, w, b, y, x;
  GridCursor(int64_t index, int64_t h_, int64_t w_)
      : h(h_), w(w_), b(index / (h_ * w_)), y((index / w_) % h_), x(index % w_) {}
  void Next() {
    if (++x == w) {
      x = 0;
      if (++y == h) {
        y = 0;
        ++b;
      }
    }
  }
};

// im2col's copies: runs of a few features (8 f32 per tap in a first
// layer), too short for a memmove call to pay; fixed 32-byte pieces
// compile to vector moves.
template <typename T>
inline void CopyRun(const T* src, int64_t n, T* dst) {
  constexpr int64_t kStep = 32 / sizeof(T);
  int64_t i = 0;
  for (; i + kStep <= n; i += kStep) std::memcpy(dst + i, src + i, 32);
  for (; i < n; ++i) dst[i] = src[i];
}

template <typename T>
inline void FillRun(T* dst, int64_t n) {
  constexpr int64_t kStep = 32 / sizeof(T);
  static const T kZeros[kStep] = {};
  int64_t i = 0;
  for (; i + kStep <= n; i += kStep) std::memcpy(dst + i, kZeros, 32);
  for (; i < n; ++i) dst[i] = T(0);
}

// The variant's widest packet of T (Eigen's), and its lanes.
template <typename T>
using DirectPacket = typename Eigen::internal::packet_traits<T>::type;
template <typename T>
constexpr int kDirectLanes = Eigen::internal::unpacket_traits<DirectPacket<T>>::size;

// A convolution's buffers and parameters, for the pool's tasks.
template <typename T>
struct ConvContext {
  const T* input;
  const T* kernel;
  T* out;
  ConvParams p;
};

// Depthwise layers (convolution_depthwise.cc): one input feature and one
// output feature per group (feature_group_count == in_c == out_c).
inline bool DepthwiseFits(const ConvParams& p) {
  return p.groups > 1 && p.groups == p.in_c && p.out_c == p.in_c;
}
void Conv2DDepthwise(const float* input, const float* kernel, float* out, const ConvParams& p);
void Conv2DDepthwise(const double* input, const double* kernel, double* out,
                     const ConvParams& p);

}  // namespace XLA_CPU_ISA_NAMESPACE
}  // namespace xla_cpu_runtime

#endif  // XLA_BACKENDS_CPU_RUNTIME_CONV_WINDOW_H_
