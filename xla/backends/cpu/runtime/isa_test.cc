// The ISA variants of the runtime's kernels (kernels.h): each variant this
// CPU runs against naive loops, and the dispatcher's choices and errors.
#include "xla/backends/cpu/runtime/kernels.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "xla/backends/cpu/runtime/cpu_runtime.h"

namespace {

using xla_cpu_runtime::AllIsaKernels;
using xla_cpu_runtime::ChooseIsaKernels;
using xla_cpu_runtime::ConvParams;
using xla_cpu_runtime::IsaKernels;
using xla_cpu_runtime::MissingCpuFeatures;

class IsaTest : public ::testing::Test {
 protected:
  void TearDown() override { __xla_cpu_runtime_set_num_threads(0); }
};

// The variants this CPU runs.
std::vector<const IsaKernels*> RunnableVariants() {
  std::vector<const IsaKernels*> result;
  for (const IsaKernels* variant : AllIsaKernels()) {
    if (MissingCpuFeatures(*variant).empty()) result.push_back(variant);
  }
  return result;
}

// The CPU's feature flags as the kernel reports them (/proc/cpuinfo), or
// empty where there is none.
std::set<std::string> CpuInfoFlags() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  std::set<std::string> flags;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    std::string word;
    while (words >> word) flags.insert(word);
    break;
  }
  return flags;
}

template <typename T>
std::vector<T> RandomVector(std::mt19937& rng, int64_t size) {
  std::vector<T> v(static_cast<size_t>(size));
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  for (auto& x : v) {
    if constexpr (std::is_same_v<T, int32_t>) {
      x = static_cast<int32_t>(rng());  // the whole range: sums wrap
    } else if constexpr (std::is_floating_point_v<T>) {
      x = static_cast<T>(dist(rng));
    } else {
      x = T(dist(rng), dist(rng));
    }
  }
  return v;
}

template <typename T>
void Call(const IsaKernels& kernels, const T* lhs, const T* rhs, T* out, int64_t batch, int64_t m,
          int64_t k, int64_t n, bool tl, bool tr) {
  if constexpr (std::is_same_v<T, float>) {
    kernels.matmul_f32(lhs, rhs, out, batch, m, k, n, tl, tr);
  } else if constexpr (std::is_same_v<T, double>) {
    kernels.matmul_f64(lhs, rhs, out, batch, m, k, n, tl, tr);
  } else if constexpr (std::is_same_v<T, int32_t>) {
    kernels.matmul_s32(lhs, rhs, out, batch, m, k, n, tl, tr);
  } else if constexpr (std::is_same_v<T, std::complex<float>>) {
    kernels.matmul_c64(lhs, rhs, out, batch, m, k, n, tl, tr);
  } else {
    kernels.matmul_c128(lhs, rhs, out, batch, m, k, n, tl, tr);
  }
}

template <typename T>
void CheckMatmul(const IsaKernels& kernels, double tolerance) {
  std::mt19937 rng(7);
  // Serial, thin (split over the pool), square (the tensor contraction), batched.
  const std::vector<std::array<int64_t, 4>> shapes = {
      {1, 3, 5, 7}, {2, 17, 33, 9}, {1, 1, 300, 70}, {1, 130, 70, 150}, {1, 200, 96, 190},
      {6, 40, 24, 40}};
  for (const auto& [batch, m, k, n] : shapes) {
    for (int t = 0; t < 4; ++t) {
      const bool tl = t & 1, tr = t & 2;
      SCOPED_TRACE(std::string(kernels.name) + " " + std::to_string(batch) + "x" +
                   std::to_string(m) + "x" + std::to_string(k) + "x" + std::to_string(n) +
                   " tl=" + std::to_string(tl) + " tr=" + std::to_string(tr));
      const auto lhs = RandomVector<T>(rng, batch * m * k);
      const auto rhs = RandomVector<T>(rng, batch * k * n);
      std::vector<T> out(static_cast<size_t>(batch * m * n), T(7));
      Call(kernels, lhs.data(), rhs.data(), out.data(), batch, m, k, n, tl, tr);
      for (int64_t b = 0; b < batch; ++b) {
        for (int64_t i = 0; i < m; ++i) {
          for (int64_t j = 0; j < n; ++j) {
            T sum = T(0);
            for (int64_t p = 0; p < k; ++p) {
              const T a = lhs[b * m * k + (tl ? p * m + i : i * k + p)];
              const T c = rhs[b * k * n + (tr ? j * k + p : p * n + j)];
              if constexpr (std::is_same_v<T, int32_t>) {
                sum = static_cast<int32_t>(static_cast<uint32_t>(sum) +
                                           static_cast<uint32_t>(a) * static_cast<uint32_t>(c));
              } else {
                sum += a * c;
              }
            }
            const T got = out[b * m * n + i * n + j];
            if constexpr (std::is_same_v<T, int32_t>) {
              ASSERT_EQ(got, sum) << b << "," << i << "," << j;
            } else {
              ASSERT_LE(std::abs(got - sum), tolerance * std::sqrt(double(k)))
                  << b << "," << i << "," << j;
            }
          }
        }
      }
    }
  }
}

TEST_F(IsaTest, EveryRunnableVariantMatchesNaiveMatmuls) {
  for (int threads : {1, 2}) {
    __xla_cpu_runtime_set_num_threads(threads);
    for (const IsaKernels* kernels : RunnableVariants()) {
      CheckMatmul<float>(*kernels, 1e-5);
      CheckMatmul<double>(*kernels, 1e-13);
      CheckMatmul<int32_t>(*kernels, 0);
      CheckMatmul<std::complex<float>>(*kernels, 2e-5);
      CheckMatmul<std::complex<double>>(*kernels, 1e-13);
    }
  }
}

// The packed f32 GEMM's operand forms (packed_gemm.h), on every variant and
// one or two threads against one naive product per shape: A read in place
// (row-major A, at most 256 columns), B read in place where both would
// apply (few rows: B's form wins), the swapped product, and packed both.
TEST_F(IsaTest, EveryRunnableVariantMatchesNaiveMatmulsWhereThePackedGemmReadsInPlace) {
  std::mt19937 rng(9);
  const std::vector<std::array<int64_t, 3>> shapes = {
      {512, 512, 64}, {90, 1500, 64}, {200, 700, 250}, {131, 300, 257}};
  for (const auto& [m, k, n] : shapes) {
    for (int t = 0; t < 4; ++t) {
      const bool tl = t & 1, tr = t & 2;
      const auto lhs = RandomVector<float>(rng, m * k);
      const auto rhs = RandomVector<float>(rng, k * n);
      std::vector<double> want(static_cast<size_t>(m * n), 0.0);
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t p = 0; p < k; ++p) {
          const double a = lhs[tl ? p * m + i : i * k + p];
          for (int64_t j = 0; j < n; ++j) want[i * n + j] += a * rhs[tr ? j * k + p : p * n + j];
        }
      }
      for (int threads : {1, 2}) {
        __xla_cpu_runtime_set_num_threads(threads);
        for (const IsaKernels* kernels : RunnableVariants()) {
          SCOPED_TRACE(std::string(kernels->name) + " threads=" + std::to_string(threads) + " " +
                       std::to_string(m) + "x" + std::to_string(k) + "x" + std::to_string(n) +
                       " tl=" + std::to_string(tl) + " tr=" + std::to_string(tr));
          std::vector<float> out(static_cast<size_t>(m * n), 7.0f);
          kernels->matmul_f32(lhs.data(), rhs.data(), out.data(), 1, m, k, n, tl, tr);
          for (int64_t i = 0; i < m * n; ++i) {
            ASSERT_LE(std::abs(out[i] - want[i]), 1e-5 * std::sqrt(double(k))) << i;
          }
        }
      }
    }
  }
}

// out = addend + alpha (lhs x rhs) (matmul_addend_f32) on every variant
// and path: tiny (Eigen's operator), k = 0, the vector-row and row-dot
// forms, Eigen's serial GEMM, the packed GEMM (AVX-512) with two blocks of
// the contraction (the addend added by the first, the output by the
// second) in slabs over two threads, its swapped form (few rows, B stored
// transposed: the tile stored transposed), B read in place and A read in
// place (row-major A, 64 columns), the tensor
// contraction (a square product off AVX-512) and batches.
TEST_F(IsaTest, EveryRunnableVariantAddsTheAddendToItsProducts) {
  std::mt19937 rng(5);
  const std::vector<std::array<int64_t, 4>> shapes = {
      {1, 3, 5, 7},     {1, 4, 0, 5},       {1, 1, 300, 70},  {1, 70, 300, 1},
      {1, 50, 9, 1},    {1, 130, 70, 150},  {1, 256, 400, 200}, {1, 40, 512, 512},
      {1, 64, 512, 512}, {1, 200, 96, 190}, {6, 40, 24, 40},  {3, 64, 128, 64},
      {1, 512, 512, 64}};
  for (int threads : {1, 2}) {
    __xla_cpu_runtime_set_num_threads(threads);
    for (const IsaKernels* kernels : RunnableVariants()) {
      for (const auto& [batch, m, k, n] : shapes) {
        for (int t = 0; t < 4; ++t) {
          const bool tl = t & 1, tr = t & 2;
          const float alpha = t == 3 ? 1.0f : -0.37f;
          SCOPED_TRACE(std::string(kernels->name) + " threads=" + std::to_string(threads) + " " +
                       std::to_string(batch) + "x" + std::to_string(m) + "x" + std::to_string(k) +
                       "x" + std::to_string(n) + " tl=" + std::to_string(tl) +
                       " tr=" + std::to_string(tr));
          const auto lhs = RandomVector<float>(rng, batch * m * k);
          const auto rhs = RandomVector<float>(rng, batch * k * n);
          const auto addend = RandomVector<float>(rng, batch * m * n);
          std::vector<float> out(static_cast<size_t>(batch * m * n), 7.0f);
          kernels->matmul_addend_f32(lhs.data(), rhs.data(), out.data(), batch, m, k, n, tl, tr,
                                     addend.data(), alpha);
          for (int64_t b = 0; b < batch; ++b) {
            for (int64_t i = 0; i < m; ++i) {
              for (int64_t j = 0; j < n; ++j) {
                double sum = 0;
                for (int64_t p = 0; p < k; ++p) {
                  sum += double(lhs[b * m * k + (tl ? p * m + i : i * k + p)]) *
                         rhs[b * k * n + (tr ? j * k + p : p * n + j)];
                }
                const int64_t at = b * m * n + i * n + j;
                ASSERT_LE(std::abs(out[at] - (addend[at] + alpha * sum)),
                          1e-5 * std::sqrt(double(k) + 1.0))
                    << b << "," << i << "," << j;
              }
            }
          }
        }
      }
    }
  }
}

// The low-precision matmuls (matmul_lowp.cc) on every variant: s8 x s8 ->
// s32 exactly (int64 sums reduced modulo 2^32), with operands of -128 and
// 127 only in some cases (the +128 offset's overflow would show), and
// bf16 x bf16 -> f32 within f32 summation's error bound. Shapes around
// the 8 x 32 micro-tile, the 64-row blocks and the k groups and blocks
// (4 and 512 for s8, 2 and 256 for bf16), transposes, batches.
float Bf16Value(uint16_t bits) {
  const uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &wide, sizeof f);
  return f;
}

uint16_t Bf16Bits(float f) {  // truncation: any bf16 will do
  uint32_t wide;
  std::memcpy(&wide, &f, sizeof wide);
  return static_cast<uint16_t>(wide >> 16);
}

void CheckLowPrecisionMatmuls(const IsaKernels& kernels) {
  std::mt19937 rng(11);
  const std::vector<std::array<int64_t, 4>> shapes = {
      {1, 1, 1, 1},   {1, 7, 7, 7},    {1, 67, 67, 67},  {1, 1, 300, 70}, {1, 300, 64, 1},
      {2, 17, 33, 9}, {1, 130, 1030, 150}, {3, 8, 5, 33}, {1, 9, 3, 40},  {1, 65, 514, 97},
      {1, 1, 0, 5},   {1, 1, 1030, 300}, {1, 1, 512, 1024}};
  for (const auto& [batch, m, k, n] : shapes) {
    for (int t = 0; t < 12; ++t) {
      const bool tl = t & 1, tr = t & 2;
      const int values = t / 4;  // 0 random, 1 all -128, 2 -128 x 127
      SCOPED_TRACE(std::string(kernels.name) + " " + std::to_string(batch) + "x" +
                   std::to_string(m) + "x" + std::to_string(k) + "x" + std::to_string(n) +
                   " tl=" + std::to_string(tl) + " tr=" + std::to_string(tr) +
                   " values=" + std::to_string(values));
      std::vector<int8_t> lhs(static_cast<size_t>(batch * m * k));
      std::vector<int8_t> rhs(static_cast<size_t>(batch * k * n));
      for (auto& x : lhs) x = values == 0 ? static_cast<int8_t>(rng()) : int8_t(-128);
      for (auto& x : rhs) {
        x = values == 0 ? static_cast<int8_t>(rng()) : values == 1 ? int8_t(-128) : int8_t(127);
      }
      std::vector<int32_t> out(static_cast<size_t>(batch * m * n), 7);
      kernels.matmul_s8_s32(lhs.data(), rhs.data(), out.data(), batch, m, k, n, tl, tr);
      std::vector<uint16_t> flhs(lhs.size()), frhs(rhs.size());
      std::normal_distribution<float> normal;
      for (auto& x : flhs) x = Bf16Bits(normal(rng));
      for (auto& x : frhs) x = Bf16Bits(normal(rng));
      std::vector<float> fout(out.size(), 7.f);
      kernels.matmul_bf16_f32(flhs.data(), frhs.data(), fout.data(), batch, m, k, n, tl, tr);
      for (int64_t b = 0; b < batch; ++b) {
        for (int64_t i = 0; i < m; ++i) {
          for (int64_t j = 0; j < n; ++j) {
            int64_t sum = 0;
            double fsum = 0, magnitude = 0;
            for (int64_t p = 0; p < k; ++p) {
              const size_t a = static_cast<size_t>(b * m * k + (tl ? p * m + i : i * k + p));
              const size_t c = static_cast<size_t>(b * k * n + (tr ? j * k + p : p * n + j));
              sum += int64_t{lhs[a]} * rhs[c];
              const double product = double{Bf16Value(flhs[a])} * Bf16Value(frhs[c]);
              fsum += product;
              magnitude += std::abs(product);
            }
            const size_t o = static_cast<size_t>(b * m * n + i * n + j);
            ASSERT_EQ(out[o], static_cast<int32_t>(static_cast<uint32_t>(sum)))
                << b << "," << i << "," << j;
            // f32 sums in any order: within (k + 1) units of 2^-24 of the
            // sum of |products|.
            ASSERT_LE(std::abs(fout[o] - fsum), std::ldexp(double(k + 1), -24) * magnitude)
                << b << "," << i << "," << j;
          }
        }
      }
    }
  }
  // Tiny bf16 values (2^-70: products 2^-140, f32 denormals) are not
  // flushed to zero: the dot-product instructions would.
  const int64_t m = 9, k = 40, n = 33;
  std::vector<uint16_t> tiny(static_cast<size_t>(m * k), Bf16Bits(std::ldexp(1.0f, -70)));
  std::vector<uint16_t> ones(static_cast<size_t>(k * n), Bf16Bits(1.0f));
  std::vector<uint16_t> tiny_rhs(ones.size(), Bf16Bits(std::ldexp(1.0f, -70)));
  std::vector<float> out(static_cast<size_t>(m * n));
  kernels.matmul_bf16_f32(tiny.data(), tiny_rhs.data(), out.data(), 1, m, k, n, false, false);
  for (float x : out) ASSERT_EQ(x, std::ldexp(40.0f, -140)) << kernels.name;
  kernels.matmul_bf16_f32(tiny.data(), ones.data(), out.data(), 1, m, k, n, false, false);
  for (float x : out) ASSERT_EQ(x, std::ldexp(40.0f, -70)) << kernels.name;
}

TEST_F(IsaTest, EveryRunnableVariantMatchesNaiveLowPrecisionMatmuls) {
  for (int threads : {1, 2}) {
    __xla_cpu_runtime_set_num_threads(threads);
    for (const IsaKernels* kernels : RunnableVariants()) CheckLowPrecisionMatmuls(*kernels);
  }
}

TEST_F(IsaTest, EveryRunnableVariantMatchesANaiveConvolution) {
  __xla_cpu_runtime_set_num_threads(2);
  // Stride 2, padding, rhs dilation and two feature groups.
  const ConvParams p{2, 9, 8, 4, 3, 2, 6, 5, 5, 2, 2, 1, 0, 1, 1, 1, 2, 2};
  std::mt19937 rng(3);
  const auto input = RandomVector<float>(rng, p.batch * p.in_h * p.in_w * p.in_c);
  const auto kernel = RandomVector<float>(rng, p.kernel_h * p.kernel_w * (p.in_c / 2) * p.out_c);
  std::vector<float> expected(static_cast<size_t>(p.batch * p.out_h * p.out_w * p.out_c), 0.f);
  const int64_t cg = p.in_c / p.groups, og = p.out_c / p.groups;
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t oy = 0; oy < p.out_h; ++oy)
      for (int64_t ox = 0; ox < p.out_w; ++ox)
        for (int64_t o = 0; o < p.out_c; ++o) {
          double sum = 0;
          for (int64_t ky = 0; ky < p.kernel_h; ++ky)
            for (int64_t kx = 0; kx < p.kernel_w; ++kx)
              for (int64_t c = 0; c < cg; ++c) {
                const int64_t iy = oy * p.stride_h - p.pad_h_lo + ky * p.rhs_dilation_h;
                const int64_t ix = ox * p.stride_w - p.pad_w_lo + kx * p.rhs_dilation_w;
                if (iy < 0 || iy >= p.in_h || ix < 0 || ix >= p.in_w) continue;
                sum += input[((b * p.in_h + iy) * p.in_w + ix) * p.in_c + (o / og) * cg + c] *
                       kernel[((ky * p.kernel_w + kx) * cg + c) * p.out_c + o];
              }
          expected[((b * p.out_h + oy) * p.out_w + ox) * p.out_c + o] = static_cast<float>(sum);
        }
  for (const IsaKernels* kernels : RunnableVariants()) {
    SCOPED_TRACE(kernels->name);
    std::vector<float> out(expected.size(), 7.f);
    kernels->conv2d_f32(input.data(), kernel.data(), out.data(), p);
    for (size_t i = 0; i < out.size(); ++i) ASSERT_NEAR(out[i], expected[i], 1e-5) << i;
  }
}

TEST(IsaDispatch, VariantsAreNarrowestFirstAndTheBaselineRunsAnywhere) {
  const auto& all = AllIsaKernels();
  ASSERT_FALSE(all.empty());
  EXPECT_STREQ(all[0]->name, "baseline");
  EXPECT_TRUE(MissingCpuFeatures(*all[0]).empty());
#if defined(__x86_64__)
  ASSERT_EQ(all.size(), 6u);
  EXPECT_STREQ(all[1]->name, "avx2");
  EXPECT_STREQ(all[2]->name, "avx512");
  EXPECT_STREQ(all[3]->name, "avx512_vnni");
  EXPECT_STREQ(all[4]->name, "avx512_vnni_bf16");
  EXPECT_STREQ(all[5]->name, "amx");
#endif
}

TEST(IsaDispatch, FeaturesMatchProcCpuinfo) {
#if defined(__x86_64__)
  const std::set<std::string> flags = CpuInfoFlags();
  if (flags.empty()) GTEST_SKIP() << "no /proc/cpuinfo flags";
  auto has = [&flags](const char* f) { return flags.count(f) != 0; };
  const auto& all = AllIsaKernels();
  EXPECT_EQ(MissingCpuFeatures(*all[1]).empty(), has("avx2") && has("fma"));
  const bool avx512 = has("avx2") && has("fma") && has("avx512f") && has("avx512bw") &&
                      has("avx512dq") && has("avx512vl");
  EXPECT_EQ(MissingCpuFeatures(*all[2]).empty(), avx512);
  EXPECT_EQ(MissingCpuFeatures(*all[3]).empty(), avx512 && has("avx512_vnni"));
  EXPECT_EQ(MissingCpuFeatures(*all[4]).empty(),
            avx512 && has("avx512_vnni") && has("avx512_bf16"));
  // amx also needs the OS's grant of the tile state, which a Linux kernel
  // that lists the amx flags gives (5.16 and later).
  EXPECT_EQ(MissingCpuFeatures(*all[5]).empty(), avx512 && has("avx512_vnni") &&
                                                     has("avx512_bf16") && has("amx_tile") &&
                                                     has("amx_int8") && has("amx_bf16"));
#else
  GTEST_SKIP() << "only the baseline on this architecture";
#endif
}

TEST(IsaDispatch, DefaultIsTheWidestRunnable) {
  std::string error;
  const IsaKernels* chosen = ChooseIsaKernels(nullptr, &error);
  ASSERT_NE(chosen, nullptr) << error;
  EXPECT_EQ(chosen, RunnableVariants().back());
  EXPECT_EQ(ChooseIsaKernels("", &error), chosen);
}

TEST(IsaDispatch, NamedVariantsAreChosenExactly) {
  for (const IsaKernels* variant : RunnableVariants()) {
    std::string error;
    EXPECT_EQ(ChooseIsaKernels(variant->name, &error), variant) << error;
  }
}

TEST(IsaDispatch, UnknownNameIsAnErrorListingTheVariants) {
  for (const char* bad : {"sse9", "AVX2", "avx512 ", "native"}) {
    std::string error;
    EXPECT_EQ(ChooseIsaKernels(bad, &error), nullptr) << bad;
    EXPECT_NE(error.find(std::string("XLA_CPU_RUNTIME_ISA=") + bad), std::string::npos) << error;
    EXPECT_NE(error.find("baseline"), std::string::npos) << error;
  }
}

TEST(IsaDispatch, UnsupportedVariantIsAnErrorNamingTheMissingFeatures) {
  bool any = false;
  for (const IsaKernels* variant : AllIsaKernels()) {
    const auto missing = MissingCpuFeatures(*variant);
    if (missing.empty()) continue;
    any = true;
    std::string error;
    EXPECT_EQ(ChooseIsaKernels(variant->name, &error), nullptr) << variant->name;
    EXPECT_NE(error.find(missing[0]), std::string::npos) << error;
  }
  if (!any) GTEST_SKIP() << "this CPU runs every variant";
}

TEST(IsaDispatch, ProcessChoiceIsReportedThroughTheCAbi) {
  const char* error = nullptr;
  const char* isa = __xla_cpu_runtime_isa(&error);
  // The test runs without XLA_CPU_RUNTIME_ISA unless the environment sets it.
  std::string expected_error;
  const IsaKernels* expected = ChooseIsaKernels(std::getenv("XLA_CPU_RUNTIME_ISA"),
                                                &expected_error);
  if (expected == nullptr) {
    EXPECT_EQ(isa, nullptr);
    ASSERT_NE(error, nullptr);
    EXPECT_EQ(expected_error, error);
  } else {
    ASSERT_NE(isa, nullptr) << error;
    EXPECT_STREQ(isa, expected->name);
  }
}

}  // namespace
