#include "rlx/graph.h"

#include <string>

#include "rlx/error.h"

namespace rlx {

int Graph::slot_of(TensorId t) const {
  for (size_t i = 0; i < slots.size(); ++i)
    if (slots[i] == t) return static_cast<int>(i);
  return -1;
}

uint32_t Graph::slot_named(std::string_view name) const {
  for (size_t i = 0; i < slots.size(); ++i)
    if (tensors[slots[i]].name == name) return static_cast<uint32_t>(i);
  fail("graph has no input, weight or output named '{}'", name);
}

TensorId GraphBuilder::add_tensor(std::string name, TensorInfo info, TensorKind kind) {
  if (info.shape.empty() || info.shape.size() > RLX_MAX_DIMS)
    fail("tensor '{}' has {} dims; rlx tensors have 1 to {}", name, info.shape.size(),
         RLX_MAX_DIMS);
  for (int64_t d : info.shape)
    if (d <= 0)
      fail("tensor '{}' has shape {}: every dim must be > 0", name, shape_str(info.shape));
  if (!dtype_is_known(info.dtype)) fail("tensor '{}' has unknown dtype id {}", name, +info.dtype);
  Tensor t;
  t.name = std::move(name);
  t.info = std::move(info);
  t.kind = kind;
  g_.tensors.push_back(std::move(t));
  auto id = static_cast<TensorId>(g_.tensors.size() - 1);
  if (kind != TensorKind::Intermediate) g_.slots.push_back(id);
  return id;
}

TensorId GraphBuilder::input(std::string name, DType dtype, Shape shape) {
  return add_tensor(std::move(name), TensorInfo{dtype, std::move(shape)}, TensorKind::Input);
}

TensorId GraphBuilder::weight(std::string name, DType dtype, Shape shape) {
  return add_tensor(std::move(name), TensorInfo{dtype, std::move(shape)}, TensorKind::Weight);
}

TensorId GraphBuilder::op(std::string_view op_name, std::initializer_list<TensorId> inputs,
                          const NodeAttrs& attrs, std::string name, Shape out_hint) {
  const OpDef* def = OpRegistry::global().find(op_name);
  if (!def) fail("unknown op '{}' (node {} '{}')", op_name, g_.nodes.size(), name);
  return op(def->id, std::vector<TensorId>(inputs), attrs, std::move(name), std::move(out_hint));
}

TensorId GraphBuilder::op(uint32_t op_id, std::vector<TensorId> inputs, const NodeAttrs& attrs,
                          std::string name, Shape out_hint) {
  const OpDef& def = OpRegistry::global().get(op_id);
  size_t node_index = g_.nodes.size();
  if (name.empty()) name = fmt::format("{}_{}", def.name, node_index);
  auto where = [&] { return fmt::format("op '{}' at node {} ('{}')", def.name, node_index, name); };

  int n = static_cast<int>(inputs.size());
  if (n < def.min_inputs || n > def.max_inputs) {
    if (def.min_inputs == def.max_inputs)
      fail("{}: takes {} inputs, got {}", where(), def.min_inputs, n);
    fail("{}: takes {} to {} inputs, got {}", where(), def.min_inputs, def.max_inputs, n);
  }
  std::vector<TensorInfo> in;
  std::vector<std::string> described;
  for (TensorId t : inputs) {
    if (t >= g_.tensors.size()) fail("{}: input tensor id {} does not exist", where(), t);
    in.push_back(g_.tensors[t].info);
    described.push_back(fmt::format("'{}' {}", g_.tensors[t].name, info_str(g_.tensors[t].info)));
  }
  TensorInfo out;
  try {
    out = def.infer(in, attrs, out_hint);
  } catch (const Error& e) {
    fail("{}: {} (inputs: {})", where(), e.what(), fmt::join(described, ", "));
  }
  TensorId id = add_tensor(name, std::move(out), TensorKind::Intermediate);
  g_.tensors[id].producer = static_cast<int>(node_index);
  g_.nodes.push_back(Node{op_id, std::move(name), std::move(inputs), id, attrs});
  return id;
}

TensorId GraphBuilder::add(TensorId a, TensorId b, std::string name) {
  return op(RLX_OP_ADD, {a, b}, {}, std::move(name));
}

TensorId GraphBuilder::mul(TensorId a, TensorId b, std::string name) {
  return op(RLX_OP_MUL, {a, b}, {}, std::move(name));
}

TensorId GraphBuilder::matmul(TensorId x, TensorId w, std::string name) {
  return op(RLX_OP_MATMUL, {x, w}, {}, std::move(name));
}

TensorId GraphBuilder::rms_norm(TensorId x, TensorId w, float eps, std::string name) {
  NodeAttrs a;
  a.f[0] = eps;
  return op(RLX_OP_RMS_NORM, {x, w}, a, std::move(name));
}

TensorId GraphBuilder::reshape(TensorId a, Shape shape, std::string name) {
  return op(RLX_OP_RESHAPE, {a}, {}, std::move(name), std::move(shape));
}

void GraphBuilder::output(TensorId t, std::string name) {
  if (t >= g_.tensors.size()) fail("output: tensor id {} does not exist", t);
  Tensor& tensor = g_.tensors[t];
  if (tensor.kind != TensorKind::Intermediate)
    fail("output '{}': '{}' is a graph {}, not a computed tensor", name, tensor.name,
         tensor.kind == TensorKind::Input ? "input" : "weight");
  if (tensor.is_output) fail("tensor '{}' is already an output", tensor.name);
  // A view or an update shares its source's storage, so it cannot be bound to a slot of its own
  // when the source already is one (an input, a weight, or another output).
  TensorId root = data_root(t);
  const TensorInfo& ri = g_.tensors[root].info;
  if (root != t &&
      dtype_bytes(ri.dtype, ri.elems()) != dtype_bytes(tensor.info.dtype, tensor.info.elems()))
    fail(
        "output '{}': '{}' is a slice of '{}'; an output needs storage of its own, so output a "
        "tensor computed from the slice",
        name.empty() ? tensor.name : name, tensor.name, g_.tensors[root].name);
  for (TensorId o = 0; o < g_.tensors.size(); ++o) {
    const Tensor& other = g_.tensors[o];
    bool bound = other.is_output || (o == root && other.kind != TensorKind::Intermediate);
    if (o != t && bound && data_root(o) == root)
      fail(
          "output '{}': '{}' is a reshape of '{}', which is already bound as a graph {}; mark "
          "only one of them as an output",
          name.empty() ? tensor.name : name, tensor.name, other.name,
          other.is_output ? "output" : "input or weight");
  }
  if (!name.empty()) tensor.name = std::move(name);
  tensor.is_output = true;
  g_.slots.push_back(t);
}

// Follows views and updates back to the tensor whose storage holds the data.
TensorId GraphBuilder::data_root(TensorId t) const {
  while (g_.tensors[t].producer >= 0) {
    const Node& n = g_.nodes[g_.tensors[t].producer];
    if (!OpRegistry::global().get(n.op).aliases_input0()) break;
    t = n.inputs[0];
  }
  return t;
}

const TensorInfo& GraphBuilder::info(TensorId t) const {
  if (t >= g_.tensors.size()) fail("tensor id {} does not exist", t);
  return g_.tensors[t].info;
}

Graph GraphBuilder::finish() {
  bool any_output = false;
  for (const Tensor& t : g_.tensors) any_output |= t.is_output;
  if (!any_output) fail("graph has no outputs: mark at least one tensor with output()");
  Graph g = std::move(g_);
  g_ = Graph{};
  return g;
}

}  // namespace rlx
