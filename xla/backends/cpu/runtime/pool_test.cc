// The pool's spinning helpers and the tasks queued on the pool (Eigen's
// contraction shards, through PoolSchedule): a task queued while helpers
// spin between parallel_for calls must not wait for their spin window.
// Run with XLA_CPU_POOL_SPIN_US=1000000 (BUILD): helpers that kept spinning
// would hold their workers for a second.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

#include "xla/backends/cpu/runtime/cpu_runtime.h"
#include "xla/backends/cpu/runtime/kernels.h"

namespace {

void CountBody(void* ctx, int64_t begin, int64_t end) {
  static_cast<std::atomic<int64_t>*>(ctx)->fetch_add(end - begin);
}

TEST(PoolTest, TasksQueuedBehindSpinningHelpersRunAtOnce) {
  constexpr int kThreads = 4;
  __xla_cpu_runtime_set_num_threads(kThreads);
  ASSERT_EQ(xla_cpu_runtime::PoolNumThreads(), kThreads);
  for (int round = 0; round < 3; ++round) {
    // Helpers on kThreads - 1 workers, which then spin for the next call.
    std::atomic<int64_t> count{0};
    __xla_cpu_parallel_for(&CountBody, &count, 1 << 12, 1);
    ASSERT_EQ(count.load(), 1 << 12);
    // kThreads tasks that finish only once all have started: they need
    // every worker of the pool at the same time.
    std::atomic<int> arrived{0};
    std::atomic<int> finished{0};
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kThreads; ++i) {
      xla_cpu_runtime::PoolSchedule([&arrived, &finished] {
        arrived.fetch_add(1);
        const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
        while (arrived.load() < kThreads && std::chrono::steady_clock::now() < give_up) {
          std::this_thread::yield();
        }
        finished.fetch_add(1);
      });
    }
    while (finished.load() < kThreads) std::this_thread::yield();
    const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - start);
    EXPECT_EQ(arrived.load(), kThreads);
    // Helpers still spinning would hold three of the four workers for the
    // 1 s window; released, the tasks meet within milliseconds.
    EXPECT_LT(waited.count(), 500) << "round " << round;
  }
  __xla_cpu_runtime_set_num_threads(0);
}

}  // namespace
