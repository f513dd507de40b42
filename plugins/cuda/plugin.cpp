// The cuda backend's ABI entry: rlx_plugin_query() and the tables it returns, nothing else.
// Each table function is a thin shim that validates handles, calls into device / buffer /
// program, and turns any C++ exception into an rlx_status plus one line in the caller's rlx_err:
// no exception ever crosses the C boundary. Nothing here has a dynamic initializer.
//
// The same file builds the rocm plugin (hipcc, RLX_GPU_HIP) and the cudaemu test plugin (the
// kernels on the CPU emulator): RLX_GPU_NAME and RLX_GPU_DESCRIPTION come from error.h.
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <string_view>

#include "buffer.h"
#include "device.h"
#include "error.h"
#include "program.h"
#include "rlx/plugin_abi.h"

namespace {

using namespace rlx::gpu;

// The host's services; valid from init() until shutdown().
constinit const rlx_host_api* g_host = nullptr;

// Logging is best effort: it never turns a successful call into a failed one.
template <class... A>
void host_log(int level, const A&... parts) noexcept {
  try {
    if (g_host && g_host->struct_size >= offsetof(rlx_host_api, log) + sizeof g_host->log &&
        g_host->log)
      g_host->log(level, RLX_GPU_NAME, cat(parts...).c_str());
  } catch (...) {
  }
}

using rlx::plugin::set_err;

// The ABI boundary every call goes through (plugins/common/plugin_error.h).
template <class F>
rlx_status guard(rlx_err err, F&& fn) noexcept {
  return rlx::plugin::guard(err, RLX_GPU_NAME, std::forward<F>(fn));
}

// ---- the backend table ----------------------------------------------------------------------

rlx_status gpu_init(const rlx_host_api* host, rlx_err err) {
  return guard(err, [&] {
    if (host && host->abi_major != RLX_ABI_MAJOR)
      fail(RLX_ERR_UNSUPPORTED, "host ABI ", host->abi_major, ".", host->abi_minor,
           " but the " RLX_GPU_NAME " backend was built for ", RLX_ABI_MAJOR, ".", RLX_ABI_MINOR);
    g_host = host;
  });
}

void gpu_shutdown(void) {
  try {
    close_all_devices();  // synchronizes every stream, frees every buffer and program
  } catch (...) {
  }
  g_host = nullptr;
}

rlx_status gpu_device_count(uint32_t* count, rlx_err err) {
  return guard(err, [&] {
    if (!count) fail(RLX_ERR_INVALID, "device_count: null output");
    *count = device_count();
  });
}

rlx_status gpu_device_info(uint32_t index, rlx_device_info* out, rlx_err err) {
  return guard(err, [&] { device_info(index, out); });
}

rlx_status gpu_device_open(uint32_t index, const rlx_device_options* opts, rlx_device** out,
                          rlx_err err) {
  return guard(err, [&] {
    if (!out) fail(RLX_ERR_INVALID, "device_open: null output");
    *out = nullptr;
    Device* dev = open_device(index, opts);
    *out = to_handle(dev);
    host_log(RLX_LOG_DEBUG, "opened device ", index, " (", dev->props().name, ")");
  });
}

void gpu_device_close(rlx_device* dev) {
  try {
    close_device(reinterpret_cast<Device*>(dev));
  } catch (...) {
  }
}

rlx_status gpu_buffer_alloc(rlx_device* dev, uint64_t bytes, rlx_buffer** out, rlx_err err) {
  return guard(err, [&] {
    if (!out) fail(RLX_ERR_INVALID, "buffer_alloc: null output");
    *out = nullptr;
    *out = to_handle(checked_device(dev).alloc_buffer(bytes));
  });
}

void gpu_buffer_free(rlx_device* dev, rlx_buffer* buf) {
  try {
    if (buf) checked_device(dev).free_buffer(reinterpret_cast<Buffer*>(buf));
  } catch (...) {
  }
}

rlx_status gpu_buffer_write(rlx_device* dev, rlx_buffer* buf, uint64_t offset, const void* src,
                           uint64_t bytes, rlx_err err) {
  return guard(err, [&] {
    Device& d = checked_device(dev);
    d.write(d.buffer(buf), offset, src, bytes);
  });
}

rlx_status gpu_buffer_read(rlx_device* dev, rlx_buffer* buf, uint64_t offset, void* dst,
                          uint64_t bytes, rlx_err err) {
  return guard(err, [&] {
    Device& d = checked_device(dev);
    d.read(d.buffer(buf), offset, dst, bytes);
  });
}

// RLX_CUDA_DISABLE_OPS=rope,attention makes the backend refuse those ops, so that the host
// runs them on the cpu: to rule a suspect kernel out.
bool disabled_by_env(const char* op) {
  const char* list = std::getenv("RLX_CUDA_DISABLE_OPS");
  if (!list || !op) return false;
  const std::string_view want(op);
  for (std::string_view rest(list); !rest.empty();) {
    const size_t comma = rest.find(',');
    if (rest.substr(0, comma) == want) return true;
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
  }
  return false;
}

bool gpu_supports(rlx_device* dev, const rlx_graph_desc* graph, uint32_t node) {
  try {
    if (graph && node < graph->n_nodes && disabled_by_env(graph->nodes[node].op_name))
      return false;
    checked_device(dev);
    return graph && node_problem(*graph, node).empty();
  } catch (...) {
    return false;
  }
}

rlx_status gpu_program_compile(rlx_device* dev, const rlx_graph_desc* graph, rlx_program** out,
                              rlx_err err) {
  return guard(err, [&] {
    if (!out) fail(RLX_ERR_INVALID, "program_compile: null output");
    *out = nullptr;
    if (!graph) fail(RLX_ERR_INVALID, "program_compile: null graph");
    Device& d = checked_device(dev);
    *out = to_handle(d.add_program(std::make_unique<Program>(d, *graph)));
  });
}

rlx_status gpu_program_run(rlx_device* dev, rlx_program* prog, const rlx_binding* bindings,
                          uint32_t n_bindings, rlx_err err) {
  return guard(err, [&] {
    Device& d = checked_device(dev);
    d.program(prog).run(bindings, n_bindings);
  });
}

void gpu_program_free(rlx_device* dev, rlx_program* prog) {
  try {
    if (prog) checked_device(dev).free_program(reinterpret_cast<Program*>(prog));
  } catch (...) {
  }
}

constexpr rlx_backend_api kBackendApi = {
    .struct_size = sizeof(rlx_backend_api),
    .init = gpu_init,
    .shutdown = gpu_shutdown,
    .device_count = gpu_device_count,
    .device_info = gpu_device_info,
    .device_open = gpu_device_open,
    .device_close = gpu_device_close,
    .buffer_alloc = gpu_buffer_alloc,
    .buffer_free = gpu_buffer_free,
    .buffer_write = gpu_buffer_write,
    .buffer_read = gpu_buffer_read,
    .supports = gpu_supports,
    .program_compile = gpu_program_compile,
    .program_run = gpu_program_run,
    .program_free = gpu_program_free,
    .buffer_from_host = nullptr,  // device memory only: the host uploads weights once
    .reserved = {},
};

// ---- the header ---------------------------------------------------------------------------

constexpr rlx_plugin_info kInfo = {
    .abi_major = RLX_ABI_MAJOR,
    .abi_minor = RLX_ABI_MINOR,
    .struct_size = sizeof(rlx_plugin_info),
    .kind = RLX_PLUGIN_BACKEND,
    .name = RLX_GPU_NAME,
    .variant = "",
    .version = "0.1.0",
    .description = RLX_GPU_DESCRIPTION,
    .score = nullptr,
    .api = &kBackendApi,
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
