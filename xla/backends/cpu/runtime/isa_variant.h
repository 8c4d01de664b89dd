// What the ISA variant units (matmul.cc, convolution.cc) share: their own
// copy of Eigen and the process's pool seen through it. Included only by
// those units; see kernels.h.
//
// A variant unit is compiled with -DXLA_CPU_ISA_NAMESPACE=isa_<isa> (the
// namespace its kernels are defined in) and -DEigen=xla_eigen_<isa> (Eigen
// is header-only: renaming its namespace gives each variant its own
// instantiations, so the linker cannot merge an AVX-512 copy of an Eigen
// function into code that runs on any CPU).
#ifndef XLA_BACKENDS_CPU_RUNTIME_ISA_VARIANT_H_
#define XLA_BACKENDS_CPU_RUNTIME_ISA_VARIANT_H_

#if !defined(XLA_CPU_ISA_NAMESPACE) || !defined(Eigen)
#error "an ISA variant unit needs -DXLA_CPU_ISA_NAMESPACE=isa_<isa> -DEigen=xla_eigen_<isa>"
#endif

// Eigen's ThreadPoolInterface and ThreadPoolDevice: before any Eigen header.
#ifndef EIGEN_USE_THREADS
#define EIGEN_USE_THREADS
#endif

#include <Eigen/Core>
#include <unsupported/Eigen/CXX11/Tensor>

#include "xla/backends/cpu/runtime/kernels.h"

namespace xla_cpu_runtime {
namespace XLA_CPU_ISA_NAMESPACE {

template <typename T>
using RowMajorMatrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <typename T>
using ColMajorMatrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::ColMajor>;

// The process-wide pool (pool.cc) as this variant's Eigen sees a pool.
class PoolAdapter final : public Eigen::ThreadPoolInterface {
 public:
  void Schedule(std::function<void()> fn) override { PoolSchedule(std::move(fn)); }
  int NumThreads() const override { return PoolNumThreads(); }
  int CurrentThreadId() const override { return PoolCurrentThreadId(); }
};

}  // namespace XLA_CPU_ISA_NAMESPACE
}  // namespace xla_cpu_runtime

#endif  // XLA_BACKENDS_CPU_RUNTIME_ISA_VARIANT_H_
