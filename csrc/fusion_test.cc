#include "csrc/fusion.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace xla_core {
namespace {

using ::std::vector;

// A computation under construction: nodes are added in post order.
struct Builder {
  vector<vector<int64_t>> operands;
  vector<int8_t> kind;
  vector<uint8_t> expensive;
  vector<int64_t> bytes;
  vector<uint8_t> live_out;
  vector<int64_t> shape_key;
  vector<uint8_t> reads_own_index;
  // Owned CSR for the input view.
  vector<int64_t> offsets, indices;

  int64_t Add(int8_t k, vector<int64_t> ops, int64_t size = 4096, bool exp = false,
              int64_t key = 1) {
    operands.push_back(std::move(ops));
    kind.push_back(k);
    expensive.push_back(exp ? 1 : 0);
    bytes.push_back(size);
    live_out.push_back(0);
    shape_key.push_back(key);
    reads_own_index.push_back(1);
    return static_cast<int64_t>(kind.size()) - 1;
  }
  // Data movement that reads its operands at new indices (slice, pad,
  // concatenate): one index map per operand slot.
  int64_t Move(vector<int64_t> ops) {
    const int64_t id = Loop(std::move(ops));
    reads_own_index[id] = 0;
    return id;
  }
  int64_t Param() { return Add(kFusionUnfusible, {}); }
  int64_t Const() { return Add(kFusionScalarConst, {}, 4); }
  int64_t Loop(vector<int64_t> ops, bool exp = false) {
    return Add(kFusionLoop, std::move(ops), 4096, exp);
  }
  int64_t Reduce(vector<int64_t> ops, int64_t key = 7) {
    return Add(kFusionReduce, std::move(ops), 4, false, key);
  }
  int64_t Other(vector<int64_t> ops) { return Add(kFusionUnfusible, std::move(ops)); }

  FusionInput Input() {
    offsets = {0};
    indices.clear();
    for (const auto& ops : operands) {
      indices.insert(indices.end(), ops.begin(), ops.end());
      offsets.push_back(static_cast<int64_t>(indices.size()));
    }
    FusionInput in;
    in.graph = MakeOperandGraph(offsets.data(), offsets.size(), indices.data());
    in.kind = kind.data();
    in.expensive = expensive.data();
    in.bytes = bytes.data();
    in.live_out = live_out.data();
    in.shape_key = shape_key.data();
    in.reads_own_index = reads_own_index.data();
    return in;
  }

  FusionResult Run(const FusionOptions& options = FusionOptions()) {
    live_out.back() = 1;
    FusionInput in = Input();
    EXPECT_EQ(ValidateFusionInput(in), "");
    FusionResult result = ComputeFusion(in, options);
    EXPECT_EQ(CheckFusionResult(in, result), "");
    return result;
  }
};

vector<int64_t> Members(const FusionResult& r, int64_t group) {
  return vector<int64_t>(r.group_members.begin() + r.group_offsets[group],
                         r.group_members.begin() + r.group_offsets[group + 1]);
}

vector<int64_t> Outputs(const FusionResult& r, int64_t group) {
  vector<int64_t> out;
  for (int64_t k = r.group_offsets[group]; k < r.group_offsets[group + 1]; ++k) {
    if (r.member_is_output[k]) out.push_back(r.group_members[k]);
  }
  return out;
}

int64_t NumGroups(const FusionResult& r) { return static_cast<int64_t>(r.group_kind.size()); }

// Groups that read `value` from outside.
int64_t Readers(const Builder& b, const FusionResult& r, int64_t value) {
  int64_t count = 0;
  for (int64_t g = 0; g < NumGroups(r); ++g) {
    bool reads = false;
    for (int64_t m : Members(r, g)) {
      for (int64_t q : b.operands[m]) {
        if (q == value) reads = true;
      }
    }
    if (reads && r.instruction_group[value] != g) ++count;
  }
  return count;
}

TEST(FusionTest, ReduceOfElementwiseIsOneInputFusion) {
  // reduce_sum(x + y * z)
  Builder b;
  const int64_t x = b.Param(), y = b.Param(), z = b.Param();
  const int64_t mul = b.Loop({y, z});
  const int64_t add = b.Loop({x, mul});
  const int64_t zero = b.Const();
  const int64_t sum = b.Reduce({add, zero});
  const FusionResult r = b.Run();
  ASSERT_EQ(NumGroups(r), 1);
  EXPECT_EQ(r.group_kind[0], kInputFusion);
  EXPECT_EQ(Members(r, 0), (vector<int64_t>{mul, add, zero, sum}));
  EXPECT_EQ(Outputs(r, 0), (vector<int64_t>{sum}));
  for (int64_t p : {x, y, z}) EXPECT_TRUE(r.unfused[p]);
}

TEST(FusionTest, ProducerOfAReduceAndUnfusedUsersIsTheReducesSecondOutput) {
  // g = select(x > 0, dy, 0) read by two dots and by reduce_sum(g): g joins
  // the reduce's fusion as an output rather than being a loop fusion of its
  // own beside a copy of it in the reduction.
  Builder b;
  const int64_t x = b.Param(), dy = b.Param(), w = b.Param();
  const int64_t zero = b.Const();
  const int64_t gt = b.Loop({x, zero});
  const int64_t g = b.Loop({gt, dy, zero});
  const int64_t dx = b.Other({g, w});
  const int64_t dw = b.Other({g, x});
  const int64_t db = b.Reduce({g, zero});
  b.Other({dx, dw, db});
  const FusionResult r = b.Run();
  ASSERT_EQ(NumGroups(r), 1);
  EXPECT_EQ(r.group_kind[0], kInputFusion);
  EXPECT_EQ(r.instruction_group[g], 0);
  EXPECT_EQ(Outputs(r, 0), (vector<int64_t>{g, db}));
  // Without multi-output fusion: g's own group, and a copy in the reduce's.
  FusionOptions options;
  options.multi_output = false;
  const FusionResult single = b.Run(options);
  ASSERT_EQ(NumGroups(single), 2);
  EXPECT_NE(single.instruction_group[g], single.instruction_group[db]);
}

TEST(FusionTest, AReduceReadingMoreThanTheProducerTakesOnlyACopy) {
  // reduce(g + d), d unfusible and computed from g: g joining the reduce's
  // fusion as an output would make g -> d -> fusion(g, ...) a cycle.
  Builder b;
  const int64_t x = b.Param(), y = b.Param();
  const int64_t g = b.Loop({x});
  const int64_t d = b.Other({g});
  const int64_t s = b.Loop({g, d});
  const int64_t zero = b.Const();
  const int64_t r0 = b.Reduce({s, zero});
  b.Other({r0, y});
  const FusionResult r = b.Run();
  EXPECT_NE(r.instruction_group[g], r.instruction_group[r0]);
}

TEST(FusionTest, AnUnfusedReaderOfAReducesSecondOutputIsDeeperThanTheReduce) {
  // g becomes db's second output (phase 1); dx, an unfused reader of g,
  // comes before db in post order. A layernorm-like forward reduce f of y
  // and a backward reduce h of y and dx (same shape key, both reading y)
  // are siblings only if at the same depth: h is deeper (through dx, g and
  // f), so merging them would make f -> g -> dx -> fusion(f, h) a cycle.
  Builder b;
  const int64_t x = b.Param(), w = b.Param();
  const int64_t zero = b.Const();
  const int64_t t = b.Other({x});
  const int64_t y = b.Loop({x, t});
  const int64_t f = b.Reduce({y, zero});
  const int64_t g = b.Loop({y, f, w});
  const int64_t dx = b.Other({g, w});
  const int64_t db = b.Reduce({g, zero}, /*key=*/8);
  const int64_t s = b.Loop({y, dx});
  const int64_t h = b.Reduce({s, zero});
  b.Other({h, db, dx});
  const FusionResult r = b.Run();  // Run checks acyclicity
  EXPECT_EQ(r.instruction_group[g], r.instruction_group[db]);
  EXPECT_NE(r.instruction_group[f], r.instruction_group[h]);
}

TEST(FusionTest, ElementwiseChainIsOneLoopFusion) {
  Builder b;
  const int64_t x = b.Param();
  const int64_t a = b.Loop({x});
  const int64_t e = b.Loop({a}, /*exp=*/true);
  const int64_t c = b.Loop({e, x});
  const FusionResult r = b.Run();
  ASSERT_EQ(NumGroups(r), 1);
  EXPECT_EQ(r.group_kind[0], kLoopFusion);
  EXPECT_EQ(Members(r, 0), (vector<int64_t>{a, e, c}));
}

TEST(FusionTest, ExpensiveProducerIsNotDuplicated) {
  Builder b;
  const int64_t x = b.Param();
  const int64_t e = b.Loop({x}, /*exp=*/true);
  const int64_t n1 = b.Loop({e});
  const int64_t n2 = b.Loop({n1});
  const int64_t m1 = b.Loop({e});
  const int64_t m2 = b.Loop({m1});
  b.Other({n2, m2});
  FusionOptions options;
  options.multi_output = false;
  options.fuse_singletons = true;
  const FusionResult r = b.Run(options);
  ASSERT_EQ(NumGroups(r), 3);
  EXPECT_NE(r.instruction_group[e], -1);
  EXPECT_EQ(Members(r, r.instruction_group[e]), (vector<int64_t>{e}));
  EXPECT_EQ(Members(r, r.instruction_group[n2]), (vector<int64_t>{n1, n2}));
  EXPECT_EQ(Members(r, r.instruction_group[m2]), (vector<int64_t>{m1, m2}));
}

TEST(FusionTest, CheapBroadcastIsDuplicated) {
  Builder b;
  const int64_t s = b.Param(), x = b.Param();
  const int64_t bcast = b.Loop({s});
  const int64_t c1 = b.Loop({bcast, x});
  const int64_t c2 = b.Loop({bcast, x});
  b.Other({c1, c2});
  FusionOptions options;
  options.multi_output = false;
  const FusionResult r = b.Run(options);
  ASSERT_EQ(NumGroups(r), 2);
  EXPECT_EQ(r.instruction_group[bcast], -1);
  EXPECT_FALSE(r.unfused[bcast]);  // only its copies remain
  EXPECT_EQ(Members(r, r.instruction_group[c1]), (vector<int64_t>{bcast, c1}));
  EXPECT_EQ(Members(r, r.instruction_group[c2]), (vector<int64_t>{bcast, c2}));
}

TEST(FusionTest, DuplicationIsBounded) {
  Builder b;
  const int64_t s = b.Param(), x = b.Param();
  const int64_t bcast = b.Loop({s});
  vector<int64_t> consumers;
  for (int i = 0; i < 6; ++i) consumers.push_back(b.Loop({bcast, x}));
  b.Other(consumers);
  FusionOptions options;
  options.max_duplicates = 4;
  options.multi_output = false;
  const FusionResult r = b.Run(options);
  EXPECT_TRUE(r.unfused[bcast]);  // its own (dissolved) group: not copied 6 times
  for (int64_t c : consumers) EXPECT_EQ(r.instruction_group[c], -1);
}

TEST(FusionTest, DiamondThroughUnfusibleMakesNoCycle) {
  // P is used by C and by D (unfusible); C uses D too. Fusing P into C's
  // group alone would make P -> D -> fusion(P, C) a cycle.
  for (bool expensive : {false, true}) {
    Builder b;
    const int64_t x = b.Param();
    const int64_t p = b.Loop({x}, expensive);
    const int64_t d = b.Other({p});
    const int64_t c = b.Loop({p, d});
    b.Loop({c});
    FusionOptions options;
    options.fuse_singletons = true;
    const FusionResult r = b.Run(options);  // Run checks acyclicity
    EXPECT_NE(r.instruction_group[p], r.instruction_group[c]);
    EXPECT_TRUE(r.unfused[d]);
  }
}

TEST(FusionTest, OperandBoundIsRespected) {
  Builder b;
  vector<int64_t> params;
  for (int i = 0; i < 40; ++i) params.push_back(b.Param());
  int64_t acc = b.Loop({params[0], params[1]});
  for (int i = 2; i < 40; ++i) acc = b.Loop({acc, params[i]});
  FusionOptions options;
  options.max_operands = 8;
  const FusionResult r = b.Run(options);
  EXPECT_GE(NumGroups(r), 5);
  for (int64_t g = 0; g < NumGroups(r); ++g) {
    vector<int64_t> externals;
    for (int64_t m : Members(r, g)) {
      for (int64_t q : b.operands[m]) {
        if (r.instruction_group[q] != g &&
            std::find(externals.begin(), externals.end(), q) == externals.end()) {
          externals.push_back(q);
        }
      }
    }
    EXPECT_LE(externals.size(), 8u);
  }
}

TEST(FusionTest, ReduceIsNotFusedIntoConsumer) {
  Builder b;
  const int64_t x = b.Param();
  const int64_t zero = b.Const();
  const int64_t sum = b.Reduce({x, zero});
  const int64_t bcast = b.Loop({sum});
  const int64_t out = b.Loop({bcast, x});
  const FusionResult r = b.Run();
  EXPECT_TRUE(r.unfused[sum]);  // a lone reduce stays unfused
  EXPECT_EQ(r.instruction_group[out], r.instruction_group[bcast]);
  EXPECT_NE(r.instruction_group[out], -1);
}

TEST(FusionTest, SiblingReducesOfSameInputMerge) {
  // mean(x) and mean(x * x) read x once; the output reads x a second time.
  Builder b;
  const int64_t x = b.Param();
  const int64_t zero = b.Const();
  const int64_t s1 = b.Reduce({x, zero});
  const int64_t sq = b.Loop({x, x});
  const int64_t s2 = b.Reduce({sq, zero});
  const int64_t b1 = b.Loop({s1});
  const int64_t b2 = b.Loop({s2});
  const int64_t sub = b.Loop({x, b1});
  b.Loop({sub, b2});
  const FusionResult r = b.Run();
  ASSERT_EQ(NumGroups(r), 2);
  const int64_t g = r.instruction_group[s1];
  EXPECT_EQ(g, r.instruction_group[s2]);
  EXPECT_EQ(r.group_kind[g], kInputFusion);
  EXPECT_EQ(Outputs(r, g), (vector<int64_t>{s1, s2}));
  EXPECT_EQ(Readers(b, r, x), 2);

  FusionOptions no_mof;
  no_mof.multi_output = false;
  Builder b2_ = b;
  const FusionResult r2 = b2_.Run(no_mof);
  EXPECT_EQ(Readers(b2_, r2, x), 2);  // s1 alone is unfused; sq+s2 and output fuse
  EXPECT_NE(r2.instruction_group[s1], r2.instruction_group[s2]);
}

TEST(FusionTest, SiblingsWithDifferentReductionsDoNotMerge) {
  Builder b;
  const int64_t x = b.Param();
  const int64_t zero = b.Const();
  const int64_t e1 = b.Loop({x});
  const int64_t s1 = b.Reduce({e1, zero}, /*key=*/7);
  const int64_t e2 = b.Loop({x});
  const int64_t s2 = b.Reduce({e2, zero}, /*key=*/8);
  b.Other({s1, s2});
  const FusionResult r = b.Run();
  EXPECT_NE(r.instruction_group[s1], r.instruction_group[s2]);
}

TEST(FusionTest, SoftmaxFusesExpIntoSumAsMultiOutput) {
  // Softmax: max(x), then exp(x - max) feeds a sum and the final divide.
  Builder b;
  const int64_t x = b.Param();
  const int64_t ninf = b.Const();
  const int64_t m = b.Reduce({x, ninf});
  const int64_t bm = b.Loop({m});
  const int64_t sub = b.Loop({x, bm});
  const int64_t e = b.Loop({sub}, /*exp=*/true);
  const int64_t zero = b.Const();
  const int64_t s = b.Reduce({e, zero});
  const int64_t bs = b.Loop({s});
  const int64_t out = b.Loop({e, bs}, /*exp=*/true);
  const FusionResult r = b.Run();
  // The lone max-reduce stays unfused; exp joins the sum's kInput fusion as
  // a second output (it cannot join the divide's: the divide reads the sum).
  EXPECT_TRUE(r.unfused[m]);
  ASSERT_EQ(NumGroups(r), 2);
  const int64_t g = r.instruction_group[s];
  EXPECT_EQ(r.group_kind[g], kInputFusion);
  EXPECT_EQ(Members(r, g), (vector<int64_t>{bm, sub, e, zero, s}));
  EXPECT_EQ(Outputs(r, g), (vector<int64_t>{e, s}));
  EXPECT_EQ(Members(r, r.instruction_group[out]), (vector<int64_t>{bs, out}));
  EXPECT_EQ(Readers(b, r, x), 1);
}

// The CPU emitter's view of a group: element generators memoized per
// (instruction, index), where an instruction that reads its own index passes
// it on and any other computes a new index per operand slot. Returns the
// number of distinct (member, index) evaluations, scalar constants left out.
int64_t EmittedOps(const Builder& b, const FusionResult& r, int64_t group) {
  const vector<int64_t> members = Members(r, group);
  std::map<std::pair<int64_t, int64_t>, int64_t> fresh;  // (evaluation, slot) -> index
  std::map<std::pair<int64_t, int64_t>, int64_t> seen;   // (node, index) -> evaluation id
  int64_t next_index = 1;
  vector<std::pair<int64_t, int64_t>> stack;
  for (int64_t m : Outputs(r, group)) stack.emplace_back(m, 0);
  int64_t count = 0;
  while (!stack.empty()) {
    const auto [node, index] = stack.back();
    stack.pop_back();
    if (seen.count({node, index})) continue;
    const int64_t evaluation = static_cast<int64_t>(seen.size());
    seen[{node, index}] = evaluation;
    if (b.kind[node] != kFusionScalarConst) ++count;
    const auto& ops = b.operands[node];
    for (size_t j = 0; j < ops.size(); ++j) {
      if (std::find(members.begin(), members.end(), ops[j]) == members.end()) continue;
      int64_t operand_index = index;
      if (!b.reads_own_index[node]) {
        auto it = fresh.find({evaluation, static_cast<int64_t>(j)});
        if (it == fresh.end()) {
          it = fresh.emplace(std::make_pair(evaluation, static_cast<int64_t>(j)), next_index++)
                   .first;
        }
        operand_index = it->second;
      }
      stack.emplace_back(ops[j], operand_index);
    }
  }
  return count;
}

// Longest operand chain inside a group, in instructions, scalar constants
// left out.
int64_t Chain(const Builder& b, const FusionResult& r, int64_t group) {
  const vector<int64_t> members = Members(r, group);  // post order
  std::map<int64_t, int64_t> length;
  int64_t longest = 0;
  for (int64_t m : members) {
    if (b.kind[m] == kFusionScalarConst) continue;
    int64_t l = 1;
    for (int64_t q : b.operands[m]) {
      auto it = length.find(q);
      if (it != length.end()) l = std::max(l, it->second + 1);
    }
    length[m] = l;
    longest = std::max(longest, l);
  }
  return longest;
}

// u' = 0.25 * concat(u[:1], u[:-1]) + 0.5 * u + 0.25 * concat(u[1:], u[-1:]):
// each step reads u through five index maps. Unbounded, the one fusion of
// all steps evaluates step k's instructions 5^k times.
int64_t StencilSteps(Builder& b, int64_t u, int steps) {
  for (int i = 0; i < steps; ++i) {
    const int64_t c = b.Const();
    const int64_t quarter = b.Move({c});  // broadcast
    const int64_t half = b.Move({c});
    const int64_t left = b.Move({b.Move({u}), b.Move({u})});
    const int64_t right = b.Move({b.Move({u}), b.Move({u})});
    const int64_t sum = b.Loop({b.Loop({quarter, left}), b.Loop({half, u})});
    u = b.Loop({sum, b.Loop({quarter, right})});
  }
  return u;
}

TEST(FusionTest, StencilChainCodeIsBounded) {
  FusionOptions options;
  int64_t previous_total = 0;
  for (int steps : {4, 8, 16}) {
    Builder b;
    StencilSteps(b, b.Param(), steps);
    const FusionResult r = b.Run(options);
    int64_t total = 0;
    for (int64_t g = 0; g < NumGroups(r); ++g) {
      const int64_t emitted = EmittedOps(b, r, g);
      EXPECT_LE(emitted, options.max_emitted_ops) << "group " << g;
      total += emitted;
    }
    // Linear in the number of steps: doubling them at most doubles the code
    // (plus a fusion's worth).
    if (previous_total > 0) {
      EXPECT_LE(total, 2 * previous_total + options.max_emitted_ops);
    }
    previous_total = total;
  }
  // Unbounded, 8 steps are one fusion that evaluates the first step's
  // instructions 5^7 times.
  Builder b;
  StencilSteps(b, b.Param(), 8);
  FusionOptions unbounded;
  unbounded.max_emitted_ops = int64_t{1} << 50;
  const FusionResult r = b.Run(unbounded);
  ASSERT_EQ(NumGroups(r), 1);
  EXPECT_GT(EmittedOps(b, r, 0), 100000);
}

TEST(FusionTest, ElementwiseDiamondsCountOnce) {
  // y' = y * (y + 1), 60 times: every member is read at the output index
  // only, so the whole chain is one fusion (no exponential over-count).
  Builder b;
  int64_t y = b.Param();
  for (int i = 0; i < 60; ++i) y = b.Loop({y, b.Loop({y, b.Const()})});
  const FusionResult r = b.Run();
  ASSERT_EQ(NumGroups(r), 2);  // 120 deep: split once by the depth bound
  for (int64_t g = 0; g < NumGroups(r); ++g) {
    EXPECT_EQ(EmittedOps(b, r, g), Chain(b, r, g));
  }
}

TEST(FusionTest, ChainDepthIsBounded) {
  Builder b;
  int64_t y = b.Param();
  for (int i = 0; i < 1000; ++i) y = b.Loop({y});
  FusionOptions options;
  const FusionResult r = b.Run(options);
  EXPECT_EQ(NumGroups(r), 10);
  for (int64_t g = 0; g < NumGroups(r); ++g) {
    EXPECT_LE(Chain(b, r, g), kMaxFusionDepth);
  }
  options.max_depth = 7;
  const FusionResult r7 = b.Run(options);
  EXPECT_EQ(NumGroups(r7), 143);  // ceil(1000 / 7)
  for (int64_t g = 0; g < NumGroups(r7); ++g) EXPECT_LE(Chain(b, r7, g), 7);
}

TEST(FusionTest, ExpensiveProducerReadAtSeveralIndicesIsNotFused) {
  // exp(x) read through two slices at different offsets would be computed
  // twice per output element; a cheap negate may be.
  for (bool expensive : {true, false}) {
    Builder b;
    const int64_t x = b.Param();
    const int64_t e = b.Loop({x}, expensive);
    b.Loop({b.Move({e}), b.Move({e})});
    const FusionResult r = b.Run();
    const int64_t out = static_cast<int64_t>(b.kind.size()) - 1;
    if (expensive) {
      EXPECT_NE(r.instruction_group[e], r.instruction_group[out]);
    } else {
      EXPECT_EQ(r.instruction_group[e], r.instruction_group[out]);
      EXPECT_EQ(EmittedOps(b, r, r.instruction_group[out]), 5);
    }
  }
}

// Random computations: whatever the options, the result must satisfy the
// invariants the rewrite relies on (CheckFusionResult, run by Builder::Run).
TEST(FusionTest, RandomGraphsKeepInvariants) {
  std::mt19937 rng(1234);
  for (int trial = 0; trial < 300; ++trial) {
    Builder b;
    const int n = 5 + static_cast<int>(rng() % 80);
    for (int i = 0; i < n; ++i) {
      if (i < 2 || rng() % 10 == 0) {
        b.Param();
        continue;
      }
      const int num_ops = 1 + static_cast<int>(rng() % 3);
      vector<int64_t> ops;
      for (int k = 0; k < num_ops; ++k) {
        // Mostly recent operands, sometimes far ones.
        const int64_t back = rng() % 4 == 0 ? rng() % i : rng() % std::min(i, 4);
        ops.push_back(i - 1 - back);
      }
      const int r = static_cast<int>(rng() % 10);
      if (r < 6) {
        b.Add(kFusionLoop, ops, 64 << (rng() % 8), rng() % 3 == 0, rng() % 2);
      } else if (r < 8) {
        b.Add(kFusionReduce, {ops[0], b.Const()}, 4 << (rng() % 6), false, rng() % 2);
      } else {
        b.Other(ops);
      }
    }
    for (int k = 0; k < 3; ++k) b.live_out[rng() % b.kind.size()] = 1;
    FusionOptions options;
    options.max_operands = 2 + static_cast<int>(rng() % 6);
    options.max_duplicates = static_cast<int>(rng() % 4);
    options.multi_output = rng() % 4 != 0;
    options.sibling_min_bytes = 0;
    options.fuse_singletons = rng() % 2 == 0;
    options.max_depth = 1 + static_cast<int>(rng() % 12);
    options.max_emitted_ops = 1 + static_cast<int>(rng() % 40);
    for (size_t i = 0; i < b.reads_own_index.size(); ++i) b.reads_own_index[i] = rng() % 3 != 0;
    SCOPED_TRACE("trial " + std::to_string(trial));
    b.Run(options);
  }
}

}  // namespace
}  // namespace xla_core
