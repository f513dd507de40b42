#include "kernels.h"

#include <algorithm>

#include <cmath>
#include <cstring>
#include "spv_argmax.h"
#include "spv_attention.h"
#include "spv_elementwise.h"
#include "spv_embed.h"
#include "spv_embed16.h"
#include "spv_embedq.h"
#include "spv_kv_store.h"
#include "spv_matmul.h"
#include "spv_matmul16.h"
#include "spv_matmulq.h"
#include "spv_norm.h"
#include "spv_rope.h"

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
    case kRope: return "rope";
    case kAttention: return "attention";
    case kKvStore: return "kv_store";
    case kArgmax: return "argmax";
    case kMatmul16: return "matmul16";
    case kEmbed16: return "embed16";
    case kMatmulQ: return "matmulq";
    case kEmbedQ: return "embedq";
    default: return "?";
  }
}

const uint32_t* kernel_spirv(Kernel k, size_t* n_bytes) {
  switch (k) {
    case kElementwise: *n_bytes = sizeof kSpv_elementwise; return kSpv_elementwise;
    case kNorm: *n_bytes = sizeof kSpv_norm; return kSpv_norm;
    case kMatmul: *n_bytes = sizeof kSpv_matmul; return kSpv_matmul;
    case kEmbed: *n_bytes = sizeof kSpv_embed; return kSpv_embed;
    case kRope: *n_bytes = sizeof kSpv_rope; return kSpv_rope;
    case kAttention: *n_bytes = sizeof kSpv_attention; return kSpv_attention;
    case kKvStore: *n_bytes = sizeof kSpv_kv_store; return kSpv_kv_store;
    case kArgmax: *n_bytes = sizeof kSpv_argmax; return kSpv_argmax;
    case kMatmul16: *n_bytes = sizeof kSpv_matmul16; return kSpv_matmul16;
    case kEmbed16: *n_bytes = sizeof kSpv_embed16; return kSpv_embed16;
    case kMatmulQ: *n_bytes = sizeof kSpv_matmulq; return kSpv_matmulq;
    case kEmbedQ: *n_bytes = sizeof kSpv_embedq; return kSpv_embedq;
    default: *n_bytes = 0; return nullptr;
  }
}

int quant_mode(uint32_t dtype) {
  switch (dtype) {
    case RLX_Q4_0: return 0;
    case RLX_Q4_1: return 1;
    case RLX_Q5_0: return 2;
    case RLX_Q5_1: return 3;
    case RLX_Q8_0: return 4;
    case RLX_Q2_K: return 5;
    case RLX_Q3_K: return 6;
    case RLX_Q4_K: return 7;
    case RLX_Q5_K: return 8;
    case RLX_Q6_K: return 9;
    case RLX_Q8_K: return 10;
    default: return -1;
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
      const int qm = quant_mode(w.dtype);
      d.kernel = w.dtype == RLX_F32 ? kMatmul : qm >= 0 ? kMatmulQ : kMatmul16;
      p.mode = qm >= 0 ? static_cast<uint32_t>(qm) : w.dtype == RLX_BF16 ? 1 : 0;
      p.cols = static_cast<uint32_t>(w.shape[0]);
      p.k = static_cast<uint32_t>(w.shape[1]);
      p.n = p.cols ? static_cast<uint32_t>(ne / p.cols) : 0;
      d.groups_x = groups(p.cols, 1);
      d.groups_y = groups(p.n, 1);
      if (d.groups_y == 0) d.groups_x = 0;
      return true;
    }
    case RLX_OP_EMBED: {
      const int qm = quant_mode(a.dtype);
      d.kernel = a.dtype == RLX_F32 ? kEmbed : qm >= 0 ? kEmbedQ : kEmbed16;
      p.mode = qm >= 0 ? static_cast<uint32_t>(qm) : a.dtype == RLX_BF16 ? 1 : 0;
      p.nb = static_cast<uint32_t>(a.shape[0]);
      p.cols = static_cast<uint32_t>(a.shape[1]);
      p.n = static_cast<uint32_t>(numel(tensors[n.inputs[1]]));
      d.groups_x = groups(ne, 256);
      return true;
    }
    case RLX_OP_ROPE: {
      d.kernel = kRope;
      const uint32_t s = static_cast<uint32_t>(a.shape[0]), h = static_cast<uint32_t>(a.shape[1]),
                     dd = static_cast<uint32_t>(a.shape[2]);
      const uint32_t r = n.iattr[1] == 0 ? dd : static_cast<uint32_t>(n.iattr[1]);
      p.n = s;
      p.nb = h;
      p.cols = dd;
      p.k = r;
      p.mode = static_cast<uint32_t>(n.iattr[0]) | (n.n_inputs == 3 ? 2u : 0u);
      // theta^(-2/r) in double, as the cpu backend computes its frequencies; the shader raises
      // it to the i-th power. Its 64 bits travel in f0 and u0.
      const double step = r ? std::pow(static_cast<double>(n.fattr[0]), -2.0 / r) : 1.0;
      uint32_t w[2];
      std::memcpy(w, &step, sizeof w);
      std::memcpy(&p.f0, &w[0], 4);
      p.u0 = w[1];
      const uint64_t items = uint64_t{s} * h * (r / 2 + (dd - r));
      d.groups_x = groups(items, 256);
      return true;
    }
    case RLX_OP_ATTENTION: {
      const rlx_tensor_desc& k = tensors[n.inputs[1]];
      d.kernel = kAttention;
      p.n = static_cast<uint32_t>(a.shape[0]);
      p.nb = static_cast<uint32_t>(a.shape[1]);
      p.cols = static_cast<uint32_t>(a.shape[2]);
      p.k = static_cast<uint32_t>(k.shape[0]);
      p.u1 = static_cast<uint32_t>(k.shape[1]);
      p.u2 = n.iattr[2] == 0 ? p.k : static_cast<uint32_t>(n.iattr[2]);
      p.u3 = static_cast<uint32_t>(n.iattr[1]);
      p.mode = n.n_inputs == 4 ? 2u : (n.iattr[0] == 1 ? 1u : 0u);
      p.f0 = n.fattr[0];
      d.groups_x = groups(uint64_t{p.n} * p.nb, 1);
      return true;
    }
    case RLX_OP_KV_STORE: {
      const rlx_tensor_desc& x = tensors[n.inputs[1]];
      d.kernel = kKvStore;
      p.n = static_cast<uint32_t>(x.shape[0]);
      p.nb = static_cast<uint32_t>(a.shape[0]);
      p.cols = static_cast<uint32_t>(a.shape[1] * a.shape[2]);
      // s workgroups, each rescans all s positions; cap the groups so the scans stay cheap.
      d.groups_x = groups(std::min<uint64_t>(p.n, 1024), 1);
      return true;
    }
    case RLX_OP_ARGMAX:
      d.kernel = kArgmax;
      p.cols = static_cast<uint32_t>(last_dim(a));
      p.n = static_cast<uint32_t>(ne);
      d.groups_x = groups(p.n, 1);
      return true;
    default: return false;  // views: the output already is input 0's storage
  }
}

}  // namespace rlx::vk
