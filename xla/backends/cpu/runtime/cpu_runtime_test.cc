#include "xla/backends/cpu/runtime/cpu_runtime.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <complex>
#include <cstdint>
#include <mutex>
#include <random>
#include <set>
#include <type_traits>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace {

// Restores the default thread count when a test changes it.
class CpuRuntimeTest : public ::testing::Test {
 protected:
  void TearDown() override { __xla_cpu_runtime_set_num_threads(0); }
};

struct CoverageContext {
  std::vector<std::atomic<int>> hits;
  std::mutex mutex;
  std::vector<std::pair<int64_t, int64_t>> ranges;
  explicit CoverageContext(int64_t n) : hits(static_cast<size_t>(n)) {}
};

void CoverageBody(void* ctx_ptr, int64_t begin, int64_t end) {
  auto& ctx = *static_cast<CoverageContext*>(ctx_ptr);
  for (int64_t i = begin; i < end; ++i) ctx.hits[static_cast<size_t>(i)]++;
  std::lock_guard<std::mutex> lock(ctx.mutex);
  ctx.ranges.emplace_back(begin, end);
}

TEST_F(CpuRuntimeTest, ParallelForCoversEveryIndexOnce) {
  for (int threads : {1, 2, 3, 8}) {
    __xla_cpu_runtime_set_num_threads(threads);
    ASSERT_EQ(__xla_cpu_runtime_num_threads(), threads);
    for (int64_t n : {0, 1, 2, 3, 7, 64, 100, 1000, 12345}) {
      for (int64_t min_chunk : {-1, 0, 1, 3, 64, 1000, 100000}) {
        SCOPED_TRACE("threads=" + std::to_string(threads) + " n=" + std::to_string(n) +
                     " min_chunk=" + std::to_string(min_chunk));
        CoverageContext ctx(n);
        __xla_cpu_parallel_for(&CoverageBody, &ctx, n, min_chunk);
        for (int64_t i = 0; i < n; ++i) ASSERT_EQ(ctx.hits[static_cast<size_t>(i)].load(), 1) << i;
        std::sort(ctx.ranges.begin(), ctx.ranges.end());
        const int64_t min_size = std::max<int64_t>(1, min_chunk);
        for (size_t r = 0; r < ctx.ranges.size(); ++r) {
          const auto& [begin, end] = ctx.ranges[r];
          ASSERT_LT(begin, end);
          if (r + 1 < ctx.ranges.size()) {
            ASSERT_GE(end - begin, min_size);
          }
        }
        if (n <= std::max<int64_t>(1, min_chunk) || threads == 1) {
          ASSERT_LE(ctx.ranges.size(), 1u);  // inline: one call
        }
      }
    }
  }
}

struct NestedContext {
  std::vector<std::atomic<int>> hits;
  int64_t inner;
  explicit NestedContext(int64_t outer, int64_t inner_n)
      : hits(static_cast<size_t>(outer * inner_n)), inner(inner_n) {}
};

struct InnerContext {
  NestedContext* nested;
  int64_t row;
};

void InnerBody(void* ctx_ptr, int64_t begin, int64_t end) {
  auto& ctx = *static_cast<InnerContext*>(ctx_ptr);
  for (int64_t j = begin; j < end; ++j) {
    ctx.nested->hits[static_cast<size_t>(ctx.row * ctx.nested->inner + j)]++;
  }
}

void OuterBody(void* ctx_ptr, int64_t begin, int64_t end) {
  auto* nested = static_cast<NestedContext*>(ctx_ptr);
  for (int64_t i = begin; i < end; ++i) {
    InnerContext inner{nested, i};
    __xla_cpu_parallel_for(&InnerBody, &inner, nested->inner, 1);
  }
}

TEST_F(CpuRuntimeTest, NestedParallelForDoesNotDeadlock) {
  for (int threads : {2, 4}) {
    __xla_cpu_runtime_set_num_threads(threads);
    NestedContext ctx(37, 53);
    __xla_cpu_parallel_for(&OuterBody, &ctx, 37, 1);
    for (const auto& hit : ctx.hits) ASSERT_EQ(hit.load(), 1);
  }
}

// Helpers keep polling for the next call's state after theirs (pool.cc):
// calls back to back, after pauses inside and beyond the spin window, and
// from two calling threads at once each cover every index exactly once.
TEST_F(CpuRuntimeTest, ParallelForCallsBackToBackAndConcurrently) {
  for (int threads : {2, 4}) {
    __xla_cpu_runtime_set_num_threads(threads);
    auto calls = [](int count, int64_t n, int seed) {
      for (int c = 0; c < count; ++c) {
        CoverageContext ctx(n + c % 7);
        __xla_cpu_parallel_for(&CoverageBody, &ctx, n + c % 7, 1 + (c + seed) % 5);
        for (const auto& hit : ctx.hits) ASSERT_EQ(hit.load(), 1);
        if (c % 50 == 49) std::this_thread::sleep_for(std::chrono::microseconds(c % 3 ? 500 : 5000));
      }
    };
    calls(400, 97, 0);
    std::thread other(calls, 300, 61, 1);
    calls(300, 89, 2);
    other.join();
  }
}

TEST_F(CpuRuntimeTest, SymbolTableNamesEveryEntryPoint) {
  int64_t count = 0;
  const XlaCpuRuntimeSymbol* symbols = __xla_cpu_runtime_symbols(&count);
  std::set<std::string> names;
  for (int64_t i = 0; i < count; ++i) {
    ASSERT_NE(symbols[i].address, nullptr);
    names.insert(symbols[i].name);
  }
  EXPECT_EQ(names.size(), static_cast<size_t>(count));
  for (const char* name : {"__xla_cpu_parallel_for", "__xla_cpu_matmul_f32",
                           "__xla_cpu_matmul_addend_f32", "__xla_cpu_matmul_f64",
                           "__xla_cpu_matmul_s32", "__xla_cpu_matmul_s8_s32",
                           "__xla_cpu_matmul_bf16_f32", "__xla_cpu_matmul_c64", "__xla_cpu_matmul_c128", "__xla_cpu_conv2d_f32",
                           "__xla_cpu_conv2d_f64", "__xla_cpu_conv2d_filter_f32",
                           "__xla_cpu_conv2d_filter_f64", "__xla_cpu_conv2d_depthwise_filter_f32",
                           "__xla_cpu_conv2d_depthwise_filter_f64", "__xla_cpu_runtime_num_threads",
                           "__xla_cpu_fft_f32", "__xla_cpu_fft_f64", "__xla_cpu_syevd_f32",
                           "__xla_cpu_syevd_f64", "__xla_cpu_gesdd_f32", "__xla_cpu_gesdd_f64",
                           "__xla_cpu_getrf_f32", "__xla_cpu_getrf_f64", "__xla_cpu_geqrf_f32",
                           "__xla_cpu_geqrf_f64", "__xla_cpu_orgqr_f32", "__xla_cpu_orgqr_f64",
                           "__xla_cpu_geev_f32", "__xla_cpu_geev_f64", "__xla_cpu_geev_c64",
                           "__xla_cpu_geev_c128"}) {
    EXPECT_EQ(names.count(name), 1u) << name;
  }
}

// ---------------------------------------------------------------------------
// Matmul against a naive loop.

template <typename T>
T RandomValue(std::mt19937& rng) {
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  if constexpr (std::is_same_v<T, int32_t>) {
    return static_cast<T>(rng());  // the whole range: sums wrap
  } else if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(dist(rng));
  } else {
    using R = typename T::value_type;
    const R re = static_cast<R>(dist(rng));
    return T(re, static_cast<R>(dist(rng)));
  }
}

template <typename T>
std::vector<T> RandomVector(std::mt19937& rng, int64_t size) {
  std::vector<T> v(static_cast<size_t>(size));
  for (auto& x : v) x = RandomValue<T>(rng);
  return v;
}

template <typename T>
std::vector<T> NaiveMatmul(const std::vector<T>& lhs, const std::vector<T>& rhs, int64_t batch,
                           int64_t m, int64_t k, int64_t n, bool tl, bool tr) {
  std::vector<T> out(static_cast<size_t>(batch * m * n));
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        // Integers in uint32_t: wraparound modulo 2^32, defined in C++.
        using Acc = std::conditional_t<std::is_same_v<T, int32_t>, uint32_t, T>;
        Acc sum(0);
        for (int64_t p = 0; p < k; ++p) {
          const Acc a = static_cast<Acc>(lhs[b * m * k + (tl ? p * m + i : i * k + p)]);
          const Acc c = static_cast<Acc>(rhs[b * k * n + (tr ? j * k + p : p * n + j)]);
          sum += a * c;
        }
        out[b * m * n + i * n + j] = static_cast<T>(sum);
      }
    }
  }
  return out;
}

template <typename T>
void CallMatmul(const T* lhs, const T* rhs, T* out, int64_t batch, int64_t m, int64_t k,
                int64_t n, int32_t tl, int32_t tr) {
  if constexpr (std::is_same_v<T, float>) {
    __xla_cpu_matmul_f32(lhs, rhs, out, batch, m, k, n, tl, tr);
  } else if constexpr (std::is_same_v<T, double>) {
    __xla_cpu_matmul_f64(lhs, rhs, out, batch, m, k, n, tl, tr);
  } else if constexpr (std::is_same_v<T, int32_t>) {
    __xla_cpu_matmul_s32(lhs, rhs, out, batch, m, k, n, tl, tr);
  } else if constexpr (std::is_same_v<T, std::complex<float>>) {
    __xla_cpu_matmul_c64(lhs, rhs, out, batch, m, k, n, tl, tr);
  } else {
    __xla_cpu_matmul_c128(lhs, rhs, out, batch, m, k, n, tl, tr);
  }
}

template <typename T>
void CheckMatmul(std::mt19937& rng, int64_t batch, int64_t m, int64_t k, int64_t n, bool tl,
                 bool tr, double tolerance) {
  SCOPED_TRACE("batch=" + std::to_string(batch) + " m=" + std::to_string(m) +
               " k=" + std::to_string(k) + " n=" + std::to_string(n) + " tl=" +
               std::to_string(tl) + " tr=" + std::to_string(tr));
  const auto lhs = RandomVector<T>(rng, batch * m * k);
  const auto rhs = RandomVector<T>(rng, batch * k * n);
  std::vector<T> out(static_cast<size_t>(batch * m * n), T(12345));
  CallMatmul(lhs.data(), rhs.data(), out.data(), batch, m, k, n, tl, tr);
  const auto expected = NaiveMatmul(lhs, rhs, batch, m, k, n, tl, tr);
  const double bound = tolerance * std::max<double>(1.0, std::sqrt(static_cast<double>(k)));
  for (size_t i = 0; i < out.size(); ++i) {
    if constexpr (std::is_same_v<T, int32_t>) {
      ASSERT_EQ(out[i], expected[i]) << "element " << i;
    } else {
      ASSERT_LE(std::abs(out[i] - expected[i]), bound) << "element " << i;
    }
  }
}

template <typename T>
void MatmulSuite(double tolerance) {
  std::mt19937 rng(42);
  // Small, odd, degenerate, batched, and large enough for the threaded paths.
  const std::vector<std::array<int64_t, 4>> shapes = {
      {1, 1, 1, 1},   {1, 3, 5, 7},     {2, 4, 0, 3},      {1, 0, 4, 3},   {4, 17, 33, 9},
      {9, 31, 16, 40}, {3, 64, 64, 64},  {1, 1, 300, 1},    {1, 130, 70, 150},
      {2, 150, 129, 97}, {40, 24, 24, 24}, {1, 257, 255, 131},
      // Thin products, split along M or N over the pool.
      {1, 1, 500, 700}, {1, 700, 500, 1}, {1, 3, 400, 900}, {3, 1, 512, 1024}, {5, 40, 100, 70},
      // Vector-matrix products split into blocks of rows (MatmulVectorRows).
      {1, 1, 2000, 700}, {1, 700, 2000, 1}, {1, 1, 1030, 257}};
  for (const auto& [batch, m, k, n] : shapes) {
    for (int tl = 0; tl < 2; ++tl) {
      for (int tr = 0; tr < 2; ++tr) CheckMatmul<T>(rng, batch, m, k, n, tl, tr, tolerance);
    }
  }
  // Random shapes.
  std::uniform_int_distribution<int64_t> dim(1, 90), batches(1, 4), flag(0, 1);
  for (int trial = 0; trial < 20; ++trial) {
    CheckMatmul<T>(rng, batches(rng), dim(rng), dim(rng), dim(rng), flag(rng), flag(rng),
                   tolerance);
  }
}

TEST_F(CpuRuntimeTest, MatmulF32MatchesNaiveLoop) {
  for (int threads : {1, 2, 3}) {
    __xla_cpu_runtime_set_num_threads(threads);
    MatmulSuite<float>(1e-4);
  }
}

TEST_F(CpuRuntimeTest, MatmulF64MatchesNaiveLoop) {
  for (int threads : {1, 2}) {
    __xla_cpu_runtime_set_num_threads(threads);
    MatmulSuite<double>(1e-12);
  }
}

TEST_F(CpuRuntimeTest, MatmulS32WrapsAsTheNaiveLoop) {
  for (int threads : {1, 2}) {
    __xla_cpu_runtime_set_num_threads(threads);
    MatmulSuite<int32_t>(0);
  }
}

TEST_F(CpuRuntimeTest, MatmulComplexMatchesNaiveLoop) {
  __xla_cpu_runtime_set_num_threads(2);
  MatmulSuite<std::complex<float>>(2e-4);
  MatmulSuite<std::complex<double>>(1e-12);
}

// A vector-matrix product's blocks depend on its shape only: the same bits
// on any number of threads.
TEST_F(CpuRuntimeTest, VectorMatrixProductIsTheSameOnAnyNumberOfThreads) {
  std::mt19937 rng(11);
  const int64_t k = 3000, len = 900;
  const auto vec = RandomVector<double>(rng, k);
  const auto mat = RandomVector<double>(rng, k * len);
  std::vector<std::vector<double>> results;
  for (int threads : {1, 2, 3}) {
    __xla_cpu_runtime_set_num_threads(threads);
    std::vector<double> xa(static_cast<size_t>(len)), ax(static_cast<size_t>(len));
    __xla_cpu_matmul_f64(vec.data(), mat.data(), xa.data(), 1, 1, k, len, 0, 0);  // x A
    __xla_cpu_matmul_f64(mat.data(), vec.data(), ax.data(), 1, len, k, 1, 1, 0);  // (A^T)^T x
    ASSERT_EQ(xa, ax);
    results.push_back(xa);
  }
  EXPECT_EQ(results[0], results[1]);
  EXPECT_EQ(results[0], results[2]);
  const auto expected = NaiveMatmul(vec, mat, 1, 1, k, len, false, false);
  for (int64_t j = 0; j < len; ++j) ASSERT_NEAR(results[0][j], expected[j], 1e-10) << j;
}

struct MatmulInParallelFor {
  const float* lhs;
  const float* rhs;
  float* out;
  int64_t size;
};

void MatmulTaskBody(void* ctx_ptr, int64_t begin, int64_t end) {
  const auto& c = *static_cast<const MatmulInParallelFor*>(ctx_ptr);
  const int64_t s = c.size * c.size;
  for (int64_t b = begin; b < end; ++b) {
    __xla_cpu_matmul_f32(c.lhs + b * s, c.rhs + b * s, c.out + b * s, 1, c.size, c.size, c.size,
                         0, 0);
  }
}

TEST_F(CpuRuntimeTest, MatmulInsideParallelForRunsSerially) {
  __xla_cpu_runtime_set_num_threads(2);
  std::mt19937 rng(7);
  const int64_t batch = 4, size = 96;
  const auto lhs = RandomVector<float>(rng, batch * size * size);
  const auto rhs = RandomVector<float>(rng, batch * size * size);
  std::vector<float> out(lhs.size());
  MatmulInParallelFor ctx{lhs.data(), rhs.data(), out.data(), size};
  __xla_cpu_parallel_for(&MatmulTaskBody, &ctx, batch, 1);
  const auto expected = NaiveMatmul(lhs, rhs, batch, size, size, size, false, false);
  for (size_t i = 0; i < out.size(); ++i) ASSERT_NEAR(out[i], expected[i], 1e-3) << i;
}

// ---------------------------------------------------------------------------
// Convolution against a naive loop.

struct ConvCase {
  int64_t batch, in_h, in_w, in_c, kernel_h, kernel_w, out_c;
  int64_t stride_h, stride_w, pad_h_lo, pad_h_hi, pad_w_lo, pad_w_hi;
  int64_t lhs_dil_h, lhs_dil_w, rhs_dil_h, rhs_dil_w, groups;

  // XLA's output size: (dilated input + padding - dilated kernel) / stride + 1.
  int64_t OutSize(int64_t in, int64_t kernel, int64_t stride, int64_t lo, int64_t hi,
                  int64_t lhs_dil, int64_t rhs_dil) const {
    const int64_t dilated_in = in == 0 ? 0 : (in - 1) * lhs_dil + 1;
    const int64_t dilated_kernel = kernel == 0 ? 0 : (kernel - 1) * rhs_dil + 1;
    const int64_t padded = dilated_in + lo + hi;
    if (padded < dilated_kernel) return 0;
    return (padded - dilated_kernel) / stride + 1;
  }
  int64_t out_h() const {
    return OutSize(in_h, kernel_h, stride_h, pad_h_lo, pad_h_hi, lhs_dil_h, rhs_dil_h);
  }
  int64_t out_w() const {
    return OutSize(in_w, kernel_w, stride_w, pad_w_lo, pad_w_hi, lhs_dil_w, rhs_dil_w);
  }
  std::string Describe() const {
    std::string s;
    for (int64_t v : {batch, in_h, in_w, in_c, kernel_h, kernel_w, out_c, stride_h, stride_w,
                      pad_h_lo, pad_h_hi, pad_w_lo, pad_w_hi, lhs_dil_h, lhs_dil_w, rhs_dil_h,
                      rhs_dil_w, groups}) {
      s += std::to_string(v) + " ";
    }
    return s;
  }
};

template <typename T>
std::vector<T> NaiveConv(const ConvCase& c, const std::vector<T>& input,
                         const std::vector<T>& kernel) {
  const int64_t oh = c.out_h(), ow = c.out_w();
  const int64_t cg = c.in_c / c.groups, og = c.out_c / c.groups;
  std::vector<T> out(static_cast<size_t>(c.batch * oh * ow * c.out_c), T(0));
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t oy = 0; oy < oh; ++oy)
      for (int64_t ox = 0; ox < ow; ++ox)
        for (int64_t o = 0; o < c.out_c; ++o) {
          const int64_t g = o / og;
          T sum(0);
          for (int64_t ky = 0; ky < c.kernel_h; ++ky)
            for (int64_t kx = 0; kx < c.kernel_w; ++kx) {
              const int64_t py = oy * c.stride_h - c.pad_h_lo + ky * c.rhs_dil_h;
              const int64_t px = ox * c.stride_w - c.pad_w_lo + kx * c.rhs_dil_w;
              if (py < 0 || px < 0 || py % c.lhs_dil_h != 0 || px % c.lhs_dil_w != 0) continue;
              const int64_t iy = py / c.lhs_dil_h, ix = px / c.lhs_dil_w;
              if (iy >= c.in_h || ix >= c.in_w) continue;
              for (int64_t ci = 0; ci < cg; ++ci) {
                sum += input[((b * c.in_h + iy) * c.in_w + ix) * c.in_c + g * cg + ci] *
                       kernel[((ky * c.kernel_w + kx) * cg + ci) * c.out_c + o];
              }
            }
          out[((b * oh + oy) * ow + ox) * c.out_c + o] = sum;
        }
  return out;
}

template <typename T>
void CheckConv(std::mt19937& rng, const ConvCase& c, double tolerance) {
  SCOPED_TRACE(c.Describe());
  const auto input = RandomVector<T>(rng, c.batch * c.in_h * c.in_w * c.in_c);
  const auto kernel =
      RandomVector<T>(rng, c.kernel_h * c.kernel_w * (c.in_c / c.groups) * c.out_c);
  const int64_t oh = c.out_h(), ow = c.out_w();
  std::vector<T> out(static_cast<size_t>(c.batch * oh * ow * c.out_c), T(999));
  if constexpr (std::is_same_v<T, float>) {
    __xla_cpu_conv2d_f32(input.data(), kernel.data(), out.data(), c.batch, c.in_h, c.in_w, c.in_c,
                         c.kernel_h, c.kernel_w, c.out_c, oh, ow, c.stride_h, c.stride_w,
                         c.pad_h_lo, c.pad_w_lo, c.lhs_dil_h, c.lhs_dil_w, c.rhs_dil_h,
                         c.rhs_dil_w, c.groups);
  } else {
    __xla_cpu_conv2d_f64(input.data(), kernel.data(), out.data(), c.batch, c.in_h, c.in_w, c.in_c,
                         c.kernel_h, c.kernel_w, c.out_c, oh, ow, c.stride_h, c.stride_w,
                         c.pad_h_lo, c.pad_w_lo, c.lhs_dil_h, c.lhs_dil_w, c.rhs_dil_h,
                         c.rhs_dil_w, c.groups);
  }
  const auto expected = NaiveConv(c, input, kernel);
  for (size_t i = 0; i < out.size(); ++i) {
    ASSERT_LE(std::abs(out[i] - expected[i]), tolerance) << "element " << i;
  }
}

TEST_F(CpuRuntimeTest, Conv2DMatchesNaiveLoop) {
  std::mt19937 rng(3);
  const std::vector<ConvCase> cases = {
      // batch h w c kh kw o | sh sw | pads h lo hi, w lo hi | lhs dil | rhs dil | groups
      {1, 5, 5, 1, 3, 3, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1, 1},
      {2, 8, 7, 3, 3, 2, 4, 1, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1},
      {2, 9, 9, 4, 3, 3, 6, 2, 3, 1, 2, 2, 0, 1, 1, 1, 1, 1},
      {1, 10, 11, 2, 3, 3, 2, 1, 1, 2, 2, 2, 2, 1, 1, 2, 3, 1},   // atrous
      {1, 5, 6, 3, 3, 3, 2, 1, 1, 2, 2, 1, 2, 2, 3, 1, 1, 1},     // transposed-conv style
      {3, 7, 7, 6, 3, 3, 9, 1, 2, 1, 1, 1, 1, 1, 1, 1, 1, 3},     // grouped
      {2, 6, 6, 8, 3, 3, 8, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 8},     // depthwise
      {1, 8, 8, 4, 2, 2, 4, 2, 2, -1, 0, 0, -1, 1, 1, 1, 1, 2},   // negative padding
      {2, 32, 32, 16, 3, 3, 32, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, // several blocks and tasks
      {1, 4, 4, 5, 1, 1, 7, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1, 1},     // 1x1
      {1, 3, 3, 2, 5, 5, 2, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1, 1},     // kernel larger than input
      // lhs dilation runs by phases (convolution.cc)
      {2, 6, 6, 8, 3, 3, 4, 1, 1, 2, 1, 2, 1, 2, 2, 1, 1, 1},     // a stride-2 layer's input gradient
      {1, 4, 5, 4, 2, 2, 6, 1, 1, 0, 0, 0, 0, 3, 3, 1, 1, 2},     // phases without taps, groups
      {2, 5, 5, 3, 3, 3, 3, 2, 1, 1, 1, 2, 2, 2, 3, 2, 1, 1},     // with stride and rhs dilation
      {1, 4, 4, 2, 3, 3, 2, 1, 1, -2, 1, 1, -1, 2, 1, 1, 1, 1},   // cropping, one axis dilated
      {16, 16, 16, 32, 3, 3, 16, 1, 1, 2, 1, 2, 1, 2, 2, 1, 1, 1}, // several blocks per phase
  };
  for (int threads : {1, 2}) {
    __xla_cpu_runtime_set_num_threads(threads);
    for (const auto& c : cases) {
      CheckConv<float>(rng, c, 1e-4);
      CheckConv<double>(rng, c, 1e-11);
    }
  }
}

// The kernel-gradient order: input [c, h, w, b], kernel [c, kh, kw, o],
// out [oh, ow, b, o], against the naive loop on the same values in NHWC/HWIO.
template <typename T>
void CheckConvFilter(std::mt19937& rng, const ConvCase& c, double tolerance) {
  SCOPED_TRACE(c.Describe());
  const auto input = RandomVector<T>(rng, c.batch * c.in_h * c.in_w * c.in_c);
  const auto kernel = RandomVector<T>(rng, c.kernel_h * c.kernel_w * c.in_c * c.out_c);
  std::vector<T> nhwc(input.size()), hwio(kernel.size());
  for (int64_t ci = 0; ci < c.in_c; ++ci)
    for (int64_t y = 0; y < c.in_h; ++y)
      for (int64_t x = 0; x < c.in_w; ++x)
        for (int64_t b = 0; b < c.batch; ++b)
          nhwc[((b * c.in_h + y) * c.in_w + x) * c.in_c + ci] =
              input[((ci * c.in_h + y) * c.in_w + x) * c.batch + b];
  for (int64_t ci = 0; ci < c.in_c; ++ci)
    for (int64_t ky = 0; ky < c.kernel_h; ++ky)
      for (int64_t kx = 0; kx < c.kernel_w; ++kx)
        for (int64_t o = 0; o < c.out_c; ++o)
          hwio[((ky * c.kernel_w + kx) * c.in_c + ci) * c.out_c + o] =
              kernel[((ci * c.kernel_h + ky) * c.kernel_w + kx) * c.out_c + o];
  const int64_t oh = c.out_h(), ow = c.out_w();
  std::vector<T> out(static_cast<size_t>(c.batch * oh * ow * c.out_c), T(999));
  if constexpr (std::is_same_v<T, float>) {
    __xla_cpu_conv2d_filter_f32(input.data(), kernel.data(), out.data(), c.batch, c.in_h, c.in_w,
                                c.in_c, c.kernel_h, c.kernel_w, c.out_c, oh, ow, c.stride_h,
                                c.stride_w, c.pad_h_lo, c.pad_w_lo, c.lhs_dil_h, c.lhs_dil_w,
                                c.rhs_dil_h, c.rhs_dil_w, 1);
  } else {
    __xla_cpu_conv2d_filter_f64(input.data(), kernel.data(), out.data(), c.batch, c.in_h, c.in_w,
                                c.in_c, c.kernel_h, c.kernel_w, c.out_c, oh, ow, c.stride_h,
                                c.stride_w, c.pad_h_lo, c.pad_w_lo, c.lhs_dil_h, c.lhs_dil_w,
                                c.rhs_dil_h, c.rhs_dil_w, 1);
  }
  const auto expected = NaiveConv(c, nhwc, hwio);
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t oy = 0; oy < oh; ++oy)
      for (int64_t ox = 0; ox < ow; ++ox)
        for (int64_t o = 0; o < c.out_c; ++o) {
          const T got = out[((oy * ow + ox) * c.batch + b) * c.out_c + o];
          const T want = expected[((b * oh + oy) * ow + ox) * c.out_c + o];
          ASSERT_LE(std::abs(got - want), tolerance) << b << " " << oy << " " << ox << " " << o;
        }
}

TEST_F(CpuRuntimeTest, Conv2DFilterMatchesNaiveLoop) {
  std::mt19937 rng(5);
  const std::vector<ConvCase> cases = {
      // batch h w c kh kw o | sh sw | pads h lo hi, w lo hi | lhs dil | rhs dil | groups
      {3, 9, 9, 4, 9, 9, 5, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1},      // stride-1 layer's gradient
      {4, 8, 8, 6, 4, 4, 3, 1, 1, 0, 1, 0, 1, 1, 1, 2, 2, 1},      // stride-2 layer's gradient
      {2, 7, 6, 3, 5, 4, 2, 2, 1, 1, 0, 0, 2, 1, 1, 1, 1, 1},      // strided, uneven padding
      {2, 5, 5, 3, 4, 4, 2, 1, 1, 1, 2, 1, 2, 2, 2, 1, 1, 1},      // lhs dilation
      {8, 32, 32, 64, 32, 32, 4, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, // several chunks
  };
  for (int threads : {1, 2}) {
    __xla_cpu_runtime_set_num_threads(threads);
    for (const auto& c : cases) {
      // f32 rounding grows with the sum's length (65536 terms in the last case).
      const double terms = static_cast<double>(c.in_c * c.kernel_h * c.kernel_w);
      CheckConvFilter<float>(rng, c, 1e-4 * std::sqrt(terms));
      CheckConvFilter<double>(rng, c, 1e-10);
    }
  }
}

// ---------------------------------------------------------------------------
// FFT against the direct sum X[k] = sum_j x[j] exp(-2 pi i jk / n).

std::vector<std::complex<double>> DirectDft(const std::vector<std::complex<double>>& x,
                                            bool inverse) {
  const size_t n = x.size();
  std::vector<std::complex<double>> out(n);
  const double sign = inverse ? 1.0 : -1.0;
  for (size_t k = 0; k < n; ++k) {
    std::complex<double> acc = 0;
    for (size_t j = 0; j < n; ++j) {
      acc += x[j] * std::polar(1.0, sign * 2 * M_PI * double(j * k % n) / double(n));
    }
    out[k] = inverse ? acc / double(n) : acc;
  }
  return out;
}

TEST_F(CpuRuntimeTest, FftMatchesTheDirectSum) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  for (int threads : {1, 2}) {
    __xla_cpu_runtime_set_num_threads(threads);
    for (int64_t n : {1, 2, 7, 12, 31}) {
      const int64_t batch = 3;
      std::vector<std::complex<double>> x(batch * n);
      for (auto& v : x) v = {dist(rng), dist(rng)};
      for (int32_t kind : {0, 1}) {
        std::vector<std::complex<double>> out(batch * n);
        __xla_cpu_fft_f64(x.data(), out.data(), batch, 1, &n, kind);
        for (int64_t b = 0; b < batch; ++b) {
          auto want = DirectDft({x.begin() + b * n, x.begin() + (b + 1) * n}, kind == 1);
          for (int64_t k = 0; k < n; ++k) {
            EXPECT_NEAR(std::abs(out[b * n + k] - want[k]), 0.0, 1e-12) << n << " " << kind;
          }
        }
      }
      // RFFT then IRFFT of a real signal gives it back; RFFT is the first
      // n/2 + 1 terms of the complex transform.
      std::vector<double> r(batch * n), back(batch * n);
      for (auto& v : r) v = dist(rng);
      const int64_t half = n / 2 + 1;
      std::vector<std::complex<double>> spec(batch * half);
      __xla_cpu_fft_f64(r.data(), spec.data(), batch, 1, &n, 2);
      __xla_cpu_fft_f64(spec.data(), back.data(), batch, 1, &n, 3);
      for (int64_t b = 0; b < batch; ++b) {
        std::vector<std::complex<double>> c(r.begin() + b * n, r.begin() + (b + 1) * n);
        auto want = DirectDft(c, false);
        for (int64_t k = 0; k < half; ++k) {
          EXPECT_NEAR(std::abs(spec[b * half + k] - want[k]), 0.0, 1e-12);
        }
      }
      for (int64_t i = 0; i < batch * n; ++i) EXPECT_NEAR(back[i], r[i], 1e-12);
    }
  }
}


// The N-D DFT of `batch` row-major arrays with dimensions `dims`: the direct
// sum along each axis in turn.
std::vector<std::complex<double>> DirectDftN(std::vector<std::complex<double>> x, int64_t batch,
                                             const std::vector<int64_t>& dims, bool inverse) {
  int64_t size = 1;
  for (int64_t d : dims) size *= d;
  for (size_t axis = 0; axis < dims.size(); ++axis) {
    int64_t stride = 1;
    for (size_t d = axis + 1; d < dims.size(); ++d) stride *= dims[d];
    const int64_t n = dims[axis];
    for (int64_t base = 0; base < batch * size; base += n * stride) {
      for (int64_t i = 0; i < stride; ++i) {
        std::vector<std::complex<double>> line(n);
        for (int64_t j = 0; j < n; ++j) line[j] = x[base + i + j * stride];
        line = DirectDft(line, inverse);
        for (int64_t j = 0; j < n; ++j) x[base + i + j * stride] = line[j];
      }
    }
  }
  return x;
}

// Multi-dimensional transforms (2-D and 3-D, batched, odd, even, prime and
// length-1 axes) in both precisions against DirectDftN: FFT and IFFT, RFFT
// as the first n/2 + 1 terms along the last axis of the complex transform of
// a real signal, IRFFT of that half spectrum giving the signal back.
template <typename T>
void CheckFftN(void (*fft)(const void*, void*, int64_t, int32_t, const int64_t*, int32_t),
               double tol) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  const std::vector<std::vector<int64_t>> shapes = {{4, 6}, {5, 7}, {1, 8}, {3, 4, 5}, {2, 1, 9}, {2, 3, 2}};
  for (int threads : {1, 3}) {
    __xla_cpu_runtime_set_num_threads(threads);
    for (const auto& dims : shapes) {
      const int64_t batch = 3;
      const int32_t rank = static_cast<int32_t>(dims.size());
      int64_t size = 1;
      for (int64_t d : dims) size *= d;
      const double scale = tol * std::sqrt(double(size)) * double(size);
      std::vector<std::complex<double>> x(batch * size);
      for (auto& v : x) v = {dist(rng), dist(rng)};
      std::vector<std::complex<T>> xt(x.begin(), x.end()), out(batch * size);
      for (int32_t kind : {0, 1}) {
        fft(xt.data(), out.data(), batch, rank, dims.data(), kind);
        auto want = DirectDftN(x, batch, dims, kind == 1);
        for (int64_t i = 0; i < batch * size; ++i) {
          const double err = std::abs(std::complex<double>(out[i]) - want[i]);
          EXPECT_LE(err, kind == 1 ? scale / double(size) : scale) << rank << " " << kind << " " << i;
        }
      }
      const int64_t last = dims.back(), half = last / 2 + 1;
      const int64_t lines = size / last;
      std::vector<T> r(batch * size), back(batch * size);
      std::vector<std::complex<double>> rc(batch * size);
      for (int64_t i = 0; i < batch * size; ++i) {
        r[i] = static_cast<T>(dist(rng));
        rc[i] = double(r[i]);
      }
      std::vector<std::complex<T>> spec(batch * lines * half);
      fft(r.data(), spec.data(), batch, rank, dims.data(), 2);
      auto full = DirectDftN(rc, batch, dims, false);
      for (int64_t l = 0; l < batch * lines; ++l) {
        for (int64_t k = 0; k < half; ++k) {
          const double err = std::abs(std::complex<double>(spec[l * half + k]) - full[l * last + k]);
          EXPECT_LE(err, scale) << "rfft " << rank << " " << l << " " << k;
        }
      }
      fft(spec.data(), back.data(), batch, rank, dims.data(), 3);
      for (int64_t i = 0; i < batch * size; ++i) {
        EXPECT_NEAR(back[i], r[i], scale / double(size) * 4) << "irfft " << rank << " " << i;
      }
    }
  }
}

TEST_F(CpuRuntimeTest, MultiDimensionalFftMatchesTheDirectSum) {
  CheckFftN<double>(&__xla_cpu_fft_f64, 1e-14);
  CheckFftN<float>(&__xla_cpu_fft_f32, 1e-6);
}

}  // namespace

namespace {

// ---------------------------------------------------------------------------
// syevd and gesdd: hand-derived values, and reconstructions (vectors are
// determined up to sign).

// Element (i, j) of an r x c matrix stored row- or column-major.
double At(const std::vector<double>& x, int64_t r, int64_t c, int64_t i, int64_t j,
          bool col_major) {
  return col_major ? x[j * r + i] : x[i * c + j];
}

TEST_F(CpuRuntimeTest, SyevdOfATwoByTwoHasEigenvaluesOneAndThree) {
  // [[2, 1], [1, 2]]: eigenvalues 1 and 3, vectors (1, -1)/sqrt2, (1, 1)/sqrt2.
  std::vector<double> a = {2, 1, 1, 2}, v(4), w(2);
  int32_t info = -1;
  __xla_cpu_syevd_f64(a.data(), v.data(), w.data(), &info, 1, 2, 1 | 4);
  EXPECT_EQ(info, 0);
  EXPECT_NEAR(w[0], 1.0, 1e-12);
  EXPECT_NEAR(w[1], 3.0, 1e-12);
  EXPECT_NEAR(std::abs(v[0] * v[2] + v[1] * v[3]), 0.0, 1e-12);  // columns orthogonal
  EXPECT_NEAR(std::abs(v[0 * 2 + 1]), std::sqrt(0.5), 1e-12);    // v[0][1]
  EXPECT_NEAR(v[0 * 2 + 1] * v[1 * 2 + 1], 0.5, 1e-12);          // second column (1, 1)/sqrt2
}

TEST_F(CpuRuntimeTest, SyevdReadsOnlyTheNamedTriangleInEitherLayout) {
  const int64_t n = 7, batch = 3;
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  for (int flags : {0, 1, 2, 3}) {
    const bool lower = flags & 1, col_major = flags & 2;
    std::vector<double> sym(batch * n * n), a(batch * n * n), v(batch * n * n), w(batch * n);
    std::vector<int32_t> info(batch, -1);
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t i = 0; i < n; ++i) {
        for (int64_t j = 0; j <= i; ++j) {
          sym[b * n * n + i * n + j] = sym[b * n * n + j * n + i] = dist(rng);
        }
      }
      // The triangle not read is garbage; (i, j) of a at its layout's place.
      for (int64_t i = 0; i < n; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          const bool read = lower ? i >= j : i <= j;
          const double x = read ? sym[b * n * n + i * n + j] : 1e6;
          a[b * n * n + (col_major ? j * n + i : i * n + j)] = x;
        }
      }
    }
    __xla_cpu_syevd_f64(a.data(), v.data(), w.data(), info.data(), batch, n, flags | 4);
    for (int64_t b = 0; b < batch; ++b) {
      EXPECT_EQ(info[b], 0);
      std::vector<double> vb(v.begin() + b * n * n, v.begin() + (b + 1) * n * n);
      for (int64_t k = 1; k < n; ++k) EXPECT_LE(w[b * n + k - 1], w[b * n + k]);
      // sym @ V == V diag(w)
      for (int64_t i = 0; i < n; ++i) {
        for (int64_t k = 0; k < n; ++k) {
          double lhs = 0;
          for (int64_t j = 0; j < n; ++j) {
            lhs += sym[b * n * n + i * n + j] * At(vb, n, n, j, k, col_major);
          }
          EXPECT_NEAR(lhs, At(vb, n, n, i, k, col_major) * w[b * n + k], 1e-12)
              << "flags " << flags << " batch " << b;
        }
      }
    }
  }
}

TEST_F(CpuRuntimeTest, GesddOfADiagonalMatrixSortsItsEntries) {
  // diag(1, -3, 2) padded to 4 x 3: singular values 3, 2, 1.
  std::vector<float> a = {1, 0, 0, 0, -3, 0, 0, 0, 2, 0, 0, 0}, s(3), u(12), vt(9);
  int32_t info = -1;
  __xla_cpu_gesdd_f32(a.data(), s.data(), u.data(), vt.data(), &info, 1, 4, 3, 1);
  EXPECT_EQ(info, 0);
  EXPECT_NEAR(s[0], 3.0f, 1e-6f);
  EXPECT_NEAR(s[1], 2.0f, 1e-6f);
  EXPECT_NEAR(s[2], 1.0f, 1e-6f);
}

TEST_F(CpuRuntimeTest, GesddReconstructsInEveryMode) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  const int64_t batch = 2;
  for (auto [m, n] : {std::pair<int64_t, int64_t>{5, 3}, {3, 5}, {20, 20}, {40, 17}}) {
    for (int flags : {1, 3, 5, 7}) {
      const bool full = flags & 2, col_major = flags & 4;
      const int64_t k = std::min(m, n), uc = full ? m : k, vr = full ? n : k;
      std::vector<double> a(batch * m * n), s(batch * k), u(batch * m * uc), vt(batch * vr * n);
      for (auto& x : a) x = dist(rng);
      std::vector<int32_t> info(batch, -1);
      __xla_cpu_gesdd_f64(a.data(), s.data(), u.data(), vt.data(), info.data(), batch, m, n,
                          flags);
      for (int64_t b = 0; b < batch; ++b) {
        EXPECT_EQ(info[b], 0);
        std::vector<double> ab(a.begin() + b * m * n, a.begin() + (b + 1) * m * n);
        std::vector<double> ub(u.begin() + b * m * uc, u.begin() + (b + 1) * m * uc);
        std::vector<double> vb(vt.begin() + b * vr * n, vt.begin() + (b + 1) * vr * n);
        for (int64_t q = 1; q < k; ++q) EXPECT_GE(s[b * k + q - 1], s[b * k + q]);
        for (int64_t i = 0; i < m; ++i) {
          for (int64_t j = 0; j < n; ++j) {
            double sum = 0;
            for (int64_t q = 0; q < k; ++q) {
              sum += At(ub, m, uc, i, q, col_major) * s[b * k + q] * At(vb, vr, n, q, j, col_major);
            }
            EXPECT_NEAR(sum, At(ab, m, n, i, j, col_major), 1e-12)
                << m << "x" << n << " flags " << flags;
          }
        }
        // U's columns orthonormal, the full ones included.
        for (int64_t p = 0; p < uc; ++p) {
          for (int64_t q = 0; q < uc; ++q) {
            double dot = 0;
            for (int64_t i = 0; i < m; ++i) {
              dot += At(ub, m, uc, i, p, col_major) * At(ub, m, uc, i, q, col_major);
            }
            EXPECT_NEAR(dot, p == q ? 1.0 : 0.0, 1e-12);
          }
        }
      }
    }
  }
}

TEST_F(CpuRuntimeTest, GesddOfANonFiniteMatrixReportsInfoAndNaN) {
  std::vector<double> a = {1, 2, NAN, 4}, s(2), u(4), vt(4);
  int32_t info = 0;
  __xla_cpu_gesdd_f64(a.data(), s.data(), u.data(), vt.data(), &info, 1, 2, 2, 1);
  EXPECT_NE(info, 0);
  EXPECT_TRUE(std::isnan(s[0]) && std::isnan(u[0]) && std::isnan(vt[3]));
}

}  // namespace

namespace {

TEST_F(CpuRuntimeTest, GetrfPivotsOnTheLargestEntryAndReportsTheFirstZeroPivot) {
  // [[1, 2], [3, 4]]: row 2 first (ipiv 2), L = [[1, 0], [1/3, 1]], U = [[3, 4], [0, 2/3]].
  std::vector<double> a = {1, 2, 3, 4}, lu(4);
  std::vector<int32_t> ipiv(2);
  int32_t info = -1;
  __xla_cpu_getrf_f64(a.data(), lu.data(), ipiv.data(), &info, 1, 2, 2, 0);
  EXPECT_EQ(info, 0);
  EXPECT_EQ(ipiv[0], 2);
  EXPECT_EQ(ipiv[1], 2);
  EXPECT_DOUBLE_EQ(lu[0], 3);
  EXPECT_DOUBLE_EQ(lu[1], 4);
  EXPECT_DOUBLE_EQ(lu[2], 1.0 / 3);
  EXPECT_NEAR(lu[3], 2.0 / 3, 1e-15);
  // Singular: [[1, 2], [2, 4]] has a zero second pivot.
  std::vector<double> s = {1, 2, 2, 4};
  __xla_cpu_getrf_f64(s.data(), lu.data(), ipiv.data(), &info, 1, 2, 2, 0);
  EXPECT_EQ(info, 2);
}

}  // namespace
