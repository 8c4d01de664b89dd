// What the convolution units of an ISA variant (convolution.cc,
// convolution_depthwise.cc) share: where a window tap reads, the variant's
// widest vector of T, and the depthwise entry points convolution.cc's
// conv2d hands its depthwise layers to. Included only by variant units.
#ifndef XLA_BACKENDS_CPU_RUNTIME_CONV_WINDOW_H_
#define XLA_BACKENDS_CPU_RUNTIME_CONV_WINDOW_H_

#include <cstdint>

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
