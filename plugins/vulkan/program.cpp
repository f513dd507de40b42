#include "program.h"

#include <algorithm>
#include <cstring>

#include "../common/graph_check.h"
#include "buffer.h"
#include "device.h"
#include "error.h"
#include "rlx/quant.h"

namespace rlx::vk {

namespace {

// Shaders index with 32-bit uints.
constexpr int64_t kMaxElems = int64_t{1} << 31;

// numel, rows, describe, node_problem, ...: plugins/common/graph_desc.h, graph_check.h
using namespace plugin;

}  // namespace

// ---- what the kernels support ---------------------------------------------------------------

std::string node_problem(const rlx_graph_desc& g, uint32_t index, bool f64) {
  const NodeRules rules{
      .backend = "vulkan",
      .packed_ok = [](uint32_t dt) { return quant_mode(dt) >= 0; },
      .max_elems = kMaxElems,
      .max_head_dim = 512,
      .rope_missing = f64 ? nullptr : "rope needs shaderFloat64, which this device lacks",
  };
  return plugin::node_problem(g, index, rules);
}

// ---- compile ------------------------------------------------------------------------------

Program::Program(Device& dev, const rlx_graph_desc& g) : dev_(dev) {
  check_desc(g);

  tensors_.assign(g.tensors, g.tensors + g.n_tensors);
  nodes_.resize(g.n_nodes);
  for (uint32_t i = 0; i < g.n_nodes; ++i) {
    const rlx_node_desc& n = g.nodes[i];
    nodes_[i].name = n.op_name ? n.op_name : builtin_op_name(n.op);
    std::string why = node_problem(g, i, dev_.has_f64());
    if (!why.empty()) fail(RLX_ERR_UNSUPPORTED, "node ", i, " (", nodes_[i].name, "): ", why);
    nodes_[i].desc = n;
  }
  for (auto& n : nodes_) n.desc.op_name = n.name.c_str();
  slots_ = check_placement(g, [](uint32_t) { return 4u; });  // kernels address 4-byte words
  check_aliases(g, slots_);

  uint32_t n_kernels = 0;
  for (uint32_t i = 0; i < nodes_.size(); ++i) {
    Node& n = nodes_[i];
    n.kernel = plan_dispatch(n.desc, tensors_.data(), n.dispatch);
    n.dispatch.push.node = i;
    if (n.kernel) {
      dev_.pipeline(n.dispatch.kernel);  // created once per device, then cached
      ++n_kernels;
    }
  }

  VkDevice vkd = dev_.vk();
  try {
    arena_ = std::make_unique<Buffer>(dev_, g.arena_bytes);
    err_ = std::make_unique<Buffer>(dev_, 16, Buffer::Kind::HostVisible);
    if (n_kernels) {
      VkDescriptorPoolSize ps{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, n_kernels * kBindings};
      VkDescriptorPoolCreateInfo pi{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
      pi.maxSets = n_kernels;
      pi.poolSizeCount = 1;
      pi.pPoolSizes = &ps;
      vk_check(vkCreateDescriptorPool(vkd, &pi, nullptr, &desc_pool_), "vkCreateDescriptorPool");
      std::vector<VkDescriptorSetLayout> layouts(n_kernels, dev_.set_layout());
      std::vector<VkDescriptorSet> sets(n_kernels);
      VkDescriptorSetAllocateInfo ai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
      ai.descriptorPool = desc_pool_;
      ai.descriptorSetCount = n_kernels;
      ai.pSetLayouts = layouts.data();
      vk_check(vkAllocateDescriptorSets(vkd, &ai, sets.data()), "vkAllocateDescriptorSets");
      uint32_t s = 0;
      for (Node& n : nodes_)
        if (n.kernel) n.set = sets[s++];
    }
    VkCommandPoolCreateInfo ci{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    ci.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    ci.queueFamilyIndex = dev_.queue_family();
    vk_check(vkCreateCommandPool(vkd, &ci, nullptr, &cmd_pool_), "vkCreateCommandPool");
    VkCommandBufferAllocateInfo cai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    cai.commandPool = cmd_pool_;
    cai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    cai.commandBufferCount = 1;
    vk_check(vkAllocateCommandBuffers(vkd, &cai, &cmd_), "vkAllocateCommandBuffers");
    VkFenceCreateInfo fi{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    vk_check(vkCreateFence(vkd, &fi, nullptr, &fence_), "vkCreateFence");
  } catch (...) {
    release();
    throw;
  }
}

Program::~Program() { release(); }

void Program::release() {
  VkDevice vkd = dev_.vk();
  // run() always waits for its fence, so nothing of ours is in flight here.
  if (fence_) vkDestroyFence(vkd, fence_, nullptr);
  if (cmd_pool_) vkDestroyCommandPool(vkd, cmd_pool_, nullptr);
  if (desc_pool_) vkDestroyDescriptorPool(vkd, desc_pool_, nullptr);
  fence_ = VK_NULL_HANDLE;
  cmd_pool_ = VK_NULL_HANDLE;
  desc_pool_ = VK_NULL_HANDLE;
  err_.reset();
  arena_.reset();
}

// ---- run ----------------------------------------------------------------------------------

Program::Bound Program::where(uint32_t tensor, const std::vector<Bound>& slots) const {
  const rlx_tensor_desc& d = tensors_[tensor];
  Bound b = d.storage == RLX_STORAGE_ARENA
                ? Bound{arena_->vk(), arena_->serial(), 0, arena_->size()}
                : slots[d.slot];
  b.offset += d.offset;  // absolute byte offset of the tensor in b.buf
  return b;
}

void Program::bind(const std::vector<Bound>& slots) {
  const uint64_t max_range = dev_.props().limits.maxStorageBufferRange;
  auto elem_offset = [&](uint32_t tensor) -> uint32_t {
    Bound b = where(tensor, slots);
    const uint64_t end = b.offset + tensors_[tensor].nbytes;
    const uint32_t dt = tensors_[tensor].dtype;
    const bool blocks = quant_mode(dt) >= 0;  // GGUF blocks: byte offsets and byte indices
    const uint64_t size = blocks ? 1 : dt == RLX_F16 || dt == RLX_BF16 ? 2 : 4;  // 16-bit: halves
    if (end / size > UINT32_MAX)
      fail(RLX_ERR_UNSUPPORTED, "tensor ", tensor, " ends at byte ", end,
           " of its buffer: past what 32-bit shader indices reach");
    return static_cast<uint32_t>(blocks ? b.offset : b.offset / 4);
  };
  // Descriptor sets: every binding is a whole buffer; offsets go in the push constants.
  std::vector<VkDescriptorBufferInfo> infos;
  std::vector<VkWriteDescriptorSet> writes;
  infos.reserve(nodes_.size() * kBindings);
  for (uint32_t i = 0; i < nodes_.size(); ++i) {
    Node& n = nodes_[i];
    if (!n.kernel) continue;
    for (uint32_t k = 0; k < 3; ++k)
      n.dispatch.push.o_in[k] = k < n.desc.n_inputs ? elem_offset(n.desc.inputs[k]) : 0;
    n.dispatch.push.o_in3 = n.desc.n_inputs > 3 ? elem_offset(n.desc.inputs[3]) : 0;
    n.dispatch.push.o_out = elem_offset(n.desc.output);
    for (uint32_t bnd = 0; bnd < kBindings; ++bnd) {
      VkBuffer buf = arena_->vk();  // unused inputs: any valid buffer
      if (bnd < 3 && bnd < n.desc.n_inputs) buf = where(n.desc.inputs[bnd], slots).buf;
      if (bnd == kIn3Binding && n.desc.n_inputs > 3) buf = where(n.desc.inputs[3], slots).buf;
      if (bnd == kOutBinding) buf = where(n.desc.output, slots).buf;
      if (bnd == kErrBinding) buf = err_->vk();
      infos.push_back({buf, 0, VK_WHOLE_SIZE});
      VkWriteDescriptorSet w{VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
      w.dstSet = n.set;
      w.dstBinding = bnd;
      w.descriptorCount = 1;
      w.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
      w.pBufferInfo = &infos.back();
      writes.push_back(w);
    }
  }
  for (const Bound& b : slots)
    if (b.buf && b.size > max_range)
      fail(RLX_ERR_UNSUPPORTED, "a ", b.size, "-byte buffer is bound, but this device's ",
           "maxStorageBufferRange is ", max_range);
  if (arena_->size() > max_range)
    fail(RLX_ERR_UNSUPPORTED, "the ", arena_->size(), "-byte arena exceeds this device's ",
         "maxStorageBufferRange ", max_range);
  if (!writes.empty())
    vkUpdateDescriptorSets(dev_.vk(), static_cast<uint32_t>(writes.size()), writes.data(), 0,
                           nullptr);

  // Record. Hazards are tracked by byte range per buffer since the last barrier.
  struct Range {
    VkBuffer buf;
    uint64_t begin, end;
  };
  std::vector<Range> written, read;
  auto overlaps = [](const std::vector<Range>& v, const Range& r) {
    for (const Range& x : v)
      if (x.buf == r.buf && x.begin < r.end && r.begin < x.end) return true;
    return false;
  };
  auto range = [&](uint32_t tensor) {
    Bound b = where(tensor, slots);
    return Range{b.buf, b.offset, b.offset + tensors_[tensor].nbytes};
  };

  vk_check(vkResetCommandBuffer(cmd_, 0), "vkResetCommandBuffer");
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  vk_check(vkBeginCommandBuffer(cmd_, &bi), "vkBeginCommandBuffer");
  full_barrier(cmd_);  // uploads and earlier runs are visible
  VkPipeline bound_pipe = VK_NULL_HANDLE;
  for (const Node& n : nodes_) {
    if (!n.kernel || n.dispatch.groups_x == 0) continue;
    bool hazard = false;
    for (uint32_t k = 0; k < n.desc.n_inputs && !hazard; ++k)
      hazard = overlaps(written, range(n.desc.inputs[k]));  // read after write
    const Range out = range(n.desc.output);
    hazard = hazard || overlaps(written, out) || overlaps(read, out);  // WAW, WAR
    if (hazard) {
      full_barrier(cmd_);
      written.clear();
      read.clear();
    }
    for (uint32_t k = 0; k < n.desc.n_inputs; ++k) read.push_back(range(n.desc.inputs[k]));
    written.push_back(out);

    VkPipeline pipe = dev_.pipeline(n.dispatch.kernel);
    if (pipe != bound_pipe) {
      vkCmdBindPipeline(cmd_, VK_PIPELINE_BIND_POINT_COMPUTE, pipe);
      bound_pipe = pipe;
    }
    vkCmdBindDescriptorSets(cmd_, VK_PIPELINE_BIND_POINT_COMPUTE, dev_.pipeline_layout(), 0, 1,
                            &n.set, 0, nullptr);
    vkCmdPushConstants(cmd_, dev_.pipeline_layout(), VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(Push),
                       &n.dispatch.push);
    vkCmdDispatch(cmd_, n.dispatch.groups_x, n.dispatch.groups_y, 1);
  }
  // The host reads the error word after the fence.
  VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
  vkCmdPipelineBarrier(cmd_, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1,
                       &mb, 0, nullptr, 0, nullptr);
  vk_check(vkEndCommandBuffer(cmd_), "vkEndCommandBuffer");
}

void Program::run(const rlx_binding* bindings, uint32_t n_bindings) {
  std::lock_guard lk(run_mu_);
  const std::vector<Buffer*> bufs = bound_buffers<Buffer>(
      bindings, n_bindings, slots_, tensors_.data(),
      [&](const rlx_buffer* h) -> Buffer& { return dev_.buffer(h); });
  std::vector<Bound> cur(n_bindings);
  for (uint32_t s = 0; s < n_bindings; ++s) {
    const rlx_binding& b = bindings[s];
    Buffer* buf = bufs[s];
    if (b.offset % 4 != 0)
      fail(RLX_ERR_INVALID, "slot ", s, ": binding offset ", b.offset,
           " is not a multiple of 4 (the element size)");
    cur[s] = Bound{buf->vk(), buf->serial(), b.offset, buf->size()};
  }
  if (!recorded_ || cur != last_) {
    recorded_ = false;
    bind(cur);
    last_ = cur;
    recorded_ = true;
  }
  std::memset(err_->mapped(), 0, 16);
  VkDevice vkd = dev_.vk();
  vk_check(vkResetFences(vkd, 1, &fence_), "vkResetFences");
  dev_.submit(cmd_, fence_);
  vk_check(vkWaitForFences(vkd, 1, &fence_, VK_TRUE, UINT64_MAX), "vkWaitForFences");
  uint32_t e[2];
  std::memcpy(e, err_->mapped(), sizeof e);
  if (e[0] != 0) {
    const uint32_t i = e[0] - 1;
    const rlx_node_desc& n = nodes_[i < nodes_.size() ? i : 0].desc;
    if (n.op == RLX_OP_KV_STORE)
      fail(RLX_ERR_INVALID, "node ", i, " (", n.op_name, "): position ", static_cast<int32_t>(e[1]),
           " outside the cache's [0, ", tensors_[n.inputs[0]].shape[0],
           ") rows; the cache is unchanged");
    fail(RLX_ERR_INVALID, "node ", i, " (", n.op_name, "): id ", static_cast<int32_t>(e[1]),
         " is outside the table's [0, ", tensors_[n.inputs[0]].shape[0], ") rows");
  }
}

}  // namespace rlx::vk
