// Arena planning. Three greedy placements each put a buffer where it overlaps no already placed
// buffer whose lifetime intersects its own: largest first at the lowest offset; execution order
// at the lowest offset; and execution order alternating between the bottom and the top of an
// arena of lower-bound size. The smallest arena wins. The two-ended one is exact on chains
// (buffer i alive with i-1 and i+1 only, as in a layer-by-layer forward pass): neighbours sit
// at opposite ends and s_i + s_{i+1} <= lower bound. The tests check that.
#include "rlx/arena.h"

#include <algorithm>
#include <numeric>

#include "rlx/error.h"

namespace rlx {
namespace {

uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

bool overlaps(const Lifetime& a, const Lifetime& b) {
  return a.first <= b.last && b.first <= a.last;
}

// Places items in `order`, each at the lowest free offset; or, with `two_ended`, every second
// item at the highest free offset that still ends within `ceiling` (falling back to the lowest
// when none does). Returns the arena size and fills offsets.
uint64_t place(std::span<const Lifetime> items, std::span<const uint64_t> sizes,
               const std::vector<size_t>& order, std::vector<uint64_t>& offsets,
               bool two_ended = false, uint64_t ceiling = 0) {
  offsets.assign(items.size(), 0);
  std::vector<size_t> placed;
  placed.reserve(items.size());
  uint64_t total = 0;
  std::vector<std::pair<uint64_t, uint64_t>> busy;  // [begin, end) of conflicting buffers
  for (size_t i : order) {
    busy.clear();
    for (size_t j : placed)
      if (sizes[j] > 0 && overlaps(items[i], items[j]))
        busy.emplace_back(offsets[j], offsets[j] + sizes[j]);
    std::sort(busy.begin(), busy.end());
    uint64_t at = 0;
    for (auto [b, e] : busy) {
      if (at + sizes[i] <= b) break;  // fits in the gap before this buffer
      at = std::max(at, e);
    }
    if (two_ended && placed.size() % 2 == 1 && sizes[i] <= ceiling) {
      // The highest free spot ending at the ceiling or at the start of a busy range below it.
      auto free_at = [&](uint64_t o) {
        return std::none_of(busy.begin(), busy.end(),
                            [&](auto r) { return o < r.second && r.first < o + sizes[i]; });
      };
      if (free_at(ceiling - sizes[i])) {
        at = ceiling - sizes[i];
      } else {
        for (auto it = busy.rbegin(); it != busy.rend(); ++it)
          if (it->first <= ceiling && it->first >= sizes[i] && free_at(it->first - sizes[i])) {
            at = it->first - sizes[i];
            break;
          }
      }
    }
    offsets[i] = at;
    total = std::max(total, at + sizes[i]);
    placed.push_back(i);
  }
  return total;
}

}  // namespace

ArenaPlan plan_arena(std::span<const Lifetime> items, uint64_t alignment) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0)
    fail("arena alignment {} must be a power of two", alignment);
  std::vector<uint64_t> sizes(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    if (items[i].first > items[i].last)
      fail("arena buffer {} has first use {} after last use {}", i, items[i].first, items[i].last);
    sizes[i] = align_up(items[i].bytes, alignment);
  }

  ArenaPlan plan;
  // Lower bound: the most bytes alive at any one node.
  std::vector<std::pair<uint32_t, int64_t>> events;  // (node, +size at first / -size after last)
  for (size_t i = 0; i < items.size(); ++i) {
    events.emplace_back(items[i].first, static_cast<int64_t>(sizes[i]));
    events.emplace_back(items[i].last + 1, -static_cast<int64_t>(sizes[i]));
  }
  std::sort(events.begin(), events.end(), [](auto a, auto b) {
    return a.first != b.first ? a.first < b.first : a.second < b.second;  // frees first
  });
  int64_t live = 0;
  for (auto [node, delta] : events) {
    live += delta;
    plan.lower_bound = std::max(plan.lower_bound, static_cast<uint64_t>(live));
  }

  std::vector<size_t> by_size(items.size()), by_time(items.size());
  std::iota(by_size.begin(), by_size.end(), 0);
  std::iota(by_time.begin(), by_time.end(), 0);
  std::stable_sort(by_size.begin(), by_size.end(), [&](size_t a, size_t b) {
    return sizes[a] != sizes[b] ? sizes[a] > sizes[b] : items[a].first < items[b].first;
  });
  std::stable_sort(by_time.begin(), by_time.end(), [&](size_t a, size_t b) {
    return items[a].first != items[b].first ? items[a].first < items[b].first : sizes[a] > sizes[b];
  });
  plan.total_bytes = place(items, sizes, by_size, plan.offsets);
  std::vector<uint64_t> other;
  auto keep_if_smaller = [&](uint64_t total) {
    if (total >= plan.total_bytes) return;
    plan.total_bytes = total;
    plan.offsets = other;
  };
  keep_if_smaller(place(items, sizes, by_time, other));
  keep_if_smaller(place(items, sizes, by_time, other, true, plan.lower_bound));
  return plan;
}

rlx_graph_desc PlannedGraph::desc() const {
  rlx_graph_desc d{};
  d.struct_size = sizeof(rlx_graph_desc);
  d.n_tensors = static_cast<uint32_t>(tensors.size());
  d.tensors = tensors.data();
  d.n_nodes = static_cast<uint32_t>(nodes.size());
  d.nodes = nodes.data();
  d.n_slots = static_cast<uint32_t>(graph.slots.size());
  d.arena_bytes = arena_bytes;
  d.arena_alignment = alignment;
  return d;
}

PlannedGraph plan_graph(Graph g, uint64_t alignment) {
  const size_t n_tensors = g.tensors.size();
  const auto n_nodes = static_cast<uint32_t>(g.nodes.size());
  PlannedGraph p;
  p.alignment = alignment;

  // Last node that reads each tensor; outputs stay alive past the end.
  std::vector<uint32_t> last_use(n_tensors, 0);
  for (uint32_t n = 0; n < n_nodes; ++n)
    for (TensorId t : g.nodes[n].inputs) last_use[t] = std::max(last_use[t], n);
  for (size_t t = 0; t < n_tensors; ++t) {
    if (g.tensors[t].is_output) last_use[t] = n_nodes;
    if (g.tensors[t].producer >= 0)
      last_use[t] = std::max(last_use[t], static_cast<uint32_t>(g.tensors[t].producer));
  }

  // Storage groups: a view, an update or an in-place output joins its input's group (root);
  // a view also sits at a byte offset inside it (slice).
  std::vector<TensorId> root(n_tensors);
  std::iota(root.begin(), root.end(), 0);
  std::vector<uint64_t> view_offset(n_tensors, 0);
  std::vector<int> slot(n_tensors, -1);  // slot of a group root, -1 = arena
  for (size_t i = 0; i < g.slots.size(); ++i) slot[g.slots[i]] = static_cast<int>(i);
  std::vector<uint32_t> group_last = last_use;

  const OpRegistry& reg = OpRegistry::global();
  for (uint32_t n = 0; n < n_nodes; ++n) {
    const Node& node = g.nodes[n];
    const OpDef& def = reg.get(node.op);
    const Tensor& out = g.tensors[node.output];
    if (node.inputs.empty()) continue;
    TensorId in0 = node.inputs[0];
    TensorId r = root[in0];
    bool join = def.aliases_input0();
    if (join && out.is_output) {
      // GraphBuilder::output only allows this for a whole-tensor view of an unbound source.
      if (slot[r] >= 0)
        fail(
            "output '{}' shares the storage of graph input/output '{}'; it cannot be bound to "
            "a second slot",
            out.name, g.tensors[r].name);
      slot[r] = slot[node.output];  // the source is computed straight into the output buffer
    }
    if (!join && def.alias == RLX_ALIAS_INPLACE && !out.is_output && slot[r] < 0 &&
        group_last[r] == n && view_offset[in0] == 0 && g.tensors[r].info.dtype == out.info.dtype &&
        g.tensors[r].info.elems() == out.info.elems()) {
      join = true;
      ++p.inplace_reuses;
    }
    if (!join) continue;
    root[node.output] = r;
    view_offset[node.output] = view_offset[in0];
    if (node.op == RLX_OP_SLICE) {
      const TensorInfo& x = g.tensors[in0].info;
      view_offset[node.output] +=
          dtype_bytes(x.dtype, x.elems() / x.shape[0]) * static_cast<uint64_t>(node.attrs.i[0]);
    }
    group_last[r] = std::max(group_last[r], last_use[node.output]);
  }

  // Arena placement for groups whose root is an unbound intermediate.
  std::vector<Lifetime> items;
  std::vector<TensorId> item_root;
  for (TensorId t = 0; t < n_tensors; ++t) {
    if (root[t] != t || slot[t] >= 0) continue;
    const Tensor& tensor = g.tensors[t];
    items.push_back(Lifetime{dtype_bytes(tensor.info.dtype, tensor.info.elems()),
                             static_cast<uint32_t>(tensor.producer),
                             std::min(group_last[t], n_nodes - 1)});
    item_root.push_back(t);
  }
  ArenaPlan plan = plan_arena(items, alignment);
  std::vector<uint64_t> arena_offset(n_tensors, 0);
  for (size_t i = 0; i < items.size(); ++i) arena_offset[item_root[i]] = plan.offsets[i];
  p.arena_bytes = plan.total_bytes;
  p.arena_lower_bound = plan.lower_bound;

  p.tensors.resize(n_tensors);
  for (TensorId t = 0; t < n_tensors; ++t) {
    const TensorInfo& info = g.tensors[t].info;
    rlx_tensor_desc& d = p.tensors[t];
    d.dtype = info.dtype;
    d.ndim = static_cast<uint32_t>(info.shape.size());
    for (uint32_t i = 0; i < d.ndim; ++i) d.shape[i] = info.shape[i];
    d.nbytes = dtype_bytes(info.dtype, info.elems());
    TensorId r = root[t];
    if (slot[r] >= 0) {
      d.storage = RLX_STORAGE_SLOT;
      d.slot = static_cast<uint32_t>(slot[r]);
      d.offset = view_offset[t];
    } else {
      d.storage = RLX_STORAGE_ARENA;
      d.offset = arena_offset[r] + view_offset[t];
    }
  }
  p.nodes.resize(n_nodes);
  for (uint32_t n = 0; n < n_nodes; ++n) {
    const Node& node = g.nodes[n];
    rlx_node_desc& d = p.nodes[n];
    d.op = node.op;
    d.op_name = reg.get(node.op).name.c_str();
    d.n_inputs = static_cast<uint32_t>(node.inputs.size());
    for (uint32_t i = 0; i < d.n_inputs; ++i) d.inputs[i] = node.inputs[i];
    d.output = node.output;
    for (int i = 0; i < RLX_MAX_ATTRS; ++i) {
      d.iattr[i] = node.attrs.i[i];
      d.fattr[i] = node.attrs.f[i];
    }
  }
  p.graph = std::move(g);
  return p;
}

}  // namespace rlx
