// The cuda backend's ABI entry: rlx_plugin_query() and its header. The table's shims are
// plugins/common/backend_shim.h over the traits below. Nothing here has a dynamic initializer.
//
// The same file builds the rocm plugin (hipcc, RLX_GPU_HIP) and the cudaemu test plugin (the
// kernels on the CPU emulator): RLX_GPU_NAME and RLX_GPU_DESCRIPTION come from error.h.
#include "../common/backend_shim.h"
#include "buffer.h"
#include "device.h"
#include "error.h"
#include "program.h"
#include "rlx/plugin_abi.h"

namespace {

struct Gpu {
  static constexpr const char* kName = RLX_GPU_NAME;
  // RLX_CUDA_DISABLE_OPS=rope,attention: those nodes run on the cpu (to rule a kernel out).
  static constexpr const char* kDisableEnv = "RLX_CUDA_DISABLE_OPS";
  using Device = rlx::gpu::Device;
  using Buffer = rlx::gpu::Buffer;
  using Program = rlx::gpu::Program;

  static uint32_t device_count() { return rlx::gpu::device_count(); }
  static void device_info(uint32_t i, rlx_device_info* out) { rlx::gpu::device_info(i, out); }
  static Device* open_device(uint32_t i, const rlx_device_options* o) {
    return rlx::gpu::open_device(i, o);
  }
  static void close_device(Device* d) { rlx::gpu::close_device(d); }
  static Device& checked_device(const rlx_device* h) { return rlx::gpu::checked_device(h); }
  // Synchronizes every stream, frees every buffer and program.
  static void close_all_devices() { rlx::gpu::close_all_devices(); }
  static std::string node_problem(Device&, const rlx_graph_desc& g, uint32_t node) {
    return rlx::gpu::node_problem(g, node);
  }
};

constexpr rlx_plugin_info kInfo = {
    .abi_major = RLX_ABI_MAJOR,
    .abi_minor = RLX_ABI_MINOR,
    .struct_size = sizeof(rlx_plugin_info),
    .kind = RLX_PLUGIN_BACKEND,
    .name = Gpu::kName,
    .variant = "",
    .version = "0.1.0",
    .description = RLX_GPU_DESCRIPTION,
    .score = nullptr,
    .api = &rlx::plugin::BackendShim<Gpu>::api,
    .reserved = {},
};

}  // namespace

// The one exported symbol; the header is returned whatever host_abi_major says (see the
// vulkan plugin.cpp): the host refuses another major, and init() does too.
extern "C" RLX_PLUGIN_EXPORT const rlx_plugin_info* rlx_plugin_query(uint32_t host_abi_major) {
  (void)host_abi_major;
  return &kInfo;
}
