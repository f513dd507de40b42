#include <catch2/catch.hpp>

#include "rlx/error.h"
#include "rlx/ops.h"

using namespace rlx;

TEST_CASE("every built-in op is registered under its ABI id and name", "[ops]") {
  auto& reg = OpRegistry::global();
  REQUIRE(reg.get(RLX_OP_MATMUL).name == "matmul");
  REQUIRE(reg.find("rms_norm")->id == RLX_OP_RMS_NORM);
  REQUIRE(reg.find("no_such_op") == nullptr);
  for (uint32_t id = 0; id < RLX_OP_BUILTIN_COUNT; ++id) {
    const OpDef& d = reg.get(id);
    CHECK(d.id == id);
    CHECK(d.infer);
    CHECK(reg.find(d.name) == &d);
  }
  REQUIRE_THROWS_AS(reg.get(RLX_OP_BUILTIN_COUNT), Error);
}

TEST_CASE("plugins can register extra named ops", "[ops]") {
  auto& reg = OpRegistry::global();
  OpDef d;
  d.name = "test_double";
  d.min_inputs = d.max_inputs = 1;
  d.infer = [](std::span<const TensorInfo> in, const NodeAttrs&, const Shape&) { return in[0]; };
  uint32_t id = reg.add(d);
  CHECK(id >= RLX_OP_CUSTOM_BASE);
  CHECK(reg.get(id).name == "test_double");
  CHECK(reg.find("test_double")->id == id);
  REQUIRE_THROWS_WITH(reg.add(d), Catch::Contains("already registered"));
  OpDef clash = d;
  clash.name = "matmul";
  REQUIRE_THROWS_WITH(reg.add(clash), Catch::Contains("already registered"));
  OpDef no_infer;
  no_infer.name = "test_no_infer";
  REQUIRE_THROWS_WITH(reg.add(no_infer), Catch::Contains("shape inference"));
}

TEST_CASE("shape inference for the built-in ops", "[ops]") {
  auto& reg = OpRegistry::global();
  auto infer = [&](uint32_t op, std::vector<TensorInfo> in, NodeAttrs a = {}, Shape hint = {}) {
    return reg.get(op).infer(in, a, hint);
  };
  TensorInfo x{RLX_F32, {2, 3, 8}};
  CHECK(infer(RLX_OP_MATMUL, {x, {RLX_F32, {5, 8}}}).shape == Shape{2, 3, 5});
  TensorInfo x32{RLX_F32, {3, 32}};
  CHECK(infer(RLX_OP_MATMUL, {x32, {RLX_Q8_0, {5, 32}}}).shape == Shape{3, 5});  // packed weight
  CHECK_THROWS_WITH(infer(RLX_OP_MATMUL, {x, {RLX_Q8_0, {5, 8}}}), Catch::Contains("blocks"));
  CHECK_THROWS_WITH(infer(RLX_OP_MATMUL, {x, {RLX_F32, {5, 7}}}), Catch::Contains("[5, 7]"));
  CHECK(infer(RLX_OP_ADD, {x, {RLX_F32, {8}}}).shape == x.shape);  // broadcast over rows
  CHECK_THROWS(infer(RLX_OP_ADD, {x, {RLX_F32, {3}}}));
  CHECK(infer(RLX_OP_EMBED, {{RLX_F32, {100, 16}}, {RLX_I32, {4}}}).shape == Shape{4, 16});
  CHECK_THROWS_WITH(infer(RLX_OP_EMBED, {{RLX_F32, {100, 16}}, {RLX_F32, {4}}}),
                    Catch::Contains("ids must be i32"));
  NodeAttrs rope;
  rope.f[0] = 10000.0f;
  CHECK(infer(RLX_OP_ROPE, {{RLX_F32, {4, 2, 8}}, {RLX_I32, {4}}}, rope).shape == Shape{4, 2, 8});
  rope.i[1] = 3;  // odd rotated dims
  CHECK_THROWS_WITH(infer(RLX_OP_ROPE, {{RLX_F32, {4, 2, 8}}, {RLX_I32, {4}}}, rope),
                    Catch::Contains("even"));
  TensorInfo q{RLX_F32, {3, 8, 16}}, kv{RLX_F32, {10, 2, 16}};
  CHECK(infer(RLX_OP_ATTENTION, {q, kv, kv}).shape == q.shape);
  CHECK_THROWS_WITH(infer(RLX_OP_ATTENTION, {q, {RLX_F32, {10, 3, 16}}, {RLX_F32, {10, 3, 16}}}),
                    Catch::Contains("multiple of kv heads"));
  CHECK(infer(RLX_OP_RESHAPE, {x}, {}, {6, -1}).shape == Shape{6, 8});
  CHECK_THROWS(infer(RLX_OP_RESHAPE, {x}, {}, {5, -1}));
  CHECK(infer(RLX_OP_ARGMAX, {x}).shape == Shape{2, 3});
  CHECK(infer(RLX_OP_ARGMAX, {x}).dtype == RLX_I32);
}
