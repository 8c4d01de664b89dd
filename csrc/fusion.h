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
//   reads_own_index  1 when it reads every operand at its own output index
//              (elementwise ops); 0 when it computes a new index per
//              operand read (slice, pad, concatenate, broadcast, reshape,
//              transpose, gather, reduce, ...). Null means all 1.
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
//     with multi_output, also where P has unfused users when G is a reduce
//     whose operands are P and scalar constants and which holds nothing else
//     (a bias gradient's reduce beside the dots that read the gradient): P
//     becomes G's second output, computed once, where it was a kLoop group
//     of its own beside a copy in G. No unfused user of P can reach G then:
//     G's only member downstream of P is the reduce, which reads only P;
//   * otherwise, if P is cheap (not expensive) and has at most max_duplicates
//     user groups (scalar constants: any number), P is copied into each user
//     group that can take it; if P has an unfused user (or a group refused
//     it), P also starts a new kLoop group of its own for those users;
//   * otherwise P starts a new kLoop group as its root.
// "Joins" and "is copied into" are both subject to the bounds below; a group
// that cannot take P counts as an unfused user.
// Phase 1 never creates a cycle: P joins or is copied into a group only when
// the users reading that instance are all in the group, so no path can leave
// the group and come back through P. Groups are numbered so that a group's
// root (its last member in post order) comes after every value it reads.
//
// Bounds: code size and depth. A fused computation is emitted by one element
// generator per member, called at every index its readers ask for, memoized
// per (instruction, index): a member read by elementwise users at their own
// index costs once per index those users are evaluated at, but a member read
// through data movement (two slices of a concatenate or pad at different
// offsets, as a stencil does) is evaluated once per index map of each such
// reader. Fusing the steps of a stencil unbounded multiplies the code by the
// number of index maps per step (u[i-1], u[i], u[i+1] through two
// concatenates: 5), so 6 steps in one fusion evaluate 50,778 elements per
// output element where 2 fusions of 3 steps evaluate 403 each, and 8 steps
// took minutes and 6 GB to compile. So each instance (home member or copy) of
// P in group G gets
//   sources(P) = the union of sources(U) over P's users U in G that read
//                their own index, plus (U, number of operand slots of U that
//                are P) for each other user U in G; the group's root has
//                the single source "output index" (1 index);
//   emitted(P) = sum over sources of maps * emitted(source)  (the output
//                index counts 1): the distinct indices P is evaluated at;
//   height(P)  = 1 + the largest height of P's users in G (the root: 1).
// G's cost is the sum of emitted over its instances (scalar constants count
// 0) and its chain the largest height. P may enter G only if
//   * cost(G) + emitted(P) <= max_emitted_ops (kMaxFusionEmittedOps);
//   * height(P) <= max_depth (kMaxFusionDepth): the emitter recurses once per
//     instruction of an operand chain; a 100,000-op elementwise chain becomes
//     ~1,000 fusions of 100;
//   * an expensive P has emitted(P) == 1: as in XLA, an expensive producer is
//     not fused into a consumer that reads its elements several times
//     (unlike XLA, a broadcast counts as one read: rsqrt(var) still fuses
//     into layernorm's output).
// Scalar constants are exempt (no code per index, and they end every chain).
// A refused P starts a group of its own, where it is the root (emitted 1,
// height 1), so every instruction finds a place. For the CPU emitter the
// estimate is exact but for broadcasts and transposes, which pass index
// values on and so may share evaluations the estimate counts twice.
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
// Merges keep the bounds: merged siblings cost the sum of their costs (the
// chain is the larger). A producer P merged into C is evaluated at the
// indices C's members read P's outputs at, sources taken as in phase 1
// except that a reduce stores P's value as a side output at the index it
// reads it at (P's output index): R of them; the merge costs cost(C) +
// cost(P) * (R + 1 unless the output index is among them), P must not be
// expensive where R > 1, and a new chain crosses from P into C once, through
// an edge from an output O to a reader U: at most below(O) + height(U) long,
// below(O) being the longest chain under O in P.
//
// Finally a group with at most one member that is not a scalar constant is
// dissolved (its instructions stay unfused) unless fuse_singletons is set,
// and a group's outputs are its exclusive members whose value is read
// outside the group (by another group, an unfused instruction, or as a live
// out value): a group with several outputs is a multi-output fusion.
//
// Cost: O((n + e) * (max_duplicates + max_operands + S)) time for n
// instructions and e operand edges, S the largest number of sources of an
// instance (at most max_emitted_ops, 1 for elementwise chains), plus a sort
// of the phase-2 candidates per value and, per producer-into-consumer
// merge, a scan of the consumer (at most max_emitted_ops members); O(n * S
// + e) memory. No reachability map is built.
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

// Default bounds on one fused computation (see "Bounds" above). The CPU
// backend's element generators recurse per fused instruction and fail past
// about 240 in a chain; 100 leaves room for the caller's frames.
constexpr int64_t kMaxFusionDepth = 100;
// A few hundred emitted element computations: a stencil fuses 2-3 steps per
// kernel; softmax, layernorm and GELU cost well under it (tens).
constexpr int64_t kMaxFusionEmittedOps = 500;

struct FusionOptions {
  int64_t max_operands = 64;        // distinct external operands per fusion
  int64_t max_duplicates = 4;       // user groups a cheap producer may be copied into
  bool multi_output = true;         // run phase 2
  int64_t sibling_min_bytes = 256;  // phase 2 merges readers of values at least this big
  bool fuse_singletons = false;     // keep groups of a single instruction as fusions
  int64_t max_depth = kMaxFusionDepth;             // longest operand chain in a fusion
  int64_t max_emitted_ops = kMaxFusionEmittedOps;  // estimated code size of a fusion
};

struct FusionInput {
  OperandGraph graph;  // post order: operands before users
  const int8_t* kind = nullptr;
  const uint8_t* expensive = nullptr;
  const int64_t* bytes = nullptr;
  const uint8_t* live_out = nullptr;
  const int64_t* shape_key = nullptr;
  const uint8_t* reads_own_index = nullptr;  // null: every instruction does
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
