// The AVX-512 variants' f32 GEMM on one thread (SerialGemm, isa_variant.h):
// a blocked, packed product in the manner of BLIS, with a 12 x 32 register
// tile. Measured here (Zen 5, one thread, thread CPU time, means of 15):
// 1024^3 205 GFLOP/s against Eigen's 185, 256x2048x1024 196 against 159;
// the micro-kernel alone at 98% of the core's FMA peak. What decides the
// rest is the packing: each operand read row by row with software
// prefetches ahead (a first version without them spent 18-26% of its time
// packing, cache misses at every row of a large operand).
//
// C[m, n] (row-major, row stride ldc) = A B, or C += A B: A(i, p) at
// a[i * a_rs + p * a_cs], B(p, j) at b[p * b_rs + j * b_cs], one stride of
// each operand 1 (a transposed operand is packed as it is read).
//
// Blocking: for each block of the contraction (BlockDepth: the same blocks
// whatever the thread count or the block of C a thread computes, so every
// element is the same sum, in the same order, with the same bits), A's
// rows are packed in panels of kMR rows (kMR values per p) and, for each
// block of BlockColumns columns, B in panels of kNR columns (kNR values
// per p). The micro-kernel keeps a panel of A (12 x at most 384 floats)
// in L1 and streams B's panels from the L2-resident block: per p, two
// vectors of B and twelve broadcasts of A, 24 FMAs into 24 accumulators.
// Edges: panels padded with zeros, stores masked. Products of few rows
// read an operand in place instead (Gemm).
#ifndef XLA_BACKENDS_CPU_RUNTIME_PACKED_GEMM_H_
#define XLA_BACKENDS_CPU_RUNTIME_PACKED_GEMM_H_

#if !defined(__AVX512F__)
#error "packed_gemm.h is the AVX-512 variants' (isa.bzl)"
#endif

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

namespace xla_cpu_runtime {
namespace XLA_CPU_ISA_NAMESPACE {
namespace packed_gemm {

constexpr int64_t kMR = 12;    // rows of C per micro-tile (broadcasts of A)
constexpr int64_t kNR = 32;    // columns per micro-tile (two vectors of B)
constexpr int64_t kMaxKC = 384;  // contraction block, at most
constexpr int64_t kBlockB = 512 * 256;  // floats of B per packed block (512 KB, L2)
constexpr int64_t kMC = 1536;  // rows of A per packed block
// Smaller products stay Eigen's: its packing costs less on cache-resident
// operands (one thread here: 128^3 210 GFLOP/s against 188, 192^3 229
// against 213; 256^3 203 against Eigen's 125, which falls to that at 256
// columns).
constexpr int64_t kMinMacs = int64_t{1} << 23;

inline __mmask16 FirstLanes(int64_t count) {
  return count >= 16 ? __mmask16(0xffff)
                     : static_cast<__mmask16>((1u << std::max<int64_t>(count, 0)) - 1);
}

// out[j] = column j of the 16 x 16 floats whose row i is at
// src + min(i, rows - 1) * stride.
inline void Transpose16(const float* src, int64_t stride, int64_t rows, __m512 out[16]) {
  __m512 r[16], t[16];
  for (int64_t i = 0; i < 16; ++i) r[i] = _mm512_loadu_ps(src + std::min(i, rows - 1) * stride);
  for (int i = 0; i < 16; i += 2) {  // per 128-bit lane L: (r_i, r_i+1) elements 4L, 4L+1 / 2, 3
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {  // r[i + s], lane L: column 4L + s of rows i..i+3
    r[i] = _mm512_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
    r[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
    r[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
    r[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int s = 0; s < 4; ++s) {  // lanes 0 and 2 (0x88) or 1 and 3 (0xdd) of two row groups
    t[s] = _mm512_shuffle_f32x4(r[s], r[s + 4], 0x88);
    t[s + 4] = _mm512_shuffle_f32x4(r[s], r[s + 4], 0xdd);
    t[s + 8] = _mm512_shuffle_f32x4(r[s + 8], r[s + 12], 0x88);
    t[s + 12] = _mm512_shuffle_f32x4(r[s + 8], r[s + 12], 0xdd);
  }
  for (int s = 0; s < 4; ++s) {
    out[s] = _mm512_shuffle_f32x4(t[s], t[s + 8], 0x88);
    out[s + 8] = _mm512_shuffle_f32x4(t[s], t[s + 8], 0xdd);
    out[s + 4] = _mm512_shuffle_f32x4(t[s + 4], t[s + 12], 0x88);
    out[s + 12] = _mm512_shuffle_f32x4(t[s + 4], t[s + 12], 0xdd);
  }
}

// B[0:kc, 0:nc] into panels of kNR columns (64-byte aligned `out`).
inline void PackB(const float* b, int64_t rs, int64_t cs, int64_t kc, int64_t nc, float* out) {
  if (cs == 1) {  // row by row: each row of B read once, front to back
    const int64_t full = nc / kNR * kNR, w = nc - full;
    const __mmask16 m0 = FirstLanes(w), m1 = FirstLanes(w - 16);
    for (int64_t p = 0; p < kc; ++p) {
      const float* s = b + p * rs;
      float* o = out + p * kNR;
      if (p + 4 < kc) {
        for (int64_t j = 0; j < nc; j += 16) {
          _mm_prefetch(reinterpret_cast<const char*>(s + 4 * rs + j), _MM_HINT_T0);
        }
      }
      int64_t j = 0;
      for (; j < full; j += kNR) {
        _mm512_store_ps(o + j * kc, _mm512_loadu_ps(s + j));
        _mm512_store_ps(o + j * kc + 16, _mm512_loadu_ps(s + j + 16));
      }
      if (w > 0) {
        _mm512_store_ps(o + j * kc, _mm512_maskz_loadu_ps(m0, s + j));
        _mm512_store_ps(o + j * kc + 16, _mm512_maskz_loadu_ps(m1, s + j + 16));
      }
    }
    return;
  }
  for (int64_t j = 0; j < nc; j += kNR) {  // rs == 1: B's columns contiguous
    const int64_t w = std::min(kNR, nc - j);
    float* o = out + j * kc;
    int64_t p = 0;
    if (w == kNR) {
      for (; p + 16 <= kc; p += 16) {
        if (p + 32 <= kc) {
          for (int64_t q = 0; q < kNR; ++q) {
            _mm_prefetch(reinterpret_cast<const char*>(b + (j + q) * cs + p + 32), _MM_HINT_T0);
          }
        }
        __m512 t[16];
        Transpose16(b + j * cs + p, cs, 16, t);
        for (int q = 0; q < 16; ++q) _mm512_store_ps(o + (p + q) * kNR, t[q]);
        Transpose16(b + (j + 16) * cs + p, cs, 16, t);
        for (int q = 0; q < 16; ++q) _mm512_store_ps(o + (p + q) * kNR + 16, t[q]);
      }
    }
    for (; p < kc; ++p) {
      for (int64_t c = 0; c < kNR; ++c) o[p * kNR + c] = c < w ? b[(j + c) * cs + p] : 0.0f;
    }
  }
}

// A[0:mc, 0:kc] into panels of kMR rows.
inline void PackA(const float* a, int64_t rs, int64_t cs, int64_t mc, int64_t kc, float* out) {
  for (int64_t i = 0; i < mc; i += kMR) {
    const int64_t h = std::min(kMR, mc - i);
    float* o = out + i * kc;
    if (rs == 1) {  // A's columns contiguous: kMR values per p, one masked load
      const __mmask16 m = FirstLanes(h);
      for (int64_t p = 0; p < kc; ++p) {
        _mm512_mask_storeu_ps(o + p * kMR, FirstLanes(kMR), _mm512_maskz_loadu_ps(m, a + p * cs + i));
      }
      continue;
    }
    // 16 x 16 transposes of the panel's rows (the last row read again for
    // rows 12..15, whose columns are not stored), the next panel's rows
    // prefetched; the last columns one by one.
    const float* src = a + i * rs;
    int64_t p = 0;
    for (; p + 16 <= kc; p += 16) {
      if (i + kMR < mc) {
        for (int64_t r = 0; r < std::min(kMR, mc - i - kMR); ++r) {
          _mm_prefetch(reinterpret_cast<const char*>(src + (kMR + r) * rs + p), _MM_HINT_T0);
        }
      }
      __m512 t[16];
      Transpose16(src + p, rs, h, t);
      for (int q = 0; q < 16; ++q) _mm512_mask_storeu_ps(o + (p + q) * kMR, FirstLanes(h), t[q]);
    }
    for (; p < kc; ++p) {
      for (int64_t r = 0; r < h; ++r) o[p * kMR + r] = src[r * rs + p];
    }
    for (int64_t r = h; r < kMR; ++r) {
      for (int64_t q = 0; q < kc; ++q) o[q * kMR + r] = 0.0f;
    }
  }
}

// C'(i, j) = C(j, i): a tile of C' stored into C's rows, alpha acc plus
// the tile at `src` (laid out as C: C itself, the addend, or none). Rows
// past h and columns past w are not stored.
inline void StoreTransposed(const __m512 acc[kMR][2], float* c, int64_t ldc, const float* src,
                            float alpha, int64_t h, int64_t w) {
  alignas(64) float tile[kMR * kNR];
  for (int64_t r = 0; r < kMR; ++r) {
    _mm512_store_ps(tile + r * kNR, acc[r][0]);
    _mm512_store_ps(tile + r * kNR + 16, acc[r][1]);
  }
  const __mmask16 rows = FirstLanes(h);
  const __m512 va = _mm512_set1_ps(alpha);
  for (int64_t half = 0; half < 2 && half * 16 < w; ++half) {
    __m512 t[16];
    Transpose16(tile + half * 16, kNR, kMR, t);  // t[j]: column half*16 + j, rows in lanes
    for (int64_t j = 0; j < 16 && half * 16 + j < w; ++j) {
      const int64_t offset = (half * 16 + j) * ldc;
      __m512 v = src != nullptr
                     ? _mm512_fmadd_ps(t[j], va, _mm512_maskz_loadu_ps(rows, src + offset))
                     : _mm512_mul_ps(t[j], va);
      _mm512_mask_storeu_ps(c + offset, rows, v);
    }
  }
}

// acc = sum over p < kc of the outer products of A's and B's rows, A a
// packed panel (element (r, p) at ap[p * kMR + r]) or with kDirectA twelve
// rows read in place (ap[r * lda + p]) or with kDirectACols twelve rows of a
// column-major A (ap[p * lda + r]), B a packed panel (bp[p * kNR + j])
// or with kDirectB 32 columns read in place (bp[p * ldb + j]); then C =
// alpha acc + the tile at `src` (laid out as C: C itself to accumulate, an
// addend, or nullptr for none) on the first h rows and w columns (all of
// them if kFull), or with `transposed_c` C's rows the tile's columns
// (StoreTransposed). With alpha 1 that is acc (+ src) exactly: a fused
// multiply-add by 1 rounds once, as the sum does. kRows: the rows of the
// panel computed (the rest of acc stays zero), for a partial panel of at
// most that many rows: each computed element is the same sum as with 12.
template <bool kFull, bool kDirectA, bool kDirectB, bool kDirectACols = false, int kRows = kMR>
inline void MicroKernel(int64_t kc, const float* __restrict ap, int64_t lda,
                        const float* __restrict bp, int64_t ldb, float* c, int64_t ldc,
                        const float* src, float alpha, bool transposed_c, int64_t h, int64_t w) {
  if (!transposed_c) {
    for (int64_t r = 0; r < (kFull ? kMR : h); ++r) {
      _mm_prefetch(reinterpret_cast<const char*>(c + r * ldc), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(c + r * ldc + 16), _MM_HINT_T0);
    }
  }
  // An addend's lines (2 per row) one every 4 steps of the contraction, the
  // rest before the stores: prefetched with C's at the start, its 24 misses
  // waited for the line fill buffers, a memory latency per tile (1024 x 256
  // x 4096 on two threads: 4.5 ms plain, 5.5 with the addend, 5.0 spread).
  const int64_t src_lines =
      src != nullptr && src != c && !transposed_c ? 2 * (kFull ? kMR : h) : 0;
  __m512 acc[kMR][2];
#pragma GCC unroll 12
  for (int r = 0; r < kMR; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
  for (int64_t p = 0; p < kc; ++p) {  // fully unrolled: the 24 sums stay in registers
    if (kDirectACols) {  // the column 8 steps ahead (12 floats: at most two lines)
      _mm_prefetch(reinterpret_cast<const char*>(ap + 8 * lda), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(ap + 8 * lda + kMR - 1), _MM_HINT_T0);
    }
    if (kDirectA && p % 16 == 0) {  // each row's cache line two lines ahead
#pragma GCC unroll 12
      for (int r = 0; r < kMR; ++r) {
        _mm_prefetch(reinterpret_cast<const char*>(ap + r * lda + 32), _MM_HINT_T0);
      }
    }
    if ((p & 3) == 0 && (p >> 2) < src_lines) {
      const int64_t line = p >> 2;
      _mm_prefetch(reinterpret_cast<const char*>(src + (line >> 1) * ldc + (line & 1) * 16),
                   _MM_HINT_T0);
    }
    if (kDirectB) {  // B's row 8 ahead
      _mm_prefetch(reinterpret_cast<const char*>(bp + 8 * ldb), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(bp + 8 * ldb + 16), _MM_HINT_T0);
    }
    const __m512 b0 = kDirectB ? _mm512_loadu_ps(bp) : _mm512_load_ps(bp);
    const __m512 b1 = kDirectB ? _mm512_loadu_ps(bp + 16) : _mm512_load_ps(bp + 16);
#pragma GCC unroll 12
    for (int r = 0; r < kRows; ++r) {
      const __m512 av = _mm512_set1_ps(kDirectA ? ap[r * lda] : ap[r]);
      acc[r][0] = _mm512_fmadd_ps(av, b0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(av, b1, acc[r][1]);
    }
    ap += kDirectA ? 1 : kDirectACols ? lda : kMR;
    bp += kDirectB ? ldb : kNR;
  }
  if (transposed_c) {
    StoreTransposed(acc, c, ldc, src, alpha, h, w);
    return;
  }
  for (int64_t line = (kc + 3) >> 2; line < src_lines; ++line) {
    _mm_prefetch(reinterpret_cast<const char*>(src + (line >> 1) * ldc + (line & 1) * 16),
                 _MM_HINT_T0);
  }
  const __m512 va = _mm512_set1_ps(alpha);
  const __mmask16 m0 = kFull ? __mmask16(0xffff) : FirstLanes(w);
  const __mmask16 m1 = kFull ? __mmask16(0xffff) : FirstLanes(w - 16);
  for (int64_t r = 0; r < (kFull ? kMR : h); ++r) {
    float* row = c + r * ldc;
    __m512 x0, x1;
    if (src != nullptr) {
      const float* s = src + r * ldc;
      x0 = _mm512_fmadd_ps(acc[r][0], va,
                           kFull ? _mm512_loadu_ps(s) : _mm512_maskz_loadu_ps(m0, s));
      x1 = _mm512_fmadd_ps(acc[r][1], va,
                           kFull ? _mm512_loadu_ps(s + 16) : _mm512_maskz_loadu_ps(m1, s + 16));
    } else {
      x0 = _mm512_mul_ps(acc[r][0], va);
      x1 = _mm512_mul_ps(acc[r][1], va);
    }
    if (kFull) {
      _mm512_storeu_ps(row, x0);
      _mm512_storeu_ps(row + 16, x1);
    } else {
      _mm512_mask_storeu_ps(row, m0, x0);
      _mm512_mask_storeu_ps(row + 16, m1, x1);
    }
  }
}

// Calls f with std::integral_constant<int, R>: R = 4, 8 or kMR, the fewest
// of those covering a panel's h rows. The last panel of a product whose
// rows are no multiple of kMR (256 = 21 x 12 + 4) then computes 4 or 8
// rows, not 12 of which most are padding: 256x4096x1024 on two threads
// spent 3.9% of its time in that panel.
template <typename F>
inline void PartialRows(int64_t h, F&& f) {
  if (h <= 4) {
    f(std::integral_constant<int, 4>());
  } else if (h <= 8) {
    f(std::integral_constant<int, 8>());
  } else {
    f(std::integral_constant<int, static_cast<int>(kMR)>());
  }
}

// The contraction's blocks: as few as blocks of kMaxKC would be, of equal
// depth (a multiple of 16), the last one shorter. A function of k only.
inline int64_t BlockDepth(int64_t k) {
  const int64_t blocks = (k + kMaxKC - 1) / kMaxKC;
  return std::min(k, ((k + blocks - 1) / blocks + 15) / 16 * 16);
}

// Columns of B per packed block: kBlockB floats, whole panels.
inline int64_t BlockColumns(int64_t kc) { return std::max(kNR, kBlockB / kc / kNR * kNR); }

inline int64_t BlockFloats(int64_t m, int64_t n, int64_t k) {
  const int64_t kc = BlockDepth(k);
  const int64_t a = (std::min(kMC, m) + kMR - 1) / kMR * kMR * kc;
  const int64_t b = (std::min(BlockColumns(kc), n) + kNR - 1) / kNR * kNR * kc;
  return (a + 15) / 16 * 16 + b;
}

// The floats the packed blocks of one product take (`space` of Gemm), in
// either orientation.
inline int64_t SpaceFloats(int64_t m, int64_t n, int64_t k) {
  return std::max(BlockFloats(m, n, k), BlockFloats(n, m, k));
}

// The blocked product. With `direct_a` (A row-major or column-major: a
// unit stride) A's full panels are read in place, not packed, and with
// `direct_b` (B row-major) B's; with `transposed_c` C'(i, j) is at
// c[j * ldc + i]. The first block of the
// contraction adds `addend` (laid out as C; nullptr: none) to alpha times
// its sums, or C itself with `accumulate`; the others add C.
inline void BlockedGemm(int64_t m, int64_t n, int64_t k, const float* a, int64_t a_rs,
                        int64_t a_cs, const float* b, int64_t b_rs, int64_t b_cs, float* c,
                        int64_t ldc, bool accumulate, const float* addend, float alpha,
                        float* space, bool direct_a, bool direct_b, bool transposed_c) {
  const int64_t kc_max = BlockDepth(k), nc_max = BlockColumns(kc_max);
  float* ap = space;
  float* bp = space + ((std::min(kMC, m) + kMR - 1) / kMR * kMR * kc_max + 15) / 16 * 16;
  const int64_t full_rows = direct_a ? m / kMR * kMR : 0;  // rows read in place
  for (int64_t ic = 0; ic < m; ic += kMC) {
    const int64_t mc = std::min(kMC, m - ic);
    const int64_t in_place = std::clamp<int64_t>(full_rows - ic, 0, mc);
    for (int64_t pc = 0; pc < k; pc += kc_max) {
      const int64_t kc = std::min(kc_max, k - pc);
      const float* src = accumulate || pc > 0 ? c : addend;
      // Packed: the rows past those read in place, at their offset in ap.
      PackA(a + (ic + in_place) * a_rs + pc * a_cs, a_rs, a_cs, mc - in_place, kc,
            ap + in_place * kc);
      for (int64_t jc = 0; jc < n; jc += nc_max) {
        const int64_t nc = std::min(nc_max, n - jc);
        // Packed: the columns past the whole panels read in place.
        const int64_t b_in_place = direct_b ? nc / kNR * kNR : 0;
        PackB(b + pc * b_rs + (jc + b_in_place) * b_cs, b_rs, b_cs, kc, nc - b_in_place,
              bp + b_in_place * kc);
        // Each tile: the micro-kernel on panel ir of A and panel jr of B.
        auto tile_at = [&](int64_t ir, int64_t jr) {
          const int64_t h = std::min(kMR, mc - ir), w = std::min(kNR, nc - jr);
          const int64_t i = ic + ir, j = jc + jr;
          const int64_t offset = transposed_c ? j * ldc + i : i * ldc + j;
          float* tile = c + offset;
          const float* tile_src = src == nullptr ? nullptr : src + offset;
          const float* panel = bp + jr * kc;
          if (ir < in_place && a_cs == 1) {
            MicroKernel<false, true, false>(kc, a + i * a_rs + pc, a_rs, panel, kNR, tile, ldc,
                                            tile_src, alpha, transposed_c, h, w);
          } else if (ir < in_place) {  // A column-major (a_rs == 1)
            MicroKernel<false, false, false, true>(kc, a + i + pc * a_cs, a_cs, panel, kNR, tile,
                                                   ldc, tile_src, alpha, transposed_c, h, w);
          } else if (jr < b_in_place) {
            PartialRows(h, [&](auto rows) {
              MicroKernel<false, false, true, false, decltype(rows)::value>(
                  kc, ap + ir * kc, kMR, b + pc * b_rs + j, b_rs, tile, ldc, tile_src, alpha,
                  transposed_c, h, w);
            });
          } else if (h == kMR && w == kNR && !transposed_c) {
            MicroKernel<true, false, false>(kc, ap + ir * kc, kMR, panel, kNR, tile, ldc,
                                            tile_src, alpha, false, h, w);
          } else {
            PartialRows(h, [&](auto rows) {
              MicroKernel<false, false, false, false, decltype(rows)::value>(
                  kc, ap + ir * kc, kMR, panel, kNR, tile, ldc, tile_src, alpha, transposed_c, h,
                  w);
            });
          }
        };
        // A panel of A in L1, B's panels from the L2-resident block.
        for (int64_t ir = 0; ir < mc; ir += kMR) {
          for (int64_t jr = 0; jr < nc; jr += kNR) tile_at(ir, jr);
        }
      }
    }
  }
}

// Products of fewer rows than this with B stored transposed (B^T row-major:
// b_rs == 1) run as C^T = B^T A^T, B^T's rows read in place as the tile's
// rows and the tile stored transposed: packing B costs as much as the
// arithmetic when few rows reuse it. One thread, GFLOP/s packed/swapped
// (Eigen): attention's per-head 64x512x512 168/208 (200), 32x512x512
// 134/202 (167), 90x1024x1024 178/196 (180); in the S = 512 attention
// module at two threads that dot went from 273 to 304-316.
constexpr int64_t kMaxRowsForSwap = 96;

// And products of whole column panels of the transposed product (rows a
// multiple of kNR) below this many rows: B's packing is still a large part
// of their time. Two threads, GFLOP/s as they are / transposed (old and
// new builds alternated, twice): 128x4096x4096 330-343 / 386-401,
// 128x1024x4096 367-368 / 411-420, 128x2048x2048 359-362 / 384-405,
// 160x2048x2048 363-365 / 372-403, 96x1024x1024 352-363 / 363-404; one
// thread 128x4096x4096 173-174 / 184-196. Rows that leave a partial panel
// lose it (100x2048x2048 336-343 / 318-323, 199x2048x2048 396-402 /
// 361-362), and from 192 rows packing B pays (192x2048x2048 389-398 /
// 350-401, one thread 255x1024x4096 199-202 / 188-190).
constexpr int64_t kMaxPanelRowsForSwap = 192;

// Whether Gemm runs C^T = B^T A^T: B stored transposed (b_rs == 1) and few
// rows, or fewer than kMaxPanelRowsForSwap in whole panels.
inline bool SwapsOperands(int64_t m, int64_t n, int64_t b_rs, int64_t b_cs) {
  return b_rs == 1 && b_cs != 1 && n >= 2 * kMR &&
         (m < kMaxRowsForSwap || (m < kMaxPanelRowsForSwap && m % kNR == 0));
}

// Products of fewer rows than kMaxRowsForSwap whose B is row-major and at
// most this many floats (1 MB) read B's whole panels in place instead of
// packing them. One thread, GFLOP/s packed/in place (Eigen): 64x512x512
// 171-174/205-209 (209-217), 32x512x512 142-145/201-209 (184-192); two
// threads (a slab of half of B each) 64x512x512 346-355/366-379. Larger B
// loses: one thread 64x4096x1024 (16 MB) 164-172/145-156, B's rows read
// 128 bytes at a time where packing reads each row whole; two threads
// 64x1024x1024 and 90x1024x1024 (2 MB per slab) 364-399/331-374.
constexpr int64_t kMaxDirectB = int64_t{1} << 18;

// Products of at most this many columns read A's full panels in place
// when A is row-major or column-major (each element of A meets few columns
// of B, so packing it cost a large part of the product). One thread,
// GFLOP/s packed / in place: 512x512x64 165-176 / 236-240, 2048x1024x48 129 / 188,
// 4096x4096x16 55 / 104-107, 2048x2048x96 179-192 / 243, 4096x512x160 221
// / 248, 512x2048x256 230-233 / 248-249; two threads 512x512x64 305-332 /
// 423-437, 8192x256x64 359-366 / 500. Wider products level within 2%
// either way (1024^3 247 / 243-246, 1024x256x4096 251-256 / 243-247).
// Column-major A (A stored transposed), one thread: 512x512x64 189 / 234,
// 2048x2048x64 152 / 207-217, 2048x1024x128 191-195 / 213-215; two threads
// 512x512x64 330-357 / 430-435.
constexpr int64_t kMaxColumnsForDirectA = 256;

// C (+)= A B as above, or C = addend + alpha A B (`addend` laid out as C,
// at most one of it and `accumulate`); `space` (64-byte aligned) holds
// SpaceFloats(m, n, k). Either way each element of C is the same sum, in
// the same order, of the same exact products (FMA): the same bits.
inline void Gemm(int64_t m, int64_t n, int64_t k, const float* a, int64_t a_rs, int64_t a_cs,
                 const float* b, int64_t b_rs, int64_t b_cs, float* c, int64_t ldc,
                 bool accumulate, float* space, const float* addend = nullptr,
                 float alpha = 1.0f) {
  if (SwapsOperands(m, n, b_rs, b_cs)) {
    BlockedGemm(n, m, k, b, b_cs, b_rs, a, a_cs, a_rs, c, ldc, accumulate, addend, alpha, space,
                /*direct_a=*/true, /*direct_b=*/false, /*transposed_c=*/true);
    return;
  }
  // B read in place or A, not both (BlockedGemm's tiles read one operand
  // in place, the other packed).
  const bool direct_b = m < kMaxRowsForSwap && b_cs == 1 && k * n <= kMaxDirectB;
  BlockedGemm(m, n, k, a, a_rs, a_cs, b, b_rs, b_cs, c, ldc, accumulate, addend, alpha, space,
              /*direct_a=*/!direct_b && (a_cs == 1 || a_rs == 1) && n <= kMaxColumnsForDirectA,
              direct_b,
              /*transposed_c=*/false);
}

}  // namespace packed_gemm
}  // namespace XLA_CPU_ISA_NAMESPACE
}  // namespace xla_cpu_runtime

#endif  // XLA_BACKENDS_CPU_RUNTIME_PACKED_GEMM_H_
