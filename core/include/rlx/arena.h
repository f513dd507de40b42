// Activation arena planning: give every intermediate buffer an offset so that no two buffers
// that are alive at the same time overlap, reusing dead buffers' space.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "rlx/graph.h"

namespace rlx {

// One buffer to place: alive from node `first` through node `last` inclusive (execution order).
struct Lifetime {
  uint64_t bytes = 0;
  uint32_t first = 0;
  uint32_t last = 0;
};

struct ArenaPlan {
  std::vector<uint64_t> offsets;  // one per Lifetime, multiples of `alignment`
  uint64_t total_bytes = 0;       // arena size
  uint64_t lower_bound = 0;       // max over nodes of aligned bytes alive at that node
};

// Tries two heuristics (largest-first and first-fit in execution order) and keeps the smaller.
ArenaPlan plan_arena(std::span<const Lifetime> items, uint64_t alignment);

// A graph with every tensor placed, ready to hand to a backend (see rlx_graph_desc).
struct PlannedGraph {
  Graph graph;
  std::vector<rlx_tensor_desc> tensors;
  std::vector<rlx_node_desc> nodes;
  uint64_t arena_bytes = 0;
  uint64_t arena_lower_bound = 0;
  uint64_t alignment = 64;
  uint32_t inplace_reuses = 0;  // nodes whose output took over input 0's storage

  // Points into this object; valid while it lives and is not moved.
  rlx_graph_desc desc() const;
};

// Plans `g`: views (reshape) alias their source, in-place ops reuse a dying input 0, all other
// intermediates go through plan_arena. Inputs, weights and outputs are slot-bound.
PlannedGraph plan_graph(Graph g, uint64_t alignment = 64);

}  // namespace rlx
