// The tiled GEMM for small and strided f32/f64 products (cpu_runtime.h,
// __xla_cpu_tiled_gemm_*): the walk of the CPU backend's LLVM tiled kernel
// (xla/backends/cpu/emit_small_gemm.py) compiled once, ahead of time, per
// ISA variant, so that a program with such products compiles no kernel for
// them (each took LLVM 11-24 ms; attention's four took half of its compile).
//
// For each block of kMR rows and kNV vectors of columns of the result,
// kMR x kNV vector accumulators start at zero; for p = 0..k-1 the kNV
// vectors of row p of the vector operand are loaded once and
// a[i, p] * b[p, j:j+L] is added to each row's accumulators with one fused
// multiply-add where the ISA has it (the avx2 and avx512 variants; the
// baseline multiplies and adds, as LLVM's fmuladd does on such a target);
// then the block is stored. Every element is the sum over p in increasing
// order, computed by the same instructions whichever block, thread or
// vector width computes it: the bits do not depend on the thread count or
// the tiling, and equal the LLVM kernel's on the same host. The last row
// block starts at m - kMR (overlapping the one before, which stores the
// same values there); columns past the last whole block of kNV vectors take
// a block of as many vectors as they need, placed at n minus their width;
// a product of fewer columns than a block takes one block whose last
// vector is loaded and stored masked (the baseline: element by element).
//
// Products beyond the kernel's limits (strided_gemm.py's `blocked` walks:
// attention's per-head products at long sequences) go to the blocked GEMM
// instead (SerialGemm: packed_gemm.h for large f32 products on AVX-512,
// else Eigen's), on Eigen maps with the walk's strides: no operand is
// copied into a dense layout first. See BlockedProducts.
#include "xla/backends/cpu/runtime/isa_variant.h"

#include <algorithm>
#include <cstdint>

#if defined(__AVX2__) || defined(__AVX512F__)
#include <immintrin.h>
#endif

#include "xla/backends/cpu/runtime/cpu_runtime.h"
#include "xla/backends/cpu/runtime/kernels.h"

namespace xla_cpu_runtime {
namespace XLA_CPU_ISA_NAMESPACE {
namespace {

constexpr int kMR = 4;  // rows per block (emit_small_gemm's MR)
constexpr int kNV = 3;  // vectors per row: 12 accumulators fit AVX2's 16 registers

// One vector of T and what the kernel does with it.
template <typename T>
struct Ops;

#if defined(__AVX512F__)
template <>
struct Ops<float> {
  using V = __m512;
  using Mask = __mmask16;
  static constexpr int kLanes = 16;
  static V Zero() { return _mm512_setzero_ps(); }
  static V Load(const float* p) { return _mm512_loadu_ps(p); }
  static void Store(float* p, V v) { _mm512_storeu_ps(p, v); }
  static V Broadcast(float x) { return _mm512_set1_ps(x); }
  static V Fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static Mask FirstLanes(int n) { return static_cast<Mask>((1u << n) - 1); }
  static V LoadMasked(const float* p, Mask m) { return _mm512_maskz_loadu_ps(m, p); }
  static void StoreMasked(float* p, V v, Mask m) { _mm512_mask_storeu_ps(p, m, v); }
};
template <>
struct Ops<double> {
  using V = __m512d;
  using Mask = __mmask8;
  static constexpr int kLanes = 8;
  static V Zero() { return _mm512_setzero_pd(); }
  static V Load(const double* p) { return _mm512_loadu_pd(p); }
  static void Store(double* p, V v) { _mm512_storeu_pd(p, v); }
  static V Broadcast(double x) { return _mm512_set1_pd(x); }
  static V Fma(V a, V b, V c) { return _mm512_fmadd_pd(a, b, c); }
  static Mask FirstLanes(int n) { return static_cast<Mask>((1u << n) - 1); }
  static V LoadMasked(const double* p, Mask m) { return _mm512_maskz_loadu_pd(m, p); }
  static void StoreMasked(double* p, V v, Mask m) { _mm512_mask_storeu_pd(p, m, v); }
};
#elif defined(__AVX2__)
template <>
struct Ops<float> {
  using V = __m256;
  using Mask = __m256i;
  static constexpr int kLanes = 8;
  static V Zero() { return _mm256_setzero_ps(); }
  static V Load(const float* p) { return _mm256_loadu_ps(p); }
  static void Store(float* p, V v) { _mm256_storeu_ps(p, v); }
  static V Broadcast(float x) { return _mm256_set1_ps(x); }
  static V Fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static Mask FirstLanes(int n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  static V LoadMasked(const float* p, Mask m) { return _mm256_maskload_ps(p, m); }
  static void StoreMasked(float* p, V v, Mask m) { _mm256_maskstore_ps(p, m, v); }
};
template <>
struct Ops<double> {
  using V = __m256d;
  using Mask = __m256i;
  static constexpr int kLanes = 4;
  static V Zero() { return _mm256_setzero_pd(); }
  static V Load(const double* p) { return _mm256_loadu_pd(p); }
  static void Store(double* p, V v) { _mm256_storeu_pd(p, v); }
  static V Broadcast(double x) { return _mm256_set1_pd(x); }
  static V Fma(V a, V b, V c) { return _mm256_fmadd_pd(a, b, c); }
  static Mask FirstLanes(int n) {
    return _mm256_cmpgt_epi64(_mm256_set1_epi64x(n), _mm256_setr_epi64x(0, 1, 2, 3));
  }
  static V LoadMasked(const double* p, Mask m) { return _mm256_maskload_pd(p, m); }
  static void StoreMasked(double* p, V v, Mask m) { _mm256_maskstore_pd(p, m, v); }
};
#else
// Any target: 16-byte vectors of the compiler's vector extension; partial
// vectors element by element.
template <typename T>
struct GenericOps {
  typedef T V __attribute__((vector_size(16)));
  using Mask = int;  // lanes that exist
  static constexpr int kLanes = 16 / sizeof(T);
  static V Zero() { return V{}; }
  static V Load(const T* p) {
    V v;
    __builtin_memcpy(&v, p, sizeof(V));
    return v;
  }
  static void Store(T* p, V v) { __builtin_memcpy(p, &v, sizeof(V)); }
  static V Broadcast(T x) { return V{} + x; }
  static V Fma(V a, V b, V c) { return a * b + c; }
  static Mask FirstLanes(int n) { return n; }
  static V LoadMasked(const T* p, Mask m) {
    V v = V{};
    for (int i = 0; i < m; ++i) v[i] = p[i];
    return v;
  }
  static void StoreMasked(T* p, V v, Mask m) {
    for (int i = 0; i < m; ++i) p[i] = v[i];
  }
};
template <>
struct Ops<float> : GenericOps<float> {};
template <>
struct Ops<double> : GenericOps<double> {};
#endif

// The walk over one call's products (cpu_runtime.h documents `walk`).
constexpr int kMaxBatchRank = 8;
template <typename T>
struct Walk {
  const T* a;  // the scalar operand: a[i, p] at i * a_row + p * a_col
  const T* b;  // the vector operand: b[p, j] at p * b_row + j
  T* c;        // the result: c[i, j] at i * c_row + j
  int64_t m, k, n, a_row, a_col, b_row, c_row;
  int rank;
  int64_t sizes[kMaxBatchRank], a_batch[kMaxBatchRank], b_batch[kMaxBatchRank],
      c_batch[kMaxBatchRank];
  int64_t row_blocks;
  // The blocked walk (BlockedProducts): each product in `slabs` slabs of
  // `slab_rows` rows (the last shorter); b[p, j] at b + p * b_row + j * b_col
  // (b_row or b_col 1).
  int64_t slabs, slab_rows, b_col = 1;
};

// Rows [0, kRows) and vectors [0, kVecs) of columns of one block, the last
// vector masked to `mask` when kMasked.
template <typename T, int kRows, int kVecs, bool kMasked>
inline void Tile(const T* a, int64_t a_row, int64_t a_col, const T* b, int64_t b_row, T* c,
                 int64_t c_row, int64_t k, typename Ops<T>::Mask mask) {
  using O = Ops<T>;
  using V = typename O::V;
  V acc[kRows][kVecs];
#pragma GCC unroll 4
  for (int r = 0; r < kRows; ++r) {
#pragma GCC unroll 3
    for (int v = 0; v < kVecs; ++v) acc[r][v] = O::Zero();
  }
  for (int64_t p = 0; p < k; ++p) {
    const T* bp = b + p * b_row;
    const T* ap = a + p * a_col;
    V bv[kVecs];
#pragma GCC unroll 3
    for (int v = 0; v < kVecs; ++v) {
      bv[v] = (kMasked && v == kVecs - 1) ? O::LoadMasked(bp + v * O::kLanes, mask)
                                           : O::Load(bp + v * O::kLanes);
    }
#pragma GCC unroll 4
    for (int r = 0; r < kRows; ++r) {
      const V x = O::Broadcast(ap[r * a_row]);
#pragma GCC unroll 3
      for (int v = 0; v < kVecs; ++v) acc[r][v] = O::Fma(x, bv[v], acc[r][v]);
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < kRows; ++r) {
#pragma GCC unroll 3
    for (int v = 0; v < kVecs; ++v) {
      T* cp = c + r * c_row + v * O::kLanes;
      if (kMasked && v == kVecs - 1) {
        O::StoreMasked(cp, acc[r][v], mask);
      } else {
        O::Store(cp, acc[r][v]);
      }
    }
  }
}

// A block of kRows rows and `vecs` (1..kNV) vectors at column j.
template <typename T, int kRows>
inline void Columns(const Walk<T>& w, const T* a, const T* b, T* c, int vecs, int64_t j,
                    bool masked, typename Ops<T>::Mask mask) {
  b += j;
  c += j;
#define XLA_TILE(V, M) Tile<T, kRows, V, M>(a, w.a_row, w.a_col, b, w.b_row, c, w.c_row, w.k, mask)
  if (masked) {
    if (vecs == 1) XLA_TILE(1, true);
    else if (vecs == 2) XLA_TILE(2, true);
    else XLA_TILE(3, true);
  } else {
    if (vecs == 1) XLA_TILE(1, false);
    else if (vecs == 2) XLA_TILE(2, false);
    else XLA_TILE(3, false);
  }
#undef XLA_TILE
}

// One block of kRows rows (a and c at its first row), every column.
template <typename T, int kRows>
void RowBlock(const Walk<T>& w, const T* a, const T* b, T* c) {
  using O = Ops<T>;
  constexpr int64_t kL = O::kLanes;
  constexpr int64_t kNR = kNV * kL;
  const typename O::Mask none = O::FirstLanes(static_cast<int>(kL));
  if (w.n < kNR) {
    const int vecs = static_cast<int>((w.n + kL - 1) / kL);
    const int tail = static_cast<int>(w.n - (vecs - 1) * kL);
    Columns<T, kRows>(w, a, b, c, vecs, 0, tail != kL, O::FirstLanes(tail));
    return;
  }
  const int64_t whole = w.n / kNR;
  for (int64_t jb = 0; jb < whole; ++jb) Columns<T, kRows>(w, a, b, c, kNV, jb * kNR, false, none);
  const int64_t rest = w.n - whole * kNR;
  if (rest > 0) {
    const int vecs = static_cast<int>((rest + kL - 1) / kL);
    Columns<T, kRows>(w, a, b, c, vecs, w.n - vecs * kL, false, none);
  }
}

// The element offsets of product `product` (row-major over the batch sizes)
// in a, b and c.
template <typename T>
inline void ProductOffsets(const Walk<T>& w, int64_t product, int64_t& a_off, int64_t& b_off,
                           int64_t& c_off) {
  a_off = b_off = c_off = 0;
  for (int d = w.rank - 1; d >= 0; --d) {
    const int64_t position = product % w.sizes[d];
    product /= w.sizes[d];
    a_off += position * w.a_batch[d];
    b_off += position * w.b_batch[d];
    c_off += position * w.c_batch[d];
  }
}

// Blocks [begin, end) of the row blocks of every product, products major;
// each product's offsets computed once per range (run-time divisions).
template <typename T>
void Blocks(const Walk<T>& w, int64_t begin, int64_t end) {
  int64_t block = begin;
  while (block < end) {
    const int64_t product = block / w.row_blocks;
    const int64_t stop = std::min(end, (product + 1) * w.row_blocks);
    int64_t a_off, b_off, c_off;
    ProductOffsets(w, product, a_off, b_off, c_off);
    const T* a = w.a + a_off;
    const T* b = w.b + b_off;
    T* c = w.c + c_off;
    if (w.m < kMR) {  // one block of the rows there are
      if (w.m == 1) RowBlock<T, 1>(w, a, b, c);
      else if (w.m == 2) RowBlock<T, 2>(w, a, b, c);
      else RowBlock<T, 3>(w, a, b, c);
      block = stop;
      continue;
    }
    for (int64_t ib = block % w.row_blocks; block < stop; ++block, ++ib) {
      const int64_t i0 = std::min(ib * kMR, w.m - kMR);
      RowBlock<T, kMR>(w, a + i0 * w.a_row, b, c + i0 * w.c_row);
    }
  }
}

template <typename T>
void BlocksBody(void* walk, int64_t begin, int64_t end) {
  Blocks(*static_cast<const Walk<T>*>(walk), begin, end);
}

// The blocked walk: units [begin, end) of (product, row slab), products
// major, each a SerialGemm on maps of its rows of `a` and `c` and all of
// `b`. The scalar operand has a unit stride along rows or along columns
// (strided_gemm.plan checks it), the vector operand and the result along
// columns.
template <typename T>
void BlockedUnits(const Walk<T>& w, int64_t begin, int64_t end) {
  using Stride = Eigen::OuterStride<>;
  for (int64_t unit = begin; unit < end; ++unit) {
    const int64_t i0 = unit % w.slabs * w.slab_rows;
    const int64_t rows = std::min(w.slab_rows, w.m - i0);
    int64_t a_off, b_off, c_off;
    ProductOffsets(w, unit / w.slabs, a_off, b_off, c_off);
    const T* a = w.a + a_off + i0 * w.a_row;
    const T* b = w.b + b_off;
    Eigen::Map<RowMajorMatrix<T>, 0, Stride> c(w.c + c_off + i0 * w.c_row, rows, w.n,
                                               Stride(w.c_row));
    auto with_b = [&](const auto& lhs) {
      if (w.b_col == 1) {
        SerialGemm(c, lhs, Eigen::Map<const RowMajorMatrix<T>, 0, Stride>(b, w.k, w.n,
                                                                          Stride(w.b_row)),
                   /*accumulate=*/false);
      } else {
        SerialGemm(c, lhs, Eigen::Map<const ColMajorMatrix<T>, 0, Stride>(b, w.k, w.n,
                                                                          Stride(w.b_col)),
                   /*accumulate=*/false);
      }
    };
    if (w.a_col == 1) {
      with_b(Eigen::Map<const RowMajorMatrix<T>, 0, Stride>(a, rows, w.k, Stride(w.a_row)));
    } else {
      with_b(Eigen::Map<const ColMajorMatrix<T>, 0, Stride>(a, rows, w.k, Stride(w.a_col)));
    }
  }
}

template <typename T>
void BlockedUnitsBody(void* walk, int64_t begin, int64_t end) {
  BlockedUnits(*static_cast<const Walk<T>*>(walk), begin, end);
}

// Fewer products than this are split into row slabs (of at least
// kMinSlabRows rows, multiples of 16) so that a pool has work for every
// thread. The slabs depend on the shape only: each element is computed by
// the same call whatever the thread count, so the bits do not depend on it.
constexpr int64_t kMinBlockedUnits = 8;
constexpr int64_t kMinSlabRows = 64;

template <typename T>
void BlockedProducts(Walk<T>& w, int64_t products, int64_t min_chunk) {
  int64_t slabs = 1;
  if (products < kMinBlockedUnits) {
    slabs = std::min((kMinBlockedUnits + products - 1) / products,
                     std::max<int64_t>(1, w.m / kMinSlabRows));
  }
  w.slab_rows = ((w.m + slabs - 1) / slabs + 15) / 16 * 16;
  w.slabs = (w.m + w.slab_rows - 1) / w.slab_rows;
  const int64_t units = products * w.slabs;
  if (min_chunk > 0 && units > 1) {
    __xla_cpu_parallel_for(&BlockedUnitsBody<T>, &w, units, 1);
  } else {
    BlockedUnits(w, 0, units);
  }
}

template <typename T>
void TiledGemm(const T* a, const T* b, T* c, const int64_t* walk, int64_t min_chunk) {
  Walk<T> w;
  w.a = a;
  w.b = b;
  w.c = c;
  w.m = walk[0];
  w.k = walk[1];
  w.n = walk[2];
  w.a_row = walk[3];
  w.a_col = walk[4];
  w.b_row = walk[5];
  w.c_row = walk[6];
  w.rank = static_cast<int>(std::min<int64_t>(std::max<int64_t>(walk[7], 0), kMaxBatchRank));
  int64_t products = 1;
  for (int d = 0; d < w.rank; ++d) {
    w.sizes[d] = walk[8 + d];
    w.a_batch[d] = walk[8 + w.rank + d];
    w.b_batch[d] = walk[8 + 2 * w.rank + d];
    w.c_batch[d] = walk[8 + 3 * w.rank + d];
    products *= w.sizes[d];
  }
  if (w.m <= 0 || w.n <= 0 || w.k < 0 || products <= 0) return;
  if (walk[8 + 4 * w.rank] != 0) {
    w.b_col = walk[9 + 4 * w.rank];
    BlockedProducts(w, products, min_chunk);
    return;
  }
  w.row_blocks = w.m < kMR ? 1 : (w.m + kMR - 1) / kMR;
  const int64_t blocks = products * w.row_blocks;
  if (min_chunk > 0 && blocks > min_chunk) {
    __xla_cpu_parallel_for(&BlocksBody<T>, &w, blocks, min_chunk);
  } else {
    Blocks(w, 0, blocks);
  }
}

}  // namespace

void TiledGemmF32(const float* a, const float* b, float* c, const int64_t* walk,
                  int64_t min_chunk) {
  TiledGemm(a, b, c, walk, min_chunk);
}

void TiledGemmF64(const double* a, const double* b, double* c, const int64_t* walk,
                  int64_t min_chunk) {
  TiledGemm(a, b, c, walk, min_chunk);
}

}  // namespace XLA_CPU_ISA_NAMESPACE
}  // namespace xla_cpu_runtime
