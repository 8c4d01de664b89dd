// Internals shared by the CPU runtime's files (not part of its C ABI, see
// cpu_runtime.h): the process-wide pool and Eigen's matrix types.
#ifndef XLA_BACKENDS_CPU_RUNTIME_INTERNAL_H_
#define XLA_BACKENDS_CPU_RUNTIME_INTERNAL_H_

// Eigen's ThreadPool and ThreadPoolDevice: before any Eigen header.
#ifndef EIGEN_USE_THREADS
#define EIGEN_USE_THREADS
#endif

#include <cstdint>
#include <memory>

#include <Eigen/Core>
#include <unsupported/Eigen/CXX11/Tensor>

#include "xla/backends/cpu/runtime/cpu_runtime.h"
#include "xla/backends/cpu/runtime/kernels.h"

namespace xla_cpu_runtime {

// num_threads == 1 has no Eigen pool: work runs on the caller.
struct Runtime {
  int num_threads = 1;
  std::unique_ptr<Eigen::ThreadPool> pool;
};

// The process-wide runtime, made on first use (pool.cc).
Runtime* GetRuntime();

// The pool to parallelize over, or null to run on the calling thread: no
// pool, or the caller is one of its workers (nested parallelism runs serially).
Eigen::ThreadPool* PoolForCaller(Runtime* runtime);

template <typename T>
using RowMajorMatrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <typename T>
using ColMajorMatrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::ColMajor>;

}  // namespace xla_cpu_runtime

#endif  // XLA_BACKENDS_CPU_RUNTIME_INTERNAL_H_
