// AMX tiles for the amx variant of the low-precision matmuls
// (matmul_lowp.cc, which includes this header in that variant's unit
// only): the tile geometry, its configuration, and the tile instructions
// as macros, which are the intrinsics, or, built with XLA_CPU_AMX_EMULATE
// (amx_emulated_test), the same operations computed in software.
#ifndef XLA_BACKENDS_CPU_RUNTIME_AMX_TILES_H_
#define XLA_BACKENDS_CPU_RUNTIME_AMX_TILES_H_

#include <cstdint>
#include <cstring>

#include "xla/backends/cpu/runtime/isa_variant.h"

#if !defined(XLA_CPU_AMX_EMULATE)
#include <immintrin.h>
#endif

namespace xla_cpu_runtime {
namespace XLA_CPU_ISA_NAMESPACE {

// AMX tiles: eight registers of up to 16 rows x 64 bytes, configured
// (LDTILECFG) all alike here, 16 x 64. Tiles 0-3 accumulate a 32 x 32
// block of the output ([rows 0-15, 16-31] x [columns 0-15, 16-31]), 4 and
// 5 hold 16 lhs rows each, 6 and 7 16 columns of the rhs strip each.
constexpr int kTileRows = 16;
constexpr int kTileBytes = 64;
constexpr int64_t kTileGroups = 16;  // k groups per tile step

struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

#if defined(XLA_CPU_AMX_EMULATE)
// The tile instructions in software (their documented semantics), for
// testing the tiling on CPUs without AMX.
namespace emulated_tiles {
inline thread_local uint8_t tile[8][kTileRows][kTileBytes];
inline void Load(int t, const void* base, int64_t stride) {
  for (int r = 0; r < kTileRows; ++r) {
    std::memcpy(tile[t][r], static_cast<const char*>(base) + r * stride, kTileBytes);
  }
}
inline void Store(int t, void* base, int64_t stride) {
  for (int r = 0; r < kTileRows; ++r) {
    std::memcpy(static_cast<char*>(base) + r * stride, tile[t][r], kTileBytes);
  }
}
inline void Zero(int t) { std::memset(tile[t], 0, sizeof tile[t]); }
// TDPBSSD: c[i][j] += sum over 4-byte groups g of a.s8[i][4g + t] * b.s8[g][4j + t].
inline void DotS8S8(int c, int a, int b) {
  for (int i = 0; i < kTileRows; ++i) {
    for (int j = 0; j < kTileBytes / 4; ++j) {
      uint32_t acc;
      std::memcpy(&acc, &tile[c][i][4 * j], 4);
      for (int g = 0; g < kTileRows; ++g) {
        for (int t = 0; t < 4; ++t) {
          acc += static_cast<uint32_t>(static_cast<int8_t>(tile[a][i][4 * g + t]) *
                                       static_cast<int8_t>(tile[b][g][4 * j + t]));
        }
      }
      std::memcpy(&tile[c][i][4 * j], &acc, 4);
    }
  }
}
// TDPBF16PS: c.f32[i][j] += sum over pairs g of a.bf16[i][2g + t] * b.bf16[g][2j + t].
inline void DotBf16(int c, int a, int b) {
  auto bf16 = [](const uint8_t* p) {
    uint16_t bits;
    std::memcpy(&bits, p, 2);
    const uint32_t wide = static_cast<uint32_t>(bits) << 16;
    float f;
    std::memcpy(&f, &wide, sizeof f);
    return f;
  };
  for (int i = 0; i < kTileRows; ++i) {
    for (int j = 0; j < kTileBytes / 4; ++j) {
      float acc;
      std::memcpy(&acc, &tile[c][i][4 * j], 4);
      for (int g = 0; g < kTileRows; ++g) {
        for (int t = 0; t < 2; ++t) {
          acc += bf16(&tile[a][i][4 * g + 2 * t]) * bf16(&tile[b][g][4 * j + 2 * t]);
        }
      }
      std::memcpy(&tile[c][i][4 * j], &acc, 4);
    }
  }
}
}  // namespace emulated_tiles
#define XLA_CPU_TILE_CONFIGURE(config) (void)(config)
#define XLA_CPU_TILE_RELEASE() (void)0
#define XLA_CPU_TILE_ZERO(t) emulated_tiles::Zero(t)
#define XLA_CPU_TILE_LOAD(t, base, stride) emulated_tiles::Load(t, base, stride)
#define XLA_CPU_TILE_STORE(t, base, stride) emulated_tiles::Store(t, base, stride)
#define XLA_CPU_TILE_DPBSSD(c, a, b) emulated_tiles::DotS8S8(c, a, b)
#define XLA_CPU_TILE_DPBF16PS(c, a, b) emulated_tiles::DotBf16(c, a, b)
#else
// The intrinsics are asm statements that name only registers: the barrier
// makes the compiler complete the stores of the configuration and of the
// packed operands before the instructions that read them.
#define XLA_CPU_TILE_CONFIGURE(config)  \
  do {                                  \
    __asm__ volatile("" ::: "memory");  \
    _tile_loadconfig(config);           \
  } while (0)
#define XLA_CPU_TILE_RELEASE() _tile_release()
#define XLA_CPU_TILE_ZERO(t) _tile_zero(t)
#define XLA_CPU_TILE_LOAD(t, base, stride) _tile_loadd(t, base, stride)
#define XLA_CPU_TILE_STORE(t, base, stride) _tile_stored(t, base, stride)
#define XLA_CPU_TILE_DPBSSD(c, a, b) _tile_dpbssd(c, a, b)
#define XLA_CPU_TILE_DPBF16PS(c, a, b) _tile_dpbf16ps(c, a, b)
#endif

// Loads the configuration above into this thread's tile registers.
inline void ConfigureTiles() {
  TileConfig config;
  for (int t = 0; t < 8; ++t) {
    config.colsb[t] = kTileBytes;
    config.rows[t] = kTileRows;
  }
  XLA_CPU_TILE_CONFIGURE(&config);
}

}  // namespace XLA_CPU_ISA_NAMESPACE
}  // namespace xla_cpu_runtime

#endif  // XLA_BACKENDS_CPU_RUNTIME_AMX_TILES_H_
