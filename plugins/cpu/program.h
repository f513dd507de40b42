// A compiled graph: the host's planned rlx_graph_desc copied (the desc only lives for the
// compile call), every node checked against what the kernels support, and the activation arena
// allocated. run() binds the slots, checks every slot tensor fits its buffer, and executes the
// nodes in order on the device's pool.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "../common/graph_check.h"
#include "rlx/plugin_abi.h"

namespace rlx::cpu {

class Buffer;
class Device;

// Why node `node` of `g` cannot run on this backend ("" if it can): op id, arity, dtypes,
// shapes and attributes. Placement (arena / slot bounds) is checked by Program's constructor.
std::string node_problem(const rlx_graph_desc& g, uint32_t node);

class Program {
 public:
  // Throws Error: RLX_ERR_UNSUPPORTED "node N (op): why" for a node the kernels cannot run,
  // RLX_ERR_INVALID for a malformed desc, RLX_ERR_OUT_OF_MEMORY for the arena.
  explicit Program(const rlx_graph_desc& g);
  ~Program();
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;

  // bindings[i] backs slot i. Synchronous; runs of one program are serialized (they share the
  // arena), runs of different programs are not.
  void run(Device& dev, const rlx_binding* bindings, uint32_t n_bindings);

 private:
  struct Node {
    rlx_node_desc desc;  // desc.op_name points into `name`
    std::string name;
  };
  void run_node(Device& dev, uint32_t i);
  uint8_t* addr(uint32_t tensor) const;

  std::vector<rlx_tensor_desc> tensors_;
  std::vector<Node> nodes_;
  std::vector<plugin::SlotUse> slots_;
  std::unique_ptr<Buffer> arena_;

  std::mutex run_mu_;
  std::vector<uint8_t*> slot_base_;  // per run: binding buffer + binding offset
};

}  // namespace rlx::cpu
