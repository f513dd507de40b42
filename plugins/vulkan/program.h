// A compiled graph on a vulkan device. Compile copies the planned desc, checks every node
// against what the kernels support, allocates the arena (device-local) and an error word
// (host-visible), creates (or reuses from the device's cache) the pipelines, one descriptor set
// per kernel node, and one command buffer.
//
// The command buffer holds every dispatch, with a memory barrier only where a dispatch touches
// what an earlier one since the last barrier wrote (or writes what one read). It is recorded at
// the first run and re-recorded only when the bindings change (descriptor sets reference
// VkBuffers, and slot offsets go into push constants); a run with the same bindings just
// resubmits it and waits on one fence.
#pragma once

#include <vulkan/vulkan.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "../common/graph_check.h"
#include "kernels/kernels.h"
#include "rlx/plugin_abi.h"

namespace rlx::vk {

class Buffer;
class Device;

// Why node `node` of `g` cannot run on this backend ("" if it can). `f64`: the device has
// shaderFloat64 (rope needs it).
std::string node_problem(const rlx_graph_desc& g, uint32_t node, bool f64 = true);

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
    bool kernel = false;  // false: a view, nothing to dispatch
    Dispatch dispatch;
    VkDescriptorSet set = VK_NULL_HANDLE;
  };
  struct Bound {  // where a slot lives this run
    VkBuffer buf = VK_NULL_HANDLE;
    uint64_t serial = 0;  // Buffer::serial(): a freed-and-reused VkBuffer handle still differs
    uint64_t offset = 0;
    uint64_t size = 0;
    bool operator==(const Bound&) const = default;
  };

  void release();  // destroys what was created; safe to call twice
  void bind(const std::vector<Bound>& slots);  // update the sets and re-record
  Bound where(uint32_t tensor, const std::vector<Bound>& slots) const;

  Device& dev_;
  std::vector<rlx_tensor_desc> tensors_;
  std::vector<Node> nodes_;
  std::vector<plugin::SlotUse> slots_;
  std::unique_ptr<Buffer> arena_;
  std::unique_ptr<Buffer> err_;  // [node + 1, bad value], zeroed before each run
  VkDescriptorPool desc_pool_ = VK_NULL_HANDLE;
  VkCommandPool cmd_pool_ = VK_NULL_HANDLE;
  VkCommandBuffer cmd_ = VK_NULL_HANDLE;
  VkFence fence_ = VK_NULL_HANDLE;

  std::mutex run_mu_;
  bool recorded_ = false;
  std::vector<Bound> last_;  // the bindings the command buffer was recorded for
};

}  // namespace rlx::vk
