// The vulkan backend's ABI entry: rlx_plugin_query() and its header. The table's shims are
// plugins/common/backend_shim.h over the traits below. Nothing here has a dynamic initializer;
// the Vulkan instance is created on the first device_count() and destroyed by shutdown().
#include "../common/backend_shim.h"
#include "buffer.h"
#include "device.h"
#include "program.h"
#include "rlx/plugin_abi.h"

namespace {

struct Vulkan {
  static constexpr const char* kName = "vulkan";
  // RLX_VULKAN_DISABLE_OPS=rope,attention: CI tests the cpu fallback on lavapipe with it.
  static constexpr const char* kDisableEnv = "RLX_VULKAN_DISABLE_OPS";
  using Device = rlx::vk::Device;
  using Buffer = rlx::vk::Buffer;
  using Program = rlx::vk::Program;

  static uint32_t device_count() { return rlx::vk::device_count(); }
  static void device_info(uint32_t i, rlx_device_info* out) { rlx::vk::device_info(i, out); }
  static Device* open_device(uint32_t i, const rlx_device_options* o) {
    return rlx::vk::open_device(i, o);
  }
  static void close_device(Device* d) { rlx::vk::close_device(d); }
  static Device& checked_device(const rlx_device* h) { return rlx::vk::checked_device(h); }
  // Waits for every queue, frees every object, destroys the instance.
  static void close_all_devices() { rlx::vk::close_all_devices(); }
  // Every kernel needs only Vulkan 1.2 core, except rope (shaderFloat64).
  static std::string node_problem(Device& d, const rlx_graph_desc& g, uint32_t node) {
    return rlx::vk::node_problem(g, node, d.has_f64());
  }
};

constexpr rlx_plugin_info kInfo = {
    .abi_major = RLX_ABI_MAJOR,
    .abi_minor = RLX_ABI_MINOR,
    .struct_size = sizeof(rlx_plugin_info),
    .kind = RLX_PLUGIN_BACKEND,
    .name = Vulkan::kName,
    .variant = "",
    .version = "0.1.0",
    .description = "Vulkan 1.2 compute shaders (f32 activations; f32, f16, bf16 and GGUF block weights)",
    .score = nullptr,
    .api = &rlx::plugin::BackendShim<Vulkan>::api,
    .reserved = {},
};

}  // namespace

// The one exported symbol. The header is returned whatever host_abi_major says: its first
// fields (abi_major, abi_minor, struct_size) are what lets a host of another major print a
// message naming both versions instead of failing blindly. The host refuses us in that case,
// and init() refuses a host of another major as a second line of defence.
extern "C" RLX_PLUGIN_EXPORT const rlx_plugin_info* rlx_plugin_query(uint32_t host_abi_major) {
  (void)host_abi_major;
  return &kInfo;
}
