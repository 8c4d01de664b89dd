// The AMX tile GEMM of matmul_lowp.cc (the amx variant) with its tile
// instructions computed in software (XLA_CPU_AMX_EMULATE: this unit is
// matmul_lowp.cc built as the variant isa_amx_emulated, BUILD), so its
// packing, padding, tiling and corrections are checked on every CPU with
// avx512_vnni_bf16, AMX or not: s8 x s8 -> s32 exactly against int64 sums,
// bf16 x bf16 -> f32 within f32 summation's bound, every transpose, several
// batches, shapes around the 16- and 32-row tiles, the 32-column strips
// and the k groups and blocks, serial and on the pool.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "xla/backends/cpu/runtime/cpu_runtime.h"
#include "xla/backends/cpu/runtime/kernels.h"

namespace xla_cpu_runtime {
XLA_CPU_DECLARE_DOT_KERNELS(isa_amx_emulated)
}  // namespace xla_cpu_runtime

namespace {

namespace emulated = xla_cpu_runtime::isa_amx_emulated;

bool CpuRunsTheUnit() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
         __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512bf16");
}

float Bf16(uint16_t bits) {
  const uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &wide, sizeof f);
  return f;
}

uint16_t ToBf16(float f) {  // truncation: any bf16 value will do
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return static_cast<uint16_t>(bits >> 16);
}

struct Shape {
  int64_t batch, m, k, n;
};

// Rows around one and two tiles and a 128-row task, columns around a
// strip, k around a 16-group tile step and a 512-group block (s8: 2,048,
// bf16: 1,024).
const Shape kShapes[] = {
    {1, 16, 1, 1},   {1, 16, 64, 32},  {1, 17, 65, 33},   {1, 31, 63, 31},  {1, 32, 64, 32},
    {1, 33, 130, 70}, {1, 64, 512, 64}, {1, 65, 513, 95}, {2, 40, 24, 40},  {3, 100, 200, 50},
    {1, 130, 1030, 150}, {1, 256, 256, 256}, {1, 16, 2, 1000}, {1, 150, 2100, 40},
};

class AmxEmulatedTest : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    if (!CpuRunsTheUnit()) GTEST_SKIP() << "this CPU lacks avx512_vnni/avx512_bf16 (the unit's ISA)";
    __xla_cpu_runtime_set_num_threads(GetParam());
  }
  void TearDown() override { __xla_cpu_runtime_set_num_threads(0); }
};

TEST_P(AmxEmulatedTest, S8MatchesInt64Sums) {
  std::mt19937 rng(1);
  for (const Shape& s : kShapes) {
    for (int tl = 0; tl < 2; ++tl) {
      for (int tr = 0; tr < 2; ++tr) {
        std::vector<int8_t> lhs(s.batch * s.m * s.k), rhs(s.batch * s.k * s.n);
        for (auto& x : lhs) x = static_cast<int8_t>(rng() % 256 - 128);
        for (size_t i = 0; i < rhs.size(); ++i) {
          rhs[i] = i % 2 == 0 ? int8_t{-128} : static_cast<int8_t>(rng() % 256 - 128);
        }
        std::vector<int32_t> out(s.batch * s.m * s.n, 7);
        emulated::MatmulS8S32(lhs.data(), rhs.data(), out.data(), s.batch, s.m, s.k, s.n, tl != 0,
                              tr != 0);
        for (int64_t b = 0; b < s.batch; ++b) {
          for (int64_t i = 0; i < s.m; ++i) {
            for (int64_t j = 0; j < s.n; ++j) {
              int64_t want = 0;
              for (int64_t p = 0; p < s.k; ++p) {
                const int64_t a = tl ? lhs[(b * s.k + p) * s.m + i] : lhs[(b * s.m + i) * s.k + p];
                const int64_t c = tr ? rhs[(b * s.n + j) * s.k + p] : rhs[(b * s.k + p) * s.n + j];
                want += a * c;
              }
              ASSERT_EQ(out[(b * s.m + i) * s.n + j], static_cast<int32_t>(want))
                  << s.batch << "x" << s.m << "x" << s.k << "x" << s.n << " tl=" << tl
                  << " tr=" << tr << " at " << b << "," << i << "," << j;
            }
          }
        }
      }
    }
  }
}

TEST_P(AmxEmulatedTest, Bf16WithinF32SummationBound) {
  std::mt19937 rng(2);
  std::normal_distribution<float> normal;
  for (const Shape& s : kShapes) {
    for (int tl = 0; tl < 2; ++tl) {
      for (int tr = 0; tr < 2; ++tr) {
        std::vector<uint16_t> lhs(s.batch * s.m * s.k), rhs(s.batch * s.k * s.n);
        for (auto& x : lhs) x = ToBf16(normal(rng));
        for (auto& x : rhs) x = ToBf16(normal(rng));
        std::vector<float> out(s.batch * s.m * s.n, 7.0f);
        emulated::MatmulBf16F32(lhs.data(), rhs.data(), out.data(), s.batch, s.m, s.k, s.n,
                                tl != 0, tr != 0);
        for (int64_t b = 0; b < s.batch; ++b) {
          for (int64_t i = 0; i < s.m; ++i) {
            for (int64_t j = 0; j < s.n; ++j) {
              double want = 0, magnitude = 0;
              for (int64_t p = 0; p < s.k; ++p) {
                const double a =
                    Bf16(tl ? lhs[(b * s.k + p) * s.m + i] : lhs[(b * s.m + i) * s.k + p]);
                const double c =
                    Bf16(tr ? rhs[(b * s.n + j) * s.k + p] : rhs[(b * s.k + p) * s.n + j]);
                want += a * c;
                magnitude += std::fabs(a * c);
              }
              const double bound = (s.k + 1) * std::ldexp(1.0, -24) * magnitude;
              ASSERT_LE(std::fabs(out[(b * s.m + i) * s.n + j] - want), bound)
                  << s.batch << "x" << s.m << "x" << s.k << "x" << s.n << " tl=" << tl
                  << " tr=" << tr << " at " << b << "," << i << "," << j;
            }
          }
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Threads, AmxEmulatedTest, ::testing::Values(1, 4),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return std::to_string(info.param) + "_threads";
                         });

}  // namespace
