#include "xla/backends/gpu/runtime/block_scheduler.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

namespace xla_gpu_emulator {
namespace {

// The kernels below stand in for emulated NVPTX kernels: plain functions of
// (args, context) that synchronize through the context.

// args: {in, out, shared, with_barrier}: out[t] = in[n - 1 - t] through shared memory.
void Reverse(void* const* args, ThreadContext* ctx) {
  const float* in = static_cast<const float*>(args[0]);
  float* out = static_cast<float*>(args[1]);
  float* shared = static_cast<float*>(args[2]);
  bool with_barrier = *static_cast<const bool*>(args[3]);
  int t = ctx->tid_x, n = ctx->ntid_x;
  shared[t] = in[t];
  if (with_barrier) ctx->barrier(ctx);
  out[t] = shared[n - 1 - t];
}

std::vector<float> RunReverse(bool with_barrier, bool reverse, std::string* error) {
  std::vector<float> in(64), out(64, -1), shared(64, 0);
  for (int i = 0; i < 64; ++i) in[i] = static_cast<float>(i);
  void* args[] = {in.data(), out.data(), shared.data(), &with_barrier};
  *error = RunBlock(&Reverse, args, 64, 0, 1, reverse);
  return out;
}

TEST(BlockScheduler, BarriersOrderPhases) {
  for (bool reverse : {false, true}) {
    std::string error;
    std::vector<float> out = RunReverse(true, reverse, &error);
    EXPECT_EQ(error, "");
    for (int t = 0; t < 64; ++t) EXPECT_EQ(out[t], 63 - t) << t;
  }
}

TEST(BlockScheduler, AMissingBarrierIsWrongInOneOrder) {
  int wrong = 0;
  for (bool reverse : {false, true}) {
    std::string error;
    std::vector<float> out = RunReverse(false, reverse, &error);
    EXPECT_EQ(error, "");
    for (int t = 0; t < 64; ++t) wrong += out[t] != 63 - t;
  }
  EXPECT_GT(wrong, 0);
}

// args: {out}: a butterfly sum of each lane's (tid + 1) over its warp.
void WarpSum(void* const* args, ThreadContext* ctx) {
  int32_t* out = static_cast<int32_t*>(args[0]);
  int32_t v = ctx->tid_x + 1;
  for (int m = 16; m >= 1; m /= 2) v += ctx->shuffle(ctx, kBfly, 0xFFFFFFFFu, v, m, 0x1F);
  out[ctx->tid_x] = v;
}

TEST(BlockScheduler, ShufflesExchangeWithinAWarp) {
  std::vector<int32_t> out(64, 0);
  void* args[] = {out.data()};
  ASSERT_EQ(RunBlock(&WarpSum, args, 64, 0, 1, false), "");
  for (int t = 0; t < 32; ++t) EXPECT_EQ(out[t], 32 * 33 / 2);
  for (int t = 32; t < 64; ++t) EXPECT_EQ(out[t], (33 + 64) * 32 / 2);
}

// args: {out, mode}: each lane's value from lane (mode: down 1, up 1, idx 5).
void Move(void* const* args, ThreadContext* ctx) {
  int32_t* out = static_cast<int32_t*>(args[0]);
  int32_t mode = *static_cast<const int32_t*>(args[1]);
  int32_t arg = mode == kIdx ? 5 : 1;
  out[ctx->tid_x] = ctx->shuffle(ctx, mode, 0xFFFFFFFFu, 100 + ctx->tid_x, arg, 0x1F);
}

TEST(BlockScheduler, ShuffleModes) {
  for (int32_t mode : {kDown, kUp, kIdx}) {
    std::vector<int32_t> out(32, 0);
    void* args[] = {out.data(), &mode};
    ASSERT_EQ(RunBlock(&Move, args, 32, 0, 1, true), "");
    for (int lane = 0; lane < 32; ++lane) {
      int src = mode == kDown ? (lane + 1 < 32 ? lane + 1 : lane)
                : mode == kUp ? (lane >= 1 ? lane - 1 : lane) : 5;
      EXPECT_EQ(out[lane], 100 + src) << mode << " " << lane;
    }
  }
}

void SkipBarrier(void* const*, ThreadContext* ctx) {
  if (ctx->tid_x % 2 == 0) ctx->barrier(ctx);
}

void SkipShuffle(void* const*, ThreadContext* ctx) {
  if (ctx->tid_x != 7) ctx->shuffle(ctx, kBfly, 0xFFFFFFFFu, 1, 1, 0x1F);
}

void PartialMask(void* const*, ThreadContext* ctx) {
  ctx->shuffle(ctx, kBfly, 0xFFFFu, 1, 1, 0x1F);
}

TEST(BlockScheduler, WhatCannotBeKeptIsAnError) {
  EXPECT_NE(RunBlock(&SkipBarrier, nullptr, 8, 0, 1, false)
                .find("a barrier every thread of the block must reach"),
            std::string::npos);
  EXPECT_NE(RunBlock(&SkipShuffle, nullptr, 32, 0, 1, false)
                .find("a shuffle of the full warp every lane must reach"),
            std::string::npos);
  EXPECT_NE(RunBlock(&PartialMask, nullptr, 32, 0, 1, false).find("full-warp shuffles only"),
            std::string::npos);
}

}  // namespace
}  // namespace xla_gpu_emulator
