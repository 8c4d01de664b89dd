// Buffer assignment: packs logical buffers into allocations.
//
// Python describes each logical buffer with flat arrays (one entry per
// buffer): its size and alignment in bytes, its live range [start, end] in
// positions of the flattened schedule (inclusive: the buffer is live at every
// position p with start <= p <= end; Python computes liveness, see
// xla/service/buffer_assignment.py), a colocation set id (buffers with the
// same id >= 0 must share one slot: while loop state, in-place reuse, an
// output aliased to a parameter; -1 means a slot of its own) and a kind.
//
// The buffers of one colocation set form a slot whose size and alignment are
// the members' maximum, whose live range spans the members' ranges, and whose
// kind is the strongest member kind (parameter > constant > output > temp).
// Parameter, constant and output slots each get an allocation of their own
// at offset 0. Temp slots are packed into one arena allocation (the last
// allocation) by two heuristics, and the smaller arena wins (ties: the
// global one):
//
// * global decreasing size: slots sorted by size, largest first (ties:
//   earlier start, then lower id), each placed in a free gap among the
//   already placed slots whose live ranges intersect its own. kBestFit takes
//   the smallest gap that fits (ties: lowest offset), as XLA's
//   GlobalDecreasingSizeBestFitHeap does; kFirstFit the lowest offset.
//   Placed slots sit in a segment tree over slots sorted by start that keeps
//   the largest end per subtree, so finding the k slots interfering with one
//   slot costs O(k log n). k can grow with the module (a training step keeps
//   every forward activation live until the backward pass), which makes the
//   whole quadratic, so this heuristic gives up once it has visited more
//   than 16 * m * (log2 m + 1) interfering slots (m temp slots);
// * a sweep in schedule order (XLA's HeapSimulator over a best-fit heap): at
//   each position the slots whose range ended are freed (coalescing free
//   neighbours), then the slots starting there are placed, largest first,
//   in a free chunk (kBestFit: the smallest that fits; kFirstFit: the
//   lowest; each looks at most at 16 chunks) or at the top of the arena.
//   O(m log m) always.
//
// So the packing costs O(m log m) plus the bounded work of the global
// heuristic; small modules keep the global heuristic's packing.
#ifndef XLA_CSRC_BUFFER_ASSIGNMENT_H_
#define XLA_CSRC_BUFFER_ASSIGNMENT_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace xla_core {

enum BufferKind : int64_t {
  kTempBuffer = 0,
  kParameterBuffer = 1,
  kConstantBuffer = 2,
  kOutputBuffer = 3,
};

enum FitPolicy : int64_t { kBestFit = 0, kFirstFit = 1 };

// Which heuristic packed the arena.
enum Packing : int64_t { kPackedGlobalDecreasingSize = 0, kPackedBySweep = 1 };

struct BufferAssignmentInput {
  size_t num_buffers = 0;
  const int64_t* sizes = nullptr;
  const int64_t* alignments = nullptr;
  const int64_t* starts = nullptr;
  const int64_t* ends = nullptr;
  const int64_t* colocations = nullptr;
  const int64_t* kinds = nullptr;
  FitPolicy fit = kBestFit;
  // Work budget of the global heuristic (interfering slots visited); -1: the
  // default 16 * m * (log2 m + 1). 0 leaves the packing to the sweep (tests).
  int64_t max_global_work = -1;
};

struct BufferAssignmentResult {
  // Per buffer.
  std::vector<int64_t> slot;          // slot (colocation set) index
  std::vector<int64_t> allocation;    // allocation index
  std::vector<int64_t> offset;        // offset inside the allocation
  // Per slot, in order of first member.
  std::vector<int64_t> slot_size, slot_start, slot_end, slot_kind, slot_allocation, slot_offset;
  // Per allocation.
  std::vector<int64_t> allocation_size, allocation_kind;
  int64_t arena_allocation = -1;  // index of the temp arena, -1 without temps
  int64_t arena_size = 0;
  // Max over positions of the summed sizes of live temp slots: a lower bound
  // of arena_size.
  int64_t peak_temp_bytes = 0;
  Packing packing = kPackedGlobalDecreasingSize;
};

// Empty string if the arrays are valid (sizes >= 0, alignments >= 1,
// start <= end, kinds known, colocation ids >= -1), else a message.
std::string ValidateBufferAssignmentInput(const BufferAssignmentInput& input);

BufferAssignmentResult AssignBuffers(const BufferAssignmentInput& input);

}  // namespace xla_core

#endif  // XLA_CSRC_BUFFER_ASSIGNMENT_H_
