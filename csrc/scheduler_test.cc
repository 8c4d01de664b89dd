#include "csrc/scheduler.h"

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace xla_core {
namespace {

using ::std::vector;

struct Computation {
  vector<int64_t> offsets{0};
  vector<int64_t> indices;
  vector<int64_t> bytes;
  vector<uint8_t> alias;
  vector<int64_t> no_offsets;
  int64_t root = -1;

  int64_t Add(vector<int64_t> operands, int64_t size, bool is_alias = false) {
    indices.insert(indices.end(), operands.begin(), operands.end());
    offsets.push_back(static_cast<int64_t>(indices.size()));
    bytes.push_back(size);
    alias.push_back(is_alias ? 1 : 0);
    root = static_cast<int64_t>(bytes.size()) - 1;
    return root;
  }
  ScheduleInput input() const {
    ScheduleInput in;
    in.operands = MakeOperandGraph(offsets.data(), offsets.size(), indices.data());
    in.bytes_defined = bytes.data();
    in.is_alias = alias.data();
    in.root = root;
    return in;
  }
  int64_t Peak(const vector<int64_t>& sequence) const {
    return SequencePeakMemory(input(), sequence.data(), sequence.size());
  }
};

void ExpectValidOrder(const Computation& c, const vector<int64_t>& sequence) {
  const int64_t n = static_cast<int64_t>(c.bytes.size());
  ASSERT_EQ(static_cast<int64_t>(sequence.size()), n);
  vector<int64_t> position(n, -1);
  for (int64_t k = 0; k < n; ++k) {
    ASSERT_EQ(position[sequence[k]], -1) << "node " << sequence[k] << " twice";
    position[sequence[k]] = k;
  }
  for (int64_t node = 0; node < n; ++node) {
    for (int64_t i = c.offsets[node]; i < c.offsets[node + 1]; ++i) {
      EXPECT_LT(position[c.indices[i]], position[node]) << "operand after user " << node;
    }
  }
}

vector<int64_t> Identity(int64_t n) {
  vector<int64_t> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = i;
  return v;
}

// p feeds two chains, each a big buffer reduced to a small one. The original
// order defines both big buffers before reducing either; the scheduler
// finishes one chain first.
TEST(ListScheduleTest, FinishesAChainBeforeStartingAnother) {
  Computation c;
  const int64_t p = c.Add({}, 0);
  const int64_t a1 = c.Add({p}, 1000);
  const int64_t b1 = c.Add({p}, 1000);
  const int64_t a2 = c.Add({a1}, 10);
  const int64_t b2 = c.Add({b1}, 10);
  c.Add({a2, b2}, 10);
  vector<int64_t> sequence = ListSchedule(c.input());
  ExpectValidOrder(c, sequence);
  EXPECT_EQ(sequence, (vector<int64_t>{p, a1, a2, b1, b2, 5}));
  EXPECT_EQ(c.Peak(Identity(6)), 2010);
  EXPECT_EQ(c.Peak(sequence), 1020);
}

TEST(ListScheduleTest, PrefersTheInstructionThatFreesMost) {
  Computation c;
  const int64_t p = c.Add({}, 0);
  const int64_t big = c.Add({p}, 100);
  const int64_t small = c.Add({p}, 10);
  const int64_t use_small = c.Add({small}, 10);   // frees 10, defines 10: net 0
  const int64_t use_big = c.Add({big}, 10);       // frees 100, defines 10: net 90
  c.Add({use_small, use_big}, 4);
  vector<int64_t> sequence = ListSchedule(c.input());
  ExpectValidOrder(c, sequence);
  // small (net -10) before big (net -100); then use_big is worth more.
  EXPECT_EQ(sequence, (vector<int64_t>{p, small, use_small, big, use_big, 5}));
}

TEST(ListScheduleTest, AliasesForwardTheirOperandsBuffers) {
  // t = tuple(a, b); g = gte(t); the buffer of a is freed only after both t's
  // users ran, and the root's sources are never freed.
  Computation c;
  const int64_t p = c.Add({}, 0);
  const int64_t a = c.Add({p}, 100);
  const int64_t b = c.Add({p}, 100);
  const int64_t t = c.Add({a, b}, 0, /*is_alias=*/true);
  const int64_t g = c.Add({t}, 0, /*is_alias=*/true);
  const int64_t u = c.Add({g}, 8);
  c.Add({u}, 0, /*is_alias=*/true);  // root forwards u: live out
  vector<int64_t> sequence = ListSchedule(c.input());
  ExpectValidOrder(c, sequence);
  EXPECT_EQ(c.Peak(sequence), 208);
}

TEST(ListScheduleTest, RespectsOrderingEdges) {
  Computation c;
  const int64_t p = c.Add({}, 0);
  const int64_t a = c.Add({p}, 1000);   // would be scheduled last by memory
  const int64_t b = c.Add({p}, 1);
  c.Add({a, b}, 1);
  // b must come after a.
  vector<int64_t> ord_offsets{0, 0, 0, 1, 1};
  vector<int64_t> ord_indices{a};
  ScheduleInput in = c.input();
  in.ordering = MakeOperandGraph(ord_offsets.data(), ord_offsets.size(), ord_indices.data());
  vector<int64_t> sequence = ListSchedule(in);
  ExpectValidOrder(c, sequence);
  EXPECT_EQ(sequence, (vector<int64_t>{p, a, b, 3}));
  vector<int64_t> unordered = ListSchedule(c.input());
  EXPECT_EQ(unordered, (vector<int64_t>{p, b, a, 3}));
}

TEST(ListScheduleTest, RandomGraphsGetValidOrdersNoWorseThanNaiveOnAverage) {
  std::mt19937 rng(7);
  int64_t total_naive = 0, total_list = 0;
  for (int trial = 0; trial < 50; ++trial) {
    Computation c;
    const int n = 2 + static_cast<int>(rng() % 60);
    for (int i = 0; i < n; ++i) {
      vector<int64_t> ops;
      if (i > 0) {
        const int k = static_cast<int>(rng() % 3);
        for (int j = 0; j < k; ++j) ops.push_back(static_cast<int64_t>(rng() % i));
      }
      c.Add(ops, static_cast<int64_t>(rng() % 1000), i > 0 && rng() % 8 == 0 && !ops.empty());
    }
    vector<int64_t> sequence = ListSchedule(c.input());
    ExpectValidOrder(c, sequence);
    total_naive += c.Peak(Identity(n));
    total_list += c.Peak(sequence);
  }
  EXPECT_LE(total_list, total_naive);
}

TEST(ListScheduleTest, LongChainIsLinear) {
  Computation c;
  int64_t prev = c.Add({}, 0);
  for (int i = 0; i < 200000; ++i) prev = c.Add({prev}, 16);
  vector<int64_t> sequence = ListSchedule(c.input());
  EXPECT_EQ(sequence, Identity(200001));
  EXPECT_EQ(c.Peak(sequence), 32);
}

TEST(ValidateScheduleInputTest, RejectsMismatchedSizes) {
  Computation c;
  c.Add({}, 0);
  c.Add({0}, 4);
  EXPECT_EQ(ValidateScheduleInput(c.input(), 2, 2), "");
  EXPECT_NE(ValidateScheduleInput(c.input(), 1, 2), "");
  c.bytes[1] = -1;
  EXPECT_NE(ValidateScheduleInput(c.input(), 2, 2), "");
}

}  // namespace
}  // namespace xla_core
