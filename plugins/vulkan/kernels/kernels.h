// The vulkan kernels: one compute shader per family (kernels/<family>.comp, embedded SPIR-V),
// and how a node maps onto one dispatch of one of them.
#pragma once

#include <cstddef>
#include <cstdint>

#include "rlx/plugin_abi.h"

namespace rlx::vk {

enum Kernel : uint32_t {
  kElementwise,
  kNorm,
  kMatmul,
  kEmbed,
  kRope,
  kAttention,
  kKvStore,
  kArgmax,
  kMatmul16,
  kEmbed16,
  kMatmulQ,
  kEmbedQ,
  kKernelCount
};

const char* kernel_name(Kernel k);
// The embedded SPIR-V words of `k`.
const uint32_t* kernel_spirv(Kernel k, size_t* n_bytes);

// Descriptor bindings every kernel shares: inputs 0..2, the output, the error word, input 3.
constexpr uint32_t kBindings = 6;
constexpr uint32_t kOutBinding = 3;
constexpr uint32_t kErrBinding = 4;
constexpr uint32_t kIn3Binding = 5;

// Must match common.glsl's push-constant block.
struct Push {
  uint32_t o_in[3];
  uint32_t o_out;
  uint32_t n, nb, cols, k, mode, node;
  float f0;
  uint32_t u0;
  uint32_t o_in3;
  uint32_t u1, u2, u3;
};
static_assert(sizeof(Push) == 64);

// One node as a dispatch: the kernel, the push constants (offsets filled in by the program) and
// the workgroup counts. groups_x == 0 means there is nothing to compute.
struct Dispatch {
  Kernel kernel = kElementwise;
  Push push{};
  uint32_t groups_x = 0, groups_y = 1;
};

// Fills `d` for a node that node_problem() accepted. Returns false for an op with no kernel
// (the views: reshape, slice).
// The shader's `mode` for a GGUF block type (quant.glsl), or -1 for one with no kernel.
int quant_mode(uint32_t dtype);

bool plan_dispatch(const rlx_node_desc& n, const rlx_tensor_desc* tensors, Dispatch& d);

}  // namespace rlx::vk
