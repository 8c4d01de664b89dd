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

#include <algorithm>
#include <cstddef>
#include <type_traits>

#include "xla/backends/cpu/runtime/kernels.h"
#if defined(__AVX512F__)
#include "xla/backends/cpu/runtime/packed_gemm.h"
#endif

namespace xla_cpu_runtime {
namespace XLA_CPU_ISA_NAMESPACE {

template <typename T>
using RowMajorMatrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <typename T>
using ColMajorMatrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::ColMajor>;

// Eigen's blocked GEMM with its packing buffers kept per thread between
// calls. Eigen's own product (`c.noalias() = a * b`) allocates them (a few
// MB) and frees them at every call; on a pool worker glibc's per-thread
// arena then gives the pages back, and the next call faults them in again
// (800 minor faults per call of a 256x1024x1024 slab on two threads, and
// page faults of several threads serialize: 310 against 430 GFLOP/s for
// 256x1024x2048 on two).
template <typename T>
T* ThreadGemmSpace(size_t count) {
  struct Space {
    void* data = nullptr;
    size_t bytes = 0;
    ~Space() { Eigen::internal::aligned_free(data); }
  };
  thread_local Space space;
  const size_t bytes = count * sizeof(T);
  if (bytes > space.bytes) {
    Eigen::internal::aligned_free(space.data);
    space.data = Eigen::internal::aligned_malloc(bytes);
    space.bytes = bytes;
  }
  return static_cast<T*>(space.data);
}

// Eigen's blocking for one product (as gemm_blocking_space computes it for
// one thread), its blocks in ThreadGemmSpace. `Transpose`: a row-major
// result, which Eigen computes as the transposed product.
template <typename T, bool Transpose>
class ReusedGemmBlocking : public Eigen::internal::level3_blocking<T, T> {
 public:
  ReusedGemmBlocking(Eigen::Index rows, Eigen::Index cols, Eigen::Index depth) {
    this->m_mc = Transpose ? cols : rows;
    this->m_nc = Transpose ? rows : cols;
    this->m_kc = depth;
    Eigen::internal::computeProductBlockingSizes<T, T>(this->m_kc, this->m_mc, this->m_nc,
                                                        Eigen::Index{1});
    constexpr size_t kAlign = EIGEN_DEFAULT_ALIGN_BYTES / sizeof(T) > 0
                                  ? EIGEN_DEFAULT_ALIGN_BYTES / sizeof(T) : 1;
    const size_t size_a = (static_cast<size_t>(this->m_mc * this->m_kc) + kAlign - 1) /
                          kAlign * kAlign;
    T* space = ThreadGemmSpace<T>(size_a + static_cast<size_t>(this->m_kc * this->m_nc));
    this->m_blockA = space;
    this->m_blockB = space + size_a;
  }
};

// c = a * b, or c += a * b with `accumulate`, on the calling thread: a, b
// and c Eigen maps with unit inner stride. With an `addend` (laid out as c:
// same storage order and outer stride; not with `accumulate`), c = addend
// + alpha * a * b. Products Eigen does not run as a blocked GEMM (a row or
// column, tiny sizes) go through its operator. `whole_macs`: the
// multiply-adds of the product c is a block of (0: c's own), which decide
// between packed_gemm.h and Eigen: every block of a product then takes the
// path the whole would, and its elements the whole product's bits
// (packed_gemm's sums do not depend on the block), whatever the number of
// threads splitting it.
template <typename Dst, typename Lhs, typename Rhs>
void SerialGemm(Dst&& c, const Lhs& a, const Rhs& b, bool accumulate,
                const typename std::decay<Dst>::type::Scalar* addend = nullptr,
                typename std::decay<Dst>::type::Scalar alpha = 1, int64_t whole_macs = 0) {
  using T = typename std::decay<Dst>::type::Scalar;
  using Index = Eigen::Index;
  constexpr bool kRowMajor = static_cast<bool>(std::decay<Dst>::type::IsRowMajor);
  const Index rows = c.rows(), cols = c.cols(), depth = a.cols();
  // c = addend, then c += alpha * a * b (Eigen's paths).
  auto copy_addend = [&] {
    if (addend == nullptr || addend == c.data()) return;
    const Index outer = kRowMajor ? rows : cols, inner = kRowMajor ? cols : rows;
    for (Index o = 0; o < outer; ++o) {
      std::copy(addend + o * c.outerStride(), addend + o * c.outerStride() + inner,
                c.data() + o * c.outerStride());
    }
  };
  if (rows <= 1 || cols <= 1 || depth == 0 || rows + cols + depth < 20) {
    if (addend != nullptr) {
      copy_addend();
      c.noalias() += alpha * (a * b);
    } else if (accumulate) {
      c.noalias() += a * b;
    } else {
      c.noalias() = a * b;
    }
    return;
  }
#if defined(__AVX512F__)
  // f32 products of a row-major result: packed_gemm.h where they are large.
  if constexpr (std::is_same<T, float>::value && kRowMajor) {
    static_assert(EIGEN_DEFAULT_ALIGN_BYTES >= 64, "packed_gemm.h's aligned loads");
    if ((whole_macs > 0 ? whole_macs : rows * cols * depth) >= packed_gemm::kMinMacs) {
      float* space = ThreadGemmSpace<float>(
          static_cast<size_t>(packed_gemm::SpaceFloats(rows, cols, depth)));
      packed_gemm::Gemm(rows, cols, depth, a.data(), Lhs::IsRowMajor ? a.outerStride() : 1,
                        Lhs::IsRowMajor ? 1 : a.outerStride(), b.data(),
                        Rhs::IsRowMajor ? b.outerStride() : 1,
                        Rhs::IsRowMajor ? 1 : b.outerStride(), c.data(), c.outerStride(),
                        accumulate, space, addend, alpha);
      return;
    }
  }
#endif
  if (addend != nullptr) {
    copy_addend();
  } else if (!accumulate) {
    c.setZero();
  }
  ReusedGemmBlocking<T, kRowMajor> blocking(rows, cols, depth);
  Eigen::internal::general_matrix_matrix_product<
      Index, T, Lhs::IsRowMajor ? Eigen::RowMajor : Eigen::ColMajor, false, T,
      Rhs::IsRowMajor ? Eigen::RowMajor : Eigen::ColMajor, false,
      kRowMajor ? Eigen::RowMajor : Eigen::ColMajor, 1>::run(rows, cols, depth, a.data(),
                                                             a.outerStride(), b.data(),
                                                             b.outerStride(), c.data(), 1,
                                                             c.outerStride(),
                                                             addend != nullptr ? alpha : T(1),
                                                             blocking);
}

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
