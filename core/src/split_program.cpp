#include "rlx/split_program.h"

#include <algorithm>
#include <mutex>
#include <set>
#include <utility>

#include "rlx/error.h"
#include "rlx/log.h"

namespace rlx {

namespace {
constexpr int kPrimary = 0, kFallback = 1;
constexpr int kNowhere = -1, kBoth = 2;  // Value::latest besides a side

// One note per (backend, op) for the life of the process, never silence.
void note_fallback(const std::string& backend, const std::string& fallback, const char* op) {
  static std::mutex mu;
  static std::set<std::string> seen;
  std::lock_guard lock(mu);
  if (seen.insert(backend + "/" + op).second)
    log().warn("{} has no kernel for op '{}' here: those nodes run on {} (values are copied "
               "across; slower)",
               backend, op, fallback);
}
}  // namespace

// A value exchanged between segments: a tensor of the original graph that owns its data (not a
// view and not an update of another tensor's storage).
struct SplitProgram::Value {
  std::string name;
  uint64_t bytes = 0;
  int slot = -1;           // original slot holding it (offset below), -1: an intermediate
  uint64_t slot_offset = 0;
  bool weight = false;
  Buffer mirror[2];        // a side's own copy, where the original bindings do not give one
  int latest = kNowhere;   // during a run: the side(s) holding its current contents
};

struct SplitProgram::Segment {
  int side = kPrimary;
  Program prog;
  std::vector<uint32_t> slot_value;  // per slot of the segment's graph: a value index
  std::vector<uint32_t> reads;       // values it needs current on its side
  std::vector<uint32_t> writes;      // values it (over)writes
  std::vector<rlx_binding> binds;
};

SplitProgram::SplitProgram() = default;
SplitProgram::~SplitProgram() = default;
SplitProgram::SplitProgram(SplitProgram&&) noexcept = default;
SplitProgram& SplitProgram::operator=(SplitProgram&&) noexcept = default;

size_t SplitProgram::segments() const { return segments_.size(); }

SplitProgram::SplitProgram(const PlannedGraph& plan, std::shared_ptr<Device> primary,
                           std::shared_ptr<Device> fallback, WeightLookup fallback_weight,
                           Placement on_primary)
    : dev_{std::move(primary), std::move(fallback)},
      fallback_weight_(std::move(fallback_weight)),
      n_slots_(static_cast<uint32_t>(plan.graph.slots.size())) {
  const Graph& g = plan.graph;
  const OpRegistry& reg = OpRegistry::global();
  std::vector<bool> here(g.nodes.size(), true);
  for (uint32_t n = 0; n < g.nodes.size(); ++n) {
    if (reg.get(g.nodes[n].op).alias == RLX_ALIAS_VIEW) {  // no compute: stays with its neighbour
      here[n] = n == 0 || here[n - 1];
      continue;
    }
    here[n] = on_primary ? on_primary(n) : dev_[kPrimary]->supports(plan, n);
    if (here[n]) continue;
    const std::string& op = reg.get(g.nodes[n].op).name;
    if (!dev_[kFallback])
      fail("{} cannot run node {} ('{}', op {}) and no fallback device is open (is the cpu "
           "plugin installed?)",
           dev_[kPrimary]->backend(), n, g.nodes[n].name, op);
    if (!dev_[kFallback]->supports(plan, n))
      fail("neither {} nor {} can run node {} ('{}', op {})", dev_[kPrimary]->backend(),
           dev_[kFallback]->backend(), n, g.nodes[n].name, op);
    if (!on_primary) note_fallback(dev_[kPrimary]->backend(), dev_[kFallback]->backend(), op.c_str());
    ++fallback_nodes_;
  }
  if (fallback_nodes_ == 0) {  // the common case: one Program, the caller's bindings as they are
    Segment s;
    s.prog = dev_[kPrimary]->compile(plan);
    segments_.push_back(std::move(s));
    return;
  }
  build(plan, here);
}

// Cuts the graph into runs of nodes on one side; each becomes a graph of its own whose slots
// are the values it reads from outside and the values others read from it.
void SplitProgram::build(const PlannedGraph& plan, const std::vector<bool>& on_primary) {
  const Graph& g = plan.graph;
  const OpRegistry& reg = OpRegistry::global();
  const size_t n_nodes = g.nodes.size();

  // base[t]: the tensor owning t's data (views and updates share their input 0's).
  std::vector<TensorId> base(g.tensors.size());
  for (TensorId t = 0; t < base.size(); ++t) base[t] = t;
  for (const Node& node : g.nodes)
    if (reg.get(node.op).aliases_input0()) base[node.output] = base[node.inputs[0]];

  // Which segment reads each base value, to know what a segment must hand on.
  std::vector<uint32_t> seg_of(n_nodes);
  for (uint32_t n = 1; n < n_nodes; ++n)
    seg_of[n] = seg_of[n - 1] + (on_primary[n] != on_primary[n - 1] ? 1 : 0);
  std::vector<std::set<uint32_t>> readers(g.tensors.size());
  for (uint32_t n = 0; n < n_nodes; ++n)
    for (TensorId t : g.nodes[n].inputs) readers[base[t]].insert(seg_of[n]);

  std::vector<int> value_of(g.tensors.size(), -1);
  auto value = [&](TensorId b) -> uint32_t {
    if (value_of[b] < 0) {
      Value v;
      v.name = g.tensors[b].name;
      v.bytes = plan.tensors[b].nbytes;
      v.weight = g.tensors[b].kind == TensorKind::Weight;
      if (plan.tensors[b].storage == RLX_STORAGE_SLOT) {
        v.slot = static_cast<int>(plan.tensors[b].slot);
        v.slot_offset = plan.tensors[b].offset;
      }
      value_of[b] = static_cast<int>(values_.size());
      values_.push_back(std::move(v));
    }
    return static_cast<uint32_t>(value_of[b]);
  };

  for (uint32_t first = 0; first < n_nodes;) {
    uint32_t end = first;
    while (end < n_nodes && seg_of[end] == seg_of[first]) ++end;
    Segment seg;
    seg.side = on_primary[first] ? kPrimary : kFallback;
    Graph sub;
    std::vector<int> map(g.tensors.size(), -1);
    auto add_slot = [&](TensorId orig, TensorKind kind) {
      Tensor t = g.tensors[orig];
      t.kind = kind;
      t.producer = -1;
      t.is_output = false;
      sub.tensors.push_back(std::move(t));
      auto id = static_cast<TensorId>(sub.tensors.size() - 1);
      sub.slots.push_back(id);
      seg.slot_value.push_back(value(orig));
      return id;
    };
    auto add_node = [&](const Node& node, std::vector<TensorId> inputs) {
      Tensor out = g.tensors[node.output];
      out.kind = TensorKind::Intermediate;
      out.is_output = false;
      out.producer = static_cast<int>(sub.nodes.size());
      sub.tensors.push_back(std::move(out));
      Node copy = node;
      copy.inputs = std::move(inputs);
      copy.output = static_cast<TensorId>(sub.tensors.size() - 1);
      sub.nodes.push_back(std::move(copy));
      return sub.nodes.back().output;
    };
    // A tensor made outside this segment: re-make views, follow updates, import the rest.
    std::function<TensorId(TensorId)> resolve = [&](TensorId t) -> TensorId {
      if (map[t] >= 0) return static_cast<TensorId>(map[t]);
      const int p = g.tensors[t].producer;
      TensorId id;
      if (p >= 0 && reg.get(g.nodes[p].op).alias == RLX_ALIAS_VIEW) {
        id = add_node(g.nodes[p], {resolve(g.nodes[p].inputs[0])});
      } else if (p >= 0 && reg.get(g.nodes[p].op).alias == RLX_ALIAS_UPDATE) {
        id = resolve(g.nodes[p].inputs[0]);
      } else {
        id = add_slot(t, g.tensors[t].kind == TensorKind::Weight ? TensorKind::Weight
                                                                 : TensorKind::Input);
        seg.reads.push_back(value(t));
      }
      map[t] = static_cast<int>(id);
      return id;
    };

    for (uint32_t n = first; n < end; ++n) {
      const Node& node = g.nodes[n];
      std::vector<TensorId> in;
      for (TensorId t : node.inputs) in.push_back(resolve(t));
      map[node.output] = static_cast<int>(add_node(node, std::move(in)));
      const rlx_op_alias alias = reg.get(node.op).alias;
      if (alias == RLX_ALIAS_UPDATE && map[base[node.inputs[0]]] >= 0 &&
          sub.tensors[map[base[node.inputs[0]]]].kind != TensorKind::Intermediate)
        seg.writes.push_back(value(base[node.inputs[0]]));  // an imported buffer, changed in place
    }
    // Hand on what later segments read and what the caller reads (outputs).
    for (uint32_t n = first; n < end; ++n) {
      const TensorId t = g.nodes[n].output;
      if (base[t] != t) continue;
      bool needed = plan.tensors[t].storage == RLX_STORAGE_SLOT;
      for (uint32_t r : readers[t]) needed |= r != seg_of[first];
      if (!needed) continue;
      auto id = static_cast<TensorId>(map[t]);
      sub.tensors[id].is_output = true;
      sub.slots.push_back(id);
      seg.slot_value.push_back(value(t));
      seg.writes.push_back(value(t));
    }
    PlannedGraph sub_plan = plan_graph(std::move(sub), plan.alignment);
    seg.prog = dev_[seg.side]->compile(sub_plan);
    seg.binds.resize(seg.slot_value.size());
    segments_.push_back(std::move(seg));
    first = end;
  }

  // Own buffers where the caller's bindings give none: every value on the fallback side except
  // weights (the fallback's weight store), intermediates on the primary side.
  for (Segment& s : segments_)
    for (uint32_t vi : s.slot_value) {
      Value& v = values_[vi];
      if (s.side == kFallback && v.weight && !fallback_weight_)
        fail("{} runs a node reading weight '{}' but was given no weights for it",
             dev_[kFallback]->backend(), v.name);
      const bool needs = s.side == kFallback ? !v.weight : v.slot < 0;
      if (needs && !v.mirror[s.side].handle()) {
        v.mirror[s.side] = dev_[s.side]->alloc(std::max<uint64_t>(v.bytes, 1));
        mirror_bytes_ += v.bytes;
      }
    }
}

rlx_binding SplitProgram::home(const Value& v, int side,
                               std::span<const rlx_binding> bindings) const {
  if (v.mirror[side].handle()) return rlx_binding{v.mirror[side].handle(), 0};
  if (side == kFallback) return rlx_binding{fallback_weight_(v.name).handle(), 0};
  const rlx_binding b = bindings[static_cast<size_t>(v.slot)];
  return rlx_binding{b.buffer, b.offset + v.slot_offset};
}

void SplitProgram::copy(Value& v, int to, std::span<const rlx_binding> bindings) {
  const int from = 1 - to;
  staging_.resize(v.bytes);
  const rlx_binding src = home(v, from, bindings), dst = home(v, to, bindings);
  dev_[from]->read(src.buffer, src.offset, staging_.data(), v.bytes);
  dev_[to]->write(dst.buffer, dst.offset, staging_.data(), v.bytes);
}

void SplitProgram::run(std::span<const rlx_binding> bindings) {
  if (bindings.size() != n_slots_)
    fail("program needs {} bindings (one per input, weight and output), got {}", n_slots_,
         bindings.size());
  if (fallback_nodes_ == 0) {
    segments_.front().prog.run(bindings);
    return;
  }
  // The caller's buffers hold the inputs (and the KV cache) on the primary side; weights are
  // current everywhere; intermediates do not exist yet.
  for (Value& v : values_) v.latest = v.weight ? kBoth : v.slot >= 0 ? kPrimary : kNowhere;
  for (Segment& s : segments_) {
    for (uint32_t vi : s.reads) {
      Value& v = values_[vi];
      if (v.latest == kNowhere)
        fail("split program: '{}' is read before it is written (a bug in the split)", v.name);
      if (v.latest != s.side && v.latest != kBoth) {
        copy(v, s.side, bindings);
        v.latest = kBoth;
      }
    }
    for (size_t i = 0; i < s.slot_value.size(); ++i)
      s.binds[i] = home(values_[s.slot_value[i]], s.side, bindings);
    s.prog.run(s.binds);
    for (uint32_t vi : s.writes) values_[vi].latest = s.side;
  }
  // Whatever the caller can see (outputs, an updated KV cache) ends up in its buffers.
  for (Value& v : values_)
    if (v.slot >= 0 && v.latest == kFallback) copy(v, kPrimary, bindings);
}

}  // namespace rlx
