#include "program.h"

#include <algorithm>
#include <cstring>

#include "../common/graph_desc.h"
#include "buffer.h"
#include "device.h"
#include "error.h"
#include "rlx/quant.h"

namespace rlx::vk {

namespace {

struct OpInfo {
  const char* name;
  uint32_t min_in, max_in;
};
constexpr OpInfo kOps[] = {
#define RLX_OP(id, name, min_in, max_in, alias) {name, min_in, max_in},
#include "rlx/ops.def"
#undef RLX_OP
};
static_assert(sizeof kOps / sizeof kOps[0] == RLX_OP_BUILTIN_COUNT);

// Shaders index with 32-bit uints.
constexpr int64_t kMaxElems = int64_t{1} << 31;

// numel, rows, describe, ...: plugins/common/graph_desc.h
using namespace plugin;

}  // namespace

// ---- what the kernels support ---------------------------------------------------------------

std::string node_problem(const rlx_graph_desc& g, uint32_t index, bool f64) {
  if (index >= g.n_nodes || !g.nodes) return cat("node index ", index, " out of range");
  const rlx_node_desc& n = g.nodes[index];
  if (n.op >= RLX_OP_BUILTIN_COUNT) return cat("op id ", n.op, " is not a built-in op");
  const OpInfo& op = kOps[n.op];
  switch (n.op) {
    case RLX_OP_ADD:
    case RLX_OP_MUL:
    case RLX_OP_SCALE:
    case RLX_OP_SILU:
    case RLX_OP_SILU_MUL:
    case RLX_OP_SOFTMAX:
    case RLX_OP_RMS_NORM:
    case RLX_OP_MATMUL:
    case RLX_OP_EMBED:
    case RLX_OP_RESHAPE:
    case RLX_OP_SLICE:
    case RLX_OP_ATTENTION:
    case RLX_OP_KV_STORE:
    case RLX_OP_ARGMAX: break;
    case RLX_OP_ROPE:
      if (!f64) return "rope needs shaderFloat64, which this device lacks";
      break;
    default: return cat("op ", op.name, " has no vulkan kernel yet");
  }
  if (n.n_inputs < op.min_in || n.n_inputs > op.max_in)
    return cat(n.n_inputs, " inputs, expected ", op.min_in,
               op.min_in == op.max_in ? "" : cat(" to ", op.max_in));
  if (!g.tensors) return "graph has no tensor table";
  for (uint32_t k = 0; k < n.n_inputs; ++k)
    if (n.inputs[k] >= g.n_tensors)
      return cat("input ", k, " is tensor ", n.inputs[k], " of ", g.n_tensors);
  if (n.output >= g.n_tensors) return cat("output is tensor ", n.output, " of ", g.n_tensors);

  const rlx_tensor_desc* in[RLX_MAX_INPUTS] = {};
  for (uint32_t k = 0; k < n.n_inputs; ++k) in[k] = &g.tensors[n.inputs[k]];
  const rlx_tensor_desc& out = g.tensors[n.output];

  // f32 everywhere (i32 for embed's ids); the views accept i32 too.
  // `dt` RLX_F16 stands for "a weight": f32, f16 or bf16.
  auto tensor_problem = [](const rlx_tensor_desc& t, uint32_t dt, const char* role) {
    int64_t ne = numel(t);
    if (ne < 0) return cat(role, " has a malformed shape (ndim ", t.ndim, ")");
    if (dt == RLX_F16) {
      if (quant_mode(t.dtype) >= 0) {  // GGUF blocks along the last dim, read in place
        const int64_t be = quant::block_elems(static_cast<rlx_dtype>(t.dtype));
        const int64_t rb = quant::row_bytes(static_cast<rlx_dtype>(t.dtype), last_dim(t));
        if (t.ndim == 0 || rb < 0)
          return cat(role, " ", describe(t), ": the last dim must be a multiple of ", be);
        if (t.nbytes != static_cast<uint64_t>(rows(t) * rb))
          return cat(role, " ", describe(t), " has nbytes ", t.nbytes, ", expected ", rows(t) * rb);
        if (ne >= kMaxElems) return cat(role, " ", describe(t), " has 2^31 or more elements");
        return std::string();
      }
      if (t.dtype != RLX_F32 && t.dtype != RLX_F16 && t.dtype != RLX_BF16)
        return cat(role, " is ", describe(t), ", expected f32, f16, bf16 or a GGUF block type");
      dt = t.dtype;
    } else if (t.dtype != dt) {
      return cat(role, " is ", describe(t), ", expected ", dtype_name(dt));
    }
    const int64_t size = dt == RLX_F32 || dt == RLX_I32 ? 4 : 2;
    if (ne >= kMaxElems) return cat(role, " ", describe(t), " has 2^31 or more elements");
    if (t.nbytes != static_cast<uint64_t>(ne * size))
      return cat(role, " ", describe(t), " has nbytes ", t.nbytes, ", expected ", ne * size);
    return std::string();
  };
  const bool is_view = n.op == RLX_OP_RESHAPE || n.op == RLX_OP_SLICE;
  const uint32_t view_dt = in[0]->dtype == RLX_I32 ? RLX_I32 : RLX_F32;
  for (uint32_t k = 0; k < n.n_inputs; ++k) {
    const bool is_i32 = (n.op == RLX_OP_EMBED && k == 1) || (n.op == RLX_OP_ROPE && k == 1) ||
                        (n.op == RLX_OP_ATTENTION && k == 3) || (n.op == RLX_OP_KV_STORE && k == 2);
    const bool is_weight = (n.op == RLX_OP_MATMUL && k == 1) || (n.op == RLX_OP_EMBED && k == 0);
    uint32_t dt = is_view ? view_dt : is_i32 ? RLX_I32 : is_weight ? RLX_F16 : RLX_F32;
    if (auto p = tensor_problem(*in[k], dt, cat("input ", k).c_str()); !p.empty()) return p;
  }
  const uint32_t out_dt = is_view ? view_dt : n.op == RLX_OP_ARGMAX ? RLX_I32 : RLX_F32;
  if (auto p = tensor_problem(out, out_dt, "output"); !p.empty()) return p;

  const rlx_tensor_desc& a = *in[0];
  auto shapes = [&] {
    std::string s;
    for (uint32_t k = 0; k < n.n_inputs; ++k) s += cat(k ? ", " : "", describe(*in[k]));
    return s + " -> " + describe(out);
  };
  switch (n.op) {
    case RLX_OP_ADD:
    case RLX_OP_MUL:
      if (!same_shape(a, out) || !trailing_dims_match(a, *in[1]))
        return cat("shapes ", shapes(), ": b must be a's shape or its trailing dims");
      return {};
    case RLX_OP_SCALE:
    case RLX_OP_SILU:
    case RLX_OP_SOFTMAX:
      if (!same_shape(a, out)) return cat("shapes ", shapes(), ": output must be like the input");
      return {};
    case RLX_OP_SILU_MUL:
      if (!same_shape(a, *in[1]) || !same_shape(a, out))
        return cat("shapes ", shapes(), ": gate, up and output must match");
      return {};
    case RLX_OP_RMS_NORM:
      if (!same_shape(a, out) || numel(*in[1]) != last_dim(a))
        return cat("shapes ", shapes(), ": weight must have x's last dim");
      return {};
    case RLX_OP_MATMUL: {
      const rlx_tensor_desc& w = *in[1];
      bool ok = a.ndim >= 1 && w.ndim == 2 && last_dim(a) == w.shape[1] && out.ndim == a.ndim &&
                last_dim(out) == w.shape[0] && rows(out) == rows(a);
      if (!ok) return cat("shapes ", shapes(), ": expected x [.., k] @ w [n, k]^T -> [.., n]");
      return {};
    }
    case RLX_OP_EMBED: {
      const rlx_tensor_desc& ids = *in[1];
      bool ok = a.ndim == 2 && out.ndim == ids.ndim + 1 && last_dim(out) == a.shape[1] &&
                rows(out) == numel(ids);
      if (!ok) return cat("shapes ", shapes(), ": expected table [v, d], ids [s] -> [s, d]");
      return {};
    }
    case RLX_OP_ROPE: {
      if (a.ndim != 3 || !same_shape(a, out))
        return cat("shapes ", shapes(), ": expected x [s, h, d] and an output like x");
      if (numel(*in[1]) != a.shape[0])
        return cat("shapes ", shapes(), ": expected one position per row of x");
      int64_t d = a.shape[2], r = n.iattr[1] == 0 ? d : n.iattr[1];
      if (n.iattr[0] != 0 && n.iattr[0] != 1)
        return cat("mode iattr[0] = ", n.iattr[0], ", expected 0 or 1");
      if (r < 0 || r > d || r % 2 != 0)
        return cat("rotated dims iattr[1] = ", n.iattr[1], ": must be even and <= head dim ", d);
      if (n.n_inputs == 3 && numel(*in[2]) != r / 2)
        return cat("shapes ", shapes(), ": freq_factors must have r/2 = ", r / 2, " values");
      return {};
    }
    case RLX_OP_ATTENTION: {
      const rlx_tensor_desc &k = *in[1], &v = *in[2];
      bool ok = a.ndim == 3 && k.ndim == 3 && same_shape(k, v) && same_shape(a, out) &&
                k.shape[2] == a.shape[2] && k.shape[1] > 0 && a.shape[1] % k.shape[1] == 0;
      if (!ok)
        return cat("shapes ", shapes(),
                   ": expected q [s, hq, d], k and v [t, hkv, d] with hq % hkv == 0");
      if (a.shape[2] > 512) return cat("head dim ", a.shape[2], " > 512 (the kernel's limit)");
      if (n.n_inputs == 4) {  // positions: the attributes are ignored
        if (in[3]->ndim != 1 || in[3]->shape[0] != a.shape[0])
          return cat("shapes ", shapes(), ": expected one position per query row");
        return {};
      }
      if (n.iattr[0] != 0 && n.iattr[0] != 1)
        return cat("causal iattr[0] = ", n.iattr[0], ", expected 0 or 1");
      if (n.iattr[1] < 0 || n.iattr[1] > INT32_MAX / 2)
        return cat("past iattr[1] = ", n.iattr[1], " is negative or too large");
      if (n.iattr[2] < 0 || n.iattr[2] > k.shape[0])
        return cat("kv_len iattr[2] = ", n.iattr[2], " outside [0, ", k.shape[0], "]");
      return {};
    }
    case RLX_OP_KV_STORE: {
      const rlx_tensor_desc &x = *in[1], &pos = *in[2];
      bool ok = a.ndim == 3 && x.ndim == 3 && x.shape[1] == a.shape[1] &&
                x.shape[2] == a.shape[2] && pos.ndim == 1 && pos.shape[0] == x.shape[0] &&
                same_shape(a, out);
      if (!ok)
        return cat("shapes ", shapes(),
                   ": expected cache [t, h, d], x [s, h, d], pos [s] -> the cache");
      return {};
    }
    case RLX_OP_ARGMAX:
      if (a.ndim < 1 || numel(out) != rows(a) || last_dim(a) < 1)
        return cat("shapes ", shapes(), ": expected a [.., n] (n > 0) -> [..]");
      return {};
    case RLX_OP_RESHAPE:
      if (a.dtype != out.dtype || a.nbytes != out.nbytes)
        return cat("shapes ", shapes(), ": a reshape keeps dtype and element count");
      return {};
    case RLX_OP_SLICE: {
      const int64_t start = n.iattr[0], count = n.iattr[1];
      if (a.ndim < 1 || start < 0 || count <= 0 || start > a.shape[0] - count)
        return cat("rows [", start, ", ", start + count, ") (iattr[0], iattr[1]) outside [0, ",
                   a.ndim ? a.shape[0] : 0, ")");
      bool ok = out.ndim == a.ndim && out.shape[0] == count;
      for (uint32_t i = 1; ok && i < a.ndim; ++i) ok = out.shape[i] == a.shape[i];
      if (!ok) return cat("shapes ", shapes(), ": expected x [n, ..] -> [", count, ", ..]");
      return {};
    }
  }
  return cat("op ", op.name, " has no vulkan kernel yet");
}

// ---- compile ------------------------------------------------------------------------------

Program::Program(Device& dev, const rlx_graph_desc& g) : dev_(dev) {
  if (g.struct_size < offsetof(rlx_graph_desc, arena_alignment) + sizeof g.arena_alignment)
    fail(RLX_ERR_INVALID, "graph desc struct_size ", g.struct_size, " is smaller than this ABI's ",
         sizeof(rlx_graph_desc));
  if ((g.n_tensors && !g.tensors) || (g.n_nodes && !g.nodes))
    fail(RLX_ERR_INVALID, "graph desc has counts but null tables");

  tensors_.assign(g.tensors, g.tensors + g.n_tensors);
  nodes_.resize(g.n_nodes);
  for (uint32_t i = 0; i < g.n_nodes; ++i) {
    const rlx_node_desc& n = g.nodes[i];
    nodes_[i].name = n.op_name ? n.op_name : n.op < RLX_OP_BUILTIN_COUNT ? kOps[n.op].name : "?";
    std::string why = node_problem(g, i, dev_.has_f64());
    if (!why.empty()) fail(RLX_ERR_UNSUPPORTED, "node ", i, " (", nodes_[i].name, "): ", why);
    nodes_[i].desc = n;
  }
  for (auto& n : nodes_) n.desc.op_name = n.name.c_str();
  slots_.resize(g.n_slots);
  check_placement(g);
  check_aliases();

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

void Program::check_placement(const rlx_graph_desc& g) {
  for (uint32_t t = 0; t < tensors_.size(); ++t) {
    const rlx_tensor_desc& d = tensors_[t];
    uint64_t end;
    if (__builtin_add_overflow(d.offset, d.nbytes, &end))
      fail(RLX_ERR_INVALID, "tensor ", t, ": offset ", d.offset, " + nbytes ", d.nbytes,
           " overflows");
    // Shaders address 4-byte words (16-bit weights are read two to a word).
    if (d.offset % 4 != 0)
      fail(RLX_ERR_INVALID, "tensor ", t, ": offset ", d.offset, " is not a multiple of 4");
    if (d.storage == RLX_STORAGE_ARENA) {
      if (end > g.arena_bytes)
        fail(RLX_ERR_INVALID, "tensor ", t, ": arena offset ", d.offset, " + ", d.nbytes,
             " bytes exceeds the arena (", g.arena_bytes, " bytes)");
    } else if (d.storage == RLX_STORAGE_SLOT) {
      if (d.slot >= g.n_slots)
        fail(RLX_ERR_INVALID, "tensor ", t, ": slot ", d.slot, " of ", g.n_slots);
      SlotUse& s = slots_[d.slot];
      if (!s.used || end > s.end) {
        s.end = end;
        s.tensor = t;
      }
      s.used = true;
    } else {
      fail(RLX_ERR_INVALID, "tensor ", t, ": unknown storage ", d.storage);
    }
  }
}

// Views compute nothing and kv_store writes into its cache in place, so their outputs must
// already be input 0's storage (as ops.def says).
void Program::check_aliases() {
  for (uint32_t i = 0; i < nodes_.size(); ++i) {
    const rlx_node_desc& n = nodes_[i].desc;
    if (n.op != RLX_OP_RESHAPE && n.op != RLX_OP_SLICE && n.op != RLX_OP_KV_STORE) continue;
    const rlx_tensor_desc& out = tensors_[n.output];
    const rlx_tensor_desc& in = tensors_[n.inputs[0]];
    uint64_t offset = in.offset;
    if (n.op == RLX_OP_SLICE)
      offset += in.nbytes / static_cast<uint64_t>(in.shape[0]) * static_cast<uint64_t>(n.iattr[0]);
    bool same = out.storage == in.storage && out.offset == offset &&
                (out.storage != RLX_STORAGE_SLOT || out.slot == in.slot);
    if (!same)
      fail(RLX_ERR_INVALID, "node ", i, " (", nodes_[i].name, "): its output (tensor ", n.output,
           ") must be placed on input 0's storage (tensor ", n.inputs[0], ") at byte offset ",
           offset, ", as ops.def's alias column says");
  }
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
  if (n_bindings != slots_.size())
    fail(RLX_ERR_INVALID, "got ", n_bindings, " bindings, the program has ", slots_.size(),
         " slots");
  if (n_bindings && !bindings) fail(RLX_ERR_INVALID, "null bindings array");
  std::vector<Bound> cur(n_bindings);
  for (uint32_t s = 0; s < n_bindings; ++s) {
    const rlx_binding& b = bindings[s];
    if (!b.buffer) fail(RLX_ERR_INVALID, "slot ", s, ": null buffer");
    Buffer* buf;
    try {
      buf = &dev_.buffer(b.buffer);
    } catch (const Error& e) {
      fail(e.status(), "slot ", s, ": ", e.what());
    }
    const SlotUse& u = slots_[s];
    uint64_t need;
    if (__builtin_add_overflow(b.offset, u.end, &need) || need > buf->size()) {
      if (!u.used)
        fail(RLX_ERR_INVALID, "slot ", s, ": binding offset ", b.offset,
             " is past the end of the buffer (", buf->size(), " bytes)");
      const rlx_tensor_desc& t = tensors_[u.tensor];
      fail(RLX_ERR_INVALID, "slot ", s, " (tensor ", u.tensor, " ", describe(t),
           "): binding offset ", b.offset, " + tensor offset ", t.offset, " + ", t.nbytes,
           " bytes exceeds the buffer size ", buf->size());
    }
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
