// Arena planner properties: on many random graphs no tensor is overwritten while it is still to
// be read; simple chains reach the lower bound; in-place and views reuse storage.
#include <catch2/catch.hpp>
#include <random>

#include "rlx/arena.h"
#include "rlx/error.h"

using namespace rlx;

namespace {

bool ranges_overlap(uint64_t a, uint64_t an, uint64_t b, uint64_t bn) {
  return an > 0 && bn > 0 && a < b + bn && b < a + an;
}

// Replays the planned graph in execution order and fails if some node reads an arena tensor
// whose bytes were rewritten (by another tensor) after that tensor was produced.
void check_no_clobber(const PlannedGraph& p) {
  const Graph& g = p.graph;
  auto data_src = [&](TensorId t) {
    while (g.tensors[t].producer >= 0 &&
           OpRegistry::global().get(g.nodes[g.tensors[t].producer].op).aliases_input0())
      t = g.nodes[g.tensors[t].producer].inputs[0];
    return t;
  };
  struct Write {
    uint32_t node;
    uint64_t off, n;
    TensorId t;
  };
  std::vector<Write> writes;
  for (uint32_t n = 0; n < g.nodes.size(); ++n) {
    for (TensorId in : g.nodes[n].inputs) {
      const rlx_tensor_desc& d = p.tensors[in];
      if (d.storage != RLX_STORAGE_ARENA) continue;
      TensorId src = data_src(in);
      int produced = g.tensors[src].producer;
      for (const Write& w : writes)
        if (static_cast<int>(w.node) > produced && w.t != src &&
            ranges_overlap(w.off, w.n, d.offset, d.nbytes)) {
          FAIL("node " << n << " reads '" << g.tensors[in].name << "' but node " << w.node
                       << " overwrote it with '" << g.tensors[w.t].name << "'");
        }
    }
    TensorId out = g.nodes[n].output;
    const rlx_tensor_desc& d = p.tensors[out];
    if (!OpRegistry::global().get(g.nodes[n].op).aliases_input0() && d.storage == RLX_STORAGE_ARENA)
      writes.push_back({n, d.offset, d.nbytes, out});
    if (d.storage == RLX_STORAGE_ARENA) {
      CHECK(d.offset % p.alignment == 0);
      CHECK(d.offset + d.nbytes <= p.arena_bytes);
    }
  }
}

// A random DAG over a few shapes, mixing in-place ops, views and matmuls.
Graph random_graph(std::mt19937& rng) {
  GraphBuilder b;
  const int64_t dims[] = {8, 16, 24};
  std::vector<TensorId> pool;
  for (int i = 0; i < 2; ++i)
    pool.push_back(b.input("x" + std::to_string(i), RLX_F32, {4, dims[rng() % 3]}));
  std::vector<TensorId> weights;
  int n_nodes = 5 + static_cast<int>(rng() % 30);
  for (int n = 0; n < n_nodes; ++n) {
    TensorId a = pool[rng() % pool.size()];
    Shape sa = b.info(a).shape;
    std::vector<TensorId> same;
    for (TensorId t : pool)
      if (b.info(t).shape == sa) same.push_back(t);
    TensorId other = same[rng() % same.size()];
    switch (rng() % 6) {
      case 0: pool.push_back(b.add(a, other)); break;
      case 1: pool.push_back(b.op("silu", {a})); break;
      case 2: pool.push_back(b.op("silu_mul", {a, other})); break;
      case 3: {
        int64_t out = dims[rng() % 3];
        TensorId w = b.weight("w" + std::to_string(n), RLX_F32, {out, sa.back()});
        pool.push_back(b.matmul(a, w));
        break;
      }
      case 4: pool.push_back(b.reshape(a, {sa[0] * sa[1] / 4, 4})); break;
      default: {
        NodeAttrs s;
        s.f[0] = 0.5f;
        pool.push_back(b.op("scale", {a}, s));
      }
    }
  }
  // Mark the last tensor and a few random computed ones as outputs.
  std::vector<TensorId> computed;
  for (TensorId t : pool)
    if (t >= 2 && b.info(t).shape.size() == 2) computed.push_back(t);
  b.output(b.op("silu", {pool.back()}));
  for (int i = 0; i < 2; ++i) {
    TensorId t = computed[rng() % computed.size()];
    try {
      b.output(t);
    } catch (const Error&) {  // already an output, or a reshape of an input or output
    }
  }
  return b.finish();
}

}  // namespace

TEST_CASE("plan_arena: no two buffers alive at once overlap", "[arena]") {
  std::mt19937 rng(1234);
  for (int trial = 0; trial < 500; ++trial) {
    std::vector<Lifetime> items(1 + rng() % 40);
    for (auto& it : items) {
      it.first = rng() % 30;
      it.last = it.first + rng() % 10;
      it.bytes = rng() % 5000;
    }
    uint64_t align = 1ull << (rng() % 8);
    ArenaPlan plan = plan_arena(items, align);
    REQUIRE(plan.total_bytes >= plan.lower_bound);
    for (size_t i = 0; i < items.size(); ++i) {
      REQUIRE(plan.offsets[i] % align == 0);
      REQUIRE(plan.offsets[i] + items[i].bytes <= plan.total_bytes);
      for (size_t j = i + 1; j < items.size(); ++j) {
        bool live_together = items[i].first <= items[j].last && items[j].first <= items[i].last;
        if (live_together)
          REQUIRE_FALSE(
              ranges_overlap(plan.offsets[i], items[i].bytes, plan.offsets[j], items[j].bytes));
      }
    }
  }
}

TEST_CASE("plan_arena: chains reach the lower bound", "[arena]") {
  std::mt19937 rng(99);
  for (int trial = 0; trial < 500; ++trial) {
    // Buffer i is produced by node i and read by node i + 1.
    std::vector<Lifetime> items(2 + rng() % 30);
    for (uint32_t i = 0; i < items.size(); ++i) items[i] = {1 + rng() % 100000, i, i + 1};
    ArenaPlan plan = plan_arena(items, 64);
    REQUIRE(plan.total_bytes == plan.lower_bound);
  }
}

TEST_CASE("plan_arena rejects bad input", "[arena]") {
  std::vector<Lifetime> bad{{16, 3, 1}};
  CHECK_THROWS_WITH(plan_arena(bad, 64), Catch::Contains("after last use"));
  CHECK_THROWS_WITH(plan_arena({}, 48), Catch::Contains("power of two"));
}

TEST_CASE("plan_graph: random graphs never clobber a live tensor", "[arena]") {
  std::mt19937 rng(7);
  uint32_t inplace_total = 0;
  for (int trial = 0; trial < 300; ++trial) {
    PlannedGraph p = plan_graph(random_graph(rng), 64);
    check_no_clobber(p);
    REQUIRE(p.arena_bytes >= p.arena_lower_bound);
    inplace_total += p.inplace_reuses;
    // Slot-bound tensors are exactly the inputs, weights and outputs (and views of them).
    for (TensorId t = 0; t < p.graph.tensors.size(); ++t) {
      const Tensor& tensor = p.graph.tensors[t];
      if (tensor.kind != TensorKind::Intermediate || tensor.is_output)
        REQUIRE(p.tensors[t].storage == RLX_STORAGE_SLOT);
    }
  }
  CHECK(inplace_total > 0);  // the generator does exercise in-place reuse
}

TEST_CASE("plan_graph: a matmul chain reaches the lower bound", "[arena]") {
  GraphBuilder b;
  const int64_t widths[] = {64, 256, 16, 512, 32, 128, 8, 1024, 64};
  TensorId x = b.input("x", RLX_F32, {3, widths[0]});
  for (size_t i = 1; i < std::size(widths); ++i) {
    TensorId w = b.weight("w" + std::to_string(i), RLX_F32, {widths[i], widths[i - 1]});
    x = b.matmul(x, w);
  }
  b.output(x);
  PlannedGraph p = plan_graph(b.finish());
  CHECK(p.arena_bytes == p.arena_lower_bound);
  CHECK(p.arena_bytes > 0);
  check_no_clobber(p);
}

TEST_CASE("plan_graph: element-wise chains run in place, reshape is a view", "[arena]") {
  GraphBuilder b;
  TensorId x = b.input("x", RLX_F32, {4, 16});
  TensorId w = b.weight("w", RLX_F32, {16, 16});
  TensorId h = b.matmul(x, w);     // arena
  TensorId s = b.op("silu", {h});  // in place over h
  NodeAttrs half;
  half.f[0] = 0.5f;
  TensorId c = b.op("scale", {s}, half);  // in place again
  TensorId r = b.reshape(c, {8, 8});      // view
  TensorId y = b.op("silu", {r});         // r dies here: in place
  TensorId back = b.reshape(y, {4, 16});  // view
  TensorId out = b.add(back, x);          // an output: its own slot
  b.output(out);
  PlannedGraph p = plan_graph(b.finish());
  CHECK(p.inplace_reuses == 3);
  CHECK(p.tensors[s].offset == p.tensors[h].offset);
  CHECK(p.tensors[r].offset == p.tensors[c].offset);
  CHECK(p.arena_bytes == 4 * 16 * 4);  // one buffer serves the whole chain
  CHECK(p.tensors[out].storage == RLX_STORAGE_SLOT);
  check_no_clobber(p);
}

TEST_CASE("plan_graph: an input still needed later is never overwritten in place", "[arena]") {
  GraphBuilder b;
  TensorId x = b.input("x", RLX_F32, {4, 16});
  TensorId w = b.weight("w", RLX_F32, {16, 16});
  TensorId h = b.matmul(x, w);
  TensorId s = b.op("silu", {h});  // h is read again below: no in-place
  TensorId out = b.add(s, h);
  b.output(out);
  PlannedGraph p = plan_graph(b.finish());
  CHECK(p.inplace_reuses == 0);
  CHECK(p.tensors[s].offset != p.tensors[h].offset);
  check_no_clobber(p);
}

TEST_CASE("plan_graph: an output that is a reshape is computed straight into its slot", "[arena]") {
  GraphBuilder b;
  TensorId x = b.input("x", RLX_F32, {4, 16});
  TensorId w = b.weight("w", RLX_F32, {16, 16});
  TensorId h = b.matmul(x, w);
  TensorId r = b.reshape(h, {64});
  b.output(r, "flat");
  PlannedGraph p = plan_graph(b.finish());
  CHECK(p.tensors[h].storage == RLX_STORAGE_SLOT);
  CHECK(p.tensors[h].slot == p.tensors[r].slot);
  CHECK(p.arena_bytes == 0);
}
