// Graph algorithms over a flattened operand graph.
//
// Python flattens an HloComputation into compressed sparse rows: node i's
// operands are operand_indices[operand_offsets[i] .. operand_offsets[i+1]),
// in operand order. Edges point from a user to its operands, so "operands
// before users" is a post order of this graph. Nothing here knows about
// opcodes or shapes; callers attach meaning to node ids.
#ifndef XLA_CSRC_GRAPH_H_
#define XLA_CSRC_GRAPH_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace xla_core {

// A non-owning view of a graph in CSR form. Valid when ValidateGraph returns
// an empty string for it; the algorithms below assume a valid graph.
struct OperandGraph {
  int64_t num_nodes = 0;
  const int64_t* operand_offsets = nullptr;  // num_nodes + 1 entries
  const int64_t* operand_indices = nullptr;  // operand_offsets[num_nodes] entries

  int64_t operand_begin(int64_t node) const { return operand_offsets[node]; }
  int64_t operand_end(int64_t node) const { return operand_offsets[node + 1]; }
};

// Builds a view over the arrays, deriving num_nodes from the offsets' size
// (which must be at least 1).
OperandGraph MakeOperandGraph(const int64_t* operand_offsets, size_t num_offsets,
                              const int64_t* operand_indices);

// Checks that the arrays describe a graph: at least one offset, offsets start
// at 0, never decrease and end at num_indices, and every operand index is a
// node id in [0, num_nodes). Returns an empty string if so, otherwise a
// message naming the first offending entry.
std::string ValidateGraph(const int64_t* operand_offsets, size_t num_offsets,
                          const int64_t* operand_indices, size_t num_indices);

// Checks that every root is a node id of the graph; same contract as above.
std::string ValidateRoots(const OperandGraph& graph, const int64_t* roots, size_t num_roots);

// A post order of the whole graph: every node exactly once, operands before
// their users. Depth-first search starts from each node that is no node's
// operand (a sink of the user graph: the root and dead values), in node-id
// order, and visits operands in operand order; a repeated operand is visited
// once. Any node left unvisited after that (possible only on a cycle) starts a
// search too, in node-id order, so the result is always a permutation of
// 0..num_nodes-1. On a graph with a cycle the order cannot put operands before
// users; use FindCycle to tell. The search is iterative: deep chains are fine.
std::vector<int64_t> PostOrder(const OperandGraph& graph);

// Like PostOrder, but over the nodes reachable from `roots` only, searching
// from each root in the order given.
std::vector<int64_t> PostOrderFrom(const OperandGraph& graph, const int64_t* roots,
                                   size_t num_roots);

// Returns a node that lies on a cycle (a node that is, transitively, its own
// operand), or -1 if the graph is acyclic. Deterministic: searches from nodes
// in node-id order and returns the first node found to close a cycle.
int64_t FindCycle(const OperandGraph& graph);

// Marks every node reachable from `roots` through operand edges, roots
// included: the live set that dead code elimination keeps. The result has
// num_nodes entries, 1 for live and 0 for dead.
std::vector<uint8_t> Reachable(const OperandGraph& graph, const int64_t* roots, size_t num_roots);

}  // namespace xla_core

#endif  // XLA_CSRC_GRAPH_H_
