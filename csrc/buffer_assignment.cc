#include "csrc/buffer_assignment.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace xla_core {
namespace {

int64_t KindRank(int64_t kind) {
  switch (kind) {
    case kParameterBuffer: return 3;
    case kConstantBuffer: return 2;
    case kOutputBuffer: return 1;
    default: return 0;
  }
}

int64_t AlignUp(int64_t value, int64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

// Slots sorted by start; a max segment tree over their ends, -1 while a slot
// is not placed yet. Reports the placed slots among the first `prefix`
// (start <= query end) whose end >= query start.
class PlacedSlots {
 public:
  explicit PlacedSlots(size_t n) {
    size_ = 1;
    while (size_ < n) size_ <<= 1;
    tree_.assign(2 * size_, -1);
  }
  void Place(size_t position, int64_t end) {
    size_t i = position + size_;
    tree_[i] = end;
    for (i >>= 1; i >= 1; i >>= 1) tree_[i] = std::max(tree_[2 * i], tree_[2 * i + 1]);
  }
  template <typename F>
  void Query(size_t prefix, int64_t start, F&& found) const {
    if (prefix == 0) return;
    Visit(1, 0, size_, prefix, start, found);
  }

 private:
  template <typename F>
  void Visit(size_t node, size_t lo, size_t hi, size_t prefix, int64_t start, F& found) const {
    if (lo >= prefix || tree_[node] < start) return;
    if (node >= size_) {
      found(lo);
      return;
    }
    const size_t mid = (lo + hi) / 2;
    Visit(2 * node, lo, mid, prefix, start, found);
    Visit(2 * node + 1, mid, hi, prefix, start, found);
  }
  size_t size_ = 1;
  std::vector<int64_t> tree_;
};

}  // namespace

std::string ValidateBufferAssignmentInput(const BufferAssignmentInput& in) {
  for (size_t i = 0; i < in.num_buffers; ++i) {
    const std::string at = "buffer " + std::to_string(i) + ": ";
    if (in.sizes[i] < 0) return at + "size " + std::to_string(in.sizes[i]) + " is negative";
    if (in.alignments[i] < 1) return at + "alignment " + std::to_string(in.alignments[i]) + " is below 1";
    if (in.starts[i] > in.ends[i]) {
      return at + "live range [" + std::to_string(in.starts[i]) + ", " + std::to_string(in.ends[i]) +
             "] ends before it starts";
    }
    if (in.kinds[i] < kTempBuffer || in.kinds[i] > kOutputBuffer) {
      return at + "unknown kind " + std::to_string(in.kinds[i]);
    }
    if (in.colocations[i] < -1) return at + "colocation id " + std::to_string(in.colocations[i]) + " is below -1";
  }
  return std::string();
}

BufferAssignmentResult AssignBuffers(const BufferAssignmentInput& in) {
  BufferAssignmentResult r;
  const size_t n = in.num_buffers;
  r.slot.resize(n);
  std::vector<int64_t> slot_alignment;
  {
    std::unordered_map<int64_t, int64_t> slot_of_set;
    for (size_t i = 0; i < n; ++i) {
      int64_t s;
      auto it = in.colocations[i] >= 0 ? slot_of_set.find(in.colocations[i]) : slot_of_set.end();
      if (it != slot_of_set.end()) {
        s = it->second;
        r.slot_size[s] = std::max(r.slot_size[s], in.sizes[i]);
        slot_alignment[s] = std::max(slot_alignment[s], in.alignments[i]);
        r.slot_start[s] = std::min(r.slot_start[s], in.starts[i]);
        r.slot_end[s] = std::max(r.slot_end[s], in.ends[i]);
        if (KindRank(in.kinds[i]) > KindRank(r.slot_kind[s])) r.slot_kind[s] = in.kinds[i];
      } else {
        s = static_cast<int64_t>(r.slot_size.size());
        if (in.colocations[i] >= 0) slot_of_set.emplace(in.colocations[i], s);
        r.slot_size.push_back(in.sizes[i]);
        slot_alignment.push_back(in.alignments[i]);
        r.slot_start.push_back(in.starts[i]);
        r.slot_end.push_back(in.ends[i]);
        r.slot_kind.push_back(in.kinds[i]);
      }
      r.slot[i] = s;
    }
  }
  const size_t num_slots = r.slot_size.size();
  r.slot_allocation.assign(num_slots, -1);
  r.slot_offset.assign(num_slots, 0);

  std::vector<int64_t> temps;
  for (size_t s = 0; s < num_slots; ++s) {
    if (r.slot_kind[s] == kTempBuffer) {
      temps.push_back(static_cast<int64_t>(s));
    } else {
      r.slot_allocation[s] = static_cast<int64_t>(r.allocation_size.size());
      r.allocation_size.push_back(r.slot_size[s]);
      r.allocation_kind.push_back(r.slot_kind[s]);
    }
  }

  if (!temps.empty()) {
    r.arena_allocation = static_cast<int64_t>(r.allocation_size.size());
    // Positions in start order, for the interval queries.
    std::vector<int64_t> by_start = temps;
    std::sort(by_start.begin(), by_start.end(), [&](int64_t a, int64_t b) {
      return std::make_pair(r.slot_start[a], a) < std::make_pair(r.slot_start[b], b);
    });
    std::vector<int64_t> sorted_starts(by_start.size());
    std::unordered_map<int64_t, size_t> position;
    position.reserve(by_start.size());
    for (size_t k = 0; k < by_start.size(); ++k) {
      sorted_starts[k] = r.slot_start[by_start[k]];
      position[by_start[k]] = k;
    }
    std::vector<int64_t> order = temps;
    std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      if (r.slot_size[a] != r.slot_size[b]) return r.slot_size[a] > r.slot_size[b];
      if (r.slot_start[a] != r.slot_start[b]) return r.slot_start[a] < r.slot_start[b];
      return a < b;
    });
    PlacedSlots placed(by_start.size());
    std::vector<std::pair<int64_t, int64_t>> chunks;  // (offset, end offset)
    for (int64_t s : order) {
      const int64_t size = r.slot_size[s];
      const int64_t alignment = slot_alignment[s];
      chunks.clear();
      const size_t prefix = static_cast<size_t>(
          std::upper_bound(sorted_starts.begin(), sorted_starts.end(), r.slot_end[s]) -
          sorted_starts.begin());
      placed.Query(prefix, r.slot_start[s], [&](size_t k) {
        const int64_t other = by_start[k];
        chunks.emplace_back(r.slot_offset[other], r.slot_offset[other] + r.slot_size[other]);
      });
      std::sort(chunks.begin(), chunks.end());
      int64_t best = -1;
      int64_t best_gap = std::numeric_limits<int64_t>::max();
      int64_t top = 0;
      for (const auto& chunk : chunks) {
        const int64_t candidate = AlignUp(top, alignment);
        if (chunk.first > top && candidate + size <= chunk.first) {
          const int64_t gap = chunk.first - top;
          if (in.fit == kFirstFit) {
            best = candidate;
            break;
          }
          if (gap < best_gap) {
            best_gap = gap;
            best = candidate;
          }
        }
        top = std::max(top, chunk.second);
      }
      if (best < 0) best = AlignUp(top, alignment);
      r.slot_offset[s] = best;
      r.slot_allocation[s] = r.arena_allocation;
      r.arena_size = std::max(r.arena_size, best + size);
      placed.Place(position[s], r.slot_end[s]);
    }
    r.allocation_size.push_back(r.arena_size);
    r.allocation_kind.push_back(kTempBuffer);

    std::vector<std::pair<int64_t, int64_t>> events;  // (position, delta)
    events.reserve(2 * temps.size());
    for (int64_t s : temps) {
      events.emplace_back(r.slot_start[s], r.slot_size[s]);
      events.emplace_back(r.slot_end[s] + 1, -r.slot_size[s]);
    }
    std::sort(events.begin(), events.end());
    int64_t live = 0;
    for (size_t k = 0; k < events.size(); ++k) {
      live += events[k].second;
      if (k + 1 == events.size() || events[k + 1].first != events[k].first) {
        r.peak_temp_bytes = std::max(r.peak_temp_bytes, live);
      }
    }
  }

  r.allocation.resize(n);
  r.offset.resize(n);
  for (size_t i = 0; i < n; ++i) {
    r.allocation[i] = r.slot_allocation[r.slot[i]];
    r.offset[i] = r.slot_offset[r.slot[i]];
  }
  return r;
}

}  // namespace xla_core
