// packed_gemm.h's f32 GEMM against a double-precision loop: edges of the
// 12 x 32 tile, several contraction and column blocks, transposed
// operands, accumulation, a result with a row stride wider than its
// columns (nothing outside the result written), and the same bits for a
// block of the result computed alone (what a thread's slab computes).
// Built with the avx512 variant's flags; skips, saying so, on CPUs
// without AVX-512.
#include "xla/backends/cpu/runtime/packed_gemm.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

namespace {

namespace pg = xla_cpu_runtime::XLA_CPU_ISA_NAMESPACE::packed_gemm;

bool HasAvx512() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
}

struct Space {
  explicit Space(int64_t floats)
      : data(static_cast<float*>(std::aligned_alloc(64, (floats * 4 + 63) / 64 * 64))) {}
  ~Space() { std::free(data); }
  float* data;
};

constexpr float kGuard = 12345.0f;

// Runs one product: A [m, k] (stored [k, m] if ta), B [k, n] (stored [n, k]
// if tb), C [m, n] in rows of ldc = n + 3 floats whose last three hold
// kGuard, starting from `init` when accumulating.
std::vector<float> RunGemm(const std::vector<float>& a, const std::vector<float>& b, int64_t m,
                       int64_t n, int64_t k, bool ta, bool tb, bool accumulate,
                       const std::vector<float>& init) {
  const int64_t ldc = n + 3;
  std::vector<float> c(static_cast<size_t>(m * ldc), kGuard);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = init[i * n + j];
  }
  Space space(pg::SpaceFloats(m, n, k));
  pg::Gemm(m, n, k, a.data(), ta ? 1 : k, ta ? m : 1, b.data(), tb ? 1 : n, tb ? k : 1, c.data(),
           ldc, accumulate, space.data);
  return c;
}

TEST(PackedGemm, MatchesADoubleLoop) {
  if (!HasAvx512()) GTEST_SKIP() << "this CPU has no AVX-512 (F/BW/DQ/VL): packed_gemm.h unused";
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  const std::vector<std::array<int64_t, 3>> shapes = {
      {1, 1, 1},    {12, 32, 16},  {13, 33, 17},  {11, 5, 40},    {25, 70, 300},
      {100, 257, 800}, {37, 1030, 33}, {300, 700, 390}, {1550, 40, 30}, {24, 64, 769},
      {20, 1600, 40}, {64, 512, 512}, {40, 530, 700}};
  for (const auto& [m, n, k] : shapes) {
    for (int t = 0; t < 8; ++t) {
      const bool ta = t & 1, tb = t & 2, accumulate = t & 4;
      SCOPED_TRACE(std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) +
                   " ta=" + std::to_string(ta) + " tb=" + std::to_string(tb) +
                   " accumulate=" + std::to_string(accumulate));
      std::vector<float> a(static_cast<size_t>(m * k)), b(static_cast<size_t>(k * n)),
          init(static_cast<size_t>(m * n));
      for (auto& x : a) x = dist(rng);
      for (auto& x : b) x = dist(rng);
      for (auto& x : init) x = dist(rng);
      const auto c = RunGemm(a, b, m, n, k, ta, tb, accumulate, init);
      const int64_t ldc = n + 3;
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          double sum = accumulate ? init[i * n + j] : 0.0;
          double magnitude = std::abs(sum);
          for (int64_t p = 0; p < k; ++p) {
            const double x = a[ta ? p * m + i : i * k + p], y = b[tb ? j * k + p : p * n + j];
            sum += x * y;
            magnitude += std::abs(x * y);
          }
          // f32 sums: within (k + 2) units of 2^-24 of the sum of magnitudes.
          ASSERT_LE(std::abs(c[i * ldc + j] - sum), std::ldexp(double(k + 2), -24) * magnitude)
              << i << "," << j;
        }
        for (int64_t j = n; j < ldc; ++j) ASSERT_EQ(c[i * ldc + j], kGuard) << i << "," << j;
      }
    }
  }
}

TEST(PackedGemm, ABlockOfTheResultAloneHasTheSameBits) {
  if (!HasAvx512()) GTEST_SKIP() << "this CPU has no AVX-512 (F/BW/DQ/VL): packed_gemm.h unused";
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  const int64_t m = 90, n = 200, k = 1000;
  std::vector<float> a(static_cast<size_t>(m * k)), b(static_cast<size_t>(k * n));
  for (auto& x : a) x = dist(rng);
  for (auto& x : b) x = dist(rng);
  const std::vector<float> zeros(static_cast<size_t>(m * n), 0.0f);
  const auto whole = RunGemm(a, b, m, n, k, false, false, false, zeros);
  // Rows 30..59 and columns 70..169: A's rows and B's columns from there.
  const int64_t i0 = 30, rows = 30, j0 = 70, cols = 100;
  std::vector<float> c(static_cast<size_t>(rows * cols));
  Space space(pg::SpaceFloats(rows, cols, k));
  pg::Gemm(rows, cols, k, a.data() + i0 * k, k, 1, b.data() + j0, n, 1, c.data(), cols, false,
           space.data);
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) {
      ASSERT_EQ(c[i * cols + j], whole[(i0 + i) * (n + 3) + j0 + j]) << i << "," << j;
    }
  }
}

// A partial panel computes only the rows it needs (4 or 8, PartialRows):
// products of 1..11 rows (a single partial panel, B packed, read in place,
// or stored transposed) have the bits of the same rows of a product of 24
// (whole panels, 12 rows each), and the guard columns stay untouched.
TEST(PackedGemm, APartialPanelHasTheBitsOfAWholeOne) {
  if (!HasAvx512()) GTEST_SKIP() << "this CPU has no AVX-512 (F/BW/DQ/VL): packed_gemm.h unused";
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  const int64_t m = 24, k = 300;
  for (const int64_t n : {int64_t{70}, int64_t{160}}) {
    for (const bool tb : {false, true}) {
      std::vector<float> a(static_cast<size_t>(m * k)), b(static_cast<size_t>(k * n));
      for (auto& x : a) x = dist(rng);
      for (auto& x : b) x = dist(rng);
      const std::vector<float> zeros(static_cast<size_t>(m * n), 0.0f);
      const auto whole = RunGemm(a, b, m, n, k, false, tb, false, zeros);
      for (int64_t rows = 1; rows < pg::kMR; ++rows) {
        const auto part = RunGemm(a, b, rows, n, k, false, tb, false, zeros);
        for (int64_t i = 0; i < rows; ++i) {
          for (int64_t j = 0; j < n + 3; ++j) {
            ASSERT_EQ(part[i * (n + 3) + j], whole[i * (n + 3) + j])
                << "n " << n << (tb ? " B^T" : "") << ", " << rows << " rows: " << i << "," << j;
          }
        }
      }
    }
  }
}

// Products of few rows with B stored transposed run as C^T = B^T A^T (B^T
// read in place, the tile stored transposed): the same bits as the same
// rows of a product that runs as it is.
TEST(PackedGemm, TheTransposedProductHasTheSameBits) {
  if (!HasAvx512()) GTEST_SKIP() << "this CPU has no AVX-512 (F/BW/DQ/VL): packed_gemm.h unused";
  ASSERT_LT(64, pg::kMaxRowsForSwap);
  ASSERT_GE(200, pg::kMaxRowsForSwap);
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  const int64_t n = 517, k = 700;
  std::vector<float> a(static_cast<size_t>(200 * k)), b(static_cast<size_t>(n * k));
  for (auto& x : a) x = dist(rng);
  for (auto& x : b) x = dist(rng);
  const std::vector<float> zeros(static_cast<size_t>(200 * n), 0.0f);
  const auto whole = RunGemm(a, b, 200, n, k, false, true, false, zeros);  // as it is
  ASSERT_FALSE(pg::SwapsOperands(200, n, 1, k));
  // 64 rows, and 128 (four whole column panels of the transposed product).
  for (const int64_t rows : {int64_t{64}, int64_t{128}}) {
    ASSERT_TRUE(pg::SwapsOperands(rows, n, 1, k)) << rows;
    const auto few = RunGemm(a, b, rows, n, k, false, true, false, zeros);  // transposed
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t j = 0; j < n + 3; ++j) {
        ASSERT_EQ(few[i * (n + 3) + j], whole[i * (n + 3) + j]) << rows << ": " << i << "," << j;
      }
    }
  }
}

// Which products run transposed: few rows, or whole panels below
// kMaxPanelRowsForSwap rows; only with B stored transposed.
TEST(PackedGemm, SwapsOperandsWhereBsPackingWouldCostMost) {
  EXPECT_TRUE(pg::SwapsOperands(64, 512, 1, 512));
  EXPECT_TRUE(pg::SwapsOperands(95, 512, 1, 512));
  EXPECT_TRUE(pg::SwapsOperands(128, 4096, 1, 4096));
  EXPECT_TRUE(pg::SwapsOperands(160, 2048, 1, 2048));
  EXPECT_FALSE(pg::SwapsOperands(100, 2048, 1, 2048));  // a partial panel
  EXPECT_FALSE(pg::SwapsOperands(192, 2048, 1, 2048));
  EXPECT_FALSE(pg::SwapsOperands(256, 1024, 1, 4096));
  EXPECT_FALSE(pg::SwapsOperands(128, 4096, 4096, 1));  // B row-major
  EXPECT_FALSE(pg::SwapsOperands(64, 16, 1, 512));      // too few columns
}

}  // namespace
