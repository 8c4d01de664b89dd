#include "csrc/fusion.h"

#include <algorithm>
#include <numeric>
#include <string>
#include <tuple>
#include <vector>

namespace xla_core {
namespace {

template <typename T>
bool Contains(const std::vector<T>& values, T value) {
  return std::find(values.begin(), values.end(), value) != values.end();
}

// Users of each node (each user once, in increasing node order), as CSR.
struct Users {
  std::vector<int64_t> offsets;
  std::vector<int64_t> indices;

  explicit Users(const OperandGraph& graph) : offsets(graph.num_nodes + 1, 0) {
    const int64_t n = graph.num_nodes;
    std::vector<int64_t> last_user(n, -1);
    for (int64_t u = 0; u < n; ++u) {
      for (int64_t k = graph.operand_begin(u); k < graph.operand_end(u); ++k) {
        const int64_t p = graph.operand_indices[k];
        if (last_user[p] != u) {
          last_user[p] = u;
          ++offsets[p + 1];
        }
      }
    }
    for (int64_t i = 0; i < n; ++i) offsets[i + 1] += offsets[i];
    indices.resize(offsets[n]);
    std::vector<int64_t> fill(offsets.begin(), offsets.end() - 1);
    std::fill(last_user.begin(), last_user.end(), -1);
    for (int64_t u = 0; u < n; ++u) {
      for (int64_t k = graph.operand_begin(u); k < graph.operand_end(u); ++k) {
        const int64_t p = graph.operand_indices[k];
        if (last_user[p] != u) {
          last_user[p] = u;
          indices[fill[p]++] = u;
        }
      }
    }
  }
};

struct Group {
  int64_t root;  // last member in post order
  int8_t kind;
  int64_t key;  // the shape key of the instruction that started the group
  std::vector<int64_t> externals;  // distinct values read from outside the group
  std::vector<int64_t> instances;  // Instance ids of its members (home and copies)
  int64_t cost = 0;                // estimated emitted ops (see fusion.h)
  int64_t chain = 0;               // longest operand chain inside the group
  bool expensive = false;          // has an expensive member
};

// One member of one group: an instruction's home instance or one of its
// copies. `sources` are the indexing sources it is evaluated at: (instance
// id of a member that reads it through a new index, number of index maps)
// or (kOutputIndex, 1) for the group's own output index; sorted by id.
struct Instance {
  int64_t emitted = 1;  // distinct indices it is evaluated at (saturating)
  int64_t height = 1;   // longest chain from it up to the group's output
  int64_t below = 0;    // longest chain from it down into its group (phase 2)
  std::vector<std::pair<int64_t, int64_t>> sources;
};

constexpr int64_t kOutputIndex = -1;
constexpr int64_t kSaturated = int64_t{1} << 40;

int64_t SaturatingAdd(int64_t a, int64_t b) { return std::min(a + b, kSaturated); }
int64_t SaturatingMul(int64_t a, int64_t b) {
  if (a == 0 || b == 0) return 0;
  return a > kSaturated / b ? kSaturated : std::min(a * b, kSaturated);
}

class FusionPlanner {
 public:
  FusionPlanner(const FusionInput& input, const FusionOptions& options)
      : in_(input),
        opts_(options),
        g_(input.graph),
        n_(input.graph.num_nodes),
        users_(input.graph),
        home_(n_, -1),
        copies_(n_),
        unfused_(n_, 0),
        home_instance_(n_, -1),
        copy_instances_(n_) {}

  FusionResult Run() {
    ProducerConsumer();
    if (opts_.multi_output) Siblings();
    return Finish();
  }

 private:
  bool InGroup(int64_t q, int64_t group) const {
    return home_[q] == group || Contains(copies_[q], group);
  }

  // Distinct operands of p that `group` does not read yet.
  int64_t NewExternals(int64_t group, int64_t p) {
    int64_t added = 0;
    ++stamp_;
    for (int64_t k = g_.operand_begin(p); k < g_.operand_end(p); ++k) {
      const int64_t q = g_.operand_indices[k];
      if (seen_[q] == stamp_) continue;
      seen_[q] = stamp_;
      if (!Contains(groups_[group].externals, q)) ++added;
    }
    return added;
  }

  bool CanAdd(int64_t group, int64_t p) {
    const auto& ext = groups_[group].externals;
    const int64_t before = static_cast<int64_t>(ext.size());
    const int64_t after = before - (Contains(ext, p) ? 1 : 0) + NewExternals(group, p);
    return after <= opts_.max_operands || after <= before;
  }

  void Add(int64_t group, int64_t p) {
    auto& ext = groups_[group].externals;
    ext.erase(std::remove(ext.begin(), ext.end(), p), ext.end());
    for (int64_t k = g_.operand_begin(p); k < g_.operand_end(p); ++k) {
      const int64_t q = g_.operand_indices[k];
      if (!Contains(ext, q)) ext.push_back(q);
    }
  }

  int64_t NewGroup(int64_t p, int8_t kind) {
    const int64_t id = static_cast<int64_t>(groups_.size());
    groups_.push_back(Group{p, kind, in_.shape_key[p], {}});
    Add(id, p);
    Instance root;
    root.sources.emplace_back(kOutputIndex, 1);
    Place(id, p, std::move(root), /*home=*/true);
    return id;
  }

  bool ReadsOwnIndex(int64_t u) const {
    return in_.reads_own_index == nullptr || in_.reads_own_index[u] != 0;
  }

  // Scalar constants emit no code per index and end every chain: they are
  // neither counted in a group's cost nor held to the depth bound.
  int64_t Weight(int64_t p) const { return in_.kind[p] == kFusionScalarConst ? 0 : 1; }

  int64_t InstanceIn(int64_t q, int64_t group) const {
    if (home_[q] == group) return home_instance_[q];
    for (size_t k = 0; k < copies_[q].size(); ++k) {
      if (copies_[q][k] == group) return copy_instances_[q][k];
    }
    return -1;
  }

  // The instance p would have in `group`: evaluated at the indices of its
  // readers there that read it at their own index, and at new indices for
  // each reader that computes one (once per index map, i.e. per operand
  // slot). The CPU emitter memoizes per (instruction, index), so the union
  // counts a shared source once.
  Instance Plan(int64_t group, int64_t p) {
    Instance result;
    result.height = 0;
    std::vector<std::pair<int64_t, int64_t>>& sources = result.sources;
    for (int64_t k = users_.offsets[p]; k < users_.offsets[p + 1]; ++k) {
      const int64_t u = users_.indices[k];
      const int64_t iu = InstanceIn(u, group);
      if (iu < 0) continue;
      const Instance& reader = instances_[iu];
      result.height = std::max(result.height, reader.height);
      if (ReadsOwnIndex(u)) {
        sources.insert(sources.end(), reader.sources.begin(), reader.sources.end());
      } else {
        int64_t maps = 0;
        for (int64_t j = g_.operand_begin(u); j < g_.operand_end(u); ++j) {
          maps += g_.operand_indices[j] == p ? 1 : 0;
        }
        sources.emplace_back(iu, maps);
      }
    }
    ++result.height;
    result.emitted = Emitted(&sources);
    return result;
  }

  // Sorts and dedupes `sources` (keeping the largest map count per source)
  // and returns the number of indices they stand for.
  int64_t Emitted(std::vector<std::pair<int64_t, int64_t>>* sources) const {
    std::sort(sources->begin(), sources->end());
    size_t out = 0;
    for (size_t k = 0; k < sources->size(); ++k) {
      if (out > 0 && (*sources)[out - 1].first == (*sources)[k].first) {
        (*sources)[out - 1].second = (*sources)[k].second;
      } else {
        (*sources)[out++] = (*sources)[k];
      }
    }
    sources->resize(out);
    int64_t emitted = 0;
    for (const auto& [source, maps] : *sources) {
      const int64_t each = source == kOutputIndex ? 1 : instances_[source].emitted;
      emitted = SaturatingAdd(emitted, SaturatingMul(each, maps));
    }
    return emitted;
  }

  // The code-size and depth bounds: p may enter `group` as `instance`.
  bool WithinBounds(int64_t group, int64_t p, const Instance& instance) const {
    const Group& g = groups_[group];
    if (Weight(p) == 0) return true;
    if (instance.height > opts_.max_depth) return false;
    if (in_.expensive[p] && instance.emitted > 1) return false;
    return SaturatingAdd(g.cost, instance.emitted) <= opts_.max_emitted_ops;
  }

  void Place(int64_t group, int64_t p, Instance instance, bool home) {
    Group& g = groups_[group];
    g.cost = SaturatingAdd(g.cost, SaturatingMul(Weight(p), instance.emitted));
    if (Weight(p) > 0) g.chain = std::max(g.chain, instance.height);
    if (in_.expensive[p]) g.expensive = true;
    const int64_t id = static_cast<int64_t>(instances_.size());
    instances_.push_back(std::move(instance));
    g.instances.push_back(id);
    instance_node_.push_back(p);
    instance_group_.push_back(group);
    if (home) {
      home_[p] = group;
      home_instance_[p] = id;
    } else {
      copies_[p].push_back(group);
      copy_instances_[p].push_back(id);
    }
  }

  void ProducerConsumer() {
    seen_.assign(n_, 0);

    std::vector<int64_t> user_groups;
    for (int64_t p = n_ - 1; p >= 0; --p) {
      const int8_t kind = in_.kind[p];
      if (kind == kFusionUnfusible) {
        unfused_[p] = 1;
        continue;
      }
      if (kind == kFusionReduce) {
        NewGroup(p, kInputFusion);
        continue;
      }
      bool unfused_user = in_.live_out[p] != 0;
      user_groups.clear();
      for (int64_t k = users_.offsets[p]; k < users_.offsets[p + 1]; ++k) {
        const int64_t u = users_.indices[k];
        if (unfused_[u]) unfused_user = true;
        if (home_[u] >= 0 && !Contains(user_groups, home_[u])) user_groups.push_back(home_[u]);
        for (int64_t c : copies_[u]) {
          if (!Contains(user_groups, c)) user_groups.push_back(c);
        }
      }
      // p joins its one user group; also where it has unfused users too
      // when that group is a reduce of p alone (a bias gradient's reduce of
      // the gradient the dots read) and multi-output fusion is on: p
      // becomes the reduce fusion's second output instead of a loop fusion
      // of its own beside a copy of it in the reduction, which computed it
      // twice.
      if (user_groups.size() == 1 &&
          (!unfused_user || (opts_.multi_output && ReducesOnly(user_groups[0], p))) &&
          CanAdd(user_groups[0], p)) {
        Instance instance = Plan(user_groups[0], p);
        if (WithinBounds(user_groups[0], p, instance)) {
          Add(user_groups[0], p);
          Place(user_groups[0], p, std::move(instance), /*home=*/true);
          continue;
        }
      }
      const bool duplicable =
          kind == kFusionScalarConst ||
          (!in_.expensive[p] && static_cast<int64_t>(user_groups.size()) <= opts_.max_duplicates);
      if (duplicable && !user_groups.empty()) {
        std::sort(user_groups.begin(), user_groups.end());
        for (int64_t group : user_groups) {
          Instance instance;
          if (CanAdd(group, p) && WithinBounds(group, p, instance = Plan(group, p))) {
            Add(group, p);
            Place(group, p, std::move(instance), /*home=*/false);
          } else {
            unfused_user = true;
          }
        }
        if (unfused_user) NewGroup(p, kLoopFusion);
        continue;
      }
      NewGroup(p, kLoopFusion);
    }
  }

  // Whether `group` is a reduce whose operands are p and scalar constants,
  // and nothing else but scalar constants: then nothing an unfused user of
  // p computes can reach the group (its only member downstream of p is the
  // reduce, which reads nothing else), so p may join it as an output.
  bool ReducesOnly(int64_t group, int64_t p) const {
    const Group& g = groups_[group];
    if (g.kind != kInputFusion || in_.kind[g.root] != kFusionReduce) return false;
    for (int64_t k = g_.operand_begin(g.root); k < g_.operand_end(g.root); ++k) {
      const int64_t q = g_.operand_indices[k];
      if (q != p && in_.kind[q] != kFusionScalarConst) return false;
    }
    for (int64_t id : g.instances) {
      const int64_t q = instance_node_[id];
      if (q != g.root && in_.kind[q] != kFusionScalarConst) return false;
    }
    return true;
  }

  int64_t Find(int64_t group) {
    while (parent_[group] != group) {
      parent_[group] = parent_[parent_[group]];
      group = parent_[group];
    }
    return group;
  }

  // Whether q has a copy in (merged) group `group`: its readers there read
  // the copy.
  bool HasCopyIn(int64_t q, int64_t group) {
    for (int64_t c : copies_[q]) {
      if (Find(c) == group) return true;
    }
    return false;
  }

  void AppendInstances(int64_t target, int64_t other) {
    auto& to = groups_[target].instances;
    auto& from = groups_[other].instances;
    to.insert(to.end(), from.begin(), from.end());
    from.clear();
    from.shrink_to_fit();
  }

  void Siblings() {
    const int64_t num_groups = static_cast<int64_t>(groups_.size());
    depth_.assign(num_groups, 0);
    unfused_depth_.assign(n_, 0);
    // A group's depth is one more than the deepest node it reads, an
    // unfused instruction's likewise (0 for the rest). Not one pass in post
    // order: with each group at its root, an unfused instruction may read a
    // group whose root comes after it (a value that became a reduce's
    // second output in phase 1, read by its unfused users, a dot or a
    // reshape, before the reduce). So each depth is computed on first
    // request, depth first with an explicit stack: linear in the graph.
    // Nodes: groups [0, num_groups), then instructions.
    auto node_of = [&](int64_t q) { return home_[q] >= 0 ? home_[q] : num_groups + q; };
    auto for_each_read = [&](int64_t node, auto&& fn) {
      if (node < num_groups) {
        for (int64_t q : groups_[node].externals) fn(node_of(q));
      } else if (unfused_[node - num_groups]) {
        const int64_t i = node - num_groups;
        for (int64_t k = g_.operand_begin(i); k < g_.operand_end(i); ++k) {
          fn(node_of(g_.operand_indices[k]));
        }
      }
    };
    auto depth_of = [&](int64_t node) -> int64_t& {
      return node < num_groups ? depth_[node] : unfused_depth_[node - num_groups];
    };
    std::vector<char> state(static_cast<size_t>(num_groups + n_), 0);  // 1 open, 2 done
    std::vector<int64_t> stack;
    for (int64_t start = 0; start < num_groups + n_; ++start) {
      if (state[start] != 0) continue;
      stack.push_back(start);
      while (!stack.empty()) {
        const int64_t node = stack.back();
        if (state[node] == 0) {  // open it: its reads first
          state[node] = 1;
          for_each_read(node, [&](int64_t r) {
            if (state[r] == 0) stack.push_back(r);
          });
          continue;
        }
        stack.pop_back();
        if (state[node] == 2) continue;  // pushed twice, done the first time
        int64_t d = 0;
        for_each_read(node, [&](int64_t r) { d = std::max(d, depth_of(r) + 1); });
        depth_of(node) = d;
        state[node] = 2;
      }
    }

    // below: instances in post order of their nodes, so that operands come
    // first.
    std::vector<int64_t> by_node(instances_.size());
    std::iota(by_node.begin(), by_node.end(), 0);
    std::sort(by_node.begin(), by_node.end(), [&](int64_t a, int64_t b) {
      return instance_node_[a] < instance_node_[b];
    });
    for (int64_t i : by_node) {
      const int64_t u = instance_node_[i];
      int64_t below = 0;
      for (int64_t k = g_.operand_begin(u); k < g_.operand_end(u); ++k) {
        const int64_t operand = InstanceIn(g_.operand_indices[k], instance_group_[i]);
        if (operand >= 0) below = std::max(below, instances_[operand].below);
      }
      instances_[i].below = below + Weight(u);
    }

    parent_.resize(num_groups);
    std::iota(parent_.begin(), parent_.end(), 0);
    ProducerIntoConsumer();

    std::vector<std::vector<int64_t>> readers(n_);
    for (int64_t gid = 0; gid < num_groups; ++gid) {
      if (Find(gid) != gid) continue;
      for (int64_t q : groups_[gid].externals) {
        if (in_.bytes[q] >= opts_.sibling_min_bytes) readers[q].push_back(gid);
      }
    }
    auto key = [&](int64_t gid) {
      return std::make_tuple(depth_[gid], groups_[gid].kind, groups_[gid].key);
    };
    std::vector<int64_t> merged;
    for (int64_t x = 0; x < n_; ++x) {
      auto& rs = readers[x];
      if (rs.size() < 2) continue;
      for (auto& r : rs) r = Find(r);
      std::sort(rs.begin(), rs.end(), [&](int64_t a, int64_t b) {
        return std::make_tuple(key(a), a) < std::make_tuple(key(b), b);
      });
      rs.erase(std::unique(rs.begin(), rs.end()), rs.end());
      for (size_t start = 0; start < rs.size();) {
        size_t end = start + 1;
        while (end < rs.size() && key(rs[end]) == key(rs[start])) ++end;
        int64_t target = rs[start];
        for (size_t k = start + 1; k < end; ++k) {
          const int64_t other = rs[k];
          // Equal depth: neither reads the other, so the union of their
          // external operands is the merged group's.
          merged = groups_[target].externals;
          for (int64_t q : groups_[other].externals) {
            if (!Contains(merged, q)) merged.push_back(q);
          }
          if (static_cast<int64_t>(merged.size()) > opts_.max_operands) continue;
          // Each keeps its own indices: costs add, depths do not grow.
          if (SaturatingAdd(groups_[target].cost, groups_[other].cost) > opts_.max_emitted_ops) {
            continue;
          }
          groups_[target].externals.swap(merged);
          groups_[target].root = std::max(groups_[target].root, groups_[other].root);
          groups_[target].cost += groups_[other].cost;
          groups_[target].chain = std::max(groups_[target].chain, groups_[other].chain);
          groups_[target].expensive |= groups_[other].expensive;
          AppendInstances(target, other);
          parent_[other] = target;
        }
        start = end;
      }
    }
  }

  // Multi-output producer-consumer fusion: a kLoop group P whose value is
  // read by several nodes merges into the reading group C of smallest depth
  // when every other reader of P is deeper than C. Then no path can lead from
  // P to C through another node (it would make C deeper than that node), and
  // the merged group, at C's depth, keeps every edge going strictly deeper.
  // P's values read elsewhere become extra outputs of the merged fusion.
  void ProducerIntoConsumer() {
    const int64_t num_groups = static_cast<int64_t>(groups_.size());
    // Readers of each group: group ids, or num_groups + i for unfused i.
    std::vector<std::vector<int64_t>> readers(num_groups);
    for (int64_t gid = 0; gid < num_groups; ++gid) {
      for (int64_t q : groups_[gid].externals) {
        if (home_[q] >= 0) readers[home_[q]].push_back(gid);
      }
    }
    for (int64_t u = 0; u < n_; ++u) {
      if (!unfused_[u]) continue;
      for (int64_t k = g_.operand_begin(u); k < g_.operand_end(u); ++k) {
        const int64_t q = g_.operand_indices[k];
        if (home_[q] >= 0) readers[home_[q]].push_back(num_groups + u);
      }
    }
    auto depth_of = [&](int64_t node) {
      return node < num_groups ? depth_[node] : unfused_depth_[node - num_groups];
    };
    std::vector<int64_t> order(num_groups);
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return std::make_pair(depth_[a], a) < std::make_pair(depth_[b], b);
    });
    std::vector<int64_t> merged;
    for (int64_t producer : order) {
      if (Find(producer) != producer || groups_[producer].kind != kLoopFusion) continue;
      auto& rs = readers[producer];
      for (auto& r : rs) r = r < num_groups ? Find(r) : r;
      std::sort(rs.begin(), rs.end());
      rs.erase(std::unique(rs.begin(), rs.end()), rs.end());
      rs.erase(std::remove(rs.begin(), rs.end(), producer), rs.end());
      int64_t consumer = -1;
      for (int64_t r : rs) {
        if (r < num_groups && (consumer < 0 || depth_of(r) < depth_of(consumer))) consumer = r;
      }
      if (consumer < 0) continue;
      bool deeper = true;
      for (int64_t r : rs) {
        if (r != consumer && depth_of(r) <= depth_of(consumer)) deeper = false;
      }
      if (!deeper) continue;
      merged = groups_[producer].externals;
      for (int64_t q : groups_[consumer].externals) {
        if (home_[q] >= 0 && Find(home_[q]) == producer) continue;
        if (!Contains(merged, q)) merged.push_back(q);
      }
      if (static_cast<int64_t>(merged.size()) > opts_.max_operands) continue;
      // P's members are evaluated at P's output index and at the indices
      // C's members read P's outputs at: as in Plan, a reader that reads its
      // own index shares its sources, and a reduce stores P's value as a
      // side output at the index it reads it at (so that index, and sources
      // that are reduces, count as P's output index); any other reader adds
      // new indices. Their chains now continue up through those readers.
      // A new chain enters C once, through an edge from an output O of P to
      // a reader R in C: at most below(O) + height(R) long.
      int64_t reader_height = 0;
      int64_t output_below = 0;
      int64_t chain = std::max(groups_[consumer].chain, groups_[producer].chain);
      sources_.clear();
      for (int64_t i : groups_[consumer].instances) {
        const int64_t u = instance_node_[i];
        int64_t maps = 0;
        for (int64_t k = g_.operand_begin(u); k < g_.operand_end(u); ++k) {
          const int64_t q = g_.operand_indices[k];
          if (home_[q] < 0 || Find(home_[q]) != producer || HasCopyIn(q, consumer)) continue;
          ++maps;
          const int64_t below = instances_[home_instance_[q]].below;
          output_below = std::max(output_below, below);
          chain = std::max(chain, below + instances_[i].height);
        }
        if (maps == 0) continue;
        reader_height = std::max(reader_height, instances_[i].height);
        if (ReadsOwnIndex(u)) {
          sources_.insert(sources_.end(), instances_[i].sources.begin(),
                          instances_[i].sources.end());
        } else if (in_.kind[u] != kFusionReduce) {
          sources_.emplace_back(i, maps);
        }
      }
      // A side output lives at the index its reduce reads: the output index.
      for (auto& [source, maps] : sources_) {
        if (source != kOutputIndex && in_.kind[instance_node_[source]] == kFusionReduce) {
          source = kOutputIndex;
          maps = 1;
        }
      }
      // Indices C evaluates P at, and with P's own output index (its value
      // is stored there when read outside C; counted always, as a bound).
      const int64_t reads = Emitted(&sources_);
      const bool at_output = !sources_.empty() && sources_.front().first == kOutputIndex;
      const int64_t scale = at_output ? reads : SaturatingAdd(reads, 1);
      const int64_t cost =
          SaturatingAdd(groups_[consumer].cost, SaturatingMul(groups_[producer].cost, scale));
      if (cost > opts_.max_emitted_ops ||
          chain > opts_.max_depth ||
          (groups_[producer].expensive && reads > 1)) {
        continue;
      }
      // Upper bounds for later merges: P's members are at most reader_height
      // further from the output, C's at most output_below deeper.
      for (int64_t i : groups_[producer].instances) {
        instances_[i].emitted = SaturatingMul(instances_[i].emitted, scale);
        instances_[i].height += reader_height;
      }
      for (int64_t i : groups_[consumer].instances) instances_[i].below += output_below;
      Group& c = groups_[consumer];
      c.externals.swap(merged);
      c.root = std::max(c.root, groups_[producer].root);
      c.cost = cost;
      c.chain = chain;
      c.expensive |= groups_[producer].expensive;
      AppendInstances(consumer, producer);
      parent_[producer] = consumer;
      for (int64_t r : rs) {
        if (r != consumer) readers[consumer].push_back(r);
      }
    }
  }

  FusionResult Finish() {
    const int64_t num_groups = static_cast<int64_t>(groups_.size());
    if (parent_.empty()) {
      parent_.resize(num_groups);
      std::iota(parent_.begin(), parent_.end(), 0);
    }
    if (depth_.empty()) depth_.assign(num_groups, 0);
    for (int64_t q = 0; q < n_; ++q) {
      if (home_[q] >= 0) home_[q] = Find(home_[q]);
      auto& cs = copies_[q];
      for (auto& c : cs) c = Find(c);
      std::sort(cs.begin(), cs.end());
      cs.erase(std::unique(cs.begin(), cs.end()), cs.end());
      cs.erase(std::remove(cs.begin(), cs.end(), home_[q]), cs.end());
    }
    // Dissolve groups with a single instruction besides scalar constants.
    std::vector<int64_t> real_members(num_groups, 0);
    for (int64_t q = 0; q < n_; ++q) {
      if (in_.kind[q] == kFusionScalarConst) continue;
      if (home_[q] >= 0) ++real_members[home_[q]];
      for (int64_t c : copies_[q]) ++real_members[c];
    }
    std::vector<uint8_t> alive(num_groups, 0);
    for (int64_t q = 0; q < n_; ++q) {
      if (home_[q] >= 0) alive[home_[q]] = 1;
      for (int64_t c : copies_[q]) alive[c] = 1;
    }
    for (int64_t gid = 0; gid < num_groups; ++gid) {
      if (alive[gid] && !opts_.fuse_singletons && real_members[gid] <= 1) alive[gid] = 0;
    }
    for (int64_t q = 0; q < n_; ++q) {
      if (home_[q] >= 0 && !alive[home_[q]]) {
        home_[q] = -1;
        unfused_[q] = 1;
      }
      auto& cs = copies_[q];
      const size_t before = cs.size();
      cs.erase(std::remove_if(cs.begin(), cs.end(), [&](int64_t c) { return !alive[c]; }),
               cs.end());
      if (cs.size() != before && home_[q] < 0) unfused_[q] = 1;
    }

    // Number the surviving groups by (depth, last member): a topological
    // order, since every edge of the fusion graph increases the depth.
    std::vector<int64_t> order;
    for (int64_t gid = 0; gid < num_groups; ++gid) {
      if (alive[gid]) order.push_back(gid);
    }
    std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return std::make_pair(depth_[a], groups_[a].root) < std::make_pair(depth_[b], groups_[b].root);
    });
    std::vector<int64_t> number(num_groups, -1);
    for (size_t k = 0; k < order.size(); ++k) number[order[k]] = static_cast<int64_t>(k);
    const int64_t out_groups = static_cast<int64_t>(order.size());

    FusionResult result;
    result.instruction_group.assign(n_, -1);
    result.unfused = unfused_;
    std::vector<std::vector<int64_t>> members(out_groups);
    for (int64_t q = 0; q < n_; ++q) {
      if (home_[q] >= 0) {
        home_[q] = number[home_[q]];
        result.instruction_group[q] = home_[q];
      }
      for (auto& c : copies_[q]) c = number[c];
      // Members of a group in post order: q is appended in increasing order.
      if (home_[q] >= 0) members[home_[q]].push_back(q);
      for (int64_t c : copies_[q]) members[c].push_back(q);
    }

    // A home member is an output when something outside its group reads it.
    std::vector<uint8_t> needed(n_, 0);
    for (int64_t q = 0; q < n_; ++q) {
      if (in_.live_out[q]) needed[q] = 1;
    }
    auto mark_operands = [&](int64_t u, int64_t group) {
      for (int64_t k = g_.operand_begin(u); k < g_.operand_end(u); ++k) {
        const int64_t q = g_.operand_indices[k];
        if (group >= 0 && InGroup(q, group)) continue;
        needed[q] = 1;
      }
    };
    for (int64_t gid = 0; gid < out_groups; ++gid) {
      for (int64_t m : members[gid]) mark_operands(m, gid);
    }
    for (int64_t u = 0; u < n_; ++u) {
      if (unfused_[u]) mark_operands(u, -1);
    }

    result.group_kind.resize(out_groups);
    for (int64_t gid = 0; gid < out_groups; ++gid) {
      const Group& group = groups_[order[gid]];
      result.group_kind[gid] = group.kind;
      // A dead group (nothing reads it) still returns its last member.
      bool any_output = false;
      for (int64_t m : members[gid]) any_output |= home_[m] == gid && needed[m];
      if (!any_output) needed[members[gid].back()] = 1;
      for (int64_t m : members[gid]) {
        result.group_members.push_back(m);
        result.member_is_output.push_back(home_[m] == gid && needed[m] ? 1 : 0);
      }
      result.group_offsets.push_back(static_cast<int64_t>(result.group_members.size()));
    }
    return result;
  }

  const FusionInput& in_;
  const FusionOptions& opts_;
  const OperandGraph& g_;
  const int64_t n_;
  Users users_;
  std::vector<int64_t> home_;
  std::vector<std::vector<int64_t>> copies_;
  std::vector<uint8_t> unfused_;
  std::vector<Group> groups_;
  std::vector<uint32_t> seen_;
  uint32_t stamp_ = 0;
  // Phase-1 instances (see Instance) and where they live.
  std::vector<int64_t> home_instance_;                // per node, or -1
  std::vector<std::vector<int64_t>> copy_instances_;  // aligned with copies_
  std::vector<Instance> instances_;
  std::vector<int64_t> instance_node_;
  std::vector<int64_t> instance_group_;  // as placed in phase 1
  std::vector<std::pair<int64_t, int64_t>> sources_;  // scratch

  std::vector<int64_t> parent_;
  std::vector<int64_t> depth_;
  std::vector<int64_t> unfused_depth_;
};

}  // namespace

std::string ValidateFusionInput(const FusionInput& input) {
  for (int64_t i = 0; i < input.graph.num_nodes; ++i) {
    if (input.kind[i] < kFusionUnfusible || input.kind[i] > kFusionScalarConst) {
      return "kind[" + std::to_string(i) + "] = " + std::to_string(input.kind[i]) +
             " is not a fusion op kind (0..3)";
    }
    for (int64_t k = input.graph.operand_begin(i); k < input.graph.operand_end(i); ++k) {
      if (input.graph.operand_indices[k] >= i) {
        return "node " + std::to_string(i) + " reads node " +
               std::to_string(input.graph.operand_indices[k]) +
               ": the nodes are not in post order";
      }
    }
  }
  return "";
}

FusionResult ComputeFusion(const FusionInput& input, const FusionOptions& options) {
  return FusionPlanner(input, options).Run();
}

std::string CheckFusionResult(const FusionInput& input, const FusionResult& result) {
  const OperandGraph& g = input.graph;
  const int64_t n = g.num_nodes;
  const int64_t num_groups = static_cast<int64_t>(result.group_kind.size());
  std::vector<std::vector<int64_t>> groups_of(n);
  std::vector<uint8_t> is_output(n, 0);
  std::vector<int64_t> outputs(num_groups, 0);
  for (int64_t gid = 0; gid < num_groups; ++gid) {
    for (int64_t k = result.group_offsets[gid]; k < result.group_offsets[gid + 1]; ++k) {
      const int64_t m = result.group_members[k];
      groups_of[m].push_back(gid);
      if (result.member_is_output[k]) {
        if (result.instruction_group[m] != gid) {
          return "node " + std::to_string(m) + " is an output of group " + std::to_string(gid) +
                 " but not a home member";
        }
        is_output[m] = 1;
        ++outputs[gid];
      }
    }
  }
  for (int64_t gid = 0; gid < num_groups; ++gid) {
    if (outputs[gid] == 0) return "group " + std::to_string(gid) + " has no output";
  }
  // Graph of fusions: nodes 0..num_groups-1 are groups, num_groups + i is
  // unfused instruction i (other instructions get no edges).
  std::vector<std::vector<int64_t>> operands(num_groups + n);
  auto source = [&](int64_t q, std::string* error) -> int64_t {
    if (result.unfused[q]) return num_groups + q;
    if (result.instruction_group[q] >= 0 && is_output[q]) return result.instruction_group[q];
    *error = "node " + std::to_string(q) + " is read outside its group but is neither unfused "
             "nor an output";
    return -1;
  };
  std::string error;
  for (int64_t i = 0; i < n; ++i) {
    if (input.live_out[i] && source(i, &error) < 0) return error;
    if (result.unfused[i] && result.instruction_group[i] >= 0) {
      return "node " + std::to_string(i) + " is both unfused and in a group";
    }
    auto read = [&](int64_t node, int64_t group) -> bool {
      for (int64_t k = g.operand_begin(i); k < g.operand_end(i); ++k) {
        const int64_t q = g.operand_indices[k];
        if (group >= 0 && Contains(groups_of[q], group)) continue;
        const int64_t s = source(q, &error);
        if (s < 0) return false;
        operands[node].push_back(s);
      }
      return true;
    };
    if (result.unfused[i] && !read(num_groups + i, -1)) return error;
    for (int64_t gid : groups_of[i]) {
      if (!read(gid, gid)) return error;
    }
  }
  std::vector<int64_t> offsets{0}, indices;
  for (const auto& ops : operands) {
    indices.insert(indices.end(), ops.begin(), ops.end());
    offsets.push_back(static_cast<int64_t>(indices.size()));
  }
  const int64_t cycle =
      FindCycle(MakeOperandGraph(offsets.data(), offsets.size(), indices.data()));
  if (cycle >= 0) {
    return cycle < num_groups ? "group " + std::to_string(cycle) + " is on a cycle"
                              : "node " + std::to_string(cycle - num_groups) + " is on a cycle";
  }
  return "";
}

}  // namespace xla_core
