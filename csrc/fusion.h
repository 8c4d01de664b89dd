// Fusion decisions for one computation: which instructions go into which
// fusion, of which kind, and which fused values leave each fusion.
//
// Input. The computation's instructions in post order (operands before
// users), numbered 0..n-1, as a CSR operand graph (see graph.h), plus per
// instruction:
//   kind       what fusion may do with it (FusionOpKind below);
//   expensive  1 when computing it twice costs real time (exp, log, tanh,
//              divide, power, ..., gather): never duplicated;
//   bytes      the size of its result;
//   live_out   1 when its value is needed outside the computation's
//              instructions (the root);
//   shape_key  an opaque key: for a reduce, equal keys mean "same operand
//              dimensions and same reduced dimensions"; for anything else,
//              "same output dimensions". Only compared for equality.
//
// Phase 1, producer-consumer fusion. Instructions are visited in reverse
// post order, so every user of an instruction has been decided before the
// instruction itself. An instruction ends up with at most one "home" group
// (it is an exclusive member: computed once, inside that fusion) and any
// number of copies in other groups (duplicated: recomputed inside each). For
// a producer P, the "user groups" are the groups holding an instance (home or
// copy) of one of P's users; P "has an unfused user" when one of its users
// is unfused or P is live out. Then:
//   * unfusible P stays unfused;
//   * a reduce starts a new kInput group as its root (a reduce is never fused
//     into a consumer, as on XLA:CPU);
//   * if P has no unfused user and exactly one user group G, and adding P
//     keeps G within max_operands distinct external operands, P joins G;
//   * otherwise, if P is cheap (not expensive) and has at most max_duplicates
//     user groups (scalar constants: any number), P is copied into each user
//     group that can take it; if P has an unfused user (or a group refused
//     it), P also starts a new kLoop group of its own for those users;
//   * otherwise P starts a new kLoop group as its root.
// Phase 1 never creates a cycle: P joins or is copied into a group only when
// the users reading that instance are all in the group, so no path can leave
// the group and come back through P. Groups are numbered so that a group's
// root (its last member in post order) comes after every value it reads.
//
// Phase 2, sibling multi-output fusion (when enabled). Give every group and
// every unfused instruction a depth in the graph of fusions: 1 + the largest
// depth of what it reads (0 for no operands). An edge always goes from a
// smaller depth to a strictly larger one. First, producer-consumer
// multi-output fusion: a kLoop group P (never a reduce) read by several
// nodes merges into its reading group C of smallest depth when every other
// reader of P is strictly deeper than C; no other path from P to C can
// exist then, and the merged group, at C's depth, keeps every edge going
// strictly deeper (softmax: exp(x - max) joins the sum's kInput fusion and
// is a second output, read by the divide). Then siblings: merging nodes of
// EQUAL depth keeps the graph acyclic no matter how many merges are made.
// For each value
// X of at least sibling_min_bytes bytes, the groups that read X and have the
// same depth, the same kind and the same shape_key (reduces: same operand
// dimensions and reduced dimensions; loops: same output dimensions) merge
// into one multi-output fusion, as long as it stays within max_operands.
// Softmax's and layernorm's reductions over the same input so read it once.
//
// Finally a group with at most one member that is not a scalar constant is
// dissolved (its instructions stay unfused) unless fuse_singletons is set,
// and a group's outputs are its exclusive members whose value is read
// outside the group (by another group, an unfused instruction, or as a live
// out value): a group with several outputs is a multi-output fusion.
//
// Cost: O((n + e) * (max_duplicates + max_operands)) time for n instructions
// and e operand edges, plus a sort of the phase-2 candidates per value; O(n +
// e) memory. No reachability map is built.
#ifndef XLA_CSRC_FUSION_H_
#define XLA_CSRC_FUSION_H_

#include <cstdint>
#include <string>
#include <vector>

#include "csrc/graph.h"

namespace xla_core {

enum FusionOpKind : int8_t {
  kFusionUnfusible = 0,    // parameter, dot, while, custom-call, tuple, ...
  kFusionLoop = 1,         // elementwise and cheap data movement
  kFusionReduce = 2,       // reduce: the root of a kInput fusion
  kFusionScalarConst = 3,  // a scalar constant: copied into every fusion that reads it
};

enum FusionKind : int8_t { kLoopFusion = 0, kInputFusion = 1 };

struct FusionOptions {
  int64_t max_operands = 64;        // distinct external operands per fusion
  int64_t max_duplicates = 4;       // user groups a cheap producer may be copied into
  bool multi_output = true;         // run phase 2
  int64_t sibling_min_bytes = 256;  // phase 2 merges readers of values at least this big
  bool fuse_singletons = false;     // keep groups of a single instruction as fusions
};

struct FusionInput {
  OperandGraph graph;  // post order: operands before users
  const int8_t* kind = nullptr;
  const uint8_t* expensive = nullptr;
  const int64_t* bytes = nullptr;
  const uint8_t* live_out = nullptr;
  const int64_t* shape_key = nullptr;
};

struct FusionResult {
  // Per instruction: its home group (it is computed there, once), or -1.
  std::vector<int64_t> instruction_group;
  // Per instruction: 1 when the instruction stays in the computation as is.
  // An instruction with no home group that is not unfused exists only as
  // copies inside fusions (or not at all if it is dead).
  std::vector<uint8_t> unfused;
  // Groups, in an order where a group comes after every group it reads.
  // Members of group g (home members and copies) in post order:
  // group_members[group_offsets[g] .. group_offsets[g+1]).
  std::vector<int64_t> group_offsets{0};
  std::vector<int64_t> group_members;
  // Aligned with group_members: 1 when the member is a home member whose
  // value is read outside the group. Every group has at least one output.
  std::vector<uint8_t> member_is_output;
  std::vector<int8_t> group_kind;  // FusionKind
};

// Checks the input arrays against the graph (sizes are the caller's job):
// kinds in range. Returns an empty string or a message.
std::string ValidateFusionInput(const FusionInput& input);

FusionResult ComputeFusion(const FusionInput& input, const FusionOptions& options);

// Checks the invariants a rewrite relies on; returns an empty string or a
// message. Every value a group member or unfused instruction reads from
// outside its group is either unfused or an output of its home group; live
// out values are unfused or outputs; every group has an output; and the
// graph of fusions and unfused instructions is acyclic.
std::string CheckFusionResult(const FusionInput& input, const FusionResult& result);

}  // namespace xla_core

#endif  // XLA_CSRC_FUSION_H_
