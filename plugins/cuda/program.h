// A compiled graph on a cuda device. Compile copies the planned desc, checks every node against
// what the kernels support, and allocates the arena, the matmul scratch (int8 activation
// blocks) and an error word ([node + 1, bad value], zeroed at the start of each run).
//
// A run enqueues one launcher call per node (kernels/kernels.h) on the device's stream, then
// copies the error word back and waits. When a program is run again with the same bindings
// (a decode step: same buffers, new token ids and positions in them), that sequence is
// captured once as a CUDA graph and later runs launch the graph: one launch per step instead of
// one per kernel. New bindings drop the graph. RLX_CUDA_GRAPHS=0 turns graphs off.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "../common/graph_check.h"
#include "gpu.h"
#include "rlx/plugin_abi.h"

namespace rlx::gpu {

class Buffer;
class Device;

// Why node `node` of `g` cannot run on this backend ("" if it can).
std::string node_problem(const rlx_graph_desc& g, uint32_t node);

class Program {
 public:
  // Throws Error: RLX_ERR_UNSUPPORTED "node N (op): why", RLX_ERR_INVALID for a malformed desc,
  // RLX_ERR_OUT_OF_MEMORY for the arena.
  Program(Device& dev, const rlx_graph_desc& g);
  ~Program();
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;

  // bindings[i] backs slot i. Synchronous; runs of one program are serialized.
  void run(const rlx_binding* bindings, uint32_t n_bindings);

 private:
  struct Node {
    rlx_node_desc desc;
    std::string name;
  };

  char* where(uint32_t tensor, const std::vector<char*>& slots) const;
  void enqueue(const std::vector<char*>& slots);  // every node's kernels, then the error word
  void drop_graph();

  Device& dev_;
  std::vector<rlx_tensor_desc> tensors_;
  std::vector<Node> nodes_;
  std::vector<plugin::SlotUse> slots_;
  std::unique_ptr<Buffer> arena_;
  std::unique_ptr<Buffer> scratch_;  // matmul's int8 activations; null when none needs it
  std::unique_ptr<Buffer> err_;      // 2 x u32 on the device
  uint32_t* err_host_ = nullptr;     // pinned copy, read after each run

  std::mutex run_mu_;
  bool use_graphs_ = true;
  std::vector<char*> last_;  // the previous run's slot addresses
  cudaGraphExec_t graph_ = nullptr;
};

}  // namespace rlx::gpu
