// The CPU runtime's low-precision matrix products (cpu_runtime.h):
// s8 x s8 -> s32 (__xla_cpu_matmul_s8_s32) and bf16 x bf16 -> f32
// (__xla_cpu_matmul_bf16_f32). An ISA variant unit (kernels.h,
// isa_variant.h); the C entry points that dispatch to a variant are in
// isa.cc.
//
// Two implementations, chosen at compile time per variant:
//
// * The dot-product variants run a blocked GEMM of their own on VPDPBUSD
//   (u8 x s8, four products per 32-bit lane; avx512_vnni and
//   avx512_vnni_bf16) and VDPBF16PS (bf16 pairs into f32; avx512_vnni_bf16
//   only). s8 x s8 becomes u8 x s8 by adding 128 to the packed rhs
//   (x ^ 0x80); each output row then holds 128 * sum_k lhs[i, k] too,
//   which is subtracted. All of it wraps modulo 2^32 like XLA's s32 sums,
//   so the result is exact. VDPBF16PS treats denormal inputs as zero and
//   flushes denormal results: where an operand has a denormal, or the
//   smallest nonzero magnitudes of the two operands could make a product
//   below 2^-126 (DotProductExact), the product takes the widened path
//   instead; otherwise every product of two elements is a multiple of
//   2^-126, so is every partial sum, and no denormal ever arises (the
//   result is f32 GEMM's, up to summation order).
// * The amx variant runs the same GEMM on AMX tiles where the product has
//   at least 16 rows (TDPBSSD: s8 x s8, so the rhs is packed as it is,
//   without the + 128 and the correction; TDPBF16PS, which flushes
//   denormals as VDPBF16PS does, so the same check for tiny elements
//   applies): per 32 x 32 block of the output, four accumulator tiles of
//   16 x 16, two lhs tiles of 16 rows and two rhs tiles, 16 k groups per
//   step (64 bytes of k). The rhs is packed in the same layout (a strip's
//   32 columns are two rhs tiles of 16, 128 bytes apart), with k groups
//   padded with zeros to a multiple of 16; the lhs rows are copied
//   row-major with zeros past m and k (a transposed lhs interleaved). Built
//   with XLA_CPU_AMX_EMULATE (amx_emulated_test only) the tile
//   instructions are computed in software, so the tiling is tested on any
//   CPU with avx512_vnni_bf16.
// * Otherwise the operands are widened (s8 to f32 while k <= 1024, where
//   every partial sum is an integer below 2^24, to f64 while they stay
//   below 2^31, else to s32; bf16 to f32) and the process's GEMM of that
//   type computes the product (__xla_cpu_matmul_f32/_f64/_s32: this
//   variant's, or avx512's for the avx512_vnni* variants, which have no
//   Eigen kernels of their own).
#include "xla/backends/cpu/runtime/isa_variant.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "xla/backends/cpu/runtime/cpu_runtime.h"

#if defined(__AVX512VNNI__) && defined(__AVX512BW__)
#include <immintrin.h>
#define XLA_CPU_DOT_PRODUCT_GEMM 1  // the s8 GEMM (avx512_vnni and wider)
#if defined(__AVX512BF16__)
#define XLA_CPU_BF16_GEMM 1  // and the bf16 one (avx512_vnni_bf16)
#if (defined(__AMX_TILE__) && defined(__AMX_INT8__) && defined(__AMX_BF16__)) || \
    defined(XLA_CPU_AMX_EMULATE)
#define XLA_CPU_TILE_GEMM 1  // both on AMX tiles (amx)
#endif
#endif
#endif

#if defined(XLA_CPU_TILE_GEMM)
#include "xla/backends/cpu/runtime/amx_tiles.h"
#endif

namespace xla_cpu_runtime {
namespace XLA_CPU_ISA_NAMESPACE {
namespace {

float Bf16ToF32(uint16_t bits) {
  const uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &wide, sizeof f);
  return f;
}

[[maybe_unused]] void WidenedS8(const int8_t* lhs, const int8_t* rhs, int32_t* out, int64_t batch,
                                int64_t m, int64_t k, int64_t n, bool transpose_lhs,
                                bool transpose_rhs) {
  const size_t lhs_size = static_cast<size_t>(batch * m * k);
  const size_t rhs_size = static_cast<size_t>(batch * k * n);
  if (k <= 1024) {  // |partial sums| <= 1024 * 2^14 = 2^24: exact in f32
    std::vector<float> a(lhs, lhs + lhs_size), b(rhs, rhs + rhs_size);
    std::vector<float> c(static_cast<size_t>(batch * m * n));
    __xla_cpu_matmul_f32(a.data(), b.data(), c.data(), batch, m, k, n, transpose_lhs,
                         transpose_rhs);
    for (size_t i = 0; i < c.size(); ++i) out[i] = static_cast<int32_t>(c[i]);
    return;
  }
  if (k < (int64_t{1} << 17)) {  // below 2^31: exact in f64
    std::vector<double> a(lhs, lhs + lhs_size), b(rhs, rhs + rhs_size);
    std::vector<double> c(static_cast<size_t>(batch * m * n));
    __xla_cpu_matmul_f64(a.data(), b.data(), c.data(), batch, m, k, n, transpose_lhs,
                         transpose_rhs);
    for (size_t i = 0; i < c.size(); ++i) out[i] = static_cast<int32_t>(c[i]);
    return;
  }
  std::vector<int32_t> a(lhs, lhs + lhs_size), b(rhs, rhs + rhs_size);
  __xla_cpu_matmul_s32(a.data(), b.data(), out, batch, m, k, n, transpose_lhs, transpose_rhs);
}

void WidenedBf16(const uint16_t* lhs, const uint16_t* rhs, float* out, int64_t batch, int64_t m,
                 int64_t k, int64_t n, bool transpose_lhs, bool transpose_rhs) {
  std::vector<float> a(static_cast<size_t>(batch * m * k)), b(static_cast<size_t>(batch * k * n));
  for (size_t i = 0; i < a.size(); ++i) a[i] = Bf16ToF32(lhs[i]);
  for (size_t i = 0; i < b.size(); ++i) b[i] = Bf16ToF32(rhs[i]);
  __xla_cpu_matmul_f32(a.data(), b.data(), out, batch, m, k, n, transpose_lhs, transpose_rhs);
}

#if defined(XLA_CPU_DOT_PRODUCT_GEMM)

// ---------------------------------------------------------------------------
// The dot-product GEMM. Operands are packed in groups of G consecutive k
// (G = 4 bytes or 2 bf16: one 32-bit lane). The rhs is packed once per call
// into strips of kNr = 32 columns, [strip][k group][32 columns][G]; the lhs
// per task into panels of kMr = 8 rows, [panel][k group][8 rows][G]. The
// micro-kernel keeps an 8 x 32 block of the output in 16 registers and per
// k group loads two vectors of the rhs strip and broadcasts one lane of the
// lhs per row. Rows and columns past the matrix are zero in the packed
// lhs / not stored; k past the end is zero in both.
constexpr int kMr = 8;
constexpr int kNr = 32;
// Rows of the lhs per task (a multiple of kMr) of the vector kernels
// (their Kind::kMc).
constexpr int64_t kVectorMc = 64;
// Strips packed together when a task packs its own (one row block).
constexpr int64_t kPackStrips = 8;

struct S8Kind {
  using In = int8_t;
  using Packed = uint8_t;
  using Out = int32_t;
  using Acc = __m512i;
  static constexpr int kGroup = 4;
  // k per block: the rhs micro-panel, kKc x 32 bytes, stays in L1.
  static constexpr int64_t kKc = 512;
  static Acc Zero() { return _mm512_setzero_si512(); }
  static inline __attribute__((always_inline)) Acc Dot(Acc acc, __m512i rhs, __m512i lhs) {
    return _mm512_dpbusd_epi32(acc, rhs, lhs);
  }
  static Packed Rhs(In x) { return static_cast<Packed>(static_cast<uint8_t>(x) ^ 0x80); }
  static constexpr uint32_t kRhsFlip = 0x80808080u;  // Rhs on a word of four
  // Matrix-vector products (Gemv): elements per vector, masked loads of a
  // tail (zeros past it), Rhs on a vector, the sum of a vector's lanes.
  static constexpr int kVector = 64;
  static __m512i LoadTail(const In* x, int count) {
    return _mm512_maskz_loadu_epi8(count >= 64 ? ~__mmask64(0) : (__mmask64(1) << count) - 1, x);
  }
  static __m512i RhsVector(__m512i x) {
    return _mm512_xor_si512(x, _mm512_set1_epi8(static_cast<char>(0x80)));
  }
  static Out Sum(Acc acc) { return _mm512_reduce_add_epi32(acc); }
  static Acc Add(Acc a, Acc b) { return _mm512_add_epi32(a, b); }
  // Integer products are exact: no element needs the widened path.
  static constexpr bool kHasTiny = false;
  static uint64_t Tiny(__m512i) { return 0; }
  static Out ExactRow(const In*, const In*, int64_t) { return 0; }
  static Packed Lhs(In x) { return static_cast<Packed>(x); }
  static constexpr bool kTiles = false;
  static constexpr int64_t kMc = kVectorMc;
};

#if defined(XLA_CPU_BF16_GEMM)
struct Bf16Kind {
  using In = uint16_t;
  using Packed = uint16_t;
  using Out = float;
  using Acc = __m512;
  static constexpr int kGroup = 2;
  static constexpr int64_t kKc = 256;
  static Acc Zero() { return _mm512_setzero_ps(); }
  static inline __attribute__((always_inline)) Acc Dot(Acc acc, __m512i rhs, __m512i lhs) {
    return _mm512_dpbf16_ps(acc, reinterpret_cast<__m512bh>(rhs), reinterpret_cast<__m512bh>(lhs));
  }
  static Packed Rhs(In x) { return x; }
  static constexpr uint32_t kRhsFlip = 0;
  static constexpr int kVector = 32;
  static __m512i LoadTail(const In* x, int count) {
    return _mm512_maskz_loadu_epi16(count >= 32 ? ~__mmask32(0) : (__mmask32(1) << count) - 1, x);
  }
  static __m512i RhsVector(__m512i x) { return x; }
  static Out Sum(Acc acc) { return _mm512_reduce_add_ps(acc); }
  static Acc Add(Acc a, Acc b) { return _mm512_add_ps(a, b); }
  // The elements a matrix-vector product (Gemv) holds to exactness: a
  // nonzero magnitude below 2^-56 (biased exponent below kTinyExponent)
  // in either operand could make a product VDPBF16PS flushes. A Gemv row
  // holding one is recomputed by ExactRow: f32 products of bf16 are exact
  // (denormals included), summed in f32.
  static constexpr int kTinyExponent = 71;
  static constexpr bool kHasTiny = true;
  static uint64_t Tiny(__m512i x) {
    const __m512i magnitude = _mm512_and_si512(x, _mm512_set1_epi16(0x7FFF));
    return _mm512_test_epi16_mask(magnitude, magnitude) &
           _mm512_cmplt_epu16_mask(magnitude, _mm512_set1_epi16(kTinyExponent << 7));
  }
  static Out ExactRow(const In* row, const In* vec, int64_t k) {
    float sum = 0.0f;
    for (int64_t p = 0; p < k; ++p) sum = std::fma(Bf16ToF32(row[p]), Bf16ToF32(vec[p]), sum);
    return sum;
  }
  static Packed Lhs(In x) { return x; }
  static constexpr bool kTiles = false;
  static constexpr int64_t kMc = kVectorMc;
};
#endif  // XLA_CPU_BF16_GEMM

#if defined(XLA_CPU_TILE_GEMM)
// The products on tiles. s8 runs on TDPBSSD (s8 x s8), so its rhs is
// packed as it is (no + 128, no correction); bf16 as the vector GEMM's.
// Blocks are larger than the vector GEMM's: a task's 128 rows halve how
// often the packed rhs is streamed, and k blocks of 512 groups (2,048 s8,
// 1,024 bf16; the lhs panel 256 KB, a strip's block 64 KB: L2) store each
// output block's accumulators less often.
struct S8TileKind : S8Kind {
  static Packed Rhs(In x) { return static_cast<Packed>(x); }
  static constexpr uint32_t kRhsFlip = 0;
  static constexpr bool kTiles = true;
  static constexpr int64_t kMc = 128;
  static constexpr int64_t kKc = 2048;
};
struct Bf16TileKind : Bf16Kind {
  static constexpr bool kTiles = true;
  static constexpr int64_t kMc = 128;
  static constexpr int64_t kKc = 1024;
};
#endif  // XLA_CPU_TILE_GEMM

template <typename Kind>
struct Gemm {
  using In = typename Kind::In;
  using Packed = typename Kind::Packed;
  using Out = typename Kind::Out;
  static constexpr int G = Kind::kGroup;

  const In* lhs;
  const In* rhs;
  Out* out;
  int64_t batch, m, k, n;
  bool transpose_lhs, transpose_rhs;
  int64_t groups;      // k groups, k rounded up to G (and to kTileGroups on tiles)
  int64_t strips;      // column strips of kNr
  int64_t row_blocks;  // blocks of Kind::kMc rows
  int64_t col_blocks;  // blocks of strips_per_task strips
  int64_t strips_per_task;
  Packed* packed_rhs;  // batch x strips x groups x kNr x G

  In LhsAt(const In* a, int64_t i, int64_t p) const {
    return transpose_lhs ? a[p * m + i] : a[i * k + p];
  }
  In RhsAt(const In* b, int64_t p, int64_t j) const {
    return transpose_rhs ? b[j * k + p] : b[p * n + j];
  }

  Packed* RhsStrip(int64_t b, int64_t s) const {
    return packed_rhs + ((b * strips + s) * groups) * kNr * G;
  }

  // Packs k groups [g0, g1) of one strip of the rhs of product b into dst.
  void PackRhsStrip(int64_t b, int64_t s, int64_t g0, int64_t g1, Packed* dst) const {
    const In* src = rhs + b * k * n;
    const int64_t j0 = s * kNr;
    const int64_t cols = std::min<int64_t>(kNr, n - j0);
    int64_t g = g0;
    if (transpose_rhs && cols == kNr && k % G == 0) {
      // Each column's k groups are consecutive 32-bit words of its stored
      // row: 16 groups of 16 columns at a time by a 16 x 16 transpose of
      // words, where gathering a word per column and group cost more than
      // the products of attention's per-head 64 x 256 x 256 blocks.
      const float* words = reinterpret_cast<const float*>(src);
      const int64_t row_words = k / G;
      for (; g + 16 <= g1; g += 16, dst += 16 * kNr * G) {
        for (int h = 0; h < 2; ++h) {
          __m512 t[16];
          packed_gemm::Transpose16(words + (j0 + 16 * h) * row_words + g, row_words, 16, t);
          for (int w = 0; w < 16; ++w) {
            const __m512i v = _mm512_xor_si512(_mm512_castps_si512(t[w]),
                                               _mm512_set1_epi32(static_cast<int>(Kind::kRhsFlip)));
            _mm512_storeu_si512(dst + (w * kNr + 16 * h) * G, v);
          }
        }
      }
    }
    for (; g < g1; ++g, dst += kNr * G) {
      const int64_t p0 = g * G;
      if (!transpose_rhs && cols == kNr && p0 + G <= k) {
        Interleave<Kind::kRhsFlip != 0>(src + p0 * n + j0, n, dst);
        continue;
      }
      if (transpose_rhs && p0 + G <= k) {  // each column's G values: one 32-bit word
        for (int64_t j = 0; j < cols; ++j) {
          uint32_t word;
          std::memcpy(&word, src + (j0 + j) * k + p0, sizeof word);
          word ^= Kind::kRhsFlip;
          std::memcpy(dst + j * G, &word, sizeof word);
        }
        std::fill(dst + cols * G, dst + kNr * G, Packed(0));
        continue;
      }
      for (int64_t j = 0; j < kNr; ++j) {
        for (int t = 0; t < G; ++t) {
          const int64_t p = p0 + t;
          dst[j * G + t] = j < cols && p < k ? Kind::Rhs(RhsAt(src, p, j0 + j)) : Packed(0);
        }
      }
    }
  }

  // PackRhsStrip for strips [s0, s1) into consecutive blocks of dst
  // (g1 - g0 groups each), k groups outermost where the rhs is row-major.
  void PackRhsStrips(int64_t b, int64_t s0, int64_t s1, int64_t g0, int64_t g1, Packed* dst) const {
    const int64_t block = (g1 - g0) * kNr * G;
    if (transpose_rhs || s1 * kNr > n || g1 * G > k) {
      for (int64_t s = s0; s < s1; ++s) PackRhsStrip(b, s, g0, g1, dst + (s - s0) * block);
      return;
    }
    const In* src = rhs + b * k * n;
    for (int64_t g = g0; g < g1; ++g) {
      for (int64_t s = s0; s < s1; ++s) {
        Interleave<Kind::kRhsFlip != 0>(src + g * G * n + s * kNr, n,
                                        dst + (s - s0) * block + (g - g0) * kNr * G);
      }
    }
  }

  // G rows of 32 columns (row stride `stride`) interleaved into [32
  // columns][G], + 128 on each byte where kFlip (s8's rhs).
  template <bool kFlip>
  static void Interleave(const In* src, int64_t stride, Packed* dst) {
    if constexpr (G == 4) {
      const __m128i flip = _mm_set1_epi8(static_cast<char>(kFlip ? 0x80 : 0));
      for (int h = 0; h < 2; ++h) {
        auto row = [&](int t) {
          return _mm_xor_si128(
              _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + t * stride + 16 * h)), flip);
        };
        const __m128i x0 = row(0), x1 = row(1), x2 = row(2), x3 = row(3);
        const __m128i t01l = _mm_unpacklo_epi8(x0, x1), t01h = _mm_unpackhi_epi8(x0, x1);
        const __m128i t23l = _mm_unpacklo_epi8(x2, x3), t23h = _mm_unpackhi_epi8(x2, x3);
        __m128i* d = reinterpret_cast<__m128i*>(dst + 64 * h);
        _mm_storeu_si128(d + 0, _mm_unpacklo_epi16(t01l, t23l));
        _mm_storeu_si128(d + 1, _mm_unpackhi_epi16(t01l, t23l));
        _mm_storeu_si128(d + 2, _mm_unpacklo_epi16(t01h, t23h));
        _mm_storeu_si128(d + 3, _mm_unpackhi_epi16(t01h, t23h));
      }
    } else {
      for (int c = 0; c < 4; ++c) {
        const __m128i x0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 8 * c));
        const __m128i x1 =
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + stride + 8 * c));
        __m128i* d = reinterpret_cast<__m128i*>(dst + 16 * c);
        _mm_storeu_si128(d + 0, _mm_unpacklo_epi16(x0, x1));
        _mm_storeu_si128(d + 1, _mm_unpackhi_epi16(x0, x1));
      }
    }
  }

  // Packs rows [i0, i0 + kMr) and k groups [g0, g1) of the lhs of product
  // b into dst ([group][kMr][G]); sums[r] = the sum of the row's elements
  // there (used by s8 only).
  void PackLhsPanel(const In* a, int64_t i0, int64_t g0, int64_t g1, Packed* dst,
                    int32_t* sums) const {
    const int64_t rows = std::min<int64_t>(kMr, m - i0);
    for (int r = 0; r < kMr; ++r) sums[r] = 0;
    if (!transpose_lhs) {
      for (int r = 0; r < kMr; ++r) {
        Packed* d = dst + r * G;
        if (r >= rows) {
          for (int64_t g = g0; g < g1; ++g, d += kMr * G) std::memset(d, 0, G * sizeof(Packed));
          continue;
        }
        const In* row = a + (i0 + r) * k;
        const int64_t full = std::min(g1, k / G);
        int32_t sum = 0;
        int64_t g = g0;
        for (; g < full; ++g, d += kMr * G) {
          std::memcpy(d, row + g * G, G * sizeof(Packed));
          if constexpr (G == 4) {
            for (int t = 0; t < G; ++t) sum += row[g * G + t];
          }
        }
        for (; g < g1; ++g, d += kMr * G) {
          for (int t = 0; t < G; ++t) {
            const int64_t p = g * G + t;
            const In x = p < k ? row[p] : In(0);
            d[t] = Kind::Lhs(x);
            if constexpr (G == 4) sum += x;
          }
        }
        sums[r] = sum;
      }
      return;
    }
    // A transposed lhs ([k][m]): a group's G stored rows hold the panel's
    // kMr rows side by side, interleaved G ways into [kMr][G] (the scalar
    // gather below cost more than the products of attention's per-head
    // 256 x 256 x 64 blocks).
    int64_t g = g0;
    if (rows == kMr) {
      const int64_t full = std::min(g1, k / G);
      if constexpr (G == 2) {
        for (; g < full; ++g, dst += kMr * G) {
          const __m128i x0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a + 2 * g * m + i0));
          const __m128i x1 =
              _mm_loadu_si128(reinterpret_cast<const __m128i*>(a + (2 * g + 1) * m + i0));
          _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), _mm_unpacklo_epi16(x0, x1));
          _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 8), _mm_unpackhi_epi16(x0, x1));
        }
      } else {
        __m256i row_sums = _mm256_setzero_si256();
        for (; g < full; ++g, dst += kMr * G) {
          __m128i x[4];
          for (int t = 0; t < 4; ++t) {
            x[t] = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(a + (4 * g + t) * m + i0));
            row_sums = _mm256_add_epi32(row_sums, _mm256_cvtepi8_epi32(x[t]));
          }
          const __m128i t01 = _mm_unpacklo_epi8(x[0], x[1]), t23 = _mm_unpacklo_epi8(x[2], x[3]);
          _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), _mm_unpacklo_epi16(t01, t23));
          _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 16), _mm_unpackhi_epi16(t01, t23));
        }
        alignas(32) int32_t lanes[kMr];
        _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), row_sums);
        for (int r = 0; r < kMr; ++r) sums[r] += lanes[r];
      }
    }
    for (; g < g1; ++g, dst += kMr * G) {
      for (int r = 0; r < kMr; ++r) {
        for (int t = 0; t < G; ++t) {
          const int64_t p = g * G + t;
          const In x = r < rows && p < k ? LhsAt(a, i0 + r, p) : In(0);
          dst[r * G + t] = Kind::Lhs(x);
          if constexpr (G == 4) sums[r] += x;
        }
      }
    }
  }

  // out[i0.., j0..] (rows, cols valid) = or += the product of a packed lhs
  // panel and rhs micro-panel over `count` k groups, less 128 * sums (s8).
  // kRows: the panel rows computed (8, or 1 for row-vector products).
  template <int kRows>
  static void MicroKernel(const Packed* a, const Packed* b, int64_t count, Out* c, int64_t ldc,
                          int rows, int cols, bool accumulate, const int32_t* sums) {
    // Sixteen named accumulators: GCC keeps an array of them in registers
    // only after copying them around every iteration.
    using Acc = typename Kind::Acc;
    Acc c00 = Kind::Zero(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00,
        c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00, c60 = c00, c61 = c00, c70 = c00,
        c71 = c00;
    for (int64_t g = 0; g < count; ++g, a += kMr * G, b += kNr * G) {
      const __m512i b0 = _mm512_loadu_si512(b);
      const __m512i b1 = _mm512_loadu_si512(b + 16 * G);
#define XLA_CPU_LOWP_ROW(r)                                  \
  if constexpr (r < kRows) {                                 \
    int32_t word;                                            \
    std::memcpy(&word, a + r * G, sizeof word);              \
    const __m512i lane = _mm512_set1_epi32(word);            \
    c##r##0 = Kind::Dot(c##r##0, b0, lane);                  \
    c##r##1 = Kind::Dot(c##r##1, b1, lane);                  \
  }
      XLA_CPU_LOWP_ROW(0)
      XLA_CPU_LOWP_ROW(1)
      XLA_CPU_LOWP_ROW(2)
      XLA_CPU_LOWP_ROW(3)
      XLA_CPU_LOWP_ROW(4)
      XLA_CPU_LOWP_ROW(5)
      XLA_CPU_LOWP_ROW(6)
      XLA_CPU_LOWP_ROW(7)
#undef XLA_CPU_LOWP_ROW
    }
    const Acc acc[kMr][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31},
                             {c40, c41}, {c50, c51}, {c60, c61}, {c70, c71}};
    for (int r = 0; r < rows; ++r) StoreRow(acc[r], c + r * ldc, cols, accumulate, sums[r]);
  }

  // Stores (or adds) 32 accumulated columns of one output row, the first
  // `cols` of them, less 128 * sum (s8).
  static inline __attribute__((always_inline)) void StoreRow(const typename Kind::Acc acc[2],
                                                             Out* row, int cols, bool accumulate,
                                                             int32_t sum) {
    const __mmask16 mask0 = cols >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << cols) - 1);
    const __mmask16 mask1 =
        cols >= 32 ? __mmask16(0xFFFF)
                   : cols <= 16 ? __mmask16(0) : __mmask16((1u << (cols - 16)) - 1);
    for (int h = 0; h < 2; ++h) {
      const __mmask16 mask = h == 0 ? mask0 : mask1;
      if (mask == 0) continue;
      if constexpr (G == 4) {
        __m512i v = _mm512_sub_epi32(
            acc[h], _mm512_set1_epi32(static_cast<int32_t>(static_cast<uint32_t>(sum) << 7)));
        if (accumulate) v = _mm512_add_epi32(v, _mm512_maskz_loadu_epi32(mask, row + 16 * h));
        _mm512_mask_storeu_epi32(row + 16 * h, mask, v);
      } else {
        __m512 v = acc[h];
        if (accumulate) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(mask, row + 16 * h));
        _mm512_mask_storeu_ps(row + 16 * h, mask, v);
      }
    }
  }

#if defined(XLA_CPU_TILE_GEMM)
  // The lhs for tiles: rows [i_begin, i_end) and k groups [g0, g1) of the
  // lhs `a` row-major into dst (row r at dst + r * (g1 - g0) * G), zeros
  // past k and in the rows up to the next multiple of 32. A transposed lhs
  // ([k][m]) is interleaved 32 rows by G k at a time as the rhs is.
  void PackLhsRows(const In* a, int64_t i_begin, int64_t i_end, int64_t g0, int64_t g1,
                   Packed* dst) const {
    const int64_t width = (g1 - g0) * G;
    const int64_t p0 = g0 * G, p1 = std::min(k, g1 * G);  // p0 < k: g0 is a real group
    const int64_t rows = i_end - i_begin;
    const int64_t padded = (rows + 2 * kTileRows - 1) / (2 * kTileRows) * (2 * kTileRows);
    if (!transpose_lhs) {
      for (int64_t r = 0; r < rows; ++r) {
        std::memcpy(dst + r * width, a + (i_begin + r) * k + p0,
                    static_cast<size_t>(p1 - p0) * sizeof(Packed));
      }
    } else {
      const int64_t full_groups = (p1 - p0) / G;  // groups with all G of their k
      int64_t r = 0;
      for (; r + kNr <= rows; r += kNr) {
        Packed words[kNr * G];
        for (int64_t g = 0; g < full_groups; ++g) {
          Interleave<false>(a + (p0 + g * G) * m + i_begin + r, m, words);
          for (int j = 0; j < kNr; ++j) {
            std::memcpy(dst + (r + j) * width + g * G, words + j * G, G * sizeof(Packed));
          }
        }
      }
      for (int64_t p = p0; p < p1; ++p) {  // the rest: rows past the last 32, k past the groups
        const In* column = a + p * m + i_begin;
        const int64_t first = p < p0 + full_groups * G ? r : 0;
        for (int64_t q = first; q < rows; ++q) dst[q * width + (p - p0)] = Kind::Lhs(column[q]);
      }
    }
    for (int64_t q = 0; q < padded; ++q) {
      Packed* d = dst + q * width;
      std::fill(d + (q < rows ? p1 - p0 : 0), d + width, Packed(0));
    }
  }

  // out[i0.., j0..] (rows <= 32, cols <= 32 valid) = or += the product of
  // 32 rows of lhs packed by PackLhsRows (row stride lda bytes, k groups
  // from its start) and an rhs strip over `count` k groups (a multiple of
  // kTileGroups). A whole 32 x 32 block accumulates in the output (its
  // tiles loaded from it, or zeroed, and stored back); a block at an edge
  // goes through a buffer. Tiles must be configured.
  static void TileKernel(const Packed* a, int64_t lda, const Packed* b, int64_t count, Out* c,
                         int64_t ldc, int rows, int cols, bool accumulate) {
    static_assert(Kind::kRhsFlip == 0, "tiles multiply s8 by s8: no correction");
    constexpr int64_t kStrip = kNr * G * sizeof(Packed);  // bytes per k group of a strip
    const char* a_bytes = reinterpret_cast<const char*>(a);
    const char* b_bytes = reinterpret_cast<const char*>(b);
    const bool whole = rows == 2 * kTileRows && cols == kNr;
    const int64_t ldc_bytes = ldc * static_cast<int64_t>(sizeof(Out));
    __asm__ volatile("" ::: "memory");  // the packed operands and c are stored
    if (whole && accumulate) {
      XLA_CPU_TILE_LOAD(0, c, ldc_bytes);
      XLA_CPU_TILE_LOAD(1, c + 16, ldc_bytes);
      XLA_CPU_TILE_LOAD(2, c + kTileRows * ldc, ldc_bytes);
      XLA_CPU_TILE_LOAD(3, c + kTileRows * ldc + 16, ldc_bytes);
    } else {
      XLA_CPU_TILE_ZERO(0);
      XLA_CPU_TILE_ZERO(1);
      XLA_CPU_TILE_ZERO(2);
      XLA_CPU_TILE_ZERO(3);
    }
    for (int64_t g = 0; g < count; g += kTileGroups) {
      const char* at = a_bytes + g * G * sizeof(Packed);
      const char* bt = b_bytes + g * kStrip;
      XLA_CPU_TILE_LOAD(4, at, lda);
      XLA_CPU_TILE_LOAD(5, at + kTileRows * lda, lda);
      XLA_CPU_TILE_LOAD(6, bt, kStrip);
      XLA_CPU_TILE_LOAD(7, bt + kTileBytes, kStrip);
      if constexpr (G == 4) {
        XLA_CPU_TILE_DPBSSD(0, 4, 6);
        XLA_CPU_TILE_DPBSSD(1, 4, 7);
        XLA_CPU_TILE_DPBSSD(2, 5, 6);
        XLA_CPU_TILE_DPBSSD(3, 5, 7);
      } else {
        XLA_CPU_TILE_DPBF16PS(0, 4, 6);
        XLA_CPU_TILE_DPBF16PS(1, 4, 7);
        XLA_CPU_TILE_DPBF16PS(2, 5, 6);
        XLA_CPU_TILE_DPBF16PS(3, 5, 7);
      }
    }
    if (whole) {
      XLA_CPU_TILE_STORE(0, c, ldc_bytes);
      XLA_CPU_TILE_STORE(1, c + 16, ldc_bytes);
      XLA_CPU_TILE_STORE(2, c + kTileRows * ldc, ldc_bytes);
      XLA_CPU_TILE_STORE(3, c + kTileRows * ldc + 16, ldc_bytes);
      return;
    }
    alignas(64) Out block[2 * kTileRows][kNr];
    constexpr int64_t kBlockRow = kNr * sizeof(Out);
    XLA_CPU_TILE_STORE(0, &block[0][0], kBlockRow);
    XLA_CPU_TILE_STORE(1, &block[0][16], kBlockRow);
    XLA_CPU_TILE_STORE(2, &block[kTileRows][0], kBlockRow);
    XLA_CPU_TILE_STORE(3, &block[kTileRows][16], kBlockRow);
    for (int r = 0; r < rows; ++r) {
      typename Kind::Acc acc[2];
      for (int h = 0; h < 2; ++h) {
        if constexpr (G == 4) {
          acc[h] = _mm512_load_si512(&block[r][16 * h]);
        } else {
          acc[h] = _mm512_load_ps(&block[r][16 * h]);
        }
      }
      StoreRow(acc, c + r * ldc, cols, accumulate, 0);
    }
  }
#endif  // XLA_CPU_TILE_GEMM

  // One task: rows [rb * Kind::kMc, +Kind::kMc) and strips [cb * strips_per_task, ...)
  // of product b.
  void Task(int64_t b, int64_t rb, int64_t cb, Packed* panel, int32_t* sums,
            Packed* strip_buffer) const {
    const In* a = lhs + b * m * k;
    Out* c = out + b * m * n;
    const int64_t i_begin = rb * Kind::kMc, i_end = std::min(m, i_begin + Kind::kMc);
    const int64_t s_begin = cb * strips_per_task;
    const int64_t s_end = std::min(strips, s_begin + strips_per_task);
    const int64_t block_groups = Kind::kKc / G;
    for (int64_t g0 = 0; g0 < groups; g0 += block_groups) {
      const int64_t g1 = std::min(groups, g0 + block_groups);
      const int64_t count = g1 - g0;
#if defined(XLA_CPU_TILE_GEMM)
      if constexpr (Kind::kTiles) {
        PackLhsRows(a, i_begin, i_end, g0, g1, panel);
      } else
#endif
      {
        int64_t panels = 0;
        for (int64_t i0 = i_begin; i0 < i_end; i0 += kMr, ++panels) {
          PackLhsPanel(a, i0, g0, g1, panel + panels * count * kMr * G, sums + panels * kMr);
        }
      }
      for (int64_t s = s_begin; s < s_end; ++s) {
        const Packed* strip;
        if (packed_rhs != nullptr) {
          strip = RhsStrip(b, s) + g0 * kNr * G;
        } else {
          // kPackStrips strips at a time: a row-major rhs is then read in
          // runs of kPackStrips * 32 columns, not one strip's 32.
          const int64_t slot = (s - s_begin) % kPackStrips;
          if (slot == 0) {
            PackRhsStrips(b, s, std::min(s_end, s + kPackStrips), g0, g1, strip_buffer);
          }
          strip = strip_buffer + slot * count * kNr * G;
        }
        const int64_t j0 = s * kNr;
        const int cols = static_cast<int>(std::min<int64_t>(kNr, n - j0));
#if defined(XLA_CPU_TILE_GEMM)
        if constexpr (Kind::kTiles) {
          const int64_t lda = count * G * static_cast<int64_t>(sizeof(Packed));
          for (int64_t i0 = i_begin; i0 < i_end; i0 += 2 * kTileRows) {
            TileKernel(panel + (i0 - i_begin) * count * G, lda, strip, count, c + i0 * n + j0, n,
                       static_cast<int>(std::min<int64_t>(2 * kTileRows, i_end - i0)), cols,
                       g0 > 0);
          }
          continue;
        }
#endif
        int64_t p = 0;
        for (int64_t i0 = i_begin; i0 < i_end; i0 += kMr, ++p) {
          (m == 1 ? MicroKernel<1> : MicroKernel<kMr>)(
              panel + p * count * kMr * G, strip, count, c + i0 * n + j0, n,
              static_cast<int>(std::min<int64_t>(kMr, i_end - i0)), cols, g0 > 0, sums + p * kMr);
        }
      }
    }
  }

  void Run() {
    groups = (k + G - 1) / G;
#if defined(XLA_CPU_TILE_GEMM)
    if constexpr (Kind::kTiles) groups = (groups + kTileGroups - 1) / kTileGroups * kTileGroups;
#endif
    strips = (n + kNr - 1) / kNr;
    row_blocks = (m + Kind::kMc - 1) / Kind::kMc;
    // Enough tasks for every thread to get several where the rows alone
    // give too few; at least two strips (64 columns) each.
    const int64_t threads = ThreadsForCaller();
    const int64_t blocks = batch * row_blocks;
    const int64_t want = blocks >= 4 * threads ? 1 : (4 * threads + blocks - 1) / blocks;
    col_blocks = std::max<int64_t>(1, std::min(want, strips / 2));
    strips_per_task = (strips + col_blocks - 1) / col_blocks;
    col_blocks = (strips + strips_per_task - 1) / strips_per_task;

    const int64_t work = batch * m * n * k;
    const bool parallel = threads > 1 && work >= kMinParallelMacs;
    // With several row blocks every packed strip is used several times:
    // the whole rhs is packed first. With one (few rows: matrix-vector-like
    // products) each task packs its strips' k blocks as it goes, 8 strips
    // at a time into a buffer that stays in L2, and the rhs is read once.
    std::unique_ptr<Packed[]> rhs_buffer;  // not value-initialized: packing writes it all
    packed_rhs = nullptr;
    if (row_blocks > 1) {
      rhs_buffer.reset(new Packed[static_cast<size_t>(batch * strips * groups * kNr * G)]);
      packed_rhs = rhs_buffer.get();
      auto pack = [](void* ctx, int64_t begin, int64_t end) {
        const auto& self = *static_cast<const Gemm*>(ctx);
        for (int64_t t = begin; t < end; ++t) {
          const int64_t b = t / self.strips, s = t % self.strips;
          self.PackRhsStrip(b, s, 0, self.groups, self.RhsStrip(b, s));
        }
      };
      if (parallel) {
        __xla_cpu_parallel_for(pack, this, batch * strips,
                               std::max<int64_t>(1, 4096 / (groups * kNr * G)));
      } else {
        pack(this, 0, batch * strips);
      }
    }
    auto body = [](void* ctx, int64_t begin, int64_t end) {
      const auto& self = *static_cast<const Gemm*>(ctx);
      const int64_t block_groups = std::min(self.groups, Kind::kKc / G);
      std::vector<Packed> panel(static_cast<size_t>(Kind::kMc * block_groups * G));
      std::vector<int32_t> sums(Kind::kMc);
      std::vector<Packed> strip(self.packed_rhs == nullptr ? kPackStrips * block_groups * kNr * G
                                                           : 0);
#if defined(XLA_CPU_TILE_GEMM)
      if constexpr (Kind::kTiles) ConfigureTiles();
#endif
      for (int64_t t = begin; t < end; ++t) {
        const int64_t cb = t % self.col_blocks;
        const int64_t rb = (t / self.col_blocks) % self.row_blocks;
        const int64_t b = t / (self.col_blocks * self.row_blocks);
        self.Task(b, rb, cb, panel.data(), sums.data(), strip.data());
      }
#if defined(XLA_CPU_TILE_GEMM)
      if constexpr (Kind::kTiles) XLA_CPU_TILE_RELEASE();
#endif
    };
    const int64_t tasks = batch * row_blocks * col_blocks;
    if (parallel) {
      __xla_cpu_parallel_for(body, this, tasks, 1);
    } else {
      body(this, 0, tasks);
    }
  }
};

// Matrix-vector products whose matrix is read along its contiguous rows
// (the vector must hold no element Kind::Tiny would flag; the matrix's are
// found as its rows stream by, so it is read once):
// out[r] = sum_p vec[p] * mat[r, p] for a row-major [rows, k] `mat` (A x
// with A row-major, or x B^T with B stored [n, k]). No packing: one row at
// a time, four vectors of it per step into four accumulators, the vector
// read again (from L1) for each row, with the matrix as the instruction's
// u8 / first bf16 side (s8: + 128, so the result holds 128 * sum(vec) too,
// subtracted), and the matrix prefetched kGemvPrefetchBytes ahead. Past k
// both are zero. Measured here (2-core Zen 5 VM, bf16 4096 x 4096, the
// tiny check included): one row at a time and the prefetch 15 -> 25 GB/s
// on one thread, 32 -> 60 GB/s on two, where four rows at a time against
// one load of the vector kept four streams and fewer loads in flight.
constexpr int64_t kGemvPrefetchBytes = 2048;

template <typename Kind>
struct Gemv {
  using In = typename Kind::In;
  using Out = typename Kind::Out;
  const In* mat;
  const In* vec;
  Out* out;
  int64_t rows, k;
  Out correction;

  void Rows(int64_t r0, int64_t r1) const {
    constexpr int V = Kind::kVector;
    constexpr int64_t kStep = 4 * V;  // 256 bytes: four cache lines
    constexpr int64_t kAhead = kGemvPrefetchBytes / static_cast<int64_t>(sizeof(In));
    const int64_t steps_end = k / kStep * kStep;
    const int64_t total = rows * k;
    for (int64_t r = r0; r < r1; ++r) {
      const In* row = mat + r * k;
      typename Kind::Acc acc0 = Kind::Zero(), acc1 = Kind::Zero(), acc2 = Kind::Zero(),
                         acc3 = Kind::Zero();
      uint64_t tiny = 0;
      int64_t p = 0;
      for (; p < steps_end; p += kStep) {
        if (r * k + p + kAhead + kStep <= total) {  // a hint, but only inside the matrix
          const char* ahead = reinterpret_cast<const char*>(row + p + kAhead);
          for (int line = 0; line < 4; ++line) _mm_prefetch(ahead + 64 * line, _MM_HINT_T0);
        }
        const __m512i a0 = _mm512_loadu_si512(row + p);
        const __m512i a1 = _mm512_loadu_si512(row + p + V);
        const __m512i a2 = _mm512_loadu_si512(row + p + 2 * V);
        const __m512i a3 = _mm512_loadu_si512(row + p + 3 * V);
        if constexpr (Kind::kHasTiny) {
          tiny |= Kind::Tiny(a0) | Kind::Tiny(a1) | Kind::Tiny(a2) | Kind::Tiny(a3);
        }
        acc0 = Kind::Dot(acc0, Kind::RhsVector(a0), _mm512_loadu_si512(vec + p));
        acc1 = Kind::Dot(acc1, Kind::RhsVector(a1), _mm512_loadu_si512(vec + p + V));
        acc2 = Kind::Dot(acc2, Kind::RhsVector(a2), _mm512_loadu_si512(vec + p + 2 * V));
        acc3 = Kind::Dot(acc3, Kind::RhsVector(a3), _mm512_loadu_si512(vec + p + 3 * V));
      }
      for (; p < k; p += V) {
        const int width = static_cast<int>(std::min<int64_t>(V, k - p));
        const __m512i a = Kind::LoadTail(row + p, width);
        if constexpr (Kind::kHasTiny) tiny |= Kind::Tiny(a);
        acc0 = Kind::Dot(acc0, Kind::RhsVector(a), Kind::LoadTail(vec + p, width));
      }
      out[r] = Kind::kHasTiny && tiny
                   ? Kind::ExactRow(row, vec, k)
                   : Kind::Sum(Kind::Add(Kind::Add(acc0, acc1), Kind::Add(acc2, acc3))) - correction;
    }
  }

  void Run() {
    auto body = [](void* ctx, int64_t begin, int64_t end) {
      const auto& self = *static_cast<const Gemv*>(ctx);
      self.Rows(begin * 4, std::min(end * 4, self.rows));
    };
    const int64_t quads = (rows + 3) / 4;
    if (ThreadsForCaller() > 1 && rows * k >= kMinParallelMacs) {
      __xla_cpu_parallel_for(body, this, quads, std::max<int64_t>(1, kMinParallelMacs / (4 * k)));
    } else {
      body(this, 0, quads);
    }
  }
};

// Runs the product as Gemv where its shape allows (after the n == 1 swap:
// one row, rhs stored transposed); false otherwise.
template <typename Kind>
bool RunGemv(const typename Kind::In* lhs, const typename Kind::In* rhs, typename Kind::Out* out,
             int64_t batch, int64_t m, int64_t k, int64_t n, bool transpose_rhs) {
  if (m != 1 || !transpose_rhs) return false;
  for (int64_t b = 0; b < batch; ++b) {
    const auto* vec = lhs + b * k;
    typename Kind::Out correction = 0;
    if constexpr (Kind::kGroup == 4) {
      uint32_t sum = 0;
      for (int64_t p = 0; p < k; ++p) sum += static_cast<uint32_t>(static_cast<int32_t>(vec[p]));
      correction = static_cast<int32_t>(sum << 7);
    }
    Gemv<Kind>{rhs + b * k * n, vec, out + b * n, n, k, correction}.Run();
  }
  return true;
}

#if defined(XLA_CPU_BF16_GEMM)
// The smallest biased exponent among the nonzero elements of a bf16 array:
// 0 where one is a denormal, 255 where none is nonzero.
int MinExponentBf16(const uint16_t* x, int64_t count) {
  __m512i lowest = _mm512_set1_epi16(0xFF);
  for (int64_t i = 0; i < count; i += Bf16Kind::kVector) {
    const int width = static_cast<int>(std::min<int64_t>(Bf16Kind::kVector, count - i));
    const __m512i magnitude =
        _mm512_and_si512(Bf16Kind::LoadTail(x + i, width), _mm512_set1_epi16(0x7FFF));
    lowest = _mm512_mask_min_epu16(lowest, _mm512_test_epi16_mask(magnitude, magnitude), lowest,
                                   _mm512_srli_epi16(magnitude, 7));
  }
  const __m256i half = _mm256_min_epu16(_mm512_castsi512_si256(lowest),
                                        _mm512_extracti64x4_epi64(lowest, 1));
  const __m128i quarter =
      _mm_min_epu16(_mm256_castsi256_si128(half), _mm256_extracti128_si256(half, 1));
  return _mm_extract_epi16(_mm_minpos_epu16(quarter), 0);
}

// MinExponentBf16 of a large array in chunks across the pool: the scan
// reads both operands before the product does, and on one thread a cold
// 5 MB pair took about as long as the product's own reads.
constexpr int64_t kScanChunk = int64_t{1} << 17;  // elements per task

int ScanMinExponentBf16(const uint16_t* x, int64_t count) {
  const int64_t chunks = (count + kScanChunk - 1) / kScanChunk;
  if (chunks < 2 || ThreadsForCaller() <= 1) return MinExponentBf16(x, count);
  struct Scan {
    const uint16_t* x;
    int64_t count;
    std::vector<int> lowest;
  } scan{x, count, std::vector<int>(static_cast<size_t>(chunks), 0xFF)};
  __xla_cpu_parallel_for(
      [](void* ctx, int64_t begin, int64_t end) {
        auto& c = *static_cast<Scan*>(ctx);
        for (int64_t t = begin; t < end; ++t) {
          const int64_t i = t * kScanChunk;
          c.lowest[static_cast<size_t>(t)] =
              MinExponentBf16(c.x + i, std::min(kScanChunk, c.count - i));
        }
      },
      &scan, chunks, 1);
  return *std::min_element(scan.lowest.begin(), scan.lowest.end());
}

// Whether the dot-product GEMM computes lhs x rhs as f32 arithmetic on the
// widened values would (up to summation order). VDPBF16PS reads denormal
// inputs as zero and flushes denormal products and sums; with no denormal
// input and the smallest nonzero magnitudes' biased exponents ea, eb, every
// element is a multiple of 2^(e - 134) for its operand's e, every product
// and so every partial sum a multiple of 2^(ea + eb - 268): at least 2^-126
// (normal) where nonzero when ea + eb >= 142. (Checking each element
// against 2^-56, as before, held both to half of that: a softmax's
// probabilities, often far smaller, sent attention's products to the
// widened path.)
bool DotProductExact(const uint16_t* lhs, int64_t lhs_count, const uint16_t* rhs,
                     int64_t rhs_count) {
  const int ea = ScanMinExponentBf16(lhs, lhs_count);
  if (ea == 0) return false;
  const int eb = ScanMinExponentBf16(rhs, rhs_count);
  return eb != 0 && ea + eb >= 142;
}

#endif  // XLA_CPU_BF16_GEMM

#endif  // XLA_CPU_DOT_PRODUCT_GEMM

#if defined(XLA_CPU_DOT_PRODUCT_GEMM)
// Products of few columns and many rows (an s8 convolution's im2col matrix
// times its kernel: [25088, 576] x [576, 64]) run transposed, out^T = rhs^T
// lhs^T, in blocks of rows into a buffer, each then copied into place: the
// GEMM packs the operand whose rows it broadcasts, a pass over all of lhs
// for 64 columns of work, where transposed it packs the small one. That
// shape on the 2-core EPYC, alternated: ~4.2-4.6 -> ~2.7-3.0 ms.
constexpr int64_t kMaxSwapColumns = 64;
constexpr int64_t kSwapBlockRows = 2048;   // 512 KB of the transposed product at 64 columns

bool SwapsS8(int64_t batch, int64_t m, int64_t n) {
  return batch == 1 && n > 1 && n <= kMaxSwapColumns && m >= 8 * n;
}

struct TransposeContext {
  const int32_t* src;   // [n, m]
  int32_t* dst;         // [m, n]
  int64_t m, n;
};

// dst rows [16 * begin, 16 * end) (the last task shorter): 16 x 16 tiles
// through registers (the 32-bit lanes moved as floats, bits unchanged),
// the rest element by element.
void TransposeTiles(void* ctx_ptr, int64_t begin, int64_t end) {
  const auto& c = *static_cast<const TransposeContext*>(ctx_ptr);
  const int64_t rows_end = std::min(end * 16, c.m), full_j = c.n / 16 * 16;
  int64_t i0 = begin * 16;
  for (; i0 + 16 <= rows_end; i0 += 16) {
    for (int64_t j0 = 0; j0 < full_j; j0 += 16) {
      __m512 t[16];   // t[q]: dst row i0 + q, columns j0..j0 + 15
      packed_gemm::Transpose16(reinterpret_cast<const float*>(c.src + j0 * c.m + i0), c.m, 16, t);
      for (int q = 0; q < 16; ++q) {
        _mm512_storeu_ps(reinterpret_cast<float*>(c.dst + (i0 + q) * c.n + j0), t[q]);
      }
    }
    for (int64_t j = full_j; j < c.n; ++j) {
      for (int64_t i = i0; i < i0 + 16; ++i) c.dst[i * c.n + j] = c.src[j * c.m + i];
    }
  }
  for (int64_t i = i0; i < rows_end; ++i) {
    for (int64_t j = 0; j < c.n; ++j) c.dst[i * c.n + j] = c.src[j * c.m + i];
  }
}
#endif

// MatmulS8S32 for k > 0 and a non-empty result, as computed (no swap of
// few columns).
void S8Product(const int8_t* lhs, const int8_t* rhs, int32_t* out, int64_t batch, int64_t m,
               int64_t k, int64_t n, bool transpose_lhs, bool transpose_rhs) {
#if defined(XLA_CPU_DOT_PRODUCT_GEMM)
  if (batch == 1 && n == 1 && m > 1) {  // out^T = rhs^T lhs^T: one row, m columns
    std::swap(lhs, rhs);
    std::swap(m, n);
    const bool tl = transpose_lhs;
    transpose_lhs = !transpose_rhs;
    transpose_rhs = !tl;
  }
  if (RunGemv<S8Kind>(lhs, rhs, out, batch, m, k, n, transpose_rhs)) return;
#if defined(XLA_CPU_TILE_GEMM)
  if (m >= kTileRows) {
    Gemm<S8TileKind>{lhs, rhs, out, batch, m, k, n, transpose_lhs, transpose_rhs}.Run();
    return;
  }
#endif
  Gemm<S8Kind>{lhs, rhs, out, batch, m, k, n, transpose_lhs, transpose_rhs}.Run();
#else
  WidenedS8(lhs, rhs, out, batch, m, k, n, transpose_lhs, transpose_rhs);
#endif
}

}  // namespace

void MatmulS8S32(const int8_t* lhs, const int8_t* rhs, int32_t* out, int64_t batch, int64_t m,
                 int64_t k, int64_t n, bool transpose_lhs, bool transpose_rhs) {
  if (batch <= 0 || m <= 0 || n <= 0) return;
  if (k <= 0) {
    std::fill(out, out + batch * m * n, 0);
    return;
  }
#if defined(XLA_CPU_DOT_PRODUCT_GEMM)
  if (SwapsS8(batch, m, n)) {
    // In blocks of rows where lhs is row-major (a block is contiguous), so
    // the transposed block stays in cache for its copy into place.
    const int64_t block = transpose_lhs ? m : kSwapBlockRows;
    std::vector<int32_t> transposed(static_cast<size_t>(std::min(m, block) * n));
    for (int64_t i0 = 0; i0 < m; i0 += block) {
      const int64_t rows = std::min(block, m - i0);
      S8Product(rhs, lhs + i0 * k, transposed.data(), 1, n, k, rows, !transpose_rhs,
                !transpose_lhs);
      TransposeContext ctx{transposed.data(), out + i0 * n, rows, n};
      __xla_cpu_parallel_for(&TransposeTiles, &ctx, (rows + 15) / 16, 8);
    }
    return;
  }
#endif
  S8Product(lhs, rhs, out, batch, m, k, n, transpose_lhs, transpose_rhs);
}

void MatmulBf16F32(const void* lhs_bits, const void* rhs_bits, float* out, int64_t batch,
                   int64_t m, int64_t k, int64_t n, bool transpose_lhs, bool transpose_rhs) {
  if (batch <= 0 || m <= 0 || n <= 0) return;
  if (k <= 0) {
    std::fill(out, out + batch * m * n, 0.0f);
    return;
  }
  const auto* lhs = static_cast<const uint16_t*>(lhs_bits);
  const auto* rhs = static_cast<const uint16_t*>(rhs_bits);
#if defined(XLA_CPU_BF16_GEMM)
  {
    const uint16_t *a = lhs, *b = rhs;
    int64_t rows = m, cols = n;
    bool ta = transpose_lhs, tb = transpose_rhs;
    if (batch == 1 && n == 1 && m > 1) {  // out^T = rhs^T lhs^T: one row, m columns
      std::swap(a, b);
      std::swap(rows, cols);
      ta = !transpose_rhs;
      tb = !transpose_lhs;
    }
    if (rows == 1 && tb) {
      // A matrix-vector product: the vector checked here, the matrix (the
      // bytes that matter) as Gemv streams it, where a second pass to check
      // it first made the product read it twice.
      if (MinExponentBf16(a, batch * k) >= Bf16Kind::kTinyExponent) {
        RunGemv<Bf16Kind>(a, b, out, batch, rows, k, cols, tb);
        return;
      }
    } else if (DotProductExact(lhs, batch * m * k, rhs, batch * k * n)) {
#if defined(XLA_CPU_TILE_GEMM)
      if (rows >= kTileRows) {
        Gemm<Bf16TileKind>{a, b, out, batch, rows, k, cols, ta, tb}.Run();
        return;
      }
#endif
      Gemm<Bf16Kind>{a, b, out, batch, rows, k, cols, ta, tb}.Run();
      return;
    }
  }
#endif
  WidenedBf16(lhs, rhs, out, batch, m, k, n, transpose_lhs, transpose_rhs);
}

}  // namespace XLA_CPU_ISA_NAMESPACE
}  // namespace xla_cpu_runtime
