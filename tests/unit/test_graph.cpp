#include <catch2/catch.hpp>

#include "rlx/error.h"
#include "rlx/graph.h"

using namespace rlx;

TEST_CASE("graph builder records tensors, nodes and slots", "[graph]") {
  GraphBuilder b;
  TensorId x = b.input("x", RLX_F32, {4, 16});    // slot 0
  TensorId w = b.weight("w", RLX_F32, {32, 16});  // slot 1
  TensorId y = b.matmul(x, w, "proj");            // [4, 32]
  TensorId z = b.op("silu", {y});
  b.output(z, "out");  // slot 2
  Graph g = b.finish();
  REQUIRE(g.nodes.size() == 2);
  CHECK(g.tensors[y].info.shape == Shape{4, 32});
  CHECK(g.tensors[y].producer == 0);
  CHECK(g.slots == std::vector<TensorId>{x, w, z});
  CHECK(g.slot_named("out") == 2);
  CHECK(g.slot_of(y) == -1);
  CHECK_THROWS_WITH(g.slot_named("nope"), Catch::Contains("'nope'"));
}

TEST_CASE("shape errors name the op, the node and the shapes", "[graph]") {
  GraphBuilder b;
  TensorId x = b.input("x", RLX_F32, {4, 16});
  TensorId w = b.weight("blk.0.attn_q", RLX_F32, {32, 15});
  try {
    b.matmul(x, w, "q_proj");
    FAIL("expected a shape error");
  } catch (const Error& e) {
    std::string m = e.what();
    CHECK_THAT(m, Catch::Contains("op 'matmul'") && Catch::Contains("node 0") &&
                      Catch::Contains("q_proj") && Catch::Contains("f32[4, 16]") &&
                      Catch::Contains("f32[32, 15]") && Catch::Contains("blk.0.attn_q"));
  }
  CHECK_THROWS_WITH(b.op("silu", {x, x}), Catch::Contains("takes 1 inputs, got 2"));
  CHECK_THROWS_WITH(b.op("frobnicate", {x}), Catch::Contains("unknown op 'frobnicate'"));
  CHECK_THROWS_WITH(b.input("bad", RLX_F32, {0, 3}), Catch::Contains("every dim must be > 0"));
  CHECK_THROWS_WITH(b.input("big", RLX_F32, {1, 2, 3, 4, 5}), Catch::Contains("1 to 4"));
  CHECK_THROWS_WITH(b.output(x), Catch::Contains("input"));
  CHECK_THROWS_WITH(b.finish(), Catch::Contains("no outputs"));
}
