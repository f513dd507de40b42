// Graph IR: tensors and nodes in execution order, built with GraphBuilder, which validates each
// node against the op registry as it is added. Model plugins build their forward pass with it.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "rlx/ops.h"

namespace rlx {

using TensorId = uint32_t;

enum class TensorKind {
  Input,         // bound at run time (token ids, positions, activations fed in)
  Weight,        // bound at run time to the device's single copy of the weights
  Intermediate,  // produced by a node; lives in the program's arena unless it is an output
};

struct Tensor {
  std::string name;
  TensorInfo info;
  TensorKind kind = TensorKind::Intermediate;
  bool is_output = false;
  int producer = -1;  // node index, -1 for inputs and weights
};

struct Node {
  uint32_t op = 0;
  std::string name;
  std::vector<TensorId> inputs;
  TensorId output = 0;
  NodeAttrs attrs;
};

struct Graph {
  std::vector<Tensor> tensors;
  std::vector<Node> nodes;  // topological (execution) order
  // Run-time slots in binding order: inputs, weights and outputs in the order they were
  // declared (outputs: marked with output()).
  std::vector<TensorId> slots;

  int slot_of(TensorId t) const;  // -1 if the tensor is not slot-bound
  // The slot index of the tensor called `name`; throws naming the missing tensor.
  uint32_t slot_named(std::string_view name) const;
};

class GraphBuilder {
 public:
  TensorId input(std::string name, DType dtype, Shape shape);
  TensorId weight(std::string name, DType dtype, Shape shape);

  // Adds a node; validates arity, dtypes and shapes through the registry. On failure throws an
  // rlx::Error naming the op, the node (index and name) and every input's dtype and shape.
  TensorId op(std::string_view op_name, std::initializer_list<TensorId> inputs,
              const NodeAttrs& attrs = {}, std::string name = {}, Shape out_hint = {});
  TensorId op(uint32_t op_id, std::vector<TensorId> inputs, const NodeAttrs& attrs = {},
              std::string name = {}, Shape out_hint = {});

  // Convenience wrappers with shape comments at the call site.
  TensorId add(TensorId a, TensorId b, std::string name = {});
  TensorId mul(TensorId a, TensorId b, std::string name = {});
  TensorId matmul(TensorId x, TensorId w, std::string name = {});
  TensorId rms_norm(TensorId x, TensorId w, float eps, std::string name = {});
  TensorId reshape(TensorId a, Shape shape, std::string name = {});

  void output(TensorId t, std::string name = {});
  const TensorInfo& info(TensorId t) const;

  // Returns the graph; throws if it has no outputs.
  Graph finish();

 private:
  TensorId add_tensor(std::string name, TensorInfo info, TensorKind kind);
  TensorId data_root(TensorId t) const;
  Graph g_;
};

}  // namespace rlx
