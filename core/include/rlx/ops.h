// The op registry: every op's arity, in-place rule and shape/dtype inference, declared once.
// Built-in ops come from ops.def; plugins may add named ops at run time.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rlx/dtype.h"

namespace rlx {

using Shape = std::vector<int64_t>;

struct TensorInfo {
  DType dtype = RLX_F32;
  Shape shape;
  int64_t elems() const;
};

struct NodeAttrs {
  std::array<int64_t, RLX_MAX_ATTRS> i{};
  std::array<float, RLX_MAX_ATTRS> f{};
};

std::string shape_str(const Shape& s);      // "[2, 3]"
std::string info_str(const TensorInfo& t);  // "f32[2, 3]"

// Shape/dtype inference. Throws rlx::Error with a message about the inputs only; the graph
// builder adds the op, node and shapes around it. `out_hint` is the shape the builder asked for
// (used by reshape), empty otherwise.
using InferFn = std::function<TensorInfo(std::span<const TensorInfo> in, const NodeAttrs& attrs,
                                         const Shape& out_hint)>;

struct OpDef {
  uint32_t id = 0;
  std::string name;
  int min_inputs = 0;
  int max_inputs = 0;
  rlx_op_alias alias = RLX_ALIAS_NONE;  // how the output's storage relates to input 0's
  InferFn infer;
  std::string owner;  // the plugin that registered it; empty for built-in ops

  // The output is input 0's storage (a view or an update): the planner never gives it its own.
  bool aliases_input0() const { return alias == RLX_ALIAS_VIEW || alias == RLX_ALIAS_UPDATE; }
};

class OpRegistry {
 public:
  static OpRegistry& global();

  const OpDef& get(uint32_t id) const;             // throws for an unknown id
  const OpDef* find(std::string_view name) const;  // nullptr if unknown
  // Adds a custom op and returns its id (>= RLX_OP_CUSTOM_BASE). Throws on a duplicate name.
  uint32_t add(OpDef def);
  // Removes every op `owner` registered (its inference code is about to be unmapped). Their ids
  // are never reused; get() on one says which plugin it belonged to.
  void remove_owned_by(const std::string& owner);
  std::vector<const OpDef*> all() const;

 private:
  OpRegistry();
  mutable std::mutex mu_;
  std::vector<OpDef> builtin_;  // index == op id; custom ops live in ops.cpp
};

}  // namespace rlx
