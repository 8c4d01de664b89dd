// The CPU runtime's s32 matrix product (__xla_cpu_matmul_s32, see
// cpu_runtime.h): sums wrapping modulo 2^32 (this unit is compiled with
// -fwrapv, and vector lanes wrap), in the variant's widest integer vectors.
// Eigen's GEMM has no vectorized kernel for int (its gebp ran 2 x 4 scalar
// tiles: 256^3 ~1.3 ms on the 2-core EPYC, XLA:CPU ~0.43); here each row
// of the result is a sum of B's rows scaled by the row of A, in register
// tiles of 4 rows x 4 vectors of columns: one broadcast of A per row and
// one load of B per vector, a multiply (vpmulld) and an add per vector.
// Per task a range of row tiles; per column panel of B (4 vectors wide,
// all of k: it stays in L2 while the task's row tiles pass over it) the
// tiles in turn. Each element is one thread's sum over p in order. An ISA
// variant unit (kernels.h, isa_variant.h).
#include "xla/backends/cpu/runtime/isa_variant.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#if defined(__AVX2__) || defined(__AVX512F__)
#include <immintrin.h>
#endif

#include "xla/backends/cpu/runtime/cpu_runtime.h"

namespace xla_cpu_runtime {
namespace XLA_CPU_ISA_NAMESPACE {
namespace {

// The variant's widest vector of int32 (Eigen's packet for int is 4 lanes
// on every x86 variant): 16 lanes with AVX-512, 8 with AVX2.
#if defined(__AVX512F__)
using Packet = __m512i;
constexpr int kLanes = 16;
inline Packet Load(const int32_t* p) { return _mm512_loadu_si512(p); }
inline void Store(int32_t* p, Packet v) { _mm512_storeu_si512(p, v); }
inline Packet Zero() { return _mm512_setzero_si512(); }
inline Packet Madd(int32_t a, Packet b, Packet acc) {
  return _mm512_add_epi32(acc, _mm512_mullo_epi32(_mm512_set1_epi32(a), b));
}
#elif defined(__AVX2__)
using Packet = __m256i;
constexpr int kLanes = 8;
inline Packet Load(const int32_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
inline void Store(int32_t* p, Packet v) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v); }
inline Packet Zero() { return _mm256_setzero_si256(); }
inline Packet Madd(int32_t a, Packet b, Packet acc) {
  return _mm256_add_epi32(acc, _mm256_mullo_epi32(_mm256_set1_epi32(a), b));
}
#else
using Packet = typename Eigen::internal::packet_traits<int32_t>::type;
constexpr int kLanes = Eigen::internal::unpacket_traits<Packet>::size;
inline Packet Load(const int32_t* p) { return Eigen::internal::ploadu<Packet>(p); }
inline void Store(int32_t* p, Packet v) { Eigen::internal::pstoreu(p, v); }
inline Packet Zero() { return Eigen::internal::pset1<Packet>(0); }
inline Packet Madd(int32_t a, const Packet& b, const Packet& acc) {
  return Eigen::internal::padd(acc, Eigen::internal::pmul(Eigen::internal::pset1<Packet>(a), b));
}
#endif
constexpr int64_t kTileRows = 4;
constexpr int64_t kPanel = 4 * kLanes;   // columns per register tile

struct S32Context {
  const int32_t* lhs;   // per product [m, k], or [k, m] with transpose_lhs
  const int32_t* rhs;   // per product [k, n] (transposed ones copied so)
  int32_t* out;         // per product [m, n]
  int64_t m, k, n, tiles;  // tiles: row tiles per product
  bool transpose_lhs;
};

inline int32_t At(const S32Context& c, const int32_t* a, int64_t i, int64_t p) {
  return c.transpose_lhs ? a[p * c.m + i] : a[i * c.k + p];
}

// Rows i0..i0+3, columns j..j+kPanel of one product.
void FullTile(const S32Context& c, const int32_t* a, const int32_t* b, int32_t* out, int64_t i0,
              int64_t j) {
  const Packet z = Zero();
  Packet c00 = z, c01 = z, c02 = z, c03 = z, c10 = z, c11 = z, c12 = z, c13 = z;
  Packet c20 = z, c21 = z, c22 = z, c23 = z, c30 = z, c31 = z, c32 = z, c33 = z;
  for (int64_t p = 0; p < c.k; ++p) {
    const int32_t* row = b + p * c.n + j;
    const Packet b0 = Load(row), b1 = Load(row + kLanes), b2 = Load(row + 2 * kLanes),
                 b3 = Load(row + 3 * kLanes);
    const int32_t a0 = At(c, a, i0, p), a1 = At(c, a, i0 + 1, p), a2 = At(c, a, i0 + 2, p),
                  a3 = At(c, a, i0 + 3, p);
    c00 = Madd(a0, b0, c00); c01 = Madd(a0, b1, c01); c02 = Madd(a0, b2, c02); c03 = Madd(a0, b3, c03);
    c10 = Madd(a1, b0, c10); c11 = Madd(a1, b1, c11); c12 = Madd(a1, b2, c12); c13 = Madd(a1, b3, c13);
    c20 = Madd(a2, b0, c20); c21 = Madd(a2, b1, c21); c22 = Madd(a2, b2, c22); c23 = Madd(a2, b3, c23);
    c30 = Madd(a3, b0, c30); c31 = Madd(a3, b1, c31); c32 = Madd(a3, b2, c32); c33 = Madd(a3, b3, c33);
  }
  const Packet rows[4][4] = {{c00, c01, c02, c03}, {c10, c11, c12, c13},
                             {c20, c21, c22, c23}, {c30, c31, c32, c33}};
  for (int r = 0; r < 4; ++r) {
    for (int v = 0; v < 4; ++v) {
      Store(out + (i0 + r) * c.n + j + v * kLanes, rows[r][v]);
    }
  }
}

// One row, columns [j, j_end): vectors, then single elements.
void PartialRow(const S32Context& c, const int32_t* a, const int32_t* b, int32_t* out, int64_t i,
                int64_t j, int64_t j_end) {
  for (; j + kLanes <= j_end; j += kLanes) {
    Packet acc = Zero();
    for (int64_t p = 0; p < c.k; ++p) acc = Madd(At(c, a, i, p), Load(b + p * c.n + j), acc);
    Store(out + i * c.n + j, acc);
  }
  for (; j < j_end; ++j) {
    int32_t acc = 0;
    for (int64_t p = 0; p < c.k; ++p) acc += At(c, a, i, p) * b[p * c.n + j];
    out[i * c.n + j] = acc;
  }
}

void S32Tiles(void* ctx, int64_t begin, int64_t end) {
  const auto& c = *static_cast<const S32Context*>(ctx);
  while (begin < end) {
    // The tiles of one product in [begin, end).
    const int64_t product = begin / c.tiles;
    const int64_t first = begin % c.tiles, last = std::min(c.tiles, first + end - begin);
    const int32_t* a = c.lhs + product * c.m * c.k;
    const int32_t* b = c.rhs + product * c.k * c.n;
    int32_t* out = c.out + product * c.m * c.n;
    const int64_t full_n = c.n / kPanel * kPanel;
    for (int64_t j = 0; j < full_n; j += kPanel) {
      for (int64_t t = first; t < last; ++t) {
        const int64_t i0 = t * kTileRows;
        if (i0 + kTileRows <= c.m) {
          FullTile(c, a, b, out, i0, j);
        } else {
          for (int64_t i = i0; i < c.m; ++i) PartialRow(c, a, b, out, i, j, j + kPanel);
        }
      }
    }
    if (full_n < c.n) {
      for (int64_t t = first; t < last; ++t) {
        for (int64_t i = t * kTileRows; i < std::min(c.m, (t + 1) * kTileRows); ++i) {
          PartialRow(c, a, b, out, i, full_n, c.n);
        }
      }
    }
    begin += last - first;
  }
}

}  // namespace

void MatmulS32(const int32_t* lhs, const int32_t* rhs, int32_t* out, int64_t batch, int64_t m,
               int64_t k, int64_t n, bool transpose_lhs, bool transpose_rhs) {
  if (batch <= 0 || m <= 0 || n <= 0) return;
  if (k <= 0) {
    std::fill(out, out + batch * m * n, 0);
    return;
  }
  std::vector<int32_t> rows;
  if (transpose_rhs) {   // B stored [n, k]: its rows copied out as [k, n]
    rows.resize(static_cast<size_t>(batch * k * n));
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t j = 0; j < n; ++j) {
        for (int64_t p = 0; p < k; ++p) rows[(b * k + p) * n + j] = rhs[(b * n + j) * k + p];
      }
    }
    rhs = rows.data();
  }
  const int64_t tiles = (m + kTileRows - 1) / kTileRows;
  S32Context ctx{lhs, rhs, out, m, k, n, tiles, transpose_lhs};
  const int64_t macs_per_tile = kTileRows * k * n;
  __xla_cpu_parallel_for(&S32Tiles, &ctx, batch * tiles,
                         std::max<int64_t>(1, kMinParallelMacs / std::max<int64_t>(1, macs_per_tile)));
}

}  // namespace XLA_CPU_ISA_NAMESPACE
}  // namespace xla_cpu_runtime
