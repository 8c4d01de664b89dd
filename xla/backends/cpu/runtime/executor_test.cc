#include "xla/backends/cpu/runtime/executor.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <thread>
#include <vector>

namespace xla_cpu_runtime {
namespace {

// table = [a: i64*, fixed: i64*, out: i64*, scratch (arena): i64*]:
// out = a + fixed, through the arena.
void AddThroughArena(void** table) {
  auto* a = static_cast<int64_t*>(table[0]);
  auto* fixed = static_cast<int64_t*>(table[1]);
  auto* out = static_cast<int64_t*>(table[2]);
  auto* scratch = static_cast<int64_t*>(table[3]);
  *scratch = *a + *fixed;
  *out = *scratch;
}

TEST(ExecutorTest, FillsSlotsAndPointsIntoTheArena) {
  Executor e(&AddThroughArena, 4, {0}, {2}, 16, {{3, 8}});
  EXPECT_EQ(e.num_slots(), 4);
  EXPECT_EQ(e.arena_size(), 16);
  EXPECT_EQ(e.arena_address() % 64, 0u);
  int64_t fixed = 5, a = 37, out = 0;
  e.SetFixed(1, &fixed);
  Executor::Call call(e);
  call.SetArg(0, &a);
  call.SetOutput(0, &out);
  call.Run();
  EXPECT_EQ(out, 42);
  EXPECT_EQ(*reinterpret_cast<int64_t*>(e.arena_address() + 8), 42);
}

TEST(ExecutorTest, RejectsBadSlots) {
  EXPECT_THROW(Executor(nullptr, 1, {0}, {}, 0, {}), std::invalid_argument);
  EXPECT_THROW(Executor(&AddThroughArena, -1, {}, {}, 0, {}), std::invalid_argument);
  EXPECT_THROW(Executor(&AddThroughArena, 2, {0}, {0}, 0, {}), std::invalid_argument);
  EXPECT_THROW(Executor(&AddThroughArena, 2, {2}, {}, 0, {}), std::invalid_argument);
  EXPECT_THROW(Executor(&AddThroughArena, 2, {}, {}, 8, {{1, 9}}), std::invalid_argument);
  Executor e(&AddThroughArena, 4, {0}, {2}, 16, {{3, 8}});
  int64_t x = 0;
  EXPECT_THROW(e.SetFixed(0, &x), std::invalid_argument);   // an argument slot
  EXPECT_THROW(e.SetFixed(3, &x), std::invalid_argument);   // an arena slot
  EXPECT_THROW(e.SetFixed(4, &x), std::invalid_argument);   // outside the table
}

// Blocks in its first call until released, so a second call finds the
// executor busy and must use a private table and arena.
std::atomic<int> g_entered{0};
std::atomic<bool> g_release{false};
void SlowAdd(void** table) {
  if (g_entered.fetch_add(1) == 0) {
    while (!g_release.load()) std::this_thread::yield();
  }
  AddThroughArena(table);
}

TEST(ExecutorTest, ConcurrentCallsUsePrivateTables) {
  Executor e(&SlowAdd, 4, {0}, {2}, 16, {{3, 8}});
  int64_t fixed = 100;
  e.SetFixed(1, &fixed);
  int64_t a1 = 1, out1 = 0;
  std::thread first([&] {
    Executor::Call call(e);
    call.SetArg(0, &a1);
    call.SetOutput(0, &out1);
    call.Run();
  });
  while (g_entered.load() == 0) std::this_thread::yield();
  int64_t a2 = 2, out2 = 0;
  {
    Executor::Call call(e);   // the executor's own table is busy
    call.SetArg(0, &a2);
    call.SetOutput(0, &out2);
    call.Run();
  }
  EXPECT_EQ(out2, 102);
  g_release.store(true);
  first.join();
  EXPECT_EQ(out1, 101);
}

}  // namespace
}  // namespace xla_cpu_runtime
