#include "csrc/graph.h"

#include <string>
#include <vector>

namespace xla_core {
namespace {

enum VisitState : uint8_t { kUnvisited = 0, kInProgress = 1, kDone = 2 };

struct Frame {
  int64_t node;
  int64_t next;  // position in operand_indices of the next operand to visit
};

// Depth-first search from `start` that appends nodes to `order` when they
// finish. Returns the first operand found in progress (a node on a cycle), or
// -1. With `stop_at_cycle` false it skips such back edges and keeps going.
int64_t Search(const OperandGraph& graph, int64_t start, bool stop_at_cycle,
               std::vector<uint8_t>& state, std::vector<Frame>& stack,
               std::vector<int64_t>* order) {
  if (state[start] != kUnvisited) return -1;
  state[start] = kInProgress;
  stack.push_back({start, graph.operand_begin(start)});
  while (!stack.empty()) {
    Frame& top = stack.back();
    if (top.next < graph.operand_end(top.node)) {
      const int64_t operand = graph.operand_indices[top.next++];
      if (state[operand] == kUnvisited) {
        state[operand] = kInProgress;
        stack.push_back({operand, graph.operand_begin(operand)});  // invalidates `top`
      } else if (state[operand] == kInProgress && stop_at_cycle) {
        stack.clear();
        return operand;
      }
    } else {
      state[top.node] = kDone;
      if (order != nullptr) order->push_back(top.node);
      stack.pop_back();
    }
  }
  return -1;
}

std::string Describe(const char* array, size_t position, int64_t value) {
  return std::string(array) + "[" + std::to_string(position) + "] = " + std::to_string(value);
}

}  // namespace

OperandGraph MakeOperandGraph(const int64_t* operand_offsets, size_t num_offsets,
                              const int64_t* operand_indices) {
  OperandGraph graph;
  graph.num_nodes = num_offsets == 0 ? 0 : static_cast<int64_t>(num_offsets) - 1;
  graph.operand_offsets = operand_offsets;
  graph.operand_indices = operand_indices;
  return graph;
}

std::string ValidateGraph(const int64_t* operand_offsets, size_t num_offsets,
                          const int64_t* operand_indices, size_t num_indices) {
  if (num_offsets == 0) {
    return "operand_offsets must have num_nodes + 1 entries, so at least one; got none";
  }
  if (operand_offsets[0] != 0) {
    return "operand_offsets must start at 0; got " + Describe("operand_offsets", 0, operand_offsets[0]);
  }
  for (size_t i = 1; i < num_offsets; ++i) {
    if (operand_offsets[i] < operand_offsets[i - 1]) {
      return "operand_offsets must not decrease; got " +
             Describe("operand_offsets", i - 1, operand_offsets[i - 1]) + " and " +
             Describe("operand_offsets", i, operand_offsets[i]);
    }
  }
  const int64_t last = operand_offsets[num_offsets - 1];
  if (last != static_cast<int64_t>(num_indices)) {
    return "operand_offsets must end at the number of operand indices (" +
           std::to_string(num_indices) + "); got " + Describe("operand_offsets", num_offsets - 1, last);
  }
  const int64_t num_nodes = static_cast<int64_t>(num_offsets) - 1;
  for (size_t i = 0; i < num_indices; ++i) {
    if (operand_indices[i] < 0 || operand_indices[i] >= num_nodes) {
      return Describe("operand_indices", i, operand_indices[i]) +
             " is out of range for a graph of " + std::to_string(num_nodes) + " nodes";
    }
  }
  return std::string();
}

std::string ValidateRoots(const OperandGraph& graph, const int64_t* roots, size_t num_roots) {
  for (size_t i = 0; i < num_roots; ++i) {
    if (roots[i] < 0 || roots[i] >= graph.num_nodes) {
      return Describe("roots", i, roots[i]) + " is out of range for a graph of " +
             std::to_string(graph.num_nodes) + " nodes";
    }
  }
  return std::string();
}

std::vector<int64_t> PostOrder(const OperandGraph& graph) {
  const int64_t n = graph.num_nodes;
  std::vector<uint8_t> has_user(n, 0);
  for (int64_t i = 0; i < graph.operand_offsets[n]; ++i) {
    has_user[graph.operand_indices[i]] = 1;
  }
  std::vector<int64_t> order;
  order.reserve(n);
  std::vector<uint8_t> state(n, kUnvisited);
  std::vector<Frame> stack;
  for (int64_t node = 0; node < n; ++node) {
    if (!has_user[node]) Search(graph, node, /*stop_at_cycle=*/false, state, stack, &order);
  }
  for (int64_t node = 0; node < n; ++node) {
    Search(graph, node, /*stop_at_cycle=*/false, state, stack, &order);
  }
  return order;
}

std::vector<int64_t> PostOrderFrom(const OperandGraph& graph, const int64_t* roots,
                                   size_t num_roots) {
  std::vector<int64_t> order;
  std::vector<uint8_t> state(graph.num_nodes, kUnvisited);
  std::vector<Frame> stack;
  for (size_t i = 0; i < num_roots; ++i) {
    Search(graph, roots[i], /*stop_at_cycle=*/false, state, stack, &order);
  }
  return order;
}

int64_t FindCycle(const OperandGraph& graph) {
  std::vector<uint8_t> state(graph.num_nodes, kUnvisited);
  std::vector<Frame> stack;
  for (int64_t node = 0; node < graph.num_nodes; ++node) {
    const int64_t on_cycle = Search(graph, node, /*stop_at_cycle=*/true, state, stack, nullptr);
    if (on_cycle >= 0) return on_cycle;
  }
  return -1;
}

std::vector<uint8_t> Reachable(const OperandGraph& graph, const int64_t* roots, size_t num_roots) {
  std::vector<uint8_t> live(graph.num_nodes, 0);
  std::vector<int64_t> worklist;
  for (size_t i = 0; i < num_roots; ++i) {
    if (!live[roots[i]]) {
      live[roots[i]] = 1;
      worklist.push_back(roots[i]);
    }
  }
  while (!worklist.empty()) {
    const int64_t node = worklist.back();
    worklist.pop_back();
    for (int64_t i = graph.operand_begin(node); i < graph.operand_end(node); ++i) {
      const int64_t operand = graph.operand_indices[i];
      if (!live[operand]) {
        live[operand] = 1;
        worklist.push_back(operand);
      }
    }
  }
  return live;
}

}  // namespace xla_core
