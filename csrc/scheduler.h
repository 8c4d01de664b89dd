// A memory-minimizing list scheduler over a flattened computation.
//
// The computation is a CSR operand graph (see csrc/graph.h) plus, per node:
//   bytes_defined[i]  bytes of the new buffer(s) node i defines (0 for nodes
//                     that allocate nothing the scheduler should count:
//                     parameters and constants, whose memory lives outside the
//                     computation and is never freed by it);
//   is_alias[i]       1 when node i defines no buffer of its own but forwards
//                     its operands' buffers (bitcast, get-tuple-element,
//                     tuple): its users then use its operands' buffers;
// and optional extra ordering edges (control predecessors, side-effect
// chains) in a second CSR that constrain the order but are not uses.
//
// The algorithm is XLA's ListScheduler: repeatedly take, among the ready
// nodes (all operands and ordering predecessors scheduled), the one with the
// largest (bytes freed by scheduling it) - (bytes it defines), ties broken by
// the smaller node id (original order). A node frees a buffer when it is the
// last unscheduled user of it; the buffers reachable through aliases of the
// root are live out and never freed. Priorities change when a buffer is down
// to its last user; a balanced tree keyed by priority keeps every step
// O(log n), so a schedule costs O((n + e) log n) where e counts (user,
// buffer) pairs. An alias node's buffers are the union of its operands'
// (deduplicated): for get-tuple-element of a tuple this over-approximates,
// which only makes the estimate of freed bytes conservative.
#ifndef XLA_CSRC_SCHEDULER_H_
#define XLA_CSRC_SCHEDULER_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "csrc/graph.h"

namespace xla_core {

struct ScheduleInput {
  OperandGraph operands;            // uses (and ordering)
  OperandGraph ordering;            // extra ordering edges; num_nodes 0 when none
  const int64_t* bytes_defined = nullptr;
  const uint8_t* is_alias = nullptr;
  int64_t root = -1;                // -1 when the computation has no root
};

// Checks the per-node arrays against the graph: sizes match, bytes are
// non-negative, the ordering graph has the same node count (or none), root is
// in range. Returns an empty string if valid, else a message.
std::string ValidateScheduleInput(const ScheduleInput& input, size_t num_bytes, size_t num_alias);

// The list schedule: a permutation of node ids with operands and ordering
// predecessors before users. The graph must be acyclic (use FindCycle).
std::vector<int64_t> ListSchedule(const ScheduleInput& input);

// The peak of the scheduler's memory model over `sequence`: the largest sum
// of bytes of buffers live after each step, a buffer being live from its
// definition until its last user runs (never freed when live out). Used to
// compare schedules.
int64_t SequencePeakMemory(const ScheduleInput& input, const int64_t* sequence, size_t length);

}  // namespace xla_core

#endif  // XLA_CSRC_SCHEDULER_H_
