#include "csrc/buffer_assignment.h"

#include <algorithm>
#include <iterator>
#include <limits>
#include <map>
#include <numeric>
#include <set>
#include <string>
#include <tuple>
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


// Work (interfering slots visited) that the global heuristic may spend per
// slot and per doubling of the slot count before it gives up.
constexpr int64_t kGlobalWorkPerSlotLog = 16;

// The global decreasing-size heuristic over the temp slots `temps`; writes
// offsets[k] for temps[k] and returns the arena size, or -1 once the
// interfering slots it visited exceed `budget`.
int64_t PackGlobalDecreasingSize(const BufferAssignmentResult& r,
                                 const std::vector<int64_t>& slot_alignment,
                                 const std::vector<int64_t>& temps, FitPolicy fit, int64_t budget,
                                 std::vector<int64_t>* offsets_out) {
  const size_t m = temps.size();
  // Positions in start order, for the interval queries.
  std::vector<size_t> by_start(m);
  std::iota(by_start.begin(), by_start.end(), size_t{0});
  std::sort(by_start.begin(), by_start.end(), [&](size_t a, size_t b) {
    return std::make_pair(r.slot_start[temps[a]], temps[a]) <
           std::make_pair(r.slot_start[temps[b]], temps[b]);
  });
  std::vector<int64_t> sorted_starts(m);
  std::vector<size_t> position(m);
  for (size_t k = 0; k < m; ++k) {
    sorted_starts[k] = r.slot_start[temps[by_start[k]]];
    position[by_start[k]] = k;
  }
  std::vector<size_t> order(m);
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const int64_t sa = temps[a], sb = temps[b];
    if (r.slot_size[sa] != r.slot_size[sb]) return r.slot_size[sa] > r.slot_size[sb];
    if (r.slot_start[sa] != r.slot_start[sb]) return r.slot_start[sa] < r.slot_start[sb];
    return sa < sb;
  });
  std::vector<int64_t>& offsets = *offsets_out;
  offsets.assign(m, 0);
  PlacedSlots placed(m);
  std::vector<std::pair<int64_t, int64_t>> chunks;  // (offset, end offset)
  int64_t arena = 0;
  int64_t work = 0;
  for (size_t k : order) {
    const int64_t s = temps[k];
    const int64_t size = r.slot_size[s];
    const int64_t alignment = slot_alignment[s];
    chunks.clear();
    const size_t prefix = static_cast<size_t>(
        std::upper_bound(sorted_starts.begin(), sorted_starts.end(), r.slot_end[s]) -
        sorted_starts.begin());
    placed.Query(prefix, r.slot_start[s], [&](size_t p) {
      const size_t other = by_start[p];
      chunks.emplace_back(offsets[other], offsets[other] + r.slot_size[temps[other]]);
    });
    work += static_cast<int64_t>(chunks.size()) + 1;
    if (work > budget) return -1;
    std::sort(chunks.begin(), chunks.end());
    int64_t best = -1;
    int64_t best_gap = std::numeric_limits<int64_t>::max();
    int64_t top = 0;
    for (const auto& chunk : chunks) {
      const int64_t candidate = AlignUp(top, alignment);
      if (chunk.first > top && candidate + size <= chunk.first) {
        const int64_t gap = chunk.first - top;
        if (fit == kFirstFit) {
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
    offsets[k] = best;
    arena = std::max(arena, best + size);
    placed.Place(position[k], r.slot_end[s]);
  }
  return arena;
}

// Free byte ranges of the arena below its current top, coalesced: by offset
// (for merging neighbours) and by (size, offset) (for best fit).
class FreeChunks {
 public:
  // An aligned offset for `size` bytes taken from a free chunk, or -1. Best
  // fit: the smallest chunks of at least `size` bytes, trying a bounded
  // number of them (alignment may make one too small); first fit: the lowest
  // chunks by offset, also bounded.
  int64_t Take(int64_t size, int64_t alignment, FitPolicy fit) {
    constexpr int kTries = 16;
    int tries = 0;
    if (fit == kBestFit) {
      for (auto it = by_size_.lower_bound({size, std::numeric_limits<int64_t>::min()});
           it != by_size_.end() && tries < kTries; ++it, ++tries) {
        const int64_t offset = AlignUp(it->second, alignment);
        if (offset + size <= it->second + it->first) return Carve(it->second, it->first, offset, size);
      }
    } else {
      for (auto it = by_offset_.begin(); it != by_offset_.end() && tries < kTries; ++it, ++tries) {
        const int64_t offset = AlignUp(it->first, alignment);
        if (offset + size <= it->first + it->second) return Carve(it->first, it->second, offset, size);
      }
    }
    return -1;
  }
  // The free chunk that ends at `top` (offset, size), removed; or {top, 0}.
  std::pair<int64_t, int64_t> TakeLast(int64_t top) {
    if (by_offset_.empty()) return {top, 0};
    auto last = std::prev(by_offset_.end());
    if (last->first + last->second != top) return {top, 0};
    const std::pair<int64_t, int64_t> chunk = *last;
    Erase(chunk.first, chunk.second);
    return chunk;
  }
  void Free(int64_t offset, int64_t size) {
    if (size <= 0) return;
    auto next = by_offset_.lower_bound(offset);
    if (next != by_offset_.end() && next->first == offset + size) {
      const int64_t next_size = next->second;
      Erase(next->first, next_size);
      size += next_size;
    }
    next = by_offset_.lower_bound(offset);
    if (next != by_offset_.begin()) {
      auto prev = std::prev(next);
      if (prev->first + prev->second == offset) {
        const int64_t prev_offset = prev->first;
        size += prev->second;
        Erase(prev_offset, prev->second);
        offset = prev_offset;
      }
    }
    by_offset_.emplace(offset, size);
    by_size_.emplace(size, offset);
  }

 private:
  int64_t Carve(int64_t chunk_offset, int64_t chunk_size, int64_t offset, int64_t size) {
    Erase(chunk_offset, chunk_size);
    Free(chunk_offset, offset - chunk_offset);
    Free(offset + size, chunk_offset + chunk_size - offset - size);
    return offset;
  }
  void Erase(int64_t offset, int64_t size) {
    by_offset_.erase(offset);
    by_size_.erase({size, offset});
  }
  std::map<int64_t, int64_t> by_offset_;          // offset -> size
  std::set<std::pair<int64_t, int64_t>> by_size_;  // (size, offset)
};

// A heap simulation in schedule order (XLA's HeapSimulator with a best-fit
// heap): at each position the slots whose range ended are freed, then the
// slots starting there are placed, largest first, in a free chunk or at the
// top of the arena. O(m log m); writes offsets[k] for temps[k] and returns
// the arena size.
int64_t PackBySweep(const BufferAssignmentResult& r, const std::vector<int64_t>& slot_alignment,
                    const std::vector<int64_t>& temps, FitPolicy fit,
                    std::vector<int64_t>* offsets_out) {
  const size_t m = temps.size();
  // (position, 0 = free / 1 = place, order within a position, temp index)
  std::vector<std::tuple<int64_t, int, int64_t, size_t>> events;
  events.reserve(2 * m);
  for (size_t k = 0; k < m; ++k) {
    const int64_t s = temps[k];
    events.emplace_back(r.slot_start[s], 1, -r.slot_size[s], k);
    events.emplace_back(r.slot_end[s] + 1, 0, 0, k);
  }
  std::sort(events.begin(), events.end());
  std::vector<int64_t>& offsets = *offsets_out;
  offsets.assign(m, 0);
  FreeChunks free_chunks;
  int64_t top = 0;
  for (const auto& event : events) {
    const size_t k = std::get<3>(event);
    const int64_t size = r.slot_size[temps[k]];
    if (size == 0) continue;  // offset 0, overlaps nothing
    if (std::get<1>(event) == 0) {
      free_chunks.Free(offsets[k], size);
      continue;
    }
    const int64_t alignment = slot_alignment[temps[k]];
    int64_t offset = free_chunks.Take(size, alignment, fit);
    if (offset < 0) {
      // Grow the arena, starting inside the free chunk at its top if any.
      const std::pair<int64_t, int64_t> last = free_chunks.TakeLast(top);
      offset = AlignUp(last.first, alignment);
      free_chunks.Free(last.first, offset - last.first);
      if (offset + size < top) {
        free_chunks.Free(offset + size, top - offset - size);  // a chunk Take passed over
      } else {
        top = offset + size;
      }
    }
    offsets[k] = offset;
  }
  return top;
}
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
    const size_t m = temps.size();
    size_t log_m = 1;
    while ((size_t{1} << log_m) < m) ++log_m;
    const int64_t budget =
        in.max_global_work >= 0 ? in.max_global_work
                                : kGlobalWorkPerSlotLog * static_cast<int64_t>(m * (log_m + 1)) + 4096;
    std::vector<int64_t> global_offsets, sweep_offsets;
    const int64_t sweep_arena = PackBySweep(r, slot_alignment, temps, in.fit, &sweep_offsets);
    const int64_t global_arena =
        PackGlobalDecreasingSize(r, slot_alignment, temps, in.fit, budget, &global_offsets);
    const bool use_global = global_arena >= 0 && global_arena <= sweep_arena;
    const std::vector<int64_t>& offsets = use_global ? global_offsets : sweep_offsets;
    r.packing = use_global ? kPackedGlobalDecreasingSize : kPackedBySweep;
    r.arena_size = use_global ? global_arena : sweep_arena;
    for (size_t k = 0; k < m; ++k) {
      r.slot_offset[temps[k]] = offsets[k];
      r.slot_allocation[temps[k]] = r.arena_allocation;
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
