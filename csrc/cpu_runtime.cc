// The CPU runtime (see cpu_runtime.h): thread pool, parallel_for, and the
// dot and convolution kernels, computed with Eigen as XLA:CPU does.
#define EIGEN_USE_THREADS

#include "csrc/cpu_runtime.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <complex>
#include <condition_variable>
#include <cstdlib>
#include <limits>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#ifdef __linux__
#include <sched.h>
#endif

#include <Eigen/Cholesky>
#include <Eigen/Core>
#include <unsupported/Eigen/CXX11/Tensor>
#include <unsupported/Eigen/FFT>

namespace {

// ---------------------------------------------------------------------------
// The process-wide pool.

int DefaultNumThreads() {
  if (const char* env = std::getenv("XLA_CPU_NUM_THREADS")) {
    char* end = nullptr;
    const long value = std::strtol(env, &end, 10);
    if (end != env && *end == '\0' && value > 0) return static_cast<int>(std::min(value, 1024L));
  }
#ifdef __linux__
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    const int count = CPU_COUNT(&set);
    if (count > 0) return count;
  }
#endif
  const unsigned hw = std::thread::hardware_concurrency();
  return hw > 0 ? static_cast<int>(hw) : 1;
}

// num_threads == 1 has no Eigen pool: work runs on the caller.
struct Runtime {
  int num_threads = 1;
  std::unique_ptr<Eigen::ThreadPool> pool;
};

std::mutex g_runtime_mutex;
std::atomic<Runtime*> g_runtime{nullptr};

Runtime* MakeRuntime(int num_threads) {
  auto* runtime = new Runtime;
  runtime->num_threads = num_threads;
  if (num_threads > 1) runtime->pool = std::make_unique<Eigen::ThreadPool>(num_threads);
  return runtime;
}

Runtime* GetRuntime() {
  Runtime* runtime = g_runtime.load(std::memory_order_acquire);
  if (runtime != nullptr) return runtime;
  std::lock_guard<std::mutex> lock(g_runtime_mutex);
  runtime = g_runtime.load(std::memory_order_relaxed);
  if (runtime == nullptr) {
    runtime = MakeRuntime(DefaultNumThreads());
    g_runtime.store(runtime, std::memory_order_release);
  }
  return runtime;
}

// The pool to parallelize over, or null to run on the calling thread: no
// pool, or the caller is one of its workers (nested parallelism runs serially).
Eigen::ThreadPool* PoolForCaller(Runtime* runtime) {
  Eigen::ThreadPool* pool = runtime->pool.get();
  if (pool == nullptr || pool->CurrentThreadId() >= 0) return nullptr;
  return pool;
}

// ---------------------------------------------------------------------------
// parallel_for: chunks claimed dynamically from an atomic counter by the
// caller and up to num_threads - 1 helpers. The state is shared so that a
// helper that starts after all chunks are done finds nothing to do and
// touches nothing the caller owns.

struct ParallelForState {
  void (*body)(void*, int64_t, int64_t);
  void* ctx;
  int64_t n;
  int64_t chunk;
  int64_t num_chunks;
  std::atomic<int64_t> next{0};
  std::atomic<int64_t> finished{0};
  std::mutex mutex;
  std::condition_variable done;

  // Runs chunks until none are left to claim.
  void Work() {
    int64_t c;
    while ((c = next.fetch_add(1, std::memory_order_relaxed)) < num_chunks) {
      const int64_t begin = c * chunk;
      body(ctx, begin, std::min(n, begin + chunk));
      if (finished.fetch_add(1, std::memory_order_acq_rel) + 1 == num_chunks) {
        std::lock_guard<std::mutex> lock(mutex);
        done.notify_all();
      }
    }
  }

  bool Finished() const { return finished.load(std::memory_order_acquire) == num_chunks; }
};

template <typename T>
using RowMajorMatrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <typename T>
using ColMajorMatrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::ColMajor>;

// ---------------------------------------------------------------------------
// Matmul.

// Below this many multiply-adds per product, threads cost more than they save.
constexpr int64_t kMinParallelMacs = int64_t{64} * 64 * 64;
// Products thinner than this in M or N are split along the other dimension
// instead of going to the tensor contraction.
constexpr int64_t kMinContractionDim = 64;
// Products whose M or N is at least this many times the other are split
// into one slab per thread (MatmulSplit) instead of going to the tensor
// contraction.
constexpr int64_t kSlabAspect = 4;

// The block [i0, i1) x [j0, j1) of one product, on the calling thread
// (Eigen's blocked GEMM, or GEMV for a single row or column). A transposed
// row-major operand is the same memory read as column-major.
template <typename T, typename LhsStorage, typename RhsStorage>
void MatmulBlockAs(const T* lhs, const T* rhs, T* out, int64_t m, int64_t k, int64_t n,
                   int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
  using Stride = Eigen::OuterStride<>;
  constexpr bool kLhsRowMajor = static_cast<bool>(LhsStorage::IsRowMajor);
  constexpr bool kRhsRowMajor = static_cast<bool>(RhsStorage::IsRowMajor);
  Eigen::Map<const LhsStorage, 0, Stride> a(kLhsRowMajor ? lhs + i0 * k : lhs + i0, i1 - i0, k,
                                            Stride(kLhsRowMajor ? k : m));
  Eigen::Map<const RhsStorage, 0, Stride> b(kRhsRowMajor ? rhs + j0 : rhs + j0 * k, k, j1 - j0,
                                            Stride(kRhsRowMajor ? n : k));
  Eigen::Map<RowMajorMatrix<T>, 0, Stride> c(out + i0 * n + j0, i1 - i0, j1 - j0, Stride(n));
  c.noalias() = a * b;
}

template <typename T>
void MatmulBlock(const T* lhs, const T* rhs, T* out, int64_t m, int64_t k, int64_t n,
                 bool transpose_lhs, bool transpose_rhs, int64_t i0, int64_t i1, int64_t j0,
                 int64_t j1) {
  if (transpose_lhs) {
    if (transpose_rhs) {
      MatmulBlockAs<T, ColMajorMatrix<T>, ColMajorMatrix<T>>(lhs, rhs, out, m, k, n, i0, i1, j0, j1);
    } else {
      MatmulBlockAs<T, ColMajorMatrix<T>, RowMajorMatrix<T>>(lhs, rhs, out, m, k, n, i0, i1, j0, j1);
    }
  } else if (transpose_rhs) {
    MatmulBlockAs<T, RowMajorMatrix<T>, ColMajorMatrix<T>>(lhs, rhs, out, m, k, n, i0, i1, j0, j1);
  } else {
    MatmulBlockAs<T, RowMajorMatrix<T>, RowMajorMatrix<T>>(lhs, rhs, out, m, k, n, i0, i1, j0, j1);
  }
}

template <typename T>
void MatmulSerial(const T* lhs, const T* rhs, T* out, int64_t m, int64_t k, int64_t n,
                  bool transpose_lhs, bool transpose_rhs) {
  MatmulBlock(lhs, rhs, out, m, k, n, transpose_lhs, transpose_rhs, 0, m, 0, n);
}

// One product over the pool: Eigen's tensor contraction on a ThreadPoolDevice
// (it blocks the caller and shards the blocked GEMM over the workers).
template <typename T>
void MatmulParallel(Eigen::ThreadPool* pool, int num_threads, const T* lhs, const T* rhs, T* out,
                    int64_t m, int64_t k, int64_t n, bool transpose_lhs, bool transpose_rhs) {
  using Index = Eigen::Index;
  Eigen::TensorMap<Eigen::Tensor<const T, 2, Eigen::RowMajor>> a(
      lhs, transpose_lhs ? k : m, transpose_lhs ? m : k);
  Eigen::TensorMap<Eigen::Tensor<const T, 2, Eigen::RowMajor>> b(
      rhs, transpose_rhs ? n : k, transpose_rhs ? k : n);
  Eigen::TensorMap<Eigen::Tensor<T, 2, Eigen::RowMajor>> c(out, m, n);
  const Eigen::array<Eigen::IndexPair<Index>, 1> dims = {
      Eigen::IndexPair<Index>(transpose_lhs ? 0 : 1, transpose_rhs ? 1 : 0)};
  Eigen::ThreadPoolDevice device(pool, num_threads);
  c.device(device) = a.contract(b, dims);
}

// One thin product over the pool: the larger of M and N split into blocks,
// one serial product each. For matrix-vector-like shapes, where the
// contraction's 2-D blocking has too little to work with.
template <typename T>
struct SplitContext {
  const T* lhs;
  const T* rhs;
  T* out;
  int64_t m, k, n;
  bool transpose_lhs, transpose_rhs;
  bool split_rows;
};

template <typename T>
void MatmulSplitBody(void* ctx, int64_t begin, int64_t end) {
  const auto& c = *static_cast<const SplitContext<T>*>(ctx);
  if (c.split_rows) {
    MatmulBlock(c.lhs, c.rhs, c.out, c.m, c.k, c.n, c.transpose_lhs, c.transpose_rhs, begin, end,
                0, c.n);
  } else {
    MatmulBlock(c.lhs, c.rhs, c.out, c.m, c.k, c.n, c.transpose_lhs, c.transpose_rhs, 0, c.m,
                begin, end);
  }
}

template <typename T>
void MatmulSplit(const T* lhs, const T* rhs, T* out, int64_t m, int64_t k, int64_t n,
                 bool transpose_lhs, bool transpose_rhs, int64_t parts = 0) {
  SplitContext<T> ctx{lhs, rhs, out, m, k, n, transpose_lhs, transpose_rhs, m >= n};
  const int64_t extent = m >= n ? m : n;
  const int64_t macs_per_unit = k * (m >= n ? n : m);
  // Blocks of >= 8 rows or columns keep Eigen's kernels on full panels.
  int64_t min_chunk =
      std::max<int64_t>(8, kMinParallelMacs / std::max<int64_t>(1, macs_per_unit));
  if (parts > 0) {  // exactly `parts` slabs, multiples of 16 but the last
    min_chunk = std::max(min_chunk, ((extent + parts - 1) / parts + 15) / 16 * 16);
  }
  __xla_cpu_parallel_for(&MatmulSplitBody<T>, &ctx, extent, min_chunk);
}

template <typename T>
struct BatchContext {
  const T* lhs;
  const T* rhs;
  T* out;
  int64_t m, k, n;
  bool transpose_lhs, transpose_rhs;
};

template <typename T>
void MatmulBatchBody(void* ctx, int64_t begin, int64_t end) {
  const auto& c = *static_cast<const BatchContext<T>*>(ctx);
  for (int64_t b = begin; b < end; ++b) {
    MatmulSerial(c.lhs + b * c.m * c.k, c.rhs + b * c.k * c.n, c.out + b * c.m * c.n, c.m, c.k,
                 c.n, c.transpose_lhs, c.transpose_rhs);
  }
}

template <typename T>
void Matmul(const T* lhs, const T* rhs, T* out, int64_t batch, int64_t m, int64_t k, int64_t n,
            bool transpose_lhs, bool transpose_rhs) {
  if (batch <= 0 || m <= 0 || n <= 0) return;
  if (k <= 0) {
    std::fill(out, out + batch * m * n, T(0));
    return;
  }
  Runtime* runtime = GetRuntime();
  Eigen::ThreadPool* pool = PoolForCaller(runtime);
  const int64_t macs = m * k * n;
  if (pool == nullptr || macs * batch < kMinParallelMacs) {
    for (int64_t b = 0; b < batch; ++b) {
      MatmulSerial(lhs + b * m * k, rhs + b * k * n, out + b * m * n, m, k, n, transpose_lhs,
                   transpose_rhs);
    }
    return;
  }
  const int64_t threads = runtime->num_threads;
  if (batch > 1 && (macs < kMinParallelMacs * threads || batch % threads == 0 ||
                    batch >= 4 * threads)) {
    // Products spread evenly over the threads, or many small ones: whole
    // products per task, each serial.
    BatchContext<T> ctx{lhs, rhs, out, m, k, n, transpose_lhs, transpose_rhs};
    __xla_cpu_parallel_for(&MatmulBatchBody<T>, &ctx, batch,
                           std::max<int64_t>(1, kMinParallelMacs / macs));
    return;
  }
  if (std::min(m, n) < kMinContractionDim) {
    for (int64_t b = 0; b < batch; ++b) {
      MatmulSplit(lhs + b * m * k, rhs + b * k * n, out + b * m * n, m, k, n, transpose_lhs,
                  transpose_rhs);
    }
    return;
  }
  for (int64_t b = 0; b < batch; ++b) {
    if (std::max(m, n) >= kSlabAspect * std::min(m, n)) {
      // One serial GEMM per thread on a slab of the larger dimension, for
      // wide, thin products. Measured against the contraction's 2-D
      // sharding here (2 threads, medians of 15, 3 runs each):
      // 256x1024x4096 5-8% faster, 256x4096x1024 level; square products
      // (512^3 to 1024^3) and 2048x512x2048 2-6% slower.
      MatmulSplit(lhs + b * m * k, rhs + b * k * n, out + b * m * n, m, k, n, transpose_lhs,
                  transpose_rhs, threads);
      continue;
    }
    MatmulParallel(pool, runtime->num_threads, lhs + b * m * k, rhs + b * k * n, out + b * m * n,
                   m, k, n, transpose_lhs, transpose_rhs);
  }
}

// ---------------------------------------------------------------------------
// FFT: successive 1-D transforms along each axis with Eigen's FFT module.

// One 1-D transform; Eigen's kissfft cannot take length 1 (the identity).
template <typename T>
void Transform(Eigen::FFT<T>& fft, std::vector<std::complex<T>>& result,
               const std::vector<std::complex<T>>& line, bool inverse) {
  if (line.size() == 1) {
    result = line;
  } else if (inverse) {
    fft.inv(result, line);
  } else {
    fft.fwd(result, line);
  }
}

// One complex transform of every line along `axis` of the row-major array
// `data` with dimensions `dims`, in place.
template <typename T>
void FftAxis(Eigen::FFT<T>& fft, std::complex<T>* data, const std::vector<int64_t>& dims,
             size_t axis, bool inverse) {
  int64_t stride = 1;
  for (size_t d = axis + 1; d < dims.size(); ++d) stride *= dims[d];
  int64_t outer = 1;
  for (size_t d = 0; d < axis; ++d) outer *= dims[d];
  const int64_t n = dims[axis];
  std::vector<std::complex<T>> line(n), result(n);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < stride; ++i) {
      std::complex<T>* base = data + o * n * stride + i;
      for (int64_t j = 0; j < n; ++j) line[j] = base[j * stride];
      Transform(fft, result, line, inverse);
      for (int64_t j = 0; j < n; ++j) base[j * stride] = result[j];
    }
  }
}

template <typename T>
struct FftContext {
  const void* in;
  void* out;
  int32_t rank;
  const int64_t* lengths;
  int32_t kind;
};

template <typename T>
void FftBatch(void* raw, int64_t begin, int64_t end) {
  using C = std::complex<T>;
  const auto& ctx = *static_cast<const FftContext<T>*>(raw);
  const int32_t rank = ctx.rank;
  const int64_t last = ctx.lengths[rank - 1];
  const int64_t half = last / 2 + 1;
  // The complex side's dimensions: the lengths, the last one halved for
  // the real transforms.
  std::vector<int64_t> dims(ctx.lengths, ctx.lengths + rank);
  const bool real = ctx.kind >= 2;
  if (real) dims[rank - 1] = half;
  int64_t complex_size = 1, real_size = 1;
  for (int32_t d = 0; d < rank; ++d) {
    complex_size *= dims[d];
    real_size *= ctx.lengths[d];
  }
  const int64_t lines = complex_size / dims[rank - 1];
  Eigen::FFT<T> fft;
  std::vector<C> work(complex_size), line(last), result(last);
  for (int64_t b = begin; b < end; ++b) {
    if (ctx.kind <= 1) {  // FFT, IFFT
      const C* in = static_cast<const C*>(ctx.in) + b * complex_size;
      C* out = static_cast<C*>(ctx.out) + b * complex_size;
      std::copy(in, in + complex_size, out);
      for (int32_t a = 0; a < rank; ++a) FftAxis(fft, out, dims, a, ctx.kind == 1);
    } else if (ctx.kind == 2) {  // RFFT: the last axis real -> half, then the others
      const T* in = static_cast<const T*>(ctx.in) + b * real_size;
      C* out = static_cast<C*>(ctx.out) + b * complex_size;
      for (int64_t l = 0; l < lines; ++l) {
        for (int64_t j = 0; j < last; ++j) line[j] = C(in[l * last + j], 0);
        Transform(fft, result, line, false);
        std::copy(result.begin(), result.begin() + half, out + l * half);
      }
      for (int32_t a = 0; a + 1 < rank; ++a) FftAxis(fft, out, dims, a, false);
    } else {  // IRFFT: the other axes first, then half -> real along the last
      const C* in = static_cast<const C*>(ctx.in) + b * complex_size;
      T* out = static_cast<T*>(ctx.out) + b * real_size;
      std::copy(in, in + complex_size, work.begin());
      for (int32_t a = 0; a + 1 < rank; ++a) FftAxis(fft, work.data(), dims, a, true);
      for (int64_t l = 0; l < lines; ++l) {
        const C* h = work.data() + l * half;
        // The full Hermitian spectrum: X[k] = conj(X[n - k]) above n/2.
        for (int64_t k = 0; k < last; ++k) line[k] = k < half ? h[k] : std::conj(h[last - k]);
        Transform(fft, result, line, true);
        for (int64_t j = 0; j < last; ++j) out[l * last + j] = result[j].real();
      }
    }
  }
}

template <typename T>
void Fft(const void* in, void* out, int64_t batch, int32_t rank, const int64_t* lengths,
         int32_t kind) {
  if (batch <= 0 || rank <= 0) return;
  int64_t size = 1;
  for (int32_t d = 0; d < rank; ++d) size *= lengths[d];
  if (size == 0) return;
  FftContext<T> ctx{in, out, rank, lengths, kind};
  // Whole transforms per task; small ones together.
  const int64_t min_chunk = std::max<int64_t>(1, (int64_t{1} << 14) / size);
  __xla_cpu_parallel_for(&FftBatch<T>, &ctx, batch, min_chunk);
}

// ---------------------------------------------------------------------------
// Cholesky: Eigen's blocked LLT (its panels go through GEMM) on a lower-form
// copy of each matrix, batches over the pool.

template <typename T>
struct CholeskyContext {
  const T* a;
  T* out;
  int32_t* info;
  int64_t n;
  bool lower;
  bool potrf;
};

template <typename T>
void CholeskyBatch(void* raw, int64_t begin, int64_t end) {
  using Mat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const auto& c = *static_cast<const CholeskyContext<T>*>(raw);
  const int64_t n = c.n;
  Mat w(n, n);
  for (int64_t b = begin; b < end; ++b) {
    Eigen::Map<const Mat> a(c.a + b * n * n, n, n);
    Eigen::Map<Mat> out(c.out + b * n * n, n, n);
    // The factor of the upper form is the transpose of the lower form's.
    if (c.lower) {
      w.template triangularView<Eigen::Lower>() = a;
    } else {
      w.template triangularView<Eigen::Lower>() = a.transpose();
    }
    // Eigen stops at a pivot that is not > 0 but lets NaN through: the
    // first NaN on the diagonal is a failed pivot too (NaN spreads down
    // and right, never up).
    int64_t failed = Eigen::internal::llt_inplace<T, Eigen::Lower>::blocked(w);
    const int64_t scan = failed < 0 ? n : failed;
    for (int64_t j = 0; j < scan; ++j) {
      if (std::isnan(w(j, j))) {
        failed = j;
        break;
      }
    }
    if (c.info != nullptr) c.info[b] = static_cast<int32_t>(failed < 0 ? 0 : failed + 1);
    if (c.potrf) {
      // The factor in its triangle, the rest (everything if it failed) as a was.
      if (c.out != c.a) out = a;
      if (failed >= 0) continue;
      if (c.lower) {
        out.template triangularView<Eigen::Lower>() = w;
      } else {
        out.template triangularView<Eigen::Upper>() = w.transpose();
      }
    } else if (failed >= 0) {
      out.setConstant(std::numeric_limits<T>::quiet_NaN());
    } else if (c.lower) {
      out = w.template triangularView<Eigen::Lower>();
    } else {
      out = w.transpose().template triangularView<Eigen::Upper>();
    }
  }
}

template <typename T>
void Cholesky(const T* a, T* out, int32_t* info, int64_t batch, int64_t n, int32_t lower,
              int32_t potrf) {
  if (batch <= 0 || n <= 0) return;
  CholeskyContext<T> ctx{a, out, info, n, lower != 0, potrf != 0};
  // Whole matrices per task; small ones together.
  const int64_t min_chunk = std::max<int64_t>(1, (int64_t{1} << 15) / (n * n * n));
  __xla_cpu_parallel_for(&CholeskyBatch<T>, &ctx, batch, min_chunk);
}

// ---------------------------------------------------------------------------
// Triangular solve: Eigen's blocked TRSM, in place in `out`, batches over the
// pool.

template <typename T>
struct TrsmContext {
  const T* a;
  const T* b;
  T* out;
  const T* alpha;
  int64_t m, n;
  bool left, lower, unit, transpose;
};

template <int Mode, typename A, typename X>
void SolveTriangular(const A& a, X& x, bool left) {
  if (left) {
    a.template triangularView<Mode>().template solveInPlace<Eigen::OnTheLeft>(x);
  } else {
    a.template triangularView<Mode>().template solveInPlace<Eigen::OnTheRight>(x);
  }
}

// op(a) is triangular in the `lower` triangle (else the upper one).
template <typename A, typename X>
void SolveTriangular(const A& a, X& x, bool left, bool lower, bool unit) {
  if (lower) {
    if (unit) {
      SolveTriangular<Eigen::UnitLower>(a, x, left);
    } else {
      SolveTriangular<Eigen::Lower>(a, x, left);
    }
  } else if (unit) {
    SolveTriangular<Eigen::UnitUpper>(a, x, left);
  } else {
    SolveTriangular<Eigen::Upper>(a, x, left);
  }
}

template <typename T>
void TrsmBatch(void* raw, int64_t begin, int64_t end) {
  using Mat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const auto& c = *static_cast<const TrsmContext<T>*>(raw);
  const int64_t k = c.left ? c.m : c.n;
  for (int64_t b = begin; b < end; ++b) {
    Eigen::Map<const Mat> a(c.a + b * k * k, k, k);
    Eigen::Map<Mat> x(c.out + b * c.m * c.n, c.m, c.n);
    if (c.out != c.b) x = Eigen::Map<const Mat>(c.b + b * c.m * c.n, c.m, c.n);
    if (c.alpha != nullptr) x *= *c.alpha;
    // The transpose of a triangle is the opposite triangle.
    if (c.transpose) {
      SolveTriangular(a.transpose(), x, c.left, c.lower != c.transpose, c.unit);
    } else {
      SolveTriangular(a, x, c.left, c.lower, c.unit);
    }
  }
}

template <typename T>
void Trsm(const T* a, const T* b, T* out, const T* alpha, int64_t batch, int64_t m, int64_t n,
          int32_t flags) {
  if (batch <= 0 || m <= 0 || n <= 0) return;
  TrsmContext<T> ctx{a, b, out, alpha, m, n, (flags & 1) != 0, (flags & 2) != 0,
                     (flags & 4) != 0, (flags & 8) != 0};
  const int64_t k = ctx.left ? m : n;
  const int64_t min_chunk = std::max<int64_t>(1, (int64_t{1} << 15) / (k * k * (ctx.left ? n : m)));
  __xla_cpu_parallel_for(&TrsmBatch<T>, &ctx, batch, min_chunk);
}

// ---------------------------------------------------------------------------
// Convolution: im2col over blocks of output pixels, then one GEMM per feature
// group and block, blocks spread over the pool with parallel_for.

struct ConvParams {
  int64_t batch, in_h, in_w, in_c, kernel_h, kernel_w, out_c, out_h, out_w;
  int64_t stride_h, stride_w, pad_h_lo, pad_w_lo;
  int64_t lhs_dilation_h, lhs_dilation_w, rhs_dilation_h, rhs_dilation_w;
  int64_t groups;
};

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

extern "C" {

int32_t __xla_cpu_runtime_num_threads(void) { return GetRuntime()->num_threads; }

void __xla_cpu_runtime_set_num_threads(int32_t num_threads) {
  Runtime* fresh = MakeRuntime(num_threads > 0 ? num_threads : DefaultNumThreads());
  Runtime* old;
  {
    std::lock_guard<std::mutex> lock(g_runtime_mutex);
    old = g_runtime.exchange(fresh, std::memory_order_acq_rel);
  }
  delete old;  // joins its workers
}

void __xla_cpu_parallel_for(void (*body)(void* ctx, int64_t begin, int64_t end), void* ctx,
                            int64_t n, int64_t min_chunk) {
  if (n <= 0) return;
  if (min_chunk < 1) min_chunk = 1;
  Runtime* runtime = GetRuntime();
  Eigen::ThreadPool* pool = n <= min_chunk ? nullptr : PoolForCaller(runtime);
  if (pool == nullptr) {
    body(ctx, 0, n);
    return;
  }
  const int64_t threads = runtime->num_threads;
  // About four chunks per thread balances uneven chunks without many claims.
  const int64_t chunk = std::max(min_chunk, (n + 4 * threads - 1) / (4 * threads));
  const int64_t num_chunks = (n + chunk - 1) / chunk;
  if (num_chunks == 1) {
    body(ctx, 0, n);
    return;
  }
  auto state = std::make_shared<ParallelForState>();
  state->body = body;
  state->ctx = ctx;
  state->n = n;
  state->chunk = chunk;
  state->num_chunks = num_chunks;
  const int64_t helpers = std::min(threads - 1, num_chunks - 1);
  for (int64_t i = 0; i < helpers; ++i) {
    pool->Schedule([state] { state->Work(); });
  }
  state->Work();
  if (!state->Finished()) {
    // Chunks still running on helpers: spin briefly (they are usually about
    // to finish), then sleep.
    for (int i = 0; i < 2000 && !state->Finished(); ++i) std::this_thread::yield();
    std::unique_lock<std::mutex> lock(state->mutex);
    state->done.wait(lock, [&] { return state->Finished(); });
  }
}

void __xla_cpu_matmul_f32(const float* lhs, const float* rhs, float* out, int64_t batch,
                          int64_t m, int64_t k, int64_t n, int32_t transpose_lhs,
                          int32_t transpose_rhs) {
  Matmul(lhs, rhs, out, batch, m, k, n, transpose_lhs != 0, transpose_rhs != 0);
}

void __xla_cpu_matmul_f64(const double* lhs, const double* rhs, double* out, int64_t batch,
                          int64_t m, int64_t k, int64_t n, int32_t transpose_lhs,
                          int32_t transpose_rhs) {
  Matmul(lhs, rhs, out, batch, m, k, n, transpose_lhs != 0, transpose_rhs != 0);
}

void __xla_cpu_matmul_s32(const int32_t* lhs, const int32_t* rhs, int32_t* out, int64_t batch,
                          int64_t m, int64_t k, int64_t n, int32_t transpose_lhs,
                          int32_t transpose_rhs) {
  Matmul(lhs, rhs, out, batch, m, k, n, transpose_lhs != 0, transpose_rhs != 0);
}

void __xla_cpu_matmul_c64(const void* lhs, const void* rhs, void* out, int64_t batch, int64_t m,
                          int64_t k, int64_t n, int32_t transpose_lhs, int32_t transpose_rhs) {
  using C = std::complex<float>;
  Matmul(static_cast<const C*>(lhs), static_cast<const C*>(rhs), static_cast<C*>(out), batch, m,
         k, n, transpose_lhs != 0, transpose_rhs != 0);
}

void __xla_cpu_matmul_c128(const void* lhs, const void* rhs, void* out, int64_t batch,
                           int64_t m, int64_t k, int64_t n, int32_t transpose_lhs,
                           int32_t transpose_rhs) {
  using C = std::complex<double>;
  Matmul(static_cast<const C*>(lhs), static_cast<const C*>(rhs), static_cast<C*>(out), batch, m,
         k, n, transpose_lhs != 0, transpose_rhs != 0);
}

void __xla_cpu_cholesky_f32(const float* a, float* out, int32_t* info, int64_t batch, int64_t n,
                            int32_t lower, int32_t potrf) {
  Cholesky(a, out, info, batch, n, lower, potrf);
}

void __xla_cpu_cholesky_f64(const double* a, double* out, int32_t* info, int64_t batch,
                            int64_t n, int32_t lower, int32_t potrf) {
  Cholesky(a, out, info, batch, n, lower, potrf);
}

void __xla_cpu_trsm_f32(const float* a, const float* b, float* out, const float* alpha,
                        int64_t batch, int64_t m, int64_t n, int32_t flags) {
  Trsm(a, b, out, alpha, batch, m, n, flags);
}

void __xla_cpu_trsm_f64(const double* a, const double* b, double* out, const double* alpha,
                        int64_t batch, int64_t m, int64_t n, int32_t flags) {
  Trsm(a, b, out, alpha, batch, m, n, flags);
}

void __xla_cpu_fft_f32(const void* in, void* out, int64_t batch, int32_t rank,
                       const int64_t* lengths, int32_t kind) {
  Fft<float>(in, out, batch, rank, lengths, kind);
}

void __xla_cpu_fft_f64(const void* in, void* out, int64_t batch, int32_t rank,
                       const int64_t* lengths, int32_t kind) {
  Fft<double>(in, out, batch, rank, lengths, kind);
}

void __xla_cpu_conv2d_f32(const float* input, const float* kernel, float* out, int64_t batch,
                          int64_t in_h, int64_t in_w, int64_t in_c, int64_t kernel_h,
                          int64_t kernel_w, int64_t out_c, int64_t out_h, int64_t out_w,
                          int64_t stride_h, int64_t stride_w, int64_t pad_h_lo,
                          int64_t pad_w_lo, int64_t lhs_dilation_h, int64_t lhs_dilation_w,
                          int64_t rhs_dilation_h, int64_t rhs_dilation_w,
                          int64_t feature_group_count) {
  Conv2D(input, kernel, out,
         ConvParams{batch, in_h, in_w, in_c, kernel_h, kernel_w, out_c, out_h, out_w, stride_h,
                    stride_w, pad_h_lo, pad_w_lo, lhs_dilation_h, lhs_dilation_w,
                    rhs_dilation_h, rhs_dilation_w, feature_group_count});
}

void __xla_cpu_conv2d_f64(const double* input, const double* kernel, double* out,
                          int64_t batch, int64_t in_h, int64_t in_w, int64_t in_c,
                          int64_t kernel_h, int64_t kernel_w, int64_t out_c, int64_t out_h,
                          int64_t out_w, int64_t stride_h, int64_t stride_w, int64_t pad_h_lo,
                          int64_t pad_w_lo, int64_t lhs_dilation_h, int64_t lhs_dilation_w,
                          int64_t rhs_dilation_h, int64_t rhs_dilation_w,
                          int64_t feature_group_count) {
  Conv2D(input, kernel, out,
         ConvParams{batch, in_h, in_w, in_c, kernel_h, kernel_w, out_c, out_h, out_w, stride_h,
                    stride_w, pad_h_lo, pad_w_lo, lhs_dilation_h, lhs_dilation_w,
                    rhs_dilation_h, rhs_dilation_w, feature_group_count});
}

const XlaCpuRuntimeSymbol* __xla_cpu_runtime_symbols(int64_t* count) {
#define XLA_CPU_RUNTIME_SYMBOL(name) {#name, reinterpret_cast<void*>(&name)}
  static const XlaCpuRuntimeSymbol kSymbols[] = {
      XLA_CPU_RUNTIME_SYMBOL(__xla_cpu_runtime_num_threads),
      XLA_CPU_RUNTIME_SYMBOL(__xla_cpu_parallel_for),
      XLA_CPU_RUNTIME_SYMBOL(__xla_cpu_matmul_f32),
      XLA_CPU_RUNTIME_SYMBOL(__xla_cpu_matmul_f64),
      XLA_CPU_RUNTIME_SYMBOL(__xla_cpu_matmul_s32),
      XLA_CPU_RUNTIME_SYMBOL(__xla_cpu_matmul_c64),
      XLA_CPU_RUNTIME_SYMBOL(__xla_cpu_matmul_c128),
      XLA_CPU_RUNTIME_SYMBOL(__xla_cpu_cholesky_f32),
      XLA_CPU_RUNTIME_SYMBOL(__xla_cpu_cholesky_f64),
      XLA_CPU_RUNTIME_SYMBOL(__xla_cpu_trsm_f32),
      XLA_CPU_RUNTIME_SYMBOL(__xla_cpu_trsm_f64),
      XLA_CPU_RUNTIME_SYMBOL(__xla_cpu_conv2d_f32),
      XLA_CPU_RUNTIME_SYMBOL(__xla_cpu_conv2d_f64),
      XLA_CPU_RUNTIME_SYMBOL(__xla_cpu_fft_f32),
      XLA_CPU_RUNTIME_SYMBOL(__xla_cpu_fft_f64),
  };
#undef XLA_CPU_RUNTIME_SYMBOL
  if (count != nullptr) *count = static_cast<int64_t>(sizeof(kSymbols) / sizeof(kSymbols[0]));
  return kSymbols;
}

}  // extern "C"
