#include "csrc/buffer_assignment.h"

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace xla_core {
namespace {

using ::std::vector;

struct Buffers {
  vector<int64_t> sizes, alignments, starts, ends, colocations, kinds;

  int64_t Add(int64_t size, int64_t start, int64_t end, int64_t kind = kTempBuffer,
              int64_t colocation = -1, int64_t alignment = 1) {
    sizes.push_back(size);
    alignments.push_back(alignment);
    starts.push_back(start);
    ends.push_back(end);
    colocations.push_back(colocation);
    kinds.push_back(kind);
    return static_cast<int64_t>(sizes.size()) - 1;
  }
  BufferAssignmentInput input(FitPolicy fit = kBestFit, int64_t max_global_work = -1) const {
    BufferAssignmentInput in;
    in.max_global_work = max_global_work;
    in.num_buffers = sizes.size();
    in.sizes = sizes.data();
    in.alignments = alignments.data();
    in.starts = starts.data();
    in.ends = ends.data();
    in.colocations = colocations.data();
    in.kinds = kinds.data();
    in.fit = fit;
    return in;
  }
};

void ExpectNoOverlap(const Buffers& b, const BufferAssignmentResult& r) {
  const size_t n = r.slot_size.size();
  for (size_t i = 0; i < n; ++i) {
    if (r.slot_allocation[i] >= 0) {
      EXPECT_LE(r.slot_offset[i] + r.slot_size[i], r.allocation_size[r.slot_allocation[i]]);
    }
    for (size_t j = i + 1; j < n; ++j) {
      if (r.slot_allocation[i] != r.slot_allocation[j]) continue;
      const bool live_together = r.slot_start[i] <= r.slot_end[j] && r.slot_start[j] <= r.slot_end[i];
      const bool overlap = r.slot_offset[i] < r.slot_offset[j] + r.slot_size[j] &&
                           r.slot_offset[j] < r.slot_offset[i] + r.slot_size[i] &&
                           r.slot_size[i] > 0 && r.slot_size[j] > 0;
      EXPECT_FALSE(live_together && overlap) << "slots " << i << " and " << j;
    }
  }
  (void)b;
}

TEST(AssignBuffersTest, ChainOfEqualSizesUsesTwoSlots) {
  // a -> b -> c -> d: each buffer lives from its definition to its user.
  Buffers b;
  b.Add(100, 0, 1);
  b.Add(100, 1, 2);
  b.Add(100, 2, 3);
  b.Add(100, 3, 3);
  BufferAssignmentResult r = AssignBuffers(b.input());
  ExpectNoOverlap(b, r);
  EXPECT_EQ(r.arena_size, 200);
  EXPECT_EQ(r.peak_temp_bytes, 200);
  EXPECT_EQ(r.offset, (vector<int64_t>{0, 100, 0, 100}));
}

TEST(AssignBuffersTest, PlacesLargestFirstInTheGapsOfInterferingBuffers) {
  // Sorted by size: D(200), A(100), B(60), F(50), C(40), E(30).
  Buffers b;
  b.Add(100, 0, 11);   // 0 A: @0 (D is live later)
  b.Add(60, 0, 15);    // 1 B: above A @100
  b.Add(40, 0, 11);    // 2 C: above A and B @160
  b.Add(30, 12, 15);   // 3 E: between F [0,50) and B [100,160) @50
  b.Add(200, 20, 30);  // 4 D: alone @0
  b.Add(50, 12, 15);   // 5 F: below B, where A was @0
  BufferAssignmentResult r = AssignBuffers(b.input());
  ExpectNoOverlap(b, r);
  EXPECT_EQ(r.offset, (vector<int64_t>{0, 100, 160, 50, 0, 0}));
  EXPECT_EQ(r.arena_size, 200);
  EXPECT_EQ(r.peak_temp_bytes, 200);
}

TEST(AssignBuffersTest, BestFitTakesTheSmallestGapFirstFitTheLowest) {
  // All but W live over 0..10 or 0..4 and stack up in size order: P@0,
  // R@50, Q@80, T@100, U@115. R and T end at 4, so W (live 6..10) sees the
  // gaps [50,80) (30 bytes) and [100,115) (15 bytes).
  Buffers b;
  b.Add(50, 0, 10);  // 0 P
  b.Add(30, 0, 4);   // 1 R
  b.Add(20, 0, 10);  // 2 Q
  b.Add(15, 0, 4);   // 3 T
  b.Add(13, 0, 10);  // 4 U
  b.Add(12, 6, 10);  // 5 W
  BufferAssignmentResult best = AssignBuffers(b.input(kBestFit));
  BufferAssignmentResult first = AssignBuffers(b.input(kFirstFit));
  ExpectNoOverlap(b, best);
  ExpectNoOverlap(b, first);
  EXPECT_EQ(best.offset, (vector<int64_t>{0, 50, 80, 100, 115, 100}));
  EXPECT_EQ(first.offset, (vector<int64_t>{0, 50, 80, 100, 115, 50}));
  EXPECT_EQ(best.arena_size, 128);
  EXPECT_EQ(best.peak_temp_bytes, 128);
}

TEST(AssignBuffersTest, KindsGetTheirOwnAllocations) {
  Buffers b;
  b.Add(64, 0, 5, kParameterBuffer);
  b.Add(32, 0, 5, kConstantBuffer);
  b.Add(16, 1, 2);
  b.Add(16, 2, 5, kOutputBuffer);
  b.Add(16, 1, 2);
  BufferAssignmentResult r = AssignBuffers(b.input());
  ASSERT_EQ(r.allocation_size.size(), 4u);
  EXPECT_EQ(r.allocation_kind, (vector<int64_t>{kParameterBuffer, kConstantBuffer, kOutputBuffer, kTempBuffer}));
  EXPECT_EQ(r.allocation, (vector<int64_t>{0, 1, 3, 2, 3}));
  EXPECT_EQ(r.arena_allocation, 3);
  EXPECT_EQ(r.arena_size, 32);
  EXPECT_EQ(r.peak_temp_bytes, 32);
}

TEST(AssignBuffersTest, ColocatedBuffersShareASlot) {
  Buffers b;
  b.Add(40, 0, 2, kTempBuffer, 7);
  b.Add(48, 5, 9, kTempBuffer, 7);
  b.Add(40, 3, 4);  // inside the hull: cannot share
  b.Add(8, 1, 1, kTempBuffer, 9);
  b.Add(8, 6, 6, kOutputBuffer, 9);  // makes set 9 an output
  BufferAssignmentResult r = AssignBuffers(b.input());
  ExpectNoOverlap(b, r);
  EXPECT_EQ(r.slot[0], r.slot[1]);
  EXPECT_EQ(r.offset[0], r.offset[1]);
  EXPECT_EQ(r.slot_size[r.slot[0]], 48);
  EXPECT_EQ(r.slot_start[r.slot[0]], 0);
  EXPECT_EQ(r.slot_end[r.slot[0]], 9);
  EXPECT_EQ(r.arena_size, 88);
  EXPECT_EQ(r.allocation_kind[r.allocation[3]], kOutputBuffer);
  EXPECT_EQ(r.allocation[3], r.allocation[4]);
}

TEST(AssignBuffersTest, AlignmentIsHonoured) {
  Buffers b;
  b.Add(10, 0, 3, kTempBuffer, -1, 64);
  b.Add(10, 0, 3, kTempBuffer, -1, 64);
  b.Add(10, 0, 3, kTempBuffer, -1, 64);
  BufferAssignmentResult r = AssignBuffers(b.input());
  ExpectNoOverlap(b, r);
  vector<int64_t> offsets = r.offset;
  std::sort(offsets.begin(), offsets.end());
  EXPECT_EQ(offsets, (vector<int64_t>{0, 64, 128}));
  EXPECT_EQ(r.arena_size, 138);
}

TEST(AssignBuffersTest, RandomBuffersNeverOverlapAndArenaCoversPeak) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 100; ++trial) {
    Buffers b;
    const int n = 1 + static_cast<int>(rng() % 80);
    for (int i = 0; i < n; ++i) {
      const int64_t start = rng() % 50;
      const int64_t end = start + rng() % 20;
      const int64_t colocation = rng() % 6 == 0 ? static_cast<int64_t>(rng() % 4) : -1;
      b.Add(1 + rng() % 500, start, end, kTempBuffer, colocation, int64_t{1} << (rng() % 7));
    }
    for (FitPolicy fit : {kBestFit, kFirstFit}) {
     for (int64_t max_global_work : {int64_t{-1}, int64_t{0}}) {
      BufferAssignmentResult r = AssignBuffers(b.input(fit, max_global_work));
      ExpectNoOverlap(b, r);
      if (max_global_work == 0) EXPECT_EQ(r.packing, kPackedBySweep);
      EXPECT_GE(r.arena_size, r.peak_temp_bytes);
      for (size_t i = 0; i < b.sizes.size(); ++i) {
        EXPECT_EQ(r.offset[i] % b.alignments[i], 0);
      }
     }
    }
  }
}

TEST(AssignBuffersTest, SweepReusesFreedChunksBestFitAndCoalesces) {
  // Positions 0..4. A [0,1] 100, B [0,3] 50, C [0,1] 30 stack up at 0, 100,
  // 150. At 2, A and C are free: [0,100) and [150,180). D (30) takes the
  // smaller chunk @150 (best fit) or the lowest @0 (first fit). At 4
  // everything is free and the chunks merge, so F (180) fits at 0.
  Buffers b;
  b.Add(100, 0, 1);  // A
  b.Add(50, 0, 3);   // B
  b.Add(30, 0, 1);   // C
  b.Add(30, 2, 3);   // D
  b.Add(180, 4, 4);  // F
  BufferAssignmentResult best = AssignBuffers(b.input(kBestFit, 0));
  BufferAssignmentResult first = AssignBuffers(b.input(kFirstFit, 0));
  ExpectNoOverlap(b, best);
  ExpectNoOverlap(b, first);
  EXPECT_EQ(best.packing, kPackedBySweep);
  EXPECT_EQ(best.offset, (vector<int64_t>{0, 100, 150, 150, 0}));
  EXPECT_EQ(first.offset, (vector<int64_t>{0, 100, 150, 0, 0}));
  EXPECT_EQ(best.arena_size, 180);
  EXPECT_EQ(first.arena_size, 180);
}

TEST(AssignBuffersTest, TrainingStepLivenessFallsBackToTheSweepAtPeak) {
  // A training step: activation i lives from forward step i to backward step
  // 2L - i, so every activation interferes with all earlier ones and the
  // global heuristic would visit L^2 / 2 slots. Between two activations a
  // short temporary of another size lives for one step. The packing must
  // come from the sweep and, the ranges being nested, reach the peak.
  Buffers b;
  const int64_t layers = 4000;
  for (int64_t i = 0; i < layers; ++i) {
    b.Add(256, 2 * i, 4 * layers - 2 * i);
    b.Add(64, 2 * i + 1, 2 * i + 1);
  }
  BufferAssignmentResult r = AssignBuffers(b.input());
  EXPECT_EQ(r.packing, kPackedBySweep);
  EXPECT_EQ(r.peak_temp_bytes, 256 * layers + 64);
  EXPECT_EQ(r.arena_size, 256 * layers + 64);
  // Spot checks instead of the quadratic overlap check: activations are
  // stacked in order, each temporary sits just above the last activation.
  EXPECT_EQ(r.offset[0], 0);
  EXPECT_EQ(r.offset[2 * (layers - 1)], 256 * (layers - 1));
  EXPECT_EQ(r.offset[1], 256);
  EXPECT_EQ(r.offset[2 * layers - 1], 256 * layers);
}

TEST(AssignBuffersTest, ManyBuffersAreFast) {
  Buffers b;
  for (int i = 0; i < 100000; ++i) b.Add(64 + (i % 7) * 16, i, i + 1 + (i % 5));
  BufferAssignmentResult r = AssignBuffers(b.input());
  EXPECT_GE(r.arena_size, r.peak_temp_bytes);
  EXPECT_LE(r.arena_size, 2 * r.peak_temp_bytes + 1024);
}

TEST(ValidateBufferAssignmentInputTest, RejectsBadRanges) {
  Buffers b;
  b.Add(10, 3, 2);
  EXPECT_NE(ValidateBufferAssignmentInput(b.input()), "");
  Buffers ok;
  ok.Add(10, 2, 3);
  EXPECT_EQ(ValidateBufferAssignmentInput(ok.input()), "");
}

}  // namespace
}  // namespace xla_core
