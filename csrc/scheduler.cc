#include "csrc/scheduler.h"

#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace xla_core {
namespace {

// The buffer-level view of a computation shared by the scheduler and the
// peak-memory simulation: which buffers each node uses, and who uses each.
struct BufferUses {
  std::vector<int64_t> use_offsets;    // node -> its used buffers (CSR)
  std::vector<int64_t> uses;
  std::vector<int64_t> user_offsets;   // buffer (a node id) -> its users (CSR)
  std::vector<int64_t> users;
  std::vector<uint8_t> freeable;       // defines bytes and is not live out
};

BufferUses AnalyzeBuffers(const ScheduleInput& in) {
  const int64_t n = in.operands.num_nodes;
  // The buffers each node's value lives in: itself, or its operands' buffers
  // for an alias node. Operands come first in post order.
  std::vector<std::vector<int64_t>> alias_sources(n);
  std::vector<int64_t> order = PostOrder(in.operands);
  std::vector<int64_t> stamp(n, -1);
  for (int64_t node : order) {
    if (!in.is_alias[node]) continue;
    std::vector<int64_t>& out = alias_sources[node];
    for (int64_t i = in.operands.operand_begin(node); i < in.operands.operand_end(node); ++i) {
      const int64_t op = in.operands.operand_indices[i];
      auto add = [&](int64_t b) {
        if (stamp[b] != node) {
          stamp[b] = node;
          out.push_back(b);
        }
      };
      if (in.is_alias[op]) {
        for (int64_t b : alias_sources[op]) add(b);
      } else {
        add(op);
      }
    }
  }
  BufferUses r;
  r.use_offsets.assign(n + 1, 0);
  std::fill(stamp.begin(), stamp.end(), -1);
  std::vector<int64_t> user_count(n, 0);
  for (int64_t node = 0; node < n; ++node) {
    for (int64_t i = in.operands.operand_begin(node); i < in.operands.operand_end(node); ++i) {
      const int64_t op = in.operands.operand_indices[i];
      auto add = [&](int64_t b) {
        if (stamp[b] != node) {
          stamp[b] = node;
          r.uses.push_back(b);
          ++user_count[b];
        }
      };
      if (in.is_alias[op]) {
        for (int64_t b : alias_sources[op]) add(b);
      } else {
        add(op);
      }
    }
    r.use_offsets[node + 1] = static_cast<int64_t>(r.uses.size());
  }
  r.user_offsets.assign(n + 1, 0);
  for (int64_t b = 0; b < n; ++b) r.user_offsets[b + 1] = r.user_offsets[b] + user_count[b];
  r.users.resize(r.uses.size());
  std::vector<int64_t> fill(r.user_offsets.begin(), r.user_offsets.end() - 1);
  for (int64_t node = 0; node < n; ++node) {
    for (int64_t i = r.use_offsets[node]; i < r.use_offsets[node + 1]; ++i) {
      r.users[fill[r.uses[i]]++] = node;
    }
  }
  r.freeable.assign(n, 0);
  for (int64_t b = 0; b < n; ++b) {
    r.freeable[b] = !in.is_alias[b] && in.bytes_defined[b] > 0;
  }
  if (in.root >= 0) {
    if (in.is_alias[in.root]) {
      for (int64_t b : alias_sources[in.root]) r.freeable[b] = 0;
    } else {
      r.freeable[in.root] = 0;
    }
  }
  return r;
}

int64_t Defined(const ScheduleInput& in, int64_t node) {
  return in.is_alias[node] ? 0 : in.bytes_defined[node];
}

}  // namespace

std::string ValidateScheduleInput(const ScheduleInput& input, size_t num_bytes, size_t num_alias) {
  const int64_t n = input.operands.num_nodes;
  if (static_cast<int64_t>(num_bytes) != n) {
    return "bytes_defined has " + std::to_string(num_bytes) + " entries; the graph has " +
           std::to_string(n) + " nodes";
  }
  if (static_cast<int64_t>(num_alias) != n) {
    return "is_alias has " + std::to_string(num_alias) + " entries; the graph has " +
           std::to_string(n) + " nodes";
  }
  if (input.ordering.num_nodes != 0 && input.ordering.num_nodes != n) {
    return "the ordering graph has " + std::to_string(input.ordering.num_nodes) +
           " nodes; the operand graph has " + std::to_string(n);
  }
  for (int64_t i = 0; i < n; ++i) {
    if (input.bytes_defined[i] < 0) {
      return "bytes_defined[" + std::to_string(i) + "] = " +
             std::to_string(input.bytes_defined[i]) + " is negative";
    }
  }
  if (input.root < -1 || input.root >= n) {
    return "root " + std::to_string(input.root) + " is out of range for a graph of " +
           std::to_string(n) + " nodes";
  }
  return std::string();
}

std::vector<int64_t> ListSchedule(const ScheduleInput& in) {
  const int64_t n = in.operands.num_nodes;
  BufferUses bu = AnalyzeBuffers(in);

  // Distinct predecessors (operands and ordering edges) and their reverse.
  std::vector<int64_t> pending(n, 0);
  std::vector<int64_t> succ_offsets(n + 1, 0);
  std::vector<int64_t> preds;
  std::vector<int64_t> pred_offsets(n + 1, 0);
  {
    std::vector<int64_t> stamp(n, -1);
    for (int64_t node = 0; node < n; ++node) {
      auto add = [&](int64_t p) {
        if (stamp[p] != node && p != node) {
          stamp[p] = node;
          preds.push_back(p);
        }
      };
      for (int64_t i = in.operands.operand_begin(node); i < in.operands.operand_end(node); ++i) {
        add(in.operands.operand_indices[i]);
      }
      if (in.ordering.num_nodes != 0) {
        for (int64_t i = in.ordering.operand_begin(node); i < in.ordering.operand_end(node); ++i) {
          add(in.ordering.operand_indices[i]);
        }
      }
      pred_offsets[node + 1] = static_cast<int64_t>(preds.size());
      pending[node] = pred_offsets[node + 1] - pred_offsets[node];
    }
  }
  std::vector<int64_t> succs(preds.size());
  {
    std::vector<int64_t> count(n, 0);
    for (int64_t p : preds) ++count[p];
    for (int64_t i = 0; i < n; ++i) succ_offsets[i + 1] = succ_offsets[i] + count[i];
    std::vector<int64_t> fill(succ_offsets.begin(), succ_offsets.end() - 1);
    for (int64_t node = 0; node < n; ++node) {
      for (int64_t i = pred_offsets[node]; i < pred_offsets[node + 1]; ++i) {
        succs[fill[preds[i]]++] = node;
      }
    }
  }

  // remaining[b]: unscheduled users of buffer b; freed[v]: bytes v frees if
  // scheduled now (the freeable buffers whose only unscheduled user is v).
  std::vector<int64_t> remaining(n);
  std::vector<int64_t> freed(n, 0);
  for (int64_t b = 0; b < n; ++b) {
    remaining[b] = bu.user_offsets[b + 1] - bu.user_offsets[b];
    if (remaining[b] == 1 && bu.freeable[b]) freed[bu.users[bu.user_offsets[b]]] += in.bytes_defined[b];
  }

  // Ready nodes ordered best first: largest net bytes freed, then lowest id.
  using Key = std::pair<int64_t, int64_t>;  // (-(freed - defined), node)
  std::set<Key> ready;
  std::vector<int64_t> key(n, 0);
  std::vector<uint8_t> in_ready(n, 0), scheduled(n, 0);
  auto push = [&](int64_t node) {
    key[node] = -(freed[node] - Defined(in, node));
    ready.insert({key[node], node});
    in_ready[node] = 1;
  };
  for (int64_t node = 0; node < n; ++node) {
    if (pending[node] == 0) push(node);
  }

  std::vector<int64_t> sequence;
  sequence.reserve(n);
  while (!ready.empty()) {
    const int64_t node = ready.begin()->second;
    ready.erase(ready.begin());
    in_ready[node] = 0;
    scheduled[node] = 1;
    sequence.push_back(node);
    for (int64_t i = bu.use_offsets[node]; i < bu.use_offsets[node + 1]; ++i) {
      const int64_t b = bu.uses[i];
      if (--remaining[b] != 1 || !bu.freeable[b]) continue;
      for (int64_t j = bu.user_offsets[b]; j < bu.user_offsets[b + 1]; ++j) {
        const int64_t last = bu.users[j];
        if (scheduled[last]) continue;
        freed[last] += in.bytes_defined[b];
        if (in_ready[last]) {
          ready.erase({key[last], last});
          push(last);
        }
        break;
      }
    }
    for (int64_t i = succ_offsets[node]; i < succ_offsets[node + 1]; ++i) {
      const int64_t s = succs[i];
      if (--pending[s] == 0) push(s);
    }
  }
  // Only a cycle leaves nodes unscheduled; append them so the result stays a
  // permutation (callers reject cyclic graphs first).
  if (static_cast<int64_t>(sequence.size()) < n) {
    for (int64_t node = 0; node < n; ++node) {
      if (!scheduled[node]) sequence.push_back(node);
    }
  }
  return sequence;
}

int64_t SequencePeakMemory(const ScheduleInput& in, const int64_t* sequence, size_t length) {
  const int64_t n = in.operands.num_nodes;
  BufferUses bu = AnalyzeBuffers(in);
  std::vector<int64_t> remaining(n);
  for (int64_t b = 0; b < n; ++b) remaining[b] = bu.user_offsets[b + 1] - bu.user_offsets[b];
  int64_t live = 0, peak = 0;
  for (size_t k = 0; k < length; ++k) {
    const int64_t node = sequence[k];
    live += Defined(in, node);
    peak = std::max(peak, live);
    for (int64_t i = bu.use_offsets[node]; i < bu.use_offsets[node + 1]; ++i) {
      const int64_t b = bu.uses[i];
      if (--remaining[b] == 0 && bu.freeable[b]) live -= in.bytes_defined[b];
    }
    if (remaining[node] == 0 && bu.freeable[node]) live -= in.bytes_defined[node];  // dead value
  }
  return peak;
}

}  // namespace xla_core
