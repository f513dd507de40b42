#include "kernels.h"

#include <algorithm>

#include "spv_elementwise.h"
#include "spv_embed.h"
#include "spv_matmul.h"
#include "spv_norm.h"

namespace rlx::vk {
namespace {

// Vulkan guarantees at least 65535 workgroups per dimension; every shader grid-strides beyond.
constexpr uint64_t kMaxGroups = 65535;

uint32_t groups(uint64_t items, uint64_t per_group) {
  return static_cast<uint32_t>(std::min<uint64_t>((items + per_group - 1) / per_group, kMaxGroups));
}

uint64_t numel(const rlx_tensor_desc& t) {
  uint64_t n = 1;
  for (uint32_t i = 0; i < t.ndim; ++i) n *= static_cast<uint64_t>(t.shape[i]);
  return n;
}
uint64_t last_dim(const rlx_tensor_desc& t) {
  return t.ndim == 0 ? 1 : static_cast<uint64_t>(t.shape[t.ndim - 1]);
}

}  // namespace

const char* kernel_name(Kernel k) {
  switch (k) {
    case kElementwise: return "elementwise";
    case kNorm: return "norm";
    case kMatmul: return "matmul";
    case kEmbed: return "embed";
    default: return "?";
  }
}

const uint32_t* kernel_spirv(Kernel k, size_t* n_bytes) {
  switch (k) {
    case kElementwise: *n_bytes = sizeof kSpv_elementwise; return kSpv_elementwise;
    case kNorm: *n_bytes = sizeof kSpv_norm; return kSpv_norm;
    case kMatmul: *n_bytes = sizeof kSpv_matmul; return kSpv_matmul;
    case kEmbed: *n_bytes = sizeof kSpv_embed; return kSpv_embed;
    default: *n_bytes = 0; return nullptr;
  }
}

bool plan_dispatch(const rlx_node_desc& n, const rlx_tensor_desc* tensors, Dispatch& d) {
  const rlx_tensor_desc& a = tensors[n.inputs[0]];
  const rlx_tensor_desc& out = tensors[n.output];
  const uint64_t ne = numel(out);
  Push& p = d.push;
  switch (n.op) {
    case RLX_OP_ADD:
    case RLX_OP_MUL:
    case RLX_OP_SCALE:
    case RLX_OP_SILU:
    case RLX_OP_SILU_MUL:
      d.kernel = kElementwise;
      p.mode = n.op == RLX_OP_ADD     ? 0
               : n.op == RLX_OP_MUL   ? 1
               : n.op == RLX_OP_SCALE ? 2
               : n.op == RLX_OP_SILU  ? 3
                                      : 4;
      p.n = static_cast<uint32_t>(ne);
      p.nb = n.n_inputs > 1 ? static_cast<uint32_t>(numel(tensors[n.inputs[1]])) : 1;
      if (p.nb == 0) p.nb = 1;
      p.f0 = n.fattr[0];
      d.groups_x = groups(ne, 256);
      return true;
    case RLX_OP_RMS_NORM:
    case RLX_OP_SOFTMAX: {
      d.kernel = kNorm;
      p.mode = n.op == RLX_OP_RMS_NORM ? 0 : 1;
      p.cols = static_cast<uint32_t>(last_dim(a));
      p.n = p.cols ? static_cast<uint32_t>(ne / p.cols) : 0;
      p.f0 = n.fattr[0];
      d.groups_x = p.cols ? groups(p.n, 1) : 0;
      return true;
    }
    case RLX_OP_MATMUL: {
      const rlx_tensor_desc& w = tensors[n.inputs[1]];
      d.kernel = kMatmul;
      p.cols = static_cast<uint32_t>(w.shape[0]);
      p.k = static_cast<uint32_t>(w.shape[1]);
      p.n = p.cols ? static_cast<uint32_t>(ne / p.cols) : 0;
      d.groups_x = groups(p.cols, 1);
      d.groups_y = groups(p.n, 1);
      if (d.groups_y == 0) d.groups_x = 0;
      return true;
    }
    case RLX_OP_EMBED: {
      d.kernel = kEmbed;
      p.nb = static_cast<uint32_t>(a.shape[0]);
      p.cols = static_cast<uint32_t>(a.shape[1]);
      p.n = static_cast<uint32_t>(numel(tensors[n.inputs[1]]));
      d.groups_x = groups(ne, 256);
      return true;
    }
    default: return false;  // views: the output already is input 0's storage
  }
}

}  // namespace rlx::vk
