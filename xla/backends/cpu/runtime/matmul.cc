// The CPU runtime's matrix products (see cpu_runtime.h): Eigen's GEMM, with
// the work split over the pool as the shapes suggest. An ISA variant unit:
// compiled once per variant (kernels.h, isa_variant.h); the C entry points
// that dispatch to a variant are in isa.cc.
#include "xla/backends/cpu/runtime/isa_variant.h"

#include <algorithm>
#include <complex>
#include <type_traits>
#include <vector>

#include "xla/backends/cpu/runtime/cpu_runtime.h"

namespace xla_cpu_runtime {
namespace XLA_CPU_ISA_NAMESPACE {
namespace {

// ---------------------------------------------------------------------------
// Matmul.

// Products thinner than this in M or N are split along the other dimension
// instead of going to the tensor contraction.
constexpr int64_t kMinContractionDim = 64;
// Products whose M or N is at least this many times the other are split
// into one slab per thread (MatmulSplit) instead of going to the tensor
// contraction.
constexpr int64_t kSlabAspect = 4;

// f32 on AVX-512: SerialGemm's packed GEMM (packed_gemm.h). On up to
// kMaxPackedSlabThreads threads every product it computes (kMinMacs or
// more: the whole product decides, so each slab takes that path and its
// elements have the bits one thread computes) splits into one slab per
// thread, each thread packing its own operand
// blocks, instead of the tensor contraction's 2-D sharding of Eigen's GEMM
// (2 threads here, GFLOP/s before/after, three alternating runs: 1024^3
// 381-439/460-471, 2048^3 357-389/437-477, 2048x512x2048 380-431/448-482,
// 512^3 326-423/394-443). At 16 threads a slab per thread would pack the
// shared operand 16 times: the contraction stays.
#if defined(__AVX512F__)
template <typename T>
constexpr bool kPackedF32 = std::is_same<T, float>::value;
constexpr int64_t kPackedMinMacs = packed_gemm::kMinMacs;
#else
template <typename T>
constexpr bool kPackedF32 = false;
constexpr int64_t kPackedMinMacs = 0;
#endif
constexpr int64_t kMaxPackedSlabThreads = 4;

// What a product writes: out = lhs x rhs, or with an `addend` (an array
// laid out as out) out = addend + alpha (lhs x rhs) (__xla_cpu_matmul_addend_f32).
template <typename T>
struct Epilogue {
  const T* addend = nullptr;
  T alpha = T(1);
  // The epilogue of the product at `offset` elements into the output.
  Epilogue At(int64_t offset) const {
    return addend == nullptr ? *this : Epilogue{addend + offset, alpha};
  }
};

// out[i] = addend[i] + alpha out[i] for i in [0, count), over the pool: the
// epilogue of the paths that compute the product first.
template <typename T>
struct EpilogueContext {
  T* out;
  Epilogue<T> e;
};

template <typename T>
void EpilogueBody(void* ctx, int64_t begin, int64_t end) {
  const auto& c = *static_cast<const EpilogueContext<T>*>(ctx);
  for (int64_t i = begin; i < end; ++i) c.out[i] = c.e.addend[i] + c.e.alpha * c.out[i];
}

template <typename T>
void ApplyEpilogue(T* out, int64_t count, const Epilogue<T>& e) {
  if (e.addend == nullptr) return;
  EpilogueContext<T> ctx{out, e};
  __xla_cpu_parallel_for(&EpilogueBody<T>, &ctx, count, int64_t{1} << 16);
}

// The block [i0, i1) x [j0, j1) of one product, on the calling thread
// (Eigen's blocked GEMM, or GEMV for a single row or column). A transposed
// row-major operand is the same memory read as column-major.
template <typename T, typename LhsStorage, typename RhsStorage>
void MatmulBlockAs(const T* lhs, const T* rhs, T* out, int64_t m, int64_t k, int64_t n,
                   int64_t i0, int64_t i1, int64_t j0, int64_t j1, const Epilogue<T>& e) {
  using Stride = Eigen::OuterStride<>;
  constexpr bool kLhsRowMajor = static_cast<bool>(LhsStorage::IsRowMajor);
  constexpr bool kRhsRowMajor = static_cast<bool>(RhsStorage::IsRowMajor);
  Eigen::Map<const LhsStorage, 0, Stride> a(kLhsRowMajor ? lhs + i0 * k : lhs + i0, i1 - i0, k,
                                            Stride(kLhsRowMajor ? k : m));
  Eigen::Map<const RhsStorage, 0, Stride> b(kRhsRowMajor ? rhs + j0 : rhs + j0 * k, k, j1 - j0,
                                            Stride(kRhsRowMajor ? n : k));
  Eigen::Map<RowMajorMatrix<T>, 0, Stride> c(out + i0 * n + j0, i1 - i0, j1 - j0, Stride(n));
  SerialGemm(c, a, b, /*accumulate=*/false, e.At(i0 * n + j0).addend, e.alpha,
             /*whole_macs=*/m * k * n);
}

template <typename T>
void MatmulBlock(const T* lhs, const T* rhs, T* out, int64_t m, int64_t k, int64_t n,
                 bool transpose_lhs, bool transpose_rhs, int64_t i0, int64_t i1, int64_t j0,
                 int64_t j1, const Epilogue<T>& e) {
  if (transpose_lhs) {
    if (transpose_rhs) {
      MatmulBlockAs<T, ColMajorMatrix<T>, ColMajorMatrix<T>>(lhs, rhs, out, m, k, n, i0, i1, j0, j1,
                                                             e);
    } else {
      MatmulBlockAs<T, ColMajorMatrix<T>, RowMajorMatrix<T>>(lhs, rhs, out, m, k, n, i0, i1, j0, j1,
                                                             e);
    }
  } else if (transpose_rhs) {
    MatmulBlockAs<T, RowMajorMatrix<T>, ColMajorMatrix<T>>(lhs, rhs, out, m, k, n, i0, i1, j0, j1,
                                                           e);
  } else {
    MatmulBlockAs<T, RowMajorMatrix<T>, RowMajorMatrix<T>>(lhs, rhs, out, m, k, n, i0, i1, j0, j1,
                                                           e);
  }
}

template <typename T>
void MatmulSerial(const T* lhs, const T* rhs, T* out, int64_t m, int64_t k, int64_t n,
                  bool transpose_lhs, bool transpose_rhs, const Epilogue<T>& e) {
  MatmulBlock(lhs, rhs, out, m, k, n, transpose_lhs, transpose_rhs, 0, m, 0, n, e);
}

// One product over the pool: Eigen's tensor contraction on a ThreadPoolDevice
// (it blocks the caller and shards the blocked GEMM over the workers).
template <typename T>
void MatmulParallel(int num_threads, const T* lhs, const T* rhs, T* out, int64_t m, int64_t k,
                    int64_t n, bool transpose_lhs, bool transpose_rhs) {
  using Index = Eigen::Index;
  Eigen::TensorMap<Eigen::Tensor<const T, 2, Eigen::RowMajor>> a(
      lhs, transpose_lhs ? k : m, transpose_lhs ? m : k);
  Eigen::TensorMap<Eigen::Tensor<const T, 2, Eigen::RowMajor>> b(
      rhs, transpose_rhs ? n : k, transpose_rhs ? k : n);
  Eigen::TensorMap<Eigen::Tensor<T, 2, Eigen::RowMajor>> c(out, m, n);
  const Eigen::array<Eigen::IndexPair<Index>, 1> dims = {
      Eigen::IndexPair<Index>(transpose_lhs ? 0 : 1, transpose_rhs ? 1 : 0)};
  PoolAdapter pool;
  Eigen::ThreadPoolDevice device(&pool, num_threads);
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
  Epilogue<T> e;
};

template <typename T>
void MatmulSplitBody(void* ctx, int64_t begin, int64_t end) {
  const auto& c = *static_cast<const SplitContext<T>*>(ctx);
  if (c.split_rows) {
    MatmulBlock(c.lhs, c.rhs, c.out, c.m, c.k, c.n, c.transpose_lhs, c.transpose_rhs, begin, end,
                0, c.n, c.e);
  } else {
    MatmulBlock(c.lhs, c.rhs, c.out, c.m, c.k, c.n, c.transpose_lhs, c.transpose_rhs, 0, c.m,
                begin, end, c.e);
  }
}

template <typename T>
void MatmulSplit(const T* lhs, const T* rhs, T* out, int64_t m, int64_t k, int64_t n,
                 bool transpose_lhs, bool transpose_rhs, const Epilogue<T>& e,
                 int64_t parts = 0) {
  SplitContext<T> ctx{lhs, rhs, out, m, k, n, transpose_lhs, transpose_rhs, m >= n, e};
  const int64_t extent = m >= n ? m : n;
  const int64_t macs_per_unit = k * (m >= n ? n : m);
  // Blocks of >= 8 rows or columns keep Eigen's kernels on full panels; of
  // half the parallel threshold's work, so that a matrix-vector product
  // just above it still splits into enough blocks to share evenly.
  int64_t min_chunk =
      std::max<int64_t>(8, kMinParallelMacs / 2 / std::max<int64_t>(1, macs_per_unit));
  if (parts > 0) {  // exactly `parts` slabs, multiples of 16 but the last
    min_chunk = std::max(min_chunk, ((extent + parts - 1) / parts + 15) / 16 * 16);
  }
  __xla_cpu_parallel_for(&MatmulSplitBody<T>, &ctx, extent, min_chunk);
}

// Vector-matrix products in the axpy form: out[len] = sum_p vec[p] * rows[p, :]
// for a row-major [k, len] `rows` (x A with A row-major, or A x with A stored
// transposed). Split into `parts` blocks of whole rows, each a GEMV over
// contiguous memory into its own partial result, summed in block order
// afterwards: each block streams its rows, where a split of the columns
// makes every block read a narrow strip of each row (measured here, 1200 x
// 1000 f64 on one thread: 120 us in row blocks, 150 us in 218-column
// strips). `parts` depends on the shape only, so results do not depend on
// the number of threads.
constexpr int64_t kMaxVectorParts = 8;
constexpr int64_t kMinVectorPartRows = 16;

int64_t VectorParts(int64_t k, int64_t len) {
  // Blocks of half the parallel threshold's work: up to 8 for 2, 4 or 8
  // threads to share evenly.
  const int64_t by_work = 2 * k * len / kMinParallelMacs;
  return std::max<int64_t>(1, std::min({kMaxVectorParts, by_work, k / kMinVectorPartRows}));
}

template <typename T>
struct VectorRowsContext {
  const T* vec;
  const T* rows;
  T* out;
  T* partials;  // parts - 1 partial results of len elements: blocks 1, 2, ...
  int64_t k, len, parts;
};

template <typename T>
void VectorRowsBody(void* ctx, int64_t begin, int64_t end) {
  const auto& c = *static_cast<const VectorRowsContext<T>*>(ctx);
  for (int64_t p = begin; p < end; ++p) {
    const int64_t i0 = c.k * p / c.parts, i1 = c.k * (p + 1) / c.parts;
    Eigen::Map<const RowMajorMatrix<T>> v(c.vec + i0, 1, i1 - i0);
    Eigen::Map<const RowMajorMatrix<T>> r(c.rows + i0 * c.len, i1 - i0, c.len);
    Eigen::Map<RowMajorMatrix<T>> o(p == 0 ? c.out : c.partials + (p - 1) * c.len, 1, c.len);
    o.noalias() = v * r;
  }
}

template <typename T>
void MatmulVectorRows(const T* vec, const T* rows, T* out, int64_t k, int64_t len) {
  const int64_t parts = VectorParts(k, len);
  std::vector<T> partials(static_cast<size_t>((parts - 1) * len));
  VectorRowsContext<T> ctx{vec, rows, out, partials.data(), k, len, parts};
  __xla_cpu_parallel_for(&VectorRowsBody<T>, &ctx, parts, 1);
  Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>> sum(out, len);
  for (int64_t p = 1; p < parts; ++p) {
    sum += Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>(partials.data() + (p - 1) * len, len);
  }
}

// A x for a row-major [m, k] A of at most kMaxRowDotColumns columns (real
// and integer types; complex products stay Eigen's): one
// short dot product per row, over p in increasing order, four rows at a
// time. Eigen's GEMV reads such narrow rows slowly (2000 x 6 f64, one
// thread, here: 13 us, where these loops take about 3.5 and NumPy 4.7).
constexpr int64_t kMaxRowDotColumns = 16;

template <typename T>
void MatmulRowDots(const T* lhs, const T* vec, T* out, int64_t m, int64_t k) {
  int64_t i = 0;
  for (; i + 4 <= m; i += 4) {
    const T* r = lhs + i * k;
    T a0 = T(0), a1 = T(0), a2 = T(0), a3 = T(0);
    for (int64_t p = 0; p < k; ++p) {
      const T v = vec[p];
      a0 += r[p] * v;
      a1 += r[k + p] * v;
      a2 += r[2 * k + p] * v;
      a3 += r[3 * k + p] * v;
    }
    out[i] = a0;
    out[i + 1] = a1;
    out[i + 2] = a2;
    out[i + 3] = a3;
  }
  for (; i < m; ++i) {
    const T* r = lhs + i * k;
    T a = T(0);
    for (int64_t p = 0; p < k; ++p) a += r[p] * vec[p];
    out[i] = a;
  }
}

template <typename T>
struct BatchContext {
  const T* lhs;
  const T* rhs;
  T* out;
  int64_t m, k, n;
  bool transpose_lhs, transpose_rhs;
  Epilogue<T> e;
};

template <typename T>
void MatmulBatchBody(void* ctx, int64_t begin, int64_t end) {
  const auto& c = *static_cast<const BatchContext<T>*>(ctx);
  for (int64_t b = begin; b < end; ++b) {
    MatmulSerial(c.lhs + b * c.m * c.k, c.rhs + b * c.k * c.n, c.out + b * c.m * c.n, c.m, c.k,
                 c.n, c.transpose_lhs, c.transpose_rhs, c.e.At(b * c.m * c.n));
  }
}

template <typename T>
void Matmul(const T* lhs, const T* rhs, T* out, int64_t batch, int64_t m, int64_t k, int64_t n,
            bool transpose_lhs, bool transpose_rhs, const Epilogue<T>& e = {}) {
  if (batch <= 0 || m <= 0 || n <= 0) return;
  if (k <= 0) {
    std::fill(out, out + batch * m * n, T(0));
    ApplyEpilogue(out, batch * m * n, e);
    return;
  }
  if (batch == 1 && m == 1 && !transpose_rhs) {  // x A, A row-major
    MatmulVectorRows(lhs, rhs, out, k, n);
    ApplyEpilogue(out, n, e);
    return;
  }
  if (batch == 1 && n == 1 && transpose_lhs) {  // A x, A stored transposed
    MatmulVectorRows(rhs, lhs, out, k, m);
    ApplyEpilogue(out, m, e);
    return;
  }
  const int64_t threads = ThreadsForCaller();
  const int64_t macs = m * k * n;
  if (threads <= 1 || macs * batch < kMinParallelMacs) {
    if (std::is_arithmetic<T>::value && batch == 1 && n == 1 && !transpose_lhs &&
        k <= kMaxRowDotColumns) {
      MatmulRowDots(lhs, rhs, out, m, k);
      ApplyEpilogue(out, m, e);
      return;
    }
    for (int64_t b = 0; b < batch; ++b) {
      MatmulSerial(lhs + b * m * k, rhs + b * k * n, out + b * m * n, m, k, n, transpose_lhs,
                   transpose_rhs, e.At(b * m * n));
    }
    return;
  }
  if (batch > 1 && (macs < kMinParallelMacs * threads || batch % threads == 0 ||
                    batch >= 4 * threads)) {
    // Products spread evenly over the threads, or many small ones: whole
    // products per task, each serial.
    BatchContext<T> ctx{lhs, rhs, out, m, k, n, transpose_lhs, transpose_rhs, e};
    __xla_cpu_parallel_for(&MatmulBatchBody<T>, &ctx, batch,
                           std::max<int64_t>(1, kMinParallelMacs / macs));
    return;
  }
  if (std::min(m, n) < kMinContractionDim) {
    for (int64_t b = 0; b < batch; ++b) {
      MatmulSplit(lhs + b * m * k, rhs + b * k * n, out + b * m * n, m, k, n, transpose_lhs,
                  transpose_rhs, e.At(b * m * n));
    }
    return;
  }
  for (int64_t b = 0; b < batch; ++b) {
    if (std::max(m, n) >= kSlabAspect * std::min(m, n) ||
        (kPackedF32<T> && threads <= kMaxPackedSlabThreads && macs >= kPackedMinMacs)) {
      // One serial GEMM per thread on a slab of the larger dimension, for
      // wide, thin products. Measured against the contraction's 2-D
      // sharding here (2 threads, medians of 15, 3 runs each):
      // 256x1024x4096 5-8% faster, 256x4096x1024 level; square products
      // (512^3 to 1024^3) and 2048x512x2048 2-6% slower.
      MatmulSplit(lhs + b * m * k, rhs + b * k * n, out + b * m * n, m, k, n, transpose_lhs,
                  transpose_rhs, e.At(b * m * n), threads);
      continue;
    }
    MatmulParallel(static_cast<int>(threads), lhs + b * m * k, rhs + b * k * n, out + b * m * n,
                   m, k, n, transpose_lhs, transpose_rhs);
    ApplyEpilogue(out + b * m * n, m * n, e.At(b * m * n));
  }
}

}  // namespace

void MatmulF32(const float* lhs, const float* rhs, float* out, int64_t batch, int64_t m, int64_t k,
               int64_t n, bool transpose_lhs, bool transpose_rhs) {
  Matmul(lhs, rhs, out, batch, m, k, n, transpose_lhs, transpose_rhs);
}

void MatmulAddendF32(const float* lhs, const float* rhs, float* out, int64_t batch, int64_t m,
                     int64_t k, int64_t n, bool transpose_lhs, bool transpose_rhs,
                     const float* addend, float alpha) {
  Matmul(lhs, rhs, out, batch, m, k, n, transpose_lhs, transpose_rhs,
         Epilogue<float>{addend, alpha});
}

void MatmulF64(const double* lhs, const double* rhs, double* out, int64_t batch, int64_t m,
               int64_t k, int64_t n, bool transpose_lhs, bool transpose_rhs) {
  Matmul(lhs, rhs, out, batch, m, k, n, transpose_lhs, transpose_rhs);
}

// MatmulS32: matmul_s32.cc.

void MatmulC64(const void* lhs, const void* rhs, void* out, int64_t batch, int64_t m, int64_t k,
               int64_t n, bool transpose_lhs, bool transpose_rhs) {
  using C = std::complex<float>;
  Matmul(static_cast<const C*>(lhs), static_cast<const C*>(rhs), static_cast<C*>(out), batch, m,
         k, n, transpose_lhs, transpose_rhs);
}

void MatmulC128(const void* lhs, const void* rhs, void* out, int64_t batch, int64_t m, int64_t k,
                int64_t n, bool transpose_lhs, bool transpose_rhs) {
  using C = std::complex<double>;
  Matmul(static_cast<const C*>(lhs), static_cast<const C*>(rhs), static_cast<C*>(out), batch, m,
         k, n, transpose_lhs, transpose_rhs);
}

}  // namespace XLA_CPU_ISA_NAMESPACE
}  // namespace xla_cpu_runtime
