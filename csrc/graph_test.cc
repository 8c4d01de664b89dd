#include "csrc/graph.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "gtest/gtest.h"

namespace xla_core {
namespace {

using ::std::vector;

// Owns CSR arrays built from one operand list per node.
struct Csr {
  vector<int64_t> offsets{0};
  vector<int64_t> indices;

  explicit Csr(const vector<vector<int64_t>>& operands) {
    for (const auto& ops : operands) {
      indices.insert(indices.end(), ops.begin(), ops.end());
      offsets.push_back(static_cast<int64_t>(indices.size()));
    }
  }
  OperandGraph graph() const {
    return MakeOperandGraph(offsets.data(), offsets.size(), indices.data());
  }
  std::string validate() const {
    return ValidateGraph(offsets.data(), offsets.size(), indices.data(), indices.size());
  }
};

vector<int64_t> PositionOf(const vector<int64_t>& order) {
  vector<int64_t> pos(order.size(), -1);
  for (size_t i = 0; i < order.size(); ++i) pos[order[i]] = static_cast<int64_t>(i);
  return pos;
}

bool IsPermutation(vector<int64_t> order) {
  std::sort(order.begin(), order.end());
  for (size_t i = 0; i < order.size(); ++i) {
    if (order[i] != static_cast<int64_t>(i)) return false;
  }
  return true;
}

TEST(PostOrderTest, EmptyGraph) {
  Csr csr({});
  EXPECT_EQ(csr.validate(), "");
  EXPECT_TRUE(PostOrder(csr.graph()).empty());
  EXPECT_EQ(FindCycle(csr.graph()), -1);
}

TEST(PostOrderTest, SearchesFromSinksVisitingOperandsInOrder) {
  // 0 = x, 1 = y, 2 = multiply(y, x), 3 = add(2, x)
  Csr csr({{}, {}, {1, 0}, {2, 0}});
  ASSERT_EQ(csr.validate(), "");
  EXPECT_EQ(PostOrder(csr.graph()), (vector<int64_t>{1, 0, 2, 3}));
}

TEST(PostOrderTest, DeadNodesComeInNodeOrderOfTheirSinks) {
  // 0 = p0, 1 = negate(p0) (dead), 2 = p1, 3 = add(p0, p1) (root)
  Csr csr({{}, {0}, {}, {0, 2}});
  EXPECT_EQ(PostOrder(csr.graph()), (vector<int64_t>{0, 1, 2, 3}));
}

TEST(PostOrderTest, DiamondWithRepeatedOperands) {
  // 0 = p, 1 = exp(p), 2 = log(p), 3 = add(1, 2), 4 = multiply(3, 3)
  Csr csr({{}, {0}, {0}, {1, 2}, {3, 3}});
  const vector<int64_t> order = PostOrder(csr.graph());
  EXPECT_EQ(order, (vector<int64_t>{0, 1, 2, 3, 4}));
}

TEST(PostOrderTest, OperandsPrecedeUsersOnRandomDag) {
  // Node i takes up to three operands among nodes < i, chosen by an LCG.
  vector<vector<int64_t>> operands(500);
  uint64_t state = 12345;
  for (int64_t i = 1; i < 500; ++i) {
    for (int k = 0; k < 3; ++k) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      operands[i].push_back(static_cast<int64_t>((state >> 33) % i));
    }
  }
  Csr csr(operands);
  const vector<int64_t> order = PostOrder(csr.graph());
  ASSERT_EQ(order.size(), 500u);
  ASSERT_TRUE(IsPermutation(order));
  const vector<int64_t> pos = PositionOf(order);
  for (int64_t i = 0; i < 500; ++i) {
    for (int64_t op : operands[i]) EXPECT_LT(pos[op], pos[i]);
  }
  EXPECT_EQ(PostOrder(csr.graph()), order);  // deterministic
}

TEST(PostOrderTest, DeepChainDoesNotOverflowTheStack) {
  const int64_t n = 1000000;
  vector<vector<int64_t>> operands(n);
  for (int64_t i = 1; i < n; ++i) operands[i] = {i - 1};
  Csr csr(operands);
  const vector<int64_t> order = PostOrder(csr.graph());
  ASSERT_EQ(order.size(), static_cast<size_t>(n));
  EXPECT_EQ(order.front(), 0);
  EXPECT_EQ(order.back(), n - 1);
  EXPECT_EQ(FindCycle(csr.graph()), -1);
}

TEST(PostOrderTest, GraphWithCycleStillGivesAPermutation) {
  // 0 -> 1 -> 2 -> 0 and nothing uses them from outside; 3 = p.
  Csr csr({{1}, {2}, {0}, {}});
  const vector<int64_t> order = PostOrder(csr.graph());
  EXPECT_TRUE(IsPermutation(order));
  EXPECT_EQ(order, (vector<int64_t>{3, 2, 1, 0}));
}

TEST(PostOrderFromTest, OnlyReachableNodesInRootOrder) {
  // 0 = p0, 1 = p1, 2 = negate(p1), 3 = add(p0, p0), 4 = tuple(2)
  Csr csr({{}, {}, {1}, {0, 0}, {2}});
  const vector<int64_t> roots = {3, 4};
  EXPECT_EQ(PostOrderFrom(csr.graph(), roots.data(), roots.size()),
            (vector<int64_t>{0, 3, 1, 2, 4}));
  const vector<int64_t> one = {2};
  EXPECT_EQ(PostOrderFrom(csr.graph(), one.data(), one.size()), (vector<int64_t>{1, 2}));
}

TEST(FindCycleTest, AcyclicGraphs) {
  EXPECT_EQ(FindCycle(Csr({{}, {0}, {0, 1}}).graph()), -1);
  EXPECT_EQ(FindCycle(Csr({{}, {0, 0}, {1, 1}}).graph()), -1);
}

TEST(FindCycleTest, SelfLoop) {
  EXPECT_EQ(FindCycle(Csr({{}, {1}}).graph()), 1);
}

TEST(FindCycleTest, ReturnsANodeOnTheCycle) {
  // 0 = p, 1 = f(0, 3), 2 = g(1), 3 = h(2), 4 = k(3): cycle 1 -> 3 -> 2 -> 1.
  Csr csr({{}, {0, 3}, {1}, {2}, {3}});
  const int64_t node = FindCycle(csr.graph());
  EXPECT_TRUE(node == 1 || node == 2 || node == 3) << node;
  EXPECT_EQ(FindCycle(csr.graph()), node);  // deterministic
}

TEST(FindCycleTest, CycleAfterAcyclicPrefix) {
  Csr csr({{}, {0}, {1}, {4}, {3}});
  const int64_t node = FindCycle(csr.graph());
  EXPECT_TRUE(node == 3 || node == 4) << node;
}

TEST(ReachableTest, MarksOperandsTransitively) {
  // 0 = p0, 1 = p1, 2 = negate(p1) (dead), 3 = add(p0, p0), 4 = exp(3)
  Csr csr({{}, {}, {1}, {0, 0}, {3}});
  const vector<int64_t> roots = {4};
  EXPECT_EQ(Reachable(csr.graph(), roots.data(), roots.size()),
            (vector<uint8_t>{1, 0, 0, 1, 1}));
  const vector<int64_t> two = {2, 2};
  EXPECT_EQ(Reachable(csr.graph(), two.data(), two.size()), (vector<uint8_t>{0, 1, 1, 0, 0}));
  EXPECT_EQ(Reachable(csr.graph(), nullptr, 0), (vector<uint8_t>(5, 0)));
}

TEST(ReachableTest, TerminatesOnCycles) {
  Csr csr({{1}, {0}, {}});
  const vector<int64_t> roots = {0};
  EXPECT_EQ(Reachable(csr.graph(), roots.data(), roots.size()), (vector<uint8_t>{1, 1, 0}));
}

TEST(ValidateTest, RejectsMalformedArrays) {
  const vector<int64_t> none;
  EXPECT_NE(ValidateGraph(none.data(), 0, none.data(), 0).find("at least one"), std::string::npos);

  const vector<int64_t> bad_start = {1, 1};
  EXPECT_NE(ValidateGraph(bad_start.data(), 2, none.data(), 0).find("start at 0"), std::string::npos);

  const vector<int64_t> decreasing = {0, 2, 1};
  const vector<int64_t> idx = {0, 0};
  EXPECT_NE(ValidateGraph(decreasing.data(), 3, idx.data(), 2).find("must not decrease"),
            std::string::npos);

  const vector<int64_t> short_end = {0, 1};
  EXPECT_NE(ValidateGraph(short_end.data(), 2, idx.data(), 2).find("must end at"), std::string::npos);
}

TEST(ValidateTest, NamesOutOfRangeOperand) {
  Csr csr({{}, {0, 2}});
  EXPECT_EQ(csr.validate(), "operand_indices[1] = 2 is out of range for a graph of 2 nodes");
  Csr negative(vector<vector<int64_t>>{{-1}});
  EXPECT_EQ(negative.validate(), "operand_indices[0] = -1 is out of range for a graph of 1 nodes");
}

TEST(ValidateTest, Roots) {
  Csr csr({{}, {0}});
  const vector<int64_t> ok = {1, 0};
  EXPECT_EQ(ValidateRoots(csr.graph(), ok.data(), ok.size()), "");
  const vector<int64_t> bad = {0, 5};
  EXPECT_EQ(ValidateRoots(csr.graph(), bad.data(), bad.size()),
            "roots[1] = 5 is out of range for a graph of 2 nodes");
}

}  // namespace
}  // namespace xla_core
